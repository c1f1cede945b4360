"""Offline-first model resolution shared by the sentence-transformers and Hugging Face adapters."""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

from normscope.encoders.bundled import DEFAULT_MODEL
from normscope.errors import ModelError

T = TypeVar("T")

OFFLINE_HINT = f"the offline default is '{DEFAULT_MODEL}' (bundled with normscope, no network needed)"

HUB_CHECK_TIMEOUT_S = 5.0
"""Seconds the single hub reachability check (:func:`check_hub`) waits before giving up."""

# class names (anywhere in the MRO) of "could not reach the server" errors of httpx/httpx2/requests/urllib3
_CONNECTION_ERRORS = ("ConnectError", "ConnectionError", "TransportError", "NetworkError", "TimeoutException",
                      "Timeout", "TimeoutError", "ProxyError", "SSLError", "OfflineModeIsEnabled")


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


def check_name(name: str) -> None:
    """Raise the one-line :class:`ModelError` at once when ``name`` is neither an existing path nor a possible hub id."""
    if not Path(name).exists() and not looks_like_hub_id(name):
        raise ModelError(f"unknown model '{name}': not a directory, hub id or bundled name; {OFFLINE_HINT}")


def resolve(name: str, load: Callable[..., T], *, what: str = "model") -> T:
    """Load ``name`` with ``load(local_files_only=...)``: local cache first, then the hub.

    ``load(local_files_only=True)`` is tried first (no network). If it fails and
    the hub is offline (``HF_HUB_OFFLINE=1``), or ``name`` cannot be a hub id, a
    one-line :class:`ModelError` naming the offline default is raised at once.
    Otherwise one cheap request (:func:`check_hub`, no retries, timeout
    :data:`HUB_CHECK_TIMEOUT_S`) asks the hub whether ``name`` exists: an
    unreachable hub or an unknown repository raises the one-line
    :class:`ModelError` at once; only when the repository exists is
    ``load(local_files_only=False)`` tried, once, with huggingface_hub's retry
    warnings silenced.

    Raises
    ------
    ModelError
        Malformed directory, impossible name, offline and uncached, hub
        unreachable, repository unknown, or the download/load failed.
    """
    if Path(name).exists():
        try:
            return load(local_files_only=True)
        except Exception as exc:  # malformed directory
            raise ModelError(f"cannot load {what} from directory '{name}' ({_first_line(exc)})") from None
    check_name(name)
    try:
        return load(local_files_only=True)
    except Exception:
        pass
    if hub_offline():
        raise ModelError(f"model '{name}' is not available locally and HF_HUB_OFFLINE is set; {OFFLINE_HINT}")
    check_hub(name)
    try:
        with quiet_hub_logging():
            return load(local_files_only=False)
    except Exception as exc:  # network errors, 404s, malformed repos: one-line ModelErrors
        raise ModelError(f"cannot load model '{name}' ({_first_line(exc)}); {OFFLINE_HINT}") from None


def check_hub(name: str, *, timeout: float = HUB_CHECK_TIMEOUT_S) -> None:
    """One request to the hub's model-info endpoint for ``name`` (no retries), before any download.

    Parameters
    ----------
    name : str
        Hub repository id, ``owner/name``.
    timeout : float, keyword-only
        Seconds to wait for the hub.

    Raises
    ------
    ModelError
        The hub cannot be reached (DNS, refused connection, timeout, proxy/SSL
        failure): ``"... the Hugging Face hub is unreachable ..."``; or it
        answers that the repository does not exist (or is private):
        ``"... not found on the Hugging Face hub ..."``. Other answers (rate
        limits, server errors) pass, and the single download attempt reports them.
    """
    try:
        from huggingface_hub import HfApi
    except ImportError:  # pragma: no cover - a dependency of sentence-transformers/transformers
        return
    try:
        with quiet_hub_logging():
            HfApi().model_info(name, timeout=timeout)
    except Exception as exc:
        names = {c.__name__ for c in type(exc).__mro__}
        if "RepositoryNotFoundError" in names:
            raise ModelError(
                f"model '{name}' is not available locally and not found on the Hugging Face hub "
                f"(no such repository, or it is private); {OFFLINE_HINT}"
            ) from None
        if names & set(_CONNECTION_ERRORS) or isinstance(exc, OSError):
            raise ModelError(
                f"model '{name}' is not available locally and the Hugging Face hub is unreachable "
                f"({_first_line(exc)}); download it once where the hub is reachable (into this machine's cache) or "
                f"give the path of a local model folder; {OFFLINE_HINT}"
            ) from None


@contextlib.contextmanager
def quiet_hub_logging() -> Iterator[None]:
    """Raise the ``huggingface_hub`` logger to ERROR for the block (its per-retry warnings), then restore it."""
    logger = logging.getLogger("huggingface_hub")
    old = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(old)


def _first_line(exc: BaseException) -> str:
    s = str(exc).strip()
    return s.splitlines()[0][:160] if s else type(exc).__name__
