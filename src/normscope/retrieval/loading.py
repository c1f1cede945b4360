"""The inputs of ``run_retrieval`` (and of ``calibrate``): load a BEIR dataset's splits, subsample, find duplicate
documents, embed the corpus and the queries, and the phase lines of a long run.

Split from :mod:`normscope.retrieval.pipeline` (issue 40), which re-exports every name used elsewhere.
"""

from __future__ import annotations

import dataclasses
import time
import warnings
from collections.abc import Mapping, Sequence

import numpy as np

from normscope.data.beir import BeirDataset, SplitQueries, load_dataset_any
from normscope.engine import embed_texts
from normscope.errors import DataError, InputError
from normscope.requests.retrieval import RetrievalRequest
from normscope.table import require_raw_norms

__all__ = ["N_FOLDS"]

N_FOLDS = 5


class _Phases:
    """Start and end lines with elapsed time (so a redirected log is never silent), and the timings."""

    def __init__(self, show: bool, name: str = "retrieval"):
        self.timings: dict[str, float] = {}
        self.name = name
        self.console = None
        if show:
            from rich.console import Console

            self.console = Console(stderr=True, highlight=False, soft_wrap=True, markup=False)

    def __call__(self, name: str, detail: str = "", *, announce: bool = True):
        """A phase; ``announce=False``: no start line (a phase that checks input: a bad input is then its
        one error line, not a start line followed by the error)."""
        import contextlib

        @contextlib.contextmanager
        def phase():
            if self.console is not None and announce:
                self.console.print(f"{self.name}: {name}{f' ({detail})' if detail else ''} ...")
            t0 = time.perf_counter()
            yield
            dt = time.perf_counter() - t0
            self.timings[name] = round(dt, 3)
            if self.console is not None:
                self.console.print(f"{self.name}: {name} done in {dt:.1f} s")

        return phase()


def _sorted_split(sq: SplitQueries) -> SplitQueries:
    """Queries in id order: every later step (folds, subsamples, bootstraps) then ignores the input order."""
    order = sorted(range(len(sq.query_ids)), key=sq.query_ids.__getitem__)
    ids = [sq.query_ids[i] for i in order]
    return dataclasses.replace(sq, query_ids=ids, texts=[sq.texts[i] for i in order], qrels={q: sq.qrels[q] for q in ids})


def _subsample_queries(sq: SplitQueries, n: int | None, rng: np.random.Generator) -> SplitQueries:
    if n is None or n >= len(sq.query_ids):
        return sq
    keep = np.sort(rng.choice(len(sq.query_ids), size=n, replace=False))
    ids = [sq.query_ids[i] for i in keep]
    counts = dict(sq.counts, subsampled_out=len(sq.query_ids) - n, evaluated=n)
    return SplitQueries(sq.split, ids, [sq.texts[i] for i in keep], {q: sq.qrels[q] for q in ids}, counts)


def _subsample_docs(ds: BeirDataset, splits: Sequence[SplitQueries], n: int | None, rng) -> tuple[list[int], dict]:
    """Positions of the kept documents (in id order) and the subsampling record."""
    by_id = sorted(range(len(ds.doc_ids)), key=ds.doc_ids.__getitem__)
    if n is None or n >= len(ds.doc_ids):
        return by_id, {"n_docs": len(ds.doc_ids), "subsampled": False}
    pos = {d: i for i, d in enumerate(ds.doc_ids)}
    rel = {pos[d] for sq in splits for q in sq.qrels.values() for d, v in q.items() if v >= 1 and d in pos}
    rest = [i for i in by_id if i not in rel]
    n_fill = max(0, n - len(rel))
    fill = [rest[j] for j in rng.choice(len(rest), size=min(n_fill, len(rest)), replace=False)] if n_fill else []
    keep = sorted(rel | set(fill), key=ds.doc_ids.__getitem__)
    return keep, {"n_docs": len(keep), "subsampled": True, "n_relevant_kept": len(rel),
                  "rule": "every document relevant to a kept query, plus a seeded random sample of the others up to max_docs"}


def _duplicate_docs(ds: BeirDataset, keep: list[int], splits: list, dedupe: bool) -> tuple[list[int], list, dict]:
    """Exact duplicate documents (same embedded text) among ``keep``: reported, and collapsed with ``dedupe``.

    Copies of one text get the same score under every scorer, so the tie rule (:data:`TIE_RULE`) alone
    orders them, and they fill ranks: an unjudged copy with a larger id ranks above a judged one and can
    push it below rank k. With ``dedupe`` the copies of a text are one document, the copy with the
    smallest id, whose judgements are the copies' (the highest grade per query).

    Returns
    -------
    keep : list of int
        Kept document positions (copies removed with ``dedupe``).
    splits : list of SplitQueries or None
        The same splits, their qrels pointing at the kept copy with ``dedupe``.
    info : dict
        ``count`` (documents that copy another's text), ``groups`` (texts with copies), ``judged_copies``
        (copies judged in an evaluated split), ``collapsed`` (bool), ``kept_ids`` (first 20 groups).
    """
    groups: dict[str, list[int]] = {}
    for i in keep:
        groups.setdefault(ds.doc_texts[i], []).append(i)
    multi = [sorted(g, key=ds.doc_ids.__getitem__) for g in groups.values() if len(g) > 1]
    judged = {d for sq in splits if sq is not None for q in sq.qrels.values() for d in q}
    copies = [i for g in multi for i in g]
    info = {"count": sum(len(g) - 1 for g in multi), "groups": len(multi),
            "judged_copies": sum(ds.doc_ids[i] in judged for i in copies), "collapsed": bool(dedupe and multi),
            "kept_ids": sorted(ds.doc_ids[g[0]] for g in multi)[:20]}
    if not multi or not dedupe:
        return keep, splits, info
    rep = {ds.doc_ids[i]: ds.doc_ids[g[0]] for g in multi for i in g[1:]}
    drop = {i for g in multi for i in g[1:]}
    out = []
    for sq in splits:
        if sq is None:
            out.append(None)
            continue
        qrels = {}
        for q, docs in sq.qrels.items():
            merged: dict[str, int] = {}
            for d, v in docs.items():
                r = rep.get(d, d)
                merged[r] = max(v, merged.get(r, v))
            qrels[q] = merged
        out.append(dataclasses.replace(sq, qrels=qrels))
    return [i for i in keep if i not in drop], out, info


def _resolve_fit_split(ds: BeirDataset, fit_split: str | None, split: str, *, stacklevel: int = 3) -> tuple[str, str]:
    """(mode, split name): mode 'split' fits on a named split, 'cv' cross-validates on the eval split.

    ``stacklevel`` of the fallback warnings: 3 names the caller's caller."""
    if fit_split is not None and fit_split == split:
        raise InputError(f"fit split '{fit_split}' equals the evaluation split: parameters are never fitted on test queries")
    if fit_split in (None, "cv"):
        return "cv", split
    if fit_split in ds.qrels:
        return "split", fit_split
    if fit_split == "train":
        for alt in ("dev", "validation"):
            if alt in ds.qrels and alt != split:
                warnings.warn(f"no train split: fitting on '{alt}'", UserWarning, stacklevel=stacklevel)
                return "split", alt
        warnings.warn(f"no train or dev split: the scorers' parameters (alpha, beta) are fitted by {N_FOLDS}-fold "
                      f"cross-validation on '{split}'", UserWarning,
                      stacklevel=stacklevel)
        return "cv", split
    raise DataError(f"dataset '{ds.name}' has no qrels split '{fit_split}' (available: {', '.join(ds.splits)})")


def _embed(encoder, texts, ids, *, junk, what, batch_size, progress, engine="local", address=None, workers=None):
    return embed_texts(texts, ids, encoder=encoder, junk=junk, what=what, batch_size=batch_size, progress=progress,
                       engine=engine, address=address, workers=workers)


def _drop_junk(sq: SplitQueries, table) -> SplitQueries:
    if not table.junk:
        return dataclasses.replace(sq, counts=dict(sq.counts, excluded_junk=0))
    bad = set(table.junk.ids)
    ids = [q for q in sq.query_ids if q not in bad]
    if not ids:
        raise DataError(f"every evaluable query of '{sq.split}' is junk")
    texts = dict(zip(sq.query_ids, sq.texts))
    counts = dict(sq.counts, excluded_junk=len(bad), evaluated=len(ids))
    return SplitQueries(sq.split, ids, [texts[q] for q in ids], {q: sq.qrels[q] for q in ids}, counts)


def _junk_entry(tables: Mapping[str, object]) -> dict:
    ids, reasons, by = [], {}, {}
    for split, t in tables.items():
        d = t.junk.to_dict()
        by[split] = d["count"]
        ids += [i for i in d["ids"] if i not in ids]
        for r, c in d["reasons"].items():
            reasons[r] = reasons.get(r, 0) + c
    return {"count": len(ids), "ids": ids, "reasons": reasons, "by_split": by}


@dataclasses.dataclass
class _Splits:
    """The loaded dataset and what of it is evaluated: query splits (in id order, subsampled, junk dropped
    once embedded), kept document positions and the records of their subsampling and duplicates."""

    ds: BeirDataset
    mode: str  # "split": parameters and maps fitted on the split fit_name; "cv": cross-validated on ev
    fit_name: str
    ev: SplitQueries
    fit: SplitQueries | None
    keep: list[int]
    doc_info: dict
    dup_docs: dict

    @property
    def splits(self) -> list[SplitQueries]:
        """The evaluated split, then the fitting split when there is one."""
        return [self.ev] + ([self.fit] if self.fit else [])


@dataclasses.dataclass
class _Vectors:
    """The embedded corpus and queries: tables, document vectors ``D`` (n, d) float32 with float64 norms,
    evaluation (and fitting) query vectors in their split's id order, and self-hit counts per split."""

    dtab: object
    qtabs: dict
    doc_ids: list[str]
    D: np.ndarray
    doc_norms: np.ndarray
    Qev: np.ndarray
    Qfit: np.ndarray | None
    qev_norms: np.ndarray
    identical: dict


def _load_splits(r: RetrievalRequest, rng: np.random.Generator, ph: _Phases) -> _Splits:
    """Load the dataset, resolve the fitting mode, subsample queries and documents (in this order, from ``rng``)
    and find duplicate documents (collapsed with ``dedupe_docs``; a warning either way)."""
    with ph("loading the dataset", str(r.dataset), announce=False):
        ds = load_dataset_any(r.dataset, grade_scale=int(r.grade_scale))
        mode, fit_name = _resolve_fit_split(ds, r.fit_split, r.split, stacklevel=4)
        ev = _subsample_queries(_sorted_split(ds.split_queries(r.split)), r.max_queries, rng)
        fit = _subsample_queries(_sorted_split(ds.split_queries(fit_name)), r.max_queries, rng) if mode == "split" else None
        keep, doc_info = _subsample_docs(ds, [ev] + ([fit] if fit else []), r.max_docs, rng)
        keep, (ev, fit), dup_docs = _duplicate_docs(ds, keep, [ev, fit], r.dedupe_docs)
    if dup_docs["count"]:
        how = ("collapsed (--dedupe-docs): each text is one document, the copy with the smallest id, judged with the "
               "highest grade of its copies" if dup_docs["collapsed"] else
               "kept: copies score the same, the tie rule (score, then document id, descending) alone orders them and "
               "they fill ranks, so an unjudged copy can push a judged one down or out of the top k; --dedupe-docs "
               "counts each text once")
        warnings.warn(f"{dup_docs['count']} of the corpus documents copy another document's text ({dup_docs['groups']} "
                      f"texts with copies, {dup_docs['judged_copies']} of their documents judged): {how}",
                      UserWarning, stacklevel=3)
    return _Splits(ds, mode, fit_name, ev, fit, keep, doc_info, dup_docs)


def _embed_splits(sp: _Splits, encoder, r: RetrievalRequest, ph: _Phases, progress: bool) -> tuple[_Splits, _Vectors]:
    """Embed the kept documents (on the request's engine) and each split's queries (here), drop junk queries,
    check the norms are raw, count judged junk documents and queries that share a document's id (a warning)."""
    e = r.embedding
    ds, keep = sp.ds, sp.keep
    with ph("embedding the corpus", f"{len(keep):,} documents"):
        dtab = _embed(encoder, [ds.doc_texts[i] for i in keep], [ds.doc_ids[i] for i in keep], junk=e.junk,
                      what="documents", batch_size=e.batch_size, progress=progress, engine=r.engine, address=r.address,
                      workers=r.workers)
    qtabs = {}
    for sq in sp.splits:
        with ph(f"embedding the '{sq.split}' queries", f"{len(sq.query_ids):,} queries"):
            qtabs[sq.split] = _embed(encoder, sq.texts, sq.query_ids, junk=e.junk, what=f"'{sq.split}' queries",
                                     batch_size=e.batch_size, progress=progress)
    ev = _drop_junk(sp.ev, qtabs[sp.ev.split])
    fit = _drop_junk(sp.fit, qtabs[sp.fit.split]) if sp.fit else None
    sp = dataclasses.replace(sp, ev=ev, fit=fit)
    doc_ids, D = list(dtab.ids), dtab.vectors
    doc_norms = np.linalg.norm(D.astype(np.float64), axis=1)
    require_raw_norms(doc_norms, "norm-aware retrieval")
    qpos = {s: {q: i for i, q in enumerate(t.ids)} for s, t in qtabs.items()}
    Qev = qtabs[ev.split].vectors[[qpos[ev.split][q] for q in ev.query_ids]]
    Qfit = qtabs[fit.split].vectors[[qpos[fit.split][q] for q in fit.query_ids]] if fit else None
    qev_norms = np.linalg.norm(Qev.astype(np.float64), axis=1)
    docset, junk_docs = set(doc_ids), set(dtab.junk.ids)
    for sq in sp.splits:
        sq.counts["qrels_junk_docs"] = sum(1 for q in sq.qrels.values() for d in q if d in junk_docs)
    identical = {sq.split: sum(q in docset for q in sq.query_ids) for sq in sp.splits}
    if any(identical.values()):
        what = "left out of their results (BEIR's default)" if r.ignore_identical_ids else "kept (--keep-identical-ids)"
        warnings.warn(f"{identical[ev.split]} of {len(ev.query_ids)} '{ev.split}' queries have the id of a corpus document "
                      f"(as in ArguAna or Quora); these self-hits are {what}", UserWarning, stacklevel=3)
    return sp, _Vectors(dtab, qtabs, doc_ids, D, doc_norms, Qev, Qfit, qev_norms, identical)


