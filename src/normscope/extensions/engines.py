"""The Ray engine's entry points for :mod:`normscope.engine` (registered as ``engine='ray'`` when
:mod:`normscope.extensions` is imported).

Light to import: :mod:`normscope.extensions.ray_engine` (which imports ``ray``) is imported when a method runs.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from normscope.encoders import cache as _cache
from normscope.encoders import resolve_backend
from normscope.encoders.bundled import DEFAULT_MODEL
from normscope.errors import InputError

__all__ = ["RayBackend"]


def _worker_device(device: str) -> str:
    if device == "cpu" or device.startswith("cuda"):
        return "cuda" if device.startswith("cuda") else "cpu"
    raise InputError(f"--engine ray runs workers on cpu or cuda, got --device {device}")


def _cache_root(address: str | None) -> str | None:
    """The driver's cache root for the workers of a local cluster; a remote cluster keeps its own."""
    if address:
        return None

    return str(_cache.cache_dir())


class RayBackend:
    """``engine='ray'`` of :mod:`normscope.engine`: Ray Data with an actor pool of encoders
    (:mod:`normscope.extensions.ray_engine`). :func:`normscope.engine.encode_vectors` and
    :func:`normscope.engine.embed_input` validate the engine options, then call these methods."""

    def encode_vectors(self, encoder, texts: Sequence[str], *, batch_size: int, progress: bool, cache: bool,
                       address: str | None, workers: int | None, threads: int | None) -> np.ndarray:
        """Raw vectors of ``texts``, shape (n, d) float32, computed by the cluster's encoder actors."""
        from normscope.extensions.ray_engine import EncoderSpec, RayCluster  # deferred: imports ray
        from normscope.extensions.ray_engine import encode_vectors as _ray_vectors  # deferred: imports ray

        texts = [str(t) for t in texts]
        spec = EncoderSpec.from_encoder(encoder)
        if not texts:
            return np.empty((0, int(encoder.dim)), dtype=np.float32)
        return _ray_vectors(spec, texts, cluster=RayCluster(address, workers, threads), batch_size=batch_size,
                            cache=cache, cache_root=_cache_root(address), progress=progress)

    def embed_input(self, input, *, address: str | None, workers: int | None, threads: int | None, out=None,
                    json_path=None, model: str = DEFAULT_MODEL, backend: str = "auto", pooling: str | None = None,
                    batch_size: int = 64, device: str = "cpu", wordfreq_top: int = 0, cache: bool = True,
                    progress: bool = False, trust_remote_code: bool = False, junk: str = "drop",
                    precision: str = "fp32", runtime: str = "auto") -> dict:
        """The Ray branch of :func:`normscope.engine.embed_input`: checks the options the Ray engine does not take,
        then :func:`normscope.extensions.ray_engine.embed_corpus`."""
        if wordfreq_top:
            raise InputError("wordfreq:N runs on the local engine; the ray engine reads corpus files")
        if input is None:
            raise InputError("give INPUT (a .jsonl[.gz], .parquet or BEIR corpus) for --engine ray")
        if out is None:
            raise InputError("--engine ray needs -o OUT.parquet (a directory of parquet shards)")
        if junk not in ("drop", "error"):
            raise InputError(f"junk must be 'drop' or 'error', got {junk!r}")
        from normscope.extensions.ray_engine import EncoderSpec, RayCluster, embed_corpus  # deferred: imports ray

        if resolve_backend(model, backend, pooling)[0] == "precomputed":
            raise InputError("the ray engine embeds texts with a model; precomputed vectors need no engine")
        spec = EncoderSpec(model=model, backend=backend, pooling=pooling, device=_worker_device(device),
                           trust_remote_code=trust_remote_code, options={"precision": precision, "runtime": runtime})
        return embed_corpus(input, out, spec=spec, cluster=RayCluster(address, workers, threads),
                            batch_size=batch_size, cache=cache, cache_root=_cache_root(address), junk=junk,
                            json_path=json_path, progress=progress)
