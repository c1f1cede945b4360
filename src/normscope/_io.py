"""Atomic file writing (temp file in the same directory + ``os.replace``)."""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

from normscope.errors import InputError

__all__ = ["atomic_path", "write_json", "check_output_path"]


def check_output_path(path: str | Path) -> Path:
    """Validate that ``path``'s directory exists; raise :class:`InputError` otherwise."""
    path = Path(path)
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise InputError(f"output directory does not exist: {parent}")
    if path.is_dir():
        raise InputError(f"output path is a directory: {path}")
    return path


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


def write_json(obj, path: str | Path) -> Path:
    """Write ``obj`` as indented JSON atomically (NaN written as ``NaN``)."""
    with atomic_path(path) as tmp:
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(obj, f, indent=2, sort_keys=False, default=_json_default)
            f.write("\n")
    return Path(path)


def _json_default(o):
    import numpy as np

    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, Path):
        return str(o)
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")
