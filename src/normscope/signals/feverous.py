"""The norm on the paper's FEVEROUS benchmark: the 50-claim dev sample, norm vs label, challenge type and annotation time.

``normscope correlate --signal feverous``: the 50 claims of the FEVEROUS dev sample (``normscope data fetch
feverous``: 18 SUPPORTS, 16 REFUTES, 16 NOT ENOUGH INFO, stratified by label x challenge; Aly et al., NeurIPS
2021), each claim's text embedded once. The paper uses FEVEROUS for its "free calibration signal" with no
protocol or figure; the reading tested here is the abstention one of the TreeCut and RuleTaker rows: does the raw
norm flag the claims the evidence cannot decide (NOT ENOUGH INFO, "NEI")?

- **label** (decides the row ``abstention_feverous``): NEI vs SUPPORTS/REFUTES with
  :func:`normscope.signals.abstention.abstention_stats`: pooled AUROC of the norm (and of the token count, the
  confound), partial Spearman rho(NEI, norm | tokens) with a bootstrap CI over claims, and the length-matched
  pairs (NEI and decided claims at equal token count; share with a Wilson CI, r_rb = 2 share - 1). The matched
  r_rb decides when at least :data:`normscope.signals.claims.MIN_PAIRS` untied pairs exist, else the partial rho
  (said on the row). A CI that includes 0 reads ``not decided at this size``: 50 claims are all the sample has.
- **annotation time** (beside): seconds from the annotator's ``start`` to ``finish`` operation (a claim whose
  operations jump by more than a day, a clock reset, has none), Spearman rho with the norm (bootstrap CI,
  permutation p) and partial on tokens.
- **challenge type and the three labels** (beside): Kruskal-Wallis H of the norm across the 6 challenge types and
  across the 3 labels, asymptotic chi-square p (scipy), with the H of the token count beside each.

Every figure is computed on the claims sorted by id, so it does not depend on the input order.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pandas as pd

from normscope._format import plural
from normscope.data import data_path
from normscope.encoders import DEFAULT_MODEL, load_encoder
from normscope.encoders.embed import embed_texts
from normscope.errors import DataError, InputError
from normscope.requests import Embedding, Resampling
from normscope.signals.abstention import AbstentionResult, abstention_stats
from normscope.signals.claims import feverous_claim
from normscope.signals.labels import model_name
from normscope.table import require_raw_norms

__all__ = ["load_feverous", "annotation_seconds", "feverous_stats", "run_feverous", "FeverousResult", "NEI",
           "CLOCK_JUMP_S"]

#: The label of the claims the evidence cannot decide.
NEI = "NOT ENOUGH INFO"
#: A step between two consecutive annotator operations longer than this (seconds) is a clock reset: no time.
CLOCK_JUMP_S = 86_400.0


def annotation_seconds(operations) -> float:
    """Seconds from the first operation (``start``) to the last (``finish``) of one FEVEROUS annotation.

    Parameters
    ----------
    operations : list of dict
        ``annotator_operations`` of a FEVEROUS record (``operation``, ``value``, ``time`` in seconds as a string).

    Returns
    -------
    float
        ``time(last) - time(first)``; NaN when there are fewer than 2 operations, a time is not a number, the times
        decrease, or two consecutive operations are more than :data:`CLOCK_JUMP_S` apart (a clock reset: one of the
        50 sample claims, id 9222, jumps from 0.1 s to 1.6e9 s).
    """
    try:
        t = np.array([float(o["time"]) for o in operations], dtype=np.float64)
    except (KeyError, TypeError, ValueError):
        return float("nan")
    if t.size < 2 or not np.all(np.isfinite(t)):
        return float("nan")
    steps = np.diff(t)
    if np.any(steps < 0) or np.any(steps > CLOCK_JUMP_S):
        return float("nan")
    return float(t[-1] - t[0])


def load_feverous(path: str | Path | None = None) -> pd.DataFrame:
    """The FEVEROUS sample as a table, one row per claim, sorted by id.

    Parameters
    ----------
    path : path-like, optional
        ``sample.jsonl`` (default: the ``feverous`` dataset, :func:`normscope.data.data_path`).

    Returns
    -------
    pandas.DataFrame
        ``id`` (str), ``claim``, ``label``, ``challenge``, ``annotation_s`` (float seconds, NaN when unknown),
        ``n_operations`` (int).

    Raises
    ------
    DataError
        The dataset is absent (the message names ``normscope data fetch feverous``) or a line is not a FEVEROUS
        record.
    """
    p = Path(path) if path is not None else data_path("feverous")
    rows = []
    for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            r = json.loads(line)
            ops = r["annotator_operations"]
            rows.append({"id": str(r["id"]), "claim": str(r["claim"]), "label": str(r["label"]),
                         "challenge": str(r["challenge"]), "annotation_s": annotation_seconds(ops),
                         "n_operations": len(ops)})
        except (ValueError, KeyError, TypeError):
            raise DataError(f"{p.name} line {i} is not a FEVEROUS record (id, claim, label, challenge, "
                            "annotator_operations)") from None
    df = pd.DataFrame(rows)
    if df.empty or df["id"].duplicated().any():
        raise DataError(f"{p.name}: {'no claims' if df.empty else 'duplicate claim ids'}")
    return df.sort_values("id", kind="stable").reset_index(drop=True)


def _kruskal(values: np.ndarray, groups: np.ndarray) -> dict:
    from scipy.stats import kruskal  # deferred: scipy is not loaded to start the CLI

    levels = sorted(set(groups.tolist()))
    parts = [values[groups == g] for g in levels]
    if len(parts) < 2 or any(len(x) < 2 for x in parts):
        return {"H": None, "p": None, "groups": {str(g): int(len(x)) for g, x in zip(levels, parts)}}
    h, pv = kruskal(*parts)
    return {"H": float(h), "p": float(pv), "groups": {str(g): int(len(x)) for g, x in zip(levels, parts)},
            "median_norm": {str(g): float(np.median(x)) for g, x in zip(levels, parts)}}


def feverous_stats(df: pd.DataFrame, *, n_boot: int = 2000, n_perm: int = 2000, seed: int = 0,
                   level: float = 0.95) -> dict:
    """The figures of the FEVEROUS row from the claims' norms and token counts.

    Parameters
    ----------
    df : pandas.DataFrame
        :func:`load_feverous`'s columns plus ``norm`` (float, raw) and ``tokens`` (int).
    n_boot, n_perm, seed, level
        Bootstrap resamples of every CI (claims resampled), permutations of the time rho's p, seed, CI level.

    Returns
    -------
    dict
        ``nei``: :func:`~normscope.signals.abstention.abstention_stats` of NEI vs the decided claims (its
        ``n_answerable`` = decided, ``n_unanswerable`` = NEI); ``time``: ``n``, ``spearman``, ``spearman_ci``,
        ``p_value``, ``partial_rho``, ``partial_ci`` (on tokens), ``median_s``; ``challenge`` and ``label``:
        Kruskal-Wallis ``H``, ``p``, ``groups`` (sizes), ``median_norm``, and ``tokens_H`` / ``tokens_p``.
    """
    from normscope.stats import correlation, partial_spearman  # deferred: scipy

    d = df.sort_values("id", kind="stable")
    norm = d["norm"].to_numpy(np.float64)
    tok = d["tokens"].to_numpy(np.float64)
    nei = abstention_stats(norm, tok, (d["label"] == NEI).to_numpy(), ids=d["id"].tolist(), n_boot=n_boot, seed=seed,
                           level=level)
    t = d["annotation_s"].to_numpy(np.float64)
    ok = np.isfinite(t)
    c = correlation(norm[ok], t[ok], n_boot=n_boot, n_perm=n_perm, seed=seed, ci=level)
    part = partial_spearman(t[ok], norm[ok], tok[ok], n_boot=n_boot, n_perm=0, seed=seed, ci=level,
                            control_names=["tokens"])
    time = {"n": int(ok.sum()), "n_missing": int((~ok).sum()), "spearman": float(c.spearman),
            "spearman_ci": [float(v) for v in c.spearman_ci], "p_value": float(c.p_value),
            "partial_rho": float(part.rho), "partial_ci": [float(v) for v in part.ci],
            "median_s": float(np.median(t[ok]))}
    out = {"nei": nei, "time": time}
    for key in ("challenge", "label"):
        g = d[key].to_numpy()
        k, kt = _kruskal(norm, g), _kruskal(tok, g)
        out[key] = dict(k, tokens_H=kt["H"], tokens_p=kt["p"])
    return out


@dataclasses.dataclass
class FeverousResult(AbstentionResult):
    """The result of :func:`run_feverous` (``to_dict()`` is ``normscope correlate --signal feverous --json``): the
    fields and JSON of :class:`~normscope.signals.abstention.AbstentionResult`.

    Attributes
    ----------
    signal : str
        ``"feverous"``.
    model, dataset : str
    stats : dict
        :func:`feverous_stats`.
    length_unit : str
    seed, n_items, n_junk, n_truncated : int
    notes : list of str
    claims : list of ClaimRow
        The row ``abstention_feverous``.
    items : pandas.DataFrame
        One row per claim: :func:`load_feverous`'s columns, ``norm``, ``tokens``.
    """


_EMBEDDING = Embedding()
_RESAMPLING = Resampling(n_boot=2000, n_perm=2000)


def run_feverous(*, embedding: Embedding = _EMBEDDING, resampling: Resampling = _RESAMPLING, encoder=None,
                 path: str | Path | None = None, progress: bool = False) -> FeverousResult:
    """Embed the FEVEROUS sample's claims and relate their raw norms to label, challenge and annotation time.

    Parameters
    ----------
    embedding : Embedding
        Model, device, precision, runtime, batch size, junk handling.
    resampling : Resampling
        ``n_boot`` (every CI), ``n_perm`` (the time rho's p), ``seed`` (bootstrap, permutations, pairing), ``level``.
    encoder : Encoder, optional
    path : path-like, optional
        ``sample.jsonl`` (default: the fetched ``feverous`` dataset).
    progress : bool

    Returns
    -------
    FeverousResult

    Raises
    ------
    DataError
        The dataset is absent or malformed.
    InputError
        Already-normalised vectors; junk with ``junk="error"``.
    """
    df = load_feverous(path)
    e = embedding
    model = e.model or DEFAULT_MODEL
    if encoder is None:
        encoder = load_encoder(model, device=e.device, precision=e.precision, runtime=e.runtime)
    table = embed_texts(df["claim"].tolist(), df["id"].tolist(), encoder=encoder, batch_size=e.batch_size,
                        progress=progress, junk=e.junk, what="FEVEROUS claims")
    norm = table.norms.astype(np.float64)
    require_raw_norms(norm, "correlate --signal feverous")
    pos = {i: k for k, i in enumerate(table.ids)}
    kept = df[df["id"].isin(pos)].copy()
    kept["norm"] = [norm[pos[i]] for i in kept["id"]]
    notes = []
    if table.tokens is not None:
        kept["tokens"] = [int(table.tokens[pos[i]]) for i in kept["id"]]
        unit = "tokens the model saw (after truncation, special tokens included)"
    else:
        kept["tokens"] = [len(t.split()) for t in kept["claim"]]
        unit = "words (the model has no tokenizer)"
        notes.append("the model has no tokenizer: claims are matched on their word count")
    if len(kept) < len(df):
        notes.append(f"{plural(len(df) - len(kept), 'junk claim')} left out")
    missing = int(kept["annotation_s"].isna().sum())
    if missing:
        notes.append(f"{plural(missing, 'claim')} without an annotation time (a clock reset between two operations)")
    if (kept["label"] == NEI).sum() < 2 or (kept["label"] != NEI).sum() < 2:
        raise InputError("the FEVEROUS sample needs at least 2 NOT ENOUGH INFO and 2 decided claims")
    seed = int(resampling.seed)
    st = feverous_stats(kept, n_boot=resampling.n_boot, n_perm=resampling.n_perm, seed=seed, level=resampling.level)
    res = FeverousResult(signal="feverous", model=model_name(encoder, model),
                         dataset=f"FEVEROUS dev sample, {len(kept)} claims (graphrag-core 0.18.1 fixture; CC BY-SA 3.0)",
                         stats=st, length_unit=unit, seed=seed, n_items=len(df), n_junk=len(df) - len(kept),
                         n_truncated=int(table.n_truncated or 0), notes=notes,
                         items=kept.reset_index(drop=True))
    res.claims = [feverous_claim(res.to_dict())]
    return res
