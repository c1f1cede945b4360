"""Atomic file writing (temp file in the same directory + ``os.replace``)."""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

from normscope.validate import check_output_path

__all__ = ["atomic_path", "write_json", "to_jsonable", "dumps"]


@contextlib.contextmanager
def atomic_path(path: str | Path) -> Iterator[str]:
    """Yield a temp path beside ``path``; on success rename it over ``path``.

    On any exception the temp file is removed and ``path`` is untouched, so a
    crash or SIGKILL never leaves a half-written file under the final name.
    """
    path = check_output_path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        yield tmp
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def to_jsonable(obj):
    """``obj`` with only strict-JSON values: the one cleaner every ``--json`` goes through.

    NaN and +-inf become ``None`` (JSON ``null``: ``NaN`` tokens are rejected by ``JSON.parse``,
    jq and most non-Python readers); numpy scalars and arrays become Python numbers and lists;
    paths become strings; dataclass results with ``to_dict()`` are converted; tuples become lists.
    """
    import math

    import numpy as np

    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return [to_jsonable(v) for v in obj.tolist()]
    if isinstance(obj, (bool, np.bool_)):
        return bool(obj)
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        f = float(obj)
        return f if math.isfinite(f) else None
    if obj is None or isinstance(obj, str):
        return obj
    if isinstance(obj, Path):
        return str(obj)
    if hasattr(obj, "to_dict"):
        return to_jsonable(obj.to_dict())
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")


def dumps(obj, **kwargs) -> str:
    """Strict JSON text of ``obj`` (:func:`to_jsonable`, then ``allow_nan=False``)."""
    return json.dumps(to_jsonable(obj), allow_nan=False, **kwargs)


def write_json(obj, path: str | Path) -> Path:
    """Write ``obj`` as indented strict JSON atomically (NaN/inf written as ``null``, see :func:`to_jsonable`)."""
    text = dumps(obj, indent=2, sort_keys=False) + "\n"
    with atomic_path(path) as tmp:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
    return Path(path)
