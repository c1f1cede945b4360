"""Figures of the report that belong to no single stage (matplotlib, Agg backend, PNG).

Stage figures (probes, lab, signals, retrieval) come from the stages' own ``plot_*`` functions;
this module draws the norm distribution and the report's fallback scatter plots.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from normscope._plot import pyplot, save_figure

__all__ = ["plot_norm_distribution", "save_figure"]

_DPI = 110


def plot_norm_distribution(norms, path: str | Path, *, model: str = "", source: str = "") -> Path:
    """Histogram of raw embedding norms with mean and median marked.

    Parameters
    ----------
    norms : array-like of shape (n,)
        Raw norms ||z|| (units of the model's output space).
    path : str or Path
        Output PNG.
    model, source : str, keyword-only
        Shown in the title (model name; what was embedded, e.g. "top-5000 wordfreq words").

    Returns
    -------
    Path
    """
    r = np.asarray(norms, dtype=np.float64)
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 3.8))
    bins = int(np.clip(np.sqrt(max(len(r), 1)) * 1.5, 10, 80))
    ax.hist(r, bins=bins, color="#4C72B0", alpha=0.85, edgecolor="white", linewidth=0.4)
    if len(r):
        ax.axvline(r.mean(), color="#C44E52", lw=1.6, label=f"mean {r.mean():.2f}")
        ax.axvline(np.median(r), color="#222222", lw=1.2, ls="--", label=f"median {np.median(r):.2f}")
        ax.legend(frameon=False)
    ax.set_xlabel("raw embedding norm ||z|| (model output units)")
    ax.set_ylabel("number of items")
    title = "Norm distribution"
    if source:
        title += f": {source}"
    ax.set_title(title + (f"\n{model}" if model else ""), fontsize=10)
    ax.spines[["top", "right"]].set_visible(False)
    return save_figure(fig, path, dpi=_DPI)
