"""Correlations over strata and paired correlation differences (part of :mod:`normscope.stats_designs`).

- :func:`stratified_partial_spearman`: items pooled from several sources, with the source as a
  control and resampling / permutation **within** sources (exchangeability blocks);
- :func:`correlation_difference`: the difference of two correlations with one reference, with a
  **paired** bootstrap CI.

The kernels and conventions are those of :mod:`normscope.stats`.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
from scipy import stats as _sps

from normscope.errors import InputError
from normscope.stats import (
    PartialResult,
    _as_controls,
    _boot_chunks,
    _check_levels,
    _chunk_rows,
    _design_q,
    _f,
    _interval,
    _pearson,
    _perm_p,
    _residualise_rows,
    _rowwise_pearson,
    _validate_pairs,
    resample_ranks,
)

__all__ = ["stratified_partial_spearman", "DifferenceResult", "correlation_difference"]


def _stratum_codes(strata, n: int) -> tuple[np.ndarray, list]:
    """Integer codes (n,) of stratum labels (sorted label order) and the labels."""
    s = np.asarray(strata, dtype=object).ravel()
    if s.size != n:
        raise InputError(f"strata has {s.size} labels for {n} rows")
    if any(v is None or (isinstance(v, float) and math.isnan(v)) for v in s):
        raise InputError("strata holds missing labels (None/NaN); give every row a stratum")
    labels, codes = np.unique(s.astype(str), return_inverse=True)
    return codes.astype(np.intp), labels.tolist()


def _within_strata(rngs: list[np.random.Generator], members: list[np.ndarray], n: int, total: int,
                   row_cost: int, *, bootstrap: bool):
    """Yield ``(start, idx)`` blocks (m, n) of index rows drawn within strata.

    Column ``members[s]`` of every row holds indices of stratum s only: a resample with replacement
    (``bootstrap``) or a permutation of ``members[s]``. Stratum s draws from its own generator
    ``rngs[s]`` block after block, so the stream does not depend on the block size.
    """
    step = _chunk_rows(row_cost, total)
    for s0 in range(0, total, step):
        m = min(step, total - s0)
        idx = np.empty((m, n), dtype=np.intp)
        for g, mem in zip(rngs, members):
            if bootstrap:
                idx[:, mem] = mem[g.integers(0, mem.size, size=(m, mem.size))]
            else:
                idx[:, mem] = g.permuted(np.tile(mem, (m, 1)), axis=1)
        yield s0, idx


def stratified_partial_spearman(
    x,
    y,
    controls,
    strata,
    *,
    n_boot: int = 2000,
    ci: float = 0.95,
    n_perm: int = 2000,
    seed: int | None = 0,
    min_n: int = 3,
    control_names: list[str] | tuple[str, ...] | None = None,
    stratum_name: str = "stratum",
) -> PartialResult:
    """Partial Spearman of x and y given controls **and the stratum**, resampled and permuted within strata.

    For items pooled from several sources (e.g. SNLI and MNLI pairs of ChaosNLI): the ranks of x
    and y (pooled ranks) are regressed on ``[1, ranks(controls), stratum indicators]`` and the
    residuals correlated, so a difference of level between sources (a confound of the pooled
    correlation) is removed. Inference respects the strata as exchangeability blocks (Winkler,
    Ridgway, Webster, Smith & Nichols 2014, NeuroImage 92:381):

    - the CI is a percentile bootstrap that resamples items with replacement **within each
      stratum** (stratum sizes fixed), re-ranks and re-regresses each resample;
    - the p-value is Freedman-Lane (1983): the residuals of rank(y) given the design are
      permuted **within each stratum** and residualised again; two-sided on ``|rho|``,
      ``(1 + count)/(1 + n_perm)`` (always random permutations, never enumerated).

    Parameters
    ----------
    x, y : array_like of shape (n,)
    controls : array_like of shape (n,) or (n, k), or None
        Covariates besides the stratum (None or k = 0: the stratum only).
    strata : array_like of shape (n,)
        Stratum label of each row (str or int; no missing labels).
    n_boot, ci, n_perm, seed, min_n, control_names
        As :func:`partial_spearman`. Bootstrap and permutations draw from independent child
        generators of ``seed``, one per stratum (``numpy.random.Generator.spawn``).
    stratum_name : str, keyword-only
        Name of the stratum control in ``controls`` of the result (e.g. ``"source"``).

    Returns
    -------
    PartialResult
        ``controls`` lists ``control_names`` then ``stratum_name``; ``n_controls`` counts the
        stratum as one control.

    Raises
    ------
    InputError
        As :func:`partial_spearman`; strata of another length or with missing labels.
    """
    _check_levels(ci, n_boot, n_perm)
    x = np.asarray(x, dtype=np.float64).ravel()
    y = np.asarray(y, dtype=np.float64).ravel()
    if x.shape != y.shape:
        raise InputError(f"x and y differ in length: {x.size} vs {y.size}")
    z = np.zeros((x.size, 0)) if controls is None else _as_controls(controls, x.size)
    codes, labels = _stratum_codes(strata, x.size)
    k = z.shape[1]
    ok = np.isfinite(x) & np.isfinite(y) & np.isfinite(z).all(axis=1)
    n_dropped = int((~ok).sum())
    x, y, z, codes = x[ok], y[ok], z[ok], codes[ok]
    x, y, _ = _validate_pairs(x, y, max(min_n, k + len(labels) + 2))
    n = x.size
    members = [np.flatnonzero(codes == c) for c in range(len(labels)) if np.any(codes == c)]
    onehot = np.stack([(codes == c).astype(np.float64) for c in range(len(labels))], axis=1)
    rx, ry = _sps.rankdata(x), _sps.rankdata(y)
    q = _design_q(np.concatenate([_sps.rankdata(z, axis=0), onehot], axis=1))
    ex = _residualise_rows(rx[None, :], q)[0]
    ey = _residualise_rows(ry[None, :], q)[0]
    scale = max(np.abs(rx).max(), 1.0)
    if np.sqrt(ex @ ex) < 1e-9 * scale * np.sqrt(n) or np.sqrt(ey @ ey) < 1e-9 * scale * np.sqrt(n):
        raise InputError("x or y is fully explained by the controls and strata (zero residual variance)")
    rho = _pearson(ex, ey)
    children = np.random.default_rng(seed).spawn(2 * len(members))
    boot = np.empty(n_boot)
    for s, ii in _within_strata(children[: len(members)], members, n, n_boot, n * (k + len(labels) + 3),
                                bootstrap=True):
        bz = np.concatenate([resample_ranks(z, ii), onehot[ii]], axis=2)
        qb = _design_q(bz)
        boot[s : s + len(ii)] = _rowwise_pearson(_residualise_rows(resample_ranks(x, ii), qb),
                                                 _residualise_rows(resample_ranks(y, ii), qb))
    null = np.empty(n_perm)
    for s, ii in _within_strata(children[len(members):], members, n, n_perm, n, bootstrap=False):
        null[s : s + len(ii)] = _rowwise_pearson(np.broadcast_to(ex, ii.shape), _residualise_rows(ey[ii], q))
    names = list(control_names) if control_names is not None else [f"control_{j}" for j in range(k)]
    if len(names) != k:
        raise InputError(f"control_names has {len(names)} names for {k} control columns")
    return PartialResult(
        rho=rho, ci=_interval(boot, ci) if n_boot else (float("nan"), float("nan")),
        p_value=_perm_p(null, rho, False), n=n, n_dropped=n_dropped, n_controls=k + 1, ci_level=ci,
        ci_method=f"percentile bootstrap, items resampled with replacement within each {stratum_name}",
        p_method=f"Freedman-Lane permutation of rank(y) residuals within each {stratum_name}, two-sided on |rho|",
        n_boot=n_boot, n_perm=n_perm, controls=names + [stratum_name],
    )


@dataclass(frozen=True)
class DifferenceResult:
    """Difference of two correlations with the same reference, with a paired bootstrap CI.

    Attributes
    ----------
    delta : float
        ``r(a, ref) - r(b, ref)`` on the ``n`` valid rows.
    ci : tuple of float
        Percentile interval of the difference over paired resamples (the same rows for a and b).
    n : int
        Valid rows (ref, a and b finite).
    method : str
        ``"spearman"`` or ``"pearson"``.
    relative : float
        ``r(a, ref) / r(b, ref) - 1`` (NaN when ``r(b, ref) <= 0``): the gain relative to ``b``.
    relative_ci : tuple of float
        Its percentile interval over the same paired resamples (resamples with ``r(b, ref) <= 0``
        left out).
    """

    delta: float
    ci: tuple[float, float]
    n: int
    method: str
    ci_level: float = 0.95
    ci_method: str = "paired percentile bootstrap: rows resampled with replacement, both correlations on each resample"
    n_boot: int = 2000
    relative: float = float("nan")
    relative_ci: tuple[float, float] = (float("nan"), float("nan"))

    def to_dict(self) -> dict:
        """JSON-friendly dict (NaN -> None)."""
        d = asdict(self)
        d["delta"] = _f(self.delta)
        d["ci"] = [_f(v) for v in self.ci]
        d["relative"] = _f(self.relative)
        d["relative_ci"] = [_f(v) for v in self.relative_ci]
        return d


def correlation_difference(ref, a, b, *, method: str = "spearman", n_boot: int = 2000, ci: float = 0.95,
                           seed: int | None = 0, min_n: int = 3) -> DifferenceResult:
    """``r(a, ref) - r(b, ref)`` with a paired bootstrap CI (dependent, overlapping correlations).

    E.g. ``ref`` = human similarity ratings of word pairs, ``a`` = a norm-aware score, ``b`` =
    cosine: the gain of ``a`` over ``b``. Each resample draws rows with replacement (index matrix
    ``rng.integers(0, n, size=(n_boot, n))``, as :func:`correlation`) and recomputes both
    correlations on the same rows, so the interval accounts for their dependence.

    Parameters
    ----------
    ref, a, b : array_like of shape (n,)
        Rows with a non-finite value in any of them are dropped.
    method : {"spearman", "pearson"}, keyword-only
    n_boot, ci, seed, min_n : keyword-only
        As :func:`correlation`.

    Returns
    -------
    DifferenceResult

    Raises
    ------
    InputError
        Unknown method, arrays of different lengths, fewer than ``max(min_n, 3)`` valid rows, a
        constant array, invalid ``ci`` / ``n_boot``.
    """
    if method not in ("spearman", "pearson"):
        raise InputError(f"method must be 'spearman' or 'pearson', got {method!r}")
    _check_levels(ci, n_boot, 0)
    ref, a, b = (np.asarray(v, dtype=np.float64).ravel() for v in (ref, a, b))
    if not ref.shape == a.shape == b.shape:
        raise InputError(f"ref, a and b differ in length: {ref.size}, {a.size}, {b.size}")
    ok = np.isfinite(ref) & np.isfinite(a) & np.isfinite(b)
    ref, a, _ = _validate_pairs(ref[ok], a[ok], min_n, names=("ref", "a"))
    _, b, _ = _validate_pairs(ref, b[ok], min_n, names=("ref", "b"))
    n = ref.size
    tr = (lambda v: _sps.rankdata(v, axis=-1)) if method == "spearman" else (lambda v: v)
    ra, rb = _pearson(tr(a), tr(ref)), _pearson(tr(b), tr(ref))
    boot = np.empty(n_boot)
    rel = np.empty(n_boot)
    for s, ii in _boot_chunks(np.random.default_rng(seed), n, n_boot, 3 * n):
        rr = tr(ref[ii])
        ba, bb = _rowwise_pearson(tr(a[ii]), rr), _rowwise_pearson(tr(b[ii]), rr)
        boot[s : s + len(ii)] = ba - bb
        with np.errstate(divide="ignore", invalid="ignore"):
            rel[s : s + len(ii)] = np.where(bb > 0, ba / bb - 1.0, np.nan)
    nan2 = (float("nan"), float("nan"))
    rel_ok = rel[np.isfinite(rel)]
    return DifferenceResult(delta=ra - rb, ci=_interval(boot, ci) if n_boot else nan2, n=n, method=method, ci_level=ci,
                            n_boot=n_boot, relative=ra / rb - 1.0 if rb > 0 else float("nan"),
                            relative_ci=_interval(rel_ok, ci) if rel_ok.size else nan2)
