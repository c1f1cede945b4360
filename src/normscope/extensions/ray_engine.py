"""The Ray Data embedding engine (``pip install 'normscope[ray]'``).

Pipeline of ``normscope embed CORPUS --engine ray -o OUT.parquet``::

    ray.data.read_json / read_parquet          (jsonl[.gz], BEIR corpus directory, parquet with a text column)
      -> map_batches(corpus_columns)           (id, text; a BEIR title joined as the local reader does)
      -> repartition(target_num_rows_per_block=batch_size, strict=True)
                                               (streaming: blocks of exactly one batch of consecutive records)
      -> map_batches(CorpusWorker, compute=ActorPoolStrategy(size=N), num_cpus / num_gpus per worker)
                                               (actor pool: each actor loads ONE encoder and keeps it)
      -> write_parquet(OUT.parquet/)           (shards: id, text, norm, vector, tokens, truncated)
    read_parquet(OUT, columns=[norm, truncated]).aggregate(NormStatsAgg, Sum)
                                               (streaming norm statistics: the driver gets one sketch)

Resumability. Every batch an actor embeds is stored in normscope's content-addressed cache
(:mod:`normscope.encoders.cache`: ``<cache>/embeddings/<fingerprint key>/shard-<digest>.npz``, written
atomically) under the name its content gives: the digest of the sha256 hashes of its texts. The
stream is cut into batches of ``batch_size`` consecutive records in input order (with Ray Data's
``preserve_order``), the same batches for any file or block layout of the same records (tested:
jsonl then parquet), so a re-run after a kill finds each finished batch with one ``stat`` and embeds
only the rest. The output directory is written beside ``OUT`` and renamed into place at the end.
The cache directory must be on a filesystem every node sees (``$NORMSCOPE_CACHE``) for a
multi-node job to resume.

Row order. The rows of the output are NOT in input order: ``write_parquet(min_rows_per_file=...)``
combines batches into files in the order they finish (observed with Ray 2.60 even with
``preserve_order``). Join on ``id``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import shutil
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import pyarrow as pa
import ray
import ray.data
from ray.data.aggregate import AggregateFnV2, Sum
from ray.data.block import BlockAccessor

from normscope._io import write_json
from normscope.encoders import load_encoder, resolve_backend
from normscope.encoders.cache import model_cache_dir, read_shard, shard_path, text_hashes, write_shard
from normscope.encoders.embed import summary_warnings
from normscope.encoders.precision import PRECISION_SAMPLE, norm_error_vs_fp32
from normscope.extensions.corpus import check_shard_out, corpus_columns, corpus_file, read_corpus
from normscope.extensions.norm_stats import NormSketch
from normscope.engine.shards import FINGERPRINT_KEY, MANIFEST, replace_dir
from normscope.errors import InputError, ModelError, NormscopeError
from normscope.inputs import find_junk
from normscope.table import EmbeddingTable, ModelFingerprint, norms_look_normalised
from normscope.validate import check_paths

__all__ = ["EncoderSpec", "RayCluster", "ray_session", "embed_corpus", "encode_vectors",
           "CorpusWorker", "VectorWorker", "NormStatsAgg"]


_JUNK_DIR = "_junk"
_ROWS_PER_FILE = 100_000  # shards of at least this many rows (about 160 MB at d=384), not one per batch


# ----------------------------------------------------------------------------- specs
@dataclass(frozen=True)
class EncoderSpec:
    """How each worker loads its encoder (a picklable recipe, not the model).

    Attributes
    ----------
    model, backend, pooling, trust_remote_code
        As :func:`normscope.load_encoder`.
    device : str
        Torch device inside a worker: ``cpu`` or ``cuda`` (Ray assigns the GPU).
    fingerprint : ModelFingerprint or None
        When set, a worker whose loaded model has another fingerprint stops with :class:`ModelError`
        (the driver's encoder could not be rebuilt identically).
    options : dict
        Further keyword arguments of ``load_encoder`` (e.g. a future ``precision``).
    """

    model: str
    backend: str = "auto"
    pooling: str | None = None
    device: str = "cpu"
    trust_remote_code: bool = False
    fingerprint: ModelFingerprint | None = None
    options: dict = field(default_factory=dict)

    @classmethod
    def from_encoder(cls, encoder) -> "EncoderSpec":
        """The spec that rebuilds ``encoder`` on a worker (name, backend, pooling, precision and runtime of its
        fingerprint: an encoder on OpenVINO runs on OpenVINO in every worker, at the worker's thread count).

        Raises
        ------
        InputError
            Precomputed vectors (nothing to embed) or an encoder without a cache namespace.
        """
        fp = encoder.fingerprint
        if fp.backend == "precomputed" or not getattr(encoder, "cacheable", True):
            raise InputError("the ray engine embeds texts with a model; precomputed vectors need no engine")
        pooling = fp.pooling if fp.backend == "huggingface" else None
        device = "cuda" if str(getattr(encoder, "device", "cpu")).startswith("cuda") else "cpu"
        runtime = "openvino" if str(getattr(fp, "runtime", "torch")).startswith("openvino") else "torch"
        return cls(model=fp.name, backend=fp.backend, pooling=pooling, device=device, fingerprint=fp,
                   options={"precision": getattr(fp, "precision", "fp32"), "runtime": runtime})

    def chosen(self) -> "EncoderSpec":
        """This spec with its runtime decided on the driver, before any worker starts.

        ``runtime`` ``"auto"`` or ``"openvino"`` (``options``) loads the model here once
        (:func:`normscope.load_encoder`: for ``auto``, its equality check) and pins the runtime it got and
        the fingerprint, so every worker runs the same runtime and checks it. ``auto`` off OpenVINO's scope
        (a device other than the CPU, ``bf16``, a model that is not sentence-transformers) becomes ``torch``
        without loading anything; a spec on torch or with a fingerprint is returned as is.
        """
        runtime = self.options.get("runtime", "torch")
        if runtime == "torch" or self.fingerprint is not None:
            return self
        if runtime == "auto" and (self.device != "cpu" or self.options.get("precision", "fp32") != "fp32"
                                  or resolve_backend(self.model, self.backend, self.pooling)[0] != "sentence-transformers"):
            return replace(self, options={**self.options, "runtime": "torch"})
        return replace(EncoderSpec.from_encoder(self.load()), trust_remote_code=self.trust_remote_code)

    def load(self):
        enc = load_encoder(self.model, backend=self.backend, pooling=self.pooling, device=self.device,
                           trust_remote_code=self.trust_remote_code, **self.options)
        if self.fingerprint is not None and enc.fingerprint != self.fingerprint:
            raise ModelError(f"a Ray worker loaded {enc.fingerprint} instead of {self.fingerprint}")
        return enc


@dataclass(frozen=True)
class RayCluster:
    """Where and how wide the Ray engine runs.

    Attributes
    ----------
    address : str or None
        An existing cluster (``auto``, ``host:port``, ``ray://host:10001``); None starts a local
        one sized to the workers (``workers * threads + 1`` logical CPUs: the extra one runs the
        read and write tasks).
    workers : int or None
        Encoder actors. Default: one per GPU of the cluster with ``device='cuda'``; otherwise one per
        CPU core (local) or per CPU of the cluster less one.
    threads : int or None
        Torch threads (and Ray CPUs) per worker. Default: the CPUs left per worker (at least 1);
        1 with GPUs.
    """

    address: str | None = None
    workers: int | None = None
    threads: int | None = None

    def check(self) -> "RayCluster":
        for name in ("workers", "threads"):
            v = getattr(self, name)
            if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
                raise InputError(f"--{name} must be an integer >= 1, got {v!r}")
        if self.address is not None and not str(self.address).strip():
            raise InputError("--address is empty")
        return self


def _sized(cluster: RayCluster, gpu: bool) -> RayCluster:
    """``cluster`` with ``workers`` and ``threads`` filled from the running cluster's resources."""
    res = ray.cluster_resources()
    if gpu:
        n_gpu = int(res.get("GPU", 0))
        if n_gpu < 1:
            raise InputError("device 'cuda' requested but the Ray cluster has no GPU")
        return replace(cluster, workers=cluster.workers or n_gpu, threads=cluster.threads or 1)
    spare = max(1, int(res.get("CPU", 1)) - 1)
    workers = cluster.workers or spare
    return replace(cluster, workers=workers, threads=cluster.threads or max(1, spare // workers))


@contextlib.contextmanager
def ray_session(cluster: RayCluster, *, gpu: bool = False, progress: bool = False) -> Iterator[RayCluster]:
    """Connect to (or start) Ray for the duration of a job; yields the sized :class:`RayCluster`.

    A session already initialised in this process is reused and left running; a cluster this
    function started is shut down at the end.

    Raises
    ------
    InputError
        The cluster at ``address`` cannot be reached, or has no GPU when one is needed.
    """
    cluster = cluster.check()
    started = False
    if not ray.is_initialized():
        kwargs = dict(include_dashboard=False, log_to_driver=False, logging_level=logging.WARNING)
        try:
            if cluster.address:
                ray.init(address=cluster.address, **kwargs)
            else:
                cpus = os.cpu_count() or 1
                workers = cluster.workers or (1 if gpu else cpus)
                threads = cluster.threads or (1 if gpu else max(1, cpus // workers))
                ray.init(num_cpus=workers * threads + 1, **kwargs)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            where = f"at {cluster.address}" if cluster.address else "locally"
            raise InputError(f"cannot start or reach a Ray cluster {where}: {str(exc).splitlines()[0]}") from None
        started = True
    ctx = ray.data.DataContext.get_current()
    saved = (ctx.execution_options.preserve_order, ctx.enable_progress_bars, ctx.raise_original_map_exception)
    ctx.execution_options.preserve_order = True  # records reach the batching in input order: same batches on a re-run
    ctx.enable_progress_bars = progress
    ctx.raise_original_map_exception = True  # a worker's InputError reaches the driver as its cause
    logging.getLogger("ray.data").setLevel(logging.WARNING)
    try:
        yield _sized(cluster, gpu)
    except Exception as exc:
        user = _user_error(exc)
        if user is not None:
            raise type(user)(str(user).splitlines()[0]) from None
        raise
    finally:
        ctx.execution_options.preserve_order, ctx.enable_progress_bars, ctx.raise_original_map_exception = saved
        if started:
            ray.shutdown()


def _user_error(exc: BaseException) -> NormscopeError | None:
    """The normscope error a Ray task raised, found along the exception's cause chain."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, NormscopeError) and not isinstance(exc, ray.exceptions.RayError):
            return exc
        exc = getattr(exc, "cause", None) or exc.__cause__
    return None


# ----------------------------------------------------------------------------- workers
class _EncoderWorker:
    """One encoder per actor; batches through the content-addressed cache, found by their own digest."""

    def __init__(self, spec: EncoderSpec, cache_root: str | None, cache: bool, threads: int):
        if cache_root:
            os.environ["NORMSCOPE_CACHE"] = cache_root  # the driver's cache, also on a local cluster
        import torch

        torch.set_num_threads(max(1, int(threads)))
        self.encoder = spec.load()
        if not getattr(self.encoder, "cacheable", True):
            raise InputError("the ray engine embeds texts with a model; precomputed vectors need no engine")
        self.cache = cache

        self.root = model_cache_dir(self.encoder.fingerprint)

    def vectors(self, texts: list[str]) -> np.ndarray:
        """Raw float32 vectors (m, d) of one batch: read from its cache shard if one exists, else encoded and stored."""
        if not texts:
            return np.empty((0, self.encoder.dim), dtype=np.float32)
        if not self.cache:
            return self._encode(texts)
        hashes = text_hashes(texts)
        path = shard_path(self.root, hashes)
        got = read_shard(path, self.encoder.dim) if path.is_file() else None
        if got is not None and np.array_equal(got[0], hashes):
            return got[1]
        vecs = self._encode(texts)
        try:
            write_shard(self.root, hashes, vecs)
        except OSError:  # a read-only or full cache: keep going without it, as the local engine does
            self.cache = False
        return vecs

    def _encode(self, texts: list[str]) -> np.ndarray:
        vecs = np.asarray(self.encoder.encode(texts, batch_size=len(texts)), dtype=np.float32)
        if vecs.shape != (len(texts), self.encoder.dim):
            raise RuntimeError(f"encoder returned shape {vecs.shape}, expected {(len(texts), self.encoder.dim)}")
        return vecs


class CorpusWorker(_EncoderWorker):
    """Actor of ``embed_corpus``: ``(id, text)`` batch in, table rows out (junk left out, listed beside).

    Output columns: ``id, text, norm (float32), vector (fixed-size list of float32), tokens (int64),
    truncated (bool)``, the fingerprint in the schema metadata. Junk items
    (:func:`normscope.inputs.find_junk`) are written to ``<out>/_junk/<digest>.json`` (``junk='drop'``)
    or stop the job (``junk='error'``).
    """

    def __init__(self, spec, cache_root, cache, threads, junk_dir: str, junk: str):
        super().__init__(spec, cache_root, cache, threads)
        self.junk_dir, self.junk = Path(junk_dir), junk
        self.meta = {FINGERPRINT_KEY: json.dumps(self.encoder.fingerprint.to_dict()).encode()}

    def __call__(self, batch: pa.Table) -> pa.Table:
        ids = batch.column("id").to_pylist()
        texts = batch.column("text").to_pylist()
        found = find_junk(texts, ids, tokenizer=self.encoder.hf_tokenizer)
        if found and self.junk == "error":
            raise found.error("documents")
        if found:
            self._write_junk(found)
        drop = set(found.index)
        keep = [i for i in range(len(texts)) if i not in drop]
        ids, texts = [ids[i] for i in keep], [texts[i] for i in keep]
        seen, raw = self.encoder.token_counts(texts)
        table = EmbeddingTable(ids=ids, texts=texts, vectors=self.vectors(texts), fingerprint=self.encoder.fingerprint)
        n, d = table.vectors.shape
        return pa.table({
            "id": pa.array(ids, type=pa.string()),
            "text": pa.array(texts, type=pa.string()),
            "norm": pa.array(table.norms, type=pa.float32()),
            "vector": pa.FixedSizeListArray.from_arrays(pa.array(table.vectors.reshape(-1), type=pa.float32()), d),
            "tokens": pa.array(seen, type=pa.int64()),
            "truncated": pa.array(raw > seen, type=pa.bool_()),
        }).replace_schema_metadata(self.meta)

    def _write_junk(self, found) -> None:
        digest = hashlib.sha256("\n".join(found.ids).encode()).hexdigest()[:32]
        self.junk_dir.mkdir(parents=True, exist_ok=True)
        write_json({"ids": found.ids, "reasons": found.reasons}, self.junk_dir / f"{digest}.json")


class VectorWorker(_EncoderWorker):
    """Actor of :func:`encode_vectors`: ``(pos, text)`` batch in, ``(pos, vector)`` out."""

    def __call__(self, batch: pa.Table) -> pa.Table:
        vecs = self.vectors(batch.column("text").to_pylist())
        flat = pa.array(vecs.reshape(-1), type=pa.float32())
        return pa.table({"pos": batch.column("pos"), "vector": pa.FixedSizeListArray.from_arrays(flat, vecs.shape[1])})


class NormStatsAgg(AggregateFnV2):
    """Ray Data aggregation of a norm column into one :class:`NormSketch` (moments + quantile sketch).

    Each block is summarised where it lies; partial sketches (at most 13,865 counters, sent
    sparse) are merged. The result column holds the merged sketch state as JSON text.
    """

    def __init__(self, on: str = "norm"):
        super().__init__(f"norm_sketch({on})", zero_factory=lambda: NormSketch().to_state(), on=on, ignore_nulls=True)

    def aggregate_block(self, block):
        col = BlockAccessor.for_block(block).to_arrow().column(self._target_col_name)
        return NormSketch().update(col.to_numpy(zero_copy_only=False)).to_state()

    def combine(self, current_accumulator, new):
        return NormSketch.from_state(current_accumulator).merge(NormSketch.from_state(new)).to_state()

    def finalize(self, accumulator):
        s = accumulator
        return json.dumps({**s, "bins": np.asarray(s["bins"]).tolist(), "bin_counts": np.asarray(s["bin_counts"]).tolist()})


def _map_args(cluster: RayCluster, gpu: bool) -> dict:
    return dict(compute=ray.data.ActorPoolStrategy(size=cluster.workers), num_cpus=cluster.threads,
                num_gpus=1 if gpu else None, batch_format="pyarrow", zero_copy_batch=True)


# ----------------------------------------------------------------------------- entry points
def encode_vectors(spec: EncoderSpec, texts: list[str], *, cluster: RayCluster, batch_size: int = 64,
                   cache: bool = True, cache_root: str | None = None, progress: bool = False) -> np.ndarray:
    """Raw vectors of in-memory ``texts`` on a Ray actor pool (the Ray form of ``encode_cached``).

    Returns
    -------
    ndarray of shape (n, d), float32
        Row i for ``texts[i]``; gathered on the driver batch by batch (the caller asked for them).
    """
    n = len(texts)
    gpu = spec.device.startswith("cuda")
    with ray_session(cluster, gpu=gpu, progress=progress) as sized:
        rows = max(batch_size, -(-n // (4 * sized.workers)))
        rows = -(-rows // batch_size) * batch_size  # whole batches per block: the same batches on a re-run
        blocks = [pa.table({"pos": pa.array(np.arange(s, min(s + rows, n)), type=pa.int64()),
                            "text": pa.array(texts[s : s + rows], type=pa.string())}) for s in range(0, n, rows)]
        ds = ray.data.from_arrow(blocks).map_batches(
            VectorWorker, fn_constructor_kwargs=dict(spec=spec, cache_root=cache_root, cache=cache, threads=sized.threads),
            batch_size=batch_size, **_map_args(sized, gpu))
        out = None
        for b in ds.iter_batches(batch_format="pyarrow", batch_size=None):
            if b.num_rows == 0:
                continue
            vec = b.column("vector").combine_chunks()
            v = np.asarray(vec.flatten().to_numpy(zero_copy_only=False), dtype=np.float32).reshape(b.num_rows, -1)
            if out is None:
                out = np.empty((n, v.shape[1]), dtype=np.float32)
            out[b.column("pos").to_numpy()] = v
    return out


def embed_corpus(input: str | Path, out: str | Path, *, spec: EncoderSpec, cluster: RayCluster,
                 batch_size: int = 64, cache: bool = True, cache_root: str | None = None, junk: str = "drop",
                 json_path: str | Path | None = None, progress: bool = False) -> dict:
    """Embed a corpus file on a Ray cluster into a directory of parquet shards; return the norm summary.

    Parameters
    ----------
    input : str or Path
        ``.jsonl``/``.jsonl.gz`` (fields ``_id`` or ``id``, ``text``, optional ``title``), a parquet
        file with those columns, or a BEIR directory holding ``corpus.jsonl[.gz]``.
    out : str or Path
        Directory to create, named ``*.parquet`` (readable as one table by pyarrow, pandas, Spark,
        :func:`normscope.engine.shards.read_table`); replaced atomically if it holds a previous output.
    spec : EncoderSpec
    cluster : RayCluster
    batch_size : int
        Texts per worker call and per cache shard.
    cache : bool
        Read and fill the content-addressed cache (the resume mechanism).
    cache_root : str, optional
        The cache root the workers use (default: theirs, ``$NORMSCOPE_CACHE`` or ``~/.cache/normscope``).
    junk : {'drop', 'error'}
    json_path : str or Path, optional
        Also write the summary there (strict JSON, atomic).

    Returns
    -------
    dict
        The keys of the local ``embed`` summary (``n, dim, model, fingerprint, norm_mean, norm_std,
        norm_min, norm_max, n_truncated, junk, normalised, input, cache``) plus ``engine``,
        ``workers``, ``threads_per_worker``, ``out``, ``norm_quantiles`` and
        ``norm_quantile_rel_error``. Junk ids are listed in sorted order.

    Raises
    ------
    InputError
        Unsupported or malformed input, output path, junk with ``junk='error'``, every item junk,
        unreachable cluster.
    """
    input, out = Path(input), Path(out)

    check_shard_out(out)
    check_paths([("-o/--out", out, "dir"), ("--json", json_path, "json")], inputs=[("INPUT", input)])
    path, fields = corpus_file(input)
    if batch_size < 1:
        raise InputError(f"--batch-size must be >= 1, got {batch_size}")
    spec = spec.chosen()  # after the checks of the input: bad input is one line before the model loads
    gpu = spec.device.startswith("cuda")
    for stale in out.parent.glob(f".{out.name}.tmp-*"):  # left by a killed run (their vectors are in the cache)
        shutil.rmtree(stale, ignore_errors=True)
    tmp = out.parent / f".{out.name}.tmp-{uuid.uuid4().hex[:12]}"
    try:
        with ray_session(cluster, gpu=gpu, progress=progress) as sized:
            ds = read_corpus(path, fields)
            ds = ds.map_batches(corpus_columns, batch_format="pyarrow", batch_size=None)
            # blocks of exactly one batch of consecutive records: the same batches whatever the file layout
            # (the resume key), and as many blocks as batches for the actor pool to share
            ds = ds.repartition(target_num_rows_per_block=batch_size, strict=True)
            ds = ds.map_batches(
                CorpusWorker,
                fn_constructor_kwargs=dict(spec=spec, cache_root=cache_root, cache=cache, threads=sized.threads,
                                           junk_dir=str(tmp / _JUNK_DIR), junk=junk),
                batch_size=batch_size, **_map_args(sized, gpu))
            ds.write_parquet(str(tmp), min_rows_per_file=_ROWS_PER_FILE)
            summary = _summarise(tmp, input, sized, cache)
        summary.update(_precision_error(tmp, spec, summary["n"], cache))
        write_json(summary, tmp / MANIFEST)
        replace_dir(tmp, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    summary["out"] = str(out)
    if json_path is not None:
        write_json(summary, json_path)
    return summary


def _summarise(tmp: Path, input: Path, sized: RayCluster, cache: bool) -> dict:
    """Norm statistics of the written shards (streaming aggregate), junk side files, fingerprint."""
    import pyarrow.dataset as pads

    junk_ids, reasons = [], {}
    jdir = tmp / _JUNK_DIR
    if jdir.is_dir():
        for f in sorted(jdir.glob("*.json")):
            rec = json.loads(f.read_text())
            junk_ids += rec["ids"]
            for r in rec["reasons"]:
                reasons[r] = reasons.get(r, 0) + 1
        shutil.rmtree(jdir)
    files = list(tmp.glob("*.parquet"))
    n_rows = pads.dataset([str(f) for f in files], format="parquet").count_rows() if files else 0
    if n_rows == 0:
        raise InputError(f"every one of the {len(junk_ids)} items of {input} is junk ({'; '.join(sorted(reasons))})")
    stats = ray.data.read_parquet(str(tmp), columns=["norm", "truncated"]).aggregate(NormStatsAgg("norm"), Sum("truncated"))
    sketch = NormSketch.from_state(json.loads(stats["norm_sketch(norm)"]))
    schema = pads.dataset([str(f) for f in files], format="parquet").schema
    fp = ModelFingerprint.from_dict(json.loads(schema.metadata[FINGERPRINT_KEY]))
    s = sketch.summary()
    med = s["norm_quantiles"]["0.5"]
    summary = {
        "n": s["n"], "dim": int(schema.field("vector").type.list_size), "model": fp.name, "fingerprint": fp.to_dict(),
        "norm_mean": s["norm_mean"], "norm_std": s["norm_std"], "norm_min": s["norm_min"], "norm_max": s["norm_max"],
        "n_truncated": int(stats["sum(truncated)"] or 0),
        "junk": {"count": len(junk_ids), "ids": sorted(junk_ids), "reasons": reasons},
        "normalised": norms_look_normalised([s["norm_min"], med, s["norm_max"]]) if s["n"] > 1 else None,
        "input": str(input), "cache": bool(cache),
        "engine": "ray", "workers": sized.workers, "threads_per_worker": sized.threads,
        "norm_quantiles": s["norm_quantiles"], "norm_quantile_rel_error": s["norm_quantile_rel_error"],
    }

    summary["warnings"] = summary_warnings(summary)
    return summary


def _precision_error(tmp: Path, spec: EncoderSpec, n: int, cache: bool) -> dict:
    """``precision`` and ``norm_rel_error_vs_fp32`` of the run (the local stage's keys), measured on the driver.

    In reduced precision a seeded sample of the written rows (the local stage's sample size and seed)
    is re-embedded in fp32 by :func:`normscope.encoders.precision.norm_error_vs_fp32`.
    """
    import pyarrow.dataset as pads

    precision = spec.options.get("precision", "fp32")
    if precision == "fp32":
        return {"precision": precision, "norm_rel_error_vs_fp32": None}
    idx = np.sort(np.random.default_rng(0).choice(n, size=min(PRECISION_SAMPLE, n), replace=False))
    rows = pads.dataset(sorted(str(f) for f in tmp.glob("*.parquet")), format="parquet").take(idx, columns=["text", "vector"])
    vectors = np.asarray(rows.column("vector").combine_chunks().flatten(), dtype=np.float32).reshape(len(idx), -1)
    encoder = replace(spec, device="cpu").load()
    error = norm_error_vs_fp32(encoder, rows.column("text").to_pylist(), vectors, sample=len(idx), cache=cache)
    return {"precision": precision, "norm_rel_error_vs_fp32": error}
