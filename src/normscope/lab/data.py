"""Pair data for the lab: items, their ambiguity, and who is a positive of whom.

Two sources: :func:`synthetic_data` (docs/theory.md section 7A: N=256 items, 32 concepts, ambiguity
a in {1,2,3,4} = number of concepts an item's positives spread over) and :func:`wordnet_data`
(WordNet 3.0 nouns; positives share a synset or a direct hypernym; ambiguity = number of noun
senses). Both return a :class:`PairData` whose :meth:`PairData.sample` draws i.i.d. batches of
positive pairs (assumption A2 of docs/theory.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from normscope.errors import InputError
from normscope.lab.wordnet_data import load_wordnet

__all__ = ["PairData", "synthetic_data", "wordnet_data"]


@dataclass
class PairData:
    """Items and their positives, stored as CSR (``indptr``, ``indices``).

    Attributes
    ----------
    names : list of str, length N
        Item names.
    ambiguity : ndarray of int, shape (N,)
        Ambiguity of each item (synthetic: number of concepts its positives spread over;
        WordNet: number of noun senses).
    indptr, indices : ndarray of int64
        Positives of item i are ``indices[indptr[i]:indptr[i+1]]`` (non-empty).
    source : str
        ``"synthetic"`` or ``"wordnet"``.
    info : dict
        Source details (JSON-serialisable).
    """

    names: list
    ambiguity: np.ndarray
    indptr: np.ndarray
    indices: np.ndarray
    source: str
    info: dict = field(default_factory=dict)

    def __post_init__(self):
        n = len(self.names)
        deg = np.diff(self.indptr)
        if n < 2 or self.ambiguity.shape != (n,) or self.indptr.shape != (n + 1,):
            raise InputError(f"inconsistent PairData: {n} names, ambiguity {self.ambiguity.shape}, indptr {self.indptr.shape}")
        if np.any(deg < 1):
            raise InputError(f"every item needs a positive; item {self.names[int(np.argmin(deg))]!r} has none")
        self._deg = deg

    @property
    def n_items(self) -> int:
        return len(self.names)

    def sample(self, rng: np.random.Generator, size) -> tuple[np.ndarray, np.ndarray]:
        """Draw ``size`` i.i.d. positive pairs: anchor uniform over items, positive uniform over its positives.

        Returns
        -------
        idx_a, idx_b : ndarray of int64, shape ``size``
        """
        ia = rng.integers(0, self.n_items, size=size)
        off = (rng.random(size=size) * self._deg[ia]).astype(np.int64)
        ib = self.indices[self.indptr[ia] + off]
        return ia, ib


def _csr(pos: list[np.ndarray]):
    indptr = np.zeros(len(pos) + 1, dtype=np.int64)
    indptr[1:] = np.cumsum([len(p) for p in pos])
    indices = np.concatenate(pos).astype(np.int64) if pos else np.zeros(0, np.int64)
    return indptr, indices


def synthetic_data(n_items: int = 256, n_concepts: int = 32, *, max_ambiguity: int = 4, seed: int = 0) -> PairData:
    """Synthetic items with controlled ambiguity (docs/theory.md section 7A).

    Item i has a primary concept ``i mod n_concepts`` and ambiguity ``a_i = 1 + (i // n_concepts)
    mod max_ambiguity`` (so every concept has the same number of items of each ambiguity). Its
    concept set is its primary concept plus ``a_i - 1`` other concepts drawn without replacement;
    its positives are all other items whose primary concept is in that set. Positives of an a=1
    item all agree; those of an a=4 item pull towards four concepts (conflicting gradients, hence
    heat).

    Parameters
    ----------
    n_items, n_concepts : int
        N and the number of concepts (``n_items >= 2 n_concepts``).
    max_ambiguity : int, keyword-only
        Largest ambiguity (groups 1..max_ambiguity).
    seed : int, keyword-only
        Seed of the extra concepts.

    Returns
    -------
    PairData
    """
    if n_concepts < max_ambiguity or n_items < 2 * n_concepts or max_ambiguity < 1:
        raise InputError(
            f"need n_concepts >= max_ambiguity >= 1 and n_items >= 2 n_concepts, got n_items={n_items}, "
            f"n_concepts={n_concepts}, max_ambiguity={max_ambiguity}"
        )
    rng = np.random.default_rng(seed)
    items = np.arange(n_items)
    primary = items % n_concepts
    amb = 1 + (items // n_concepts) % max_ambiguity
    members = [items[primary == c] for c in range(n_concepts)]
    pos = []
    concepts = []
    for i in items:
        others = np.setdiff1d(np.arange(n_concepts), [primary[i]])
        cs = np.concatenate([[primary[i]], rng.choice(others, size=amb[i] - 1, replace=False)])
        concepts.append(cs.tolist())
        p = np.concatenate([members[c] for c in cs])
        pos.append(p[p != i])
    indptr, indices = _csr(pos)
    return PairData(
        names=[f"item{i:04d}" for i in items],
        ambiguity=amb.astype(np.int64),
        indptr=indptr,
        indices=indices,
        source="synthetic",
        info={"n_items": int(n_items), "n_concepts": int(n_concepts), "max_ambiguity": int(max_ambiguity), "concepts": concepts},
    )


def wordnet_data(n_items: int = 256, *, max_senses: int = 4, seed: int = 0, wordnet=None) -> PairData:
    """Real pair data from WordNet 3.0 nouns (Miller 1995).

    Items are single-word lowercase nouns with 1..``max_senses`` noun senses (ambiguity = number
    of noun senses). j is a positive of i when they share a synset (synonyms) or one of i's
    synsets and one of j's share a direct hypernym (siblings). Items are drawn hypernym by
    hypernym (at least two children each, so everyone has a positive), balanced over ambiguity,
    deterministic given ``seed``.

    Parameters
    ----------
    n_items : int
        Number of items N (split equally over the ambiguity groups).
    max_senses : int, keyword-only
        Largest number of noun senses kept (groups 1..max_senses).
    seed : int, keyword-only
    wordnet : nltk WordNetCorpusReader, optional
        Defaults to :func:`normscope.lab.wordnet_data.load_wordnet`.

    Returns
    -------
    PairData

    Raises
    ------
    DataError
        WordNet cannot be found (see :func:`normscope.lab.wordnet_data.load_wordnet`).
    InputError
        WordNet has too few suitable nouns for ``n_items``.
    """
    wn = wordnet if wordnet is not None else load_wordnet()
    rng = np.random.default_rng(seed)
    per_group = n_items // max_senses
    if per_group < 2:
        raise InputError(f"n_items must be >= 2 * max_senses, got {n_items}")
    nouns = _Nouns(wn, max_senses)
    chosen = _draw_nouns(nouns, rng, per_group, max_senses)
    pos = _positives([nouns.info(w) for w in chosen])
    indptr, indices = _csr(pos)
    amb = np.array([nouns.n_senses(w) for w in chosen], dtype=np.int64)
    return PairData(
        names=chosen,
        ambiguity=amb,
        indptr=indptr,
        indices=indices,
        source="wordnet",
        info={"n_items": len(chosen), "max_senses": int(max_senses), "mean_positives": float(np.mean(np.diff(indptr)))},
    )


class _Nouns:
    """WordNet nouns as the lab reads them: synsets and direct hypernyms of a word (its own lemma only, no
    morphy variants), its number of noun senses, whether it is a simple lowercase word."""

    def __init__(self, wn, max_senses: int) -> None:
        self.wn, self.max_senses = wn, max_senses
        self.cache: dict[str, tuple[frozenset, frozenset, int]] = {}
        # sense counts from the index (no synset parsing): nltk's lemma -> pos -> offsets map
        self.offsets = getattr(wn, "_lemma_pos_offset_map", None)

    def info(self, w: str) -> tuple[frozenset, frozenset, int]:
        if w not in self.cache:
            ss = [x for x in self.wn.synsets(w, pos="n") if w in {m.lower() for m in x.lemma_names()}]
            hyp = frozenset(h.name() for s in ss for h in s.hypernyms() + s.instance_hypernyms())
            self.cache[w] = (frozenset(s.name() for s in ss), hyp, len(ss))
        return self.cache[w]

    def n_senses(self, w: str) -> int:
        if self.offsets is not None:
            return len(self.offsets.get(w, {}).get("n", ()))
        return self.info(w)[2]

    @staticmethod
    def ok(w: str) -> bool:
        return w.isalpha() and w.islower() and len(w) >= 3

    def usable(self, w: str) -> bool:
        return self.ok(w) and 1 <= self.n_senses(w) <= self.max_senses

    def siblings(self, w: str, rng) -> list[str] | None:
        """The usable co-hyponyms of one of ``w``'s senses (drawn with ``rng``), None when it has no hypernym."""
        senses = sorted(self.info(w)[0])
        if not senses:
            return None
        sense = self.wn.synset(senses[int(rng.integers(len(senses)))])
        hyps = sense.hypernyms() + sense.instance_hypernyms()
        if not hyps:
            return None
        sibs = sorted({lem.name() for child in hyps[0].hyponyms() + hyps[0].instance_hyponyms()
                       for lem in child.lemmas()} - {w})
        return [x for x in sibs if self.usable(x)]


def _draw_nouns(nouns: _Nouns, rng, per_group: int, max_senses: int) -> list[str]:
    """Draw ``per_group`` nouns per ambiguity group, hypernym by hypernym (each with a sibling drawn too)."""
    groups = {a: [] for a in range(1, max_senses + 1)}
    for w in sorted(nouns.wn.all_lemma_names(pos="n")):
        if nouns.ok(w) and 1 <= nouns.n_senses(w) <= max_senses:
            groups[nouns.n_senses(w)].append(w)
    queues = {a: [g[k] for k in rng.permutation(len(g))] for a, g in groups.items()}
    chosen: list[str] = []
    counts = {a: 0 for a in range(1, max_senses + 1)}
    taken: set[str] = set()
    target = per_group * max_senses
    tries = 0
    while len(chosen) < target and tries < 200 * target:
        tries += 1
        open_groups = [a for a in counts if counts[a] < per_group and queues[a]]
        if not open_groups:
            break
        a = open_groups[int(rng.integers(len(open_groups)))]
        w = queues[a].pop()
        if w in taken:
            continue
        sibs = nouns.siblings(w, rng)
        if not sibs:
            continue
        add = _with_siblings(w, a, sibs, nouns, rng, counts, taken, per_group, target - len(chosen))
        chosen += add
        taken.update(add)
    if len(chosen) < target:
        raise InputError(f"WordNet gave only {len(chosen)} suitable nouns, need {target}")
    return chosen


def _with_siblings(w, a, sibs, nouns: _Nouns, rng, counts, taken, per_group: int, room: int) -> list[str]:
    """``w`` and up to 3 of its siblings not yet taken (counted in ``counts``); ``[]`` when ``w`` would come
    alone while none of its siblings is taken (an item needs a positive)."""
    has_chosen = any(x in taken for x in sibs)
    new = [x for x in sibs if x not in taken and counts[nouns.n_senses(x)] < per_group]
    new = [new[k] for k in rng.permutation(len(new))[:3]]
    add = [w]
    counts[a] += 1
    for x in new:
        if counts[nouns.n_senses(x)] < per_group and len(add) < room:
            counts[nouns.n_senses(x)] += 1
            add.append(x)
    if len(add) == 1 and not has_chosen:
        counts[a] -= 1
        return []
    return add


def _positives(infos: list[tuple[frozenset, frozenset, int]]) -> list[np.ndarray]:
    """Per item, the items that share a synset (synonyms) or a direct hypernym (siblings) with it."""
    by_key: dict[tuple, set] = {}
    keys = [[("s", x) for x in s] + [("h", x) for x in h] for s, h, _ in infos]
    for i, ks in enumerate(keys):
        for key in ks:
            by_key.setdefault(key, set()).add(i)
    pos = []
    for i, ks in enumerate(keys):
        p = set().union(*(by_key[k] for k in ks)) - {i}
        pos.append(np.array(sorted(p), dtype=np.int64))
    if any(len(p) == 0 for p in pos):  # pragma: no cover - construction guarantees a sibling
        raise InputError("internal: a WordNet item has no positive")
    return pos
