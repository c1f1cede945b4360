"""The figure of ``normscope tokens --fig``: row norm against Zipf frequency, and row norms per kind."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from normscope._plot import pyplot, save_figure
from normscope.tokens.result import TokensResult
from normscope.validate import check_output_path

__all__ = ["plot_tokens"]

_COLORS = {"word": "C0", "subword": "C1", "special": "C3", "unused": "C2"}
_LINES = {"word": "navy", "subword": "saddlebrown"}


def plot_tokens(result: TokensResult, path: str | Path) -> Path:
    """Left: row norm ||E[t]|| against Zipf frequency (words and ``##`` pieces, binned medians).
    Right: row norms per kind (box plots; never-used rows beside used ones).

    Parameters
    ----------
    result : TokensResult
    path : path-like
        Output image (format from the suffix); written atomically.

    Returns
    -------
    pathlib.Path

    Raises
    ------
    InputError
        Output directory missing or not writable.
    """
    path = check_output_path(path)
    plt = pyplot()
    t = result.items
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(9.0, 3.6), dpi=130)
    for kind in ("word", "subword"):
        s = t[(t["kind"] == kind) & np.isfinite(t["zipf"])]
        if len(s) == 0:
            continue
        r = (result.frequency.get(kind) or {}).get("spearman")
        label = f"{kind} (n = {len(s):,}" + (f", Spearman {r:+.2f})" if r is not None else ")")
        ax.scatter(s["zipf"], s["norm"], s=2, alpha=0.15, color=_COLORS[kind], rasterized=True)
        edges = np.quantile(s["zipf"], np.linspace(0, 1, 16))
        idx = np.clip(np.searchsorted(edges, s["zipf"], side="right") - 1, 0, len(edges) - 2)
        mids = [s["zipf"][idx == b].median() for b in range(len(edges) - 1) if (idx == b).any()]
        meds = [s["norm"][idx == b].median() for b in range(len(edges) - 1) if (idx == b).any()]
        ax.plot(mids, meds, "o-", ms=3, color=_LINES[kind], label=label)
    ax.set_xlabel("Zipf frequency of the token's string (wordfreq)")
    ax.set_ylabel("row norm ||E[t]||")
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    ax.set_title("norm vs frequency (lines: binned medians)", fontsize=9)
    kinds = [k for k in ("word", "subword", "special", "unused") if result.counts.get(k)]
    bx.boxplot([t.loc[t["kind"] == k, "norm"].to_numpy() for k in kinds], showfliers=False)
    bx.set_xticks(range(1, len(kinds) + 1), [f"{k}\n(n = {result.counts[k]:,})" for k in kinds], fontsize=8)
    if result.init_norm is not None:
        bx.axhline(result.init_norm, color="0.4", lw=1, ls=":", label=f"init sd·√d = {result.init_norm:.3f}")
        bx.legend(fontsize=7)
    bx.set_ylabel("row norm ||E[t]||")
    bx.set_title("row norms per kind", fontsize=9)
    bx.grid(alpha=0.3)
    fig.suptitle(f"input embedding table · {result.model.split('/')[-1]} ({result.n_rows:,} x {result.dim})", fontsize=9)
    fig.tight_layout()
    fmt = path.suffix.lstrip(".").lower() or "png"
    return save_figure(fig, path, dpi=None, format=fmt, bbox_inches=None)
