"""The study behind ``normscope correlate``: what does the raw norm track? Norm vs a semantic covariate.

Library entry point of the semantic-signals stage. :func:`run_correlate` returns a
:class:`~normscope.signals.result.CorrelateResult` (``to_dict()`` is ``normscope correlate --json``,
``items`` the per-item table). The covariates come from :mod:`normscope.signals`, the texts go
through :func:`normscope.embed_texts` (the one path from texts to vectors, through the cache), and
the statistics come from :mod:`normscope.stats` and :mod:`normscope.stats_designs`.

Items pooled from several sources (ChaosNLI's SNLI and MNLI pairs, or a user's ``--by`` column)
are reported per source, and pooled only with the source as a control (resampled and permuted
within sources): a pooled correlation across sources that differ in length and covariate measures
the source, not the signal.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import dataclasses
from collections.abc import Sequence

import numpy as np

from normscope._format import noun, plural
from normscope._progress import step
from normscope.encoders import DEFAULT_MODEL, load_encoder
from normscope.encoders.embed import embed_texts
from normscope.errors import InputError
from normscope.inputs import collapse_duplicates
from normscope.lexicons.wordnet import SPECIFICITY_MEASURES
from normscope.requests import CLI_NAMES
from normscope.requests.correlate import CorrelateRequest
from normscope.signals.items import ItemSet, default_item_set
from normscope.signals.labels import CONTROLS, COVARIATE_LABEL, MIN_VALID, SIGNALS, covariate_label, model_name
from normscope.signals.result import LENGTH_UNIT, CorrelateResult
from normscope.table import require_raw_norms

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["SIGNALS", "CONTROLS", "MIN_VALID", "COVARIATE_LABEL", "run_correlate", "model_name"]


def _check_args(signal, controls, extra_cols, n, measure, dataset, by, covariates, items, strata) -> list[str]:
    if signal not in SIGNALS:
        raise InputError(f"unknown signal {signal!r}; choose from {', '.join(SIGNALS)}")
    controls = [c.strip() for c in controls if c and c.strip()]
    bad = [c for c in controls if c not in CONTROLS and c not in extra_cols]
    if bad:
        raise InputError(f"unknown {noun(len(bad), 'control')} {bad}; choose from {', '.join(CONTROLS + tuple(extra_cols))}")
    if n is not None and n < 0:
        raise InputError(f"{'--n-items' if CLI_NAMES.get() else 'n'} must be >= 0, got {n}")
    if measure not in SPECIFICITY_MEASURES:
        raise InputError(f"unknown specificity measure {measure!r}; choose from {', '.join(SPECIFICITY_MEASURES)}")
    if dataset not in ("chaosnli", "cifar10h"):
        raise InputError(f"unknown uncertainty dataset {dataset!r}; choose chaosnli or cifar10h")
    if signal == "uncertainty" and covariates is None and items is not None:
        raise InputError("the uncertainty signal needs human labels for user items: give --covariate-file with item,value")
    if by is not None and strata is None and by not in extra_cols:
        default_strata = signal == "uncertainty" and items is None and covariates is None and dataset == "chaosnli"
        if not (default_strata and by == "source"):
            raise InputError(f"--by {by}: no such column (give it in the items file or the covariate file"
                             + (f"; covariate columns: {', '.join(extra_cols)}" if extra_cols else "") + ")")
    if by is not None and by in controls:
        raise InputError(f"--by {by} is also named in --control: the source is controlled when strata are pooled")
    return controls


def _user_item_set(items, ids, covariates, strata, by, extra_cols) -> ItemSet:
    import pandas as pd  # deferred: the CLI starts without pandas (benchmarks/cli_startup.py)

    extras: dict[str, np.ndarray] = {}
    cov = None
    if covariates is not None:
        lut = covariates.drop_duplicates("item").set_index("item")
        if items is None:
            items = lut.index.tolist()
            ids = list(items) if ids is None else ids
        items = [str(t) for t in items]
        cov = lut["value"].reindex(items).to_numpy(dtype=np.float64)
        for c in extra_cols:
            col = lut[c].reindex(items)
            if c == by:
                strata = col.to_numpy(dtype=object) if strata is None else strata
            else:
                extras[c] = pd.to_numeric(col, errors="coerce").to_numpy(dtype=np.float64)
    items = [str(t) for t in items]
    if not items:
        raise InputError("no items given")
    ids = [str(i) for i in range(len(items))] if ids is None else [str(i) for i in ids]
    if len(ids) != len(items) or len(set(ids)) != len(ids):
        raise InputError(f"ids must be {len(items)} unique strings, got {len(ids)} ({len(set(ids))} distinct)")
    if strata is not None:
        strata = np.asarray(strata, dtype=object)
        if strata.shape != (len(items),):
            raise InputError(f"strata has {strata.size} labels for {len(items)} items")
        bad = [i for i, v in enumerate(strata) if v is None or (isinstance(v, float) and np.isnan(v))
               or not str(v).strip()]
        if bad:
            raise InputError(f"--by {by}: {plural(len(bad), 'item')} {'has' if len(bad) == 1 else 'have'} no {by} "
                             f"(e.g. {items[bad[0]]!r})")
        strata = np.asarray([str(v).strip() for v in strata], dtype=object)
    return ItemSet(ids=ids, texts=items, covariate=cov, strata=strata, extras=extras,
                   dataset="user covariate file" if covariates is not None else "user items")


def _duplicates(iset: ItemSet, keep: bool, notes: list[str]) -> tuple[ItemSet, dict]:
    """``iset`` with exact duplicates collapsed (unless ``keep``) and their report (:func:`normscope.inputs.collapse_duplicates`)."""
    keys = iset.texts if iset.strata is None else list(zip(iset.strata.tolist(), iset.texts))
    pos, info = collapse_duplicates(keys, iset.ids)
    info["kept"] = bool(keep)
    if not info["count"]:
        return iset, info
    where = " within a source" if iset.strata is not None else ""
    if keep:
        notes.append(f"{plural(info['count'], 'item')} {'repeats' if info['count'] == 1 else 'repeat'} the text of "
                     f"another item{where} ({plural(info['groups'], 'distinct text')} with copies) and were kept (--keep-duplicates): every CI and p-value counts each copy as an "
                     "independent item")
        return iset, info
    notes.append(f"{plural(info['count'], 'exact duplicate item')}{where} left out: {plural(info['groups'], 'text')} "
                 f"had copies and each is counted once (the copy with the smallest id kept; --keep-duplicates keeps them all)")
    idx = np.asarray(pos, dtype=np.intp)
    return dataclasses.replace(
        iset, ids=[iset.ids[i] for i in pos], texts=[iset.texts[i] for i in pos],
        covariate=iset.covariate[idx] if iset.covariate is not None else None,
        control_texts=[iset.control_texts[i] for i in pos] if iset.control_texts is not None else None,
        strata=iset.strata[idx] if iset.strata is not None else None,
        extras={k: np.asarray(v)[idx] for k, v in iset.extras.items()}), info


def _controls(controls, ctexts, table, subtlex, extras, notes) -> tuple[dict, np.ndarray, str]:
    """Control columns of the kept items and the length (tokens seen, or words) with its unit."""
    from normscope import signals as sg  # deferred: normscope.signals imports this module (an import cycle)

    freq = (lambda t: sg.subtlex_zipf(t, path=subtlex)) if subtlex is not None else sg.zipf_frequency
    if table.tokens is not None:
        length, unit = table.tokens.astype(np.float64), LENGTH_UNIT
    else:
        length, unit = sg.word_count(ctexts), "words (wordfreq.tokenize; the model has no tokenizer)"
        notes.append("model has no tokenizer: the length control and rho(norm, length) use the word count")
    ctrl: dict[str, np.ndarray] = {}
    for c in controls:
        ctrl[c] = (freq(ctexts) if c == "frequency" else length if c == "length"
                   else sg.word_count(ctexts) if c == "words" else extras[c])
    return ctrl, length, unit


def _partial(cov, norm, ctrl, *, strata=None, by=None, n_boot, n_perm, seed, where="", words=False) -> dict:
    """Partial Spearman after dropping controls that are constant over the valid items.

    Returns ``{"partial": dict or None, "used": [...], "dropped": [...], "reason": str or None,
    "notes": [...]}``; with ``strata`` the source is a further control (resampled and permuted
    within sources).
    """
    from normscope.stats import partial_spearman  # deferred: normscope.stats imports scipy, and this module loads at start-up
    from normscope.stats_designs import stratified_partial_spearman  # deferred: normscope.stats_designs imports scipy, and this module loads at start-up

    ok = np.isfinite(cov) & np.isfinite(norm)
    used, dropped, notes = {}, [], []
    for c, v in ctrl.items():
        vals = v[ok & np.isfinite(v)]
        distinct = np.unique(vals)
        if distinct.size >= 2:
            used[c] = v
            continue
        unit = "word" if words else "token"
        what = ("no item has a value" if distinct.size == 0 else
                f"every item is {vals[0]:g} {unit}{'s' if vals[0] != 1 else ''}"
                + ("" if words else " as the model saw it, special tokens included") if c == "length"
                else f"every item has the value {vals[0]:g}")
        notes.append(f"{where}control '{c}' is constant ({what}): not controlled")
        dropped.append(c)
    out = {"partial": None, "used": list(used), "dropped": dropped, "reason": None, "notes": notes}
    z = np.column_stack([used[c] for c in used]) if used else None
    if strata is not None:
        res = stratified_partial_spearman(cov, norm, z, strata, n_boot=n_boot, n_perm=n_perm, seed=seed,
                                          min_n=MIN_VALID, control_names=list(used), stratum_name=by)
        out["used"].append(by)
    elif used:
        res = partial_spearman(cov, norm, z, n_boot=n_boot, n_perm=n_perm, seed=seed, min_n=MIN_VALID,
                               control_names=list(used))
    else:
        if dropped:
            out["reason"] = (f"no partial correlation: the {noun(len(dropped), 'control')} {', '.join(dropped)} "
                             f"{noun(len(dropped), 'is', 'are')} constant over "
                             "the valid items")
        return out
    out["partial"] = res.to_dict()
    if z is not None:
        n_ctrl_missing = int((ok & ~np.isfinite(z).all(axis=1)).sum())
        if n_ctrl_missing:
            bad = [c for c in used if not np.isfinite(used[c][ok]).all()]
            notes.append(f"{where}partial correlation: {plural(n_ctrl_missing, 'item')} with a value but no "
                         f"{'/'.join(bad)} control value {'is' if n_ctrl_missing == 1 else 'are'} excluded from it "
                         f"(n = {res.n})")
    return out


def _norm_length(norm, length, cov, *, n_boot, seed) -> dict | None:
    from normscope.stats import correlation  # deferred: normscope.stats imports scipy, and this module loads at start-up

    ok = np.isfinite(cov) & np.isfinite(norm) & np.isfinite(length)
    if ok.sum() < MIN_VALID or np.ptp(length[ok]) == 0:
        return None
    r = correlation(norm[ok], length[ok], n_boot=n_boot, n_perm=0, seed=seed, min_n=MIN_VALID)
    return {"spearman": r.spearman, "spearman_ci": list(r.spearman_ci), "n": r.n}


def _stratum_rows(names, strata, cov, norm, length, ctrl, *, by, n_boot, n_perm, seed, notes, words) -> list[dict]:
    from normscope.stats import correlation  # deferred: normscope.stats imports scipy, and this module loads at start-up

    rows = []
    for name in names:
        m = strata == name
        ok = m & np.isfinite(cov) & np.isfinite(norm)
        row = {"name": str(name), "n": int(ok.sum()), "spearman": None, "spearman_ci": [None, None],
               "p_value": None, "partial_spearman": None, "norm_length_spearman": None,
               "mean_length": float(np.nanmean(length[ok])) if ok.any() else None,
               "mean_covariate": float(np.mean(cov[ok])) if ok.any() else None,
               "mean_norm": float(np.mean(norm[ok])) if ok.any() else None}
        if row["n"] < MIN_VALID or np.ptp(cov[ok]) == 0 or np.ptp(norm[ok]) == 0:
            notes.append(f"{by} '{name}': {plural(row['n'], 'valid item')}, too few or a constant value: no correlation")
            rows.append(row)
            continue
        r = correlation(norm[m], cov[m], n_boot=n_boot, n_perm=n_perm, seed=seed, min_n=MIN_VALID).to_dict()
        row.update(spearman=r["spearman"], spearman_ci=r["spearman_ci"], p_value=r["p_value"])
        part = _partial(cov[m], norm[m], {c: v[m] for c, v in ctrl.items()}, n_boot=n_boot, n_perm=n_perm,
                        seed=seed, where=f"{by} '{name}': ", words=words)
        row["partial_spearman"] = part["partial"]
        notes += part["notes"]
        nl = _norm_length(norm[m], length[m], cov[m], n_boot=n_boot, seed=seed)
        row["norm_length_spearman"] = None if nl is None else nl["spearman"]
        rows.append(row)
    return rows


def run_correlate(
    request: CorrelateRequest,
    *,
    items: Sequence[str] | None = None,
    ids: Sequence[str] | None = None,
    strata: Sequence | None = None,
    covariates: pd.DataFrame | None = None,
    encoder=None,
    progress: bool = False,
) -> CorrelateResult:
    """Correlate raw embedding norms with a semantic covariate (bootstrap CIs, partial rho, per-source strata).

    Parameters
    ----------
    request : CorrelateRequest
        What to run (:class:`~normscope.requests.correlate.CorrelateRequest`): the signal, the number of default
        items ``n``, the controls, the strata name ``by``, the specificity ``measure``, the uncertainty
        ``dataset`` (cifar10h needs ``images``), ``keep_duplicates`` (exact duplicate items are counted once
        unless it is set: the copy with the smallest id kept, the rest listed in ``duplicates``), a SUBTLEX-US file (``subtlex``: its Zipf values as the
        frequency signal and control), the WordNet location, the model and its forward passes
        (``embedding``; ``embedding.junk``: junk items, :func:`normscope.inputs.find_junk`, are left out and
        listed, or an error), and the bootstrap resamples and permutations (``resampling``; its seed also
        seeds item sampling). Default item sets: specificity = the top-``n`` wordfreq words that are mainly
        nouns in WordNet (:func:`normscope.lexicons.wordnet_nouns`, n=2000); frequency = top-``n``
        wordfreq words (n=5000); concreteness = a seeded sample of ``n`` single words of
        Brysbaert et al. 2014 (n=5000; ``n=0`` for all 37,058); uncertainty = ChaosNLI SNLI +
        MNLI-m pairs (all 3,113, or a seeded sample of ``n``), embedded as ``"premise [SEP] hypothesis"``,
        with the subset as the source (``by="source"``). Controls: ``frequency`` (wordfreq Zipf, token
        mean for phrases), ``length`` (tokens the model saw: after truncation, special tokens included),
        ``words`` (word count), or a numeric column of ``covariates``; ``frequency`` is removed from the
        controls of the frequency signal. For ChaosNLI pairs, frequency and word count read "premise
        hypothesis" (the separator is not a word). With strata (``by``: a column of ``covariates``, or the
        name given to ``strata``) the result has one row per source and the pooled partial correlation
        controls the source.
    items : sequence of str, optional
        The user's items instead of the default set (uncertainty then needs ``covariates``).
    ids : sequence of str, optional
        Unique ids of ``items`` (default ``"0".."n-1"``; the item itself for items taken from
        ``covariates``). Per-item outputs are keyed by id; the statistics are computed in id order,
        so a permutation of the input changes nothing but the row order of ``items``.
    strata : sequence, optional, keyword-only
        Source label of each of ``items`` (e.g. read from the items file with
        :func:`normscope.signals.items.read_item_column`).
    covariates : pandas.DataFrame, optional, keyword-only
        From :func:`read_covariate_file`: user values per item (``item``, ``value``) and optional
        extra columns (controls, or the strata named by ``by``).
    encoder : Encoder, optional, keyword-only
        Default ``load_encoder(request.embedding.model, device=..., precision=...)``; a given ``encoder``
        keeps its own precision. The result reports it and, for bf16, the norm error measured on a sample
        against fp32.
    progress : bool, keyword-only
        Progress on stderr.

    Returns
    -------
    CorrelateResult

    Raises
    ------
    InputError
        Unknown signal / control / measure / strata column, fewer than 10 valid items, uncertainty
        items without labels, CIFAR-10H without images or with a text-only model, vectors that were
        already normalised (:func:`normscope.table.require_raw_norms`), junk with ``junk="error"``.
    """
    r, e = request, request.embedding
    signal, by, model = r.signal, r.by, e.model or DEFAULT_MODEL
    extra_cols = [c for c in (covariates.columns if covariates is not None else []) if c not in ("item", "value")]
    controls = _check_args(signal, r.controls, extra_cols, r.n, r.measure, r.dataset, by, covariates, items, strata)
    notes: list[str] = []
    if signal == "frequency" and "frequency" in controls:
        controls = [c for c in controls if c != "frequency"]
        notes.append("'frequency' removed from the controls of the frequency signal itself")
    if signal == "uncertainty" and r.dataset == "cifar10h":
        from normscope.signals.cifar import run_cifar10h  # deferred: only the CIFAR-10H study needs it (keeps start-up light)

        return run_cifar10h(encoder=encoder, model=model, images=r.images, n=r.n, seed=r.resampling.seed,
                            n_boot=r.resampling.n_boot, n_perm=r.resampling.n_perm, batch_size=e.batch_size,
                            device=e.device)
    if encoder is None:
        encoder = load_encoder(model, device=e.device, precision=e.precision, runtime=e.runtime)
    with step(f"items and their {signal} values"):
        iset, by = _item_set(r, encoder, items=items, ids=ids, covariates=covariates, strata=strata, by=by,
                             extra_cols=extra_cols)
    iset, duplicates = _duplicates(iset, r.keep_duplicates, notes)
    table = embed_texts(iset.texts, iset.ids, encoder=encoder, batch_size=e.batch_size, progress=progress, junk=e.junk)
    with step("control values of the items"):
        kept = _kept_values(iset, table, r, controls, notes)
    items_df = _items_table(table, kept)
    missing = _check_valid(kept.cov, kept.texts, signal)
    with step(f"correlations: bootstrap CIs ({r.resampling.n_boot:,} resamples) and permutation p "
              f"({r.resampling.n_perm:,} permutations) over {len(kept.texts):,} items"):
        st = _statistics(kept, table, iset, r, by=by, notes=notes)
    res, part = st["res"], st["part"]
    return CorrelateResult(
        signal=signal,
        covariate=covariate_label(signal, r.measure, user=covariates is not None, subtlex=r.subtlex is not None),
        model=model_name(encoder, model), dataset=iset.dataset, n_items=len(iset.texts), n=res["n"],
        n_missing=int(missing.sum()), missing_examples=[kept.texts[i] for i in np.flatnonzero(missing)[:10]],
        spearman=res["spearman"], spearman_ci=res["spearman_ci"], pearson=res["pearson"],
        pearson_ci=res["pearson_ci"], p_value=res["p_value"], pearson_p=res["pearson_p"],
        partial_spearman=part["partial"], controls=part["used"], controls_dropped=part["dropped"],
        partial_reason=part["reason"], by=by, strata=st["strata"], norm_length=st["norm_length"],
        length_matched=st["length_matched"],
        n_truncated=table.n_truncated, junk=table.junk.to_dict(), duplicates=duplicates,
        precision=encoder.fingerprint.precision, norm_rel_error_vs_fp32=table.norm_rel_error_vs_fp32, ci_level=res["ci_level"],
        ci_method=res["ci_method"], p_method=res["p_method"], n_boot=r.resampling.n_boot, n_perm=res["n_perm"],
        seed=r.resampling.seed, norm_mean=float(np.mean(kept.norm)),
        norm_sd=float(np.std(kept.norm, ddof=1)) if len(kept.norm) > 1 else None,
        measures=st["measures"], entropy_unit="bits" if signal == "uncertainty" else None,
        pair_format=iset.pair_format, notes=notes, items=items_df,
    )


def _item_set(r: CorrelateRequest, encoder, *, items, ids, covariates, strata, by, extra_cols) -> tuple[ItemSet, str | None]:
    """The items to embed and the strata name: the signal's default set (its sources as ``'source'``), or
    the user's items and covariates (unnamed strata as ``'stratum'``)."""
    if items is None and covariates is None:
        iset = default_item_set(r.signal, encoder=encoder, n=r.n, seed=r.resampling.seed, wordnet=r.wordnet)
        return iset, ("source" if iset.strata is not None else None)
    iset = _user_item_set(items, ids, covariates, strata, by, extra_cols)
    if iset.strata is not None and by is None:
        by = "stratum"
    return iset, by


@dataclasses.dataclass
class _Kept:
    """The embedded items (junk left out), in the table's order: texts, raw norms (float64), the covariate,
    extra columns (user columns; every specificity measure), the controls, the length with its unit, the
    strata; ``keep`` their positions in the item set."""

    keep: np.ndarray
    texts: list[str]
    norm: np.ndarray
    cov: np.ndarray
    extras: dict
    ctrl: dict
    length: np.ndarray
    length_unit: str
    strata: np.ndarray | None


def _kept_values(iset: ItemSet, table, r: CorrelateRequest, controls: list[str], notes: list[str]) -> _Kept:
    """The norms (checked raw), the covariate, the extra columns and the controls of the embedded items."""
    norm = table.norms.astype(np.float64)
    require_raw_norms(norm, "correlate")
    pos = {i: k for k, i in enumerate(iset.ids)}
    keep = np.array([pos[i] for i in table.ids], dtype=np.intp)
    texts = table.texts
    ctexts = [iset.control_texts[k] for k in keep] if iset.control_texts is not None else texts
    extras = {k: np.asarray(v)[keep] for k, v in iset.extras.items()}
    cov = iset.covariate[keep] if iset.covariate is not None else _covariate(r, texts, extras)
    ctrl, length, length_unit = _controls(controls, ctexts, table, r.subtlex, extras, notes)
    strata_kept = iset.strata[keep] if iset.strata is not None else None
    return _Kept(keep, texts, norm, cov, extras, ctrl, length, length_unit, strata_kept)


def _covariate(r: CorrelateRequest, texts: list[str], extras: dict) -> np.ndarray:
    """The signal's covariate of the default items: WordNet specificity (every measure also into
    ``extras``), Zipf frequency (wordfreq, or the SUBTLEX-US file) or Brysbaert concreteness."""
    from normscope import signals as sg  # deferred: normscope.signals imports this module (an import cycle)

    if r.signal == "specificity":
        spec = sg.wordnet_specificity(texts, wordnet=sg.load_wordnet(r.wordnet))
        extras.update({m: spec[m].to_numpy() for m in sg.SPECIFICITY_MEASURES})
        return spec[r.measure].to_numpy()
    if r.signal == "frequency":
        return sg.subtlex_zipf(texts, path=r.subtlex) if r.subtlex is not None else sg.zipf_frequency(texts)
    return sg.concreteness(texts)


def _items_table(table, kept: _Kept) -> pd.DataFrame:
    """The per-item table: id, item, norm, covariate, tokens, stratum, extra columns, ``control_*``."""
    import pandas as pd  # deferred: the CLI starts without pandas (benchmarks/cli_startup.py)

    texts = kept.texts
    items_df = pd.DataFrame({"id": table.ids, "item": texts, "norm": kept.norm, "covariate": kept.cov,
                             "tokens": table.tokens if table.tokens is not None else np.full(len(texts), np.nan)})
    if kept.strata is not None:
        items_df["stratum"] = kept.strata
    for k, v in kept.extras.items():
        items_df[k] = v
    for k, v in kept.ctrl.items():
        items_df[f"control_{k}"] = v
    return items_df


def _check_valid(cov: np.ndarray, texts: list[str], signal: str) -> np.ndarray:
    """The mask of items without a covariate value; :class:`InputError` below :data:`MIN_VALID` valid items."""
    missing = ~np.isfinite(cov)
    n_missing = int(missing.sum())
    valid = int((~missing).sum())
    if valid < MIN_VALID:
        why = (f"{n_missing:,} of {plural(len(texts), 'item')} {'has' if n_missing == 1 else 'have'} none "
               f"(e.g. {[texts[i] for i in np.flatnonzero(missing)[:5]]})"
               if n_missing else f"{'the one given item has' if len(texts) == 1 else f'all {len(texts):,} given items have'}"
               " one: use more items (a larger "
               + ("--n-items or a longer --items file)" if CLI_NAMES.get() else "n or a longer items file)"))
        lead = "no item has" if valid == 0 else f"only {plural(valid, 'item')} {'has' if valid == 1 else 'have'}"
        raise InputError(f"{lead} a {signal} value (need at least {MIN_VALID}); {why}")
    return missing


def _statistics(kept: _Kept, table, iset: ItemSet, r: CorrelateRequest, *, by: str | None, notes: list[str]) -> dict:
    """The statistics, computed in id order (the same numbers whatever the input order): Spearman/Pearson with
    CIs and p (``res``), the partial correlation (``part``), one row per stratum, rho(norm, length) and, for
    WordNet specificity, every measure's rho (``measures``)."""
    from normscope.stats import correlation  # deferred: normscope.stats imports scipy, and this module loads at start-up

    n_boot, n_perm, seed = r.resampling.n_boot, r.resampling.n_perm, r.resampling.seed
    order = np.argsort(np.asarray(table.ids, dtype=object).astype(str), kind="stable")
    cov_o, norm_o, len_o = kept.cov[order], kept.norm[order], kept.length[order]
    ctrl_o = {c: v[order] for c, v in kept.ctrl.items()}
    strata_o = kept.strata[order] if kept.strata is not None else None
    res = correlation(norm_o, cov_o, n_boot=n_boot, n_perm=n_perm, seed=seed, min_n=MIN_VALID).to_dict()
    words = table.tokens is None
    part = _partial(cov_o, norm_o, ctrl_o, strata=strata_o, by=by, n_boot=n_boot, n_perm=n_perm, seed=seed,
                    words=words)
    notes += part["notes"]
    strata_rows = None
    if strata_o is not None:
        names = sorted(set(strata_o.tolist()))
        strata_rows = _stratum_rows(names, strata_o, cov_o, norm_o, len_o, ctrl_o, by=by, n_boot=n_boot,
                                    n_perm=n_perm, seed=seed, notes=notes, words=words)
        if len(names) > 1:
            notes.append(f"items come from {len(names)} sources ({', '.join(names)}): the pooled Spearman mixes them; "
                         f"the partial correlation controls the source ('{by}') and resamples and permutes within "
                         "sources, and each source is reported on its own")
    norm_length = _norm_length(norm_o, len_o, cov_o, n_boot=n_boot, seed=seed)
    if norm_length is not None:
        norm_length["length"] = kept.length_unit
    ids_o = [str(table.ids[i]) for i in order]
    length_matched = _length_matched(cov_o, norm_o, len_o, ctrl_o, strata_o, ids_o, kept.length_unit, r)
    measures = None
    if r.signal == "specificity" and iset.covariate is None:
        measures = {}
        for m in SPECIFICITY_MEASURES:
            c = correlation(norm_o, kept.extras[m][order], n_boot=n_boot, n_perm=0, seed=seed, min_n=MIN_VALID).to_dict()
            measures[m] = {"spearman": c["spearman"], "spearman_ci": c["spearman_ci"], "n": c["n"]}
    return {"res": res, "part": part, "strata": strata_rows, "norm_length": norm_length, "measures": measures,
            "length_matched": length_matched}


def _length_matched(cov, norm, length, ctrl, strata, ids, unit: str, r: CorrelateRequest) -> dict | None:
    """The length-matched figure: partial Spearman within strata of equal length (tokens the model saw, or
    words), the other non-constant controls partialled; the equal-length pairs' share beside it."""
    from normscope.stats_designs import length_matched_within, matched_concordance, within_length_spearman  # deferred: normscope.stats_designs imports scipy, and this module loads at start-up

    ok = np.isfinite(cov) & np.isfinite(norm)
    if not np.isfinite(length[ok]).all():
        return None
    other = {c: v for c, v in ctrl.items() if c != "length" and np.unique(v[ok & np.isfinite(v)]).size >= 2}
    z = np.column_stack(list(other.values())) if other else None
    rs = r.resampling
    out = within_length_spearman(cov, norm, length, z, strata=strata, n_boot=rs.n_boot, n_perm=rs.n_perm,
                                 ci=rs.level, seed=rs.seed, min_n=MIN_VALID, control_names=list(other))
    # pairs within (source, length): one integer code per combination, so pairs never cross sources
    src = np.zeros(len(length), dtype=np.int64) if strata is None else np.unique(strata.astype(str), return_inverse=True)[1]
    keep = np.flatnonzero(ok)
    code = src[keep] * (int(np.max(length[keep])) + 1) + length[keep].astype(np.int64)
    pairs = length_matched_within(code, [ids[i] for i in keep], seed=rs.seed)
    out["pairs"] = matched_concordance(cov[keep], norm[keep], pairs, level=rs.level)
    out["length"] = unit
    return out
