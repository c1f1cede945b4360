"""``normscope index build|search``: norm-aware approximate (HNSW, IVF) or exact faiss indexes.

Thin wrappers around :mod:`normscope.extensions.ann`; see ``docs/scale.md``.
"""

from __future__ import annotations

import shutil
import time
from dataclasses import asdict
from pathlib import Path
from typing import Annotated, Optional

import numpy as np
import typer
from rich.table import Table
from rich.text import Text

from normscope._io import write_json, write_outputs
from normscope.cli._app import app
from normscope.cli._console import make_console
from normscope.encoders import load_encoder
from normscope.engine.shards import open_vectors, replace_dir
from normscope.errors import InputError, ModelError
from normscope.inputs import JUNK_ZERO, Junk, read_items, zero_vector_rows
from normscope.table import ModelFingerprint
from normscope.validate import check_paths, check_room
from normscope.values import JunkSummary
from normscope.cli._options import BatchSize, Device, JsonOut, Seed

index_app = typer.Typer(help="Norm-aware faiss indexes (HNSW, IVF, flat) over folded document vectors.",
                        no_args_is_help=True)
app.add_typer(index_app, name="index")

Threads = Annotated[int, typer.Option("--threads", min=1, help="faiss threads (1: reproducible HNSW builds and "
                                      "single-thread QPS).")]
EfSearch = Annotated[Optional[int], typer.Option("--ef-search", min=1, help="HNSW candidate list while searching.")]
Nprobe = Annotated[Optional[int], typer.Option("--nprobe", min=1, help="IVF lists scanned per query (nlist: exact).")]


@index_app.command("build")
def build(
    vectors: Annotated[Path, typer.Argument(help="Document vectors: the parquet of `normscope embed` (file, or the "
                                            "shard directory of --engine ray), or a .npy (ids 0..n-1).",
                                            show_default=False)],
    out: Annotated[Path, typer.Option("-o", "--out", help="Index directory to write (replaced if it holds an index).")],
    scorer: Annotated[str, typer.Option("--scorer", help="cosine | dot | inverse_norm | power.")] = "cosine",
    alpha: Annotated[Optional[float], typer.Option("--alpha", help="inverse_norm: cos / (1 + alpha ||d||).")] = None,
    beta: Annotated[Optional[float], typer.Option("--beta", help="power: cos * ||d||**beta.")] = None,
    kind: Annotated[str, typer.Option("--kind", help="hnsw | ivf | flat (exact).")] = "hnsw",
    m: Annotated[int, typer.Option("--m", min=1, help="HNSW neighbours per node.")] = 32,
    ef_construction: Annotated[int, typer.Option("--ef-construction", min=1, help="HNSW build candidate list.")] = 200,
    ef_search: Annotated[int, typer.Option("--ef-search", min=1, help="HNSW default search candidate list.")] = 128,
    nlist: Annotated[Optional[int], typer.Option("--nlist", min=1, help="IVF lists (default sqrt(n)).")] = None,
    nprobe: Annotated[Optional[int], typer.Option("--nprobe", min=1, help="IVF default lists scanned per query "
                                                  "(default min(16, nlist)).")] = None,
    train_size: Annotated[Optional[int], typer.Option("--train-size", min=1, help="IVF training sample (default 64 nlist).")] = None,
    seed: Seed = 0,
    threads: Threads = 1,
    json_path: JsonOut = None,
) -> None:
    """Fold document vectors for a scorer and build a faiss index over them."""
    # retrieval/ imports faiss and torch: imported here so that the CLI's start-up stays light
    from normscope.extensions.ann import AnnParams, build_ann_index, check_index_out
    from normscope.scoring import PARAM_NAMES, check_scorer

    check_scorer(scorer)
    given = {"alpha": alpha, "beta": beta}
    for name, value in given.items():
        if value is not None and PARAM_NAMES[scorer] != name:
            raise InputError(f"--{name} applies to the {'inverse_norm' if name == 'alpha' else 'power'} scorer, not {scorer}")
    param = given.get(PARAM_NAMES[scorer]) if PARAM_NAMES[scorer] else None
    check_index_out(out)
    check_paths([("-o/--out", out, "dir"), ("--json", json_path, "json")], inputs=[("VECTORS", vectors)])
    source = open_vectors(vectors)
    check_room(out, 4 * len(source) * int(source.dim), "-o/--out")  # the vectors alone, a lower bound
    params = AnnParams(kind=kind, m=m, ef_construction=ef_construction, ef_search=ef_search, nlist=nlist,
                       nprobe=nprobe, train_size=train_size, seed=seed)
    t0 = time.perf_counter()
    index = build_ann_index(source, scorer=scorer, param=param, params=params, threads=threads)
    build_s = time.perf_counter() - t0
    # index and --json as one set: the index is staged beside OUT, the JSON written (atomically), then the
    # staged directory replaces OUT; a failure before that leaves OUT and the JSON as they were
    staging = out.parent / f".{out.name}.staging-{time.time_ns()}"
    try:
        index.save(staging, shown=out)
        n_texts = _save_texts(source, index.doc_ids, staging)
        size = sum(f.stat().st_size for f in staging.iterdir())
        summary = {"index": str(out), "vectors": str(vectors), "kind": kind, "n": len(index.doc_ids),
                   "junk_documents": index.junk.to_dict(), "texts": n_texts,
                   "dim": index.dim, "scorer": scorer, "param_name": PARAM_NAMES[scorer], "param": param,
                   "params": asdict(index.params), "threads": threads, "build_seconds": build_s, "bytes": size}
        write_outputs({json_path: lambda p: write_json(summary, p)}, options={json_path: "--json"})
        replace_dir(staging, out)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    t = Table(title=f"norm-aware {kind} index", title_justify="left")
    t.add_column("quantity")
    t.add_column("value", justify="right")
    for k, v in (("documents n", str(summary["n"])), ("dimension d", str(summary["dim"])),
                 ("scorer", scorer + (f" ({PARAM_NAMES[scorer]}={param:g})" if param is not None else "")),
                 ("settings", ", ".join(f"{a}={b}" for a, b in summary["params"].items() if b is not None and a != "kind")),
                 ("build time", f"{build_s:.1f} s ({threads} thread{'s' if threads > 1 else ''})"),
                 ("size on disk", f"{size / 2**20:.1f} MiB")):
        t.add_row(k, v)
    make_console().print(t)
    err = make_console(stderr=True)
    if index.junk:
        err.print(index.junk.message("documents"), soft_wrap=True, markup=False, highlight=False)
    err.print(f"wrote {out}" + (f" and {json_path}" if json_path else ""), soft_wrap=True, markup=False, highlight=False)


#: The documents' texts beside an index (``id``, ``text``), when the vectors carried them (`normscope embed`'s table).
TEXTS = "texts.parquet"
#: Queries whose top hits ``index search`` prints, and the characters of each snippet.
SHOWN_QUERIES, SNIPPET = 3, 70


def _texts_of(src) -> dict[str, str]:
    """``{id: text}`` of a parquet vector source with a ``text`` column (``{}`` otherwise: .npy, bare vectors)."""
    if src._kind != "parquet" or "text" not in src._dataset.schema.names or "id" not in src._dataset.schema.names:
        return {}
    t = src._dataset.to_table(columns=["id", "text"])
    return {str(i): str(x) for i, x in zip(t.column("id").to_pylist(), t.column("text").to_pylist()) if x is not None}


def _save_texts(source, doc_ids, folder: Path) -> int:
    """Write the indexed documents' texts (``TEXTS``) into the index folder; how many (0: the vectors had none)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    texts = _texts_of(source)
    kept = [(d, texts[d]) for d in doc_ids if d in texts]
    if kept:
        pq.write_table(pa.table({"id": [d for d, _ in kept], "text": [t for _, t in kept]}), folder / TEXTS)
    return len(kept)


def _load_texts(index_dir: Path) -> dict[str, str]:
    import pyarrow.parquet as pq

    p = Path(index_dir) / TEXTS
    if not p.is_file():
        return {}
    t = pq.read_table(p)
    return dict(zip(map(str, t.column("id").to_pylist()), map(str, t.column("text").to_pylist())))


def _snippet(text: str | None, n: int = SNIPPET) -> str:
    """``text`` on one line, cut at a word boundary to about ``n`` characters."""
    if not text:
        return ""
    t = " ".join(str(text).split())
    if len(t) <= n:
        return t
    cut = t[: n - 1].rsplit(" ", 1)[0] if " " in t[: n - 1] else t[: n - 1]
    return cut + "\u2026"


def _query_vectors(queries: Path, index, batch_size: int, device: str):
    """(ids, raw vectors, junk dict or None, {id: text}) of QUERIES: stored vectors (their ``text`` column when
    present), or items embedded with the index's model."""
    if queries.is_dir() or queries.suffix.lower() in (".parquet", ".npy"):
        src = open_vectors(queries)
        ids, vecs = [], []
        for chunk_ids, v in src.chunks():
            ids += chunk_ids
            vecs.append(v)
        if (src.fingerprint is not None and index.fingerprint
                and src.fingerprint.model_key != ModelFingerprint.from_dict(index.fingerprint).model_key):
            raise InputError(f"{queries} was embedded with {src.fingerprint.name}, the index with "
                             f"{index.fingerprint['name']} (another model or revision)")
        Q = np.concatenate(vecs)
        if Q.ndim == 2 and Q.shape[1] != index.dim:
            raise InputError(f"{queries} holds vectors of dimension {Q.shape[1]}, the index {index.dim}: embed the queries "
                             "with the index's model")
        zero = zero_vector_rows(np.linalg.norm(Q.astype(np.float64), axis=1))  # junk (zero) queries: listed, never ranked
        if zero.size == len(ids):
            raise InputError(f"every one of the {len(ids)} query vectors in {queries} is junk ({JUNK_ZERO})")
        junk = Junk().merged(zero, [ids[i] for i in zero], JUNK_ZERO)
        ok = np.setdiff1d(np.arange(len(ids)), zero)
        return [ids[i] for i in ok], Q[ok], junk.to_dict(), _texts_of(src)
    if not index.fingerprint:
        raise InputError("this index records no model (built from bare vectors): give QUERIES as vectors (.parquet/.npy)")
    from normscope.encoders.embed import embed_texts  # torch: the CLI's start-up stays light

    fp = index.fingerprint
    qids, texts = read_items(queries)
    enc = load_encoder(fp["name"], backend=fp["backend"], pooling=fp["pooling"] if fp["backend"] == "huggingface" else None,
                       device=device, precision=fp.get("precision", "fp32"),
                       runtime=str(fp.get("runtime", "torch")).split(":")[0])
    if enc.fingerprint.model_key != ModelFingerprint.from_dict(fp).model_key:  # torch fp32 = OpenVINO f32 (1e-6)
        raise ModelError(f"the index was built with {fp}, but loading '{fp['name']}' here gives {enc.fingerprint.to_dict()}")
    table = embed_texts(texts, qids, encoder=enc, batch_size=batch_size, what="queries")
    return table.ids, table.vectors, table.junk.to_dict(), dict(zip(map(str, qids), texts))


def _print_hits(console, run, shown, qtexts: dict, dtexts: dict, k: int, n_queries: int) -> None:
    """The top hits (rank, document id, score, a snippet of its text) of the first queries of the run."""
    n_hits = min(k, 5)
    for q in shown:
        head = Text(f"query {q}", style="bold")
        if qtexts.get(q):
            head.append(f": {_snippet(qtexts[q])}", style="")
        console.print(head, soft_wrap=True)
        hits = list(run.get(q, {}).items())[:n_hits]
        width = max((len(str(d)) for d, _ in hits), default=0)
        for r, (d, score) in enumerate(hits, start=1):
            console.print(f"  {r:>2}  {str(d):<{width}}  {score:.4f}  {_snippet(dtexts.get(d))}", markup=False,
                          highlight=False, soft_wrap=True)
    more = []
    if n_queries > len(shown):
        more.append(f"{n_queries - len(shown)} more queries")
    if k > n_hits:
        more.append(f"ranks {n_hits + 1}-{k}")
    if more:
        console.print(f"({' and '.join(more)}: -o/--out)", markup=False, highlight=False, soft_wrap=True)
    if not dtexts:
        console.print("(no document texts in this index: it was built from vectors without a text column)",
                      markup=False, highlight=False, soft_wrap=True)


def _load_calibrator(path: Path, index_dir: Path, k: int):
    """The calibrator file, checked before any search: its signals need no more than ``k`` results."""
    from normscope.extensions.calibrator import load_calibrator

    cal = load_calibrator(path)
    if k < cal.depth:
        raise InputError(f"this calibrator's signals ({', '.join(cal.signals)}) use the top {cal.depth} results: "
                         f"search with -k >= {cal.depth}")
    return cal


def _abstain(cal, run, *, index_dir, qids, Q, qtexts, min_prob):
    """``({qid: P(top-1 relevant)}, the summary's ``abstention``)``: the calibrator applied to the run
    (:func:`normscope.extensions.integrations.calibrate_index_search`) and the queries answered at ``min_prob``
    (default: the calibrator's Learn-then-Test threshold)."""
    from normscope.extensions.integrations import calibrate_index_search
    from normscope.retrieval.search import run_to_frame

    source = "--min-prob"
    if min_prob is None:
        min_prob = (cal.thresholds.get("answer") or {}).get("threshold")
        source = "the calibrator's Learn-then-Test threshold"
        if min_prob is None:
            raise InputError("this calibrator has no Learn-then-Test threshold (none reached its target precision): "
                             "give --min-prob")
    texts = [qtexts.get(q) for q in qids] if qtexts and all(q in qtexts for q in qids) else None
    frame = calibrate_index_search(cal, run_to_frame(run), index_dir=index_dir, query_vectors=Q, query_texts=texts)
    probs = dict(zip(frame["query_id"].astype(str), frame["p_relevant"].astype(float)))
    answered = [q for q in qids if probs[q] >= min_prob]
    return probs, {"min_prob": float(min_prob), "min_prob_source": source, "signals": list(cal.signals),
                   "calibrator_fitted_on": cal.fitted_on, "n_answered": len(answered),
                   "coverage": len(answered) / len(qids), "abstained": [q for q in qids if probs[q] < min_prob]}


@index_app.command("search")
def search(
    index_dir: Annotated[Path, typer.Argument(help="Index directory written by `normscope index build`.", show_default=False)],
    queries: Annotated[Path, typer.Argument(help="Query vectors (.parquet file or shard directory, .npy), or query "
                                            "items (.txt, .jsonl, .csv) embedded with the index's model.",
                                            show_default=False)],
    k: Annotated[int, typer.Option("-k", "--k", min=1, help="Results per query.")] = 10,
    out: Annotated[Optional[Path], typer.Option("-o", "--out", help="Write the run (query_id, rank, doc_id, score; "
                                                "query_text and text when known) as parquet.")] = None,
    ef_search: EfSearch = None,
    nprobe: Nprobe = None,
    compare_exact: Annotated[bool, typer.Option("--compare-exact", help="Also report recall@k, score ratio@k and "
                                                "QPS against exact search over the same folded vectors.")] = False,
    threads: Threads = 1,
    calibrator: Annotated[Optional[Path], typer.Option("--calibrator", help="A calibrator of this (cosine) index's "
                                                       "model (`normscope calibrate -c`): P(top-1 relevant) per query, "
                                                       "and abstention (--min-prob).")] = None,
    min_prob: Annotated[Optional[float], typer.Option("--min-prob", min=0.0, max=1.0, help="Return nothing for a query "
                                                      "whose P(top-1 relevant) < P (needs --calibrator; default: the "
                                                      "calibrator's Learn-then-Test threshold).")] = None,
    batch_size: BatchSize = 64,
    device: Device = "cpu",
    json_path: JsonOut = None,
) -> None:
    """Top-k documents of each query under the index's norm-aware scorer; prints the top hits (id, score, a snippet)
    of the first queries. With --calibrator, answers only the queries whose P(top-1 relevant) reaches --min-prob."""
    import faiss  # only when an index is searched: the CLI's start-up stays light

    # retrieval/ imports torch: imported here so that the CLI's start-up stays light
    from normscope.extensions.ann import FoldedAnnIndex, compare_with_exact
    from normscope.retrieval.search import run_to_frame

    check_paths([("-o/--out", out, "table"), ("--json", json_path, "json")],
                inputs=[("INDEX", index_dir), ("QUERIES", queries), ("--calibrator", calibrator)])
    if min_prob is not None and calibrator is None:
        raise InputError("--min-prob needs --calibrator (the map from a query's scores to P(top-1 relevant))")
    cal = _load_calibrator(calibrator, index_dir, k) if calibrator is not None else None
    index = FoldedAnnIndex.load(index_dir)
    index.set_search(ef_search, nprobe)  # checked (e.g. nprobe <= nlist) before any embedding
    qids, Q, junk, qtexts = _query_vectors(queries, index, batch_size, device)
    dtexts = _load_texts(index_dir)
    before = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(threads)
    try:
        t0 = time.perf_counter()
        run = index.search(Q, qids, k, ef_search=ef_search, nprobe=nprobe)
        search_s = time.perf_counter() - t0
    finally:
        faiss.omp_set_num_threads(before)
    setting = {"ef_search": ef_search or index.params.ef_search} if index.params.kind == "hnsw" else (
        {"nprobe": nprobe or index.params.nprobe} if index.params.kind == "ivf" else {})
    summary = {"index": str(index_dir), "kind": index.params.kind, "scorer": index.scorer, "param": index.param,
               "n_docs": len(index.doc_ids), "n_queries": len(qids), "k": k, **setting, "threads": threads,
               "search_seconds": search_s, "junk_queries": junk}
    if compare_exact:
        summary["vs_exact"] = compare_with_exact(index, Q, k=k, threads=threads, settings=[setting])[0]
    summary["texts"] = len(dtexts)
    probs = None
    if cal is not None:
        probs, abst = _abstain(cal, run, index_dir=index_dir, qids=qids, Q=Q, qtexts=qtexts, min_prob=min_prob)
        summary["abstention"] = abst
        run = {q: (hits if probs[q] >= abst["min_prob"] else {}) for q, hits in run.items()}

    def frame(p):
        df = run_to_frame(run)
        if probs is not None:
            df["p_relevant"] = [probs[q] for q in df["query_id"]]
        if qtexts:
            df["query_text"] = [qtexts.get(q) for q in df["query_id"]]
        if dtexts:
            df["text"] = [dtexts.get(d) for d in df["doc_id"]]
        df.to_parquet(p, index=False)

    write_outputs({out: frame, json_path: lambda p: write_json(summary, p)},
                  options={out: "-o/--out", json_path: "--json"})
    t = Table(title=f"{index.params.kind} index, scorer {index.scorer}", title_justify="left")
    t.add_column("quantity")
    t.add_column("value", justify="right")
    t.add_row("queries x k", f"{len(qids)} x {k}")
    t.add_row("settings", ", ".join(f"{a}={b}" for a, b in setting.items()) or "exact")
    t.add_row("search time (incl. folding, sorting)", f"{search_s:.3f} s")
    if compare_exact:
        c = summary["vs_exact"]
        t.add_row(f"recall@{k} vs exact", f"{c['recall_at_k']:.4f}")
        t.add_row(f"score ratio@{k} vs exact", f"{c['score_ratio_at_k']:.5f}")
        t.add_row("QPS (faiss call) / exact", f"{c['qps']:.0f} / {c['qps_exact']:.0f} = {c['speedup_vs_exact']:.2f}x")
    if cal is not None:
        a = summary["abstention"]
        t.add_row(f"answered (P(top-1 relevant) >= {a['min_prob']:g}, {a['min_prob_source']})",
                  f"{a['n_answered']} of {len(qids)} = coverage {a['coverage']:.3f}")
    console = make_console()
    console.print(t)
    _print_hits(console, run, qids[:SHOWN_QUERIES], qtexts, dtexts, k, len(qids))
    err = make_console(stderr=True)
    j = JunkSummary.from_json(junk or {})
    if j.count:
        shown = ", ".join(j.ids[:5]) + (f" (and {j.count - 5} more)" if j.count > 5 else "")
        err.print(f"{j.count} junk queries left out, not ranked ({'; '.join(j.reasons)}): ids {shown}",
                  soft_wrap=True, markup=False, highlight=False)
    written = [str(p) for p in (out, json_path) if p is not None]
    if written:
        err.print("wrote " + ", ".join(written), soft_wrap=True, markup=False, highlight=False)
