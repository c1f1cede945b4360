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
from typing import Union

from normscope.errors import InputError, OutputError

PathLike = Union[str, "os.PathLike[str]"]

__all__ = [
    "check_paths",
    "OUTPUT_KINDS",
    "FIGURE_SUFFIXES",
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


#: Figure formats every ``--fig`` writes by its suffix (matplotlib's Agg canvas).
FIGURE_SUFFIXES = (".png", ".pdf", ".svg")

#: Output kinds of :func:`check_paths` and the suffixes each accepts (None: any name).
#: ``dir`` is a directory the command writes as a whole and replaces (an index, a BEIR folder,
#: a shard directory): no input may lie inside it. ``folder`` is a directory the command writes
#: named files into, created when missing (a report's ``--out``, ``--fig-dir``): give those files as
#: further outputs; inputs may lie inside it.
OUTPUT_KINDS: dict[str, tuple[str, ...] | None] = {
    "table": (".parquet",),
    "json": (".json",),
    "figure": FIGURE_SUFFIXES,
    "png": (".png",),
    "html": (".html",),
    "file": None,
    "dir": None,
    "folder": None,
}

_KIND_WHAT = {"table": "the table is written as parquet", "json": "the summary is written as JSON",
              "figure": "the figure's format follows the suffix", "png": "the figure is written as PNG",
              "html": "the page is written as HTML"}


def _key(path: Path) -> Path:
    """``path`` made absolute with every symlink of its existing part resolved (the file it would write)."""
    return Path(os.path.realpath(os.path.abspath(path)))


def _same(a: Path, b: Path) -> bool:
    """The same file: equal after resolving symlinks, or (both existing) the same inode (hard links, bind mounts)."""
    if _key(a) == _key(b):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _inside(child: Path, parent: Path) -> bool:
    c, p = _key(child), _key(parent)
    return c != p and p in c.parents


def check_paths(outputs: Iterable[tuple[str, PathLike | None, str]] = (),
                inputs: Iterable[tuple[str, PathLike | None]] = ()) -> list[Path]:
    """One check of a command's paths, before any work: no output lands on an input, outputs are distinct.

    Every command calls this once with every path it will read and write, derived names included
    (``<stem>_heat_drift.png`` beside ``--fig``, ``<stem>.<model>.png`` for several models, the files a
    command writes into a ``--fig-dir`` or a report's ``--out``). Checked, in order:

    1. each output's suffix is valid for its kind (:data:`OUTPUT_KINDS`: a table is ``.parquet``, a
       summary ``.json``, a figure one of :data:`FIGURE_SUFFIXES`);
    2. each output's place: a file's directory exists and is writable and the file is not a directory
       (:func:`check_output_path`); a ``dir`` output's parent exists and is writable and it is not a file;
       a ``folder`` is a writable directory or can be created (a writable parent), and the files named
       in it are then checked through it;
    3. all outputs are distinct from each other after resolving symlinks (and, for existing files, by
       inode: hard links), and no file output lies inside a ``dir`` output that the command replaces;
    4. no output is an input (same rule) and no input lies inside a ``dir`` output: writing a new file
       into an input *directory* (beside a BEIR corpus) is allowed; replacing the directory is not.

    Parameters
    ----------
    outputs : iterable of (option, path, kind)
        ``option`` is how the path was given, named in errors (``"--json"``, ``"--fig (heat/drift panel)"``);
        ``path`` None entries are skipped; ``kind`` is a key of :data:`OUTPUT_KINDS`.
    inputs : iterable of (option, path)
        Files or directories the command reads (None skipped; a path that does not exist is still
        compared, so ``-o`` cannot name an input that is merely missing yet).

    Returns
    -------
    list of Path
        The output paths, in the given order (None entries left out).

    Raises
    ------
    InputError
        A suffix that does not fit the kind, a missing directory, an output that is a directory, two
        outputs naming one file, an output naming an input or replacing a directory holding one.
    OutputError
        A directory that cannot be written (read-only mount, permissions).
    ValueError
        An unknown ``kind`` (a programming error, not the user's).

    Examples
    --------
    >>> check_paths([("-o/--out", "o.parquet", "table"), ("--json", "o.json", "json")],
    ...             inputs=[("INPUT", "items.txt")])  # doctest: +SKIP
    """
    outs: list[tuple[str, Path, str]] = []
    for option, path, kind in outputs:
        if kind not in OUTPUT_KINDS:
            raise ValueError(f"unknown output kind {kind!r}; choose from {', '.join(OUTPUT_KINDS)}")
        if path is None:
            continue
        outs.append((option, Path(path), kind))
    ins = [(option, Path(path)) for option, path in inputs if path is not None]
    _check_suffixes(outs)
    _check_places(outs)
    _check_distinct(outs)
    _check_not_inputs(outs, ins)
    return [p for _, p, _ in outs]


def _check_suffixes(outs: list[tuple[str, Path, str]]) -> None:
    """Step 1 of :func:`check_paths`: each output's suffix fits its kind."""
    for option, path, kind in outs:
        suffixes = OUTPUT_KINDS[kind]
        if suffixes is not None and path.suffix.lower() not in suffixes:
            want = " or ".join(suffixes) if len(suffixes) < 3 else ", ".join(suffixes[:-1]) + " or " + suffixes[-1]
            raise InputError(f"{option} must be a {want} file ({_KIND_WHAT[kind]}), got '{path}'")


def _check_places(outs: list[tuple[str, Path, str]]) -> None:
    """Step 2 of :func:`check_paths`: each output's place can be written (a file in a directory this command
    creates is checked through that directory)."""
    made = {_key(p) for _, p, k in outs if k in ("dir", "folder") and not p.exists()}
    for option, path, kind in outs:
        if kind in ("dir", "folder"):
            parent = path.parent if str(path.parent) else Path(".")
            if path.exists() and not path.is_dir():
                raise InputError(f"{option} {path} exists and is a file; it names a directory to write")
            if kind == "folder" and path.is_dir():
                check_writable_dir(path, option)
                continue
            if not parent.is_dir():
                raise InputError(f"output directory does not exist: {parent}")
            check_writable_dir(parent, f"{option} {path}")
        elif _key(path.parent) in made:  # a file in a directory this command creates: checked through it
            continue
        else:
            check_output_path(path, option)


def _check_distinct(outs: list[tuple[str, Path, str]]) -> None:
    """Step 3 of :func:`check_paths`: no two outputs name one file, and no output lies inside a replaced ``dir``."""
    for i, (option, path, kind) in enumerate(outs):
        for option2, path2, kind2 in outs[:i]:
            if _same(path, path2):
                raise InputError(f"{option2} and {option} name the same file: {path2}"
                                 if option2 != option else f"{option} is given twice: {path}")
            if kind2 == "dir" and _inside(path, path2):
                raise InputError(f"{option} {path} lies inside {option2} {path2}, which is replaced as a whole")
            if kind == "dir" and _inside(path2, path):
                raise InputError(f"{option2} {path2} lies inside {option} {path}, which is replaced as a whole")


def _check_not_inputs(outs: list[tuple[str, Path, str]], ins: list[tuple[str, Path]]) -> None:
    """Step 4 of :func:`check_paths`: no output is an input, and no input lies inside a replaced ``dir``."""
    for option, path, kind in outs:
        for option_in, src in ins:
            if _same(path, src):
                raise InputError(f"{option} {path} is also the input {option_in}: an output never replaces an input")
            if kind == "dir" and _inside(src, path):
                raise InputError(f"{option} {path} holds the input {option_in} ({src}) and would be replaced as a whole")


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
    and other C++ writers raise them as ``OSError`` without ``errno`` (faiss: ``RuntimeError``), so their
    message is matched too.

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
    elif not isinstance(exc, (OSError, RuntimeError)):  # C++ writers (faiss) raise RuntimeError("... (File too large)")
        return None
    else:
        text = str(exc).lower()
        if getattr(exc, "errno", None) in _WRITE_ERRNOS:
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
    return check_paths([(option, path, "table")])[0]


def check_outputs(*, out: str | Path | None = None, json_path: str | Path | None = None) -> None:
    """Check a command's two outputs (``-o`` parquet table, ``--json`` summary) before any work.

    The two-output form of :func:`check_paths` (which also takes the inputs; prefer it).

    Raises
    ------
    InputError
        As :func:`check_paths`: a wrong suffix, a missing directory, both naming the same file.
    """
    check_paths([("-o/--out", out, "table"), ("--json", json_path, "json")])


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
