"""The :class:`Encoder` protocol: one ``encode`` returning raw vectors.

Adapters (sentence-transformers, Hugging Face AutoModel, open_clip, precomputed)
subclass :class:`Encoder`. Torch-backed adapters also subclass
:class:`TorchEncoder`, which exposes the differentiable module that the probes
(:mod:`normscope.probes`) need.
"""

from __future__ import annotations

import abc
import contextlib
import copy
import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

from normscope._progress import progress_bar
from normscope.encoders.kernels import linear_kernel_context
from normscope.errors import InputError
from normscope.table import PRECISIONS, ModelFingerprint
from normscope.validate import check_choice

__all__ = ["Encoder", "TorchEncoder"]


class Encoder(abc.ABC):
    """Maps inputs to raw, un-normalised float32 vectors.

    Subclasses set :attr:`fingerprint` and implement :meth:`encode`.
    """

    fingerprint: ModelFingerprint
    #: Inputs longer than this many tokens are truncated by the model (None: no limit known).
    max_seq_length: int | None = None
    #: Precision of the forward pass in :meth:`encode` (``"fp32"`` or ``"bf16"``); see :meth:`at_precision`.
    precision: str = "fp32"

    def at_precision(self, precision: str) -> "Encoder":
        """This encoder with its forward pass at ``precision`` (only ``"fp32"`` without torch).

        Raises
        ------
        InputError
            An unknown precision, or a reduced precision for an encoder that runs no model
            (precomputed vectors are used as stored).
        """
        check_choice("precision", precision, PRECISIONS)
        if precision != self.precision:
            raise InputError(f"precision {precision!r} applies to models; {self.fingerprint.name} runs no model "
                             "(its vectors are used as stored): use fp32")
        return self

    @property
    def hf_tokenizer(self) -> Any:
        """The model's Hugging Face tokenizer, or None (precomputed vectors, open_clip's own tokenizer).

        Used to count the tokens the model sees (:meth:`token_counts`) and to detect items that
        tokenize to nothing but special and unknown tokens (:func:`normscope.inputs.find_junk`).
        """
        return None

    def token_counts(self, texts: Sequence[str], *, token_ids=None) -> tuple[np.ndarray, np.ndarray]:
        """Tokens of each text before and after the model's truncation (special tokens included).

        Parameters
        ----------
        texts : sequence of str, length n
        token_ids : sequence of n sequences of int, optional, keyword-only
            The texts' ``input_ids`` from :attr:`hf_tokenizer` with special tokens and truncation off
            (:meth:`token_ids`), when already computed: counted instead of tokenizing again.

        Returns
        -------
        seen : ndarray of shape (n,), int64
            Tokens the model sees: ``min(raw, max_seq_length)``.
        raw : ndarray of shape (n,), int64
            Tokens of the whole text; ``raw > seen`` marks a truncated item.
            Without a Hugging Face tokenizer both are whitespace word counts (no truncation known).

        Raises
        ------
        InputError
            ``token_ids`` of another length than ``texts``.
        """
        texts = [str(t) for t in texts]
        tok = self.hf_tokenizer
        if tok is None or not callable(tok):
            raw = np.array([len(t.split()) for t in texts], dtype=np.int64)
            return raw.copy(), raw
        ids = self.token_ids(texts) if token_ids is None else token_ids
        if len(ids) != len(texts):
            raise InputError(f"token_ids has {len(ids)} entries for {len(texts)} texts")
        raw = np.array([len(x) for x in ids], dtype=np.int64)
        seen = np.minimum(raw, self.max_seq_length) if self.max_seq_length else raw.copy()
        return seen, raw

    def token_ids(self, texts: Sequence[str]) -> list:
        """``input_ids`` of each text from :attr:`hf_tokenizer`, special tokens added, truncation off.

        The one tokenization :meth:`token_counts` counts and
        :func:`normscope.inputs.find_junk` can reuse (its ``token_ids``).

        Returns
        -------
        list of n lists of int (empty without a Hugging Face tokenizer or without texts)
        """
        tok = self.hf_tokenizer
        texts = [str(t) for t in texts]
        if tok is None or not callable(tok) or not texts:
            return []
        # verbose=False: no "Token indices sequence length is longer than ..." warning per long text
        return list(tok(texts, add_special_tokens=True, truncation=False, verbose=False)["input_ids"])

    def count_truncated(self, texts: Sequence[str]) -> int:
        """Number of ``texts`` longer than :attr:`max_seq_length` tokens (0 when unknown)."""
        seen, raw = self.token_counts(texts)
        return int(np.sum(raw > seen))

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


class TorchEncoder(Encoder):
    """An encoder backed by a differentiable ``torch.nn.Module``.

    Attributes
    ----------
    module : torch.nn.Module
        Maps the output of :meth:`tokenize` to raw embeddings via :meth:`forward`.
    device : str
    max_seq_length : int or None
        Inputs longer than this (in tokens) are truncated.
    precision : {"fp32", "bf16"}
        Precision of :meth:`encode`'s forward pass. ``bf16`` runs it under
        ``torch.autocast(device_type, dtype=torch.bfloat16)`` (matrix products in bfloat16 with
        float32 accumulation; the weights stay float32) and returns float32 vectors.
        :meth:`forward` itself is never autocast: code that differentiates it (the probes) stays in
        float32/float64 unless it enters :meth:`autocast` itself where that is safe.
    linear_kernel : {"onednn", "aten"}
        Kernel of the float32 matrix products in :meth:`encode` on CPU (:meth:`inference`):
        ``"onednn"`` (default) routes ``F.linear`` to oneDNN
        (:class:`normscope.encoders.kernels.OneDNNLinear`, about 2x MKL on CPUs where MKL does not
        use AVX-512; same products up to float32 summation order); ``"aten"`` keeps PyTorch's
        default (MKL), the kernels sentence-transformers runs. Not part of the fingerprint: the two
        agree to about 1e-6 relative. Set it on the instance (``enc.linear_kernel = "aten"``).
    """

    module: Any
    device: str
    linear_kernel: str = "onednn"

    def at_precision(self, precision: str) -> "TorchEncoder":
        """A twin of this encoder whose :meth:`encode` runs at ``precision``, sharing the same module.

        The twin shares the weights (no second copy in memory) and differs only in
        :attr:`precision` and in its fingerprint's ``precision`` (hence its cache key). Twins are
        memoised per encoder, so ``enc.at_precision("bf16").at_precision("fp32") is enc``.

        Raises
        ------
        InputError
            Unknown precision, or bf16 autocast not available on this device.
        """
        check_choice("precision", precision, PRECISIONS)
        if precision == self.precision:
            return self
        twins = self.__dict__.setdefault("_twins", {self.precision: self})
        if precision not in twins:
            twin = copy.copy(self)
            twin.precision = precision
            twin.fingerprint = dataclasses.replace(self.fingerprint, precision=precision)
            if getattr(self, "image_fingerprint", None) is not None:  # image towers: their own cache namespace
                twin.image_fingerprint = dataclasses.replace(self.image_fingerprint, precision=precision)
            try:
                with twin.autocast():
                    pass
            except (RuntimeError, ValueError) as exc:
                raise InputError(f"precision {precision} is not available on device {self.device}: "
                                 f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") from None
            twins[precision] = twin
        return twins[precision]

    def autocast(self):
        """Context manager under which forward passes run at :attr:`precision` (a no-op in fp32).

        Example: ``with torch.inference_mode(), encoder.autocast(): z = encoder.forward(feats)``.
        """
        if self.precision == "fp32":
            return contextlib.nullcontext()
        import torch

        return torch.autocast(device_type=torch.device(self.device).type, dtype=torch.bfloat16)

    def inference(self):
        """Context manager for inference-time forward passes: ``torch.inference_mode``, :meth:`autocast`
        and, in fp32, :attr:`linear_kernel`.

        Example: ``with encoder.inference(): z = encoder.forward(feats)``. The vectors are those of
        ``with torch.inference_mode(), encoder.autocast()`` up to float32 summation order.

        Raises
        ------
        InputError
            :attr:`linear_kernel` is not one of ``"onednn"``, ``"aten"``.
        """
        import torch

        with contextlib.ExitStack() as stack:  # a context that fails to enter exits those entered before it
            stack.enter_context(torch.inference_mode())
            stack.enter_context(self.autocast())
            if self.precision == "fp32":
                stack.enter_context(linear_kernel_context(self.linear_kernel))
            return stack.pop_all()

    @abc.abstractmethod
    def tokenize(self, texts: Sequence[str]) -> dict:
        """Tokenise ``texts`` into a dict of tensors on :attr:`device` (truncating to max length)."""

    @abc.abstractmethod
    def forward(self, features: dict):
        """Differentiable raw embeddings, a ``torch.Tensor`` of shape (n, d), from tokenised features."""


    def _encode_in_batches(self, inputs: Sequence, lengths, *, batch_size: int, progress: bool, prepare) -> np.ndarray:
        """Raw vectors of ``inputs``, ndarray of shape (n, :attr:`dim`), float32, rows in input order.

        Items are batched in order of decreasing ``lengths`` (stable), so each batch pads to a tight
        length; each batch is ``self.forward(prepare(batch))`` under :meth:`inference`
        (``torch.inference_mode``, the encoder's precision and linear kernel).

        Parameters
        ----------
        inputs : sequence, length n
        lengths : array-like of shape (n,)
            Sort key (e.g. token counts); equal values keep input order.
        batch_size : int, keyword-only
        progress : bool, keyword-only
            Show a rich progress bar when there is more than one batch.
        prepare : callable, keyword-only
            Maps a list of inputs to the features :meth:`forward` takes.
        """
        n = len(inputs)
        out = np.empty((n, self.dim), dtype=np.float32)
        if n == 0:
            return out
        order = np.argsort(-np.asarray(lengths), kind="stable")
        n_batches = -(-n // batch_size)
        with self.inference(), progress_bar(progress and n_batches > 1, n_batches) as advance:
            for s in range(0, n, batch_size):
                idx = order[s : s + batch_size]
                out[idx] = self.forward(prepare([inputs[i] for i in idx])).float().cpu().numpy()
                advance()
        return out
