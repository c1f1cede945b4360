"""Datasets: where they are, fetching them on demand, and verifying every copy.

Public API
----------
- :func:`data_path` -- the local path of a dataset, fetched first when absent and allowed; the one
  function every loader of normscope calls for its default data file;
- :func:`fetch_dataset` -- download, verify and install one dataset (``normscope data fetch``);
- :func:`dataset_status` -- where a dataset is and how its copy was verified (``normscope data list``);
- :func:`settings` -- a context manager for ``offline``, ``mirror`` and ``dest``;
- :data:`DATASETS` -- the registry (origins, licences, pinned sha256, sizes).

Environment: ``$NORMSCOPE_DATA`` (a data folder in the shared-data layout, searched first),
``$NORMSCOPE_CACHE`` (fetches go to ``$NORMSCOPE_CACHE/data``), ``$NORMSCOPE_DATA_MIRROR`` (a mirror
URL or folder), ``$NORMSCOPE_OFFLINE=1`` (never fetch). See ``docs/data.md``.
"""

from __future__ import annotations

import json
from pathlib import Path

from normscope.data.fetch import FetchResult, fetch_dataset, fmt_bytes, mirrored_url
from normscope.data.locate import MARKER, data_dir, find_copy, mirror, offline, search_roots, set_defaults, settings
from normscope.data.registry import DATASETS, Dataset, dataset_names, get_dataset
from normscope.errors import DataError

__all__ = [
    "DATASETS", "Dataset", "FetchResult", "data_dir", "data_path", "dataset_names", "dataset_path", "dataset_status",
    "datasets_here",
    "fetch_dataset", "find_copy", "fmt_bytes", "get_dataset", "mirror", "mirrored_url", "offline",
    "search_roots", "set_defaults", "settings",
]


def dataset_path(spec: str | Path) -> Path:
    """A command's ``--dataset``: a registry name (``simlex-999``) that is not also an existing path is
    :func:`data_path` of it; anything else is the path itself.

    Raises
    ------
    DataError
        A registry dataset that is absent and cannot be fetched (as :func:`data_path`).
    """
    s = str(spec)
    if s in dataset_names() and not Path(s).exists():
        return data_path(s)
    return Path(s)


def datasets_here() -> list[str]:
    """Names of the datasets with a complete copy in a searched data folder (:func:`find_copy`)."""
    return [n for n in dataset_names() if find_copy(n) is not None]


def dataset_status(name: str) -> dict:
    """Registry facts and local state of one dataset.

    Returns
    -------
    dict
        ``name``, ``title``, ``description``, ``licence``, ``citation``, ``origin`` (first origin URL),
        ``download`` (size text), ``download_bytes``, ``verified_by``, ``present`` (bool), ``where``
        (label of the data folder holding it, or None), ``path`` (str or None), ``fetched`` (the
        fetch record of a fetched copy, or None) and ``fetch_command``.

    Raises
    ------
    InputError
        Unknown dataset name.
    """
    ds = get_dataset(name)
    hit = find_copy(ds.name)
    record = None
    if hit is not None:
        folder = hit[1] if ds.entry is None else hit[1].parent
        marker = folder / MARKER
        if marker.is_file():
            try:
                record = json.loads(marker.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                record = None
    return {
        "name": ds.name, "title": ds.title, "description": ds.description, "licence": ds.licence,
        "citation": ds.citation, "origin": ds.origin, "download": fmt_bytes(ds.download_bytes, ds.approximate),
        "download_bytes": ds.download_bytes, "verified_by": ds.verified_by, "present": hit is not None,
        "where": hit[0] if hit else None, "path": str(hit[1]) if hit else None, "fetched": record,
        "fetch_command": ds.fetch_command,
    }

#: (dataset, destination, mirror) -> the first fetch error of this process: not retried, not re-announced
_FAILED: dict[tuple[str, str, str], str] = {}


def data_path(name: str, *, fetch: bool | None = None) -> Path:
    """Local path of dataset ``name``, fetching it first when it is nowhere and fetching is allowed.

    This is the one function every loader calls for a default data file.

    Parameters
    ----------
    name : str
        Registry name (``scifact``, ``nfcorpus``, ``wordnet``, ``concreteness``, ``subtlex-us``,
        ``chaosnli``, ``simlex-999``, ``cifar10h``) or folder name (``concreteness_brysbaert2014`` ...).
    fetch : bool, optional, keyword-only
        Fetch when absent; default: unless offline (:func:`offline`).

    Returns
    -------
    pathlib.Path
        The dataset folder, or its main file for single-file datasets (see :attr:`Dataset.entry`).
        Folder-valued paths hold the shared-data layout (``scifact/corpus.jsonl[.gz]``, ...).

    Raises
    ------
    InputError
        Unknown name.
    DataError
        Absent and fetching is off (the message names ``normscope data fetch NAME``), or the fetch
        failed (one line: what, from where, why; nothing is left behind).
    """
    ds = get_dataset(name)
    hit = find_copy(ds.name)
    if hit is not None:
        return hit[1]
    where = ", ".join(str(p / ds.folder) for _, p in search_roots())
    if fetch is None:
        fetch = not offline()
    if not fetch:
        raise DataError(f"{ds.title} is not here (looked in {where}) and fetching is off (--offline or $NORMSCOPE_OFFLINE); "
                        f"get it with `{ds.fetch_command}`")
    key = (ds.name, str(data_dir()), str(mirror()))
    if key in _FAILED:
        raise DataError(_FAILED[key])
    try:
        return fetch_dataset(ds.name, announce=True).path
    except DataError as exc:
        _FAILED[key] = f"{exc}; retry with `{ds.fetch_command}`"
        raise DataError(_FAILED[key]) from None
