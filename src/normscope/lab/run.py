"""``run_lab``: train a small contrastive model and test Theorem 1 (docs/theory.md) end to end.

The run trains for ``steps`` steps; the last ``steps - burn_in`` form the measurement window.
Over the window it tracks every item's norm R (the observed value is the time-RMS norm
``sqrt(<R^2>_t)``) and estimates heat Sigma^2 and drift D~ with one of two estimators:

- ``"snapshot"`` (docs/theory.md sections 4 and 6, result 7A): at S evenly spaced states, K virtual
  probe batches each; per state ``Sigma^2_s = R_s^2 mean_k ||Delta_k||^2`` and
  ``D~_s = mean_k <z, Delta_k>``, averaged over the S states; R_eq from (E7).
- ``"trajectory"`` (section 2 and 7B): every actual step is the probe (K = 1): the displacement
  ``Delta~_t = f_{theta_t - eta~ s_t} - z_t`` at the probe step ``eta~ = eta/(1 - eta lambda)``,
  with ``s_t`` the optimizer's actual direction, so the exact k-homogeneous row (E5) applies to
  any optimizer. ``D~ = <<z, Delta~>>_t``, ``Sigma^2 = <R^2>_t <||Delta~||^2>_t``, and
  ``q/c`` (E9) measures the balance.

Relative error convention: ``(R_eq - R_obs) / R_obs``.
"""

from __future__ import annotations

import dataclasses
import math
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from normscope import theory
from normscope._plot import pyplot, save_figure
from normscope.errors import InputError
from normscope.lab.data import PairData, synthetic_data, wordnet_data
from normscope.lab.encoders import MLPTwoTower, TableEncoder
from normscope.lab.optim import DEFAULTS, make_optimizer
from normscope._progress import Tracker
from normscope.lab.result import LabResult
from normscope.requests.lab import LabRequest

__all__ = ["LabResult", "run_lab", "plot_trajectories", "plot_predicted_vs_observed", "GATE"]

#: docs/theory.md section 7A gate on the averaged estimator
GATE = {"mean_abs_rel_error": 0.05, "abs_median_rel_error": 0.02, "pearson": 0.95}

_RUN_DEFAULTS = {
    "table": {"steps": 12000, "burn_in": 4000, "estimator": "snapshot", "snapshots": 32, "probe_batches": 100},
    "mlp": {"steps": 8000, "burn_in": 3000, "estimator": "trajectory", "snapshots": 16, "probe_batches": 50},
}


def _float(x) -> float | None:
    x = float(x)
    return x if math.isfinite(x) else None


def _agreement(r_eq: np.ndarray, r_obs: np.ndarray) -> dict:
    from scipy import stats

    rel = (r_eq - r_obs) / r_obs
    ok = np.isfinite(rel)
    out = {
        "mean_abs_rel_error": _float(np.mean(np.abs(rel[ok]))) if ok.any() else None,
        "median_rel_error": _float(np.median(rel[ok])) if ok.any() else None,
        "max_abs_rel_error": _float(np.max(np.abs(rel[ok]))) if ok.any() else None,
        "pearson": None,
        "spearman": None,
    }
    if ok.sum() >= 3 and np.ptp(r_eq[ok]) > 0 and np.ptp(r_obs[ok]) > 0:
        out["pearson"] = _float(stats.pearsonr(r_eq[ok], r_obs[ok])[0])
        out["spearman"] = _float(stats.spearmanr(r_eq[ok], r_obs[ok])[0])
    return out


def _corr(a, b):
    from scipy import stats

    ok = np.isfinite(a) & np.isfinite(b)
    if ok.sum() < 3 or np.ptp(a[ok]) == 0 or np.ptp(b[ok]) == 0:
        return None
    return _float(stats.pearsonr(a[ok], b[ok])[0])


def _make_data(data, *, n_items, n_concepts, seed) -> PairData:
    if isinstance(data, PairData):
        return data
    if data == "synthetic":
        return synthetic_data(n_items, n_concepts, seed=seed)
    if data == "wordnet":
        return wordnet_data(n_items, seed=seed)
    raise InputError(f"data must be 'synthetic', 'wordnet' or a PairData, got {data!r}")


def run_lab(request: LabRequest | None = None, *, data: PairData | None = None, progress: bool = False,
            num_threads: int | None = 1) -> LabResult:
    """Train a contrastive model with per-item tracking of R, heat, drift and predicted R_eq.

    Parameters
    ----------
    request : LabRequest, optional
        The settings (:class:`~normscope.requests.lab.LabRequest`; default: the free table with SGD,
        docs/theory.md 7A). ``encoder``: free embedding table (k=1, 7A) or two-tower bias-free ReLU MLP
        (k=2, 7B). ``dataset``: synthetic controlled ambiguity, or WordNet 3.0 nouns
        (:mod:`normscope.lab.data`). ``optimizer``: all with exactly decoupled decay
        (:mod:`normscope.lab.optim`). ``lr``, ``weight_decay``: eta and lambda; defaults per encoder and
        optimizer in ``normscope.lab.optim.DEFAULTS`` (table SGD: eta=1, lambda=1e-3; MLP SGD: eta=0.5,
        lambda=2e-3). ``steps``, ``burn_in``: total steps and the steps before the measurement window
        (table 12000/4000, MLP 8000/3000). ``seed``: data, initialisation and batches (deterministic).
        ``estimator``: default "snapshot" for the table, "trajectory" for the MLP. ``snapshots``,
        ``probe_batches``: S states and K virtual batches per state (table 32 x 100). ``n_items``,
        ``n_concepts``, ``dim``, ``tau``, ``batch_size``: N, concepts (synthetic), d, temperature, B
        (7A: 256, 32, 16, 0.1, 64). ``beta``: momentum coefficient. ``hidden``, ``input_dim``: MLP widths.
        ``record_every``: trajectory recording interval (default ``steps // 400``). ``track``: False trains
        without any tracking (for the speed benchmark); the summary then has no agreement figures.
    data : PairData, optional, keyword-only
        Pair data to train on instead of ``request.dataset``'s.
    progress : bool, keyword-only
        Progress on stderr.
    num_threads : int or None, keyword-only
        torch intra-op threads during the run (restored after). The lab's tensors are tiny, so
        one thread is fastest; torch's parallel ``index_add_`` was 10^4 x slower on a busy
        2-core machine. None leaves torch's setting alone.

    Returns
    -------
    LabResult
        Typed summary fields (``to_dict()`` is the ``--json`` summary) with ``items`` and
        ``trajectories``; seconds in ``timings`` (``wall_s``, ``cpu_s``, ``steps_per_s``), apart
        from the results.

    Raises
    ------
    InputError
        Unknown choice or inconsistent sizes (e.g. ``burn_in >= steps``).
    DataError
        ``data="wordnet"`` and WordNet 3.0 cannot be found.
    """
    old_threads = torch.get_num_threads()
    if num_threads is not None:
        torch.set_num_threads(int(num_threads))
    r = request if request is not None else LabRequest()
    try:
        return _run_lab(encoder=r.encoder, data=data if data is not None else r.dataset, optimizer=r.optimizer,
                        lr=r.lr, weight_decay=r.weight_decay, steps=r.steps, burn_in=r.burn_in, seed=r.seed,
                        estimator=r.estimator, snapshots=r.snapshots, probe_batches=r.probe_batches,
                        n_items=r.n_items, n_concepts=r.n_concepts, dim=r.dim, tau=r.tau, batch_size=r.batch_size,
                        beta=r.beta, hidden=r.hidden, input_dim=r.input_dim, record_every=r.record_every,
                        track=r.track, progress=progress)
    finally:
        torch.set_num_threads(old_threads)


def _run_lab(*, encoder, data, optimizer, lr, weight_decay, steps, burn_in, seed, estimator, snapshots, probe_batches,
             n_items, n_concepts, dim, tau, batch_size, beta, hidden, input_dim, record_every, track, progress):
    """One table or MLP lab run: settings resolved, model trained with tracking, estimates summarised."""
    s = _resolve_settings(encoder, optimizer, lr=lr, weight_decay=weight_decay, steps=steps, burn_in=burn_in,
                          estimator=estimator, snapshots=snapshots, probe_batches=probe_batches, n_items=n_items,
                          dim=dim, tau=tau, batch_size=batch_size, record_every=record_every)
    pairs = _make_data(data, n_items=n_items, n_concepts=n_concepts, seed=seed)
    n = pairs.n_items
    gen = torch.Generator().manual_seed(seed)
    rng = np.random.default_rng(seed + 1)
    if encoder == "table":
        enc = TableEncoder(n, dim, tau, gen)
    else:
        enc = MLPTwoTower(n, dim, tau, gen, hidden=hidden, input_dim=input_dim)
    kw = {"beta": beta} if optimizer == "momentum" else {}
    opt = make_optimizer(optimizer, s.lr, s.weight_decay, **kw)
    k = enc.k
    homog_step, probe_eta, c_used, c_row = _step_constants(encoder, s.estimator, s.lr, s.weight_decay, k)
    tr = _Tracking(pairs, s, track=track)
    bar = Tracker(f"lab {encoder}/{optimizer}", s.steps, unit="steps").start() if progress else None
    t0 = time.perf_counter()
    c0_cpu = time.process_time()
    try:
        z = _train(enc, opt, pairs, rng, s, tr, track=track, batch_size=batch_size, probe_eta=probe_eta,
                   homog_step=homog_step, bar=bar)
    finally:
        if bar is not None:
            bar.stop()
    wall = time.perf_counter() - t0
    cpu = time.process_time() - c0_cpu
    summary = {
        "encoder": encoder, "data": pairs.source, "optimizer": optimizer, "lr": s.lr, "weight_decay": s.weight_decay,
        "beta": beta if optimizer == "momentum" else None, "steps": s.steps, "burn_in": s.burn_in, "seed": seed,
        "estimator": s.estimator if track else None, "n_items": n, "dim": dim, "tau": tau, "batch_size": batch_size,
        "k": k, "lambda_rad": k * s.weight_decay, "c": c_used, "c_row": c_row,
    }
    timings = {"wall_s": wall, "cpu_s": cpu, "steps_per_s": s.steps / wall}
    if not track:
        summary["caveats"] = ["tracking off: no estimates"]
        return LabResult(**summary, timings=timings)
    tr.record(s.steps, z)
    items, r_obs, heat, drift, r_eq, caveats = _estimates(tr, z, pairs, s, summary, encoder=encoder,
                                                          optimizer=optimizer, beta=beta, c_used=c_used)
    _agreement_summary(summary, items, pairs, tr, r_obs=r_obs, heat=heat, drift=drift, r_eq=r_eq, c_used=c_used)
    if optimizer == "adamw":
        caveats.insert(0, "AdamW: the SGD form of Theorem 1 is not expected to hold (docs/theory.md C3); "
                          + ("the heat probe uses plain-gradient SGD steps" if s.estimator == "snapshot"
                             else "the trajectory probe uses AdamW's actual step, which is neither tangent nor ~1/R"))
    x = s.lr * s.weight_decay
    if s.window * 4 * x * k < 2:
        caveats.append(f"measurement window ({s.window} steps) is short against the relaxation time "
                       f"1/(4 eta lambda_rad) = {1 / (4 * x * k):.0f} steps")
    summary["sgd_formula_expected"] = optimizer != "adamw"
    summary["caveats"] = caveats
    timings["wall_s"] = time.perf_counter() - t0  # training loop plus estimates
    traj = pd.DataFrame(
        [{"step": s_, "ambiguity": int(a), "r_mean": v[j]} for s_, v in zip(tr.rec_steps, tr.rec_vals)
         for j, a in enumerate(tr.groups)]
    )
    return LabResult(**summary, items=items, trajectories=traj, timings=timings)


@dataclasses.dataclass(frozen=True)
class _LabSettings:
    """The settings of one table/MLP run with the encoder's defaults filled in (checked by :func:`_resolve_settings`)."""

    estimator: str
    lr: float
    weight_decay: float
    steps: int
    burn_in: int
    snapshots: int
    probe_batches: int
    record_every: int

    @property
    def window(self) -> int:
        """Steps in the measurement window (``steps - burn_in``)."""
        return self.steps - self.burn_in


def _resolve_settings(encoder, optimizer, *, lr, weight_decay, steps, burn_in, estimator, snapshots, probe_batches,
                      n_items, dim, tau, batch_size, record_every) -> _LabSettings:
    """The run's settings: the encoder's and optimizer's defaults where None, checked (:class:`InputError`)."""
    if encoder not in _RUN_DEFAULTS:
        raise InputError(f"encoder must be 'table' or 'mlp' (a pretrained transformer: run_transformer_lab), got {encoder!r}")
    if optimizer not in DEFAULTS[encoder]:
        raise InputError(f"optimizer must be one of {sorted(DEFAULTS[encoder])}, got {optimizer!r}")
    dflt = _RUN_DEFAULTS[encoder]
    estimator = estimator or dflt["estimator"]
    if estimator not in ("snapshot", "trajectory"):
        raise InputError(f"estimator must be 'snapshot' or 'trajectory', got {estimator!r}")
    d_lr, d_wd = DEFAULTS[encoder][optimizer]
    lr = d_lr if lr is None else float(lr)
    weight_decay = d_wd if weight_decay is None else float(weight_decay)
    burn_in_auto = burn_in is None and steps is not None  # burn-in follows steps (a third of them)
    if steps is None:
        steps = dflt["steps"]
        burn_in = dflt["burn_in"] if burn_in is None else burn_in
    elif burn_in is None:
        burn_in = steps // 3
    snapshots = snapshots or dflt["snapshots"]
    probe_batches = probe_batches or dflt["probe_batches"]
    steps, burn_in = int(steps), int(burn_in)
    _check_window(steps, burn_in, estimator, snapshots, burn_in_auto)
    if min(n_items, dim, batch_size, snapshots, probe_batches) < 1 or tau <= 0:
        raise InputError("n_items, dim, batch_size, snapshots, probe_batches must be >= 1 and tau > 0")
    record_every = record_every or max(1, steps // 400)
    return _LabSettings(estimator, lr, weight_decay, steps, burn_in, snapshots, probe_batches, record_every)


def _check_window(steps: int, burn_in: int, estimator: str, snapshots: int, burn_in_auto: bool) -> None:
    """Raise :class:`InputError` unless the measurement window exists and holds the snapshots (saying which
    ``--steps`` would)."""
    if steps < 2 or not 0 <= burn_in < steps - 1:
        raise InputError(f"need steps >= 2 and 0 <= burn_in < steps - 1, got steps={steps}, burn_in={burn_in}")
    window = steps - burn_in
    if estimator == "snapshot" and snapshots > window:
        if burn_in_auto:  # smallest steps with steps - steps // 3 >= snapshots
            min_steps = next(t for t in range(snapshots, 3 * snapshots + 3) if t - t // 3 >= snapshots)
            how = f"the burn-in is steps // 3, so use --steps >= {min_steps}"
        else:
            min_steps = burn_in + snapshots
            how = f"with --burn-in {burn_in}, use --steps >= {min_steps} or a smaller --burn-in"
        raise InputError(
            f"--steps {steps}: the snapshot estimator needs a measurement window (steps - burn-in = {window}) of at "
            f"least --snapshots {snapshots} steps; {how}, or lower --snapshots (or use --estimator trajectory)"
        )


def _step_constants(encoder: str, estimator: str, lr: float, weight_decay: float, k: int) -> tuple[float, float, float, str]:
    """(homogeneous probe step eta~ (E5), the snapshot probe's step, the discrete c used by (E7), its row name):
    the free table probes at eta with the free row's c, the MLP at eta~ with the k-homogeneous row's; the
    trajectory estimator always uses the k-homogeneous row."""
    homog_step = float(theory.probe_step(lr, weight_decay, kind="homogeneous"))
    c_hom = float(theory.discrete_c(lr, weight_decay, kind="homogeneous", k=k))
    if encoder == "table":
        probe_eta, c_snap, c_row = lr, float(theory.discrete_c(lr, weight_decay, kind="free")), "free"
    else:
        probe_eta, c_snap, c_row = homog_step, c_hom, "homogeneous"
    if estimator == "trajectory":
        c_used, c_row = c_hom, "homogeneous"
    else:
        c_used = c_snap
    return homog_step, probe_eta, c_used, c_row


class _Tracking:
    """What a tracked run accumulates: per item over the window the sum of R^2 (float64) and the trajectory
    estimator's sums of <z, Delta~> and ||Delta~||^2, the largest (E5) relative residual, the snapshot probes'
    heat and drift, and the mean norm of each ambiguity group every ``record_every`` steps."""

    def __init__(self, pairs: PairData, s: _LabSettings, *, track: bool):
        n = pairs.n_items
        self.snap_at = set()
        if track and s.estimator == "snapshot":
            self.snap_at = {s.burn_in + int((i + 0.5) * s.window / s.snapshots) for i in range(s.snapshots)}
        self.groups = np.unique(pairs.ambiguity)
        self.gmask = [torch.as_tensor(pairs.ambiguity == a) for a in self.groups]
        self.sum_r2 = torch.zeros(n, dtype=torch.float64)
        self.traj_d = torch.zeros(n, dtype=torch.float64)
        self.traj_dd = torch.zeros(n, dtype=torch.float64)
        self.e5_resid = 0.0
        self.snap_heat: list[np.ndarray] = []
        self.snap_drift: list[np.ndarray] = []
        self.rec_steps: list[int] = []
        self.rec_vals: list[list[float]] = []

    def record(self, t: int, z) -> None:
        """The mean norm of each ambiguity group at step ``t``."""
        r = z.norm(dim=1)
        self.rec_steps.append(t)
        self.rec_vals.append([float(r[m].mean()) for m in self.gmask])

    def snapshot(self, enc, pairs: PairData, rng, s: _LabSettings, batch_size: int, probe_eta: float, z) -> None:
        """Heat R^2 mean_k ||Delta_k||^2 and drift mean_k <z, Delta_k> of the current state from
        ``probe_batches`` virtual batches (probed in chunks of 100)."""
        n = pairs.n_items
        kia, kib = pairs.sample(rng, (s.probe_batches, batch_size))
        kia, kib = torch.from_numpy(kia), torch.from_numpy(kib)
        zd = torch.zeros(n, dtype=torch.float64)
        dd = torch.zeros(n, dtype=torch.float64)
        for c0 in range(0, s.probe_batches, 100):
            a, b = enc.probe(kia[c0:c0 + 100], kib[c0:c0 + 100], probe_eta, z)
            zd += a
            dd += b
        r2 = (z * z).sum(1)
        self.snap_heat.append((r2 * dd / s.probe_batches).numpy())
        self.snap_drift.append((zd / s.probe_batches).numpy())


def _train(enc, opt, pairs: PairData, rng, s: _LabSettings, tr: _Tracking, *, track: bool, batch_size: int,
           probe_eta: float, homog_step: float, bar) -> object:
    """``s.steps`` optimizer steps on sampled batches, accumulating into ``tr`` when ``track``; returns the
    final embedding (None untracked)."""
    x, k = s.lr * s.weight_decay, enc.k
    trajectory = s.estimator == "trajectory"
    z = enc.embed() if track else None
    for t in range(s.steps):
        ia_np, ib_np = pairs.sample(rng, batch_size)
        ia, ib = torch.from_numpy(ia_np), torch.from_numpy(ib_np)
        in_window = track and t >= s.burn_in
        if track and t % s.record_every == 0:
            tr.record(t, z)
        if t in tr.snap_at:
            tr.snapshot(enc, pairs, rng, s, batch_size, probe_eta, z)
        grads = enc.grads(ia, ib)
        direction = opt.direction(grads)
        if in_window:
            # R_t^2 before the update (the table's embedding is its live parameter tensor)
            r2_t = (z * z).sum(1)
            tr.sum_r2 += r2_t
        if in_window and trajectory:
            delta = enc.shifted(direction, homog_step) - z
            zdt = (z * delta).sum(1)
            ddt = (delta * delta).sum(1)
            tr.traj_d += zdt
            tr.traj_dd += ddt
        opt.apply(enc.params, direction)
        if track:
            z_new = enc.embed()
            if in_window and trajectory:
                r2_new = (z_new * z_new).sum(1)
                pred = (1 - x) ** (2 * k) * (r2_t + 2 * zdt + ddt)
                tr.e5_resid = max(tr.e5_resid, float(((pred - r2_new).abs() / r2_new).max()))
            z = z_new
        if bar is not None and (t % 50 == 0 or t == s.steps - 1):
            bar.update(t + 1)
    return z


def _estimates(tr: _Tracking, z, pairs: PairData, s: _LabSettings, summary: dict, *, encoder: str, optimizer: str,
               beta, c_used: float):
    """The per-item table (R_obs = time-RMS norm over the window, final R, heat, drift) and heat, drift, R_eq
    (E7) from the run's estimator; its summary fields go into ``summary``. Returns (items, r_obs, heat, drift,
    r_eq, caveats)."""
    r_obs = np.sqrt(tr.sum_r2.numpy() / s.window)
    r_final = z.norm(dim=1).numpy()
    caveats: list[str] = []
    items = pd.DataFrame({"item": np.arange(pairs.n_items), "name": pairs.names, "ambiguity": pairs.ambiguity,
                          "r_obs": r_obs, "r_final": r_final})
    if s.estimator == "snapshot":
        heat, drift, r_eq = _snapshot_estimates(tr, items, summary, caveats, r_obs, s, encoder=encoder,
                                                optimizer=optimizer, beta=beta, c_used=c_used)
    else:
        drift = tr.traj_d.numpy() / s.window
        dd_mean = tr.traj_dd.numpy() / s.window
        heat = r_obs**2 * dd_mean
        r_eq = theory.equilibrium_radius(drift, heat, c=c_used)
        items["heat"] = heat
        items["drift"] = drift
        summary["e5_max_rel_residual"] = tr.e5_resid
        caveats.append("trajectory form: each actual step is the probe, so q/c = 1 tests stationarity and the exact "
                       "step identity (E5) over the window rather than predicting R from a frozen state")
        if optimizer == "momentum":
            caveats.append("momentum, trajectory form: the probe is the optimizer's actual step (momentum included), "
                           "so no (E12) correction is applied")
    return items, r_obs, heat, drift, r_eq, caveats


def _snapshot_estimates(tr: _Tracking, items, summary: dict, caveats: list, r_obs: np.ndarray, s: _LabSettings, *,
                        encoder: str, optimizer: str, beta, c_used: float):
    """Heat and drift averaged over the snapshots (momentum: corrected by (E12)), R_eq (E7), their standard
    errors, the single-snapshot agreement and, with momentum, the uncorrected one. Returns (heat, drift, r_eq)."""
    sh = np.stack(tr.snap_heat)
    sd = np.stack(tr.snap_drift)
    heat = sh.mean(0)
    drift = sd.mean(0)
    heat_raw = heat
    if optimizer == "momentum":
        heat = theory.momentum_heat_correction(heat, beta)
        drift = theory.momentum_drift_correction(drift, beta)
        caveats.append(
            f"momentum: heat corrected by (E12) Sigma^2/(1-beta)^2 (x{1 / (1 - beta) ** 2:.1f}); "
            f"drift by 1/(1-beta), which docs/theory.md marks untested"
        )
    r_eq = theory.equilibrium_radius(drift, heat, c=c_used)
    items["heat"] = heat
    items["drift"] = drift
    items["heat_se"] = sh.std(0, ddof=1) / np.sqrt(len(sh)) if len(sh) > 1 else np.nan
    items["drift_se"] = sd.std(0, ddof=1) / np.sqrt(len(sd)) if len(sd) > 1 else np.nan
    single = theory.equilibrium_radius(
        sd[0] if optimizer != "momentum" else theory.momentum_drift_correction(sd[0], beta),
        sh[0] if optimizer != "momentum" else theory.momentum_heat_correction(sh[0], beta), c=c_used)
    summary["snapshots"] = int(len(sh))
    summary["probe_batches"] = int(s.probe_batches)
    summary["single_snapshot"] = _agreement(single, r_obs)
    if optimizer == "momentum":
        r_unc = theory.equilibrium_radius(sd.mean(0), heat_raw, c=c_used)
        summary["uncorrected"] = _agreement(r_unc, r_obs)
        items["rel_error_uncorrected"] = (r_unc - r_obs) / r_obs
    if encoder == "mlp":
        caveats.append("snapshot estimator on a network: drift is dominated by momentary motion (docs/theory.md B3); "
                       "per-item agreement needs many snapshots or the trajectory estimator")
    return heat, drift, r_eq


def _agreement_summary(summary: dict, items, pairs: PairData, tr: _Tracking, *, r_obs, heat, drift, r_eq,
                       c_used: float) -> None:
    """Into ``items``: R_eq, relative error, implied decay q (E9) and q/c; into ``summary``: the agreement of
    R_eq with R_obs, q/c's spread, norm-heat and norm-drift correlations, Spearman rho of R with ambiguity,
    one row per ambiguity group and the section 7A gate."""
    from scipy import stats

    q = theory.implied_decay(drift, heat, r_obs)
    rel = (r_eq - r_obs) / r_obs
    items["r_eq"] = r_eq
    items["rel_error"] = rel
    items["q"] = q
    items["q_over_c"] = q / c_used
    summary.update(_agreement(r_eq, r_obs))
    qc = q / c_used
    summary["q_over_c"] = {"mean": _float(np.mean(qc)), "sd": _float(np.std(qc, ddof=1)), "median": _float(np.median(qc)),
                           "min": _float(np.min(qc)), "max": _float(np.max(qc))}
    summary["corr_r_heat"] = _corr(r_obs, heat)
    summary["corr_r_drift"] = _corr(r_obs, drift)
    summary["spearman_r_ambiguity"] = None
    if np.ptp(pairs.ambiguity) > 0:
        summary["spearman_r_ambiguity"] = _float(stats.spearmanr(r_obs, pairs.ambiguity)[0])
    summary["groups"] = [
        {
            "ambiguity": int(a),
            "n": int((pairs.ambiguity == a).sum()),
            "r_obs": _float(r_obs[pairs.ambiguity == a].mean()),
            "heat": _float(heat[pairs.ambiguity == a].mean()),
            "drift": _float(drift[pairs.ambiguity == a].mean()),
            "r_eq": _float(np.nanmean(r_eq[pairs.ambiguity == a])),
            "mean_abs_rel_error": _float(np.nanmean(np.abs(rel[pairs.ambiguity == a]))),
        }
        for a in tr.groups
    ]
    gate_ok = (
        summary["mean_abs_rel_error"] is not None
        and summary["pearson"] is not None
        and summary["mean_abs_rel_error"] <= GATE["mean_abs_rel_error"]
        and abs(summary["median_rel_error"]) <= GATE["abs_median_rel_error"]
        and summary["pearson"] >= GATE["pearson"]
    )
    summary["gate"] = dict(GATE, passed=bool(gate_ok))


def plot_trajectories(result: LabResult, path) -> Path:
    """Mean norm per ambiguity group over training steps; the window start is marked.

    Returns the written PNG path (atomic write).
    """
    plt = pyplot()

    path = Path(path)
    tr = result.trajectories
    if tr.empty:
        raise InputError("the result has no trajectories (run with track=True)")
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for a, g in tr.groupby("ambiguity"):
        ax.plot(g["step"], g["r_mean"], label=f"ambiguity {a}")
    ax.axvline(result.burn_in, color="grey", ls="--", lw=1, label="window start")
    ax.set_xlabel("training step")
    ax.set_ylabel("mean embedding norm R")
    ax.set_title(f"{result.encoder} / {result.optimizer}: eta={result.lr:g}, lambda={result.weight_decay:g}")
    # legend outside the axes, right of the curves, so it never covers them
    ax.legend(frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    return save_figure(fig, path, dpi=120)


def plot_predicted_vs_observed(result: LabResult, path) -> Path:
    """Scatter of predicted R_eq (E7) against the observed time-RMS norm, one colour per ambiguity group.

    Returns the written PNG path (atomic write).
    """
    plt = pyplot()

    path = Path(path)
    it = result.items
    if it.empty:
        raise InputError("the result has no per-item estimates (run with track=True)")
    fig, ax = plt.subplots(figsize=(5.2, 5.0))
    for a, g in it.groupby("ambiguity"):
        ax.scatter(g["r_obs"], g["r_eq"], s=12, label=f"ambiguity {a}")
    lo = float(np.nanmin([it["r_obs"].min(), it["r_eq"].min()]))
    hi = float(np.nanmax([it["r_obs"].max(), it["r_eq"].max()]))
    ax.plot([lo, hi], [lo, hi], color="grey", lw=1, ls="--", label="R_eq = R_obs")
    ax.set_xlabel("observed norm R (time-RMS over window)")
    ax.set_ylabel("predicted R_eq (E7)")
    mar, pr = result.mean_abs_rel_error, result.pearson
    ax.set_title(f"{result.estimator}: mean|rel| {mar:.3f}, Pearson {pr:.3f}" if mar is not None and pr is not None else result.estimator)
    ax.legend(frameon=False, loc="upper left")
    fig.tight_layout()
    return save_figure(fig, path, dpi=120, bbox_inches=None)
