"""The study behind ``normscope correlate``: what does the raw norm track? Norm vs a semantic covariate.

Library entry point of the semantic-signals stage. :func:`run_correlate` returns the summary dict
(the same as ``normscope correlate --json``) and the per-item table; :func:`plot_signal` draws the
figure. The covariates themselves come from :mod:`normscope.signals` and the statistics from
:mod:`normscope.stats`; the CLI (:mod:`normscope.cli.correlate`) only parses options, prints a
table and writes files.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from normscope.validate import check_output_path
from normscope.encoders import DEFAULT_MODEL
from normscope.errors import InputError

__all__ = ["SIGNALS", "CONTROLS", "run_correlate", "plot_signal", "read_covariate_file", "read_items"]

SIGNALS = ("specificity", "frequency", "concreteness", "uncertainty")
CONTROLS = ("frequency", "length", "words")
MIN_VALID = 10
DEFAULT_N = {"specificity": 2000, "frequency": 5000, "concreteness": 5000, "uncertainty": None}
COVARIATE_LABEL = {
    "specificity": "WordNet hypernym depth of first noun sense (edges)",
    "frequency": "Zipf frequency, wordfreq (log10 per 10^9 words)",
    "concreteness": "concreteness, Brysbaert et al. 2014 (1 abstract - 5 concrete)",
    "uncertainty": "human label entropy (bits)",
}
_MEASURE_UNIT = {"min_depth": "hypernym edges to entity.n.01", "max_depth": "hypernym edges to entity.n.01",
                 "n_hyponyms": "transitive hyponym count", "n_senses": "noun senses, all of them"}


def _covariate_label(signal: str, measure: str, *, user: bool, subtlex: bool) -> str:
    if user:
        return f"{signal} (user covariate file)"
    if signal == "specificity":
        return f"WordNet {measure} of the first noun sense ({_MEASURE_UNIT[measure]})"
    if signal == "frequency" and subtlex:
        return "Zipf frequency, SUBTLEX-US (van Heuven et al. 2014; log10 per 10^9 words)"
    return COVARIATE_LABEL[signal]


# --------------------------------------------------------------------------------------------
# inputs
# --------------------------------------------------------------------------------------------


def read_items(path: str | Path) -> list[str]:
    """Items of a text file, one per line (blank lines skipped; CRLF accepted).

    Raises
    ------
    InputError
        Missing or empty file.
    """
    p = Path(path)
    if not p.is_file():
        raise InputError(f"items file not found: {p}")
    items = [line.strip() for line in p.read_text(encoding="utf-8", errors="replace").splitlines() if line.strip()]
    if not items:
        raise InputError(f"items file is empty: {p}")
    return items


def read_covariate_file(path: str | Path, signal: str) -> pd.DataFrame:
    """A user covariate table: CSV with an ``item`` column and a ``value`` (or ``<signal>``) column.

    Other numeric columns may be named as controls (``--control``).

    Returns
    -------
    pandas.DataFrame with columns ``item`` (str), ``value`` (float64) and the extra columns.

    Raises
    ------
    InputError
        Missing file, unparsable CSV, or missing ``item`` / value column (found columns named).
    """
    p = Path(path)
    if not p.is_file():
        raise InputError(f"covariate file not found: {p}")
    try:
        df = pd.read_csv(p, keep_default_na=False, na_values=[""], dtype={"item": str})
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot parse covariate file {p}: {exc}") from exc
    df.columns = [str(c).strip() for c in df.columns]
    value_col = "value" if "value" in df.columns else (signal if signal in df.columns else None)
    if "item" not in df.columns or value_col is None:
        raise InputError(
            f"covariate file {p} needs columns 'item' and 'value' (or '{signal}'); found {list(df.columns)}"
        )
    out = df.rename(columns={value_col: "value"})
    out["item"] = out["item"].astype(str)
    try:
        out["value"] = pd.to_numeric(out["value"], errors="raise").astype(np.float64)
    except (ValueError, TypeError) as exc:
        raise InputError(f"covariate file {p}: column '{value_col}' is not numeric ({exc})") from exc
    if out.empty:
        raise InputError(f"covariate file {p} has no rows")
    return out


def _embed(encoder, texts: list[str], *, batch_size: int, progress: bool) -> np.ndarray:
    """Raw vectors (n, d) float32, via the content-addressed cache when available."""
    try:
        from normscope.encoders.cache import encode_cached  # helper H1; optional
    except ImportError:
        encode_cached = None
    if encode_cached is not None:
        try:
            return np.asarray(encode_cached(encoder, texts, batch_size=batch_size, progress=progress))
        except TypeError:
            pass  # different signature: fall back to plain encoding
    if not progress or len(texts) <= batch_size:
        return np.asarray(encoder.encode(texts, batch_size=batch_size))
    from rich.progress import Progress

    chunk = max(batch_size * 8, 256)
    parts = []
    with Progress(transient=True, console=_stderr()) as bar:
        task = bar.add_task("embedding", total=len(texts))
        for s in range(0, len(texts), chunk):
            parts.append(np.asarray(encoder.encode(texts[s : s + chunk], batch_size=batch_size)))
            bar.advance(task, len(texts[s : s + chunk]))
    return np.concatenate(parts, axis=0)


def _stderr():
    from rich.console import Console

    return Console(stderr=True)


def _status(progress: bool, message: str):
    """A rich spinner on stderr while ``message`` runs (no-op without ``progress``)."""
    import contextlib

    return _stderr().status(message) if progress else contextlib.nullcontext()


def _sample(n_total: int, n: int | None, seed: int) -> np.ndarray:
    if n is None or n >= n_total:
        return np.arange(n_total)
    return np.sort(np.random.default_rng(seed).choice(n_total, size=n, replace=False))


def _model_name(encoder, model: str) -> str:
    """The encoder's fingerprint name; an encoder without one is named by its class."""
    if encoder is None:
        return model
    fp = getattr(encoder, "fingerprint", None)
    return str(getattr(fp, "name", None) or type(encoder).__name__)


# --------------------------------------------------------------------------------------------
# entry point
# --------------------------------------------------------------------------------------------


def run_correlate(
    signal: str,
    *,
    encoder=None,
    model: str = DEFAULT_MODEL,
    items: Sequence[str] | None = None,
    n: int | None = None,
    controls: Sequence[str] = ("frequency", "length"),
    seed: int = 0,
    progress: bool = False,
    covariates: pd.DataFrame | None = None,
    measure: str = "min_depth",
    dataset: str = "chaosnli",
    subtlex: str | Path | None = None,
    wordnet: str | Path | None = None,
    images: str | Path | None = None,
    n_boot: int = 2000,
    n_perm: int = 2000,
    batch_size: int = 64,
    device: str = "cpu",
) -> tuple[dict, pd.DataFrame]:
    """Correlate raw embedding norms with a semantic covariate (with bootstrap CIs and partial rho).

    Parameters
    ----------
    signal : {"specificity", "frequency", "concreteness", "uncertainty"}
        Covariate. Default item sets: specificity = the top-``n`` wordfreq words that are mainly
        nouns in WordNet (:func:`normscope.signals.wordnet_nouns`, n=2000); frequency = top-``n``
        wordfreq words (n=5000); concreteness = a seeded sample of ``n`` single words of
        Brysbaert et al. 2014 (n=5000; ``n=0`` for all 37,058); uncertainty = ChaosNLI SNLI +
        MNLI-m pairs (all 3,113, or a seeded sample of ``n``), embedded as ``"premise [SEP] hypothesis"``.
    encoder : Encoder, optional
        Default ``load_encoder(model, device=device)``.
    items : sequence of str, optional
        The user's items instead of the default set (uncertainty then needs ``covariates``).
    n : int, optional
        Number of default items (see above); ignored with ``items``.
    controls : sequence of str
        Covariates partialled out: ``frequency`` (wordfreq Zipf, token mean for phrases),
        ``length`` (model tokens of the embedded string, special tokens excluded), ``words``
        (word count), or a column of ``covariates``. The signal itself is removed from its own
        controls. For ChaosNLI pairs, frequency and word count read "premise hypothesis" (the
        separator is not a word).
    seed : int
        Seeds item sampling, bootstrap and permutations.
    covariates : pandas.DataFrame, optional
        From :func:`read_covariate_file`: user values of the covariate per item (``item``,
        ``value``) and optional extra control columns. Items default to its ``item`` column.
    measure : str
        Specificity measure: ``min_depth`` (default), ``max_depth``, ``n_hyponyms``, ``n_senses``.
    dataset : {"chaosnli", "cifar10h"}
        Uncertainty dataset; cifar10h needs ``images`` and an image-capable encoder.
    subtlex : path-like, optional
        Use SUBTLEX-US Zipf values (van Heuven et al. 2014) from this file as the frequency signal
        (and the frequency control) instead of wordfreq.
    wordnet : path-like, optional
        WordNet location (see :func:`normscope.signals.load_wordnet`).
    n_boot, n_perm : int
        Bootstrap resamples and permutations (:func:`normscope.stats.correlation`).

    Returns
    -------
    summary : dict
        JSON-serialisable: ``signal``, ``model``, ``dataset``, ``n`` (valid items), ``n_items``,
        ``n_missing`` (items without covariate) and ``missing_examples``, ``spearman``,
        ``spearman_ci``, ``pearson``, ``pearson_ci``, ``p_value`` (Spearman, permutation),
        ``pearson_p``, ``partial_spearman`` ({rho, ci, p_value, n, ...} or None), ``controls`` (the controls actually
        partialled out), ``controls_dropped`` (requested controls that are constant over the valid
        items, e.g. ``length`` when every item is one token, hence not controlled), ``partial_reason``
        (why ``partial_spearman`` is None when controls were requested, else None),
        ``covariate``, ``ci_method``, ``notes``; specificity adds ``measures`` (rho per measure).
    per_item : pandas.DataFrame
        One row per item: ``item``, ``norm`` (float64, ||z||), ``covariate`` and the controls.

    Raises
    ------
    InputError
        Unknown signal / control / measure, fewer than 10 valid items, uncertainty items without
        labels, CIFAR-10H without images or with a text-only model.
    """
    from normscope import signals as sg
    from normscope.stats import correlation, partial_spearman

    if signal not in SIGNALS:
        raise InputError(f"unknown signal {signal!r}; choose from {', '.join(SIGNALS)}")
    extra_cols = [c for c in (covariates.columns if covariates is not None else []) if c not in ("item", "value")]
    controls = [c.strip() for c in controls if c and c.strip()]
    bad = [c for c in controls if c not in CONTROLS and c not in extra_cols]
    if bad:
        raise InputError(f"unknown control(s) {bad}; choose from {', '.join(CONTROLS + tuple(extra_cols))}")
    if n is not None and n < 0:
        raise InputError(f"--n must be >= 0, got {n}")
    if measure not in sg.SPECIFICITY_MEASURES:
        raise InputError(f"unknown specificity measure {measure!r}; choose from {', '.join(sg.SPECIFICITY_MEASURES)}")
    if dataset not in ("chaosnli", "cifar10h"):
        raise InputError(f"unknown uncertainty dataset {dataset!r}; choose chaosnli or cifar10h")
    notes: list[str] = []
    self_control = {"frequency": "frequency"}.get(signal)
    if self_control in controls:
        controls = [c for c in controls if c != self_control]
        notes.append(f"'{self_control}' removed from the controls of the {signal} signal itself")

    if signal == "uncertainty" and dataset == "cifar10h":
        return _run_cifar10h(encoder=encoder, model=model, images=images, n=n, seed=seed, n_boot=n_boot,
                             n_perm=n_perm, batch_size=batch_size, device=device, progress=progress)

    if signal == "uncertainty" and covariates is None and items is not None:
        raise InputError("the uncertainty signal needs human labels for user items: give --covariate-file with item,value")
    if encoder is None:
        from normscope.encoders import load_encoder

        encoder = load_encoder(model, device=device)

    # ---- items and covariate ------------------------------------------------------------
    control_texts = None
    extras: dict[str, np.ndarray] = {}
    cov_user = None
    if covariates is not None:
        lut = covariates.drop_duplicates("item").set_index("item")
        if items is None:
            items = lut.index.tolist()
        items = list(items)
        cov_user = lut["value"].reindex(items).to_numpy(dtype=np.float64)
        for c in extra_cols:
            extras[c] = pd.to_numeric(lut[c].reindex(items), errors="coerce").to_numpy(dtype=np.float64)
        dataset_name = "user covariate file"
    if items is not None:
        items = [str(t) for t in items]
        if not items:
            raise InputError("no items given")
        if covariates is None:
            dataset_name = "user items"
    else:
        n_eff = DEFAULT_N[signal] if n is None else n
        if signal == "specificity":
            with _status(progress, "selecting WordNet nouns from the wordfreq list"):
                items = sg.wordnet_nouns(n_eff or 2000, wordnet=sg.load_wordnet(wordnet))
            dataset_name = f"wordfreq top-{len(items)} English words that are mainly WordNet 3.0 nouns"
        elif signal == "frequency":
            from normscope.datasets import wordfreq_words

            items = wordfreq_words(n_eff or 5000)
            dataset_name = f"wordfreq top-{len(items)} alphabetic English words"
        elif signal == "concreteness":
            items = sg.concreteness_words(n=n_eff or None, seed=seed)
            dataset_name = f"Brysbaert et al. 2014 single words ({len(items)}{' sampled, seed %d' % seed if n_eff else ''})"
        else:
            chaos = sg.load_chaosnli()
            sep = getattr(sg.tokenizer_of(encoder), "sep_token", None) or "[SEP]"
            keep = _sample(len(chaos), n_eff or None, seed)
            chaos = chaos.iloc[keep].reset_index(drop=True)
            if sep != "[SEP]":
                chaos["text"] = [sg.pair_text(p, h, sep=sep) for p, h in zip(chaos.premise, chaos.hypothesis)]
            items = chaos["text"].tolist()
            # frequency / word-count controls read the words of the pair, not the separator
            control_texts = [f"{p} {h}" for p, h in zip(chaos.premise, chaos.hypothesis)]
            extras["uid"] = chaos["uid"].to_numpy()
            cov_user = chaos["entropy_bits"].to_numpy()
            dataset_name = f"ChaosNLI v1.0 SNLI+MNLI-m ({len(items)} pairs, 100 labels each; text 'premise {sep} hypothesis')"

    if cov_user is not None:
        cov = cov_user
    elif signal == "specificity":
        with _status(progress, f"WordNet specificity of {len(items)} items"):
            spec = sg.wordnet_specificity(items, wordnet=sg.load_wordnet(wordnet))
        for m in sg.SPECIFICITY_MEASURES:
            extras[m] = spec[m].to_numpy()
        cov = spec[measure].to_numpy()
    elif signal == "frequency":
        cov = sg.subtlex_zipf(items, path=subtlex) if subtlex is not None else sg.zipf_frequency(items)
    elif signal == "concreteness":
        cov = sg.concreteness(items)
    else:
        raise InputError("the uncertainty signal needs human labels for user items: give --covariate-file with item,value")

    # ---- embeddings ------------------------------------------------------------------------
    vecs = _embed(encoder, items, batch_size=batch_size, progress=progress)
    norm = np.linalg.norm(vecs.astype(np.float64), axis=1)

    # ---- controls --------------------------------------------------------------------------
    ctrl: dict[str, np.ndarray] = {}
    ctexts = control_texts if control_texts is not None else items
    for c in controls:
        if c == "frequency":
            ctrl[c] = sg.subtlex_zipf(ctexts, path=subtlex) if subtlex is not None else sg.zipf_frequency(ctexts)
        elif c == "length":
            if sg.tokenizer_of(encoder) is not None:
                ctrl[c] = sg.token_length(items, encoder)
            else:
                ctrl[c] = sg.word_count(ctexts)
                notes.append("model has no tokenizer: length control is the word count")
        elif c == "words":
            ctrl[c] = sg.word_count(ctexts)
        else:
            ctrl[c] = extras[c]

    per_item = pd.DataFrame({"item": items, "norm": norm, "covariate": cov})
    for k, v in extras.items():
        if k not in per_item:
            per_item[k] = v
    for k, v in ctrl.items():
        per_item[f"control_{k}"] = v

    missing = ~np.isfinite(cov)
    n_missing = int(missing.sum())
    valid = int((~missing & np.isfinite(norm)).sum())
    if valid < MIN_VALID:
        if n_missing:
            why = (f"{n_missing} of {len(items)} items have none "
                   f"(e.g. {[items[i] for i in np.flatnonzero(missing)[:5]]})")
        else:
            why = f"all {len(items)} given item(s) have one: use more items (a larger --n or a longer --items file)"
        raise InputError(f"only {valid} item(s) have a {signal} value (need at least {MIN_VALID}); {why}")
    # controls that do not vary over the valid items remove nothing: drop them (and say so)
    ok_items = np.isfinite(cov) & np.isfinite(norm)
    dropped_controls: list[str] = []
    for c in list(ctrl):
        vals = ctrl[c][ok_items & np.isfinite(ctrl[c])]
        n_distinct = len(np.unique(vals))
        if n_distinct < 2:
            what = (f"every item is {vals[0]:g} token{'s' if vals[0] != 1 else ''}" if c == "length" and n_distinct == 1
                    else (f"every item has the value {vals[0]:g}" if n_distinct == 1 else "no item has a value"))
            notes.append(f"control '{c}' is constant ({what}): not controlled")
            dropped_controls.append(c)
            del ctrl[c]
    with _status(progress, f"{n_boot} bootstrap resamples and {n_perm} permutations"):
        res = correlation(norm, cov, n_boot=n_boot, n_perm=n_perm, seed=seed, min_n=MIN_VALID)
        partial = None
        partial_reason = None
        if dropped_controls and not ctrl:
            partial_reason = (f"no partial correlation: the control(s) {', '.join(dropped_controls)} "
                              "are constant over the valid items")
        if ctrl:
            z = np.column_stack([ctrl[c] for c in ctrl])
            partial = partial_spearman(cov, norm, z, n_boot=n_boot, n_perm=n_perm, seed=seed,
                                       min_n=MIN_VALID, control_names=list(ctrl)).to_dict()
            n_ctrl_missing = int((np.isfinite(cov) & ~np.isfinite(z).all(axis=1)).sum())
            if n_ctrl_missing:
                bad = [c for c in ctrl if not np.isfinite(ctrl[c][np.isfinite(cov)]).all()]
                notes.append(f"partial correlation: {n_ctrl_missing} item(s) with a {signal} value but no "
                             f"{'/'.join(bad)} control value are excluded from it (n = {partial['n']})")

    summary = {
        "signal": signal,
        "covariate": _covariate_label(signal, measure, user=cov_user is not None and covariates is not None,
                                      subtlex=subtlex is not None),
        "model": _model_name(encoder, model),
        "dataset": dataset_name,
        "n_items": len(items),
        "n": res.n,
        "n_missing": n_missing,
        "missing_examples": [items[i] for i in np.flatnonzero(missing)[:10]],
        "spearman": res.to_dict()["spearman"],
        "spearman_ci": res.to_dict()["spearman_ci"],
        "pearson": res.to_dict()["pearson"],
        "pearson_ci": res.to_dict()["pearson_ci"],
        "p_value": res.to_dict()["p_value"],
        "pearson_p": res.to_dict()["pearson_p"],
        "partial_spearman": partial,
        "controls": list(ctrl),
        "controls_dropped": dropped_controls,
        "partial_reason": partial_reason,
        "ci_level": res.ci_level,
        "ci_method": res.ci_method,
        "p_method": res.p_method,
        "n_boot": n_boot,
        "n_perm": res.n_perm,
        "seed": seed,
        "norm_mean": float(np.mean(norm)),
        "norm_sd": float(np.std(norm, ddof=1)) if len(norm) > 1 else None,
        "notes": notes,
    }
    if signal == "specificity" and cov_user is None:
        summary["measures"] = {}
        for m in sg.SPECIFICITY_MEASURES:
            r = correlation(norm, extras[m], n_boot=n_boot, n_perm=0, seed=seed, min_n=MIN_VALID).to_dict()
            summary["measures"][m] = {"spearman": r["spearman"], "spearman_ci": r["spearman_ci"], "n": r["n"]}
    if signal == "uncertainty":
        summary["entropy_unit"] = "bits"
        if cov_user is not None and covariates is None:
            summary["pair_format"] = (f"'premise {sep} hypothesis' as one string ({sep} = the tokenizer's separator "
                                      "token, so ids equal the pair encoding; token-type ids all 0)")
    return summary, per_item


def _load_cifar_images(path: str | Path):
    """CIFAR-10 test images as uint8 (10000, 32, 32, 3): a ``.npy`` array, the python ``test_batch``, or a
    folder of 32x32 PNG/JPEG files named by test-set position (:func:`~normscope.encoders.images.read_indexed_images`)."""
    p = Path(path)
    if p.is_dir() and not (p / "test_batch").is_file():
        from normscope.encoders.images import read_indexed_images

        return read_indexed_images(p, n=10000, size=(32, 32))
    if p.is_dir():
        p = p / "test_batch"
    if not p.is_file():
        raise InputError(f"CIFAR-10 test images not found: {p} (give a .npy array (10000,32,32,3) or cifar-10-batches-py/test_batch)")
    if p.suffix == ".npy":
        arr = np.load(p, allow_pickle=False)
    else:
        import pickle

        with open(p, "rb") as f:  # the official CIFAR-10 python format is a pickle (user's own file)
            d = pickle.load(f, encoding="bytes")
        arr = np.asarray(d[b"data"], dtype=np.uint8).reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)
    if arr.shape[1:] != (32, 32, 3) or arr.shape[0] != 10000:
        raise InputError(f"CIFAR-10 test images must have shape (10000, 32, 32, 3), got {arr.shape} from {p}")
    return arr


def _run_cifar10h(*, encoder, model, images, n, seed, n_boot, n_perm, batch_size, device, progress):
    from normscope.signals import cifar10h_entropy
    from normscope.stats import correlation

    if images is None:
        raise InputError(
            "uncertainty on CIFAR-10H needs the CIFAR-10 test images (--images); only the human labels are shipped"
        )
    arr = _load_cifar_images(images)
    if encoder is None:
        from normscope.encoders import load_encoder

        encoder = load_encoder(model, device=device)
    if not hasattr(encoder, "encode_images"):
        raise InputError(f"model {_model_name(encoder, model)!r} is a text encoder; CIFAR-10H needs an image model (e.g. hf-clip:openai/clip-vit-base-patch32)")
    ent = cifar10h_entropy()
    keep = _sample(len(ent), n or None, seed)
    from PIL import Image

    pil = [Image.fromarray(arr[i]) for i in keep]
    vecs = np.asarray(encoder.encode_images(pil, batch_size=batch_size))
    norm = np.linalg.norm(vecs.astype(np.float64), axis=1)
    res = correlation(norm, ent[keep], n_boot=n_boot, n_perm=n_perm, seed=seed, min_n=MIN_VALID).to_dict()
    per_item = pd.DataFrame({"item": [f"cifar10-test-{i}" for i in keep], "norm": norm, "covariate": ent[keep]})
    summary = {
        "signal": "uncertainty", "covariate": COVARIATE_LABEL["uncertainty"], "model": _model_name(encoder, model),
        "dataset": f"CIFAR-10H ({len(keep)} test images)", "n_items": len(keep), "n": res["n"], "n_missing": 0,
        "missing_examples": [], "spearman": res["spearman"], "spearman_ci": res["spearman_ci"],
        "pearson": res["pearson"], "pearson_ci": res["pearson_ci"], "p_value": res["p_value"],
        "pearson_p": res["pearson_p"], "partial_spearman": None, "controls": [],
        "controls_dropped": [], "partial_reason": None, "ci_level": res["ci_level"],
        "ci_method": res["ci_method"], "p_method": res["p_method"], "n_boot": n_boot, "n_perm": res["n_perm"],
        "seed": seed, "norm_mean": float(norm.mean()), "norm_sd": float(norm.std(ddof=1)), "entropy_unit": "bits",
        "notes": ["images have no text length or word frequency: no controls"],
    }
    return summary, per_item


# --------------------------------------------------------------------------------------------
# figure
# --------------------------------------------------------------------------------------------


def plot_signal(per_item: pd.DataFrame, summary: dict, path: str | Path, *, bins: int = 10) -> Path:
    """Norm vs covariate: items as faint points, binned means with 95% CIs, rho [CI] and n in the title.

    Parameters
    ----------
    per_item : pandas.DataFrame
        From :func:`run_correlate` (columns ``covariate``, ``norm``).
    summary : dict
        From :func:`run_correlate`.
    path : path-like
        Output image (format from the suffix, e.g. ``.png``, ``.pdf``); written atomically.

    Returns
    -------
    pathlib.Path of the written figure.
    """
    from normscope._plot import pyplot, save_figure
    from normscope.stats import binned_means

    plt = pyplot()
    path = check_output_path(path)
    x = per_item["covariate"].to_numpy(dtype=np.float64)
    y = per_item["norm"].to_numpy(dtype=np.float64)
    ok = np.isfinite(x) & np.isfinite(y)
    bm = binned_means(x[ok], y[ok], bins=bins)
    fig, ax = plt.subplots(figsize=(6.4, 4.6), dpi=130)
    ax.scatter(x[ok], y[ok], s=4, alpha=0.15, color="0.4", linewidths=0, label="items")
    ax.errorbar(bm["x_mean"], bm["y_mean"], yerr=[bm["y_mean"] - bm["y_lo"], bm["y_hi"] - bm["y_mean"]],
                fmt="o-", color="C3", capsize=3, label="binned mean (equal-count bins) ± 95% CI")
    ax.set_xlabel(summary.get("covariate") or COVARIATE_LABEL.get(summary.get("signal"), "covariate"))
    ax.set_ylabel("raw embedding norm ||z||")
    lo, hi = summary["spearman_ci"]
    title = (f"{summary['signal']} · {summary['model'].split('/')[-1]}\n"
             f"Spearman ρ = {summary['spearman']:.3f} [{lo:.3f}, {hi:.3f}], n = {summary['n']}")
    part = summary.get("partial_spearman")
    if part and part.get("rho") is not None:
        title += f"; partial ρ | {'+'.join(part['controls'])} = {part['rho']:.3f}"
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=8, loc="best")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fmt = path.suffix.lstrip(".").lower() or "png"
    return save_figure(fig, path, dpi=None, format=fmt, bbox_inches=None)
