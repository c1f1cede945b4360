"""Figures of the probe: predicted vs observed norm, heat / drift / displacement panels."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from normscope._plot import pyplot, save_figure
from normscope.probes.result import ProbeResult

__all__ = ["plot_predicted_vs_observed", "plot_heat_drift"]


def plot_predicted_vs_observed(result: ProbeResult, path: str | Path) -> Path:
    """Scatter of predicted ``R_eq(x; c_fit)`` (E7) against the observed norm R, with y = x.

    Parameters
    ----------
    result : ProbeResult
    path : str or Path
        PNG output (written atomically).

    Returns
    -------
    Path
    """
    plt = pyplot()

    df = result.items
    ok = np.isfinite(df["r_eq_cfit"].to_numpy())
    fig, ax = plt.subplots(figsize=(5, 4.5))
    ax.scatter(df["r"][ok], df["r_eq_cfit"][ok], s=6, alpha=0.5, label=f"items (n={int(ok.sum())})")
    if ok.any():
        lo = float(min(df["r"][ok].min(), df["r_eq_cfit"][ok].min()))
        hi = float(max(df["r"][ok].max(), df["r_eq_cfit"][ok].max()))
        ax.plot([lo, hi], [lo, hi], "k--", lw=1, label="y = x")
    c = result.corr_req_norm or {}
    sp, ci = c.get("spearman"), (c.get("ci") or {}).get("spearman") or [None, None]
    title = result.model or ""
    if sp is not None:
        title += f"\nSpearman = {sp:.2f}" + (f" [{ci[0]:.2f}, {ci[1]:.2f}] (batches+items)" if ci[0] is not None else "")
    ax.set_title(title, fontsize=9)
    ax.set_xlabel("observed norm R = ||z||")
    ax.set_ylabel("predicted R_eq(x; c_fit) (E7)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    path = Path(path)
    return save_figure(fig, path, dpi=120, bbox_inches=None)


def plot_heat_drift(result: ProbeResult, path: str | Path) -> Path:
    """Three panels against the observed norm R: heat Sigma^2, drift D~, and the R-free displacement.

    The third panel is the circularity guard (heat = R^2 E||a||^2 contains R^2).

    Returns
    -------
    Path
    """
    plt = pyplot()

    df = result.items
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.8))
    panels = [
        ("heat", "heat Sigma^2 (R^4 per step)", "corr_norm_heat"),
        ("drift", "drift D~ (R^2 per step)", "corr_norm_drift"),
        ("displacement", "E||a||^2 (per unit eta^2)", "corr_norm_displacement"),
    ]
    for ax, (col, label, key) in zip(axes, panels):
        ax.scatter(df["r"], df[col], s=5, alpha=0.5)
        c = getattr(result, key) or {}
        if c.get("pearson") is not None:
            ax.set_title(f"Pearson {c['pearson']:.2f}, Spearman {c['spearman']:.2f}", fontsize=9)
        ax.set_xlabel("observed norm R = ||z||")
        ax.set_ylabel(label)
        if col != "drift" and (df[col] > 0).all():
            ax.set_yscale("log")
    fig.suptitle(f"{result.model}: B={result.batch_size}, K={result.batches}, eta={result.lr}", fontsize=9)
    fig.tight_layout()
    path = Path(path)
    return save_figure(fig, path, dpi=120, bbox_inches=None)
