"""OpenVINO as the inference runtime of a sentence-transformers model: same vectors, less CPU time.

``load_encoder(name, runtime="openvino")`` (``--runtime openvino`` on the commands that embed) wraps
the torch encoder in an :class:`OpenVINOEncoder`: the texts are tokenized and batched exactly as the
torch path does (:meth:`~normscope.encoders.sentence_transformers.SentenceTransformerEncoder.batches`:
the model's own ``preprocess``, longest texts first, truncation at ``max_seq_length``), and each
batch runs the whole module (transformer and pooling, without the dropped ``Normalize``) converted
to OpenVINO IR with ``openvino.convert_model``.

- **Conversion once, cached by content.** The IR is written (float32 weights: ``compress_to_fp16``
  off) under ``cache_dir()/openvino/<key>/`` where ``key`` hashes the torch fingerprint's key
  (weights' sha256, tokenizer and configuration hash, pooling) and the conversion version
  :data:`CONVERSION`: every virtual environment with the same model shares it. It is written to a
  temporary folder renamed into place (a killed conversion leaves nothing); one ``note:`` line says a
  conversion is running. A cached IR that fails to compile is removed and converted again (one ``note:``).
- **Precision set explicitly.** OpenVINO's default inference precision on CPUs with AVX-512 BF16 is
  bf16 (a silent ~5e-4 relative norm error). :func:`compile_ir` always sets
  ``INFERENCE_PRECISION_HINT`` (``f32`` for ``precision="fp32"``, ``bf16`` for ``"bf16"``), reads it
  back from the compiled model and records it in the fingerprint's ``runtime``
  (``"openvino:f32"``), hence in the embedding cache key and every result fingerprint.
- **Telemetry never runs.** ``openvino.convert_model`` initialises ``openvino_telemetry``, which with
  no consent file writes a client id and counters under ``~/intel/`` and sends events. Its
  documented opt-out for automated runs, ``CI=true`` (``OptInChecker._run_in_ci``, honoured because
  the converter passes ``disable_in_ci=True``), is set in the environment before ``openvino`` is
  imported and kept while converting (:func:`telemetry_off`). Inference (``openvino.Core``) has no
  telemetry.
- **Equality first.** An fp32 OpenVINO encoder embeds :data:`CHECK_TEXTS` (1 to more than 512 tokens, one
  padded batch, one text truncated at ``max_seq_length``) and compares them with its torch twin:
  ``check_error`` is the largest relative norm difference (:func:`equality_error`).
- **Fallback.** A missing or broken ``openvino`` (import, conversion or compilation failing) leaves
  the run on torch with one ``warning:`` line on stderr (:func:`to_openvino`).
- **The default, ``auto``** (:func:`choose_runtime`): OpenVINO at f32 when ``openvino`` imports, the
  model is a sentence-transformers one on the CPU at ``fp32`` and its converted model passes the
  equality check (``check_error <= EQUALITY_TOLERANCE``, 1e-6); otherwise torch, silently (no
  ``warning:``). :func:`describe_runtime` says which ran and why (the report's page, ``embed --json``).

The conversion (telemetry, the IR folder, :func:`convert`) is in :mod:`normscope.encoders.openvino_ir`; its names are
importable from here too.

Measured: docs/embed.md ("OpenVINO runtime"), ``benchmarks/embed_openvino.py``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from normscope._progress import progress_bar
from normscope.encoders.base import Encoder
from normscope.errors import InputError
from normscope.table import PRECISIONS, RUNTIMES
from normscope.validate import check_choice
from normscope.encoders.openvino_ir import (_INPUTS, CONVERSION, _import_openvino, _threads, _why, convert, ir_dir,
                                           openvino_available, telemetry_off)

__all__ = ["OpenVINOEncoder", "to_openvino", "choose_runtime", "describe_runtime", "equality_error", "convert",
           "compile_ir", "ir_dir", "telemetry_off", "openvino_available", "CONVERSION", "HINTS", "RUNTIMES",
           "CHECK_TEXTS", "EQUALITY_TOLERANCE"]

#: ``INFERENCE_PRECISION_HINT`` of each normscope precision.
HINTS = {"fp32": "f32", "bf16": "bf16"}

#: Texts of the equality check (:func:`equality_error`): 1 to well over 512 tokens (the longest is truncated at every
#: bundled model's ``max_seq_length``), so padding, the attention mask and truncation are
#: all exercised (in batches of 2).
CHECK_TEXTS = (
    "a",
    "Hypertension",
    "the cell membrane regulates what enters and leaves the cell",
    "Vitamin D supplementation did not reduce the incidence of invasive cancer or cardiovascular events.",
    "Naïve T cells — CD4⁺ and CD8⁺ — differentiate after antigen exposure (see Fig. 2b, p < 0.001).",
    "What is the capital of France?",
    "A randomised controlled trial of 2,112 adults over 5 years. " * 4,
    "The norm of a contrastive embedding grows with the evidence a text carries about its topic. " * 40,
)
#: Largest relative norm difference ``max_i | ||z_ov,i|| - ||z_torch,i|| | / ||z_torch,i||`` on :data:`CHECK_TEXTS` at
#: which ``runtime="auto"`` takes OpenVINO (issue 41: OpenVINO f32 measured 1e-7 median, 5e-7 max on SciFact).
EQUALITY_TOLERANCE = 1e-6

_WARNED: set[str] = set()
#: Why ``runtime="auto"`` left a model on torch: torch fp32 fingerprint key -> reason (:func:`describe_runtime`).
_AUTO_REASONS: dict[str, str] = {}
#: Why ``runtime="openvino"`` fell back to torch: torch fp32 fingerprint key -> reason.
_FALLBACK_REASONS: dict[str, str] = {}


def _warn_once(message: str) -> None:
    """One ``warning: ...`` line on stderr per distinct message and process."""
    if message not in _WARNED:
        _WARNED.add(message)
        print(f"warning: {message}", file=sys.stderr, flush=True)


#: Compiled models of this process: (IR file, precision, threads) -> (compiled model, hint read back).
_COMPILED: dict = {}


def compile_ir(xml: Path, precision: str, threads: int | None = None):
    """The IR compiled for the CPU at ``precision``: ``(compiled model, hint read back)``.

    ``INFERENCE_PRECISION_HINT`` is :data:`HINTS` ``[precision]``, ``INFERENCE_NUM_THREADS`` is
    ``threads`` (default ``torch.get_num_threads()``, the threads torch would use), ``PERFORMANCE_HINT``
    ``LATENCY`` (one stream). Memoised per (file, precision, threads).

    Raises
    ------
    InputError
        Unknown precision.
    RuntimeError
        The compiled model reports another inference precision than the one set.
    """
    check_choice("precision", precision, PRECISIONS)
    threads = threads or _threads()
    key = (str(xml), precision, threads)
    if key not in _COMPILED:
        ov = _import_openvino()
        compiled = ov.Core().compile_model(str(xml), "CPU", {
            "INFERENCE_PRECISION_HINT": HINTS[precision],
            "INFERENCE_NUM_THREADS": int(threads),
            "PERFORMANCE_HINT": "LATENCY",
        })
        got = compiled.get_property("INFERENCE_PRECISION_HINT")
        got = got.get_type_name() if hasattr(got, "get_type_name") else str(got)
        if got != HINTS[precision]:
            raise RuntimeError(f"OpenVINO compiled at inference precision {got}, not {HINTS[precision]}")
        _COMPILED[key] = (compiled, HINTS[precision])
    return _COMPILED[key]


class OpenVINOEncoder(Encoder):
    """A sentence-transformers model whose forward passes run in OpenVINO (see the module docstring).

    Tokenization, batching (decreasing token count, stable), truncation, ``token_counts`` and the
    junk rule's tokenizer are the torch encoder's; only the forward pass differs. Vectors equal the
    torch fp32 ones to about 1e-7 relative in norm at ``fp32`` (tests/test_openvino.py).

    Parameters
    ----------
    torch_encoder : SentenceTransformerEncoder
        The model; its fingerprint (with ``runtime="openvino:<hint>"``) becomes this encoder's.
    precision : {"fp32", "bf16"}, keyword-only
        ``INFERENCE_PRECISION_HINT`` ``f32`` or ``bf16``.
    threads : int, optional, keyword-only
        OpenVINO's inference threads (default: ``torch.get_num_threads()`` at compile time).

    Attributes
    ----------
    torch_encoder : SentenceTransformerEncoder
        The torch twin at the same precision (gradients, probes).
    inference_precision : str
        The hint read back from the compiled model (``"f32"`` or ``"bf16"``).
    """

    def __init__(self, torch_encoder, *, precision: str = "fp32", threads: int | None = None, progress: bool = True):
        check_choice("precision", precision, PRECISIONS)
        self.torch_encoder = torch_encoder.at_precision(precision)
        self.precision = precision
        self.max_seq_length = torch_encoder.max_seq_length
        self._threads = threads
        self.xml = convert(torch_encoder, progress=progress)
        try:
            self._compile(precision, threads)
        except Exception as exc:  # a damaged cached IR (truncated .bin, bad metadata): removed and converted again, once
            print(f"note: the cached OpenVINO IR of {torch_encoder.fingerprint.name} could not be used ({_why(exc)}); "
                  "converting it again", file=sys.stderr, flush=True)
            shutil.rmtree(self.xml.parent, ignore_errors=True)
            for key in [k for k in _COMPILED if k[0] == str(self.xml)]:
                del _COMPILED[key]
            self.xml = convert(torch_encoder, progress=progress)
            self._compile(precision, threads)
        self.fingerprint = dataclasses.replace(self.torch_encoder.fingerprint,
                                               runtime=f"openvino:{self.inference_precision}")
        self.openvino_version = str(json.loads((self.xml.parent / "normscope_openvino.json").read_text(
            encoding="utf-8")).get("openvino", ""))
        #: largest relative norm difference to torch fp32 on CHECK_TEXTS (fp32 only; None at bf16)
        self.check_error = self._checked_error() if precision == "fp32" else None

    def _checked_error(self) -> float:
        """:func:`equality_error` against the torch twin, measured once per IR, OpenVINO, torch and
        transformers version, CPU and thread count, and kept in the IR folder (``checks.json``)."""
        import torch
        import transformers

        core = self.compiled
        signature = {"openvino": self.openvino_version, "torch": torch.__version__,
                     "transformers": transformers.__version__, "threads": int(core.get_property("INFERENCE_NUM_THREADS")),
                     "texts": hashlib.sha256("\x00".join(CHECK_TEXTS).encode()).hexdigest()[:16]}
        with contextlib.suppress(Exception):  # a CPU name OpenVINO cannot report only widens the key's reuse
            ov = _import_openvino()
            signature["cpu"] = str(ov.Core().get_property("CPU", "FULL_DEVICE_NAME"))
        key = hashlib.sha256(json.dumps(signature, sort_keys=True).encode()).hexdigest()[:16]
        path = self.xml.parent / "checks.json"
        checks: dict = {}
        with contextlib.suppress(OSError, ValueError):  # none yet, or unreadable: measured (and rewritten)
            checks = json.loads(path.read_text(encoding="utf-8"))
        checks = checks if isinstance(checks, dict) else {}
        with contextlib.suppress(KeyError, TypeError, ValueError):
            return float(checks[key]["max_rel_norm_error"])
        error = equality_error(self, self.torch_encoder)
        checks[key] = {**signature, "max_rel_norm_error": error, "n_texts": len(CHECK_TEXTS)}
        with contextlib.suppress(OSError):  # a read-only cache: measured again next time
            tmp = path.with_name(f".checks-{os.getpid()}.json")
            tmp.write_text(json.dumps(checks, indent=2) + "\n", encoding="utf-8")
            os.replace(tmp, path)
        return error

    def _compile(self, precision: str, threads: int | None) -> None:
        info = json.loads((self.xml.parent / "normscope_openvino.json").read_text(encoding="utf-8"))
        self.input_names = [str(k) for k in info["inputs"]]
        if not self.input_names or not set(self.input_names) <= set(_INPUTS):
            raise ValueError(f"bad inputs {self.input_names} in normscope_openvino.json")
        self.compiled, self.inference_precision = compile_ir(self.xml, precision, threads)

    def at_precision(self, precision: str) -> "OpenVINOEncoder":
        """This model in OpenVINO at ``precision`` (same IR, compiled with the other hint; memoised)."""
        check_choice("precision", precision, PRECISIONS)
        if precision == self.precision:
            return self
        twins = self.__dict__.setdefault("_twins", {self.precision: self})
        if precision not in twins:
            twins[precision] = OpenVINOEncoder(self.torch_encoder.at_precision("fp32"), precision=precision,
                                               threads=self._threads)
            twins[precision].__dict__["_twins"] = twins
        return twins[precision]

    @property
    def hf_tokenizer(self):
        return self.torch_encoder.hf_tokenizer

    @property
    def dim(self) -> int:
        return self.torch_encoder.dim

    def encode(self, texts: Sequence[str], *, batch_size: int = 64, progress: bool = False) -> np.ndarray:
        """Raw pooled vectors, ndarray of shape (n, d), float32, rows in input order (see :meth:`Encoder.encode`).

        The batches are the torch encoder's (:meth:`SentenceTransformerEncoder.batches`); each runs
        through one infer request of the compiled IR with int64 inputs.

        Raises
        ------
        InputError
            ``batch_size < 1``.
        """
        if batch_size < 1:
            raise InputError(f"batch_size must be >= 1, got {batch_size}")
        texts = [str(t) for t in texts]
        n = len(texts)
        out = np.empty((n, self.dim), dtype=np.float32)
        if n == 0:
            return out
        request = self.compiled.create_infer_request()
        n_batches = -(-n // batch_size)
        with progress_bar(progress and n_batches > 1, n_batches) as advance:
            for idx, feats in self.torch_encoder.batches(texts, batch_size):
                inputs = {k: np.ascontiguousarray(feats[k].numpy(), dtype=np.int64) for k in self.input_names}
                result = request.infer(inputs)
                out[idx] = np.asarray(result[self.compiled.output(0)], dtype=np.float32)
                advance()
        return out


def equality_error(encoder: Encoder, torch_encoder: Encoder, texts: Sequence[str] = CHECK_TEXTS) -> float:
    """Largest relative norm difference of ``encoder``'s vectors to ``torch_encoder``'s on ``texts``.

    ``max_i | ||z_i|| - ||t_i|| | / ||t_i||`` with ``z`` = ``encoder.encode(texts)``, ``t`` = the torch encoder's
    (both raw, batches of 2 texts of different lengths, so each is padded; float64 norms). The figure ``runtime="auto"`` compares with
    :data:`EQUALITY_TOLERANCE`.

    Parameters
    ----------
    encoder, torch_encoder : Encoder
        The OpenVINO encoder and its torch fp32 twin (same tokenizer and ``max_seq_length``).
    texts : sequence of str
        Default :data:`CHECK_TEXTS`.

    Returns
    -------
    float
        The largest relative norm difference (``inf`` if a vector is not finite).
    """
    z = np.asarray(encoder.encode(list(texts), batch_size=2), dtype=np.float64)
    t = np.asarray(torch_encoder.encode(list(texts), batch_size=2), dtype=np.float64)
    if z.shape != t.shape or not np.isfinite(z).all():
        return float("inf")
    nz, nt = np.linalg.norm(z, axis=1), np.linalg.norm(t, axis=1)
    return float(np.max(np.abs(nz - nt) / nt))


def _fp32_key(encoder: Encoder) -> str:
    """The key of ``encoder``'s torch fp32 fingerprint ("" for an encoder whose fingerprint is not a
    :class:`~normscope.encoders.ModelFingerprint`, e.g. a lookup table of precomputed vectors)."""
    fp = getattr(encoder, "fingerprint", None)
    if not dataclasses.is_dataclass(fp) or isinstance(fp, type):
        return ""
    return dataclasses.replace(fp, precision="fp32", runtime="torch").key


def choose_runtime(encoder: Encoder, *, threads: int | None = None) -> Encoder:
    """``runtime="auto"``: ``encoder`` on OpenVINO f32 when that is measured equal to torch, else ``encoder``.

    OpenVINO is taken when all hold: ``encoder`` is a sentence-transformers text model on the CPU at
    ``precision="fp32"``; ``openvino`` imports (with telemetry opted out); the model converts and
    compiles (once per model content: :func:`convert`); and its vectors of :data:`CHECK_TEXTS` equal the
    torch fp32 ones to :data:`EQUALITY_TOLERANCE` relative in norm (:func:`equality_error`). OpenVINO f32
    was measured 1.2-1.3x faster than torch fp32 on SciFact abstracts at one thread (docs/embed.md).
    Otherwise ``encoder`` is returned unchanged and nothing is printed (the reason is kept for
    :func:`describe_runtime`). OpenVINO, once chosen, stays chosen per model, precision and thread count in a process;
    a torch outcome is decided again at the next call (the compiled model and the stored check make that cheap).

    Parameters
    ----------
    encoder : Encoder
        Any encoder (:func:`normscope.load_encoder` at ``runtime="torch"``).
    threads : int, optional, keyword-only
        OpenVINO's inference threads (default ``torch.get_num_threads()``).

    Returns
    -------
    Encoder
        An :class:`OpenVINOEncoder` (its ``fingerprint.runtime`` is ``"openvino:f32"``) or ``encoder``.
    """
    if isinstance(encoder, OpenVINOEncoder):
        return encoder
    fp = encoder.fingerprint
    reason = None
    if getattr(fp, "backend", "") != "sentence-transformers" or not hasattr(encoder, "batches"):
        reason = f"a {getattr(fp, 'backend', 'non-transformer')} model runs on torch (OpenVINO: sentence-transformers only)"
    elif str(getattr(encoder, "device", "cpu")) != "cpu":
        reason = f"OpenVINO runs on the CPU; the model is on {encoder.device}"
    elif encoder.precision != "fp32":
        reason = f"OpenVINO is chosen at fp32 only; {encoder.precision} runs under torch.autocast"
    if reason is not None:
        _AUTO_REASONS[_fp32_key(encoder)] = reason
        return encoder
    memo = encoder.__dict__.setdefault("_openvino_auto", {})
    key = threads or _threads()
    if key not in memo:
        chosen = _auto(encoder, threads)
        if chosen is encoder:  # torch: decided again next time (its cause may pass: a cache folder, an install)
            return encoder
        memo[key] = chosen
    return memo[key]


def _auto(encoder: Encoder, threads: int | None) -> Encoder:
    """The decision of :func:`choose_runtime` for an fp32 sentence-transformers model on the CPU."""
    try:
        _import_openvino()
    except Exception as exc:  # missing or broken install: torch, no line (the default must not warn on a plain install)
        missing = isinstance(exc, ImportError) and getattr(exc, "name", None) in ("openvino", None)
        _AUTO_REASONS[_fp32_key(encoder)] = ("openvino is not installed (pip install 'normscope[openvino]')" if missing
                                             else f"openvino does not import ({_why(exc)})")
        return encoder
    memo = encoder.__dict__.setdefault("_openvino", {})  # shared with to_openvino: one OpenVINO encoder per model
    key = threads or _threads()
    try:
        ov_enc = memo[key] if key in memo else OpenVINOEncoder(encoder, precision="fp32", threads=threads)
    except Exception as exc:  # a model it cannot convert or compile: torch
        _AUTO_REASONS[_fp32_key(encoder)] = f"OpenVINO could not run the model ({_why(exc)})"
        return encoder
    memo[key] = ov_enc
    if not ov_enc.check_error <= EQUALITY_TOLERANCE:
        _AUTO_REASONS[_fp32_key(encoder)] = (f"OpenVINO's vectors differ from torch fp32 by {ov_enc.check_error:.1e} "
                                             f"relative in norm on {len(CHECK_TEXTS)} check texts (tolerance "
                                             f"{EQUALITY_TOLERANCE:.0e})")
        return encoder
    _AUTO_REASONS.pop(_fp32_key(encoder), None)
    return ov_enc


def describe_runtime(encoder: Encoder, requested: str = "torch") -> str:
    """One phrase saying which runtime ran ``encoder``'s forward passes and, for ``auto``, why.

    Parameters
    ----------
    encoder : Encoder
        What :func:`normscope.load_encoder` returned.
    requested : {"auto", "torch", "openvino"}
        The ``runtime`` asked for (``--runtime``).

    Returns
    -------
    str
        e.g. ``"OpenVINO 2026.4.1 f32 (equal to torch fp32 to 2.1e-07 relative in norm on 8 check texts;
        --runtime auto)"`` or ``"torch (--runtime auto: openvino is not installed ...)"``.
    """
    if isinstance(encoder, OpenVINOEncoder):
        version = encoder.openvino_version.split("-")[0]
        parts = []
        if encoder.check_error is not None and encoder.check_error <= EQUALITY_TOLERANCE:
            parts.append(f"equal to torch fp32 to {encoder.check_error:.1e} relative in norm on {len(CHECK_TEXTS)} "
                         "check texts")
        elif encoder.check_error is not None:
            parts.append(f"differs from torch fp32 by {encoder.check_error:.1e} relative in norm on {len(CHECK_TEXTS)} "
                         f"check texts, above the {EQUALITY_TOLERANCE:.0e} tolerance")
        if requested != "openvino":
            parts.append(f"--runtime {requested}")
        return f"OpenVINO {version} {encoder.inference_precision}" + (f" ({'; '.join(parts)})" if parts else "")
    key = _fp32_key(encoder)
    if requested == "auto" and key in _AUTO_REASONS:
        return f"torch (--runtime auto: {_AUTO_REASONS[key]})"
    if requested == "openvino" and key in _FALLBACK_REASONS:
        return f"torch (--runtime openvino fell back: {_FALLBACK_REASONS[key]})"
    return "torch"


def to_openvino(encoder: Encoder, *, threads: int | None = None) -> Encoder:
    """``encoder`` with its forward passes in OpenVINO, or ``encoder`` itself when OpenVINO cannot run.

    Parameters
    ----------
    encoder : Encoder
        A sentence-transformers text encoder (:class:`SentenceTransformerEncoder`) at its precision.
    threads : int, optional, keyword-only

    Returns
    -------
    Encoder
        An :class:`OpenVINOEncoder` (memoised per torch encoder, precision and threads); the torch
        ``encoder`` with one ``warning:`` line on stderr when ``openvino`` is missing or fails to
        import, convert or compile.

    Raises
    ------
    InputError
        ``encoder`` is not a sentence-transformers model (open_clip, CLIP, huggingface, GloVe and
        precomputed vectors run on their own runtime).
    """
    if isinstance(encoder, OpenVINOEncoder):
        return encoder
    backend = getattr(encoder.fingerprint, "backend", "")
    if backend != "sentence-transformers" or not hasattr(encoder, "batches"):
        raise InputError(f"--runtime openvino applies to sentence-transformers models; {encoder.fingerprint.name} "
                         f"is a {backend} model: use --runtime torch")
    base = encoder.at_precision("fp32")  # one OpenVINO encoder per model, its precisions twins of it
    memo = base.__dict__.setdefault("_openvino", {})
    key = threads or _threads()
    if key in memo:
        return memo[key].at_precision(encoder.precision)
    try:
        _import_openvino()
    except Exception as exc:  # missing or broken install: torch, one line
        _FALLBACK_REASONS[_fp32_key(encoder)] = f"OpenVINO is not available ({_why(exc)})"
        _warn_once(f"OpenVINO is not available ({_why(exc)}); "
                   "running on torch (pip install 'normscope[openvino]')")
        return encoder
    try:
        fp32 = OpenVINOEncoder(base, precision="fp32", threads=threads)
        ov_enc = fp32.at_precision(encoder.precision)
    except Exception as exc:  # a broken install or a model it cannot convert: torch, one line
        _FALLBACK_REASONS[_fp32_key(encoder)] = f"OpenVINO could not run it ({_why(exc)})"
        _warn_once(f"OpenVINO could not run {encoder.fingerprint.name} ({_why(exc)}); running on torch")
        return encoder
    if not fp32.check_error <= EQUALITY_TOLERANCE:  # asked for explicitly: it runs, and says it differs
        _warn_once(f"OpenVINO's vectors of {encoder.fingerprint.name} differ from torch fp32 by {fp32.check_error:.1e} "
                   f"relative in norm on {len(CHECK_TEXTS)} check texts (above {EQUALITY_TOLERANCE:.0e})")
    memo[key] = fp32
    return ov_enc
