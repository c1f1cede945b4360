"""The figure of ``normscope similarity --fig``: fit curves and the difference to cosine on the evaluated pairs."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from normscope._plot import pyplot, save_figure
from normscope.similarity.result import SimilarityResult
from normscope.validate import check_paths

__all__ = ["plot_similarity"]


def plot_similarity(result: SimilarityResult, path: str | Path) -> Path:
    """Left: Spearman on the fit pairs against each parametric scorer's parameter (fitted value marked).
    Right: Spearman difference to cosine on the evaluated pairs, with paired bootstrap 95% CIs.

    Parameters
    ----------
    result : SimilarityResult
        From :func:`normscope.similarity.run_similarity`.
    path : path-like
        Output image (format from the suffix); written atomically.

    Returns
    -------
    pathlib.Path of the written figure.

    Raises
    ------
    InputError
        Output directory missing or not writable.
    """
    path = check_paths([("figure", path, "figure")])[0]  # .png, .pdf or .svg, checked before drawing
    plt = pyplot()
    fitted = {k: v for k, v in result.scorers.items() if v.get("param_name")}
    fig, axes = plt.subplots(1, len(fitted) + 1, figsize=(3.4 * (len(fitted) + 1), 3.4), dpi=130, squeeze=False)
    axes = axes[0]
    norm_max = float(result.fit.get("norm_max") or 1.0)
    for ax, (name, s) in zip(axes, fitted.items()):
        x = np.array([c["param"] for c in s["curve"]], dtype=np.float64)
        y = np.array([np.nan if c["spearman"] is None else c["spearman"] for c in s["curve"]], dtype=np.float64)
        if name == "inverse_norm":
            # the grid is alpha = s / max||z||: plot the dimensionless s = alpha max||z||
            x, best = x * norm_max, s["param"] * norm_max
            ax.set_xscale("symlog", linthresh=0.1)
            ticks = [-1, -0.1, 0, 0.1, 1, 10]
            ax.set_xticks(ticks, [f"{t:g}" for t in ticks])
            ax.set_xlabel("alpha · max||z||")
        else:
            best = s["param"]
            ax.set_xlabel(s["param_name"])
        ax.plot(x, y, "o-", ms=3, color="C0")
        ax.axvline(best, color="C3", lw=1, ls="--", label=f"fitted {s['param_name']} = {s['param']:.3g}")
        ax.axhline(result.scorers["cosine"]["fit_spearman"], color="0.5", lw=1, label="cosine")
        ax.set_title(f"{name}: fit pairs (n = {result.fit.get('n_pairs')})", fontsize=9)
        ax.set_ylabel("Spearman ρ with human scores")
        ax.legend(fontsize=7)
        ax.grid(alpha=0.3)
    ax = axes[-1]
    names = [k for k in result.scorers if k != "cosine"]
    d = np.array([result.scorers[k]["delta_spearman"] for k in names], dtype=np.float64)
    ci = np.array([result.scorers[k]["delta_ci"] or [np.nan, np.nan] for k in names], dtype=np.float64)
    ax.errorbar(np.arange(len(names)), d, yerr=[d - ci[:, 0], ci[:, 1] - d], fmt="o", capsize=4, color="C3")
    ax.axhline(0, color="0.3", lw=1)
    ax.set_xticks(np.arange(len(names)), names, fontsize=8)
    ax.set_ylabel("Δ Spearman vs cosine (95% CI)")
    ax.set_title(f"evaluated pairs (n = {result.n_pairs})", fontsize=9)
    ax.grid(alpha=0.3)
    fig.suptitle(f"{Path(result.dataset).name} · {result.model.split('/')[-1]}", fontsize=9)
    fig.tight_layout()
    return save_figure(fig, path, dpi=None, bbox_inches=None)
