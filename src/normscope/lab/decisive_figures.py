"""Figures of the decisive transformer design, drawn from its JSON (``DecisiveResult.to_dict()`` or a stored result).

Each function writes one PNG atomically (:func:`normscope._plot.save_figure`) and returns its path;
they need only the dict, so the report draws the stored full design's figures as well as its own.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from normscope._plot import pyplot, save_figure
from normscope.errors import InputError

__all__ = ["plot_decisive_trajectories", "plot_decisive_prediction", "plot_lambda_scaling"]

_MARK = {"sgd": ("o", "C0"), "momentum": ("s", "C1"), "adamw": ("^", "C2")}


def _base(d: dict) -> dict:
    base = d.get("base") or {}
    if not base:
        raise InputError("the design result has no base runs")
    return base


def plot_decisive_trajectories(d: dict, path) -> Path:
    """Mean norm over the probe items (left) and training loss (right) of the base runs; windows shaded.

    Raises
    ------
    InputError
        No base run in ``d``.
    """
    base = _base(d)
    plt = pyplot()
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(10.0, 3.8))
    for opt, b in base.items():
        cur = b.get("curve") or {}
        _m, col = _MARK.get(opt, ("o", "C3"))
        lab = f"{opt} ({b['label']}; eta {b['eta']:g}, lambda {b['lambda']:.3g})"
        ax.plot(cur.get("steps", []), cur.get("mean_r", []), color=col, lw=1.0, label=lab)
        ax.axvspan(b["burn_in"], b["steps"], color=col, alpha=0.06)
        bx.plot(cur.get("loss_steps", []), cur.get("loss", []), color=col, lw=0.8, label=opt)
    chance = next(iter(base.values()))["loss"]["chance"]
    bx.axhline(chance, color="grey", ls="--", lw=0.8, label="chance ln B")
    ax.set_xlabel("training step (shaded: the measurement window)")
    ax.set_ylabel("mean norm R over probe items")
    ax.legend(frameon=False, fontsize=7)
    bx.set_xlabel("training step")
    bx.set_ylabel("InfoNCE loss")
    bx.legend(frameon=False, fontsize=7)
    fig.tight_layout()
    return save_figure(fig, Path(path), dpi=120, bbox_inches=None)


def plot_decisive_prediction(d: dict, path) -> Path:
    """Predicted R_eq (E7, snapshot probes, no fitted constant) against each item's time-averaged norm R-bar.

    Raises
    ------
    InputError
        No base run with a prediction.
    """
    base = _base(d)
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5.6, 5.2))
    vals = []
    for opt, b in base.items():
        per = (b.get("prediction") or {}).get("per_item")
        if not per:
            continue
        x = np.asarray(per["r_bar"], dtype=float)
        y = np.asarray(per["r_eq"], dtype=float)
        ok = np.isfinite(x) & np.isfinite(y)
        m, col = _MARK.get(opt, ("o", "C3"))
        st = b["prediction"]["stats"]
        lab = f"{opt}: mean |rel| {st['mean_abs_rel_error']:.3f}" if st.get("mean_abs_rel_error") is not None else opt
        ax.scatter(x[ok], y[ok], s=16, marker=m, color=col, alpha=0.8 if opt == "sgd" else 0.5, label=lab)
        vals += [x[ok], y[ok]]
    if not vals:
        raise InputError("no base run has a snapshot prediction")
    v = np.concatenate(vals)
    v = v[v > 0]
    lo, hi = float(v.min()), float(v.max())
    ax.plot([lo, hi], [lo, hi], color="grey", ls="--", lw=1, label="R_eq = R-bar")
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    ax.set_xscale("log")
    ax.set_yscale("log")
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        axis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:g}"))
        axis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("time-averaged norm R-bar over the window (log)")
    ax.set_ylabel("predicted R_eq (E7), c = eta lambda_rad (E4) (log)")
    ax.set_title("Theorem 1 per item (AdamW: SGD formula, not expected)", fontsize=9)
    ax.legend(frameon=False, fontsize=7, loc="lower right")
    fig.tight_layout()
    return save_figure(fig, Path(path), dpi=120, bbox_inches=None)


def plot_lambda_scaling(d: dict, path) -> Path:
    """log s (the decayed scale ||theta_D||) against log lambda per optimizer: the measured points and OLS slope, and
    the slope predicted before the scaled runs (dashed, through the same centre); a result without the scale's fit
    (design version 1) shows the items' mean log R-bar instead, and the axis says which.

    Raises
    ------
    InputError
        No scaling fit in ``d``.
    """
    sc = d.get("scaling") or {}
    if not sc:
        raise InputError("the design result has no lambda-scaling fits")
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.0, 4.4))
    scale = all(s.get("scale_fit") for s in sc.values())
    for opt, s in sc.items():
        f = s["scale_fit"] if scale else s["fit"]
        x = np.asarray(f["log_lambda"])
        y = np.asarray(f["mean_log_r"]) - float(np.mean(f["mean_log_r"]))  # centred: optimizers share one axis
        m, col = _MARK.get(opt, ("o", "C3"))
        xc = x - x.mean()
        ax.plot(x, y, m, color=col, label=f"{opt}: slope {f['slope']:.3f} [{f['ci'][0]:.3f}, {f['ci'][1]:.3f}]")
        ax.plot(x, f["slope"] * xc, color=col, lw=1)
        e = (s.get("prediction") or {}).get("exponent")
        if e is not None:
            ax.plot(x, e * xc, color=col, lw=1, ls="--", label=f"{opt}: predicted {e:.3f}")
    ax.set_xlabel("log lambda (eta fixed)")
    ax.set_ylabel("log s = log ||theta_D|| (centred)" if scale else "mean log R-bar over probe items (centred)")
    ax.legend(frameon=False, fontsize=7)
    fig.tight_layout()
    return save_figure(fig, Path(path), dpi=120, bbox_inches=None)
