"""``normscope tokens`` as Python: the input embedding table's row norms against frequency and use."""

from __future__ import annotations

import numpy as np
import pandas as pd

from normscope._progress import step
from normscope.encoders import DEFAULT_MODEL, load_encoder
from normscope.errors import InputError
from normscope.requests.tokens import TokensRequest
from normscope.stats import correlation
from normscope.tokens.result import TokensResult
from normscope.tokens.table import embedding_table_of, token_table

__all__ = ["run_tokens", "tokens_statistics", "MIN_GROUP", "FREQUENCY_SOURCE"]

#: Fewest tokens behind a correlation or a median contrast.
MIN_GROUP = 10
FREQUENCY_SOURCE = ("wordfreq 3 Zipf frequency, log10 occurrences per 10^9 words of English ('best' list), of the "
                    "token's string; a ## piece: of its string as a word (a proxy, reported apart)")


def _canonical(items: pd.DataFrame) -> pd.DataFrame:
    """Rows in token order (then row id): every resample and permutation is drawn in this order, so the
    statistics do not depend on the order of the table's rows."""
    return items.sort_values(["token", "token_id"], kind="stable").reset_index(drop=True)


def _median_contrast(unused: np.ndarray, used: np.ndarray, *, n_boot: int, seed: int) -> dict:
    """Difference and ratio of medians (unused minus / over used) with percentile bootstrap CIs.

    The two groups are resampled independently (scipy.stats.bootstrap, the same resamples for the
    difference and the ratio: one seed).
    """
    from scipy.stats import bootstrap

    def run(stat):
        if n_boot < 1:
            return [None, None]
        res = bootstrap((unused, used), stat, vectorized=True, n_resamples=n_boot, batch=50, method="percentile",
                        paired=False, rng=np.random.default_rng(seed))
        return [float(res.confidence_interval.low), float(res.confidence_interval.high)]

    med_u, med_w = float(np.median(unused)), float(np.median(used))
    return {
        "median_unused": med_u, "median_used": med_w,
        "difference": med_u - med_w,
        "ci": run(lambda a, b, axis=-1: np.median(a, axis=axis) - np.median(b, axis=axis)),
        "ratio": med_u / med_w,
        "ratio_ci": run(lambda a, b, axis=-1: np.median(a, axis=axis) / np.median(b, axis=axis)),
        "n_unused": int(unused.size), "n_used": int(used.size),
        "method": (f"percentile bootstrap, {n_boot} resamples, the unused and the used rows resampled "
                   "independently (scipy.stats.bootstrap; the same resamples for difference and ratio)"),
    }


def tokens_statistics(items: pd.DataFrame, *, n_boot: int = 2000, n_perm: int = 2000, seed: int = 0) -> dict:
    """The statistics of a token table (:func:`normscope.tokens.table.token_table`).

    Parameters
    ----------
    items : pandas.DataFrame
        Columns ``token_id, token, kind, norm, zipf, used``.
    n_boot, n_perm, seed : keyword-only
        Bootstrap resamples (over tokens) and permutations of the p-values.

    Returns
    -------
    dict
        ``counts``, ``norm_median``, ``frequency`` (word / subword / used correlations) and
        ``unused_vs_used`` as described in :class:`~normscope.tokens.result.TokensResult`. Each
        figure is computed from the rows of its group in token order, so permuting the table's rows
        changes none of them.
    """
    t = _canonical(items)
    kinds = ("word", "subword", "special", "unused")
    counts = {k: int((t["kind"] == k).sum()) for k in kinds}
    median = {k: (float(t.loc[t["kind"] == k, "norm"].median()) if counts[k] else None) for k in kinds}
    freq: dict = {}
    for group, mask in (("word", t["kind"] == "word"), ("subword", t["kind"] == "subword"), ("used", t["used"])):
        has = mask & np.isfinite(t["zipf"])
        if int(has.sum()) < MIN_GROUP:
            freq[group] = None
            continue
        r = correlation(t.loc[has, "norm"].to_numpy(), t.loc[has, "zipf"].to_numpy(), n_boot=n_boot, n_perm=n_perm,
                        seed=seed, min_n=MIN_GROUP).to_dict()
        r["n_no_frequency"] = int((mask & ~np.isfinite(t["zipf"])).sum())
        freq[group] = r
    unused = t.loc[t["kind"] == "unused", "norm"].to_numpy()
    used = t.loc[t["used"], "norm"].to_numpy()
    contrast = (_median_contrast(unused, used, n_boot=n_boot, seed=seed)
                if unused.size >= MIN_GROUP and used.size >= MIN_GROUP else None)
    return {"counts": counts, "norm_median": median, "frequency": freq, "unused_vs_used": contrast}


def run_tokens(request: TokensRequest | None = None, *, encoder=None) -> TokensResult:
    """Row norms of the input embedding table of a model against token frequency and use.

    Parameters
    ----------
    request : TokensRequest, optional
        The model, device and resampling (:class:`~normscope.requests.tokens.TokensRequest`; default its
        defaults): ``resampling.n_boot`` bootstrap resamples over tokens (CIs), ``resampling.n_perm``
        permutations (p-values), ``resampling.seed``.
    encoder : Encoder, optional, keyword-only
        Default ``load_encoder(request.model, device=request.device)``: a transformer (its
        ``get_input_embeddings()`` and tokenizer vocabulary) or GloVe (its word-vector table).

    Returns
    -------
    TokensResult

    Raises
    ------
    InputError
        Fewer than 2 rows (negative ``n_boot`` / ``n_perm`` are refused when the request is built).
    ModelError
        An encoder without an input embedding table and vocabulary (precomputed vectors).
    """
    r = request if request is not None else TokensRequest()
    n_boot, n_perm, seed = r.resampling.n_boot, r.resampling.n_perm, r.resampling.seed
    if encoder is None:
        encoder = load_encoder(r.model or DEFAULT_MODEL, device=r.device)
    weights, tokens, special, info = embedding_table_of(encoder)
    if weights.shape[0] < 2:
        raise InputError("the embedding table has fewer than 2 rows")
    items = token_table(weights, tokens, special)
    with step(f"statistics over {len(items):,} rows: bootstrap CIs ({n_boot:,} resamples), permutation p "
              f"({n_perm:,} permutations)"):
        stats = tokens_statistics(items, n_boot=n_boot, n_perm=n_perm, seed=seed)
    init = info.get("initializer_range")
    init_norm = float(init) * float(np.sqrt(weights.shape[1])) if init else None
    notes = []
    c = stats["counts"]
    if c["unused"] == 0:
        notes.append("no never-used rows in this table (no [unused*] entries): the unused-vs-used contrast is not "
                     "testable")
    elif stats["unused_vs_used"] is None:
        notes.append(f"only {c['unused']} never-used rows (fewer than {MIN_GROUP}): no contrast computed")
    for g in ("word", "subword"):
        r = stats["frequency"].get(g)
        if r is not None and r["n_no_frequency"]:
            notes.append(f"{r['n_no_frequency']} {g} tokens have no wordfreq frequency and are left out of its "
                         f"correlation ({r['n']} kept)")
    if init_norm is not None:
        notes.append(f"a row drawn at initialisation (normal, sd {init:g}) has norm about {init_norm:.3f} = sd x "
                     "sqrt(d): never-used rows near it have not grown; whether they decayed from a larger "
                     "pre-training value is not visible here")
    return TokensResult(
        model=encoder.fingerprint.name, fingerprint=encoder.fingerprint.to_dict(), source=info["source"],
        n_rows=int(weights.shape[0]), dim=int(weights.shape[1]), counts=c, norm_median=stats["norm_median"],
        frequency=stats["frequency"], unused_vs_used=stats["unused_vs_used"], init_norm=init_norm,
        frequency_source=FREQUENCY_SOURCE, n_boot=n_boot, n_perm=n_perm, seed=seed, notes=notes, items=items,
    )
