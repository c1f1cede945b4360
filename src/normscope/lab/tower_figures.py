"""Figures of the frozen-tower arm (:mod:`normscope.lab.tower`): R_eq against R-bar, and the norms over training."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from normscope._plot import pyplot, save_figure
from normscope.errors import InputError

__all__ = ["plot_tower_prediction", "plot_tower_trajectories"]


def plot_tower_prediction(result, path) -> Path:
    """Scatter of each noun's predicted R_eq (E2) against its time-RMS norm R-bar, one colour per number of senses.

    Parameters
    ----------
    result : TowerLabResult
    path : str or Path
        The PNG (written atomically).

    Returns
    -------
    Path
    """
    it = result.items
    if it.empty:
        raise InputError("the result has no per-noun table")
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5.2, 5.0))
    for a, g in it.groupby("senses"):
        ax.scatter(g["r_obs"], g["r_eq"], s=12, label=f"{a} sense{'s' if a > 1 else ''}")
    lo = float(np.nanmin([it["r_obs"].min(), it["r_eq"].min()]))
    hi = float(np.nanmax([it["r_obs"].max(), it["r_eq"].max()]))
    ax.plot([lo, hi], [lo, hi], color="grey", lw=1, ls="--", label="R_eq = R-bar")
    ax.set_xlabel("observed norm R-bar (time-RMS over the window)")
    ax.set_ylabel("R_eq = (heat / 2c)^(1/4), no fitted constant")
    ax.set_title(f"frozen tower, SGD: mean |rel| {result.mean_abs_rel_error:.3f}, Pearson {result.pearson:.3f}")
    ax.legend(frameon=False, loc="upper left")
    fig.tight_layout()
    return save_figure(fig, Path(path), dpi=120, bbox_inches=None)


def plot_tower_trajectories(result, path) -> Path:
    """Mean norm per number of senses over the steps of each run (SGD solid, controls thinner); the window start.

    Parameters
    ----------
    result : TowerLabResult
    path : str or Path

    Returns
    -------
    Path
    """
    tr = result.trajectories
    if tr.empty:
        raise InputError("the result has no trajectories")
    plt = pyplot()
    runs = list(dict.fromkeys(tr["run"]))
    fig, axes = plt.subplots(1, len(runs), figsize=(3.2 * len(runs), 3.4), squeeze=False)
    for ax, run in zip(axes[0], runs):
        for a, g in tr[tr["run"] == run].groupby("senses"):
            ax.plot(g["step"], g["r_mean"], label=f"{a} sense{'s' if a > 1 else ''}")
        ax.axvline(result.burn_in, color="grey", ls="--", lw=1)
        ax.set_title(run)
        ax.set_xlabel("step")
    axes[0][0].set_ylabel("mean norm R")
    axes[0][-1].legend(frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    fig.tight_layout()
    return save_figure(fig, Path(path), dpi=120)
