"""Adapter for sentence-transformers models returning the raw pooled vector.

A trailing ``Normalize`` module is dropped (and recorded in the fingerprint's
``dropped_modules``) so ``encode`` returns the pooled, un-normalised vector whose
norm ||z|| normscope studies. The model's own pooling is kept.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from normscope.encoders._hub import resolve
from normscope._progress import progress_bar
from normscope.encoders.base import TorchEncoder
from normscope.encoders.bundled import DEFAULT_MODEL, bundle_hint, bundle_revision, bundled_model_path, is_bundled_name
from normscope.errors import ModelError
from normscope.table import ModelFingerprint, file_sha256

__all__ = ["SentenceTransformerEncoder", "weight_files", "config_files", "config_hash"]

#: Files that set how a text becomes a vector besides the weights: the model's and the pipeline's
#: configuration and every tokenizer file (at the directory root and in module folders such as
#: ``1_Pooling/``). They are hashed into the fingerprint's ``config`` (hence the cache key).
CONFIG_NAMES = ("config.json", "sentence_bert_config.json", "modules.json", "config_sentence_transformers.json",
                "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "added_tokens.json",
                "vocab.txt", "vocab.json", "merges.txt", "spiece.model", "sentencepiece.bpe.model",
                "tokenizer.model", "preprocessor_config.json")

def _load_st(name: str, device: str, trust_remote_code: bool):
    """Load a SentenceTransformer by bundled alias, local directory or hub id (offline first)."""
    from sentence_transformers import SentenceTransformer

    _quiet_transformers()
    bundled = bundled_model_path(name, missing_ok=True) if is_bundled_name(name) else None
    if bundled is not None:  # an optional bundle not installed falls through to the hub
        path = str(bundled)
        return SentenceTransformer(path, device=device, local_files_only=True), path
    if Path(name).exists() and not (Path(name) / "modules.json").is_file() and not (Path(name) / "config.json").is_file():
        raise ModelError(f"'{name}' is a path but not a sentence-transformers model directory")
    try:
        model = resolve(
            name,
            lambda local_files_only: SentenceTransformer(
                name, device=device, trust_remote_code=trust_remote_code, local_files_only=local_files_only
            ),
        )
    except ModelError as exc:  # e.g. all-mpnet-base-v2 without its extra: name the extra
        raise ModelError(f"{exc}{bundle_hint(name)}") from None
    return model, name


def _quiet_transformers() -> None:
    """Silence transformers' per-load "Loading weights" progress bars (normscope shows its own)."""
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
    except Exception:  # older/newer transformers without the switch: cosmetic only
        pass


_WEIGHT_NAMES = ("model.safetensors", "pytorch_model.bin")


def weight_files(path: str | Path) -> list[Path]:
    """Weight files of a local model directory: at its root and one level down (``2_Dense/``...), sorted.

    A sentence-transformers directory keeps the transformer's weights at the root (or in
    ``0_Transformer/``) and those of later modules (Dense, projection) in their own folders; all
    of them determine the vectors.
    """
    p = Path(path)
    found = [p / n for n in _WEIGHT_NAMES if (p / n).is_file()][:1]
    for sub in sorted(q for q in p.iterdir() if q.is_dir()) if p.is_dir() else []:
        found += [sub / n for n in _WEIGHT_NAMES if (sub / n).is_file()][:1]
    return found


def config_files(path: str | Path) -> list[Path]:
    """The :data:`CONFIG_NAMES` files of a local model directory, at its root and one level down, sorted."""
    p = Path(path)
    if not p.is_dir():
        return []
    found = [p / n for n in CONFIG_NAMES if (p / n).is_file()]
    for sub in sorted(q for q in p.iterdir() if q.is_dir()):
        found += [sub / n for n in CONFIG_NAMES if (sub / n).is_file()]
    return found


def config_hash(path: str | Path | None, max_seq_length: int | None) -> str:
    """``sha256:<16 hex>`` of a model's configuration and tokenizer files and its effective ``max_seq_length``.

    With the weights hash (the fingerprint's ``revision``) it fixes what a text's vector is: a changed
    ``max_seq_length`` (in ``sentence_bert_config.json`` or set on the model), tokenizer or pooling
    configuration gives another hash, hence another cache namespace. For a hub model (no local
    directory) the revision pins the files and only ``max_seq_length`` is hashed.

    Parameters
    ----------
    path : str, Path or None
        The local model directory (None or a hub id: no files).
    max_seq_length : int or None
        Tokens kept per text (truncation), as the loaded model uses it.
    """
    h = hashlib.sha256(f"max_seq_length={max_seq_length}\n".encode())
    root = Path(path) if path is not None else None
    for f in config_files(root) if root is not None else []:
        st = f.stat()
        h.update(f"{f.relative_to(root).as_posix()} {_file_hash_memo(str(f), st.st_size, st.st_mtime_ns)}\n".encode())
    return "sha256:" + h.hexdigest()[:16]


def _weights_hash(path: str) -> str:
    """``sha256:<16 hex>`` of the model's weights (:func:`weight_files`), or ``"unknown"`` without any.

    One file: its own hash (as before sub-folders were hashed, so existing cache keys stay valid);
    several: the hash of their relative paths and hashes.
    """
    files = weight_files(path)
    if not files:
        return "unknown"
    hashes = []
    for f in files:
        st = f.stat()
        hashes.append(_file_hash_memo(str(f), st.st_size, st.st_mtime_ns))
    if len(files) == 1:
        return hashes[0]
    blob = "\n".join(f"{f.relative_to(path)} {h}" for f, h in zip(files, hashes)).encode()
    return "sha256:" + hashlib.sha256(blob).hexdigest()[:16]


@functools.lru_cache(maxsize=32)
def _file_hash_memo(path: str, size: int, mtime_ns: int) -> str:
    """``sha256:<16 hex>`` of a weights or configuration file, memoised on (path, size, mtime)."""
    return "sha256:" + file_sha256(path)[:16]


class SentenceTransformerEncoder(TorchEncoder):
    """Raw-vector encoder for a sentence-transformers model.

    Parameters
    ----------
    name : str
        Bundled alias (``sentence-transformers/all-MiniLM-L6-v2``), a local model
        directory, or a hub id (network needed unless cached).
    device : str, keyword-only
        Torch device, default ``"cpu"``.
    trust_remote_code : bool, keyword-only
        Passed to sentence-transformers; off unless the user asks.

    Raises
    ------
    ModelError
        Unknown name, hub unreachable for an uncached model, or a malformed directory.
    """

    def __init__(self, name: str = DEFAULT_MODEL, *, device: str = "cpu", trust_remote_code: bool = False):
        model, path = _load_st(name, device, trust_remote_code)
        dropped: list[str] = []
        while len(model) > 1 and type(model[len(model) - 1]).__name__ == "Normalize":
            del model[len(model) - 1]
            dropped.append("Normalize")
        model.eval()
        self.model = model
        self.module = model
        self.device = device
        self.max_seq_length = getattr(model, "max_seq_length", None)
        pooling = "unknown"
        for mod in model:
            if type(mod).__name__ == "Pooling":
                cfg = mod.get_config_dict() if hasattr(mod, "get_config_dict") else {}
                pooling = str(cfg.get("pooling_mode") or _pooling_from_flags(cfg))
        local = Path(path).exists()
        # a converted bundle (MiniLM-L3 from ONNX) is fingerprinted by its source file's pinned hash
        revision = ((is_bundled_name(name) and local and bundle_revision(name))
                    or (_weights_hash(path) if local else _hub_revision(model)))
        self.fingerprint = ModelFingerprint(
            name=name,
            revision=revision,
            pooling=pooling,
            dropped_modules=tuple(dropped),
            backend="sentence-transformers",
            config=config_hash(path if local else None, self.max_seq_length),
        )

    @property
    def dim(self) -> int:
        get = getattr(self.model, "get_embedding_dimension", None) or self.model.get_sentence_embedding_dimension
        return int(get())

    def encode(self, texts: Sequence[str], *, batch_size: int = 64, progress: bool = False) -> np.ndarray:
        """Raw pooled vectors, ndarray of shape (n, d), float32 (see :meth:`Encoder.encode`).

        Same features as ``SentenceTransformer.encode`` (the model's own
        ``preprocess``), without the dropped ``Normalize``. Items are batched in
        order of decreasing *token* count (sentence-transformers sorts by
        character count), so each batch pads to a tight length; each text is
        tokenized once (:meth:`batches`). The forward pass runs under
        :meth:`~normscope.encoders.base.TorchEncoder.inference`: ``torch.inference_mode``, for
        ``precision="bf16"`` ``torch.autocast`` (vectors returned as float32), and in fp32 the
        oneDNN matrix products of :attr:`~normscope.encoders.base.TorchEncoder.linear_kernel`.
        """

        texts = [str(t) for t in texts]
        n = len(texts)
        out = np.empty((n, self.dim), dtype=np.float32)
        if n == 0:
            return out
        n_batches = -(-n // batch_size)
        with self.inference(), progress_bar(progress and n_batches > 1, n_batches) as advance:
            for idx, feats in self.batches(texts, batch_size):
                feats = {k: (v.to(self.device) if hasattr(v, "to") else v) for k, v in feats.items()}
                out[idx] = self.model(feats)["sentence_embedding"].float().cpu().numpy()
                advance()
        return out

    def batches(self, texts: Sequence[str], batch_size: int = 64, *, tokenize_once: bool | None = None):
        """The batches :meth:`encode` runs: ``(idx, features)`` pairs, longest texts (in tokens) first.

        ``idx`` (ndarray of shape (b,), int64) are positions in ``texts``, in decreasing order of
        token count (stable); ``features`` is the dict the model's ``preprocess`` returns for
        ``[texts[i] for i in idx]`` (CPU tensors of shape (b, L), L the longest of the batch).

        With ``tokenize_once`` (default: where :meth:`tokenize_once_supported`), every text is
        tokenized once, by the model's own ``preprocess`` with padding switched off (its
        per-call ``processing_kwargs``), the order taken from those token counts and each
        batch padded by the tokenizer's ``pad``: the same tensors as ``preprocess`` of the batch.
        Otherwise (``tokenize_once=False``, or a model where the check fails) the texts are
        tokenized once to sort and again per batch by ``preprocess``, as before issue 28.

        Parameters
        ----------
        texts : sequence of str, length n
        batch_size : int
            Texts per batch (>= 1).
        tokenize_once : bool or None, keyword-only
            None: :meth:`tokenize_once_supported`; False: the two-tokenization path.

        Yields
        ------
        idx : ndarray of shape (b,), int64
        features : dict of str to torch.Tensor (and ``"modality"``: str in sentence-transformers >= 6)
        """
        texts = [str(t) for t in texts]
        if not texts:
            return
        if tokenize_once is None:
            tokenize_once = self.tokenize_once_supported()
        if tokenize_once:
            enc = self._tokenize_unpadded(texts)
            order = np.argsort(-np.array([len(x) for x in enc["input_ids"]]), kind="stable")
            for s in range(0, len(texts), batch_size):
                idx = order[s : s + batch_size]
                yield idx, self._pad(enc, idx)
            return
        order = np.argsort(-self._token_lengths(texts), kind="stable")
        preprocess = getattr(self.model, "preprocess", None) or self.model.tokenize
        for s in range(0, len(texts), batch_size):
            idx = order[s : s + batch_size]
            yield idx, preprocess([texts[i] for i in idx])

    #: Per-call ``processing_kwargs`` of sentence-transformers' ``Transformer.preprocess`` that keep
    #: its tokenization (truncation, lower-casing, special tokens) and switch off padding and tensors.
    _UNPADDED = {"common": {"return_tensors": None}, "text": {"padding": False}}
    #: Keys the tokenizer's ``pad`` pads; any other key in the unpadded features disables the path.
    _PADDED_KEYS = frozenset({"input_ids", "attention_mask", "token_type_ids"})

    def _tokenize_unpadded(self, texts: list[str]) -> dict:
        """``preprocess(texts)`` without padding: ``{key: list of n lists of int}`` plus ``"modality"``."""
        feats = self.model.preprocess(texts, processing_kwargs=self._UNPADDED)
        return dict(feats)

    def _pad(self, enc: dict, idx: np.ndarray) -> dict:
        """The padded features (torch tensors) of rows ``idx`` of :meth:`_tokenize_unpadded` output."""
        rows = {k: [v[i] for i in idx] for k, v in enc.items() if k in self._PADDED_KEYS}
        out = dict(self.model.tokenizer.pad(rows, padding=True, return_tensors="pt"))
        out.update({k: v for k, v in enc.items() if k not in self._PADDED_KEYS})
        return out

    #: Texts :meth:`tokenize_once_supported` checks: mixed lengths, one over 256 word pieces, leading and
    #: trailing spaces, mixed case, an empty and an all-space text, characters outside ASCII.
    _CHECK_TEXTS = ("  Leading and trailing spaces  ", "a", "", "   ", "Mixed CASE Words and ÜNICODE naïve café ✓",
                    " ".join(["Heat shock proteins chaperone misfolded polypeptides in stressed cells."] * 40),
                    "The cell membrane regulates what enters and leaves the cell.", "\tTab\nnewline ")

    def tokenize_once_supported(self) -> bool:
        """Whether :meth:`batches` can tokenize each text once for this model (checked once, then memoised).

        True when the model's ``preprocess`` takes per-call ``processing_kwargs``
        (sentence-transformers >= 6), returns only ``input_ids``/``attention_mask``/``token_type_ids``
        lists and a ``"modality"`` of ``"text"`` with padding off, and padding those with the tokenizer's
        ``pad`` gives exactly (keys, dtypes, values) what ``preprocess`` gives on :data:`_CHECK_TEXTS` in
        every batch of 3. Otherwise False (older sentence-transformers, image or multi-modal models,
        configured ``processing_kwargs`` that pad to a fixed length, ...): the two-tokenization path.
        """
        cached = getattr(self, "_tokenize_once", None)
        if cached is None:
            cached = self._tokenize_once = self._check_tokenize_once()
        return cached

    def _check_tokenize_once(self) -> bool:
        import torch

        preprocess = getattr(self.model, "preprocess", None)
        tok = getattr(self.model, "tokenizer", None)
        if preprocess is None or tok is None or not callable(getattr(tok, "pad", None)):
            return False
        texts = list(self._CHECK_TEXTS)
        try:
            enc = self._tokenize_unpadded(texts)
            if not ({"input_ids"} <= set(enc) and set(enc) <= self._PADDED_KEYS | {"modality"}):
                return False
            if enc.get("modality", "text") != "text" or any(not isinstance(enc[k], list) for k in set(enc) & self._PADDED_KEYS):
                return False
            for s in range(0, len(texts), 3):
                idx = np.arange(s, min(s + 3, len(texts)))
                ours, ref = self._pad(enc, idx), preprocess([texts[i] for i in idx])
                if set(ours) != set(ref):
                    return False
                for k, v in ref.items():
                    w = ours[k]
                    if isinstance(v, torch.Tensor):
                        if not (isinstance(w, torch.Tensor) and w.dtype == v.dtype and w.shape == v.shape and torch.equal(w, v)):
                            return False
                    elif w != v:
                        return False
        except Exception:  # any failure of the unpadded call (older preprocess, other processors): the old path
            return False
        return True

    def _token_lengths(self, texts: list[str]) -> np.ndarray:
        """Token counts (truncated at ``max_seq_length``) used to sort; character counts if no tokenizer."""
        tok = getattr(self.model, "tokenizer", None)
        if tok is None or not callable(tok):
            return np.array([len(t) for t in texts])
        ids = tok(texts, add_special_tokens=True, truncation=True, max_length=self.max_seq_length or None)["input_ids"]
        return np.array([len(x) for x in ids])

    def tokenize(self, texts: Sequence[str]) -> dict:
        """Model features of ``texts`` on :attr:`device`: the model's ``preprocess`` (sentence-transformers
        >= 6), else its ``tokenize`` (older versions; ``tokenize`` is deprecated in newer ones)."""
        preprocess = getattr(self.model, "preprocess", None) or self.model.tokenize
        feats = preprocess([str(t) for t in texts])
        return {k: (v.to(self.device) if hasattr(v, "to") else v) for k, v in feats.items()}

    def forward(self, features: dict):
        return self.model(dict(features))["sentence_embedding"]

    @property
    def hf_tokenizer(self):
        tok = getattr(self.model, "tokenizer", None)
        return tok if callable(tok) else None


def _pooling_from_flags(cfg: dict) -> str:
    modes = [k.removeprefix("pooling_mode_").removesuffix("_tokens") for k, v in cfg.items() if k.startswith("pooling_mode_") and v]
    return "+".join(modes) or "unknown"


def _hub_revision(model) -> str:
    card = getattr(model, "model_card_data", None)
    rev = getattr(card, "base_model_revision", None) if card is not None else None
    return str(rev) if rev else "hub"
