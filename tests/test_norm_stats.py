"""Streaming norm statistics (extensions/norm_stats.py): moments and quantiles against numpy on the same values."""

from __future__ import annotations

import numpy as np
import pytest

from normscope.extensions.norm_stats import DEFAULT_QUANTILES, RELATIVE_ACCURACY, NormSketch
from normscope.errors import InputError


@pytest.fixture(scope="module")
def norms():
    rng = np.random.default_rng(7)
    x = rng.lognormal(mean=1.0, sigma=0.4, size=100_000)  # MiniLM-like raw norms (a few units)
    x[:50] = 0.0  # zero vectors have their own counter
    return rng.permutation(x)


def _check_against_numpy(sketch: NormSketch, x: np.ndarray) -> None:
    assert sketch.n == x.size
    assert sketch.mean == pytest.approx(x.mean(), rel=1e-12)
    assert sketch.std == pytest.approx(x.std(ddof=1), rel=1e-10)
    assert sketch.min == x.min() and sketch.max == x.max()
    levels = list(DEFAULT_QUANTILES) + [0.0, 0.001, 0.3337, 0.9999, 1.0]
    for q in levels:
        true = np.quantile(x, q, method="lower")  # order statistic of rank floor(q (n - 1))
        assert abs(sketch.quantile(q) - true) <= RELATIVE_ACCURACY * true * (1 + 1e-9), q


def test_sketch_matches_numpy_streamed_in_chunks(norms):
    sketch = NormSketch()
    for chunk in np.array_split(norms, 37):
        sketch.update(chunk)
    _check_against_numpy(sketch, norms)
    summary = sketch.summary()
    assert summary["norm_quantiles"]["0.5"] == sketch.quantile(0.5)
    assert summary["norm_quantile_rel_error"] == RELATIVE_ACCURACY


def test_merge_of_parts_equals_the_whole_and_survives_transport(norms):
    whole = NormSketch().update(norms)
    cuts = np.sort(np.random.default_rng(1).choice(norms.size, size=6, replace=False))
    merged = NormSketch()
    for part in np.split(norms, cuts):
        merged.merge(NormSketch.from_state(NormSketch().update(part).to_state()))
    np.testing.assert_array_equal(merged.counts, whole.counts)
    assert merged.n_zero == whole.n_zero == 50
    _check_against_numpy(merged, norms)
    # memory does not grow with the number of values
    assert merged.counts.size == NormSketch().counts.size == 13865


def test_values_outside_the_binned_range_give_exact_extremes():
    x = np.array([1e-9, 2.0, 3.0, 4.0, 1e9])
    s = NormSketch().update(x)
    assert (s.n_below, s.n_above) == (1, 1)
    assert s.quantile(0.0) == 1e-9 and s.quantile(1.0) == 1e9
    assert s.quantile(0.5) == pytest.approx(3.0, rel=RELATIVE_ACCURACY)
    empty = NormSketch()
    assert np.isnan(empty.quantile(0.5)) and np.isnan(empty.std)


@pytest.mark.parametrize("bad", [[1.0, -0.5], [np.nan], [np.inf]])
def test_bad_values_are_refused(bad):
    with pytest.raises(InputError, match="finite and >= 0"):
        NormSketch().update(bad)


def test_bad_arguments_are_refused():
    with pytest.raises(InputError, match="quantile level"):
        NormSketch().update([1.0]).quantile(1.5)
    with pytest.raises(InputError, match="relative_accuracy"):
        NormSketch(0.7)
    with pytest.raises(InputError, match="different relative accuracy"):
        NormSketch(1e-3).merge(NormSketch(1e-2))
