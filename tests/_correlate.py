"""``run_correlate`` called with the old keyword names, each mapped onto the request (tests only)."""

from __future__ import annotations

from normscope.requests import Embedding, Resampling
from normscope.requests.correlate import CorrelateRequest
from normscope.signals import run_correlate

_DATA = ("items", "ids", "strata", "covariates", "encoder", "progress")
_EMBEDDING = ("model", "device", "precision", "batch_size", "junk")
_RESAMPLING = ("n_boot", "n_perm", "seed")


def correlate(signal, **kw):
    """``run_correlate(CorrelateRequest(signal, ...), items=..., encoder=...)`` from flat keywords."""
    data = {k: kw.pop(k) for k in _DATA if k in kw}
    emb = Embedding(**{k: kw.pop(k) for k in _EMBEDDING if k in kw})
    rs = Resampling(**{**{"n_boot": 2000, "n_perm": 2000}, **{k: kw.pop(k) for k in _RESAMPLING if k in kw}})
    if "controls" in kw:
        kw["controls"] = tuple(kw["controls"])
    for k in ("subtlex", "wordnet", "images"):
        if kw.get(k) is not None:
            kw[k] = str(kw[k])
    return run_correlate(CorrelateRequest(signal=signal, embedding=emb, resampling=rs, **kw), **data)
