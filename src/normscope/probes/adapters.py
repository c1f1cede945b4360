"""Encoder adapters for the probes: what the estimators need from a differentiable encoder.

:class:`TextEncoderAdapter` wraps a :class:`~normscope.encoders.base.TorchEncoder` (texts);
:class:`ModuleAdapter` wraps plain ``torch.nn.Module`` towers mapping tensors to ``(n, d)``.
"""

from __future__ import annotations

import abc
import copy
from collections.abc import Sequence
from typing import Any

import numpy as np

from normscope.encoders.base import TorchEncoder
from normscope.encoders.glove import is_static_encoder, static_refusal
from normscope.errors import ModelError

__all__ = ["ProbeAdapter", "TextEncoderAdapter", "ModuleAdapter", "as_adapter"]


class ProbeAdapter(abc.ABC):
    """What the probe needs from an encoder: the one adapter interface (subclass it for your own model).

    Subclasses set :attr:`name` and :attr:`dtype` and implement the four abstract methods;
    :func:`as_adapter` accepts an instance of a subclass as it is and refuses anything else that is
    not a known encoder type.

    Attributes
    ----------
    name : str
        Model name for the summary.
    dtype : torch.dtype
        Precision of the model's parameters (``probe_moments`` differences in it, or in a float64
        copy from :meth:`with_dtype`).
    fingerprint : ModelFingerprint or None
        Identity of the checkpoint (training values are looked up by it); None when unknown.
    max_seq_length : int or None
        Inputs longer than this many tokens are truncated (None: no limit known).
    attn_switched : list of str
        Attention implementations switched for forward-mode AD (reported).
    """

    name: str = "model"
    dtype: Any = None
    fingerprint: Any = None
    max_seq_length: int | None = None
    attn_switched: tuple = ()

    @abc.abstractmethod
    def parameters(self) -> dict:
        """The trainable parameters theta, ``{name: torch.Tensor}``, detached."""

    @abc.abstractmethod
    def features(self, data, idx, side: str) -> Any:
        """Model input for rows ``idx`` of ``data`` (a list of texts or a tensor) on ``side``.

        ``side`` is ``"query"`` (the tower of probe items and left pair members) or ``"doc"``
        (right members).
        """

    @abc.abstractmethod
    def embed(self, params: dict, feats, side: str):
        """Raw embeddings, a ``torch.Tensor`` of shape (n, d), differentiable in ``params``.

        ``params`` is a full parameter dict with the keys of :meth:`parameters` (used through
        ``torch.func.functional_call``).
        """

    @abc.abstractmethod
    def with_dtype(self, dtype) -> ProbeAdapter:
        """An independent copy computing in ``dtype`` (for float64 finite differences)."""

    @property
    def hf_tokenizer(self) -> Any:
        """The Hugging Face tokenizer of a text model (for the junk rule), or None."""
        return None

    def token_counts(self, texts: Sequence[str]):
        """``(seen, raw)`` token counts per text (see :meth:`normscope.encoders.base.Encoder.token_counts`), or None."""
        return None

    def lengths(self, texts: Sequence[str]) -> list[int]:
        """Cost of each item for chunking (tokens after truncation; default characters / 4)."""
        return [max(1, len(str(t)) // 4) for t in texts]

    def close(self) -> None:  # noqa: B027 (an optional hook with a default, not an abstract method)
        """Undo what the adapter changed on the wrapped model (default: nothing)."""


class _ForwardWrapper:
    """Builds an ``nn.Module`` whose forward is ``encoder.forward`` (for functional_call)."""

    @staticmethod
    def make(encoder):
        import torch

        class _Wrap(torch.nn.Module):
            def __init__(self, inner, fwd):
                super().__init__()
                self.inner = inner
                self._fwd = fwd

            def forward(self, feats):
                return self._fwd(feats)

        return _Wrap


def _set_eager_attention(module) -> list[tuple[Any, str]]:
    """Switch every Hugging Face sub-model of ``module`` to eager attention; return the old settings.

    Forward-mode AD has no rule for the fused scaled-dot-product attention kernels on CPU
    (docs/theory.md section 9), so JVPs need ``attn_implementation='eager'``.
    """
    changed = []
    for sub in module.modules():
        cfg = getattr(sub, "config", None)
        impl = getattr(cfg, "_attn_implementation", None) if cfg is not None else None
        if impl is not None and impl != "eager" and hasattr(sub, "get_input_embeddings"):
            if hasattr(sub, "set_attn_implementation"):
                sub.set_attn_implementation("eager")
            else:  # older transformers
                cfg._attn_implementation = "eager"
            changed.append((sub, impl))
    return changed


def _restore_attention(changed) -> None:
    for sub, impl in changed:
        if hasattr(sub, "set_attn_implementation"):
            sub.set_attn_implementation(impl)
        else:
            sub.config._attn_implementation = impl


class TextEncoderAdapter(ProbeAdapter):
    """:class:`ProbeAdapter` over a foundation :class:`~normscope.encoders.base.TorchEncoder`.

    Both sides of a pair go through the same (shared) encoder, as in sentence-transformers
    training. Hugging Face attention is switched to the eager implementation for the lifetime of
    the adapter (call :meth:`close` to restore it); dropout is off (``eval()``).

    Parameters
    ----------
    encoder : TorchEncoder
        Has ``.module``, ``.tokenize(texts)``, ``.forward(features)``.
    """

    def __init__(self, encoder, *, _module=None, _changed=None):
        import torch

        self.encoder = encoder
        self.fingerprint = getattr(encoder, "fingerprint", None)
        self.name = getattr(self.fingerprint, "name", type(encoder).__name__)
        module = encoder.module if _module is None else _module
        module.eval()
        self._changed = _set_eager_attention(module) if _changed is None else _changed
        self.attn_switched = [f"{type(s).__name__}: {old} -> eager" for s, old in self._changed]
        if _module is None:
            fwd = encoder.forward
        else:  # a copied module: call it the way the encoder does
            fwd = _copied_forward(encoder, module)
        self._wrap = _ForwardWrapper.make(encoder)(module, fwd)
        self._module = module
        self.dtype = next(iter(module.parameters())).dtype if any(True for _ in module.parameters()) else torch.float32
        self.max_seq_length = getattr(encoder, "max_seq_length", None)

    def parameters(self) -> dict:
        return {f"inner.{k}": v.detach() for k, v in self._module.named_parameters() if v.requires_grad}

    def features(self, data, idx, side: str):
        return self.encoder.tokenize([str(data[int(i)]) for i in idx])

    def embed(self, params: dict, feats, side: str):
        from torch.func import functional_call

        return functional_call(self._wrap, params, (dict(feats),), strict=False)

    def with_dtype(self, dtype) -> TextEncoderAdapter:
        mod = copy.deepcopy(self._module).to(dtype)
        mod.eval()
        return TextEncoderAdapter(self.encoder, _module=mod, _changed=[])

    @property
    def hf_tokenizer(self):
        return getattr(self.encoder, "hf_tokenizer", None)

    def token_counts(self, texts: Sequence[str]):
        """``(seen, raw)`` token counts of the encoder (:meth:`~normscope.encoders.base.Encoder.token_counts`)."""
        return self.encoder.token_counts(texts) if self.hf_tokenizer is not None else None

    def lengths(self, texts: Sequence[str]) -> list[int]:
        """Tokens after truncation (the chunking cost), or characters / 4 without a tokenizer."""
        counts = self.token_counts(texts)
        return [int(x) for x in counts[0]] if counts is not None else super().lengths(texts)

    def close(self) -> None:
        """Restore the attention implementation that was in place before."""
        _restore_attention(self._changed)
        self._changed = []


def _copied_forward(encoder, module):
    """``encoder.forward`` re-targeted to a copied ``module``: a shallow copy of the encoder whose attributes
    holding the original module (``module``, and ``model`` where it is the same object) point at the copy,
    so each backend keeps its own forward (sentence-transformers dict in/out, Hugging Face ``**features``
    and pooling, open_clip ``encode_text``, CLIP towers)."""
    twin = copy.copy(encoder)
    original = encoder.module
    for attr, value in list(vars(encoder).items()):
        if value is original:
            setattr(twin, attr, module)
    return twin.forward


class ModuleAdapter(ProbeAdapter):
    """:class:`ProbeAdapter` over plain ``torch.nn.Module`` towers mapping tensors to (n, d).

    Parameters
    ----------
    query : torch.nn.Module
        Tower for probe items and the left members of pairs.
    doc : torch.nn.Module, optional
        Tower for the right members of pairs (a two-tower model); default: ``query`` (shared).
    name : str, keyword-only
    """

    def __init__(self, query, doc=None, *, name: str = "module"):
        import torch

        self.name = name
        self.shared = doc is None or doc is query
        towers = {"query": query} if self.shared else {"query": query, "doc": doc}
        self._towers = torch.nn.ModuleDict(towers)
        self._towers.eval()
        ps = list(self._towers.parameters())
        self.dtype = ps[0].dtype if ps else torch.float32
        self.attn_switched: list[str] = []
        self.max_seq_length = None

    def parameters(self) -> dict:
        return {k: v.detach() for k, v in self._towers.named_parameters() if v.requires_grad}

    def features(self, data, idx, side: str):
        import torch

        x = data[torch.as_tensor(np.asarray(idx), dtype=torch.long)] if not isinstance(data, np.ndarray) else data[np.asarray(idx)]
        x = torch.as_tensor(x)
        return x.to(self.dtype) if x.is_floating_point() else x

    def embed(self, params: dict, feats, side: str):
        from torch.func import functional_call

        tower = "query" if (self.shared or side == "query") else "doc"
        sub = {k[len(tower) + 1 :]: v for k, v in params.items() if k.startswith(tower + ".")}
        if feats.is_floating_point() and feats.dtype != self.dtype:
            feats = feats.to(self.dtype)
        return functional_call(self._towers[tower], sub, (feats,), strict=False)

    def with_dtype(self, dtype) -> ModuleAdapter:
        q = copy.deepcopy(self._towers["query"]).to(dtype)
        d = None if self.shared else copy.deepcopy(self._towers["doc"]).to(dtype)
        return ModuleAdapter(q, d, name=self.name)


def as_adapter(encoder) -> ProbeAdapter:
    """Wrap ``encoder`` as a :class:`ProbeAdapter`.

    Parameters
    ----------
    encoder : TorchEncoder, torch.nn.Module, tuple (query_module, doc_module) or ProbeAdapter
        A :class:`ProbeAdapter` subclass instance is returned as it is, after checking that its
        ``dtype`` is a floating ``torch.dtype``.

    Returns
    -------
    ProbeAdapter

    Raises
    ------
    ModelError
        If ``encoder`` is not differentiable (e.g. a precomputed-vector encoder, or GloVe's static vectors:
        :data:`normscope.encoders.glove.STATIC_REFUSAL`), or is an
        adapter without a floating ``dtype``.
    """
    import torch

    if is_static_encoder(encoder):
        raise static_refusal(encoder)
    if isinstance(encoder, ProbeAdapter):
        adapter = encoder
    elif isinstance(encoder, TorchEncoder):
        adapter = TextEncoderAdapter(encoder)
    elif isinstance(encoder, torch.nn.Module):
        adapter = ModuleAdapter(encoder, name=type(encoder).__name__)
    elif isinstance(encoder, tuple) and len(encoder) == 2 and all(isinstance(m, torch.nn.Module) for m in encoder):
        adapter = ModuleAdapter(encoder[0], encoder[1], name="two-tower")
    else:
        raise ModelError(
            f"cannot probe {type(encoder).__name__}: the probe needs a differentiable torch encoder "
            "(TorchEncoder, nn.Module, a (query, doc) pair of nn.Modules, or a subclass of "
            "normscope.probes.ProbeAdapter)"
        )
    if not (isinstance(adapter.dtype, torch.dtype) and adapter.dtype.is_floating_point):
        raise ModelError(f"probe adapter {type(adapter).__name__} must set dtype to a floating torch.dtype, "
                         f"got {adapter.dtype!r}")
    return adapter
