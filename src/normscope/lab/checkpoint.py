"""Atomic, resumable checkpoints of a long lab run.

A checkpoint is one ``torch.save`` file holding the run's settings key, the step reached, the
model's parameters, the optimizer state and everything recorded so far. It is written to a temp
file beside the target and renamed over it (``os.replace``), so a kill at any moment leaves either
the previous checkpoint or the new one, never a half-written file. A run resumes only from a
checkpoint whose settings key equals its own; otherwise it stops with an error naming the
settings that differ.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from normscope._io import atomic_path
from normscope.errors import InputError

__all__ = ["settings_key", "save_checkpoint", "load_checkpoint"]

FORMAT = 1


def settings_key(settings: dict) -> str:
    """sha256 (16 hex) of the canonical JSON of ``settings`` (everything the run's numbers depend on)."""
    text = json.dumps(settings, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def save_checkpoint(path: str | Path, payload: dict) -> Path:
    """Write ``payload`` (tensors, numpy arrays, plain values) atomically to ``path`` (:func:`normscope._io.atomic_path`).

    Raises
    ------
    InputError
        The directory of ``path`` does not exist or is not writable.
    """
    import torch

    with atomic_path(path) as tmp:
        torch.save({"format": FORMAT, **payload}, tmp)
    return Path(path)


def load_checkpoint(path: str | Path, settings: dict) -> dict | None:
    """The checkpoint at ``path`` if it exists, else None.

    Parameters
    ----------
    path : str or Path
    settings : dict
        This run's settings; the checkpoint must have been written with the same ones.

    Raises
    ------
    InputError
        The file is not a readable checkpoint of this format, or it was written with other
        settings (the differing keys are named).
    """
    import torch

    path = Path(path)
    if not path.is_file():
        return None
    try:
        ck = torch.load(path, map_location="cpu", weights_only=False)
    except Exception as exc:  # a truncated or foreign file
        raise InputError(f"checkpoint {path} is not readable ({type(exc).__name__}); delete it to start over") from None
    if not isinstance(ck, dict) or ck.get("format") != FORMAT or "settings" not in ck:
        raise InputError(f"checkpoint {path} is not a normscope lab checkpoint of format {FORMAT}; delete it to start over")
    if ck.get("key") != settings_key(settings):
        old = ck["settings"]
        diff = sorted(k for k in set(old) | set(settings) if old.get(k) != settings.get(k))
        raise InputError(f"checkpoint {path} was written by a run with other settings (differs in: {', '.join(diff)}); "
                         "use another --checkpoint path or delete it")
    return ck
