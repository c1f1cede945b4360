"""The :class:`Encoder` protocol: one ``encode`` returning raw vectors.

Adapters (sentence-transformers, Hugging Face AutoModel, open_clip, precomputed)
subclass :class:`Encoder`. Torch-backed adapters also subclass
:class:`TorchEncoder`, which exposes the differentiable module that the probes
(:mod:`normscope.probes`) need.
"""

from __future__ import annotations

import abc
import contextlib
from collections.abc import Sequence
from typing import Any

import numpy as np

from normscope.table import EmbeddingTable, ModelFingerprint

__all__ = ["Encoder", "TorchEncoder", "progress_bar"]


class Encoder(abc.ABC):
    """Maps inputs to raw, un-normalised float32 vectors.

    Subclasses set :attr:`fingerprint` and implement :meth:`encode`.
    """

    fingerprint: ModelFingerprint

    @property
    @abc.abstractmethod
    def dim(self) -> int:
        """Embedding dimension d."""

    @abc.abstractmethod
    def encode(self, texts: Sequence[str], *, batch_size: int = 64, progress: bool = False) -> np.ndarray:
        """Embed ``texts``.

        Parameters
        ----------
        texts : sequence of str, length n
        batch_size : int, keyword-only
        progress : bool, keyword-only
            Show a rich progress bar.

        Returns
        -------
        ndarray of shape (n, d), float32
            Raw vectors (no normalisation); ``np.linalg.norm(v, axis=1)`` are the norms ||z||.
        """

    def similarity(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Cosine similarity matrix of shape (len(a), len(b)), float32. Override for other scores."""
        a = np.asarray(a, dtype=np.float32)
        b = np.asarray(b, dtype=np.float32)
        an = a / np.maximum(np.linalg.norm(a, axis=1, keepdims=True), 1e-12)
        bn = b / np.maximum(np.linalg.norm(b, axis=1, keepdims=True), 1e-12)
        return an @ bn.T

    def embed_table(
        self,
        texts: Sequence[str],
        ids: Sequence[str] | None = None,
        *,
        batch_size: int = 64,
        progress: bool = False,
        cache: bool = False,
    ) -> EmbeddingTable:
        """Embed ``texts`` into an :class:`EmbeddingTable` (ids default to ``0..n-1``).

        With ``cache=True`` the vectors go through
        :func:`normscope.encoders.cache.encode_cached` (read and fill the on-disk cache).

        Raises
        ------
        InputError
            Empty or whitespace-only items (their 0-based indices are named), as
            ``normscope embed`` rejects them in files; or ``ids`` of another length.
        """
        from normscope.inputs import check_items

        texts = check_items(texts)
        ids = _item_ids(ids, len(texts))
        if cache:
            from normscope.encoders.cache import encode_cached

            vecs = encode_cached(self, texts, batch_size=batch_size, progress=progress)
        else:
            vecs = self.encode(texts, batch_size=batch_size, progress=progress)
        return EmbeddingTable(ids=ids, texts=texts, vectors=vecs, fingerprint=self.fingerprint)


def _item_ids(ids: Sequence[str] | None, n: int) -> list[str]:
    """``ids`` as strings (default ``"0".."n-1"``); :class:`InputError` if their number is not ``n``."""
    from normscope.errors import InputError

    if ids is None:
        return [str(i) for i in range(n)]
    ids = [str(i) for i in ids]
    if len(ids) != n:
        raise InputError(f"got {len(ids)} ids for {n} texts")
    return ids


class TorchEncoder(Encoder):
    """An encoder backed by a differentiable ``torch.nn.Module``.

    Attributes
    ----------
    module : torch.nn.Module
        Maps the output of :meth:`tokenize` to raw embeddings via :meth:`forward`.
    device : str
    max_seq_length : int or None
        Inputs longer than this (in tokens) are truncated.
    """

    module: Any
    device: str
    max_seq_length: int | None = None

    @abc.abstractmethod
    def tokenize(self, texts: Sequence[str]) -> dict:
        """Tokenise ``texts`` into a dict of tensors on :attr:`device` (truncating to max length)."""

    @abc.abstractmethod
    def forward(self, features: dict):
        """Differentiable raw embeddings, a ``torch.Tensor`` of shape (n, d), from tokenised features."""

    def count_truncated(self, texts: Sequence[str]) -> int:
        """Number of ``texts`` longer than :attr:`max_seq_length` tokens (0 if unknown)."""
        return 0


@contextlib.contextmanager
def progress_bar(show: bool, n_batches: int, *, note: str = ""):
    """A rich progress bar on stderr counting batches; yields ``advance()`` (a no-op when hidden)."""
    if not show:
        yield lambda: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    with Progress(
        TextColumn("[bold]embedding[/]"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("batches"),
        TimeRemainingColumn(),
        TextColumn(note),
        console=Console(stderr=True),
    ) as prog:
        task = prog.add_task("embed", total=n_batches)
        yield lambda: prog.advance(task, 1)
