"""Figures of the calibration study: reliability diagrams and risk-coverage curves."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from normscope._plot import pyplot, save_figure
from normscope.errors import InputError
from normscope.validate import check_output_path

__all__ = ["plot_reliability", "plot_risk_coverage"]


def _calibration_of(obj) -> dict:
    if hasattr(obj, "calibration") and isinstance(obj.calibration, dict):
        return obj.calibration
    if isinstance(obj, dict) and isinstance(obj.get("calibration"), dict):
        return obj["calibration"]
    if isinstance(obj, dict):
        return obj
    raise InputError("expected a RetrievalResult, its to_dict() summary, or its 'calibration' dict")


def _start(result, path):
    """(pyplot, checked output path, calibration dict): the common start of both figures."""
    return pyplot(), check_output_path(path), _calibration_of(result)


def _num(x, fmt=".3f") -> str:
    return "n/a" if x is None else format(float(x), fmt)


def plot_reliability(result, path, *, signals: Sequence[str] | None = None, ncols: int = 2) -> Path:
    """Reliability diagrams (15 bins) of the confidence signals, ``ncols`` panels per row; writes a PNG.

    Each panel: the fraction of queries whose cosine top-1 is relevant in each confidence bin (bars,
    dashed diagonal = perfect calibration), and under it the number of queries per bin (so no count
    label can overlap another). Signals that were not computed get a panel saying why.

    Parameters
    ----------
    result : RetrievalResult, dict
        :func:`normscope.retrieval.run_retrieval` result, its ``to_dict()``, or its ``calibration`` dict.
    path : str or Path
    signals : sequence of str, keyword-only, optional
        Default: every signal.
    ncols : int, keyword-only
        Panels per row (1 or 2 keep the axis text readable at full page width).

    Returns
    -------
    Path
    """
    from matplotlib.gridspec import GridSpec

    plt, path, cal = _start(result, path)
    signals = list(signals or cal)
    missing = [s for s in signals if s not in cal]
    if missing or not signals:
        raise InputError(f"no calibration entry for {missing or 'any signal'}")
    cols = max(1, min(int(ncols), len(signals)))
    rows = int(np.ceil(len(signals) / cols))
    fig = plt.figure(figsize=(6.2 * cols, 5.4 * rows), layout="constrained")
    gs = GridSpec(2 * rows, cols, figure=fig, height_ratios=[3, 1] * rows)
    for i, s in enumerate(signals):
        r, c = divmod(i, cols)
        ax = fig.add_subplot(gs[2 * r, c])
        axn = fig.add_subplot(gs[2 * r + 1, c], sharex=ax)
        e = cal[s]
        if e.get("status", "ok") != "ok" or not e.get("reliability"):
            ax.text(0.5, 0.5, f"{s}\nnot computed:\n{e.get('reason')}", ha="center", va="center", wrap=True, fontsize=11)
            ax.set_axis_off()
            axn.set_axis_off()
            continue
        rel = e["reliability"]
        edges = np.asarray(rel["edges"])
        mids = (edges[:-1] + edges[1:]) / 2
        width = edges[1] - edges[0]
        acc = np.array([np.nan if a is None else a for a in rel["accuracy"]], dtype=float)
        cnt = np.asarray(rel["count"], dtype=float)
        ok = cnt > 0
        ax.bar(mids[ok], acc[ok], width=width, edgecolor="k", alpha=0.75, label="fraction relevant per bin")
        ax.plot([0, 1], [0, 1], "k--", lw=1, label="perfect calibration")
        bins = e.get("ece_bins") or {}
        ax.set_title(f"{s}\nECE {_num(e.get('ece'))} from {bins.get('populated_bins', '?')} of {len(cnt)} bins, "
                     f"AUROC {_num(e.get('auroc'))}", fontsize=12)
        ax.set_ylabel("fraction top-1 relevant", fontsize=11)
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.tick_params(labelsize=10, labelbottom=False)
        axn.bar(mids, cnt, width=width, color="grey", edgecolor="k")
        axn.set_ylabel("queries", fontsize=11)
        axn.set_xlabel("confidence (probability that the top-1 is relevant)", fontsize=11)
        axn.tick_params(labelsize=10)
        if i == 0:
            ax.legend(fontsize=10, loc="upper left")
    return save_figure(fig, path, dpi=110, bbox_inches=None)


def plot_risk_coverage(result, path, *, signals: Sequence[str] | None = None) -> Path:
    """Risk-coverage curves (error rate of the top-1 vs fraction of queries answered); writes a PNG.

    Parameters
    ----------
    result : RetrievalResult, dict
        As for :func:`plot_reliability`.
    path : str or Path
    signals : sequence of str, keyword-only, optional
        Default: every computed signal.

    Returns
    -------
    Path
    """
    plt, path, cal = _start(result, path)
    signals = [s for s in (signals or cal) if cal.get(s, {}).get("risk_coverage")]
    if not signals:
        raise InputError("no computed calibration signal to plot")
    fig, ax = plt.subplots(figsize=(9, 5.5), layout="constrained")
    for s in signals:
        rc = cal[s]["risk_coverage"]
        ax.plot(rc["coverage"], rc["risk"], lw=1.5, label=f"{s} (AURC {_num(cal[s].get('aurc'))})")
    full_risk = cal[signals[0]]["risk_coverage"]["risk"][-1]
    ax.axhline(full_risk, color="grey", ls=":", lw=1, label=f"no selection (risk {full_risk:.3f})")
    ax.set_xlabel("coverage (fraction of queries answered)", fontsize=11)
    ax.set_ylabel("risk (fraction with a non-relevant top-1)", fontsize=11)
    ax.tick_params(labelsize=10)
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.legend(fontsize=9, loc="center left", bbox_to_anchor=(1.01, 0.5))
    return save_figure(fig, path, dpi=110, bbox_inches=None)
