"""Extensions that serve users rather than claims: tools built on the core, which the core does not import.

- :mod:`~normscope.extensions.ray_engine` (with :mod:`~.corpus`, :mod:`~.norm_stats` and the entry points of
  :mod:`~.engines`): the Ray engine, ``engine='ray'`` of :mod:`normscope.engine` (``--engine ray``);
- :mod:`~normscope.extensions.ann`: norm-aware approximate indexes (faiss HNSW / IVF over folded vectors;
  ``normscope index``);
- :mod:`~normscope.extensions.calibrator` and :mod:`~normscope.extensions.calibrate`: the saved calibrator of "the
  top-1 is relevant" and the stage that fits and evaluates it (``normscope calibrate``);
- :mod:`~normscope.extensions.integrations`: sentence-transformers similarities and the calibrator applied to
  ``semantic_search`` and ``index search`` results;
- :mod:`~normscope.extensions.vector_health`: checks of stored vectors and of two sets against each other
  (``normscope inspect``).

No scorecard row rests on them. The layering is an import-linter contract (``pyproject.toml``): no core module
imports this package; the CLI imports both. Importing this package registers the Ray engine with
:func:`normscope.engine.register_engine` and imports nothing heavy: the names below load their module when first
used.
"""

from __future__ import annotations

import importlib

from normscope.engine import register_engine
from normscope.extensions.engines import RayBackend

register_engine("ray", RayBackend())

#: Public name -> the submodule that defines it (imported on first use: faiss, torch, scikit-learn stay unloaded).
_LAZY = {
    "norm_aware_similarity": "integrations",
    "norm_aware_similarity_pairwise": "integrations",
    "calibrate_semantic_search": "integrations",
    "calibrate_index_search": "integrations",
    "Calibrator": "calibrator",
    "load_calibrator": "calibrator",
    "run_calibrate": "calibrate",
    "AnnParams": "ann",
    "build_ann_index": "ann",
    "FoldedAnnIndex": "ann",
    "vector_health": "vector_health",
    "compare_sets": "vector_health",
    "inspect_files": "vector_health",
}

__all__ = ["RayBackend", *_LAZY]


def __getattr__(name: str):
    if name in _LAZY:
        value = getattr(importlib.import_module(f"normscope.extensions.{_LAZY[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'normscope.extensions' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
