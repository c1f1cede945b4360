"""Where the benchmarks find their real data: :func:`normscope.data.data_path` (the shared data folder if
present, else the user's cache, fetching from the public origin unless offline). Not a benchmark itself."""

from __future__ import annotations

import sys
from pathlib import Path


def dataset_dir(name: str = "scifact") -> Path | None:
    """Folder of registry dataset ``name`` (fetched when absent and allowed), or None with the reason on stderr."""
    from normscope.data import data_path
    from normscope.errors import DataError

    try:
        return data_path(name)
    except DataError as exc:
        print(f"{name}: {exc}", file=sys.stderr)
        return None
