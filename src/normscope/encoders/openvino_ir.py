"""The torch -> OpenVINO IR conversion behind :mod:`normscope.encoders.openvino_runtime`: ``openvino`` imported with its
telemetry opted out (:func:`telemetry_off`), the IR folder of a model (:func:`ir_dir`, keyed by content and
:data:`CONVERSION`) and the conversion itself (:func:`convert`: once per model content, written to a temporary
folder renamed into place).

Every name here is also importable from :mod:`normscope.encoders.openvino_runtime`, whose docstring describes the
runtime as a whole (compilation, the equality check, the fallback and ``runtime="auto"``).
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
from pathlib import Path

from normscope.encoders.bundled import cache_dir

__all__ = ["convert", "ir_dir", "telemetry_off", "openvino_available", "CONVERSION"]

#: Version of the torch -> IR conversion; part of the IR folder's key (bump on change).
CONVERSION = "ov1"
#: Inputs a converted model may take, in this order (those the model's ``preprocess`` returns).
_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
#: Texts traced at conversion: different lengths, so the example batch is padded (a batch without padding
#: could let the model skip its attention mask in the traced graph).
_EXAMPLE = ("a", "the cell membrane regulates what enters and leaves the cell")
#: Serialises conversions in a process (threads of one run converting the same model).
_LOCK = threading.Lock()


def _why(exc: BaseException) -> str:
    """``Type: last non-empty line of the message`` (OpenVINO's first line only names a source file)."""
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    return f"{type(exc).__name__}: {lines[-1][:200]}" if lines else type(exc).__name__


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
