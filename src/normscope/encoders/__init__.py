"""Encoders returning raw (un-normalised) vectors, and the :func:`load_encoder` factory."""

from __future__ import annotations

from pathlib import Path

from normscope.encoders.base import Encoder, TorchEncoder
from normscope.encoders.bundled import DEFAULT_MODEL

__all__ = ["Encoder", "TorchEncoder", "DEFAULT_MODEL", "load_encoder"]


def load_encoder(
    name: str = DEFAULT_MODEL,
    *,
    device: str = "cpu",
    trust_remote_code: bool = False,
) -> Encoder:
    """Return a ready raw-vector encoder for ``name``.

    Parameters
    ----------
    name : str
        - the bundled default ``sentence-transformers/all-MiniLM-L6-v2`` (offline);
        - a sentence-transformers directory or hub id;
    device : str, keyword-only
        Torch device (``cpu``, ``cuda``, ``cuda:1``...).
    trust_remote_code : bool, keyword-only
        Allow model repositories to run their own code (off by default).

    Returns
    -------
    Encoder

    Raises
    ------
    ModelError
        Unknown or unreachable model, or a missing optional extra.
    """
    from normscope.encoders.sentence_transformers import SentenceTransformerEncoder

    return SentenceTransformerEncoder(str(name), device=device, trust_remote_code=trust_remote_code)
