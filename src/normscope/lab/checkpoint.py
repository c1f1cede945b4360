"""Atomic, resumable checkpoints of a long lab run.

A checkpoint is one ``torch.save`` file holding the run's settings key, the step reached, the
model's parameters, the optimizer state and everything recorded so far. It is written to a temp
file beside the target and renamed over it (``os.replace``), so a kill at any moment leaves either
the previous checkpoint or the new one, never a half-written file. A run resumes only from a
checkpoint whose settings key equals its own; otherwise it stops with an error naming the
settings that differ.

No code runs from a checkpoint file: it is read with ``torch.load(weights_only=True)`` (tensors,
dicts, lists, tuples, str, numbers, None only). numpy arrays of the record are stored as tagged tensors
(numeric) or nested lists with their dtype (strings), and numeric numpy scalars as 0-d tagged tensors (their dtype
kept, so a resumed run is bit-identical), so nothing needs a wider
unpickler; :func:`check_checkpoint_file` refuses, before any work, a file that names any other
Python object (a crafted pickle) without unpickling it.
"""

from __future__ import annotations

import hashlib
import json
import zipfile
from pathlib import Path

import numpy as np

from normscope._io import atomic_path
from normscope.errors import InputError

__all__ = ["settings_key", "save_checkpoint", "load_checkpoint", "check_checkpoint_file"]

#: 2: numpy arrays stored as tagged tensors, read with ``weights_only=True`` (format 1 needed full unpickling).
FORMAT = 2
_ND, _DT = "__ndarray__", "__dtype__"


def settings_key(settings: dict) -> str:
    """sha256 (16 hex) of the canonical JSON of ``settings`` (everything the run's numbers depend on)."""
    text = json.dumps(settings, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _to_safe(obj):
    """``obj`` with numpy arrays as tagged tensors and numpy scalars as Python numbers (weights-only loadable)."""
    import torch

    if isinstance(obj, np.ndarray):
        if obj.dtype.kind in "biufc":
            return {_ND: torch.from_numpy(np.ascontiguousarray(obj).copy()), _DT: ""}
        # strings (and object arrays of plain values): a nested list with the dtype
        return {_ND: _to_safe(obj.tolist()), _DT: obj.dtype.str, "__shape__": list(obj.shape)}
    if isinstance(obj, np.generic):
        if obj.dtype.kind in "biufc":  # a 0-d tensor keeps the dtype (a float32 scalar must not come back float64)
            return {_ND: torch.from_numpy(np.array(obj)), _DT: "", "__scalar__": True}
        return obj.item()
    if isinstance(obj, dict):
        return {k: _to_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(_to_safe(v) for v in obj)
    return obj


def _from_safe(obj):
    """Inverse of :func:`_to_safe`."""
    if isinstance(obj, dict):
        if _ND in obj and _DT in obj:
            if not obj[_DT]:
                arr = obj[_ND].numpy()
                return arr[()] if obj.get("__scalar__") else arr
            out = np.empty(tuple(obj["__shape__"]), dtype=np.dtype(obj[_DT]))
            if out.size:
                out[...] = _from_safe(obj[_ND])
            return out
        return {k: _from_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(_from_safe(v) for v in obj)
    return obj


def save_checkpoint(path: str | Path, payload: dict) -> Path:
    """Write ``payload`` (tensors, numpy arrays, plain values) atomically to ``path`` (:func:`normscope._io.atomic_path`).

    Raises
    ------
    InputError
        The directory of ``path`` does not exist or is not writable.
    """
    import torch

    with atomic_path(path) as tmp:
        torch.save({"format": FORMAT, **_to_safe(payload)}, tmp)
    return Path(path)


def check_checkpoint_file(path: str | Path, option: str = "--checkpoint") -> None:
    """Refuse, without unpickling it, a checkpoint file that is not a weights-only torch file.

    A missing file passes (a new run writes it). An existing one must be a torch zip file whose
    pickle names no Python object other than the tensor types ``torch.load(weights_only=True)``
    admits (``torch.serialization.get_unsafe_globals_in_checkpoint``, which reads the opcodes and
    runs nothing).

    Raises
    ------
    InputError
        Not a torch zip checkpoint, or it names other Python objects (the first few are named).
    """
    import torch

    path = Path(path)
    if not path.exists():
        return
    if not path.is_file():
        raise InputError(f"{option} {path} is not a file")
    if not zipfile.is_zipfile(path):
        raise InputError(f"{option} {path} is not readable as a normscope lab checkpoint (not a torch zip file); "
                         "delete it or give another path to start over")
    try:
        unsafe = torch.serialization.get_unsafe_globals_in_checkpoint(str(path))
    except Exception as exc:  # a damaged zip or pickle
        raise InputError(f"{option} {path} is not readable ({type(exc).__name__}); delete it to start over") from None
    if unsafe:
        raise InputError(f"{option} {path} names Python objects a checkpoint never holds ({', '.join(unsafe[:3])}); "
                         "normscope loads checkpoints as weights only and never runs code from a file: refused")


def load_checkpoint(path: str | Path, settings: dict) -> dict | None:
    """The checkpoint at ``path`` if it exists, else None; read with ``torch.load(weights_only=True)``.

    Parameters
    ----------
    path : str or Path
    settings : dict
        This run's settings; the checkpoint must have been written with the same ones.

    Raises
    ------
    InputError
        The file is not a readable checkpoint of this format (a file naming other Python objects
        is refused without running anything), or it was written with other settings (the
        differing keys are named).
    """
    import torch

    path = Path(path)
    if not path.is_file():
        return None
    check_checkpoint_file(path)
    try:
        ck = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # a truncated or foreign file
        raise InputError(f"checkpoint {path} is not readable as weights only ({type(exc).__name__}); "
                         "delete it to start over") from None
    if not isinstance(ck, dict) or ck.get("format") != FORMAT or "settings" not in ck:
        raise InputError(f"checkpoint {path} is not a normscope lab checkpoint of format {FORMAT}; delete it to start over")
    ck = _from_safe(ck)
    if ck.get("key") != settings_key(settings):
        old = ck["settings"]
        diff = sorted(k for k in set(old) | set(settings) if old.get(k) != settings.get(k))
        raise InputError(f"checkpoint {path} was written by a run with other settings (differs in: {', '.join(diff)}); "
                         "use another --checkpoint path or delete it")
    return ck
