"""Figures of the transformer lab: trajectories with their predicted R_eq, predicted vs final, optimizers.

Each function writes one PNG atomically (:func:`normscope._plot.save_figure`) and returns its path.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from normscope._plot import pyplot, save_figure
from normscope.errors import InputError

__all__ = ["example_items", "plot_transformer_trajectories", "plot_predicted_vs_final", "plot_optimizer_comparison"]


def example_items(result, n: int = 6) -> list[int]:
    """Row indices of ``n`` probe items spread over the step-0 R_eq (quantiles among items with a prediction).

    Chosen by value, not by position, so the same items are shown whatever the order of the probe set.
    """
    it = result.items
    r_eq = it["r_eq0"].to_numpy(dtype=float)
    ok = np.flatnonzero(np.isfinite(r_eq))
    if ok.size == 0:
        ok = np.arange(len(it))
        key = it["r0"].to_numpy(dtype=float)
    else:
        key = r_eq
    order = ok[np.lexsort((it["text"].to_numpy(dtype=str)[ok], key[ok]))]
    pos = np.unique(np.round(np.linspace(0, order.size - 1, min(n, order.size))).astype(int))
    return [int(order[i]) for i in pos]


def plot_transformer_trajectories(result, path, *, n: int = 6) -> Path:
    """R_t of a few probe items over training, each with its step-0 R_eq (dashed, same colour).

    The window start and one relaxation time ``1/(2 eta lambda_rad)`` are marked.

    Raises
    ------
    InputError
        The result has no tracked norms (tracking off).
    """
    if result.norms is None or result.items.empty:
        raise InputError("the result has no tracked norms (run with track=True)")
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7.0, 4.4))
    steps = np.arange(result.norms.shape[0])
    for j, i in enumerate(example_items(result, n)):
        colour = f"C{j}"
        row = result.items.iloc[i]
        ax.plot(steps, result.norms[:, i], color=colour, lw=1.0, label=f"{row['text'][:18]}")
        if np.isfinite(row["r_eq0"]):
            ax.axhline(row["r_eq0"], color=colour, ls="--", lw=1.0)
    ax.axvline(result.burn_in, color="grey", ls=":", lw=1, label="window start")
    if result.relaxation_steps is not None and result.relaxation_steps <= steps[-1]:
        ax.axvline(result.relaxation_steps, color="black", ls="-.", lw=0.8, label="1 relaxation time")
    ax.set_xlabel("training step")
    ax.set_ylabel("embedding norm R")
    ax.set_title(f"{result.optimizer}: eta={result.lr:g}, lambda={result.weight_decay:g} (dashed: step-0 R_eq)")
    ax.legend(frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, fontsize=8)
    return save_figure(fig, Path(path), dpi=120)


def plot_predicted_vs_final(result, path) -> Path:
    """Step-0 predicted R_eq (x) against the norm at step 0 (hollow) and at the end (filled), one item each.

    Raises
    ------
    InputError
        The result has no per-item estimates.
    """
    it = result.items
    if it.empty:
        raise InputError("the result has no per-item estimates (run with track=True)")
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5.4, 5.0))
    ok = np.isfinite(it["r_eq0"].to_numpy(dtype=float))
    x = it["r_eq0"][ok]
    for a, b, c in zip(x, it["r0"][ok], it["r_final"][ok]):
        ax.plot([a, a], [b, c], color="lightgrey", lw=0.8, zorder=1)
    ax.scatter(x, it["r0"][ok], s=14, facecolors="none", edgecolors="grey", label="step 0", zorder=2)
    ax.scatter(x, it["r_final"][ok], s=14, color="C0", label=f"step {result.steps}", zorder=3)
    vals = np.concatenate([x, it["r0"][ok], it["r_final"][ok]]) if ok.any() else np.array([0.0, 1.0])
    lo, hi = float(np.min(vals)), float(np.max(vals))
    ax.plot([lo, hi], [lo, hi], color="grey", ls="--", lw=1, label="R = R_eq")
    ax.set_xlabel("predicted R_eq at step 0 (E7)")
    ax.set_ylabel("observed norm R")
    rho, ci = result.spearman_predicted_vs_final, result.spearman_predicted_vs_final_ci
    title = f"{result.optimizer}: Spearman(R_eq, final R) "
    title += "n/a" if rho is None else f"{rho:.2f}" + (f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci and None not in ci else "")
    ax.set_title(title, fontsize=10)
    ax.legend(frameon=False, loc="upper left", fontsize=8)
    fig.tight_layout()
    return save_figure(fig, Path(path), dpi=120, bbox_inches=None)


def plot_optimizer_comparison(results, path) -> Path:
    """Left: median R_t / R_0 over the probe items per optimizer. Right, per optimizer with 95 % intervals:
    the partial Spearman(step-0 R_eq, final R | R_0) (bootstrap over items) and the fraction of items
    moved toward their R_eq (Wilson), beside the fraction moved toward a common target (the median
    R_eq; hollow marker, its baseline).

    Parameters
    ----------
    results : sequence of TransformerLabResult
    path : path of the PNG

    Raises
    ------
    InputError
        No result with tracked norms.
    """
    results = [r for r in results if r.norms is not None]
    if not results:
        raise InputError("no tracked run to compare")
    plt = pyplot()
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(10.0, 4.0))
    for j, r in enumerate(results):
        rel = np.median(r.norms / r.norms[0], axis=1)
        ax.plot(np.arange(rel.size), rel, color=f"C{j}", label=f"{r.optimizer} (eta {r.lr:g}, lambda {r.weight_decay:g})")
    ax.axhline(1.0, color="grey", lw=0.8)
    ax.set_xlabel("training step")
    ax.set_ylabel("median R_t / R_0 over probe items")
    ax.legend(frameon=False, fontsize=8)
    for j, r in enumerate(results):
        m = r.motion or {}
        for k, (val, ci, hollow) in enumerate((
            (m.get("partial_spearman_predicted_vs_final_given_start"),
             m.get("partial_spearman_predicted_vs_final_given_start_ci"), False),
            (r.fraction_moved_toward_req, r.fraction_moved_toward_req_ci, False),
            (m.get("fraction_moved_toward_common_target"), m.get("fraction_moved_toward_common_target_ci"), True),
        )):
            if val is None:
                continue
            xpos = min(k, 1) + (j - (len(results) - 1) / 2) * 0.2 + (0.07 if hollow else 0.0)
            err = None
            if ci and None not in ci:
                err = [[val - ci[0]], [ci[1] - val]]
            bx.errorbar([xpos], [val], yerr=err, fmt="o", color=f"C{j}", capsize=3,
                        mfc="none" if hollow else f"C{j}", alpha=0.6 if hollow else 1.0)
    bx.set_xticks([0, 1])
    bx.set_xticklabels(["partial Spearman(R_eq at step 0, final R | R_0)",
                        "fraction moved toward R_eq\n(hollow: toward the median R_eq)"], fontsize=8)
    bx.axhline(0.0, color="grey", lw=0.8)
    bx.axhline(0.5, color="grey", lw=0.8, ls=":")
    bx.set_title("95% intervals: bootstrap over items / Wilson", fontsize=9)
    fig.tight_layout()
    return save_figure(fig, Path(path), dpi=120, bbox_inches=None)
