"""Bootstrap CIs of Spearman rho: ``stats.resample_ranks`` vs ``scipy.stats.rankdata`` per resample.

Data: the real all-MiniLM-L6-v2 input embedding table (its 30,522 token rows' norms, the tokens stage's
x) against each token's Zipf frequency from wordfreq (its y), when the bundled model is installed; the
same shapes drawn from a seeded normal otherwise (the script prints which).

Per round, interleaved (the order alternates), after one warm-up each:

- **ranks only**: the bootstrap's rank step on one block of ``--rows`` resamples, the baseline
  ``scipy.stats.rankdata(v[ii], axis=1)`` (a sort per row) against ``resample_ranks(v, ii)`` (counts of the
  distinct values drawn); both outputs are checked equal bit for bit;
- **end to end**: ``stats.correlation(x, y, n_boot=--n-boot, n_perm=0)`` as it is against the same call
  with ``stats.resample_ranks`` replaced by the ``rankdata`` baseline (the code before the change); the
  Spearman CIs are checked equal.

Printed: median seconds of each, the ratio baseline / new per round and its median, the CPU seconds.

Usage: nice -n 5 python benchmarks/bootstrap_ranks.py [--n-boot 2000] [--rows 130] [--repeats 3]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np


def real_xy(seed: int = 0) -> tuple[np.ndarray, np.ndarray, str]:
    """(norms, Zipf frequencies) of the bundled MiniLM's token table, else a seeded stand-in."""
    try:
        from normscope.encoders import load_encoder
        from normscope.tokens import embedding_table_of, token_table

        weights, tokens, special, _ = embedding_table_of(load_encoder())
        t = token_table(weights, tokens, special)
        x = np.asarray(t["norm"], dtype=np.float64)
        y = np.asarray(t["zipf"], dtype=np.float64)
        ok = np.isfinite(x) & np.isfinite(y)
        return x[ok], y[ok], f"all-MiniLM-L6-v2 token table ({ok.sum():,} rows): norm vs Zipf frequency"
    except Exception as exc:  # no model here: the same shapes, synthetic (said in the output)
        rng = np.random.default_rng(seed)
        x = rng.normal(size=30_522)
        y = np.round(0.3 * x + rng.normal(size=x.size), 1)  # ties, as Zipf values have
        return x, y, f"synthetic normal, 30,522 rows ({type(exc).__name__}: no token table)"


def _timed(fn):
    w, c = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - w, time.process_time() - c


def main(argv=None) -> int:
    from scipy.stats import rankdata

    from normscope import stats

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n-boot", type=int, default=2000)
    ap.add_argument("--rows", type=int, default=130, help="resamples in the ranks-only block")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    x, y, what = real_xy()
    print(f"data: {what}")
    ii = np.random.default_rng(1).integers(0, x.size, size=(args.rows, x.size))

    def baseline_ranks(v, idx):
        return rankdata(np.asarray(v)[idx], axis=1)

    new = stats.resample_ranks
    assert np.array_equal(new(x, ii), baseline_ranks(x, ii)) and np.array_equal(new(y, ii), baseline_ranks(y, ii))

    def end_to_end(ranker):
        stats.resample_ranks = ranker
        try:
            return stats.correlation(x, y, n_boot=args.n_boot, n_perm=0, seed=0)
        finally:
            stats.resample_ranks = new

    for label, base_fn, new_fn in (
        ("ranks only", lambda: (baseline_ranks(x, ii), baseline_ranks(y, ii)), lambda: (new(x, ii), new(y, ii))),
        ("end to end", lambda: end_to_end(baseline_ranks), lambda: end_to_end(new)),
    ):
        base_fn(), new_fn()  # warm-up
        ratios, tb, tn, cb, cn = [], [], [], [], []
        for r in range(args.repeats):
            order = (base_fn, new_fn) if r % 2 == 0 else (new_fn, base_fn)
            res = {}
            for fn in order:
                out, wall, cpu = _timed(fn)
                res[fn] = (out, wall, cpu)
            (ob, wb, cpb), (on, wn, cpn) = res[base_fn], res[new_fn]
            if label == "end to end":
                assert ob.spearman_ci == on.spearman_ci, (ob.spearman_ci, on.spearman_ci)
            ratios.append(wb / wn)
            tb.append(wb), tn.append(wn), cb.append(cpb), cn.append(cpn)
        print(f"{label}: rankdata {statistics.median(tb):.3f} s / resample_ranks {statistics.median(tn):.3f} s, "
              f"ratio {statistics.median(ratios):.2f}x (rounds {', '.join(f'{q:.2f}' for q in ratios)}; "
              f"CPU {statistics.median(cb) / statistics.median(cn):.2f}x); outputs equal")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
