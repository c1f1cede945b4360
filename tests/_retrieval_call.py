"""``run_retrieval`` called with the old keyword names, each mapped onto the request (tests only)."""

from __future__ import annotations

from normscope.requests import Embedding, Resampling
from normscope.requests.retrieval import RetrievalRequest
from normscope.retrieval import run_retrieval as _run

_EMBEDDING = ("model", "device", "precision", "batch_size", "junk")


def run_retrieval(dataset, *, encoder=None, progress=False, seed=0, n_boot=1000, n_permutations=10000, params=None,
                  grids=None, scorers=None, **kw):
    """``run_retrieval(RetrievalRequest(dataset, ...), encoder=...)`` from flat keywords."""
    emb = Embedding(**{k: kw.pop(k) for k in _EMBEDDING if k in kw})
    req = RetrievalRequest(dataset=str(dataset), embedding=emb,
                           resampling=Resampling(n_boot=n_boot, n_perm=n_permutations, seed=seed),
                           params=tuple((params or {}).items()),
                           grids=tuple((k, tuple(v)) for k, v in (grids or {}).items()),
                           **({"scorers": tuple(scorers)} if scorers is not None else {}), **kw)
    return _run(req, encoder=encoder, progress=progress)
