"""Embedding engines: where the vectors of a corpus are computed.

=========  ====================================================  ==============================
engine     runs                                                  needs
=========  ====================================================  ==============================
``local``  this process (:mod:`normscope.encoders.embed`)         nothing (the default)
``ray``    a Ray cluster, Ray Data with an actor pool of          ``pip install 'normscope[ray]'``
           encoders (:mod:`normscope.extensions.ray_engine`)      and ``import normscope.extensions``
=========  ====================================================  ==============================

The Ray engine is an extension: this core package does not import :mod:`normscope.extensions` (an import-linter
contract). Importing :mod:`normscope.extensions` registers it here (:func:`register_engine`); the CLI does so in the
commands that take ``--engine``.

Three drop-in entry points take ``engine=`` and ``address=`` (and optionally ``workers=``,
``threads=``); with ``engine='local'`` they are exactly the local functions:

- :func:`embed_input` for :func:`normscope.encoders.embed.embed_input` (the ``embed`` stage);
- :func:`embed_texts` for :func:`normscope.encoders.embed.embed_texts` (in-memory texts: junk rule,
  token counts, precision error as ever, the vectors computed by the engine);
- :func:`encode_vectors` for :func:`normscope.encoders.cache.encode_cached` (vectors only).

Both engines share the content-addressed embedding cache, so vectors computed by one are reused by
the other (per text by the local engine; per batch by the Ray engine, see its module docstring).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from normscope.encoders.cache import encode_cached
from normscope.encoders.embed import embed_input as _local_input
from normscope.encoders.embed import embed_texts as _local_texts
from normscope.errors import InputError, ModelError

__all__ = ["ENGINES", "check_engine", "register_engine", "embed_input", "embed_texts", "encode_vectors"]

ENGINES = ("local", "ray")

#: Engines other than ``local``, registered by :mod:`normscope.extensions`: name -> backend with the methods
#: ``encode_vectors(encoder, texts, *, batch_size, progress, cache, address, workers, threads)`` and
#: ``embed_input(input, *, address, workers, threads, **options)``.
_BACKENDS: dict[str, object] = {}


def register_engine(name: str, backend) -> None:
    """Make ``engine=name`` run on ``backend`` (called by :mod:`normscope.extensions` when imported).

    Parameters
    ----------
    name : str
        One of :data:`ENGINES` other than ``'local'``.
    backend : object
        With ``encode_vectors(encoder, texts, *, batch_size, progress, cache, address, workers, threads)`` (returns
        the (n, d) float32 vectors) and ``embed_input(input, *, address, workers, threads, **options)`` (returns the
        ``embed`` summary dict).

    Raises
    ------
    InputError
        ``name`` is ``'local'`` or not in :data:`ENGINES`.
    """
    if name == "local" or name not in ENGINES:
        raise InputError(f"cannot register engine '{name}' (choose from {', '.join(ENGINES[1:])})")
    _BACKENDS[name] = backend


def _backend(engine: str):
    try:
        return _BACKENDS[engine]
    except KeyError:
        raise ModelError(f"--engine {engine} is an extension: import normscope.extensions first (the CLI does)") \
            from None


def check_engine(engine: str, address: str | None = None, workers: int | None = None) -> str:
    """Validate the engine options before any work; returns ``engine``.

    Raises
    ------
    InputError
        Unknown engine, or ``address``/``workers`` given to the local engine.
    ModelError
        ``engine='ray'`` without the ``ray`` extra installed, or not registered (:mod:`normscope.extensions` not
        imported).
    """
    if engine not in ENGINES:
        raise InputError(f"unknown engine '{engine}' (choose from {', '.join(ENGINES)})")
    if engine == "local" and (address is not None or workers is not None):
        raise InputError("--address and --workers apply to --engine ray only")
    if engine == "ray":
        try:
            import ray  # noqa: F401
            import ray.data  # noqa: F401
        except ImportError:
            raise ModelError("--engine ray needs Ray Data: pip install 'normscope[ray]'") from None
    if engine != "local":
        _backend(engine)
    return engine


def encode_vectors(
    encoder,
    texts: Sequence[str],
    *,
    batch_size: int = 64,
    progress: bool = False,
    cache: bool = True,
    engine: str = "local",
    address: str | None = None,
    workers: int | None = None,
    threads: int | None = None,
) -> np.ndarray:
    """Raw vectors of ``texts`` on the chosen engine: a drop-in for ``encode_cached``.

    Parameters
    ----------
    encoder : Encoder
        With ``engine='ray'`` each worker rebuilds it from its fingerprint (name, backend, pooling)
        and checks the fingerprint matches.
    texts : sequence of str, length n
    batch_size, progress, cache
        As :func:`normscope.encoders.cache.encode_cached`.
    engine : {'local', 'ray'}
    address : str, optional
        Ray cluster address (default: start a local cluster).
    workers, threads : int, optional
        Ray encoder actors and torch threads per actor (see :class:`~normscope.extensions.ray_engine.RayCluster`).

    Returns
    -------
    ndarray of shape (n, d), float32
        Row i for ``texts[i]``. The Ray engine's rows equal the local engine's to within 1e-6
        (batches differ, so padding differs; tested).

    Raises
    ------
    InputError
        Bad engine options or ``batch_size < 1``; precomputed encoders with ``engine='ray'``.
    ModelError
        ``engine='ray'`` without the extra.
    """
    check_engine(engine, address, workers)
    if engine == "local":
        return encode_cached(encoder, texts, batch_size=batch_size, progress=progress, cache=cache)
    if batch_size < 1:
        raise InputError(f"batch_size must be >= 1, got {batch_size}")
    return _backend(engine).encode_vectors(encoder, texts, batch_size=batch_size, progress=progress, cache=cache,
                                           address=address, workers=workers, threads=threads)


def embed_texts(texts: Sequence[str], ids: Sequence[str] | None = None, *, engine: str = "local",
                address: str | None = None, workers: int | None = None, threads: int | None = None, **options):
    """:func:`normscope.encoders.embed.embed_texts` with its vectors computed by the chosen engine.

    Parameters
    ----------
    texts : sequence of str, length n
    ids : sequence of str, length n, optional
    engine : {'local', 'ray'}
    address, workers, threads
        As :func:`encode_vectors`.
    **options
        Keyword arguments of :func:`normscope.encoders.embed.embed_texts` (``encoder``, ``model``,
        ``batch_size``, ``cache``, ``junk``, ``what``, ``precision`` ...). The junk rule, token counts
        and the bf16 norm error run in this process; only the vectors go to the workers.

    Returns
    -------
    EmbeddingTable
        Equal to the local engine's, vectors within 1e-6 (tested).

    Raises
    ------
    InputError, ModelError
        As the local function; bad engine options; missing ``ray`` extra.
    """
    check_engine(engine, address, workers)
    if engine == "local":
        return _local_texts(texts, ids, **options)

    def on_ray(encoder, kept, *, batch_size, progress, cache):
        return encode_vectors(encoder, kept, batch_size=batch_size, progress=progress, cache=cache, engine="ray",
                              address=address, workers=workers, threads=threads)

    return _local_texts(texts, ids, encode=on_ray, **options)


def embed_input(
    input: str | Path | None = None,
    *,
    engine: str = "local",
    address: str | None = None,
    workers: int | None = None,
    threads: int | None = None,
    **options,
):
    """The ``embed`` stage on the chosen engine: a drop-in for :func:`normscope.encoders.embed.embed_input`.

    Parameters
    ----------
    input : str or Path, optional
        As the local stage. With ``engine='ray'``: a ``.jsonl[.gz]``, a parquet (``id``/``_id``,
        ``text``, optional ``title``) or a BEIR corpus directory.
    engine : {'local', 'ray'}
    address : str, optional
        Ray cluster address; default a local cluster.
    workers, threads : int, optional
        Ray encoder actors and torch threads per actor.
    **options
        Keyword arguments of the local stage (``out, json_path, model, backend, pooling, batch_size,
        device, wordfreq_top, cache, progress, trust_remote_code, junk, precision, runtime``), passed
        through unchanged with ``engine='local'``. With ``engine='ray'``: ``out`` (required) is a
        directory of parquet shards named ``*.parquet``, ``device`` is ``cpu`` or ``cuda`` inside
        every worker (one GPU each), ``wordfreq_top`` is not available.

    Returns
    -------
    summary : dict
        The local summary; the Ray engine's adds ``engine``, ``workers``, ``threads_per_worker``,
        ``out``, ``norm_quantiles`` and ``norm_quantile_rel_error`` (see
        :func:`normscope.extensions.ray_engine.embed_corpus`).
    table : EmbeddingTable or None
        None with ``engine='ray'`` (the vectors stay in the shards; read them with
        :func:`normscope.engine.shards.read_table` or :func:`~normscope.engine.shards.open_vectors`).

    Raises
    ------
    InputError, ModelError
        As the local stage; bad engine options; missing ``ray`` extra.
    """
    check_engine(engine, address, workers)
    if engine == "local":
        return _local_input(input, **options)
    return _backend(engine).embed_input(input, address=address, workers=workers, threads=threads, **options), None

