"""Where a dataset is: the data folders searched, the settings that control fetching, :func:`data_path`.

Search order for a dataset's folder (``<root>/<folder>``, the layout of the project's shared data
folder):

1. ``$NORMSCOPE_DATA`` (or ``normscope report --data DIR``; set but not a folder is an error), else
   ``../shared/data`` when it exists (:func:`normscope.datasets.shared_data_dir`);
2. the fetch destination: ``--dir DIR`` of ``normscope data``, else ``<normscope cache>/data``
   (``$NORMSCOPE_CACHE/data``, default ``~/.cache/normscope/data``).

A folder counts when every file its registry entry requires is there (:attr:`Dataset.requires`).
When none does, :func:`normscope.data.data_path` fetches the dataset into the destination unless fetching is off
(``--offline`` or ``$NORMSCOPE_OFFLINE=1``), in which case its error names the exact
``normscope data fetch NAME`` command.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
from collections.abc import Iterator
from pathlib import Path

from normscope import datasets  # its functions looked up when called (tests replace shared_data_dir)
from normscope.data.registry import Dataset, get_dataset
from normscope.encoders.bundled import cache_dir

__all__ = ["settings", "set_defaults", "offline", "offline_reason", "verify_local", "mirror", "data_dir", "search_roots",
           "find_copy", "complete", "MARKER"]

#: Name of the record a fetch writes inside the dataset folder (source, checks, date).
MARKER = ".normscope-fetch.json"

_OFFLINE: contextvars.ContextVar[bool | None] = contextvars.ContextVar("normscope_data_offline", default=None)
_MIRROR: contextvars.ContextVar[str | None] = contextvars.ContextVar("normscope_data_mirror", default=None)
_DEST: contextvars.ContextVar[Path | None] = contextvars.ContextVar("normscope_data_dest", default=None)
_VERIFY: contextvars.ContextVar[bool | None] = contextvars.ContextVar("normscope_data_verify", default=None)


@contextlib.contextmanager
def settings(*, offline: bool | None = None, mirror: str | os.PathLike | None = None,
             dest: str | os.PathLike | None = None, verify: bool | None = None) -> Iterator[None]:
    """Override the fetch settings inside a ``with`` block (None keeps the current value).

    Parameters
    ----------
    offline : bool, optional
        Forbid (True) or allow (False) fetching; default ``$NORMSCOPE_OFFLINE``.
    mirror : str or path-like, optional
        A mirror URL (``http(s)://``, ``file://``) or folder; default ``$NORMSCOPE_DATA_MIRROR``.
    dest : path-like, optional
        Fetch destination; default ``<normscope cache>/data``.
    verify : bool, optional
        Verify local copies against the registry (True) or accept them as they are (False,
        ``--no-verify``); default: verify unless ``$NORMSCOPE_NO_VERIFY`` is truthy.
    """
    tokens = set_defaults(offline=offline, mirror=mirror, dest=dest, verify=verify)
    try:
        yield
    finally:
        for var, tok in reversed(tokens):
            var.reset(tok)


def set_defaults(*, offline: bool | None = None, mirror: str | os.PathLike | None = None,
                 dest: str | os.PathLike | None = None, verify: bool | None = None) -> list:
    """Set the fetch settings for the rest of the current context (the CLI runs each command in its
    own :mod:`contextvars` context); None keeps a value. Returns the tokens :func:`settings` resets."""
    tokens = []
    if offline is not None:
        tokens.append((_OFFLINE, _OFFLINE.set(bool(offline))))
    if mirror is not None:
        tokens.append((_MIRROR, _MIRROR.set(str(mirror))))
    if dest is not None:
        tokens.append((_DEST, _DEST.set(Path(dest))))
    if verify is not None:
        tokens.append((_VERIFY, _VERIFY.set(bool(verify))))
    return tokens


def _truthy(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() not in ("", "0", "false", "no", "off")


def offline() -> bool:
    """True when fetching is forbidden (``settings(offline=True)`` or ``$NORMSCOPE_OFFLINE`` truthy)."""
    v = _OFFLINE.get()
    if v is not None:
        return v
    return _truthy("NORMSCOPE_OFFLINE")


def offline_reason() -> str | None:
    """What forbids fetching, as the user set it (``"--offline is set"``, ``"$NORMSCOPE_OFFLINE=1 is set"``),
    or None when fetching is allowed."""
    v = _OFFLINE.get()
    if v is not None:
        return "--offline is set" if v else None
    if _truthy("NORMSCOPE_OFFLINE"):
        return f"$NORMSCOPE_OFFLINE={os.environ['NORMSCOPE_OFFLINE'].strip()} is set"
    return None


def verify_local() -> bool:
    """False when local copies are accepted unverified (``--no-verify``, ``settings(verify=False)`` or
    ``$NORMSCOPE_NO_VERIFY`` truthy)."""
    v = _VERIFY.get()
    if v is not None:
        return v
    return not _truthy("NORMSCOPE_NO_VERIFY")


def mirror() -> str | None:
    """The mirror in use (``settings(mirror=...)`` or ``$NORMSCOPE_DATA_MIRROR``), or None."""
    return _MIRROR.get() or os.environ.get("NORMSCOPE_DATA_MIRROR") or None


def data_dir() -> Path:
    """The fetch destination: ``settings(dest=...)``, else ``<normscope cache>/data`` (not created)."""
    dest = _DEST.get()
    if dest is not None:
        return dest

    return cache_dir(create=False) / "data"  # a read-only HOME still lists, locates and reads


def search_roots() -> list[tuple[str, Path]]:
    """The data folders searched, in order, as ``(label, path)``: the shared data folder (or
    ``$NORMSCOPE_DATA``), then the fetch destination."""
    roots = []
    shared = datasets.shared_data_dir()
    if shared is not None:
        env = os.environ.get("NORMSCOPE_DATA")
        from_env = bool(env) and Path(env).resolve() == Path(shared).resolve()
        label = "--data" if datasets.data_root_given() is not None else "$NORMSCOPE_DATA" if from_env else "shared data"
        roots.append((label, Path(shared)))
    dest = data_dir()
    if all(dest.resolve() != p.resolve() for _, p in roots):
        roots.append(("fetched", dest))
    return roots


def complete(ds: Dataset, folder: Path) -> Path | None:
    """The entry path of ``folder`` when it holds every required file, else None."""
    found = []
    for alternatives in ds.requires:
        hit = next((folder / a for a in alternatives if (folder / a).is_file()), None)
        if hit is None:
            return None
        found.append(hit)
    return folder if ds.entry is None else found[ds.entry]


def find_copy(name: str) -> tuple[str, Path] | None:
    """``(root label, entry path)`` of the first complete copy of dataset ``name``, or None.

    Raises
    ------
    InputError
        Unknown dataset name.
    """
    ds = get_dataset(name)
    for label, root in search_roots():
        hit = complete(ds, root / ds.folder)
        if hit is not None:
            return label, hit
    return None
