"""Adapter for any Hugging Face ``transformers`` AutoModel with a chosen pooling.

The raw vector is the pooled last hidden state, never normalised:

- ``mean``: ``z = sum_t m_t h_t / max(sum_t m_t, 1e-9)`` over the attention mask ``m``
  (the pooling of sentence-transformers' ``Pooling(pooling_mode="mean")``,
  Reimers & Gurevych 2019);
- ``cls``: ``z = h_0``, the hidden state of the first token.

The model is loaded with ``attn_implementation="eager"`` so the forward pass is
twice differentiable (the probes of :mod:`normscope.probes` need it), and with
``trust_remote_code`` only when the caller asks.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from normscope.encoders._hub import resolve
from normscope._progress import progress_bar
from normscope.encoders.base import TorchEncoder
from normscope.encoders.bundled import bundled_model_path, is_bundled_name
from normscope.encoders.sentence_transformers import _quiet_transformers, _weights_hash, config_hash
from normscope.errors import InputError
from normscope.table import ModelFingerprint

__all__ = ["HuggingFaceEncoder", "POOLINGS"]

POOLINGS = ("mean", "cls")


def _weights_revision(path: Path) -> str:
    return _weights_hash(str(path))


class HuggingFaceEncoder(TorchEncoder):
    """Raw pooled vectors from a ``transformers.AutoModel``.

    Parameters
    ----------
    name : str
        Local model directory, hub id, or the bundled default's name (its
        transformer, a ``BertModel``, is then loaded without the
        sentence-transformers pipeline).
    pooling : {"mean", "cls"}, keyword-only
        Pooling of the last hidden state (see module docstring).
    device : str, keyword-only
    trust_remote_code : bool, keyword-only
        Let the repository run its own modelling code (off unless asked).
    max_seq_length : int, optional, keyword-only
        Truncation length in tokens; default: ``sentence_bert_config.json``'s
        ``max_seq_length`` when present, else the smaller of the tokenizer's
        ``model_max_length`` and the config's ``max_position_embeddings``.

    Raises
    ------
    InputError
        Unknown pooling.
    ModelError
        Unknown or unreachable model.
    """

    def __init__(
        self,
        name: str,
        *,
        pooling: str = "mean",
        device: str = "cpu",
        trust_remote_code: bool = False,
        max_seq_length: int | None = None,
    ):
        import torch
        from transformers import AutoModel, AutoTokenizer

        if pooling not in POOLINGS:
            raise InputError(f"unknown pooling '{pooling}' for the huggingface backend; choose one of {POOLINGS}")

        _quiet_transformers()
        bundled = bundled_model_path(name, missing_ok=True) if is_bundled_name(name) else None
        source = str(bundled) if bundled is not None else name

        def load(local_files_only: bool):
            tok = AutoTokenizer.from_pretrained(
                source, local_files_only=local_files_only, trust_remote_code=trust_remote_code
            )
            mdl = AutoModel.from_pretrained(
                source,
                local_files_only=local_files_only,
                trust_remote_code=trust_remote_code,
                attn_implementation="eager",
            )
            return tok, mdl

        self.tokenizer, model = resolve(source, load)
        model.eval()
        self.module = model.to(device)
        self.device = device
        self.pooling = pooling
        self.max_seq_length = max_seq_length or self._default_max_len(source, model)
        self._torch = torch
        revision = (
            _weights_revision(Path(source))
            if Path(source).is_dir()
            else str(getattr(model.config, "_commit_hash", None) or "hub")
        )

        self.fingerprint = ModelFingerprint(
            name=name, revision=revision, pooling=pooling, dropped_modules=(), backend="huggingface",
            config=config_hash(source if Path(source).is_dir() else None, self.max_seq_length),
        )

    def _default_max_len(self, source: str, model) -> int:
        import json

        cfg = Path(source) / "sentence_bert_config.json"
        if cfg.is_file():
            try:
                return int(json.loads(cfg.read_text())["max_seq_length"])
            except (KeyError, ValueError, TypeError):
                pass
        limits = [getattr(model.config, "max_position_embeddings", None), getattr(self.tokenizer, "model_max_length", None)]
        limits = [int(x) for x in limits if isinstance(x, int) and 0 < x < 1_000_000]
        return min(limits) if limits else 512

    @property
    def dim(self) -> int:
        return int(self.module.config.hidden_size)

    def tokenize(self, texts: Sequence[str]) -> dict:
        feats = self.tokenizer(
            [str(t) for t in texts],
            padding=True,
            truncation=True,
            max_length=self.max_seq_length,
            return_tensors="pt",
        )
        return {k: v.to(self.device) for k, v in feats.items()}

    def forward(self, features: dict):
        """Pooled raw vectors, ``torch.Tensor`` of shape (n, d), differentiable."""
        out = self.module(**features).last_hidden_state
        if self.pooling == "cls":
            return out[:, 0]
        mask = features["attention_mask"].unsqueeze(-1).to(out.dtype)
        return (out * mask).sum(1) / mask.sum(1).clamp(min=1e-9)

    def encode(self, texts: Sequence[str], *, batch_size: int = 64, progress: bool = False) -> np.ndarray:
        """Raw pooled vectors, ndarray of shape (n, d), float32; batches in decreasing token count.

        The forward pass runs at :attr:`precision` (:meth:`~normscope.encoders.base.TorchEncoder.autocast`).
        """
        texts = [str(t) for t in texts]
        n = len(texts)
        out = np.empty((n, self.dim), dtype=np.float32)
        if n == 0:
            return out
        lengths = [len(x) for x in self.tokenizer(texts, truncation=True, max_length=self.max_seq_length)["input_ids"]]
        order = np.argsort(-np.asarray(lengths), kind="stable")
        n_batches = -(-n // batch_size)
        with self.inference(), progress_bar(progress and n_batches > 1, n_batches) as advance:
            for s in range(0, n, batch_size):
                idx = order[s : s + batch_size]
                out[idx] = self.forward(self.tokenize([texts[i] for i in idx])).float().cpu().numpy()
                advance()
        return out

    @property
    def hf_tokenizer(self):
        return self.tokenizer
