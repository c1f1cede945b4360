"""Shared matplotlib helpers for every ``plot_*`` function (Agg backend, atomic figure writes)."""

from __future__ import annotations

from pathlib import Path

from normscope._io import atomic_path
from normscope.validate import FIGURE_SUFFIXES, check_output_path

__all__ = ["pyplot", "save_figure"]


def pyplot():
    """Return ``matplotlib.pyplot`` with the non-interactive Agg backend selected.

    Returns
    -------
    module
        ``matplotlib.pyplot``.
    """
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig, path: str | Path, *, dpi: float | str | None = 120, format: str | None = None,
                bbox_inches: str | None = "tight") -> Path:
    """Save a matplotlib figure atomically and close it (also on failure).

    Parameters
    ----------
    fig : matplotlib.figure.Figure
    path : str or Path
        Output file; written through :func:`normscope._io.atomic_path`.
    dpi : float, str or None
        Resolution in dots per inch; ``None`` uses matplotlib's ``savefig.dpi`` setting.
    format : str, optional
        Image format passed to ``savefig``; default: the suffix of ``path`` when it is one of
        :data:`normscope.validate.FIGURE_SUFFIXES` (``.png``, ``.pdf``, ``.svg``), else ``"png"``.
    bbox_inches : str or None
        ``"tight"`` (default) crops to the drawn content; ``None`` keeps the figure size.

    Returns
    -------
    Path
        The written path.

    Raises
    ------
    InputError
        If ``path``'s directory does not exist or ``path`` is a directory.
    """
    plt = pyplot()
    if format is None:
        suffix = Path(path).suffix.lower()
        format = suffix[1:] if suffix in FIGURE_SUFFIXES else "png"
    try:
        path = check_output_path(path)
        with atomic_path(path) as tmp:
            fig.savefig(tmp, format=format, dpi=dpi, bbox_inches=bbox_inches)
    finally:
        plt.close(fig)
    return path
