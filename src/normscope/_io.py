"""Atomic file writing: one file (:func:`atomic_path`) or a command's outputs as a set (:func:`output_set`).

Guarantees (see ``docs/reliability.md``):

- a file is written to a temporary file beside it, flushed to disk and renamed over the final name
  (``os.replace``), so a crash, a SIGKILL or a full disk never leaves a half-written file under the
  final name, and an existing file is replaced only by a complete one;
- a new file gets the usual mode ``0o666 & ~umask`` (``tempfile.mkstemp`` would leave 0600); a file
  that is replaced keeps its permission bits;
- a full disk, a file size limit, a quota or a read-only place while writing is one
  :class:`~normscope.errors.OutputError` line (CLI exit 2), and the temporary files are removed;
- :func:`output_set` / :func:`write_outputs`: a command's outputs (``-o`` table, ``--json``
  summary, ...) are all written to temporary files first and renamed only when every one of them is
  complete: all or none.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

from normscope.errors import InputError
from normscope.validate import check_output_path, write_failure

__all__ = ["atomic_path", "output_set", "write_outputs", "new_file_mode", "write_json", "write_text_atomic", "to_jsonable",
           "dumps", "OutsideFolder", "inside_folder", "open_inside", "read_inside", "file_inside", "usual_modes"]


class OutsideFolder(InputError):
    """A file normscope reads back is a symbolic link (or lies behind one) to a place outside its folder."""


def inside_folder(path: str | Path, folder: str | Path) -> Path:
    """The real path of ``path``, refused when it resolves outside ``folder``.

    Files normscope reads back from a folder it wrote (a report's stage records and kept figures, a lab run
    folder, the embedding cache, a calibrator beside its user's other files) are resolved with
    :func:`os.path.realpath`; a symbolic link at any component that leads out of ``folder`` (itself
    resolved) is refused, so a planted link to a private file (a key, ``~/.ssh/...``) is never read into
    a page, a record or an error message. Links that stay inside the folder are followed.

    Parameters
    ----------
    path : str or Path
        The file (usually ``folder / name``).
    folder : str or Path
        The folder it must stay inside.

    Returns
    -------
    Path
        The resolved path (inside the resolved ``folder``).

    Raises
    ------
    OutsideFolder
        (an :class:`~normscope.errors.InputError`) ``path`` resolves outside ``folder``.
    """
    real_folder = os.path.realpath(folder)
    real = os.path.realpath(path)
    if real != real_folder and os.path.commonpath([real, real_folder]) != real_folder:
        raise OutsideFolder(f"{path} is a symbolic link to a place outside {folder}; normscope does not read "
                            "files outside the folder it wrote (remove the link)")
    return Path(real)


def open_inside(path: str | Path, folder: str | Path, mode: str = "rb", encoding: str | None = None):
    """Open a regular file for reading without following a symbolic link out of ``folder``.

    The path is resolved and checked by :func:`inside_folder`, then opened with ``O_NOFOLLOW`` (a link
    swapped in at the last component after the check is refused by the kernel, ``ELOOP``) and checked
    to be a regular file (``fstat``: a FIFO or device is never read).

    Parameters
    ----------
    path, folder : str or Path
    mode : {'rb', 'r'}
    encoding : str, optional
        For text mode.

    Returns
    -------
    file object

    Raises
    ------
    OutsideFolder
        A link out of ``folder`` (also one planted between the check and the open).
    FileNotFoundError, IsADirectoryError, OSError
        As :func:`open`; a path that is not a regular file raises ``IsADirectoryError`` or ``OSError``.
    """
    import stat

    real = inside_folder(path, folder)
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(real, flags)
    except OSError as exc:
        import errno

        if exc.errno == errno.ELOOP:
            raise OutsideFolder(f"{path} became a symbolic link while normscope read it; not followed") from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise (IsADirectoryError if stat.S_ISDIR(st.st_mode) else OSError)(f"{path} is not a regular file")
        return os.fdopen(fd, mode, encoding=encoding) if "b" not in mode else os.fdopen(fd, mode)
    except BaseException:
        os.close(fd)
        raise


def read_inside(path: str | Path, folder: str | Path, *, text: bool = False) -> bytes | str:
    """The bytes (or UTF-8 text) of ``path``, read by :func:`open_inside` (never through a link out of ``folder``)."""
    with open_inside(path, folder, "r" if text else "rb", encoding="utf-8" if text else None) as f:
        return f.read()


def file_inside(path: str | Path, folder: str | Path) -> bool:
    """True when ``path`` is a regular file that resolves inside ``folder`` (a link out of it counts as absent)."""
    try:
        real = inside_folder(path, folder)
    except OutsideFolder:
        return False
    return os.path.isfile(real) and not os.path.islink(real)


def _umask() -> int:
    """The process umask, read without changing it where the OS allows (Linux ``/proc``)."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)  # elsewhere: read by setting (a brief, process-wide change)
    os.umask(mask)
    return mask


def new_file_mode(path: str | Path) -> int:
    """Permission bits an output written to ``path`` gets: the existing file's, else ``0o666 & ~umask``
    (also when ``path`` is a symbolic link: the link is replaced, its target never read or changed)."""
    import stat

    try:
        st = os.lstat(path)  # a symbolic link is replaced, not written through: its target's mode is not taken
        if not stat.S_ISLNK(st.st_mode):
            return st.st_mode & 0o7777
    except OSError:
        pass
    return 0o666 & ~_umask()


def usual_modes(folder: str | Path) -> None:
    """Give every file under ``folder`` the mode ``0o666 & ~umask`` and every folder ``0o777 & ~umask``.

    For trees assembled from downloads (pooch and ``tempfile`` leave 0600 files and 0700 folders): a fetched
    dataset gets the permissions any file the user creates gets. Symbolic links are left alone (never followed).
    """
    mask = _umask()
    for root, dirs, files in os.walk(folder):
        for n in dirs:
            if not os.path.islink(os.path.join(root, n)):
                os.chmod(os.path.join(root, n), 0o777 & ~mask)
        for n in files:
            if not os.path.islink(os.path.join(root, n)):
                os.chmod(os.path.join(root, n), 0o666 & ~mask)
    os.chmod(folder, 0o777 & ~mask)


def _fsync(path: str) -> None:
    with contextlib.suppress(OSError):  # some file systems cannot fsync: durability is best effort there
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _temp_beside(path: Path) -> str:
    # ".<name>.<random>.tmp<suffix>": writers that infer the format from the suffix (matplotlib) still see it
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=f".tmp{path.suffix}", dir=path.parent)
    os.close(fd)
    return tmp


def _unlink_quietly(path) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)


@contextlib.contextmanager
def atomic_path(path: str | Path, option: str = "output") -> Iterator[str]:
    """Yield a temp path beside ``path``; on success rename it over ``path``.

    On any exception the temp file is removed and ``path`` is untouched, so a
    crash or SIGKILL never leaves a half-written file under the final name. The
    file gets :func:`new_file_mode` and is flushed to disk before the rename.

    Parameters
    ----------
    path : str or Path
        Final path; its directory must exist and be writable (checked first).
    option : str
        How the path was given (``"--json"``), named in errors.

    Raises
    ------
    InputError
        The directory does not exist or ``path`` is a directory.
    OutputError
        The directory is read-only, or writing failed for want of space, a file size limit, a
        quota or permissions (one line; nothing is left behind).
    """
    path = check_output_path(path, option)
    try:
        tmp = _temp_beside(path)
    except OSError as exc:
        raise (write_failure(exc, path, option) or exc) from None
    try:
        yield tmp
        os.chmod(tmp, new_file_mode(path))
        _fsync(tmp)
        os.replace(tmp, path)
    except BaseException as exc:
        _unlink_quietly(tmp)
        failure = write_failure(exc, path, option)
        if failure is not None and failure is not exc:
            raise failure from None
        raise


@contextlib.contextmanager
def output_set(*paths: str | Path | None, options: Mapping[str | Path, str] | None = None) -> Iterator[dict[Path, str]]:
    """Write a command's outputs as a set: all of them or none.

    Yields ``{final path: temp path}`` (``None`` entries are skipped). The caller writes every
    output to its temp path; when the block ends without an exception, each temp file is flushed
    and renamed over its final path. If the block raises (a full disk while writing the second
    file, a bug, KeyboardInterrupt), every temp file is removed and no final path changes: old
    outputs stay as they were.

    Limit: the renames are atomic one by one, not together. A rename that fails half way through
    the set is rolled back (a replaced file is restored from a hard link kept until the end; a new
    one is removed), but a SIGKILL or power loss during the renames themselves (microseconds) can
    leave some outputs new and some old.

    Parameters
    ----------
    *paths : str, Path or None
        Final output paths (directories must exist and be writable; checked first).
    options : mapping, optional
        ``{path: "--json"}``: how each path was given, named in errors (None keys are ignored).

    Yields
    ------
    dict of Path to str

    Raises
    ------
    InputError
        A directory is missing, a path is a directory, or two paths name the same file.
    OutputError
        A directory is read-only, or writing failed for want of space, a file size limit, a
        quota or permissions (one line; nothing is left behind).

    Examples
    --------
    >>> with output_set(out, json_path, options={out: "-o/--out", json_path: "--json"}) as tmp:  # doctest: +SKIP
    ...     table.to_parquet(tmp[out])
    ...     write_json(summary, tmp[json_path])
    """
    options = {Path(k): v for k, v in (options or {}).items() if k is not None}
    finals: list[Path] = []
    seen: dict[Path, Path] = {}
    for p in paths:
        if p is None:
            continue
        p = Path(p)
        check_output_path(p, options.get(p, "output"))
        key = p.resolve()
        if key in seen:
            raise InputError(f"two outputs name the same file: {seen[key]} and {p}")
        seen[key] = p
        finals.append(p)
    temps: dict[Path, str] = {}
    current: Path | None = None
    try:
        for p in finals:
            current = p
            temps[p] = _temp_beside(p)
        current = None
        yield dict(temps)
        for p in finals:
            current = p
            os.chmod(temps[p], new_file_mode(p))
            _fsync(temps[p])
        current = None
        _commit(temps)
    except BaseException as exc:
        for tmp in temps.values():
            _unlink_quietly(tmp)
        final = current or _failed_output(exc, temps)
        failure = write_failure(exc, final or ", ".join(map(str, finals)), options.get(final, "output"))
        if failure is not None and failure is not exc:
            raise failure from None
        raise


def _failed_output(exc: BaseException, temps: dict[Path, str]) -> Path | None:
    """The final path whose temp file the error names (``exc.filename`` or the message), if any."""
    names = [str(getattr(exc, "filename", "") or ""), str(exc)]
    for final, tmp in temps.items():
        if any(tmp in n or Path(tmp).name in n for n in names):
            return final
    return None


def _commit(temps: dict[Path, str]) -> None:
    """Rename every temp over its final path; on a failure restore what was already renamed."""
    backups: dict[Path, str | None] = {}
    try:
        for final, tmp in temps.items():
            backup = None
            if final.exists():
                backup = f"{tmp}.old"
                try:
                    os.link(final, backup)
                except OSError:  # no hard links here: the old file cannot be restored on failure
                    backup = None
            backups[final] = backup
            os.replace(tmp, final)
    except BaseException:
        for final, backup in backups.items():
            if not Path(temps[final]).exists():  # this one was renamed: put the old state back
                if backup is not None:
                    os.replace(backup, final)
                else:
                    _unlink_quietly(final)
        raise
    finally:
        for backup in backups.values():
            if backup is not None:
                _unlink_quietly(backup)


def write_outputs(writers: Mapping[str | Path | None, Callable[[str], object]],
                  options: Mapping[str | Path, str] | None = None) -> list[Path]:
    """Write several outputs as a set (:func:`output_set`): ``{final path: writer(temp_path)}``.

    Entries whose path is None are skipped, so a command passes its optional outputs as they are::

        write_outputs({out: table.to_parquet, json_path: lambda p: write_json(summary, p)},
                      options={out: "-o/--out", json_path: "--json"})

    Returns
    -------
    list of Path
        The final paths written, in the given order.

    Raises
    ------
    InputError, OutputError
        As :func:`output_set`; then no output was written or changed.
    """
    chosen = {Path(p): w for p, w in writers.items() if p is not None}
    with output_set(*chosen, options=options) as tmp:
        for p, writer in chosen.items():
            writer(tmp[p])
    return list(chosen)


def to_jsonable(obj):
    """``obj`` with only strict-JSON values: the one cleaner every ``--json`` goes through.

    NaN and +-inf become ``None`` (JSON ``null``: ``NaN`` tokens are rejected by ``JSON.parse``,
    jq and most non-Python readers); numpy scalars and arrays become Python numbers and lists;
    paths become strings; values with ``to_json()`` (:mod:`normscope.values`) and dataclass results with
    ``to_dict()`` are converted; tuples become lists.
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
    if hasattr(obj, "to_json"):  # the value types of normscope.values and the report's records
        return to_jsonable(obj.to_json())
    if hasattr(obj, "to_dict"):
        return to_jsonable(obj.to_dict())
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")


def dumps(obj, **kwargs) -> str:
    """Strict JSON text of ``obj`` (:func:`to_jsonable`, then ``allow_nan=False``)."""
    return json.dumps(to_jsonable(obj), allow_nan=False, **kwargs)


def write_text_atomic(text: str, path: str | Path, option: str = "output") -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically: a temporary file renamed over it, so a symbolic link at
    ``path`` is replaced, never written through (:func:`atomic_path`)."""
    with atomic_path(path, option) as tmp:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
    return Path(path)


def write_json(obj, path: str | Path, option: str = "output") -> Path:
    """Write ``obj`` as indented strict JSON atomically (NaN/inf written as ``null``, see :func:`to_jsonable`).

    Raises
    ------
    TypeError
        A value that is not JSON serialisable.
    InputError, OutputError
        As :func:`atomic_path`.
    """
    text = dumps(obj, indent=2, sort_keys=False) + "\n"
    with atomic_path(path, option) as tmp:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
    return Path(path)
