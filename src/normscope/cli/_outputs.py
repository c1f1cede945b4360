"""Writing a command's files: the per-item table (``-o``), the strict-JSON summary (``--json``), the figure."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from normscope._io import atomic_path, write_json

__all__ = ["write_outputs"]


def write_outputs(result, console, *, out: Path | None, json_path: Path | None, fig: Path | None,
                  plot: Callable[[object, Path], Path]) -> None:
    """Write ``result.items`` (parquet, atomically), ``result.to_dict()`` (strict JSON) and ``plot(result, fig)``.

    Each is written only when its path is given (the paths were checked before any work); the
    written paths are then printed as ``wrote <paths>`` on ``console``.
    """
    if out is not None:
        with atomic_path(out) as tmp:
            result.items.to_parquet(tmp, index=False)
    if json_path is not None:
        write_json(result.to_dict(), json_path)
    if fig is not None:
        plot(result, fig)
    written = [str(p) for p in (out, json_path, fig) if p is not None]
    if written:
        console.print("wrote " + ", ".join(written), soft_wrap=True)
