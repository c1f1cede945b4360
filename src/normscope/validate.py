"""Validation at the library boundary: output paths, numeric ranges, options.

Every stage entry point checks its arguments here once, before any work, and raises
:class:`~normscope.errors.InputError` with a one-line message naming the offending value (the
CLI turns it into ``error: ...`` and exit code 2). The CLI only parses and calls.
"""

from __future__ import annotations

import errno
import math
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

from normscope.errors import InputError, OutputError

__all__ = [
    "check_output_path",
    "check_writable_dir",
    "check_room",
    "write_failure",
    "check_parquet_out",
    "check_outputs",
    "check_int",
    "check_positive",
    "check_range",
    "check_choice",
]


def check_output_path(path: str | Path, option: str = "output") -> Path:
    """Check before any work that ``path`` can be written: existing, writable directory; not a directory itself.

    Writability is tested by creating (and removing) an empty temporary file in the directory, so a
    read-only mount, a read-only bind mount or a directory root may not write to are all caught
    (``os.access`` alone misses them for root).

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
        The directory does not exist, or ``path`` is a directory.
    OutputError
        The directory cannot be written (read-only mount, permissions, full inode table).
    """
    path = Path(path)
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise InputError(f"output directory does not exist: {parent}")
    if path.is_dir():
        raise InputError(f"output path is a directory: {path}")
    check_writable_dir(parent, f"{option} {path}")
    return path


def check_writable_dir(directory: str | Path, what: str = "output") -> Path:
    """Check that files can be created in ``directory`` by creating and removing an empty temp file.

    Parameters
    ----------
    directory : str or Path
        An existing directory.
    what : str
        Named in the error (``"-o/--out o.parquet"``, ``"embedding cache"``).

    Returns
    -------
    Path

    Raises
    ------
    OutputError
        The directory is not writable (the reason, e.g. "read-only file system", is named).
    """
    directory = Path(directory)
    try:
        fd, probe = tempfile.mkstemp(prefix=".normscope-probe-", suffix=".tmp", dir=directory)
    except OSError as exc:
        raise OutputError(f"output directory is not writable: {directory} ({what}: {_reason(exc)})") from None
    os.close(fd)
    try:
        os.unlink(probe)
    except OSError:
        pass
    return directory


def _reason(exc: OSError) -> str:
    """Lower-case reason of an OSError (``read-only file system``), without the path."""
    if exc.errno == errno.EFBIG:
        return f"file too large: the file size limit (ulimit -f) is {_fsize_limit_text()}"
    text = exc.strerror or (str(exc).splitlines()[0] if str(exc) else "") or type(exc).__name__
    return text.strip().rstrip(".").lower()


def _fsize_limit() -> int | None:
    """Soft RLIMIT_FSIZE in bytes, or None when unlimited or unknown."""
    try:
        import resource
    except ImportError:  # not on POSIX
        return None
    soft, _ = resource.getrlimit(resource.RLIMIT_FSIZE)
    return None if soft == resource.RLIM_INFINITY or soft < 0 else int(soft)


def _fsize_limit_text() -> str:
    lim = _fsize_limit()
    return "unknown" if lim is None else _bytes_text(lim)


def _bytes_text(n: float) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"  # pragma: no cover


#: errno values that mean "this place cannot take the output" (not a bug): one line, exit 2.
_WRITE_ERRNOS = {errno.ENOSPC, errno.EFBIG, errno.EROFS, errno.EACCES, errno.EPERM, errno.EDQUOT}
_WRITE_TEXTS = tuple(os.strerror(e).lower() for e in _WRITE_ERRNOS)


def write_failure(exc: BaseException, path: str | Path, option: str = "output") -> OutputError | None:
    """The one-line :class:`OutputError` for an error raised while writing ``path``, or None.

    A full disk (ENOSPC), a file size limit (EFBIG), a quota (EDQUOT), a read-only file system
    (EROFS) and missing permissions (EACCES, EPERM) are the user's environment, not a bug; pyarrow
    and other C++ writers raise them as ``OSError`` without ``errno``, so their message is matched too.

    Parameters
    ----------
    exc : BaseException
        What the writer raised.
    path : str or Path
        The final output path (not the temp file).
    option : str
        How the path was given (``"--json"``).

    Returns
    -------
    OutputError or None
        None when ``exc`` is not such a write failure (it should propagate unchanged).
    """
    if isinstance(exc, OutputError):
        reason = getattr(exc, "reason", None)
        if reason is None:
            return exc
    elif not isinstance(exc, OSError):
        return None
    else:
        text = str(exc).lower()
        if exc.errno in _WRITE_ERRNOS:
            reason = _reason(exc)
        elif any(t in text for t in _WRITE_TEXTS):
            reason = next(t for t in _WRITE_TEXTS if t in text)
            if reason == os.strerror(errno.EFBIG).lower():
                reason = f"file too large: the file size limit (ulimit -f) is {_fsize_limit_text()}"
        else:
            return None
    err = OutputError(f"cannot write {option} {path}: {reason}; nothing was written")
    err.reason = reason
    return err


def check_room(path: str | Path, nbytes: int, option: str = "output") -> None:
    """Check before the work that a file of about ``nbytes`` fits: free disk space and ``ulimit -f``.

    Parameters
    ----------
    path : str or Path
        The output file (its directory must exist).
    nbytes : int
        Estimated size of the file in bytes (a lower bound is best: the check must never refuse a
        file that would fit).
    option : str
        How the path was given, named in the error.

    Raises
    ------
    OutputError
        ``nbytes`` exceeds the free space of the file system (``statvfs``: blocks available to
        unprivileged users) or the soft file size limit (``RLIMIT_FSIZE``).
    """
    path = Path(path)
    parent = path.parent if str(path.parent) else Path(".")
    limit = _fsize_limit()
    if limit is not None and nbytes > limit:
        raise OutputError(
            f"cannot write {option} {path}: it needs about {_bytes_text(nbytes)} but the file size limit "
            f"(ulimit -f) is {_bytes_text(limit)}; nothing was computed"
        )
    try:
        st = os.statvfs(parent)
    except (OSError, AttributeError):  # no statvfs (Windows) or unreadable: cannot tell
        return
    free = st.f_bavail * st.f_frsize
    if nbytes > free:
        raise OutputError(
            f"cannot write {option} {path}: it needs about {_bytes_text(nbytes)} but only {_bytes_text(free)} "
            f"is free on that file system; nothing was computed"
        )


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
