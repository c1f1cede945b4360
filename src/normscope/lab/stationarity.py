"""Stationarity of a training window that can fail: ``stationary``, ``drifting`` or ``collapsed``.

Theorem 1 (docs/theory.md sections 1, 4: assumption A4) speaks of stationary norms of a *working*
encoder. A window of a tracked run is labelled by :func:`classify_window` from four checks, each
reported with its value and its rule:

1. **loss below chance**: the window's mean InfoNCE loss is at least ``loss_margin`` (a fraction)
   below the chance loss ``ln B`` of a batch of B pairs (every logit equal);
2. **items distinguishable**: the held-out retrieval accuracy (top-1 among ``n_eval`` candidates,
   chance ``1/n_eval``) has a 95 % Wilson interval above chance, and the probe items' time-averaged
   norms are not all equal (relative spread ``sd/mean >= min_spread``);
3. **mean R^2 stable**: the mean over probe items of R^2 in the second half of the window differs
   from the first half by at most ``tol`` (relative). A constant drift changes the halves by its
   rate times half the window, so a longer window makes the rule stricter, not looser;
4. **long enough**: the window starts at least ``min_relaxations`` relaxation times
   ``1/(2 eta lambda_rad)`` after the start of the run.

The label is ``collapsed`` when check 1 or 2 fails or a value is not finite (a collapsed run is
never called stationary, whatever its norms do), else ``drifting`` when check 3 or 4 fails, else
``stationary``. The audit of issue 27 found a tiny BERT whose six settings all collapsed to the
chance loss with identical embeddings while its mean R^2 doubled; that window is ``collapsed`` here.
"""

from __future__ import annotations

import math

import numpy as np

from normscope.lab.analysis import wilson_interval

__all__ = ["classify_window", "LABELS", "STATIONARITY_TOL", "LOSS_MARGIN", "MIN_SPREAD", "MIN_RELAXATIONS"]

#: labels of :func:`classify_window`
LABELS = ("stationary", "drifting", "collapsed")
#: largest relative change of the probe items' mean R^2 between the two halves of the window (3 %)
STATIONARITY_TOL = 0.03
#: the window's mean loss must lie at least this fraction below the chance loss ln B (10 %)
LOSS_MARGIN = 0.10
#: smallest relative spread sd/mean of the probe items' time-averaged norms (items not all equal)
MIN_SPREAD = 1e-3
#: the window must start at least this many relaxation times 1/(2 eta lambda_rad) into the run
MIN_RELAXATIONS = 1.0


def _check(passed: bool, value, rule: str) -> dict:
    return {"passed": bool(passed), "value": value, "rule": rule}


def classify_window(r2, loss, *, batch_size: int, accuracy: float | None = None, n_eval: int | None = None,
                    burn_in: int | None = None, relaxation_steps: float | None = None,
                    tol: float = STATIONARITY_TOL, loss_margin: float = LOSS_MARGIN, min_spread: float = MIN_SPREAD,
                    min_relaxations: float = MIN_RELAXATIONS,
                    relaxation_unit: str = "1/(2 eta lambda_rad)") -> dict:
    """Label a training window ``stationary``, ``drifting`` or ``collapsed`` (see the module docstring).

    Parameters
    ----------
    r2 : array_like of shape (n, P)
        Squared norms R^2 of the P probe items at n tracked steps of the window, in time order
        (float; n >= 2).
    loss : array_like of shape (m,)
        Training losses (InfoNCE, nats) of the window's steps.
    batch_size : int
        B pairs per step; the chance loss is ``ln B``.
    accuracy : float, optional
        Held-out top-1 retrieval accuracy at the end of the window (fraction); None skips that half
        of check 2.
    n_eval : int, optional
        Candidates (held-out pairs) behind ``accuracy``; chance is ``1/n_eval``.
    burn_in, relaxation_steps : optional
        The window's first step and the relaxation time ``1/(2 eta lambda_rad)`` in steps (E4); both
        needed for check 4 (skipped otherwise).
    tol, loss_margin, min_spread, min_relaxations : float
        The rules' constants (module defaults).
    relaxation_unit : str
        How ``relaxation_steps`` was defined, for the rule's text (``"1/(4 eta lambda_rad)"`` for SGD and heavy
        ball in the decisive design, whose relaxation unit is that of the scale's square).

    Returns
    -------
    dict
        ``label`` (one of :data:`LABELS`), ``passed`` (label == stationary), ``checks`` (name ->
        ``{passed, value, rule}``), ``reasons`` (one sentence per failed check) and the figures
        ``mean_r2_halves``, ``relative_change``, ``loss_mean``, ``chance_loss``, ``spread``,
        ``accuracy``, ``accuracy_ci``, ``relaxations_before_window``.
    """
    r2 = np.atleast_2d(np.asarray(r2, dtype=float))
    loss = np.asarray(loss, dtype=float).ravel()
    n = r2.shape[0]
    checks: dict = {}
    reasons: list[str] = []
    finite = bool(np.isfinite(r2).all() and np.isfinite(loss).all() and n >= 2 and loss.size >= 1)
    checks["finite"] = _check(finite, finite, "every tracked R^2 and loss finite, at least 2 tracked steps")
    if not finite:
        reasons.append("non-finite norms or losses, or fewer than 2 tracked steps: the run diverged or is empty")
    chance = math.log(batch_size)
    loss_mean = float(np.mean(loss)) if loss.size else float("nan")
    ok_loss = finite and loss_mean <= (1.0 - loss_margin) * chance
    checks["loss_below_chance"] = _check(ok_loss, loss_mean,
                                         f"mean loss <= (1 - {loss_margin:g}) ln B = {(1 - loss_margin) * chance:.4g}")
    if finite and not ok_loss:
        reasons.append(f"mean loss {loss_mean:.4g} is not {loss_margin:.0%} below the chance loss ln B = {chance:.4g}")
    rbar = np.sqrt(np.mean(r2, axis=0)) if finite else np.full(r2.shape[1], np.nan)
    spread = float(np.std(rbar) / np.mean(rbar)) if finite and np.mean(rbar) > 0 else float("nan")
    ok_spread = bool(np.isfinite(spread) and spread >= min_spread)
    checks["norms_differ"] = _check(ok_spread, spread, f"sd/mean of the items' time-RMS norms >= {min_spread:g}")
    if finite and not ok_spread:
        reasons.append(f"the probe items' norms are all equal (relative spread {spread:.2g} < {min_spread:g})")
    acc_ci = None
    if accuracy is not None and n_eval:
        k = int(round(float(accuracy) * n_eval))
        acc_ci = wilson_interval(k, int(n_eval))
        ok_acc = bool(acc_ci[0] > 1.0 / n_eval)
        checks["retrieval_above_chance"] = _check(
            ok_acc, float(accuracy), f"95% Wilson interval of held-out top-1 accuracy above chance 1/{n_eval}")
        if not ok_acc:
            reasons.append(f"held-out top-1 accuracy {accuracy:.3g} (Wilson [{acc_ci[0]:.3g}, {acc_ci[1]:.3g}]) is not "
                           f"above chance 1/{n_eval} = {1 / n_eval:.3g}")
    half = n // 2
    m1 = float(np.mean(r2[:half])) if finite and half else float("nan")
    m2 = float(np.mean(r2[n - half:])) if finite and half else float("nan")
    rel = m2 / m1 - 1.0 if finite and m1 > 0 else float("nan")
    ok_stable = bool(np.isfinite(rel) and abs(rel) <= tol)
    checks["mean_r2_stable"] = _check(ok_stable, rel, f"|mean R^2 (second half) / mean R^2 (first half) - 1| <= {tol:g}")
    if finite and not ok_stable:
        reasons.append(f"the probe items' mean R^2 changed by {rel:+.2%} between the two halves of the window "
                       f"(allowed {tol:.0%})")
    n_relax = None
    if burn_in is not None and relaxation_steps is not None:
        n_relax = float(burn_in) / float(relaxation_steps) if relaxation_steps > 0 else float("nan")
        ok_long = bool(np.isfinite(n_relax) and n_relax >= min_relaxations)
        checks["long_enough"] = _check(ok_long, n_relax,
                                       f"window start >= {min_relaxations:g} relaxation "
                                       f"{'time' if min_relaxations == 1 else 'times'} {relaxation_unit}")
        if not ok_long:
            reasons.append(f"the window starts after {n_relax:.2g} relaxation times (needs {min_relaxations:g})")
    collapsed = not (checks["finite"]["passed"] and checks["loss_below_chance"]["passed"]
                     and checks["norms_differ"]["passed"]
                     and checks.get("retrieval_above_chance", {"passed": True})["passed"])
    drifting = not (checks["mean_r2_stable"]["passed"] and checks.get("long_enough", {"passed": True})["passed"])
    label = "collapsed" if collapsed else "drifting" if drifting else "stationary"
    return {"label": label, "passed": label == "stationary", "checks": checks, "reasons": reasons,
            "mean_r2_halves": [m1 if np.isfinite(m1) else None, m2 if np.isfinite(m2) else None],
            "relative_change": rel if np.isfinite(rel) else None, "loss_mean": loss_mean if np.isfinite(loss_mean) else None,
            "chance_loss": chance, "spread": spread if np.isfinite(spread) else None,
            "accuracy": None if accuracy is None else float(accuracy), "accuracy_ci": acc_ci,
            "relaxations_before_window": n_relax}
