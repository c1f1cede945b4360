"""Items of the frozen-tower arm: WordNet 3.0 nouns with 1..4 noun senses and one gloss per sense.

Nouns are single-word lowercase WordNet 3.0 nouns (at least 3 letters, the lab's rule in
:mod:`normscope.lab.data`) with exactly ``a`` noun senses, ``a`` in 1..``max_senses``; ``per_group`` of each,
drawn with the seed from the sorted list of candidates. Each sense contributes its synset's definition (the
gloss); identical gloss texts are stored once (two chosen synonyms share their synset's gloss).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from normscope.errors import InputError
from normscope.lab.data import _Nouns
from normscope.lab.wordnet_data import load_wordnet

__all__ = ["TowerData", "tower_data"]


@dataclass
class TowerData:
    """Nouns, their number of senses and their glosses (CSR).

    Attributes
    ----------
    names : list of str, length N
        The nouns.
    senses : ndarray of int64, shape (N,)
        Number of WordNet noun senses of each noun (its ambiguity).
    glosses : list of str, length G
        Distinct gloss texts (synset definitions).
    indptr, indices : ndarray of int64
        The glosses of noun i are ``glosses[j]`` for ``j`` in ``indices[indptr[i]:indptr[i + 1]]``, one per
        sense, in the order of the synset names.
    info : dict
        Source details (JSON-serialisable).
    """

    names: list
    senses: np.ndarray
    glosses: list
    indptr: np.ndarray
    indices: np.ndarray
    info: dict = field(default_factory=dict)

    def __post_init__(self):
        n = len(self.names)
        if n < 2 or self.senses.shape != (n,) or self.indptr.shape != (n + 1,):
            raise InputError(f"inconsistent TowerData: {n} names, senses {self.senses.shape}, indptr {self.indptr.shape}")
        if np.any(np.diff(self.indptr) < 1):
            raise InputError("every noun needs at least one gloss")
        if self.indices.size and (self.indices.min() < 0 or self.indices.max() >= len(self.glosses)):
            raise InputError("a gloss index is out of range")

    @property
    def n_items(self) -> int:
        return len(self.names)

    def permuted(self, order) -> "TowerData":
        """The same nouns in the order ``order`` (a permutation of ``range(N)``); glosses keep their indices."""
        order = np.asarray(order, dtype=np.int64)
        if sorted(order.tolist()) != list(range(self.n_items)):
            raise InputError("order must be a permutation of range(N)")
        rows = [self.indices[self.indptr[i]:self.indptr[i + 1]] for i in order]
        indptr = np.zeros(len(rows) + 1, dtype=np.int64)
        indptr[1:] = np.cumsum([len(r) for r in rows])
        return TowerData([self.names[i] for i in order], self.senses[order], list(self.glosses), indptr,
                         np.concatenate(rows).astype(np.int64), dict(self.info))


def tower_data(per_group: int = 64, *, max_senses: int = 4, seed: int = 0, wordnet=None) -> TowerData:
    """WordNet 3.0 nouns with 1..``max_senses`` noun senses, ``per_group`` each, and their glosses (Miller 1995).

    Parameters
    ----------
    per_group : int
        Nouns per number of senses (>= 1).
    max_senses : int, keyword-only
        Groups 1..max_senses.
    seed : int, keyword-only
        Draw of the nouns (deterministic).
    wordnet : nltk WordNetCorpusReader, optional
        Defaults to :func:`normscope.lab.wordnet_data.load_wordnet`.

    Returns
    -------
    TowerData
        Nouns grouped by number of senses (group 1 first), sorted by name within a group.

    Raises
    ------
    InputError
        ``per_group < 1`` or too few nouns in a group.
    DataError
        WordNet cannot be found.
    """
    if per_group < 1 or max_senses < 1:
        raise InputError(f"per_group and max_senses must be >= 1, got {per_group}, {max_senses}")
    wn = wordnet if wordnet is not None else load_wordnet()
    nouns = _Nouns(wn, max_senses)
    groups: dict[int, list[str]] = {a: [] for a in range(1, max_senses + 1)}
    for w in sorted(wn.all_lemma_names(pos="n")):
        if nouns.usable(w):
            groups[nouns.n_senses(w)].append(w)
    rng = np.random.default_rng(seed)
    names: list[str] = []
    senses: list[int] = []
    for a, cands in groups.items():
        pick = []
        for k in rng.permutation(len(cands)):
            w = cands[int(k)]
            if len(nouns.info(w)[0]) == a:  # the synsets holding the word itself: one gloss per sense
                pick.append(w)
                if len(pick) == per_group:
                    break
        if len(pick) < per_group:
            raise InputError(f"WordNet has only {len(pick)} usable nouns with {a} senses, need {per_group}")
        names += sorted(pick)
        senses += [a] * per_group
    index: dict[str, int] = {}
    rows = []
    for w in names:
        rows.append([index.setdefault(wn.synset(s).definition(), len(index)) for s in sorted(nouns.info(w)[0])])
    indptr = np.zeros(len(rows) + 1, dtype=np.int64)
    indptr[1:] = np.cumsum([len(r) for r in rows])
    return TowerData(names, np.array(senses, dtype=np.int64), list(index), indptr,
                     np.array([j for r in rows for j in r], dtype=np.int64),
                     {"source": "wordnet-3.0 nouns", "per_group": int(per_group), "max_senses": int(max_senses),
                      "n_glosses": len(index), "seed": int(seed)})
