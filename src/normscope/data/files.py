"""Locating a data file: the user's path, or the dataset's copy (:func:`normscope.data.data_path`)."""

from __future__ import annotations

import os
from pathlib import Path

from normscope.data import data_path
from normscope.errors import InputError


def data_file(path: str | os.PathLike | None, *, subdir: str, name: str, what: str) -> Path:
    """The data file at ``path``, or the dataset copy's file (``data_path(subdir)``) when ``path`` is None.

    Parameters
    ----------
    path : path-like or None
        The user's file; None selects the dataset's copy (:func:`normscope.data.data_path`
        with ``subdir`` as the dataset's folder name; fetched when absent and allowed).
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
        ``path`` is not a file.
    DataError
        ``path`` is None, the dataset is absent and cannot be fetched (the message names the
        ``normscope data fetch`` command).
    """
    if path is None:
        return data_path(subdir)  # the data folder's copy, else fetched (normscope.data)
    p = Path(path)
    if not p.is_file():
        raise InputError(f"{what} file not found: {p}")
    return p
