"""Vector health: what is wrong with stored vectors before they go into a store, and whether two sets of vectors
come from the same model and distribution (``normscope inspect A [B]``).

**One set** (:func:`vector_health`): rows holding NaN or Inf; near-zero vectors, ``||v|| < floor`` (default
:data:`NEAR_ZERO_FLOOR` = 3.45e-4 = sqrt(float32 machine epsilon, 1.19e-7): the floor below which qdrant is
reported (issue 40) to leave a Cosine vector un-normalised, so its "cosine" is a raw dot product near 0 and it
ranks wrong; normscope itself drops a vector whose norm is below 1e-3 x the median norm as junk); the dimension;
exact duplicate vectors (byte-identical float32 rows); the norm distribution (min, quartiles, max).

**Two sets** (:func:`compare_sets`), A (e.g. the index) and B (e.g. the queries, or a new batch):

- norms: the two-sample Kolmogorov-Smirnov test (``scipy.stats.ks_2samp``, two-sided, exact or asymptotic as
  scipy chooses); statistic ``D`` = the largest gap between the two empirical CDFs of ``||v||``;
- mean direction: ``cos(mu_A, mu_B)`` with ``mu`` the mean of the *unit* vectors ``v / ||v||`` of a set;
  permutation p-value: the labels A/B are permuted ``n_perm`` times (seeded), ``p = (1 + #{cos_perm <=
  cos_obs}) / (1 + n_perm)``, one-sided (a smaller cosine is the shift). It resamples only the assignment of
  vectors to sets; it assumes the vectors of one set are exchangeable with each other;
- the model fingerprints stored with the vectors (a different model or revision is reported as such);
- the share of B's vectors that also occur (byte-identical) in A.

The flag "another model or a shifted distribution" is raised when the dimensions or the recorded models differ,
or when either test has p < ``alpha`` (0.01 by default; two tests, so the family-wise level is at most
2 alpha by Bonferroni). Norms alone miss a rotation (another model with the same norm distribution); the mean
direction alone misses a rescaling: both are run. A flag says the two sets differ; it does not say which one is
"wrong", and with large sets a small, harmless shift is also flagged (read ``D`` and the cosine, not only p).

Every statistic here is invariant under a permutation of the rows of a set (the tests check it).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from normscope.errors import InputError
from normscope.table import ModelFingerprint

__all__ = ["NEAR_ZERO_FLOOR", "STORE_NOTE", "read_raw_vectors", "vector_health", "compare_sets", "inspect_files"]

#: sqrt(float32 epsilon) = sqrt(1.1920929e-07): below this norm a Cosine vector is reported (issue 40) to be stored
#: un-normalised by qdrant.
NEAR_ZERO_FLOOR = float(np.sqrt(np.finfo(np.float32).eps))
#: What the near-zero floor means in a store (printed beside the count).
STORE_NOTE = ("qdrant is reported to skip normalising a Cosine vector with ||v|| < 3.45e-4 (its raw dot product "
              "then stands for the cosine, so it ranks near the bottom whatever its direction); a cosine of a zero "
              "vector is undefined (0/0: NaN or 0 depending on the library); normscope drops vectors below "
              "1e-3 x the median norm as junk")


def read_raw_vectors(path: str | Path) -> tuple[list[str], np.ndarray, ModelFingerprint | None]:
    """Ids, vectors and fingerprint of a ``.parquet`` file or shard folder (``vector`` column) or a ``.npy``,
    *without* refusing NaN/Inf rows (which :func:`normscope.engine.shards.open_vectors` would).

    Returns
    -------
    ids : list of str (n)
    vectors : ndarray of shape (n, d), float32
    fingerprint : ModelFingerprint or None

    Raises
    ------
    InputError
        Missing file, unknown format, no ``vector`` column, rows of differing lengths, no rows.
    """
    from normscope.engine.shards import open_vectors
    from normscope.table import _vectors_from_arrow

    src = open_vectors(path)
    if src._kind == "npy":
        X = np.asarray(np.load(src.path, allow_pickle=False), dtype=np.float32)
        return [str(i) for i in range(len(X))], X, None
    import pyarrow as pa

    cols = ["id", "vector"] if "id" in src._dataset.schema.names else ["vector"]
    tbl = src._dataset.to_table(columns=cols)
    X = _vectors_from_arrow(pa.chunked_array(tbl.column("vector").chunks), src.path)
    ids = [str(x) for x in tbl.column("id").to_pylist()] if "id" in cols else [str(i) for i in range(len(X))]
    return ids, X, src.fingerprint


def _duplicate_groups(X: np.ndarray) -> list[list[int]]:
    """Row positions of byte-identical rows, one list per group of >= 2, groups ordered by first row."""
    rows = np.ascontiguousarray(X).view(np.dtype((np.void, X.dtype.itemsize * X.shape[1]))).ravel()
    _, inverse, counts = np.unique(rows, return_inverse=True, return_counts=True)
    groups: dict[int, list[int]] = {}
    for i, g in enumerate(inverse.ravel()):
        if counts[g] > 1:
            groups.setdefault(int(g), []).append(i)
    return sorted(groups.values(), key=lambda g: g[0])


def vector_health(X, ids=None, *, floor: float = NEAR_ZERO_FLOOR, show: int = 5) -> dict:
    """Health checks of one set of vectors.

    Parameters
    ----------
    X : array-like of shape (n, d), float
        Raw vectors (any dtype; checked as float32, the dtype stores keep).
    ids : sequence of str, optional
        Row ids (default ``"0".."n-1"``).
    floor : float, keyword-only
        Near-zero norm floor (default :data:`NEAR_ZERO_FLOOR`, 3.45e-4).
    show : int, keyword-only
        Ids listed per finding.

    Returns
    -------
    dict
        ``n``, ``dim``, ``nonfinite`` (``count``, ``nan_rows``, ``inf_rows``, ``ids``), ``near_zero`` (``floor``,
        ``count``, ``exact_zero``, ``ids``, ``note``), ``duplicates`` (``groups``, ``rows`` in a group,
        ``extra_rows`` = rows - groups, ``examples``: id lists), ``norms`` (over finite rows: ``min``, ``q25``,
        ``median``, ``q75``, ``max``, float64), ``ok`` (no non-finite, near-zero or duplicate row).

    Raises
    ------
    InputError
        ``X`` not 2-D or empty, ``ids`` of another length, ``floor`` not positive.
    """
    X = np.asarray(X, dtype=np.float32)
    if X.ndim != 2 or X.shape[0] == 0 or X.shape[1] == 0:
        raise InputError(f"expected vectors of shape (n, d) with n, d >= 1, got shape {X.shape}")
    ids = [str(i) for i in range(len(X))] if ids is None else [str(i) for i in ids]
    if len(ids) != len(X):
        raise InputError(f"{len(ids)} ids for {len(X)} vectors")
    if not (floor > 0 and np.isfinite(floor)):
        raise InputError(f"the near-zero floor must be a positive number, got {floor}")
    nan = np.isnan(X).any(axis=1)
    inf = np.isinf(X).any(axis=1)
    bad = nan | inf
    norms = np.full(len(X), np.nan)
    norms[~bad] = np.linalg.norm(X[~bad].astype(np.float64), axis=1)
    near = ~bad & (norms < floor)
    dups = _duplicate_groups(X[~bad]) if (~bad).any() else []
    good_pos = np.flatnonzero(~bad)
    dups = [[int(good_pos[i]) for i in g] for g in dups]
    fin = norms[~bad]
    q = np.quantile(fin, [0.0, 0.25, 0.5, 0.75, 1.0]) if fin.size else [np.nan] * 5
    n_dup_rows = sum(len(g) for g in dups)
    return {
        "n": int(len(X)), "dim": int(X.shape[1]),
        "nonfinite": {"count": int(bad.sum()), "nan_rows": int(nan.sum()), "inf_rows": int(inf.sum()),
                      "ids": [ids[i] for i in np.flatnonzero(bad)[:show]]},
        "near_zero": {"floor": float(floor), "count": int(near.sum()), "exact_zero": int((~bad & (norms == 0)).sum()),
                      "ids": [ids[i] for i in np.flatnonzero(near)[:show]], "note": STORE_NOTE},
        "duplicates": {"groups": len(dups), "rows": int(n_dup_rows), "extra_rows": int(n_dup_rows - len(dups)),
                       "examples": [[ids[i] for i in g[:show]] for g in dups[:show]]},
        "norms": dict(zip(("min", "q25", "median", "q75", "max"), (float(v) for v in q))),
        "ok": bool(not bad.any() and not near.any() and not dups),
    }


def _unit(X: np.ndarray, floor: float) -> np.ndarray:
    """Unit vectors of the finite rows with a norm >= floor (float64)."""
    X = np.asarray(X, dtype=np.float64)
    X = X[np.isfinite(X).all(axis=1)]
    n = np.linalg.norm(X, axis=1)
    keep = n >= floor
    return X[keep] / n[keep, None]


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    na, nb = np.linalg.norm(a), np.linalg.norm(b)
    return float(a @ b / (na * nb)) if na > 0 and nb > 0 else float("nan")


def mean_direction_test(UA: np.ndarray, UB: np.ndarray, *, n_perm: int = 1000, seed: int = 0) -> tuple[float, float]:
    """``cos(mu_A, mu_B)`` of the mean unit vectors and its one-sided label-permutation p-value.

    Parameters
    ----------
    UA, UB : ndarray of shape (n_A, d), (n_B, d)
        Unit vectors.
    n_perm : int, keyword-only
        Permutations of the A/B labels (>= 1).
    seed : int, keyword-only

    Returns
    -------
    (cosine, p) : tuple of float
        ``p = (1 + #{cos_perm <= cos_obs}) / (1 + n_perm)``.
    """
    U = np.concatenate([UA, UB])
    total = U.sum(axis=0)
    nA = len(UA)
    obs = _cos(UA.sum(axis=0), UB.sum(axis=0))
    rng = np.random.default_rng(seed)
    below = 0
    for start in range(0, n_perm, 100):
        m = min(100, n_perm - start)
        lab = np.zeros((m, len(U)))
        for r in range(m):
            lab[r, rng.permutation(len(U))[:nA]] = 1.0
        SA = lab @ U
        SB = total[None, :] - SA
        c = np.einsum("ij,ij->i", SA, SB) / (np.linalg.norm(SA, axis=1) * np.linalg.norm(SB, axis=1))
        below += int((c <= obs + 1e-12).sum())
    return obs, (1 + below) / (1 + n_perm)


def compare_sets(XA, XB, *, fingerprint_a=None, fingerprint_b=None, floor: float = NEAR_ZERO_FLOOR, n_perm: int = 1000,
                 alpha: float = 0.01, seed: int = 0) -> dict:
    """Do B's vectors come from the model and distribution of A's? (see the module docstring).

    Parameters
    ----------
    XA, XB : array-like of shape (n_A, d_A), (n_B, d_B)
        Raw vectors; non-finite rows and rows with a norm below ``floor`` are left out of the tests.
    fingerprint_a, fingerprint_b : ModelFingerprint, optional, keyword-only
        The models recorded with the vectors.
    floor : float, keyword-only
    n_perm : int, keyword-only
        Label permutations of the mean-direction test (>= 1).
    alpha : float, keyword-only
        Level of each test for the flag, in (0, 1).
    seed : int, keyword-only

    Returns
    -------
    dict
        ``n_a``, ``n_b`` (rows tested), ``dim_a``, ``dim_b``; ``models`` (``a``, ``b`` names or None, ``same``: True,
        False or None when either is unrecorded); ``ks`` (``D``, ``p``; run whatever the dimensions); ``mean_direction`` (``cosine``, ``p``, ``n_perm``; None when the
        dimensions differ); ``b_in_a`` (share of B's rows byte-identical to some row of A); ``flag`` (bool) and
        ``reasons`` (list of str); ``alpha``.

    Raises
    ------
    InputError
        Fewer than 2 testable rows in a set, ``n_perm`` < 1, ``alpha`` outside (0, 1).
    """
    if n_perm < 1:
        raise InputError(f"--n-perm must be >= 1, got {n_perm}")
    if not 0 < alpha < 1:
        raise InputError(f"--alpha must be in (0, 1), got {alpha}")
    from scipy.stats import ks_2samp

    A, B = np.asarray(XA, dtype=np.float32), np.asarray(XB, dtype=np.float32)
    UA, UB = _unit(A, floor), _unit(B, floor)
    if len(UA) < 2 or len(UB) < 2:
        raise InputError(f"each set needs >= 2 finite vectors with norm >= {floor:g} (A has {len(UA)}, B {len(UB)})")
    na = np.linalg.norm(A[np.isfinite(A).all(axis=1)].astype(np.float64), axis=1)
    nb = np.linalg.norm(B[np.isfinite(B).all(axis=1)].astype(np.float64), axis=1)
    na, nb = na[na >= floor], nb[nb >= floor]
    ks = ks_2samp(na, nb)
    reasons = []
    same_model = None
    if fingerprint_a is not None and fingerprint_b is not None:
        same_model = fingerprint_a == fingerprint_b
        if not same_model:
            reasons.append(f"recorded models differ: {fingerprint_a.name} vs {fingerprint_b.name}")
    out = {"n_a": int(len(UA)), "n_b": int(len(UB)), "dim_a": int(A.shape[1]), "dim_b": int(B.shape[1]),
           "models": {"a": getattr(fingerprint_a, "name", None), "b": getattr(fingerprint_b, "name", None),
                      "same": same_model},
           "ks": {"D": float(ks.statistic), "p": float(ks.pvalue)}, "mean_direction": None, "b_in_a": None,
           "alpha": float(alpha)}
    if ks.pvalue < alpha:
        reasons.append(f"norm distributions differ (KS D = {ks.statistic:.3f}, p = {ks.pvalue:.2g})")
    if A.shape[1] != B.shape[1]:
        reasons.append(f"dimensions differ ({A.shape[1]} vs {B.shape[1]}): another model")
    else:
        cos, p = mean_direction_test(UA, UB, n_perm=n_perm, seed=seed)
        out["mean_direction"] = {"cosine": cos, "p": p, "n_perm": int(n_perm)}
        if p < alpha:
            reasons.append(f"mean directions differ (cos = {cos:.3f}, permutation p = {p:.2g})")
        rows_a = set(np.ascontiguousarray(A).view(np.dtype((np.void, 4 * A.shape[1]))).ravel().tolist())
        rows_b = np.ascontiguousarray(B).view(np.dtype((np.void, 4 * B.shape[1]))).ravel().tolist()
        out["b_in_a"] = float(np.mean([r in rows_a for r in rows_b]))
    out["flag"] = bool(reasons)
    out["reasons"] = reasons
    return out


def inspect_files(a: str | Path, b: str | Path | None = None, *, floor: float = NEAR_ZERO_FLOOR, n_perm: int = 1000,
                  alpha: float = 0.01, seed: int = 0) -> dict:
    """:func:`vector_health` of file A (and B), and :func:`compare_sets` of A and B when B is given.

    Returns
    -------
    dict
        ``a`` (``path``, ``model`` name or None, the health dict), ``b`` (the same, or None), ``compare`` (or None).

    Raises
    ------
    InputError
        As :func:`read_raw_vectors`, :func:`vector_health`, :func:`compare_sets`.
    """
    ids_a, A, fa = read_raw_vectors(a)
    out = {"a": {"path": str(a), "model": getattr(fa, "name", None), **vector_health(A, ids_a, floor=floor)},
           "b": None, "compare": None}
    if b is not None:
        ids_b, B, fb = read_raw_vectors(b)
        out["b"] = {"path": str(b), "model": getattr(fb, "name", None), **vector_health(B, ids_b, floor=floor)}
        out["compare"] = compare_sets(A, B, fingerprint_a=fa, fingerprint_b=fb, floor=floor, n_perm=n_perm,
                                      alpha=alpha, seed=seed)
    return out
