"""The figure of ``normscope correlate --fig``: raw norm vs the covariate, with binned means."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from normscope.signals.labels import COVARIATE_LABEL
from normscope.signals.result import CorrelateResult
from normscope.validate import check_paths

__all__ = ["plot_signal"]


def plot_signal(result: CorrelateResult, path: str | Path, *, bins: int = 10) -> Path:
    """Norm vs covariate: items as faint points, binned means with 95% CIs, rho [CI] and n in the title.

    With strata (several sources) each source gets its own binned means and colour, and the title
    gives the source-controlled partial rho beside the pooled one.

    Parameters
    ----------
    result : CorrelateResult
        From :func:`normscope.signals.run_correlate` (``items`` columns ``covariate``, ``norm``,
        optionally ``stratum``).
    path : path-like
        Output image (format from the suffix, e.g. ``.png``, ``.pdf``); written atomically.
    bins : int, keyword-only
        Equal-count bins of the covariate (per source with strata).

    Returns
    -------
    pathlib.Path of the written figure.

    Raises
    ------
    InputError
        Output directory missing or not writable.
    """
    from normscope._plot import pyplot, save_figure  # deferred: not loaded at the CLI's start-up
    from normscope.stats import binned_means  # deferred: normscope.stats imports scipy, and this module loads at start-up

    path = check_paths([("figure", path, "figure")])[0]  # .png, .pdf or .svg, checked before drawing
    plt = pyplot()
    df = result.items
    x = df["covariate"].to_numpy(dtype=np.float64)
    y = df["norm"].to_numpy(dtype=np.float64)
    ok = np.isfinite(x) & np.isfinite(y)
    groups = ([(None, ok)] if "stratum" not in df or result.strata is None
              else [(s, ok & (df["stratum"] == s).to_numpy()) for s in sorted(df.loc[ok, "stratum"].unique())])
    fig, ax = plt.subplots(figsize=(6.4, 4.8), dpi=130)
    for k, (name, m) in enumerate(groups):
        color = "0.4" if name is None else f"C{k}"
        ax.scatter(x[m], y[m], s=4, alpha=0.15, color=color, linewidths=0,
                   label="items" if name is None else None)
        if m.sum() < 2:
            continue
        bm = binned_means(x[m], y[m], bins=bins)
        ax.errorbar(bm["x_mean"], bm["y_mean"], yerr=[bm["y_mean"] - bm["y_lo"], bm["y_hi"] - bm["y_mean"]],
                    fmt="o-", color="C3" if name is None else color, capsize=3,
                    label="binned mean (equal-count bins) ± 95% CI" if name is None else f"{name}: binned means ± 95% CI")
    ax.set_xlabel(result.covariate or COVARIATE_LABEL.get(result.signal, "covariate"))
    ax.set_ylabel("raw embedding norm ||z||")
    lo, hi = result.spearman_ci
    pooled = "pooled " if result.strata else ""
    what = "user covariate file" if result.dataset == "user covariate file" else result.signal
    title = (f"{what} · {result.model.split('/')[-1]}\n"
             f"{pooled}Spearman ρ = {result.spearman:.3f} [{lo:.3f}, {hi:.3f}], n = {result.n}")
    part = result.partial_spearman
    if part and part.get("rho") is not None:
        title += f"\npartial ρ | {'+'.join(part['controls'])} = {part['rho']:.3f}"
        if part.get("ci") and part["ci"][0] is not None:
            title += f" [{part['ci'][0]:.3f}, {part['ci'][1]:.3f}], n = {part['n']}"
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=8, loc="best")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return save_figure(fig, path, dpi=None, bbox_inches=None)
