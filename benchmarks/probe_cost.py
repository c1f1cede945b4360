"""Time of the heat/drift probe against its cost model, per second-order method, in one run.

Cost model (docs/theory.md section 6), with the unit costs measured in this same run:

    K (C_bwd(B) + c P C_fwd) + 4 P C_fwd

- ``C_fwd``: float32 forward cost per probe item (no grad), on the probe's own chunks;
- ``C_bwd(B)``: one forward + backward of the symmetric InfoNCE loss on B pairs;
- ``c``: the per-item, per-batch constant of the method, in forwards, from its matrix products (which
  dominate a transformer's cost), **counted in this run** by a dispatch-mode counter on one chunk:

  - ``jvp`` (the default, exact): one forward-over-forward pass gives z, a and c. Every forward product
    becomes 9 (the value, 2 for each of the two first-order tangents, and 4 for the mixed one, one of
    them with the direction's zero second tangent, which PyTorch carries as a dense tensor): c = 9;
  - ``fd`` float64 (the previous default): a first-order JVP (3 products per forward product) and two
    float64 forwards: c = 3 + 2 C_fwd64 / C_fwd, with C_fwd64 measured here;
  - ``fd`` float32: c = 3 + 2.

  ``4 P C_fwd`` are the one-time costs: the observed norms (1 forward) and the lambda_rad JVP (3).

Unit costs are measured before and after each probe run and averaged (a shared CPU's load drifts). Times
are CPU seconds of this process (``time.process_time``; with one thread they exclude the time other jobs
take the core) and wall seconds; the ratio to the model is given for both. The earlier model
``K (C_bwd + 5 P C_fwd)`` (without the one-time costs) is printed for comparison with older figures.

Baseline for the speed-up: a naive per-item autograd loop (``--naive-items N``; per item and batch
``torch.autograd.functional.jvp`` (double backward, batch of one) and two float64 forwards), timed on N
items and extrapolated linearly to P.

Usage::

    python benchmarks/probe_cost.py            # P=1000, K=16, B=64, WordNet pairs, 1 thread
    python benchmarks/probe_cost.py --small    # P=200, K=4
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import time

import numpy as np
import torch
from torch.func import jvp

from normscope.datasets import wordfreq_words
from normscope.encoders import load_encoder
from normscope.pairs import load_pairs
from normscope.probes import TextEncoderAdapter, probe_moments, sample_pair_batches, symmetric_info_nce
from normscope.probes.moments import _make_chunks
from normscope.probes.second_order import second_directional

METHODS = {"jvp": dict(second_order="jvp"), "fd64": dict(second_order="fd", fd_dtype="float64"),
           "fd32": dict(second_order="fd", fd_dtype="float32")}


def count_products(fn) -> int:
    """Matrix products (mm, addmm, bmm, baddbmm) dispatched while ``fn()`` runs."""
    from torch.utils._python_dispatch import TorchDispatchMode

    n = [0]

    class _Count(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if func.overloadpacket.__name__ in ("mm", "addmm", "bmm", "baddbmm"):
                n[0] += 1
            return func(*args, **(kwargs or {}))

    with _Count():
        fn()
    return n[0]


def main(argv=None) -> int:
    args = _args(argv)
    torch.set_num_threads(args.threads)
    st = _setup(args)
    P, K, B = st.P, st.K, st.B
    print(f"P={P} K={K} B={B} threads={args.threads} chunks={len(st.chunks)} pairs={st.pairs.name}", flush=True)
    n_fwd, n_jvp, n_jvp2 = _products(st)
    bidx = sample_pair_batches(len(st.pairs), B, 3, 123)
    _fwd_all(st.ad, st.theta, st.feats)  # warm-up
    out = {"P": P, "K": K, "B": B, "threads": args.threads, "device": args.device,
           "products_per_forward_product": {"jvp": n_jvp / n_fwd, "nested_jvp": n_jvp2 / n_fwd}, "runs": {}}
    before = _unit_costs(st, bidx)
    for name in args.methods.split(","):
        out["runs"][name], before = _probe_run(st, name, before, bidx, n_fwd=n_fwd, n_jvp=n_jvp, n_jvp2=n_jvp2)
    names = list(out["runs"])
    if "jvp" in out["runs"] and "fd64" in out["runs"]:
        j, f = out["runs"]["jvp"], out["runs"]["fd64"]
        out["jvp_over_fd64"] = {"cpu": j["cpu_s"] / f["cpu_s"], "wall": j["wall_s"] / f["wall_s"]}
        print(f"jvp / fd64 (same run): CPU {j['cpu_s'] / f['cpu_s']:.2f}, wall {j['wall_s'] / f['wall_s']:.2f}", flush=True)
    if args.naive_items:
        n_naive, t_naive = _naive_loop(st, args.naive_items)
        out["naive"] = {"items_timed": n_naive, "extrapolated_wall_s": t_naive}
        for name in names:
            out["runs"][name]["speedup_vs_naive"] = t_naive / out["runs"][name]["wall_s"]
        print(f"naive per-item autograd loop: {t_naive:.1f} s wall extrapolated from {n_naive} items to P={P}", flush=True)
    st.ad.close()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=2, default=float)
    return 0


def _args(argv) -> argparse.Namespace:
    """The command line."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--items", type=int, default=1000, help="P, number of probe items (wordfreq top-P)")
    ap.add_argument("--batches", type=int, default=16, help="K")
    ap.add_argument("--batch-size", type=int, default=64, help="B")
    ap.add_argument("--pairs", default="wordnet", help="pair source spec (normscope.pairs.load_pairs)")
    ap.add_argument("--methods", default="jvp,fd64", help="comma-separated: jvp, fd64, fd32")
    ap.add_argument("--naive-items", type=int, default=0, help="items timed in the naive loop (0: skip it)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--small", action="store_true", help="P=200, K=4")
    ap.add_argument("--json", default=None, help="write the figures as JSON")
    args = ap.parse_args(argv)
    if args.small:
        args.items, args.batches = 200, 4
    return args


@dataclasses.dataclass
class _Setup:
    """The model (float32 and float64 adapters and parameters), the probe items, their chunks and features,
    the pairs, and P, K, B."""

    ad: object
    ad64: object
    theta: dict
    th64: dict
    items: list
    pairs: object
    chunks: list
    feats: list
    feats64: list
    P: int
    K: int
    B: int


def _setup(args) -> _Setup:
    """Load the model, the top-P wordfreq words and the pairs; chunk the items as the probe does."""
    enc = load_encoder(device=args.device)
    ad = TextEncoderAdapter(enc)
    ad64 = ad.with_dtype(torch.float64)
    items = wordfreq_words(args.items)
    pairs = load_pairs(args.pairs)
    theta = ad.parameters()
    th64 = {k: v.double() for k, v in ad64.parameters().items()}
    chunks = _make_chunks(ad, items, 128)
    feats = [ad.features(items, c, "query") for c in chunks]
    feats64 = [ad64.features(items, c, "query") for c in chunks]
    return _Setup(ad, ad64, theta, th64, items, pairs, chunks, feats, feats64, len(items), args.batches, args.batch_size)


def _products(st: _Setup) -> tuple[int, int, int]:
    """Matrix products of a forward, a first-order JVP and the nested JVP on the first chunk (printed as ratios)."""
    ad, theta = st.ad, st.theta
    v = {k: torch.randn_like(t) for k, t in theta.items()}
    f0 = st.feats[0]
    n_fwd = count_products(lambda: ad.embed(theta, f0, "query"))
    n_jvp = count_products(lambda: jvp(lambda p: ad.embed(p, f0, "query"), (theta,), (v,)))
    n_jvp2 = count_products(lambda: second_directional(lambda p: ad.embed(p, f0, "query"), theta, v))
    print(f"matrix products per forward product: first-order JVP {n_jvp / n_fwd:.2f}, nested JVP {n_jvp2 / n_fwd:.2f} "
          f"({n_fwd} in a forward)", flush=True)
    return n_fwd, n_jvp, n_jvp2


def _fwd_all(adapter, th, fs) -> None:
    """No-grad forwards of every chunk."""
    with torch.no_grad():
        for f in fs:
            adapter.embed(th, f, "query")


def _timed(fn) -> tuple[float, float]:
    """(wall, CPU) seconds of ``fn()``."""
    w0, c0 = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - w0, time.process_time() - c0


def _unit_costs(st: _Setup, bidx) -> dict:
    """Unit costs, (wall, CPU) each: C_fwd and C_fwd64 per item, C_bwd(B) (median of 3 batches)."""
    ad, theta, pairs = st.ad, st.theta, st.pairs
    fwd = min((_timed(lambda: _fwd_all(ad, theta, st.feats)) for _ in range(2)), key=lambda t: t[1])
    fwd64 = _timed(lambda: _fwd_all(st.ad64, st.th64, st.feats64))
    bwd = []
    for idx in bidx:
        def step(idx=idx):
            th = {k: v.detach().clone().requires_grad_(True) for k, v in theta.items()}
            loss = symmetric_info_nce(ad.embed(th, ad.features(pairs.left, idx, "query"), "query"),
                                      ad.embed(th, ad.features(pairs.right, idx, "doc"), "doc"), 0.05)
            torch.autograd.grad(loss, list(th.values()), allow_unused=True)
        bwd.append(_timed(step))
    return {"c_fwd": np.array(fwd) / st.P, "c_fwd64": np.array(fwd64) / st.P,
            "c_bwd": np.array([statistics.median(t[i] for t in bwd) for i in (0, 1)])}


def _probe_run(st: _Setup, name: str, before: dict, bidx, *, n_fwd: int, n_jvp: int, n_jvp2: int) -> tuple[dict, dict]:
    """One probe run of method ``name`` against its cost model (unit costs averaged before and after);
    returns (its figures, the unit costs measured after it)."""
    P, K, B = st.P, st.K, st.B
    w0, c0 = time.perf_counter(), time.process_time()
    m = probe_moments(st.ad, st.items, st.pairs, batch_size=B, batches=K, tau=0.05, seed=0, **METHODS[name])
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    after = _unit_costs(st, bidx)
    u = {k: (before[k] + after[k]) / 2 for k in before}
    const = {"jvp": n_jvp2 / n_fwd, "fd64": n_jvp / n_fwd + 2 * u["c_fwd64"] / u["c_fwd"],
             "fd32": n_jvp / n_fwd + 2}[name]
    model = K * (u["c_bwd"] + const * P * u["c_fwd"]) + (1 + n_jvp / n_fwd) * P * u["c_fwd"]
    old_model = K * (u["c_bwd"] + 5 * P * u["c_fwd"])
    run = {"wall_s": wall, "cpu_s": cpu, "constant_c": [float(x) for x in np.atleast_1d(const)][:2],
           "c_fwd_s_per_item": u["c_fwd"].tolist(), "c_fwd64_s_per_item": u["c_fwd64"].tolist(),
           "c_bwd_s": u["c_bwd"].tolist(), "cost_model_s": model.tolist(),
           "ratio_to_model": {"wall": wall / model[0], "cpu": cpu / model[1]},
           "old_model_K(C_bwd+5PC_fwd)_s": old_model.tolist(),
           "ratio_to_old_model": {"wall": wall / old_model[0], "cpu": cpu / old_model[1]},
           "timings_s": m.timings, "second_order": m.second_order, "check": m.second_order_check or m.fd_check}
    cst = const if np.ndim(const) == 0 else const[1]
    print(f"{name}: C_fwd {u['c_fwd'][1] * 1e3:.3f} ms/item CPU (C_fwd64 {u['c_fwd64'][1] / u['c_fwd'][1]:.2f} C_fwd), "
          f"C_bwd(B={B}) {u['c_bwd'][1]:.2f} s CPU; c = {float(cst):.2f}; model {model[1]:.1f} s CPU / "
          f"{model[0]:.1f} s wall", flush=True)
    print(f"  probe ({m.second_order}): CPU {cpu:.1f} s, wall {wall:.1f} s; ratio to model: CPU {cpu / model[1]:.2f}, "
          f"wall {wall / model[0]:.2f}; to the old model K(C_bwd + 5 P C_fwd): CPU {cpu / old_model[1]:.2f}; parts "
          + ", ".join(f"{k} {v_:.1f}" for k, v_ in m.timings.items() if v_), flush=True)
    return run, after


def _naive_loop(st: _Setup, naive_items: int) -> tuple[int, float]:
    """The baseline: per item and batch, ``torch.autograd.functional.jvp`` and two float64 forwards, timed on
    ``naive_items`` items and extrapolated linearly to P. Returns (items timed, seconds)."""
    ad, ad64, theta, th64, items, pairs = st.ad, st.ad64, st.theta, st.th64, st.items, st.pairs
    P, K, B = st.P, st.K, st.B
    n_naive = min(naive_items, P)
    sub = np.linspace(0, P - 1, n_naive).astype(int)
    names_p = list(theta)
    t_naive = 0.0
    for idx in sample_pair_batches(len(pairs), B, K, 0):
        t0 = time.perf_counter()
        th = {n: v.detach().clone().requires_grad_(True) for n, v in theta.items()}
        loss = symmetric_info_nce(ad.embed(th, ad.features(pairs.left, idx, "query"), "query"),
                                  ad.embed(th, ad.features(pairs.right, idx, "doc"), "doc"), 0.05)
        g = torch.autograd.grad(loss, [th[n] for n in names_p], allow_unused=True)
        g = [(x if x is not None else torch.zeros_like(theta[n])) for n, x in zip(names_p, g)]
        t_bwd_k = time.perf_counter() - t0
        t0 = time.perf_counter()
        for i in sub:
            f1 = ad.features(items, [i], "query")

            def fi(*ps, _f=f1):
                return ad.embed(dict(zip(names_p, ps)), _f, "query")

            z, a = torch.autograd.functional.jvp(fi, tuple(theta[n] for n in names_p), tuple(-x for x in g))
            f64 = ad64.features(items, [i], "query")
            eps = 3e-3 * float(z.norm()) / max(float(a.norm()), 1e-30)
            with torch.no_grad():
                ad64.embed({n: th64[n] + eps * g[j].double() for j, n in enumerate(names_p)}, f64, "query")
                ad64.embed({n: th64[n] - eps * g[j].double() for j, n in enumerate(names_p)}, f64, "query")
        t_naive += t_bwd_k + (time.perf_counter() - t0) * P / n_naive
    return n_naive, t_naive


if __name__ == "__main__":
    raise SystemExit(main())
