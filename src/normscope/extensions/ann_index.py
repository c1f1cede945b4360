"""The norm-aware faiss index itself: :class:`AnnParams` (build and search settings) and :class:`FoldedAnnIndex`
(search, save, load), with the output-folder check :func:`check_index_out`.

Built by :func:`normscope.extensions.ann.build_ann_index` and compared with exact search by
:func:`normscope.extensions.ann.compare_with_exact`; every name here is also importable from
:mod:`normscope.extensions.ann` (see its docstring for the kinds, knobs and references).
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np

from normscope._format import noun, plural
from normscope._io import OutsideFolder, inside_folder, open_inside, read_inside, write_json
from normscope.engine.shards import check_out_dir, replace_dir
from normscope.errors import InputError
from normscope.inputs import JUNK_ZERO, Junk, zero_vector_rows
from normscope.scoring import PARAM_NAMES, fold_queries, pair_dot
from normscope.retrieval.search import _check_ids, order_run
from normscope.validate import write_failure

__all__ = ["ANN_KINDS", "AnnParams", "FoldedAnnIndex", "check_index_out"]

ANN_KINDS = ("hnsw", "ivf", "flat")
_FILES = ("index.faiss", "ids.parquet", "meta.json")


@dataclass(frozen=True)
class AnnParams:
    """Build and default search settings of a :class:`FoldedAnnIndex`.

    Attributes
    ----------
    kind : {'hnsw', 'ivf', 'flat'}
    m : int
        HNSW neighbours per node (faiss ``M``); memory ``~ 8 m`` bytes a vector on top of the vector.
    ef_construction : int
        HNSW candidate list while inserting.
    ef_search : int
        HNSW candidate list while searching (>= k); larger is slower and more exact.
    nlist : int or None
        IVF lists (k-means centroids); default ``round(sqrt(n))`` clipped to ``[1, n // 39]``.
    nprobe : int or None
        IVF lists scanned per query (<= nlist; default ``min(16, nlist)``); ``nprobe = nlist`` is exact.
    train_size : int or None
        IVF k-means training vectors, a seeded sample; default ``min(n, 64 nlist)``.
    seed : int
        Seed of the training sample and of faiss k-means.
    """

    kind: str = "hnsw"
    m: int | None = 32
    ef_construction: int | None = 200
    ef_search: int | None = 128
    nlist: int | None = None
    nprobe: int | None = None
    train_size: int | None = None
    seed: int = 0

    def resolved(self, n: int) -> "AnnParams":
        """These settings validated for ``n`` documents, defaults filled in.

        Raises
        ------
        InputError
            Unknown kind; a non-positive setting; ``nlist`` above ``n``; ``nprobe`` above ``nlist``;
            ``train_size`` below ``nlist`` or above ``n``. Settings of other kinds become None.
        """
        if self.kind not in ANN_KINDS:
            raise InputError(f"unknown index kind '{self.kind}' (choose from {', '.join(ANN_KINDS)})")
        knobs = {"hnsw": ("m", "ef_construction", "ef_search"), "ivf": ("nprobe",), "flat": ()}[self.kind]
        for name in knobs:
            if name == "nprobe" and self.nprobe is None:
                continue
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                raise InputError(f"{name} must be an integer >= 1, got {v!r}")
        unused = {name: None for name in ("m", "ef_construction", "ef_search", "nprobe", "nlist", "train_size")
                  if name not in knobs}
        if self.kind != "ivf":
            return replace(self, **unused)
        nlist = self.nlist if self.nlist is not None else min(max(1, round(math.sqrt(n))), max(1, n // 39))
        if nlist < 1 or nlist > n:
            raise InputError(f"nlist must lie in [1, {n}] (the number of documents), got {nlist}")
        train = self.train_size if self.train_size is not None else min(n, 64 * nlist)
        if not nlist <= train <= n:
            raise InputError(f"train_size must lie in [nlist={nlist}, n={n}], got {train}")
        nprobe = min(16, nlist) if self.nprobe is None else self.nprobe
        if nprobe > nlist:
            raise InputError(f"nprobe={nprobe} exceeds nlist={nlist}")
        unused.pop("nlist"), unused.pop("train_size")
        return replace(self, nlist=int(nlist), train_size=int(train), nprobe=int(nprobe), **unused)


_SLACK = 8  # candidates beyond k, so ties at rank k are ordered by the tie rule among them


class FoldedAnnIndex:
    """An approximate (HNSW, IVF) or exact (flat) faiss index over folded document vectors.

    Build one with :func:`build_ann_index`, or :meth:`load` a saved one. :meth:`search` returns
    runs in the format of :meth:`normscope.retrieval.search.FoldedIndex.search`: candidates found by
    faiss, scored by :func:`~normscope.scoring.pair_dot` of the folded float32 vectors
    (reconstructed from the index) and ordered by :data:`~normscope.retrieval.search.TIE_RULE`.

    Attributes
    ----------
    index : faiss.Index
        Inner-product index holding the folded float32 vectors.
    doc_ids : list of str
    scorer : str
    param : float or None
    params : AnnParams
    fingerprint : dict or None
        The model fingerprint of the vectors, when known.
    """

    def __init__(self, index, doc_ids: Sequence[str], scorer: str, param: float | None, params: AnnParams,
                 fingerprint: dict | None = None):
        self.index = index
        self.doc_ids = _check_ids(doc_ids, int(index.ntotal), "document")
        self.scorer, self.param, self.params, self.fingerprint = scorer, param, params, fingerprint
        self.junk = Junk()  # documents left out as junk (zero) vectors when the index was built
        if params.kind == "ivf":  # reconstruct() of candidates needs the id -> list map (8 bytes a vector)
            import faiss

            faiss.extract_index_ivf(index).make_direct_map()

    @property
    def dim(self) -> int:
        return int(self.index.d)

    def set_search(self, ef_search: int | None = None, nprobe: int | None = None) -> None:
        """Set the search knobs on the faiss index (None: the index's defaults).

        Raises
        ------
        InputError
            ``nprobe`` outside ``[1, nlist]``, ``ef_search < 1``, or a knob of another kind of index.
        """
        import faiss

        kind = self.params.kind
        if ef_search is not None and kind != "hnsw":
            raise InputError(f"--ef-search applies to hnsw indexes; this one is {kind}")
        if nprobe is not None and kind != "ivf":
            raise InputError(f"--nprobe applies to ivf indexes; this one is {kind}")
        if kind == "hnsw":
            ef = int(ef_search or self.params.ef_search)
            if ef < 1:
                raise InputError(f"ef_search must be >= 1, got {ef}")
            faiss.downcast_index(self.index).hnsw.efSearch = ef
        elif kind == "ivf":
            nprobe = int(nprobe or self.params.nprobe)
            if not 1 <= nprobe <= self.params.nlist:
                raise InputError(f"nprobe must lie in [1, nlist={self.params.nlist}], got {nprobe}")
            faiss.downcast_index(self.index).nprobe = nprobe

    def search(self, Q, query_ids: Sequence[str], k: int = 100, *, ef_search: int | None = None,
               nprobe: int | None = None) -> dict[str, dict[str, float]]:
        """Top-``k`` documents of each query (approximate for hnsw/ivf).

        Parameters
        ----------
        Q : array-like of shape (n_queries, d)
            Raw query vectors (folded here).
        query_ids : sequence of str
        k : int
        ef_search, nprobe : int, optional, keyword-only
            Override the index's search settings for this call (not thread-safe).

        Returns
        -------
        dict of {qid: {docid: float score}}
            Inner dicts in rank order (score, then document id, descending); at most ``k`` documents
            (fewer when an IVF search finds fewer candidates).

        Raises
        ------
        InputError
            ``k < 1``, ids of the wrong number or duplicated, bad search settings, queries of another
            dimension than the index's, a junk (zero) query vector (:func:`normscope.inputs.zero_vector_rows`).
        """
        Q = np.asarray(Q)
        if Q.ndim != 2 or Q.shape[1] != self.dim:
            raise InputError(f"the queries have dimension {Q.shape[-1] if Q.ndim else 0}, the index {self.dim}: "
                             "embed them with the index's model")
        zero = zero_vector_rows(np.linalg.norm(Q.astype(np.float64), axis=1))
        if zero.size:
            raise InputError(f"{plural(zero.size, 'query vector')} {noun(zero.size, 'is', 'are')} junk ({JUNK_ZERO}), e.g. query "
                             f"{list(query_ids)[zero[0]]!r}: nothing to rank them by; leave them out")
        Qf = fold_queries(Q, self.scorer)
        query_ids = _check_ids(query_ids, Qf.shape[0], "query")
        if k < 1:
            raise InputError(f"k must be >= 1, got {k}")
        k = min(int(k), len(self.doc_ids))
        _, ids = self.search_folded(Qf, min(len(self.doc_ids), k + _SLACK), ef_search=ef_search, nprobe=nprobe)
        run = {}
        for q, qf, cand in zip(query_ids, Qf, ids):
            cand = cand[cand >= 0]
            scores = pair_dot(self.index.reconstruct_batch(cand), qf[None, :]) if cand.size else []
            run[q] = {self.doc_ids[i]: float(s) for i, s in zip(cand, scores)}
        return {q: dict(list(docs.items())[:k]) for q, docs in order_run(run).items()}

    def search_folded(self, Qf: np.ndarray, k: int, *, ef_search: int | None = None,
                      nprobe: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """faiss's raw ``(scores, positions)`` of already folded queries, each (n_queries, k); -1 pads."""
        self.set_search(ef_search, nprobe)
        return self.index.search(np.ascontiguousarray(Qf, dtype=np.float32), int(k))

    def exact_index(self):
        """A faiss ``IndexFlatIP`` over the same folded vectors (reconstructed from this index)."""
        import faiss

        inner = faiss.downcast_index(self.index)
        if self.params.kind == "ivf":
            inner.make_direct_map()
        flat = faiss.IndexFlatIP(self.dim)
        step = 1 << 16
        for s in range(0, int(self.index.ntotal), step):
            flat.add(inner.reconstruct_n(s, min(step, int(self.index.ntotal) - s)))
        return flat

    # ------------------------------------------------------------------ persistence
    def save(self, path: str | Path, *, shown: str | Path | None = None) -> Path:
        """Write ``index.faiss``, ``ids.parquet`` and ``meta.json`` into the directory ``path`` (atomic).

        Raises
        ------
        OutputError
            A full disk, a file size limit or a read-only place (one line naming ``shown``, default
            ``path``); nothing is left behind.
        """
        import faiss
        import pyarrow as pa
        import pyarrow.parquet as pq

        path = Path(path)
        check_index_out(path)
        tmp = path.parent / f".{path.name}.tmp-{time.time_ns()}"
        tmp.mkdir()
        try:
            # serialised here and written by Python: faiss.write_index only prints a failed close (a full disk,
            # a file size limit) and leaves a truncated file; Python's write raises
            with open(tmp / "index.faiss", "wb") as f:
                f.write(faiss.serialize_index(self.index).tobytes())
            pq.write_table(pa.table({"id": pa.array(self.doc_ids, type=pa.string())}), tmp / "ids.parquet")
            write_json({"kind": self.params.kind, "scorer": self.scorer, "param": self.param,
                        "param_name": PARAM_NAMES[self.scorer], "n": len(self.doc_ids), "dim": self.dim,
                        "params": asdict(self.params), "fingerprint": self.fingerprint}, tmp / "meta.json")
            replace_dir(tmp, path)
        except (OSError, RuntimeError) as exc:  # faiss reports a full disk as a RuntimeError naming errno's text

            raise (write_failure(exc, shown or path, "-o/--out") or exc) from None
        finally:
            import shutil

            shutil.rmtree(tmp, ignore_errors=True)
        return path

    @classmethod
    def load(cls, path: str | Path) -> "FoldedAnnIndex":
        """Read an index written by :meth:`save`.

        Raises
        ------
        InputError
            Not a normscope index directory, or its files disagree.
        """
        import faiss
        import pyarrow.parquet as pq

        path = Path(path)
        if not path.is_dir() or any(not (path / f).is_file() for f in _FILES):
            raise InputError(f"{path} is not a normscope index directory ({', '.join(_FILES)})")
        for f in _FILES:  # never read through a symbolic link out of the index folder (OutsideFolder: one line)
            inside_folder(path / f, path)
        try:
            meta = json.loads(read_inside(path / "meta.json", path, text=True))
            index = faiss.deserialize_index(np.frombuffer(read_inside(path / "index.faiss", path), dtype=np.uint8))
            with open_inside(path / "ids.parquet", path) as f:
                ids = [str(x) for x in pq.read_table(f).column("id").to_pylist()]
        except OutsideFolder:
            raise
        except (OSError, ValueError, KeyError, RuntimeError) as exc:
            raise InputError(f"cannot read the index in {path}: {str(exc).splitlines()[0]}") from None
        if int(index.ntotal) != len(ids) or int(index.d) != int(meta["dim"]):
            raise InputError(f"{path}: index.faiss holds {index.ntotal} x {index.d} vectors but the ids/meta say "
                             f"{len(ids)} x {meta['dim']}")
        return cls(index, ids, meta["scorer"], meta["param"], AnnParams(**meta["params"]), meta.get("fingerprint"))


def check_index_out(path: str | Path) -> Path:
    """Check an index output directory before any work (see :func:`normscope.engine.shards.check_out_dir`).

    Raises
    ------
    InputError
    """
    return check_out_dir(path, "meta.json", "a normscope index")
