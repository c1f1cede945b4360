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
- **Fallback.** A missing or broken ``openvino`` (import, conversion or compilation failing) leaves
  the run on torch with one ``warning:`` line on stderr (:func:`to_openvino`).

Measured: docs/embed.md ("OpenVINO runtime"), ``benchmarks/embed_openvino.py``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import logging
import os
import shutil
import sys
import tempfile
import threading
import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from normscope._progress import progress_bar
from normscope.encoders.base import Encoder
from normscope.encoders.bundled import cache_dir
from normscope.errors import InputError
from normscope.table import PRECISIONS, RUNTIMES
from normscope.validate import check_choice

__all__ = ["OpenVINOEncoder", "to_openvino", "convert", "compile_ir", "ir_dir", "telemetry_off", "openvino_available",
           "CONVERSION", "HINTS", "RUNTIMES"]

#: Version of the torch -> IR conversion; part of the IR folder's key (bump on change).
CONVERSION = "ov1"
#: ``INFERENCE_PRECISION_HINT`` of each normscope precision.
HINTS = {"fp32": "f32", "bf16": "bf16"}
#: Inputs a converted model may take, in this order (those the model's ``preprocess`` returns).
_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
#: Texts traced at conversion: different lengths, so the example batch is padded (a batch without padding
#: could let the model skip its attention mask in the traced graph).
_EXAMPLE = ("a", "the cell membrane regulates what enters and leaves the cell")

_LOCK = threading.Lock()
_WARNED: set[str] = set()


def _why(exc: BaseException) -> str:
    """``Type: last non-empty line of the message`` (OpenVINO's first line only names a source file)."""
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    return f"{type(exc).__name__}: {lines[-1][:200]}" if lines else type(exc).__name__


def _warn_once(message: str) -> None:
    """One ``warning: ...`` line on stderr per distinct message and process."""
    if message not in _WARNED:
        _WARNED.add(message)
        print(f"warning: {message}", file=sys.stderr, flush=True)


@contextlib.contextmanager
def telemetry_off():
    """Context under which ``openvino`` is imported and models converted with its telemetry opted out.

    Sets ``CI=true``, the opt-out ``openvino_telemetry`` documents for automated runs (with it the
    converter's ``Telemetry(..., disable_in_ci=True)`` declines consent: no client id, no counters,
    no file under ``HOME``, nothing sent), and restores the previous value on exit. Nothing is
    written to the user's home (the consent-file opt-out would write ``~/intel/openvino_telemetry``).
    """
    old = os.environ.get("CI")
    os.environ["CI"] = "true"
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("CI", None)
        else:
            os.environ["CI"] = old


def _import_openvino():
    with telemetry_off():
        import openvino  # noqa: F401  (deferred: optional extra, imported with telemetry opted out)

        return openvino


def openvino_available() -> bool:
    """Whether ``openvino`` imports here (with telemetry opted out)."""
    try:
        _import_openvino()
    except Exception:  # a broken install counts as missing
        return False
    return True


def ir_dir(fingerprint) -> Path:
    """Folder of the converted model of a torch encoder's ``fingerprint``: ``cache_dir()/openvino/<key>``.

    ``key`` is 24 hex digits of the sha256 of the fingerprint's ``key`` (model, weights, configuration,
    pooling; its precision set to fp32: one IR serves both precisions) and :data:`CONVERSION`.
    """
    fp32 = dataclasses.replace(fingerprint, precision="fp32")
    key = hashlib.sha256(f"{fp32.key}:{CONVERSION}".encode()).hexdigest()[:24]
    return cache_dir(create=False) / "openvino" / key


def _input_names(torch_encoder) -> list[str]:
    _, feats = next(torch_encoder.batches(list(_EXAMPLE), len(_EXAMPLE)))
    return [k for k in _INPUTS if k in feats]


def convert(torch_encoder, *, progress: bool = True) -> Path:
    """The OpenVINO IR of ``torch_encoder``'s module (converted once, then read from the cache).

    Parameters
    ----------
    torch_encoder : SentenceTransformerEncoder
        The model (its module in float32, the dropped ``Normalize`` gone).
    progress : bool, keyword-only
        Print one ``note:`` line on stderr when a conversion runs.

    Returns
    -------
    Path
        ``ir_dir(fingerprint) / "model.xml"`` (with ``model.bin`` and ``normscope_openvino.json``: the
        input names, openvino version, source fingerprint).

    Raises
    ------
    ImportError, RuntimeError, OSError
        ``openvino`` missing or failing to convert or write (the caller falls back to torch).
    """
    import torch

    target = ir_dir(torch_encoder.fingerprint)
    xml = target / "model.xml"
    if xml.is_file() and (target / "model.bin").is_file():
        return xml
    with _LOCK, telemetry_off():
        if xml.is_file():
            return xml
        ov = _import_openvino()
        names = _input_names(torch_encoder)
        module = torch_encoder.module

        class _Wrapped(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.inner = module

            def forward(self, input_ids, attention_mask=None, token_type_ids=None):
                given = {"input_ids": input_ids, "attention_mask": attention_mask, "token_type_ids": token_type_ids}
                return self.inner({k: given[k] for k in names})["sentence_embedding"]

        if progress:
            print(f"note: converting {torch_encoder.fingerprint.name} to OpenVINO IR once (cached in {target})",
                  file=sys.stderr, flush=True)
        _, feats = next(torch_encoder.batches(list(_EXAMPLE), len(_EXAMPLE)))
        example = {k: feats[k] for k in names}
        with torch.no_grad(), warnings.catch_warnings():
            # the tracer's notes on Python branches (mask shapes, padding length) are settled by the padded example
            warnings.simplefilter("ignore", torch.jit.TracerWarning)
            warnings.simplefilter("ignore", FutureWarning)  # transformers' deprecations, hit by the converter's calls
            hf_log = logging.getLogger("transformers")
            level = hf_log.level
            hf_log.setLevel(logging.ERROR)  # its config notes as the converter inspects the model
            try:
                model = ov.convert_model(_Wrapped().eval(), example_input=example,
                                         input=[(k, [-1, -1], ov.Type.i64) for k in names])
            finally:
                hf_log.setLevel(level)
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".convert-", dir=target.parent))
        try:
            ov.save_model(model, str(tmp / "model.xml"), compress_to_fp16=False)  # keep float32 weights
            info = {"inputs": names, "openvino": ov.get_version(), "conversion": CONVERSION,
                    "source": dataclasses.replace(torch_encoder.fingerprint, precision="fp32").to_dict()}
            (tmp / "normscope_openvino.json").write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
            try:
                os.replace(tmp, target)
            except OSError:
                if not xml.is_file():  # lost a race only if the winner finished
                    raise
        finally:
            with contextlib.suppress(FileNotFoundError):
                shutil.rmtree(tmp)
    return xml


def _threads() -> int:
    import torch

    return max(1, int(torch.get_num_threads()))


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
            twins[precision] = OpenVINOEncoder(self.torch_encoder, precision=precision, threads=self._threads)
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
        _warn_once(f"OpenVINO is not available ({_why(exc)}); "
                   "running on torch (pip install 'normscope[openvino]')")
        return encoder
    try:
        ov_enc = OpenVINOEncoder(base, precision="fp32", threads=threads).at_precision(encoder.precision)
    except Exception as exc:  # a broken install or a model it cannot convert: torch, one line
        _warn_once(f"OpenVINO could not run {encoder.fingerprint.name} ({_why(exc)}); running on torch")
        return encoder
    memo[key] = ov_enc.at_precision("fp32")
    return ov_enc
