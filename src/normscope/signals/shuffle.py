"""A perturbation row: each text against its own word-shuffled copy (``normscope correlate --signal shuffle``).

The shuffled copy has the same words, so the same length in words and (for a subword tokenizer that
splits on whitespace first) the same tokens: a paired comparison of the raw norm that length cannot
confound. Per source, :func:`run_shuffle` reports

- the share of pairs whose shuffled copy has the smaller norm, with a Wilson score interval
  (Wilson 1927, J. Am. Stat. Assoc. 22:209), and the two-sided sign test p (exact binomial, p = 1/2);
- the median relative norm change ``||z(shuffled)|| / ||z(text)|| - 1`` with a percentile bootstrap CI
  that resamples pairs (within sources when pooled).

Pairs whose two norms agree to a relative :data:`TIE_RTOL` are ties (an order-invariant encoder, such
as mean-pooled static word vectors, ties every pair): the share and the sign test count untied
pairs only, and the ties are reported. Texts of fewer than two words, and texts whose every
shuffle reproduces them (e.g. "the the"), are left out and counted.

Reference figure (issue 39, bundled MiniLM-L6, raw mean-pooled norms): shuffled SciFact titles get a
smaller norm in 66.9 % of 2,000 pairs (median -1.75 %). The paper does not state this claim; the
scorecard row (:func:`normscope.signals.claims.shuffle_claim`) is exploratory.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Sequence

import numpy as np
import pandas as pd

from normscope._format import noun, plural
from normscope.encoders import DEFAULT_MODEL, load_encoder
from normscope.encoders.embed import embed_texts
from normscope.errors import DataMissing, InputError
from normscope.inputs import collapse_duplicates
from normscope.requests import Embedding, Resampling
from normscope.signals.items import sample_indices
from normscope.signals.claims import MIN_PAIRS, ORDER_BLIND, shuffle_claim
from normscope.signals.labels import model_name
from normscope.stats_designs import sign_test_p, wilson_interval
from normscope.table import require_raw_norms

__all__ = ["shuffle_words", "split_final", "item_rng", "wilson_interval", "sign_test_p", "paired_shuffle_stats",
           "run_shuffle", "ShuffleResult", "scifact_titles", "FINAL_PUNCTUATION", "TIE_RTOL", "MAX_DRAWS",
           "DEFAULT_N_SHUFFLE", "MIN_PAIRS", "ORDER_BLIND"]

#: Two norms whose relative difference is at most this are a tie (float32 sums in another order differ ~1e-7).
TIE_RTOL = 1e-5
#: Punctuation that ends a text and stays at the end of its shuffled copy.
FINAL_PUNCTUATION = ".!?;:,\u2026"
#: Shuffles drawn before a text whose every draw reproduces it is left out.
MAX_DRAWS = 20
#: Default number of SciFact titles (a seeded sample; the issue's reference figure used 2,000 pairs).
DEFAULT_N_SHUFFLE = 2000
# ORDER_BLIND (share of tied pairs from which an encoder counts as blind to word order) and MIN_PAIRS (fewest
# untied pairs per source for a share, a sign test and a CI) are defined beside the row's rule, in signals.claims


def item_rng(seed: int, item_id: str) -> np.random.Generator:
    """The random generator of one item: seeded by ``seed`` and the item's id (not its position).

    The same item gets the same shuffle whatever the order or company of the other items, so the
    per-item outputs are permutation-equivariant. The id enters through its SHA-256 digest (stable
    across processes, unlike :func:`hash`).
    """
    digest = hashlib.sha256(str(item_id).encode("utf-8")).digest()
    return np.random.default_rng([int(seed), int.from_bytes(digest[:8], "little")])


def shuffle_words(text: str, rng: np.random.Generator, *, max_draws: int = MAX_DRAWS) -> str | None:
    """``text`` with its words (``str.split()``: runs of non-whitespace) in a random order, joined by one space.

    The text's final punctuation (the trailing :data:`FINAL_PUNCTUATION` of its last word, or a last
    word made only of it) stays at the end, so that only the word order changes: a title's full stop
    does not move into the middle of the copy (a word lookup such as GloVe's reads a mid-text ``"."``
    otherwise than a final one).

    Parameters
    ----------
    text : str
    rng : numpy.random.Generator
        E.g. :func:`item_rng`.
    max_draws : int
        A permutation that reproduces the word order is redrawn, up to this many draws.

    Returns
    -------
    str or None
        The shuffled text; None when ``text`` has fewer than two words (after its final punctuation
        is set aside) or every draw reproduced its word order (all its words are the same word, or
        ``max_draws`` identity draws).
    """
    words, tail = split_final(text)
    if tail and text.split()[-1] == tail:  # a last "word" of punctuation only: it stays last, as its own word
        tail = " " + tail
    if len(words) < 2 or len(set(words)) < 2:
        return None
    for _ in range(max_draws):
        order = rng.permutation(len(words))
        out = [words[i] for i in order]
        if out != words:
            return " ".join(out) + tail
    return None


def split_final(text: str) -> tuple[list[str], str]:
    """The words of ``text`` (``str.split()``) and its final punctuation set aside, as :func:`shuffle_words` reads them.

    Returns
    -------
    (words, tail) : list of str, str
        ``tail`` is the trailing :data:`FINAL_PUNCTUATION` of the last word ("" when none), removed from
        it, or the last word itself when it is punctuation only (then not among ``words``).
    """
    words = text.split()
    if not words:
        return words, ""
    last = words[-1].rstrip(FINAL_PUNCTUATION)
    if not last:
        return words[:-1], words[-1]
    return words[:-1] + [last], words[-1][len(last):]


def _boot_median(rel: np.ndarray, groups: list[np.ndarray], n_boot: int, seed: int, level: float) -> tuple:
    """Percentile bootstrap CI of the median of ``rel``: pairs resampled with replacement within each group."""
    rng = np.random.default_rng(seed)
    meds = np.empty(n_boot)
    chunk = max(1, 2_000_000 // max(1, rel.size))
    for start in range(0, n_boot, chunk):
        b = min(chunk, n_boot - start)
        draws = np.concatenate([g[rng.integers(0, g.size, size=(b, g.size))] for g in groups], axis=1)
        meds[start:start + b] = np.median(rel[draws], axis=1)
    a = (1 - level) / 2
    return float(np.quantile(meds, a)), float(np.quantile(meds, 1 - a))


def paired_shuffle_stats(norm: np.ndarray, norm_shuffled: np.ndarray, *, groups: Sequence | None = None,
                         n_boot: int = 2000, seed: int = 0, level: float = 0.95) -> dict:
    """The paired statistics of one set of (text, shuffled copy) norms.

    Parameters
    ----------
    norm, norm_shuffled : array_like of shape (n,), float
        Raw norms of each text and of its shuffled copy, in a fixed order (the caller sorts by id).
    groups : array_like of shape (n,), optional
        Source of each pair: the bootstrap resamples pairs within each source.
    n_boot : int
        Bootstrap resamples of the median (0: no CI).
    seed : int
    level : float

    Returns
    -------
    dict
        ``n_pairs``, ``n_ties``, ``n_smaller`` (shuffled copy has the smaller norm), ``n_larger``,
        ``share_smaller`` (of untied pairs) with ``share_ci`` (Wilson), ``sign_p`` (two-sided),
        ``median_rel_change`` (fraction) with ``median_ci`` (percentile bootstrap over pairs),
        ``mean_rel_change``; figures are None below :data:`MIN_PAIRS` untied pairs.
    """
    a = np.asarray(norm, dtype=np.float64)
    s = np.asarray(norm_shuffled, dtype=np.float64)
    if a.shape != s.shape or a.ndim != 1:
        raise InputError(f"norms must be two 1-D arrays of one length, got {a.shape} and {s.shape}")
    rel = s / a - 1.0
    tie = np.abs(rel) <= TIE_RTOL
    k, m = int(((rel < 0) & ~tie).sum()), int(((rel > 0) & ~tie).sum())
    n_untied = k + m
    out = {"n_pairs": int(a.size), "n_ties": int(tie.sum()), "n_smaller": k, "n_larger": m,
           "share_smaller": None, "share_ci": None, "sign_p": None,
           "median_rel_change": float(np.median(rel)) if a.size else None, "median_ci": None,
           "mean_rel_change": float(np.mean(rel)) if a.size else None, "ci_level": level,
           "ci_method": "share: Wilson score; median: percentile bootstrap over pairs"
                        + (" (resampled within sources)" if groups is not None else ""),
           "n_boot": int(n_boot)}
    if n_untied < MIN_PAIRS:
        return out
    out["share_smaller"] = k / n_untied
    out["share_ci"] = list(wilson_interval(k, n_untied, level))
    out["sign_p"] = sign_test_p(k, n_untied)
    if n_boot > 0:
        if groups is None:
            members = [np.arange(a.size)]
        else:
            g = np.asarray(groups, dtype=object)
            members = [np.flatnonzero(g == name) for name in sorted(set(g.tolist()))]
        out["median_ci"] = list(_boot_median(rel, members, n_boot, seed, level))
    return out


def scifact_titles() -> tuple[list[str], list[str]]:
    """SciFact document ids and titles from the local data folder (never fetched: ``fetch=False``).

    Raises
    ------
    DataMissing
        SciFact is not in a data folder.
    """
    from normscope.data import data_path
    from normscope.data.beir import load_beir

    ds = load_beir(data_path("scifact", fetch=False))
    keep = [i for i, t in enumerate(ds.doc_titles) if t]
    return [ds.doc_ids[i] for i in keep], [ds.doc_titles[i] for i in keep]


@dataclasses.dataclass
class ShuffleResult:
    """The result of :func:`run_shuffle` (``to_dict()`` is ``normscope correlate --signal shuffle --json``).

    Attributes
    ----------
    signal : str
        ``"shuffle"``.
    model, dataset : str
    counts : dict
        ``n_items`` given, ``n_duplicates`` left out, ``n_short`` (fewer than 2 words), ``n_unshufflable``
        (every shuffle reproduced the text), ``n_junk`` (junk text or vector on either side), ``n_pairs``,
        ``n_token_mismatch`` (pairs whose token counts after the model's tokenizer differ), ``n_truncated``.
    pooled : dict
        :func:`paired_shuffle_stats` over every pair (within-source bootstrap when there are sources).
    strata : list of dict or None
        One :func:`paired_shuffle_stats` per source, with ``name``.
    by : str or None
    token_mismatch_ids : list of str
        Up to 20 ids of pairs whose token counts differ.
    seed : int
    notes : list of str
    claims : list of dict
        The scorecard row ``atypical_input_shuffle``.
    items : pandas.DataFrame
        One row per pair: ``id``, ``item``, ``shuffled``, ``norm``, ``norm_shuffled``, ``rel_change``,
        ``tokens``, ``tokens_shuffled``, ``stratum`` (with sources).
    """

    signal: str
    model: str
    dataset: str
    counts: dict
    pooled: dict
    strata: list | None
    by: str | None
    token_mismatch_ids: list
    seed: int
    notes: list
    items: pd.DataFrame
    claims: list = dataclasses.field(default_factory=list)

    def to_dict(self) -> dict:
        """JSON-ready summary (without the per-item table)."""
        return {"signal": self.signal, "model": self.model, "dataset": self.dataset, **self.counts,
                "pooled": self.pooled, "strata": self.strata, "by": self.by,
                "token_mismatch_ids": list(self.token_mismatch_ids), "seed": self.seed, "tie_rtol": TIE_RTOL,
                "notes": list(self.notes), "claims": list(self.claims)}


_EMBEDDING = Embedding()
_RESAMPLING = Resampling(n_boot=2000, n_perm=0)


def _left_out(texts: list[str], shuffled: list, counts: dict, notes: list[str]) -> list[int]:
    """Count the texts of fewer than 2 words and those no shuffle changes; the positions of the rest."""
    short = [len(split_final(t)[0]) < 2 for t in texts]
    counts["n_short"] = int(sum(short))
    counts["n_unshufflable"] = int(sum(s is None and not sh for s, sh in zip(shuffled, short)))
    if counts["n_short"]:
        notes.append(f"{plural(counts['n_short'], 'text')} of fewer than 2 words left out (nothing to shuffle)")
    if counts["n_unshufflable"]:
        notes.append(f"{plural(counts['n_unshufflable'], 'text')} left out: every shuffle reproduced the text "
                     f"(all words the same, or {MAX_DRAWS} identity draws)")
    return [k for k, s in enumerate(shuffled) if s is not None]


def _items(items, ids, strata, n, seed) -> tuple[list[str], list[str], np.ndarray | None, str]:
    if items is None:
        try:
            ids, texts = scifact_titles()
        except DataMissing as exc:
            raise InputError("the shuffle signal reads SciFact titles by default and SciFact is not in a data folder "
                             "(normscope data fetch scifact); or give your own texts with --items") from exc
        pos = sample_indices(len(texts), DEFAULT_N_SHUFFLE if n is None else (n or None), seed)
        return ([ids[i] for i in pos], [texts[i] for i in pos], None,
                f"SciFact document titles ({len(pos)} of {len(texts)}" + (f", sampled with seed {seed})"
                                                                          if len(pos) < len(texts) else ")"))
    texts = [str(t) for t in items]
    if not texts:
        raise InputError("no items given")
    ids = [str(i) for i in range(len(texts))] if ids is None else [str(i) for i in ids]
    if len(ids) != len(texts) or len(set(ids)) != len(ids):
        raise InputError(f"ids must be {len(texts)} unique strings, got {len(ids)} ({len(set(ids))} distinct)")
    st = None
    if strata is not None:
        st = np.asarray([str(v).strip() for v in strata], dtype=object)
        if st.shape != (len(texts),):
            raise InputError(f"strata has {st.size} labels for {len(texts)} items")
    return ids, texts, st, "user items"


def run_shuffle(*, items: Sequence[str] | None = None, ids: Sequence[str] | None = None,
                strata: Sequence | None = None, by: str | None = None, n: int | None = None,
                embedding: Embedding = _EMBEDDING, resampling: Resampling = _RESAMPLING,
                keep_duplicates: bool = False, encoder=None, progress: bool = False) -> ShuffleResult:
    """Each text against its word-shuffled copy: the paired norm comparison of ``correlate --signal shuffle``.

    Parameters
    ----------
    items : sequence of str, optional
        The texts (default: a seeded sample of ``n`` SciFact document titles from the local data folder).
    ids : sequence of str, optional
        Unique ids of ``items`` (default ``"0".."n-1"``). Each item's shuffle is seeded by the seed and
        its id (:func:`item_rng`), and the statistics are computed in id order, so permuting the input
        permutes the per-item rows and changes nothing else.
    strata : sequence, optional
        Source of each item: one row per source, and the pooled bootstrap resamples within sources.
    by : str, optional
        Name of the strata (default ``"source"`` when strata are given).
    n : int, optional
        Number of SciFact titles (default 2000; 0 = all); ignored with ``items``.
    embedding : Embedding
        Model, device, precision, runtime, batch size, junk handling.
    resampling : Resampling
        ``n_boot`` bootstrap resamples of the median change; ``seed`` seeds the shuffles, the sample and
        the bootstrap.
    keep_duplicates : bool
        Keep texts that repeat another item's text (default: each counted once, smallest id kept).
    encoder : Encoder, optional
    progress : bool

    Returns
    -------
    ShuffleResult

    Raises
    ------
    InputError
        No items, bad ids/strata, SciFact absent without ``items``, fewer than :data:`MIN_PAIRS` pairs,
        already-normalised vectors, junk with ``junk="error"``.
    """

    e, seed = embedding, int(resampling.seed)
    model = e.model or DEFAULT_MODEL
    ids, texts, st, dataset = _items(items, ids, strata, n, seed)
    by = (by or "source") if st is not None else None
    notes: list[str] = []
    counts = {"n_items": len(texts)}
    keys = texts if st is None else list(zip(st.tolist(), texts))
    pos, dup = collapse_duplicates(keys, ids)
    counts["n_duplicates"] = 0 if keep_duplicates else int(dup["count"])
    if not keep_duplicates and dup["count"]:
        notes.append(f"{plural(dup['count'], 'exact duplicate text')} left out (each text counted once, smallest id kept)")
        ids, texts = [ids[i] for i in pos], [texts[i] for i in pos]
        st = st[np.asarray(pos, dtype=np.intp)] if st is not None else None
    shuffled = [shuffle_words(t, item_rng(seed, i)) for t, i in zip(texts, ids)]
    ok = _left_out(texts, shuffled, counts, notes)
    ids, texts, shuffled = [ids[k] for k in ok], [texts[k] for k in ok], [shuffled[k] for k in ok]
    st = st[np.asarray(ok, dtype=np.intp)] if st is not None else None
    if len(ids) < MIN_PAIRS:
        raise InputError(f"{'no text' if not ids else 'only ' + plural(len(ids), 'text')} can be shuffled (need at least "
                         f"{MIN_PAIRS}): give texts of at "
                         "least two different words")
    if encoder is None:
        encoder = load_encoder(model, device=e.device, precision=e.precision, runtime=e.runtime)
    kw = dict(encoder=encoder, batch_size=e.batch_size, progress=progress, junk=e.junk)
    t0 = embed_texts(texts, ids, what="texts", **kw)
    t1 = embed_texts(shuffled, ids, what="shuffled copies", **kw)
    n0, n1 = t0.norms.astype(np.float64), t1.norms.astype(np.float64)
    require_raw_norms(n0, "correlate --signal shuffle")
    i0, i1 = {i: k for k, i in enumerate(t0.ids)}, {i: k for k, i in enumerate(t1.ids)}
    both = sorted(set(i0) & set(i1))  # id order: the statistics do not depend on the input order
    counts["n_junk"] = len(ids) - len(both)
    if counts["n_junk"]:
        notes.append(f"{plural(counts['n_junk'], 'pair')} left out: the text or its shuffled copy is junk")
    if len(both) < MIN_PAIRS:
        raise InputError(f"only {plural(len(both), 'pair')} left after junk (need at least {MIN_PAIRS})")
    a, b = np.array([i0[i] for i in both]), np.array([i1[i] for i in both])
    pos_of = {i: k for k, i in enumerate(ids)}
    rows = np.array([pos_of[i] for i in both], dtype=np.intp)
    tok0 = t0.tokens[a] if t0.tokens is not None else np.full(len(both), np.nan)
    tok1 = t1.tokens[b] if t1.tokens is not None else np.full(len(both), np.nan)
    mismatch = [both[k] for k in np.flatnonzero(np.isfinite(tok0) & (tok0 != tok1))]
    counts["n_pairs"] = len(both)
    counts["n_token_mismatch"] = len(mismatch)
    counts["n_truncated"] = int((t0.n_truncated or 0) + (t1.n_truncated or 0))
    if t0.tokens is None:
        notes.append("the model has no tokenizer: token counts not checked (same words by construction)")
    elif mismatch:
        notes.append(f"{plural(len(mismatch), 'pair')} {noun(len(mismatch), 'differs', 'differ')} in token count after the "
                     "model's tokenizer (shown, not left "
                     f"out; e.g. ids {', '.join(mismatch[:5])})")
    if counts["n_truncated"]:
        notes.append(f"{plural(counts['n_truncated'], 'text')} {'was' if counts['n_truncated'] == 1 else 'were'} cut at the "
                     "model's maximum sequence length")
    items_df = pd.DataFrame({"id": both, "item": [texts[r] for r in rows], "shuffled": [shuffled[r] for r in rows],
                             "norm": n0[a], "norm_shuffled": n1[b], "rel_change": n1[b] / n0[a] - 1.0,
                             "tokens": tok0, "tokens_shuffled": tok1})
    g = st[rows] if st is not None else None
    if g is not None:
        items_df["stratum"] = g
    pooled = paired_shuffle_stats(n0[a], n1[b], groups=g, n_boot=resampling.n_boot, seed=seed,
                                  level=resampling.level)
    rows_st = None
    if g is not None:
        rows_st = []
        for name in sorted(set(g.tolist())):
            m = g == name
            rows_st.append({"name": name, **paired_shuffle_stats(n0[a][m], n1[b][m], n_boot=resampling.n_boot, level=resampling.level,
                                                                seed=seed)})
        if len(rows_st) > 1:
            notes.append(f"pairs come from {len(rows_st)} sources: each is reported on its own; the pooled row's "
                         "bootstrap resamples pairs within sources")
    if pooled["n_ties"] >= ORDER_BLIND * pooled["n_pairs"]:
        notes.append(f"{pooled['n_ties']} of {pooled['n_pairs']} pairs tie: the encoder's norm (almost) does not "
                     "depend on word order (e.g. mean-pooled word vectors), so the design cannot show an order effect")
    res = ShuffleResult(signal="shuffle", model=model_name(encoder, model), dataset=dataset, counts=counts,
                        pooled=pooled, strata=rows_st, by=by if rows_st else None, token_mismatch_ids=mismatch[:20],
                        seed=seed, notes=notes, items=items_df)
    res.claims = [shuffle_claim(res.to_dict())]
    return res
