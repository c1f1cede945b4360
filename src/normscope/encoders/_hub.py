"""Offline-first model resolution shared by the sentence-transformers and Hugging Face adapters."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from normscope.encoders.bundled import DEFAULT_MODEL
from normscope.errors import ModelError

T = TypeVar("T")

OFFLINE_HINT = f"the offline default is '{DEFAULT_MODEL}' (bundled with normscope, no network needed)"


def hub_offline() -> bool:
    """True when ``HF_HUB_OFFLINE`` (or ``TRANSFORMERS_OFFLINE``) asks for no network."""
    for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        if os.environ.get(var, "0").strip().lower() not in ("0", "", "false", "no", "off"):
            return True
    return False


def looks_like_hub_id(name: str) -> bool:
    """``owner/name`` or ``name`` made of letters, digits, ``-``, ``_`` and ``.``."""
    parts = name.split("/")
    if len(parts) > 2 or not all(parts):
        return False
    return all(p.replace("-", "").replace("_", "").replace(".", "").isalnum() for p in parts)


def resolve(name: str, load: Callable[..., T], *, what: str = "model") -> T:
    """Load ``name`` with ``load(local_files_only=...)``: local cache first, then the hub.

    ``load(local_files_only=True)`` is tried first (no network). If it fails and
    the hub is offline (``HF_HUB_OFFLINE=1``), or ``name`` cannot be a hub id, a
    one-line :class:`ModelError` naming the offline default is raised at once;
    otherwise ``load(local_files_only=False)`` is tried once.
    """
    if Path(name).exists():
        try:
            return load(local_files_only=True)
        except Exception as exc:  # malformed directory
            raise ModelError(f"cannot load {what} from directory '{name}' ({_first_line(exc)})") from None
    if not looks_like_hub_id(name):
        raise ModelError(f"unknown model '{name}': not a directory, hub id or bundled name; {OFFLINE_HINT}")
    try:
        return load(local_files_only=True)
    except Exception:
        pass
    if hub_offline():
        raise ModelError(f"model '{name}' is not available locally and HF_HUB_OFFLINE is set; {OFFLINE_HINT}")
    try:
        return load(local_files_only=False)
    except Exception as exc:  # network errors, 404s, malformed repos: one-line ModelErrors
        raise ModelError(f"cannot load model '{name}' ({_first_line(exc)}); {OFFLINE_HINT}") from None


def _first_line(exc: BaseException) -> str:
    s = str(exc).strip()
    return s.splitlines()[0][:160] if s else type(exc).__name__
