"""Ray engine vs local engine (items/s), and peak memory of the streaming norm statistics.

Part 1 -- throughput. The first 2,000 SciFact abstracts (BEIR corpus records: title + text, written
as a BEIR ``corpus.jsonl.gz``) are embedded end to end with ``normscope.engine.embed_input`` and the
cache OFF (every run encodes everything), three ways in one process and one local Ray cluster:

- baseline: ``engine='local'`` (this process, torch's default threads; model already loaded, so its
  load time is printed separately);
- ``engine='ray'`` with 1 worker (2 torch threads) and with 2 workers (1 thread each): read_json ->
  actor pool -> write_parquet -> streaming norm statistics; actor start and model load are INSIDE
  the timed region (they are part of every Ray job).

The three run in 2 rounds, in the order A B C then C B A, so load drifting in from other jobs
hits each alike; the figures are means over the rounds (per-round ratios printed too). Each run
also embeds the first 64 abstracts alone (one batch: the fixed cost of a job), so
besides end-to-end items/s it prints the marginal rate ``(2000 - 64) / (t_2000 - t_64)``, the rate a
long job approaches. Printed: items/s of each and the ratios ray / local. Skips (exit 0) without
../shared/data.

Part 2 -- memory. 1,000,000 vectors resampled from the real MiniLM SciFact vectors
(``_scale_data.resample``) are saved as a .npy; for N = 10k, 100k, 1M a fresh Python process
computes the norm statistics of the first N rows two ways and reports its peak RSS
(``VmHWM``):

- streaming: 8,192-row chunks read into one buffer -> norms -> ``NormSketch.update`` (what every
  Ray block does; the driver only merges sketches);
- baseline "collect": all N vectors copied into memory, then numpy mean / sd / quantiles.

Printed: peak RSS per N and method, and the ratio RSS(1M) / RSS(10k) of each method.

Usage: nice -n 10 python benchmarks/ray_scaling.py [--n 2000] [--rounds 2] [--skip-throughput] [--skip-memory]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))


def _dir_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def throughput(n: int, work: Path, rounds: int = 2) -> dict | None:
    from _scale_data import scifact_records

    rows = scifact_records(n)
    if rows is None:
        print("throughput: SKIPPED (no ../shared/data/scifact; set NORMSCOPE_DATA)")
        return None
    corpus = work / "scifact2k"
    corpus.mkdir()
    with gzip.open(corpus / "corpus.jsonl.gz", "wt", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")

    import ray
    import torch

    from normscope.encoders import load_encoder
    from normscope.engine import embed_input

    t0 = time.perf_counter()
    load_encoder(fresh=True)
    model_load_s = time.perf_counter() - t0
    load_encoder()  # the memoised instance the local engine uses
    t0 = time.perf_counter()
    ray.init(num_cpus=3, include_dashboard=False, log_to_driver=False, logging_level="WARNING")
    cluster_start_s = time.perf_counter() - t0

    configs = {"local": {}, "ray, 1 worker x 2 threads": {"engine": "ray", "workers": 1},
               "ray, 2 workers x 1 thread": {"engine": "ray", "workers": 2}}
    small = work / "small"
    small.mkdir()
    with gzip.open(small / "corpus.jsonl.gz", "wt", encoding="utf-8") as f:
        for r in rows[:64]:
            f.write(json.dumps(r) + "\n")
    times = {name: {"small": [], "full": []} for name in configs}
    out_bytes = {}
    names = list(configs)
    for rnd in range(rounds):  # A B C, then C B A: drifting load from other jobs hits every engine alike
        for name in (names if rnd % 2 == 0 else names[::-1]):
            for label, src in (("small", small), ("full", corpus)):  # small: one batch, the fixed cost of a job
                out = work / f"{label}-{names.index(name)}-{rnd}.parquet"
                t0 = time.perf_counter()
                summary, _ = embed_input(src, out=out, cache=False, batch_size=64, **configs[name])
                times[name][label].append((time.perf_counter() - t0, summary["n"]))
                if label == "full":
                    out_bytes[name] = (_dir_bytes(out) if out.is_dir() else out.stat().st_size) / summary["n"]
            (ts, _), (tf, nf) = times[name]["small"][-1], times[name]["full"][-1]
            print(f"  round {rnd + 1}: {name:<28} {nf} items in {tf:7.1f} s = {nf / tf:6.2f} items/s; "
                  f"64 items in {ts:5.1f} s", flush=True)
    ray.shutdown()
    runs = {}
    for name in names:
        full = [n_ / t for t, n_ in times[name]["full"]]
        marg = [(nf - ns) / (tf - ts) for (ts, ns), (tf, nf) in zip(times[name]["small"], times[name]["full"])]
        runs[name] = {"items_per_s": float(np.mean(full)), "items_per_s_rounds": full,
                      "marginal_items_per_s": float(np.mean(marg)), "marginal_rounds": marg,
                      "seconds_64": float(np.mean([t for t, _ in times[name]["small"]])),
                      "out_bytes_per_item": out_bytes[name]}
    base = runs["local"]
    print(f"texts: first {n} SciFact abstracts (title + text); torch threads in this process {torch.get_num_threads()}; "
          f"cache off; batch 64; {rounds} rounds (order A B C / C B A), means over rounds")
    print(f"local model load (excluded from the local runs, included in each Ray run): {model_load_s:.1f} s; "
          f"Ray cluster start (excluded): {cluster_start_s:.1f} s; load average now {os.getloadavg()[0]:.1f}")
    for name, r in runs.items():
        per_round = ", ".join(f"{a / b:.3f}" for a, b in zip(r["items_per_s_rounds"], base["items_per_s_rounds"]))
        print(f"  {name:<28} {r['items_per_s']:7.2f} items/s end to end, ratio vs local {r['items_per_s'] / base['items_per_s']:5.3f} "
              f"(per round {per_round}); marginal {r['marginal_items_per_s']:7.2f} items/s, ratio "
              f"{r['marginal_items_per_s'] / base['marginal_items_per_s']:5.3f}  (output {r['out_bytes_per_item']:.0f} bytes/item)")
    w1 = runs["ray, 1 worker x 2 threads"]
    print(f"per-worker rate (1 CPU worker, 2 threads): {w1['items_per_s']:.2f} items/s end to end, "
          f"{w1['marginal_items_per_s']:.2f} items/s marginal ((n - 64) / (t_n - t_64)); fixed cost of a job "
          f"~{w1['seconds_64'] - 64 / w1['marginal_items_per_s']:.0f} s")
    return {"n": n, "model_load_s": model_load_s, "cluster_start_s": cluster_start_s, "runs": runs,
            "ratio_ray1_vs_local": w1["items_per_s"] / base["items_per_s"],
            "ratio_ray2_vs_local": runs["ray, 2 workers x 1 thread"]["items_per_s"] / base["items_per_s"]}


# ----------------------------------------------------------------------------- memory
def _peak_rss_mib() -> float:
    """This process's peak resident set: ``VmHWM`` of /proc/self/status (Linux), else ``ru_maxrss``.

    ``ru_maxrss`` survives ``exec`` on Linux (a child would report its parent's peak), ``VmHWM`` does not.
    """
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _child(method: str, n: int, path: str) -> None:
    """Run in a fresh process: norm statistics of the first n rows of a .npy; print JSON with peak RSS."""
    from normscope.extensions.norm_stats import NormSketch

    with open(path, "rb") as f:
        version = np.lib.format.read_magic(f)
        read_header = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
        shape, _, dtype = read_header(f)
        d = shape[1]
        if method == "stream":
            sketch, rows = NormSketch(), 8192
            buf = np.empty((rows, d), dtype=dtype)
            done = 0
            while done < n:
                m = min(rows, n - done)
                f.readinto(memoryview(buf[:m]).cast("B"))
                sketch.update(np.linalg.norm(buf[:m].astype(np.float64), axis=1))
                done += m
            stats = {"mean": sketch.mean, "sd": sketch.std, "median": sketch.quantile(0.5)}
        else:
            allv = np.fromfile(f, dtype=dtype, count=n * d).reshape(n, d)
            r = np.linalg.norm(allv.astype(np.float64), axis=1)
            stats = {"mean": r.mean(), "sd": r.std(ddof=1), "median": float(np.quantile(r, 0.5, method="lower"))}
    rss_mib = _peak_rss_mib()
    print(json.dumps({"method": method, "n": n, "peak_rss_mib": rss_mib, **stats}))


def memory(work: Path, sizes=(10_000, 100_000, 1_000_000)) -> dict | None:
    from _scale_data import resample, scifact_vectors

    got = scifact_vectors()
    if got is None:
        print("memory: SKIPPED (no ../shared/data/scifact)")
        return None
    docs, _, source = got
    path = work / "vectors.npy"
    vectors = resample(docs, max(sizes), seed=0)
    np.save(path, vectors)
    del vectors, docs
    print(f"vectors: {max(sizes):,} resampled from {source} ({path.stat().st_size / 2**30:.2f} GiB .npy)")
    res = {}
    for method in ("stream", "collect"):
        for n in sizes:
            out = subprocess.run([sys.executable, __file__, "--child", method, str(n), str(path)],
                                 capture_output=True, text=True, check=True)
            r = json.loads(out.stdout.strip().splitlines()[-1])
            res[(method, n)] = r
            print(f"  {method:<8} N={n:>9,}  peak RSS {r['peak_rss_mib']:8.1f} MiB  mean {r['mean']:.6f}  "
                  f"sd {r['sd']:.6f}  median {r['median']:.6f}", flush=True)
    lo, hi = min(sizes), max(sizes)
    ratios = {m: res[(m, hi)]["peak_rss_mib"] / res[(m, lo)]["peak_rss_mib"] for m in ("stream", "collect")}
    print(f"peak RSS ratio N={hi:,} / N={lo:,}: streaming {ratios['stream']:.3f}, collect-all baseline {ratios['collect']:.3f}")
    print(f"streaming / collect-all peak RSS at N={hi:,}: "
          f"{res[('stream', hi)]['peak_rss_mib'] / res[('collect', hi)]['peak_rss_mib']:.3f}")
    dm = max(abs(res[("stream", n)]["mean"] - res[("collect", n)]["mean"]) / res[("collect", n)]["mean"] for n in sizes)
    dq = max(abs(res[("stream", n)]["median"] - res[("collect", n)]["median"]) / res[("collect", n)]["median"] for n in sizes)
    print(f"agreement: max relative difference of the mean {dm:.1e}, of the median {dq:.1e} (sketch bound 1e-3)")
    return {"ratios": ratios, "rows": [res[k] for k in res]}


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--skip-throughput", action="store_true")
    ap.add_argument("--skip-memory", action="store_true")
    ap.add_argument("--child", nargs=3, metavar=("METHOD", "N", "PATH"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        _child(args.child[0], int(args.child[1]), args.child[2])
        return {}
    try:
        import ray  # noqa: F401
    except ImportError:
        print("SKIPPED: the ray extra is not installed (pip install 'normscope[ray]')")
        return {}
    result = {}
    with tempfile.TemporaryDirectory(prefix="ray-scaling-") as tmp:
        work = Path(tmp)
        if not args.skip_throughput:
            print("== throughput: local engine vs Ray engine ==", flush=True)
            result["throughput"] = throughput(args.n, work, args.rounds)
        if not args.skip_memory:
            print("== memory: streaming norm statistics ==", flush=True)
            result["memory"] = memory(work)
    return result


if __name__ == "__main__":
    main()
