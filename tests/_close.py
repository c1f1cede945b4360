"""Tolerances for comparing float32 embedding vectors computed along different paths.

The same text encoded in another batch (other padding, other batch size), in another process (a Ray
actor) or with other thread counts goes through float32 GEMMs whose summation order differs, so its
vector differs in the last bits: about 1e-7 of the vector's norm per component, and seen at 1.1e-6
absolute on 1-2 of 23,808 values of all-MiniLM-L6-v2 vectors (norm ~7) between the local and the Ray
engine. An absolute ``atol=1e-6`` on components is therefore a coin toss; a bound relative to each
vector's own norm is what float32 guarantees. Keep exact equality (``assert_array_equal``) where the
computation is the same (same batch, same process, a cached copy).
"""

from __future__ import annotations

import numpy as np

#: ||a_i - b_i|| <= RTOL * ||b_i|| per row: 100x the float32 rounding seen across batchings and processes,
#: 1,000x below what a real change of the vectors gives (a changed token, a changed model moves >= 1e-2).
RTOL = 1e-5


def assert_vectors_close(actual, desired, *, rtol: float = RTOL, err_msg: str = "") -> None:
    """Row-wise: the difference of each vector is at most ``rtol`` of the reference vector's norm.

    This bounds both the norm (relative error <= rtol) and the direction (cosine >= 1 - rtol**2 / 2,
    i.e. >= 1 - 5e-11 at the default), which is checked too. Computed in float64.
    """
    a = np.atleast_2d(np.asarray(actual, dtype=np.float64))
    b = np.atleast_2d(np.asarray(desired, dtype=np.float64))
    assert a.shape == b.shape, f"{err_msg} shapes differ: {a.shape} vs {b.shape}"
    nb = np.linalg.norm(b, axis=1)
    na = np.linalg.norm(a, axis=1)
    err = np.linalg.norm(a - b, axis=1)
    bad = err > rtol * np.maximum(nb, np.finfo(np.float32).tiny)
    assert not bad.any(), (f"{err_msg} {int(bad.sum())} of {len(b)} vectors differ by more than {rtol:g} of their norm "
                           f"(worst {float((err / np.maximum(nb, 1e-30)).max()):.3g}, row {int(np.argmax(err / np.maximum(nb, 1e-30)))})")
    ok = (na > 0) & (nb > 0)
    cos = (a[ok] * b[ok]).sum(1) / (na[ok] * nb[ok])
    assert (cos >= 1 - max(1e-9, rtol**2)).all(), f"{err_msg} a cosine is below 1 - 1e-9: {cos.min()!r}"


def assert_item_columns_match(a_items, b_items, texts, *, rtol: float, err_msg: str = "") -> None:
    """Every per-item column of two item tables (pandas, keyed by ``text``) agrees on the rows ``texts``.

    Float columns within ``rtol`` (and an absolute 1e-6 of the column's largest magnitude, for values near
    0), every other column exactly; ``id`` and ``text`` are the keys, not compared. For the permutation tests
    of per-item outputs: run B got the items in another order, compared row by row with run A.
    """
    ta, tb = a_items.set_index("text"), b_items.set_index("text")
    for col in a_items.columns:
        if col in ("id", "text"):
            continue
        x, y = ta[col].loc[list(texts)].to_numpy(), tb[col].loc[list(texts)].to_numpy()
        if x.dtype.kind in "fc":
            scale = np.nanmax(np.abs(x)) if np.isfinite(x).any() else 1.0
            np.testing.assert_allclose(y, x, rtol=rtol, atol=1e-6 * scale, err_msg=f"{err_msg}{col}")
        else:
            np.testing.assert_array_equal(y, x, err_msg=f"{err_msg}{col}")
