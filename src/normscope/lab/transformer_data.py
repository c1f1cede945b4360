"""Training pairs and the held-out probe set of the transformer lab (:mod:`normscope.lab.transformer`).

The training pairs come from :func:`normscope.pairs.load_pairs` (WordNet (term, gloss), a BEIR
qrels split, or a two-column file). Two filters are applied, both stated in the run's summary:

- **short pairs**: pairs whose left or right member has more than ``max_tokens`` tokens (special
  tokens included, counted by the model's own tokenizer) are dropped, so a CPU step stays cheap;
- **hold-out**: every pair with a probe item as its left or right member (exact text match) is
  dropped, so no probe item is trained on directly.

The probe set is a user file (:func:`normscope.inputs.read_items`) or N items drawn (seeded) from
the distinct left members: from those with the smallest token count when at least N share it
(single-wordpiece WordNet nouns: every probe item then has the same length), else from all.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from normscope.errors import InputError
from normscope.inputs import read_items
from normscope.pairs import PairSource, load_pairs

__all__ = ["LabPairs", "ProbeSet", "prepare_pairs_and_probes"]


@dataclass(frozen=True)
class LabPairs:
    """Training pairs after the filters.

    Attributes
    ----------
    left, right : list of str
        Aligned positive pairs.
    name : str
        Source name (e.g. ``wordnet-3.0:n``).
    n_source : int
        Pairs in the source before filtering.
    n_long : int
        Pairs dropped because a member has more than ``max_tokens`` tokens.
    n_held_out : int
        Pairs dropped because a member is a probe item.
    max_tokens : int or None
    """

    left: list
    right: list
    name: str
    n_source: int
    n_long: int
    n_held_out: int
    max_tokens: int | None

    def __len__(self) -> int:
        return len(self.left)


@dataclass(frozen=True)
class ProbeSet:
    """The fixed probe items tracked at every step.

    Attributes
    ----------
    ids, texts : list of str, length P
    how : str
        How the items were chosen (stated in the summary).
    """

    ids: list
    texts: list
    how: str

    def __len__(self) -> int:
        return len(self.texts)


#: prepared (pairs, probe set) per process, keyed by source, tokenizer, filters and seed (the report's three
#: optimizer runs share one preparation: WordNet's 146k pairs take about 15 s of CPU to read and count)
_PREPARED: dict = {}


def _token_counts(encoder, texts: list[str]) -> np.ndarray:
    """Tokens of each text before truncation (special tokens included), by the encoder's tokenizer.

    Each distinct text is tokenized once (WordNet glosses repeat once per lemma of their synset).
    """
    uniq, inverse = np.unique(np.asarray(texts, dtype=object).astype(str), return_inverse=True)
    _seen, raw = encoder.token_counts(list(uniq))
    return np.asarray(raw, dtype=np.int64)[inverse]


def _cache_key(encoder, pairs, probe_items, max_tokens, seed):
    if isinstance(pairs, PairSource):
        return None
    def stamp(x):
        p = Path(str(x))
        return (str(p.resolve()), p.stat().st_size, p.stat().st_mtime_ns) if p.is_file() else str(x)
    fp = getattr(encoder, "fingerprint", None)
    items = int(probe_items) if isinstance(probe_items, (int, np.integer)) else stamp(probe_items)
    return (stamp(pairs), getattr(fp, "name", None), getattr(fp, "revision", None), max_tokens, items, int(seed))


def prepare_pairs_and_probes(encoder, pairs, probe_items, *, max_tokens: int | None = 16, seed: int = 0):
    """Filter the training pairs and choose (or read) the probe set.

    Parameters
    ----------
    encoder : Encoder
        Its tokenizer counts tokens (:meth:`~normscope.encoders.base.Encoder.token_counts`).
    pairs : str or PairSource
        A :func:`normscope.pairs.load_pairs` spec (``wordnet``, ``beir:DIR``, a file) or pairs.
    probe_items : int or str or Path
        N (>= 3) items to draw from the left members, or an items file.
    max_tokens : int or None, keyword-only
        Drop pairs with a member longer than this many tokens (None: keep all).
    seed : int, keyword-only
        Seed of the probe draw.

    Returns
    -------
    (LabPairs, ProbeSet)

    Raises
    ------
    InputError
        Fewer than 3 probe items, N larger than the candidates, an unreadable items file, or
        no training pair left after the filters.
    DataError
        The pair source cannot be read (see :func:`normscope.pairs.load_pairs`).
    """
    key = _cache_key(encoder, pairs, probe_items, max_tokens, seed)
    if key is not None and key in _PREPARED:
        return _PREPARED[key]
    out = _prepare(encoder, pairs, probe_items, max_tokens=max_tokens, seed=seed)
    if key is not None:
        _PREPARED.clear()  # keep one preparation (WordNet's pairs are about 40 MB)
        _PREPARED[key] = out
    return out


def _prepare(encoder, pairs, probe_items, *, max_tokens, seed):
    src = pairs if isinstance(pairs, PairSource) else load_pairs(str(pairs))
    left, right = list(src.left), list(src.right)
    n_source = len(left)
    keep = np.ones(n_source, dtype=bool)
    n_long = 0
    left_counts = None
    if max_tokens is not None:
        left_counts = _token_counts(encoder, left)
        right_counts = _token_counts(encoder, right)
        keep = (left_counts <= max_tokens) & (right_counts <= max_tokens)
        n_long = int((~keep).sum())

    if isinstance(probe_items, (int, np.integer)) and not isinstance(probe_items, bool):
        n = int(probe_items)
        if n < 3:
            raise InputError(f"--probe-items must be >= 3, got {n}")
        cand_idx = np.flatnonzero(keep)
        if left_counts is None:
            left_counts = _token_counts(encoder, left)
        # distinct left texts among the kept pairs, in first-appearance order
        seen: dict[str, int] = {}
        for i in cand_idx:
            seen.setdefault(left[i], int(left_counts[i]))
        texts = list(seen)
        counts = np.array([seen[t] for t in texts])
        if not texts:
            raise InputError("no training pair is left to draw probe items from")
        shortest = counts.min()
        pool = [t for t, c in zip(texts, counts) if c == shortest]
        if len(pool) >= n:
            how = (f"{n} distinct left members of {src.name} drawn at random (seed {seed}) among the {len(pool)} with "
                   f"the fewest tokens ({shortest}, special tokens included), held out of training")
        else:
            pool = texts
            how = (f"{n} distinct left members of {src.name} drawn at random (seed {seed}) among all {len(pool)}, "
                   f"held out of training (mixed token lengths)")
        if len(pool) < n:
            raise InputError(f"--probe-items {n}: only {len(pool)} distinct left members to draw from")
        pick = np.sort(np.random.default_rng(seed).choice(len(pool), size=n, replace=False))
        probe_texts = [pool[i] for i in pick]
        probe_ids = [f"p{i}" for i in range(n)]
    else:
        path = Path(probe_items)
        probe_ids, probe_texts = read_items(path)
        if len(probe_texts) < 3:
            raise InputError(f"--probe-items {path}: the lab needs at least 3 probe items, got {len(probe_texts)}")
        if len(set(probe_texts)) < len(probe_texts):
            raise InputError(f"--probe-items {path}: duplicate texts (each probe item must be distinct)")
        how = f"{len(probe_texts)} items read from {path.name}, held out of training"

    held = set(probe_texts)
    in_probe = np.fromiter((a in held or b in held for a, b in zip(left, right)), dtype=bool, count=n_source)
    n_held = int((keep & in_probe).sum())
    keep &= ~in_probe
    idx = np.flatnonzero(keep)
    if idx.size < 2:
        raise InputError(f"pairs {src.name}: {idx.size} training pair(s) left after the filters "
                         f"(max {max_tokens} tokens, probe items held out)")
    lab_pairs = LabPairs([left[i] for i in idx], [right[i] for i in idx], src.name, n_source, n_long, n_held, max_tokens)
    return lab_pairs, ProbeSet(list(probe_ids), list(probe_texts), how)
