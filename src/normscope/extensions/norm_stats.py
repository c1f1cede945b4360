"""Streaming, mergeable statistics of embedding norms: moments and a relative-error quantile sketch.

:class:`NormSketch` summarises any number of norms ``||z||`` in memory that does not grow with
their count, and two sketches of disjoint parts merge into the sketch of the union. It is what the
Ray engine (:mod:`normscope.extensions.ray_engine`) aggregates over the blocks of a corpus, so the driver
never holds the vectors, nor even all the norms.

- **Moments**: count, mean and the sum of squared deviations ``M2`` in float64, updated per chunk
  and merged with the pairwise formulas of Chan, Golub & LeVeque (1979) ("Updating formulae and a
  pairwise algorithm for computing sample variances"); ``sd = sqrt(M2 / (n - 1))``. Exact up to
  float64 rounding; minimum and maximum are exact.
- **Quantiles**: a fixed-bin logarithmic histogram, the dense-store form of DDSketch (Masson, Rim
  & Lee 2019, "DDSketch: a fast and fully-mergeable quantile sketch with relative-error
  guarantees", PVLDB 12(12)). Bin ``i`` holds the values in ``(gamma**(i-1), gamma**i]`` with
  ``gamma = (1 + a) / (1 - a)``; a quantile is reported as ``2 gamma**i / (gamma + 1)``, which is
  within relative error ``a`` of every value of its bin. With the default ``a = 1e-3`` and bins
  covering ``[2**-20, 2**20]`` the sketch holds 13,865 int64 counters (111 kB) whatever the corpus
  size. Norms of 0 have their own counter; norms outside the range are counted as below/above it
  and a quantile that falls there is reported as the exact minimum/maximum.

The quantile of level ``q`` is the order statistic of 0-based rank ``floor(q (n - 1))`` (numpy's
``np.quantile(..., method="lower")``); the sketch returns it within relative error ``a``.
"""

from __future__ import annotations

import math

import numpy as np

from normscope.errors import InputError

__all__ = ["NormSketch", "DEFAULT_QUANTILES", "RELATIVE_ACCURACY"]

#: Relative accuracy ``a`` of the quantiles (see module docstring).
RELATIVE_ACCURACY = 1e-3
#: Quantile levels reported by :meth:`NormSketch.summary`.
DEFAULT_QUANTILES = (0.01, 0.05, 0.25, 0.5, 0.75, 0.95, 0.99)
_LOG2_RANGE = 20  # bins cover [2**-20, 2**20]


class NormSketch:
    """Mergeable moments and quantile sketch of non-negative values (embedding norms).

    Parameters
    ----------
    relative_accuracy : float
        ``a`` in (0, 0.5): reported quantiles are within relative error ``a`` of the true order
        statistic (for values inside ``[2**-20, 2**20]``; outside it, the exact min/max).

    Attributes
    ----------
    n : int
        Values seen.
    mean : float
        Their mean (float64).
    m2 : float
        Sum of squared deviations from the mean (float64).
    min, max : float
        Exact extremes (``inf``/``-inf`` while empty).
    counts : ndarray of shape (n_bins,), int64
        Logarithmic bin counts.
    n_zero, n_below, n_above : int
        Zeros, and positive values below / above the binned range.

    Raises
    ------
    InputError
        ``relative_accuracy`` outside (0, 0.5).
    """

    def __init__(self, relative_accuracy: float = RELATIVE_ACCURACY):
        a = float(relative_accuracy)
        if not 0.0 < a < 0.5:
            raise InputError(f"relative_accuracy must lie in (0, 0.5), got {relative_accuracy}")
        self.relative_accuracy = a
        self._log_gamma = math.log((1.0 + a) / (1.0 - a))
        self._offset = int(math.ceil(_LOG2_RANGE * math.log(2.0) / self._log_gamma))
        self.counts = np.zeros(2 * self._offset + 1, dtype=np.int64)
        self.n = 0
        self.mean = 0.0
        self.m2 = 0.0
        self.min = math.inf
        self.max = -math.inf
        self.n_zero = 0
        self.n_below = 0
        self.n_above = 0

    # ------------------------------------------------------------------ updates
    def update(self, values) -> "NormSketch":
        """Add a chunk of values (norms) and return ``self``.

        Parameters
        ----------
        values : array-like of shape (m,)
            Non-negative finite numbers (units of ||z||).

        Raises
        ------
        InputError
            A negative, NaN or infinite value.
        """
        x = np.asarray(values, dtype=np.float64).reshape(-1)
        if x.size == 0:
            return self
        if not np.isfinite(x).all() or (x < 0).any():
            bad = x[~np.isfinite(x) | (x < 0)][0]
            raise InputError(f"norms must be finite and >= 0, got {bad}")
        m = x.size
        mean_b = float(x.mean())
        m2_b = float(np.sum((x - mean_b) ** 2))
        self._merge_moments(m, mean_b, m2_b, float(x.min()), float(x.max()))
        zero = x == 0.0
        self.n_zero += int(zero.sum())
        pos = x[~zero]
        idx = np.ceil(np.log(pos) / self._log_gamma).astype(np.int64) + self._offset
        below, above = idx < 0, idx >= self.counts.size
        self.n_below += int(below.sum())
        self.n_above += int(above.sum())
        inside = idx[~below & ~above]
        if inside.size:
            self.counts += np.bincount(inside, minlength=self.counts.size)
        return self

    def merge(self, other: "NormSketch") -> "NormSketch":
        """Add the values summarised by ``other`` (same accuracy) and return ``self``.

        Raises
        ------
        InputError
            Sketches of different relative accuracy.
        """
        if other.counts.shape != self.counts.shape or other.relative_accuracy != self.relative_accuracy:
            raise InputError("cannot merge norm sketches of different relative accuracy")
        if other.n:
            self._merge_moments(other.n, other.mean, other.m2, other.min, other.max)
            self.counts += other.counts
            self.n_zero += other.n_zero
            self.n_below += other.n_below
            self.n_above += other.n_above
        return self

    def _merge_moments(self, n_b: int, mean_b: float, m2_b: float, min_b: float, max_b: float) -> None:
        # Chan, Golub & LeVeque (1979): pairwise update of count, mean and M2
        n_a, n = self.n, self.n + n_b
        delta = mean_b - self.mean
        self.mean += delta * n_b / n
        self.m2 += m2_b + delta * delta * n_a * n_b / n
        self.n = n
        self.min = min(self.min, min_b)
        self.max = max(self.max, max_b)

    # ------------------------------------------------------------------ results
    @property
    def std(self) -> float:
        """Sample standard deviation (ddof=1); NaN for fewer than two values."""
        return math.sqrt(self.m2 / (self.n - 1)) if self.n > 1 else math.nan

    def quantile(self, q: float) -> float:
        """The ``q``-quantile: order statistic of rank ``floor(q (n - 1))``, within relative error ``a``.

        Parameters
        ----------
        q : float in [0, 1]

        Returns
        -------
        float
            NaN when empty.

        Raises
        ------
        InputError
            ``q`` outside [0, 1].
        """
        q = float(q)
        if not 0.0 <= q <= 1.0:
            raise InputError(f"quantile level must lie in [0, 1], got {q}")
        if self.n == 0:
            return math.nan
        rank = int(math.floor(q * (self.n - 1)))  # 0-based
        if rank < self.n_zero:
            return 0.0
        rank -= self.n_zero
        if rank < self.n_below:
            return self.min
        rank -= self.n_below
        cum = np.cumsum(self.counts)
        i = int(np.searchsorted(cum, rank, side="right"))
        if i >= self.counts.size:
            return self.max
        value = 2.0 * math.exp((i - self._offset) * self._log_gamma) / (1.0 + math.exp(self._log_gamma))
        return min(max(value, self.min), self.max)

    def summary(self, levels=DEFAULT_QUANTILES) -> dict:
        """JSON-ready summary: ``n``, ``norm_mean``, ``norm_std`` (ddof=1), ``norm_min``, ``norm_max``,
        ``norm_quantiles`` (``{"0.5": value, ...}``) and ``norm_quantile_rel_error`` (the accuracy ``a``)."""
        empty = self.n == 0
        return {
            "n": self.n,
            "norm_mean": math.nan if empty else self.mean,
            "norm_std": self.std,
            "norm_min": math.nan if empty else self.min,
            "norm_max": math.nan if empty else self.max,
            "norm_quantiles": {f"{q:g}": self.quantile(q) for q in levels},
            "norm_quantile_rel_error": self.relative_accuracy,
        }

    # ------------------------------------------------------------------ transport
    def to_state(self) -> dict:
        """Plain-data form (counts as a sparse index/count pair) for shipping between processes."""
        nz = np.flatnonzero(self.counts)
        return {
            "a": self.relative_accuracy, "n": self.n, "mean": self.mean, "m2": self.m2, "min": self.min,
            "max": self.max, "n_zero": self.n_zero, "n_below": self.n_below, "n_above": self.n_above,
            "bins": nz.astype(np.int64), "bin_counts": self.counts[nz],
        }

    @classmethod
    def from_state(cls, state: dict) -> "NormSketch":
        """Inverse of :meth:`to_state`."""
        s = cls(state["a"])
        s.n, s.mean, s.m2 = int(state["n"]), float(state["mean"]), float(state["m2"])
        s.min, s.max = float(state["min"]), float(state["max"])
        s.n_zero, s.n_below, s.n_above = int(state["n_zero"]), int(state["n_below"]), int(state["n_above"])
        s.counts[np.asarray(state["bins"], dtype=np.int64)] = np.asarray(state["bin_counts"], dtype=np.int64)
        return s
