"""Correlation statistics with bootstrap confidence intervals and permutation p-values.

Everything here is vectorised: a bootstrap draws an index matrix of shape ``(n_boot, n)``
and computes the resampled correlations of many rows at once (ranks within rows with
:func:`scipy.stats.rankdata` ``axis=1``); a permutation test permutes whole rows the same
way. The matrix is drawn and processed in row blocks of about ``_CHUNK_ELEMS`` values, so
memory stays bounded for any ``n``; the random stream, and so every result, does not depend
on the block size.

Conventions
-----------
- **Spearman** rho is Pearson's r on average ranks (ties get the mean rank), exactly as
  :func:`scipy.stats.spearmanr`.
- **Confidence intervals** are bootstrap *percentile* intervals (Efron & Tibshirani 1993,
  ch. 13): resample (x, y) pairs with replacement, recompute the statistic, take the
  ``(1-ci)/2`` and ``(1+ci)/2`` quantiles. Spearman resamples are re-ranked.
- **p-values** are two-sided permutation p-values on ``|r|``:
  ``p = (1 + #{|r_perm| >= |r_obs|}) / (1 + n_perm)`` for random permutations (Phipson &
  Smyth 2010), and the exact proportion when ``n! <= n_perm`` (all permutations enumerated).
- **Partial Spearman** (controls ``Z``): rank-transform x, y and every column of Z, regress
  the ranks of x and of y on ``[1, ranks(Z)]`` by least squares and correlate the residuals
  (the rank version of the partial correlation; equal to
  ``(r_xy - r_xz r_yz)/sqrt((1-r_xz^2)(1-r_yz^2))`` for one control). Its p-value uses the
  Freedman & Lane (1983) scheme: permute the residuals of rank(y) given Z.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from itertools import permutations

import numpy as np
import pandas as pd
from scipy import stats as _sps

from normscope._format import p_text  # re-exported: the one p formatter
from normscope.errors import InputError

__all__ = [
    "p_text",
    "CorrelationResult",
    "PartialResult",
    "correlation",
    "partial_spearman",
    "binned_means",
]

_CHUNK_ELEMS = 4_000_000  # values per chunk (rows * n) in bootstrap / permutation kernels
_TIE_EPS = 1e-12  # relative tolerance for ">= observed" comparisons (as scipy.stats.permutation_test)


# --------------------------------------------------------------------------------------------
# results
# --------------------------------------------------------------------------------------------


def _f(v) -> float | None:
    """Float for JSON (NaN -> None)."""
    if v is None:
        return None
    v = float(v)
    return None if math.isnan(v) else v


@dataclass(frozen=True)
class CorrelationResult:
    """Pearson and Spearman correlation of paired samples with bootstrap CIs and permutation p-values.

    Attributes
    ----------
    pearson, spearman : float
        Point estimates on the ``n`` valid pairs.
    pearson_ci, spearman_ci : tuple of float
        ``(low, high)`` bootstrap percentile interval at level ``ci_level``.
    n : int
        Number of valid (finite) pairs used.
    n_dropped : int
        Number of pairs dropped because x or y was NaN / infinite.
    p_value : float
        Two-sided permutation p-value of the Spearman rho (NaN when ``n_perm == 0``).
    pearson_p : float
        Two-sided permutation p-value of Pearson's r (same permutations).
    """

    pearson: float
    spearman: float
    pearson_ci: tuple[float, float]
    spearman_ci: tuple[float, float]
    n: int
    n_dropped: int
    p_value: float
    pearson_p: float
    ci_level: float = 0.95
    ci_method: str = "percentile bootstrap"
    n_boot: int = 2000
    n_perm: int = 2000
    p_method: str = "permutation, two-sided on |r|"
    exact_p: bool = False

    def to_dict(self) -> dict:
        """JSON-friendly dict (floats, lists; NaN -> None)."""
        d = asdict(self)
        for k in ("pearson", "spearman", "p_value", "pearson_p"):
            d[k] = _f(d[k])
        d["pearson_ci"] = [_f(v) for v in self.pearson_ci]
        d["spearman_ci"] = [_f(v) for v in self.spearman_ci]
        return d


@dataclass(frozen=True)
class PartialResult:
    """Partial Spearman correlation of x and y given controls, with bootstrap CI and permutation p.

    Attributes
    ----------
    rho : float
        Partial Spearman rho (Pearson r of rank residuals).
    ci : tuple of float
        Bootstrap percentile interval (resamples re-ranked and re-regressed).
    p_value : float
        Freedman-Lane permutation p-value, two-sided on ``|rho|``.
    n : int
        Valid rows (x, y and every control finite).
    n_dropped : int
        Rows dropped for a non-finite value.
    n_controls : int
        Number of control columns.
    """

    rho: float
    ci: tuple[float, float]
    p_value: float
    n: int
    n_dropped: int
    n_controls: int
    ci_level: float = 0.95
    ci_method: str = "percentile bootstrap"
    p_method: str = "Freedman-Lane permutation of rank(y) residuals given controls, two-sided on |rho|"
    n_boot: int = 2000
    n_perm: int = 2000
    controls: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        """JSON-friendly dict (floats, lists; NaN -> None)."""
        d = asdict(self)
        d["rho"] = _f(self.rho)
        d["p_value"] = _f(self.p_value)
        d["ci"] = [_f(v) for v in self.ci]
        return d


# --------------------------------------------------------------------------------------------
# kernels (row-wise, vectorised)
# --------------------------------------------------------------------------------------------


def _rowwise_pearson(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Pearson r of matching rows of ``a`` and ``b`` (shape (m, n)) -> (m,). Constant rows give NaN."""
    a = a - a.mean(axis=1, keepdims=True)
    b = b - b.mean(axis=1, keepdims=True)
    num = np.einsum("ij,ij->i", a, b)
    den = np.sqrt(np.einsum("ij,ij->i", a, a) * np.einsum("ij,ij->i", b, b))
    with np.errstate(invalid="ignore", divide="ignore"):
        r = num / den
    r[~(den > 0)] = np.nan
    return r


def resample_ranks(v: np.ndarray, ii: np.ndarray) -> np.ndarray:
    """Average ranks of each resample of ``v``: equal to ``scipy.stats.rankdata(v[ii], axis=1)``, in O(m (n + G)).

    A bootstrap resample draws its values from ``v``'s own, so its ranks follow from ``v``'s sorted
    distinct values and how often each was drawn: with ``c_g`` draws of the g-th smallest distinct value and
    ``C_g = c_1 + ... + c_g``, every draw of it has the average rank ``C_{g-1} + (c_g + 1) / 2``. One
    ``bincount`` per block replaces a sort per row (the bootstrap CIs of Spearman rho and of partial
    Spearman spent most of their time in ``argsort``). The values are integers and halves, exact in float64,
    so the result equals ``rankdata``'s bit for bit.

    Parameters
    ----------
    v : ndarray of shape (n,) or (n, k), float
        Finite values (per column when 2-D).
    ii : ndarray of shape (m, n2), int
        Row-wise indices into ``v`` (bootstrap resamples; any n2).

    Returns
    -------
    ndarray of shape (m, n2) or (m, n2, k), float64
        Ranks within each row of ``v[ii]`` (ties averaged), per column for a 2-D ``v``.
    """
    v = np.asarray(v)
    ii = np.asarray(ii)
    if v.ndim == 2:
        return np.stack([resample_ranks(v[:, j], ii) for j in range(v.shape[1])], axis=-1)
    _, group = np.unique(v, return_inverse=True)  # dense rank of each value (0-based)
    n_groups = int(group.max()) + 1 if group.size else 0
    m = ii.shape[0]
    g = group.ravel()[ii]  # (m, n2): group of each draw
    counts = np.bincount((g + n_groups * np.arange(m)[:, None]).ravel(), minlength=m * n_groups)
    counts = counts.reshape(m, n_groups).astype(np.float64)
    before = np.cumsum(counts, axis=1) - counts  # draws of smaller values
    avg = before + (counts + 1.0) / 2.0
    return np.take_along_axis(avg, g, axis=1)


def _pearson(a: np.ndarray, b: np.ndarray) -> float:
    return float(_rowwise_pearson(a[None, :], b[None, :])[0])


def _chunk_rows(n: int, total: int) -> int:
    return max(1, min(total, _CHUNK_ELEMS // max(n, 1)))


def _interval(samples: np.ndarray, ci: float) -> tuple[float, float]:
    samples = samples[np.isfinite(samples)]
    if samples.size == 0:
        return (float("nan"), float("nan"))
    lo, hi = np.quantile(samples, [(1 - ci) / 2, (1 + ci) / 2])
    return (float(lo), float(hi))


def _perm_p(null: np.ndarray, observed: float, exact: bool) -> float:
    """Two-sided permutation p on |r| (ties within a relative 1e-12 count as extreme)."""
    if null.size == 0 or not np.isfinite(observed):
        return float("nan")
    obs = abs(observed)
    count = int(np.sum(np.abs(null) >= obs - _TIE_EPS * max(obs, 1e-300)))
    if exact:
        return count / null.size
    return (1 + count) / (1 + null.size)


def _boot_chunks(rng: np.random.Generator, n: int, n_boot: int, row_cost: int):
    """Yield ``(start, idx)`` with ``idx`` an int index block (m, n) of bootstrap resamples.

    Blocks are drawn one after the other from ``rng``, so the stream equals one
    ``rng.integers(0, n, size=(n_boot, n))`` draw while memory stays bounded (``row_cost`` values per row).
    """
    step = _chunk_rows(row_cost, n_boot)
    for s in range(0, n_boot, step):
        yield s, rng.integers(0, n, size=(min(step, n_boot - s), n))


def _perm_plan(n: int, n_perm: int) -> tuple[int, bool]:
    """Number of permutations and whether they are all n! (exact test)."""
    if n_perm <= 0:
        return 0, False
    if n <= 10 and math.factorial(n) <= n_perm:
        return math.factorial(n), True
    return n_perm, False


def _perm_chunks(rng: np.random.Generator, n: int, n_perm: int, exact: bool):
    """Yield ``(start, perm)`` blocks (m, n) of permutations of range(n).

    Exact: all n! permutations (itertools order). Random: rows shuffled one block after the other,
    equal to one ``rng.permuted(np.tile(arange(n), (n_perm, 1)), axis=1)`` draw.
    """
    if exact:
        yield 0, np.array(list(permutations(range(n))), dtype=np.intp)
        return
    step = _chunk_rows(n, n_perm)
    base = np.arange(n, dtype=np.intp)
    for s in range(0, n_perm, step):
        yield s, rng.permuted(np.tile(base, (min(step, n_perm - s), 1)), axis=1)


def _validate_pairs(x, y, min_n: int, names=("x", "y")) -> tuple[np.ndarray, np.ndarray, int]:
    x = np.asarray(x, dtype=np.float64).ravel()
    y = np.asarray(y, dtype=np.float64).ravel()
    if x.shape != y.shape:
        raise InputError(f"{names[0]} and {names[1]} differ in length: {x.size} vs {y.size}")
    ok = np.isfinite(x) & np.isfinite(y)
    x, y = x[ok], y[ok]
    n_dropped = int((~ok).sum())
    if x.size < max(min_n, 3):
        raise InputError(
            f"need at least {max(min_n, 3)} valid pairs, got {x.size} ({n_dropped} dropped for NaN/inf)"
        )
    for name, v in zip(names, (x, y)):
        if np.ptp(v) == 0:
            raise InputError(f"{name} is constant over the {v.size} valid pairs (value {v[0]!r}); correlation undefined")
    return x, y, n_dropped


def _check_levels(ci: float, n_boot: int, n_perm: int) -> None:
    if not 0 < ci < 1:
        raise InputError(f"ci must be in (0, 1), got {ci!r}")
    if n_boot < 0 or n_perm < 0:
        raise InputError(f"n_boot and n_perm must be >= 0, got {n_boot!r}, {n_perm!r}")


# --------------------------------------------------------------------------------------------
# public API
# --------------------------------------------------------------------------------------------


def correlation(
    x,
    y,
    *,
    n_boot: int = 2000,
    ci: float = 0.95,
    n_perm: int = 2000,
    seed: int | None = 0,
    min_n: int = 3,
) -> CorrelationResult:
    """Pearson and Spearman correlation with bootstrap percentile CIs and permutation p-values.

    Parameters
    ----------
    x, y : array_like of shape (n,)
        Paired per-item values (e.g. embedding norms R and a covariate). Pairs where either
        value is NaN or infinite are dropped and counted in ``n_dropped``.
    n_boot : int, keyword-only
        Bootstrap resamples (pairs drawn with replacement; computed vectorised over blocks of
        rows of the ``(n_boot, n)`` index matrix, so memory stays bounded for large n). 0 gives
        NaN intervals.
    ci : float, keyword-only
        Confidence level of the percentile intervals, in (0, 1).
    n_perm : int, keyword-only
        Random permutations of y for the p-values; when ``n! <= n_perm`` all ``n!``
        permutations are enumerated and the p-value is exact. 0 gives NaN p-values.
    seed : int or None, keyword-only
        Seed of :func:`numpy.random.default_rng` (bootstrap and permutations).
    min_n : int, keyword-only
        Minimum number of valid pairs (at least 3).

    Returns
    -------
    CorrelationResult
        Point estimates identical to :func:`scipy.stats.pearsonr` / :func:`scipy.stats.spearmanr`
        (to floating-point rounding), percentile intervals, two-sided permutation p-values on
        ``|r|`` (Phipson & Smyth 2010: ``(1 + count) / (1 + n_perm)``).

    Raises
    ------
    InputError
        If x and y differ in length, fewer than ``max(min_n, 3)`` valid pairs remain, or
        x or y is constant over the valid pairs, or ``ci`` / ``n_boot`` / ``n_perm`` are invalid.
    """
    _check_levels(ci, n_boot, n_perm)
    x, y, n_dropped = _validate_pairs(x, y, min_n)
    n = x.size
    rng = np.random.default_rng(seed)
    rx = _sps.rankdata(x)
    ry = _sps.rankdata(y)
    pearson = _pearson(x, y)
    spearman = _pearson(rx, ry)

    # bootstrap: all resamples at once, in row chunks
    boot_p = np.empty(n_boot)
    boot_s = np.empty(n_boot)
    for s, ii in _boot_chunks(rng, n, n_boot, n):
        xb, yb = x[ii], y[ii]
        boot_p[s : s + len(ii)] = _rowwise_pearson(xb, yb)
        boot_s[s : s + len(ii)] = _rowwise_pearson(resample_ranks(x, ii), resample_ranks(y, ii))
    pearson_ci = _interval(boot_p, ci) if n_boot else (float("nan"), float("nan"))
    spearman_ci = _interval(boot_s, ci) if n_boot else (float("nan"), float("nan"))

    # permutations of y (ranks of y are permuted with it)
    m_perm, exact = _perm_plan(n, n_perm)
    null_p = np.empty(m_perm)
    null_s = np.empty(m_perm)
    for s, ii in _perm_chunks(rng, n, m_perm, exact):
        null_p[s : s + len(ii)] = _rowwise_pearson(np.broadcast_to(x, ii.shape), y[ii])
        null_s[s : s + len(ii)] = _rowwise_pearson(np.broadcast_to(rx, ii.shape), ry[ii])
    return CorrelationResult(
        pearson=pearson,
        spearman=spearman,
        pearson_ci=pearson_ci,
        spearman_ci=spearman_ci,
        n=n,
        n_dropped=n_dropped,
        p_value=_perm_p(null_s, spearman, exact),
        pearson_p=_perm_p(null_p, pearson, exact),
        ci_level=ci,
        n_boot=n_boot,
        n_perm=m_perm,
        exact_p=exact,
    )


def _as_controls(controls, n: int) -> np.ndarray:
    z = np.asarray(controls, dtype=np.float64)
    if z.ndim == 1:
        z = z[:, None]
    if z.ndim != 2 or z.shape[0] != n:
        raise InputError(f"controls must have shape (n,) or (n, k) with n={n}, got {np.shape(controls)}")
    return z


def _residualise_rows(v: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Residuals of rows of ``v`` (m, n) after projecting onto the columns of orthonormal ``q``.

    ``q`` is (n, p) (shared) or (m, n, p) (one basis per row).
    """
    if q.ndim == 2:
        return v - (v @ q) @ q.T
    coef = np.einsum("mnp,mn->mp", q, v)
    return v - np.einsum("mnp,mp->mn", q, coef)


def _design_q(rz: np.ndarray) -> np.ndarray:
    """Orthonormal basis of the column space of [1, rz], for design matrices rz of shape (..., n, k).

    Computed by (batched) SVD with a rank cut-off, so a constant or duplicated control column
    (e.g. a token length that is 1 for every item, or a bootstrap resample in which it is) adds
    nothing instead of an arbitrary round-off direction; dropped directions are zero columns.
    """
    ones = np.ones(rz.shape[:-1] + (1,))
    design = np.concatenate([ones, rz], axis=-1)
    u, sv, _ = np.linalg.svd(design, full_matrices=False)
    tol = sv.max(axis=-1, keepdims=True) * max(design.shape[-2:]) * np.finfo(np.float64).eps
    return u * (sv > tol)[..., None, :]


def partial_spearman(
    x,
    y,
    controls,
    *,
    n_boot: int = 2000,
    ci: float = 0.95,
    n_perm: int = 2000,
    seed: int | None = 0,
    min_n: int = 3,
    control_names: list[str] | tuple[str, ...] | None = None,
) -> PartialResult:
    """Partial Spearman correlation of x and y controlling for covariates.

    Ranks x, y and each control column (average ranks), regresses rank(x) and rank(y) on
    ``[1, ranks(controls)]`` by least squares (SVD basis with a rank cut-off, so constant or
    collinear controls are harmless), and returns Pearson's r of the two
    residual vectors. With one control this equals
    ``(rho_xy - rho_xz rho_yz) / sqrt((1 - rho_xz^2)(1 - rho_yz^2))`` with Spearman rhos
    (the formula of ``pingouin.partial_corr(method="spearman")``).

    Parameters
    ----------
    x, y : array_like of shape (n,)
        Paired values. Rows with any non-finite value (x, y or a control) are dropped and counted.
    controls : array_like of shape (n,) or (n, k)
        Covariates to partial out (e.g. Zipf frequency and length in tokens; Oyama et al. 2023).
    n_boot : int, keyword-only
        Bootstrap resamples of rows; each resample is re-ranked and re-regressed (batched SVD).
    ci : float, keyword-only
        Level of the percentile interval.
    n_perm : int, keyword-only
        Freedman-Lane permutations (Freedman & Lane 1983): the residuals ``e`` of rank(y) given
        ``[1, ranks(Z)]`` are permuted and re-residualised, and the statistic recomputed; the
        p-value is two-sided on ``|rho|``, ``(1 + count)/(1 + n_perm)``.
    seed : int or None, keyword-only
        Seed of :func:`numpy.random.default_rng`.
    min_n : int, keyword-only
        Minimum valid rows (at least ``k + 3``).
    control_names : sequence of str, optional
        Names stored in the result (for reports).

    Returns
    -------
    PartialResult

    Raises
    ------
    InputError
        On length mismatch, too few valid rows, constant x or y, or x/y fully explained by the
        controls (zero residual variance).
    """
    _check_levels(ci, n_boot, n_perm)
    x = np.asarray(x, dtype=np.float64).ravel()
    y = np.asarray(y, dtype=np.float64).ravel()
    if x.shape != y.shape:
        raise InputError(f"x and y differ in length: {x.size} vs {y.size}")
    z = _as_controls(controls, x.size)
    k = z.shape[1]
    ok = np.isfinite(x) & np.isfinite(y) & np.isfinite(z).all(axis=1)
    n_dropped = int((~ok).sum())
    x, y, z = x[ok], y[ok], z[ok]
    x, y, _ = _validate_pairs(x, y, max(min_n, k + 3))
    n = x.size
    rng = np.random.default_rng(seed)

    rx, ry = _sps.rankdata(x), _sps.rankdata(y)
    rz = _sps.rankdata(z, axis=0)
    q = _design_q(rz)
    ex = _residualise_rows(rx[None, :], q)[0]
    ey = _residualise_rows(ry[None, :], q)[0]
    scale = max(np.abs(rx).max(), 1.0)
    if np.sqrt(ex @ ex) < 1e-9 * scale * np.sqrt(n) or np.sqrt(ey @ ey) < 1e-9 * scale * np.sqrt(n):
        raise InputError("x or y is fully explained by the controls (zero residual variance)")
    rho = _pearson(ex, ey)

    boot = np.empty(n_boot)
    for s, ii in _boot_chunks(rng, n, n_boot, n * (k + 3)):
        bx = resample_ranks(x, ii)
        by = resample_ranks(y, ii)
        bz = resample_ranks(z, ii)  # (m, n, k): rank within each resample, per column
        qb = _design_q(bz)
        boot[s : s + len(ii)] = _rowwise_pearson(_residualise_rows(bx, qb), _residualise_rows(by, qb))
    ci_t = _interval(boot, ci) if n_boot else (float("nan"), float("nan"))

    # Freedman-Lane: y* = fitted + P e ; residual of y* given Z = (I - H) P e.
    m_perm, exact = _perm_plan(n, n_perm)
    null = np.empty(m_perm)
    for s, ii in _perm_chunks(rng, n, m_perm, exact):
        null[s : s + len(ii)] = _rowwise_pearson(np.broadcast_to(ex, ii.shape), _residualise_rows(ey[ii], q))
    names = list(control_names) if control_names is not None else [f"control_{j}" for j in range(k)]
    if len(names) != k:
        raise InputError(f"control_names has {len(names)} names for {k} control columns")
    return PartialResult(
        rho=rho,
        ci=ci_t,
        p_value=_perm_p(null, rho, exact),
        n=n,
        n_dropped=n_dropped,
        n_controls=k,
        ci_level=ci,
        n_boot=n_boot,
        n_perm=m_perm,
        controls=names,
    )


def binned_means(x, y, bins: int = 10, *, ci: float = 0.95) -> pd.DataFrame:
    """Means of y in equal-count (quantile) bins of x, with t-based confidence intervals.

    For the "norm vs covariate" figure: bin edges are the ``0, 1/bins, ..., 1`` quantiles of
    the finite x values (duplicate edges merged, so fewer bins can come back for tied x);
    each bin reports the mean of x, the mean of y and ``mean +- t_{(1+ci)/2, m-1} s / sqrt(m)``.

    Parameters
    ----------
    x, y : array_like of shape (n,)
        Covariate (binned) and outcome (e.g. the norm R). Non-finite pairs are dropped.
    bins : int
        Requested number of bins (>= 1).
    ci : float, keyword-only
        Level of the interval of each bin mean.

    Returns
    -------
    pandas.DataFrame
        One row per non-empty bin with columns ``bin`` (int), ``x_lo``, ``x_hi`` (edges),
        ``x_mean``, ``y_mean``, ``y_lo``, ``y_hi`` (CI; NaN for single-item bins), ``count``.

    Raises
    ------
    InputError
        If ``bins < 1`` or fewer than 2 valid pairs.
    """
    if int(bins) < 1:
        raise InputError(f"bins must be >= 1, got {bins!r}")
    if not 0 < ci < 1:
        raise InputError(f"ci must be in (0, 1), got {ci!r}")
    x = np.asarray(x, dtype=np.float64).ravel()
    y = np.asarray(y, dtype=np.float64).ravel()
    if x.shape != y.shape:
        raise InputError(f"x and y differ in length: {x.size} vs {y.size}")
    ok = np.isfinite(x) & np.isfinite(y)
    x, y = x[ok], y[ok]
    if x.size < 2:
        raise InputError(f"need at least 2 valid pairs to bin, got {x.size}")
    edges = np.unique(np.quantile(x, np.linspace(0, 1, int(bins) + 1)))
    if edges.size == 1:
        edges = np.array([edges[0], edges[0]])
    # bin i holds edges[i] <= x < edges[i+1]; the last bin is closed on the right
    b = np.clip(np.searchsorted(edges, x, side="right") - 1, 0, edges.size - 2)
    rows = []
    for i in range(edges.size - 1):
        m = b == i
        c = int(m.sum())
        if c == 0:
            continue
        yi = y[m]
        mean = float(yi.mean())
        if c > 1:
            half = float(_sps.t.ppf((1 + ci) / 2, c - 1) * yi.std(ddof=1) / np.sqrt(c))
            lo, hi = mean - half, mean + half
        else:
            lo = hi = float("nan")
        rows.append(
            dict(bin=i, x_lo=float(edges[i]), x_hi=float(edges[i + 1]), x_mean=float(x[m].mean()),
                 y_mean=mean, y_lo=lo, y_hi=hi, count=c)
        )
    return pd.DataFrame(rows, columns=["bin", "x_lo", "x_hi", "x_mean", "y_mean", "y_lo", "y_hi", "count"])
