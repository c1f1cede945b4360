"""Specificity on real hierarchies, at fixed length: ``normscope correlate --signal specificity --pairs FILE|wordnet``.

A hierarchy is a chain of texts from general to specific: a caption hierarchy (HierarCaps-style CSV with
one row per caption: the hierarchy id, its level, the text, optionally a cluster) or a WordNet hypernym chain
(each noun's first sense and its hypernyms from the synset at depth :data:`WORDNET_CLUSTER_DEPTH` below
``entity`` down, the level being the depth below ``entity``, the text the synset's first lemma). Specific
captions are longer, so the pooled correlation of level and norm measures length as much as specificity
(issue 39: pooled Spearman -0.770 on HierarCaps, partial on length -0.095). Three figures, side by side
(:func:`run_hierarchy`):

- **pooled**: Spearman rho(level, norm) over every text;
- **length-partial**: partial Spearman rho(level, norm | tokens);
- **length-matched** (decides the row): rho(level, norm) **within strata of the same hierarchy and the
  same token count** (:func:`normscope.stats_designs.within_length_spearman`), with disjoint pairs of one
  hierarchy at equal token count beside it: the share in which the more specific text has the larger
  norm (Wilson CI, sign test).

The texts of one hierarchy are not independent (one chain; WordNet chains also share their upper
synsets), so every CI here is a **cluster bootstrap**: whole clusters are resampled with replacement with
all their texts (:func:`normscope.stats_designs.cluster_bootstrap_ci`); resampling texts would treat each
text as an independent draw and give too narrow an interval (a planted dependence in
``tests/test_hierarchy.py`` shows it). A cluster is a hierarchy, or a group of hierarchies that are not
independent of each other: WordNet chains that share their synset at depth :data:`WORDNET_CLUSTER_DEPTH`
(``dog``, ``cat`` and ``car`` all pass through ``whole.n.02``; the 300 most frequent nouns give 291 chains in
38 groups) form one cluster, and a CSV may group its hierarchies by a ``cluster`` column (e.g. the captions of
one image). With fewer than 10 clusters the row is not decided (a bootstrap over so few has no spread).
Resampling single chains counted chains that share their upper half as independent: on whole paths it gave
GloVe 6B-50d [+0.330, +0.432] where groups sharing a depth-3 synset gave [+0.259, +0.484] (docs/signals.md).

**WordNet chains start at that depth.** The synsets above it (``entity``, ``physical entity``,
``abstraction``, ...: 14 words, ``entity`` in every chain) crossed the groups: with whole paths they made 41 %
of the texts, entered the statistic once per chain, and no resampling of groups could vary them. An independent
check found the within-chain rho rested on them (MiniLM-L6: -0.576 on whole paths, +0.039 [-0.228, +0.247]
from depth 3 down; dropping ``entity`` alone gave -0.265). From depth 3 down every text but homonyms (one
lemma, two synsets) belongs to one group; inside a group a shared synset still counts once per chain through
it (the group bootstrap covers that dependence). The permutation p and the equal-length pairs' Wilson interval
count pairs as independent (shown beside, they decide nothing).
"""
from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd

from normscope._format import noun, plural
from normscope.encoders import DEFAULT_MODEL, load_encoder
from normscope.encoders.embed import embed_texts
from normscope.errors import InputError
from normscope.requests import Embedding, Resampling
from normscope.signals.claims import hierarchy_claim
from normscope.signals.labels import MIN_VALID, model_name
from normscope.table import require_raw_norms

__all__ = ["read_hierarchies", "wordnet_chains", "wordnet_hierarchies", "run_hierarchy", "HierarchyResult",
           "HIERARCHY_COLUMNS", "DEFAULT_N_CHAINS", "WORDNET_CLUSTER_DEPTH", "WORDNET_CLUSTER_UNIT"]

#: WordNet chains of ``--pairs wordnet`` by default (the most frequent nouns; 300 nouns give 291 chains from
#: their depth-3 synset down, 1,281 texts).
DEFAULT_N_CHAINS = 2000

#: The columns of a hierarchy CSV (an optional fourth, ``cluster``, groups hierarchies that are not independent).
HIERARCHY_COLUMNS = ("hierarchy", "level", "text")

#: Depth below ``entity.n.01`` of the synset whose chains form one bootstrap cluster (:func:`wordnet_chains`).
#: Depth 3 gives 38 groups for the 291 chains of the 300 most frequent nouns (depth 2: 11, too few to resample;
#: depth 4: 71, with chains that share a depth-3 synset dependent across groups). docs/signals.md has all three.
WORDNET_CLUSTER_DEPTH = 3

#: What the CIs of WordNet chains resample (``ci_unit``).
WORDNET_CLUSTER_UNIT = f"groups of chains sharing their depth-{WORDNET_CLUSTER_DEPTH} synset"


def read_hierarchies(path: str | Path) -> pd.DataFrame:
    """A hierarchy CSV: columns ``hierarchy`` (id), ``level`` (integer, larger = more specific) and ``text``,
    and optionally ``cluster``: hierarchies that are not independent of each other (the captions of one image)
    share a cluster label, and the CIs resample whole clusters (:func:`run_hierarchy`).

    Raises
    ------
    InputError
        A missing file or column, a level that is not an integer, an empty text, a (hierarchy, level)
        given twice, a hierarchy with two cluster labels or an empty one, or fewer than two hierarchies with
        two levels.
    """
    p = Path(path)
    if not p.is_file():
        raise InputError(f"--pairs {p}: no such file")
    try:
        df = pd.read_csv(p, dtype={"hierarchy": str, "text": str, "cluster": str}, keep_default_na=False)
    except (ValueError, UnicodeDecodeError, pd.errors.ParserError) as exc:
        raise InputError(f"--pairs {p}: not a readable CSV ({str(exc).splitlines()[0]})") from None
    missing = [c for c in HIERARCHY_COLUMNS if c not in df.columns]
    if missing:
        raise InputError(f"--pairs {p}: missing {noun(len(missing), 'column')} {', '.join(missing)} (need {', '.join(HIERARCHY_COLUMNS)})")
    lv = pd.to_numeric(df["level"], errors="coerce")
    if lv.isna().any() or (lv != lv.round()).any():
        bad = df["level"][lv.isna() | (lv != lv.round())].iloc[0]
        raise InputError(f"--pairs {p}: level must be an integer, got {bad!r}")
    out = pd.DataFrame({"hierarchy": df["hierarchy"].astype(str).str.strip(), "level": lv.astype(int),
                        "text": df["text"].astype(str).str.strip()})
    if "cluster" in df.columns:
        out["cluster"] = df["cluster"].astype(str).str.strip()
        if (out["cluster"] == "").any():
            raise InputError(f"--pairs {p}: {plural(int((out['cluster'] == '').sum()), 'row')} with an empty cluster")
        two = out.groupby("hierarchy")["cluster"].nunique()
        if (two > 1).any():
            raise InputError(f"--pairs {p}: hierarchy {two[two > 1].index[0]!r} has two cluster labels (a "
                             "hierarchy belongs to one cluster)")
    df = out
    if (df["text"] == "").any() or (df["hierarchy"] == "").any():
        raise InputError(f"--pairs {p}: {plural(int(((df['text'] == '') | (df['hierarchy'] == '')).sum()), 'row')} with an "
                         "empty text or hierarchy id")
    if df.duplicated(["hierarchy", "level"]).any():
        h, lvl = df[df.duplicated(["hierarchy", "level"])].iloc[0][["hierarchy", "level"]]
        raise InputError(f"--pairs {p}: hierarchy {h!r} has level {lvl} twice")
    if (df.groupby("hierarchy")["level"].nunique() >= 2).sum() < 2:
        raise InputError(f"--pairs {p}: need at least two hierarchies with two levels or more")
    return df


def wordnet_chains(words, *, wordnet, root_depth: int = WORDNET_CLUSTER_DEPTH) -> pd.DataFrame:
    """WordNet hypernym chains: for each word, its first noun sense and one hypernym path of that sense, from the
    synset at ``root_depth`` down.

    A synset with several hypernym paths (``london.n.01``: through ``city`` and through ``capital``) gets
    the first of them in the order of their synset names from the root down (NLTK's own order of
    ``hypernym_paths()`` follows Python's string hashing, so it changes from one process to the next).

    Parameters
    ----------
    words : iterable of str
    wordnet : WordNet corpus reader (:func:`normscope.signals.load_wordnet`), keyword-only
    root_depth : int, keyword-only
        Each chain starts at its synset at this depth below ``entity.n.01`` (0: the whole path), and chains
        that share that synset form one ``cluster``. The synsets above it are the same few in every chain
        (``entity`` is in all of them): kept, they would enter the statistic once per chain while no
        resampling of clusters could vary them (see the module docstring). A chain with fewer than two
        synsets from that depth down is left out.

    Returns
    -------
    pandas.DataFrame
        ``hierarchy`` (the word), ``level`` (depth below ``entity.n.01``: ``root_depth`` for the chain's first
        text), ``text`` (the synset's first lemma, underscores as spaces), ``cluster`` (the name of the synset
        at ``root_depth``). Words without a noun sense are left out.

    Raises
    ------
    InputError
        ``root_depth`` is negative.
    """
    if root_depth < 0:
        raise InputError(f"root_depth must be 0 or more, got {root_depth}")
    rows = []
    for w in words:
        syns = wordnet.synsets(w, pos="n")
        if not syns:
            continue
        path = min(syns[0].hypernym_paths(), key=lambda p: [s.name() for s in p])
        if len(path) < root_depth + 2:
            continue
        group = path[root_depth].name()
        for depth, s in enumerate(path[root_depth:], start=root_depth):
            rows.append((w, depth, s.lemma_names()[0].replace("_", " "), group))
    return pd.DataFrame(rows, columns=[*HIERARCHY_COLUMNS, "cluster"])


def wordnet_hierarchies(n: int | None = None, *, wordnet=None) -> tuple[pd.DataFrame, str]:
    """The hypernym chains of the ``n`` most frequent WordNet nouns (:func:`wordnet_chains`) and what they are.

    Parameters
    ----------
    n : int, optional
        Nouns (default :data:`DEFAULT_N_CHAINS`); each gives one chain.
    wordnet : str or Path, optional
        WordNet location (:func:`normscope.signals.load_wordnet`).

    Returns
    -------
    (pandas.DataFrame, str)
        The chains (``hierarchy, level, text, cluster``) and the sentence naming them.

    Raises
    ------
    DataMissing
        WordNet is not found.
    """
    from normscope.lexicons.wordnet import load_wordnet, wordnet_nouns  # deferred: nltk (start-up stays light)

    wn = load_wordnet(wordnet)
    k = DEFAULT_N_CHAINS if n is None else int(n)
    df = wordnet_chains(wordnet_nouns(k, wordnet=wn), wordnet=wn)
    return (df, f"WordNet 3.0 hypernym chains of the {k} most frequent nouns (first sense; its first hypernym path by "
                f"synset names), from their depth-{WORDNET_CLUSTER_DEPTH} synset down: "
                f"{plural(df['hierarchy'].nunique(), 'chain')} of two synsets or more")


@dataclasses.dataclass
class HierarchyResult:
    """The result of :func:`run_hierarchy` (``to_dict()`` is the ``--json`` of ``correlate --signal specificity --pairs``).

    Attributes
    ----------
    signal : str
        ``"specificity"``.
    model, dataset, length_unit : str
    n_hierarchies, n_texts : int
    n_clusters : int
        The clusters the CIs resample (= ``n_hierarchies`` when every hierarchy is its own).
    pooled : dict
        ``spearman``, ``spearman_ci``, ``n`` of rho(level, norm); ``ci_unit``: what the cluster bootstrap
        resamples (``"hierarchies"``, :data:`WORDNET_CLUSTER_UNIT`, or ``"clusters of hierarchies (column
        cluster)"``).
    partial : dict
        ``rho``, ``ci``, ``n`` of rho(level, norm | tokens); ``ci_unit`` as above.
    length_matched : dict
        :func:`normscope.stats_designs.within_length_spearman` (``clusters`` as above, ``ci_unit`` as above)
        with ``pairs`` (:func:`normscope.stats_designs.matched_concordance`).
    mean_tokens_by_level : dict of int -> float
    seed : int
    notes : list of str
    claims : list of dict
    items : pandas.DataFrame
        ``id``, ``hierarchy``, ``level``, ``text``, ``norm``, ``tokens``, ``cluster``.
    """

    signal: str
    model: str
    dataset: str
    length_unit: str
    n_hierarchies: int
    n_texts: int
    n_clusters: int
    pooled: dict
    partial: dict
    length_matched: dict
    mean_tokens_by_level: dict
    seed: int
    notes: list
    items: pd.DataFrame
    claims: list = dataclasses.field(default_factory=list)

    def to_dict(self) -> dict:
        """JSON-ready summary (without the per-text table)."""
        return {"signal": self.signal, "model": self.model, "dataset": self.dataset, "length_unit": self.length_unit,
                "n_hierarchies": self.n_hierarchies, "n_texts": self.n_texts, "n_clusters": self.n_clusters,
                "pooled": self.pooled,
                "partial": self.partial, "length_matched": self.length_matched,
                "mean_tokens_by_level": {str(k): v for k, v in self.mean_tokens_by_level.items()}, "seed": self.seed,
                "notes": list(self.notes), "claims": list(self.claims)}


def _rank_partial(x: np.ndarray, y: np.ndarray, z: np.ndarray | None = None) -> float:
    """Spearman rho of x and y (Pearson of ranks), or with ``z`` the partial Spearman rho: the Pearson of the
    rank residuals after least squares on ``[1, rank(z)]`` (:func:`normscope.stats.partial_spearman`'s definition)."""
    from scipy.stats import rankdata  # deferred: scipy (start-up stays light)

    rx, ry = rankdata(x), rankdata(y)
    design = np.ones((x.size, 1)) if z is None else np.column_stack([np.ones(x.size), rankdata(z)])
    res = np.column_stack([rx, ry]) - design @ np.linalg.lstsq(design, np.column_stack([rx, ry]), rcond=None)[0]
    sx, sy = np.sqrt(res[:, 0] @ res[:, 0]), np.sqrt(res[:, 1] @ res[:, 1])
    return float(res[:, 0] @ res[:, 1] / (sx * sy)) if sx > 1e-12 and sy > 1e-12 else float("nan")


_EMBEDDING = Embedding()
_RESAMPLING = Resampling(n_boot=2000, n_perm=2000)


def run_hierarchy(hierarchies: pd.DataFrame, *, dataset: str, embedding: Embedding = _EMBEDDING,
                  resampling: Resampling = _RESAMPLING, encoder=None, progress: bool = False,
                  cluster_unit: str | None = None) -> HierarchyResult:
    """Norm vs level of specificity within hierarchies: pooled, length-partial and length-matched figures.

    Parameters
    ----------
    hierarchies : pandas.DataFrame
        ``hierarchy``, ``level``, ``text`` and optionally ``cluster`` (:func:`read_hierarchies`,
        :func:`wordnet_chains`): the CIs resample whole clusters, else whole hierarchies.
    dataset : str
        What the hierarchies are (shown with the figures).
    embedding, resampling
        The model and its forward passes; bootstrap resamples, permutations and the seed.
    encoder : Encoder, optional
    progress : bool
    cluster_unit : str, optional
        What a cluster is, for ``ci_unit`` (:data:`WORDNET_CLUSTER_UNIT` for WordNet chains); default
        ``"clusters of hierarchies (column cluster)"`` with a ``cluster`` column, ``"hierarchies"`` without.

    Returns
    -------
    HierarchyResult

    Raises
    ------
    InputError
        Fewer than :data:`MIN_VALID` texts; already-normalised vectors; junk with ``junk="error"``.
    """
    from normscope.stats import correlation, partial_spearman  # deferred: scipy (start-up stays light)
    from normscope.stats_designs import (  # deferred: scipy
        cluster_bootstrap_ci,
        cluster_codes,
        length_matched_within,
        matched_concordance,
        within_length_spearman,
    )

    df = hierarchies.reset_index(drop=True).copy()
    if len(df) < MIN_VALID:
        raise InputError(f"only {plural(len(df), 'hierarchy text')} (need at least {MIN_VALID})")
    df["id"] = [f"{h}\u241f{lv}" for h, lv in zip(df["hierarchy"], df["level"])]
    e, rs = embedding, resampling
    model = e.model or DEFAULT_MODEL
    if encoder is None:
        encoder = load_encoder(model, device=e.device, precision=e.precision, runtime=e.runtime)
    table = embed_texts(df["text"].tolist(), df["id"].tolist(), encoder=encoder, batch_size=e.batch_size,
                        progress=progress, junk=e.junk, what="hierarchy texts")
    norm = table.norms.astype(np.float64)
    require_raw_norms(norm, "correlate --signal specificity --pairs")
    pos = {i: k for k, i in enumerate(table.ids)}
    notes = []
    if "cluster" not in df.columns:
        df["cluster"], ci_unit = df["hierarchy"], "hierarchies"
    else:
        ci_unit = cluster_unit or "clusters of hierarchies (column cluster)"
    df = df[df["id"].isin(pos)].copy()
    df["norm"] = [norm[pos[i]] for i in df["id"]]
    if table.tokens is not None:
        df["tokens"] = [int(table.tokens[pos[i]]) for i in df["id"]]
        unit = "tokens the model saw (after truncation, special tokens included)"
    else:
        df["tokens"] = [len(t.split()) for t in df["text"]]
        unit = "words (the model has no tokenizer)"
    df = df.sort_values("id", kind="stable").reset_index(drop=True)  # id order: independent of the input order
    lv, nm, tk = df["level"].to_numpy(float), df["norm"].to_numpy(), df["tokens"].to_numpy(float)
    strata = df["hierarchy"].to_numpy(dtype=object)
    chains = cluster_codes(df["cluster"].to_numpy(dtype=object), len(df))
    c = correlation(lv, nm, n_boot=0, n_perm=0, seed=rs.seed, min_n=MIN_VALID)
    pooled = {"spearman": c.spearman, "spearman_ci": cluster_bootstrap_ci(
        lambda ii: _rank_partial(lv[ii], nm[ii]), chains, n_boot=rs.n_boot, ci=rs.level, seed=rs.seed), "n": c.n,
        "ci_unit": ci_unit}
    if np.ptp(tk) > 0:
        pr = partial_spearman(lv, nm, tk, n_boot=0, n_perm=0, seed=rs.seed, ci=rs.level, control_names=["tokens"])
        partial = {"rho": pr.rho, "ci": cluster_bootstrap_ci(
            lambda ii: _rank_partial(lv[ii], nm[ii], tk[ii]), chains, n_boot=rs.n_boot, ci=rs.level, seed=rs.seed),
            "n": pr.n, "ci_unit": ci_unit}
    else:
        partial = {"rho": None, "ci": None, "n": len(df)}
        notes.append("every text has the same length: no length-partial figure")
    lm = within_length_spearman(lv, nm, tk, strata=strata, n_boot=rs.n_boot, n_perm=rs.n_perm, ci=rs.level,
                                seed=rs.seed, min_n=MIN_VALID, clusters=chains)
    lm["ci_unit"] = ci_unit
    codes = np.unique(strata.astype(str), return_inverse=True)[1] * (int(tk.max()) + 1) + tk.astype(np.int64)
    lm["pairs"] = matched_concordance(lv, nm, length_matched_within(codes, df["id"].tolist(), seed=rs.seed),
                                      level=rs.level)
    lm["length"] = unit
    by_level = {int(k): float(v) for k, v in df.groupby("level")["tokens"].mean().items()}
    res = HierarchyResult(signal="specificity", model=model_name(encoder, model), dataset=dataset, length_unit=unit,
                          n_hierarchies=int(df["hierarchy"].nunique()), n_texts=len(df),
                          n_clusters=int(df["cluster"].nunique()), pooled=pooled,
                          partial=partial, length_matched=lm, mean_tokens_by_level=by_level, seed=int(rs.seed),
                          notes=notes, items=df[["id", "hierarchy", "level", "text", "norm", "tokens", "cluster"]])
    res.claims = [hierarchy_claim(res.to_dict())]
    return res
