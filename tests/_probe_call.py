"""``run_probe`` called with the old keyword names, each mapped onto the request (tests only)."""

from __future__ import annotations

from normscope.probes import run_probe as _run
from normscope.requests import Resampling
from normscope.requests.probe import ProbeRequest


def request(*, seed=0, n_boot=1000, **kw) -> ProbeRequest:
    """A :class:`ProbeRequest` from flat keywords (``seed``, ``n_boot`` go to its resampling)."""
    return ProbeRequest(resampling=Resampling(n_boot=n_boot, seed=seed), **kw)


def run_probe(encoder, items, pairs, *, ids=None, progress=False, **kw):
    """``run_probe(encoder, items, pairs, ProbeRequest(...), ids=..., progress=...)`` from flat keywords."""
    return _run(encoder, items, pairs, request(**kw), ids=ids, progress=progress)
