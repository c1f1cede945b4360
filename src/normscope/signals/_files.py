"""Locating a covariate's data file: the user's path, or the copy under the shared data folder."""

from __future__ import annotations

import os
from pathlib import Path

from normscope.errors import InputError


def data_file(path: str | os.PathLike | None, *, subdir: str, name: str, what: str) -> Path:
    """The data file at ``path``, or ``<shared data>/<subdir>/<name>`` when ``path`` is None.

    Parameters
    ----------
    path : path-like or None
        The user's file; None selects the shared-data default
        (:func:`normscope.datasets.shared_data_dir`).
    subdir, name : str, keyword-only
        Folder under the shared data folder and the file's name there.
    what : str, keyword-only
        What the file holds, for the error messages (e.g. ``"SUBTLEX-US"``).

    Returns
    -------
    pathlib.Path of an existing file.

    Raises
    ------
    InputError
        ``path`` is not a file, or ``path`` is None and the shared-data copy is absent.
    """
    if path is None:
        from normscope.datasets import shared_data_dir

        d = shared_data_dir()
        p = d / subdir / name if d is not None else None
        if p is None or not p.is_file():
            raise InputError(f"no {what} file given and ../shared/data/{subdir} is absent")
        return p
    p = Path(path)
    if not p.is_file():
        raise InputError(f"{what} file not found: {p}")
    return p
