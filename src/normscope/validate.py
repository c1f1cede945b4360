"""Validation at the library boundary: output paths, numeric ranges, options.

Every stage entry point checks its arguments here once, before any work, and raises
:class:`~normscope.errors.InputError` with a one-line message naming the offending value (the
CLI turns it into ``error: ...`` and exit code 2). The CLI only parses and calls.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable
from pathlib import Path

from normscope.errors import InputError

__all__ = [
    "check_output_path",
    "check_parquet_out",
    "check_outputs",
    "check_int",
    "check_positive",
    "check_range",
    "check_choice",
]


def check_output_path(path: str | Path, option: str = "output") -> Path:
    """Check before any work that ``path`` can be written: existing, writable directory; not a directory itself.

    Parameters
    ----------
    path : str or Path
    option : str
        How the path was given, named in the error (``"--json"``).

    Returns
    -------
    Path

    Raises
    ------
    InputError
        The directory does not exist or is not writable, or ``path`` is a directory or an
        existing file that cannot be replaced.
    """
    path = Path(path)
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise InputError(f"output directory does not exist: {parent}")
    if path.is_dir():
        raise InputError(f"output path is a directory: {path}")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise InputError(f"output directory is not writable: {parent} ({option} {path})")
    return path


def check_parquet_out(path: str | Path, option: str = "-o/--out") -> Path:
    """Check a per-item table output path before any work: a writable directory and a ``.parquet`` name.

    Raises
    ------
    InputError
        The name does not end in ``.parquet`` (the table is always written as parquet, so ``o.csv``
        would hold parquet bytes), or :func:`check_output_path` fails.
    """
    path = Path(path)
    if path.suffix.lower() != ".parquet":
        raise InputError(f"{option} must be a .parquet file (the table is written as parquet), got '{path}'")
    return check_output_path(path, option)


def check_outputs(*, out: str | Path | None = None, json_path: str | Path | None = None) -> None:
    """Check a command's two outputs (``-o`` parquet table, ``--json`` summary) before any work.

    Raises
    ------
    InputError
        As :func:`check_parquet_out` / :func:`check_output_path`; also when both name the same file.
    """
    if out is not None:
        check_parquet_out(out)
    if json_path is not None:
        check_output_path(json_path, "--json")
    if out is not None and json_path is not None and Path(out).resolve() == Path(json_path).resolve():
        raise InputError(f"-o and --json name the same file: {out}")


def check_int(name: str, value, *, minimum: int | None = None, maximum: int | None = None) -> int:
    """``value`` as an int within ``[minimum, maximum]``.

    Raises
    ------
    InputError
        Not an integer, or out of range (the bound is named).
    """
    if isinstance(value, bool) or not isinstance(value, (int,)) and not (hasattr(value, "__index__")):
        raise InputError(f"{name} must be an integer, got {value!r}")
    v = int(value)
    if minimum is not None and v < minimum:
        raise InputError(f"{name} must be >= {minimum}, got {v}")
    if maximum is not None and v > maximum:
        raise InputError(f"{name} must be <= {maximum}, got {v}")
    return v


def check_positive(name: str, value, *, allow_zero: bool = False) -> float:
    """``value`` as a finite float > 0 (``>= 0`` with ``allow_zero``).

    Raises
    ------
    InputError
        Not a finite number, or not positive.
    """
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise InputError(f"{name} must be a number, got {value!r}") from None
    if not math.isfinite(v) or v < 0 or (v == 0 and not allow_zero):
        raise InputError(f"{name} must be {'>= 0' if allow_zero else 'a positive number'}, got {value}")
    return v


def check_range(name: str, value, lo: float, hi: float, *, closed: bool = True) -> float:
    """``value`` as a float in ``[lo, hi]`` (``(lo, hi)`` with ``closed=False``).

    Raises
    ------
    InputError
    """
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise InputError(f"{name} must be a number, got {value!r}") from None
    ok = (lo <= v <= hi) if closed else (lo < v < hi)
    if not ok or not math.isfinite(v):
        b = f"[{lo:g}, {hi:g}]" if closed else f"({lo:g}, {hi:g})"
        raise InputError(f"{name} must lie in {b}, got {value}")
    return v


def check_choice(name: str, value, choices: Iterable[str]) -> str:
    """``value`` if it is one of ``choices``.

    Raises
    ------
    InputError
        Naming the valid choices.
    """
    choices = list(choices)
    if value not in choices:
        raise InputError(f"unknown {name} {value!r} (choose from {', '.join(map(str, choices))})")
    return value
