"""CLIP through transformers' ``CLIPModel``: raw text and image vectors, the projections kept.

CLIP (Radford et al. 2021) maps a text and an image into one space; its training loss normalises
both vectors and scales their cosine by a learned ``exp(logit_scale)``. normscope takes the
un-normalised projected vectors, what ``CLIPModel.get_text_features`` and ``get_image_features``
return:

- text: ``z = W_t h_eos``, the final-LayerNorm hidden state of the end-of-text token
  (``text_model(...).pooler_output``) times ``text_projection`` (no bias);
- image: ``z = W_v LN(h_cls)``, the class-token state after ``post_layernorm``
  (``vision_model(...).pooler_output``) times ``visual_projection`` (no bias).

The skipped normalisation is recorded as ``dropped_modules=("normalize",)`` and the projection is
named, with its shape, in the fingerprint's ``pooling``. Each tower is a ``torch.nn.Module`` of
its own (:class:`ClipTextTower`, :class:`ClipImageTower`) holding only that tower's parameters, so
the probes differentiate through exactly the tower that made the vector.

Names: ``hf-clip:<local dir or hub id>``, e.g. ``hf-clip:openai/clip-vit-base-patch32`` (the
paper's ViT-B/32; the hub is reached only when the model is not in the local Hugging Face cache).
No torchvision is needed: images are prepared by transformers' Pillow/numpy image processor.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import torch

from normscope._progress import progress_bar
from normscope.encoders._hub import resolve
from normscope.encoders.base import TorchEncoder
from normscope.encoders.images import load_image
from normscope.encoders.sentence_transformers import _quiet_transformers, _weights_hash, config_hash
from normscope.errors import ModelError
from normscope.table import ModelFingerprint

__all__ = ["HFClipEncoder", "ClipTextTower", "ClipImageTower"]


class ClipTextTower(torch.nn.Module):
    """CLIP's text tower up to the projection: features -> ``text_projection(pooler_output)``, (n, d).

    Parameters
    ----------
    text_model : transformers CLIPTextTransformer
    text_projection : torch.nn.Linear
        Shared with the ``CLIPModel`` they come from (not copied).

    The forward takes a dict with ``input_ids`` (n, L) int64 and optional ``attention_mask``, or the
    ``input_ids`` tensor alone: CLIP's causal attention and end-of-text pooling make right padding
    harmless without a mask (so :class:`~normscope.probes.ModuleAdapter` can index a plain tensor).
    """

    def __init__(self, text_model, text_projection):
        super().__init__()
        self.text_model = text_model
        self.text_projection = text_projection

    def forward(self, features) -> torch.Tensor:
        if isinstance(features, Mapping):
            ids, mask = features["input_ids"], features.get("attention_mask")
        else:
            ids, mask = features, None
        out = self.text_model(input_ids=ids, attention_mask=mask, return_dict=True)
        return self.text_projection(out.pooler_output)


class ClipImageTower(torch.nn.Module):
    """CLIP's image tower up to the projection: pixels (n, 3, H, W) -> ``visual_projection(pooler_output)``.

    Parameters
    ----------
    vision_model : transformers CLIPVisionTransformer
    visual_projection : torch.nn.Linear
        Shared with the ``CLIPModel`` they come from (not copied).

    The forward takes the ``pixel_values`` tensor, float, or a dict holding it.
    """

    def __init__(self, vision_model, visual_projection):
        super().__init__()
        self.vision_model = vision_model
        self.visual_projection = visual_projection

    def forward(self, features) -> torch.Tensor:
        pixels = features["pixel_values"] if isinstance(features, Mapping) else features
        return self.visual_projection(self.vision_model(pixel_values=pixels, return_dict=True).pooler_output)


def _image_processor_class():
    """transformers' Pillow/numpy CLIP image processor (no torchvision).

    transformers >= 5 names it ``CLIPImageProcessorPil`` (``CLIPImageProcessor`` is torchvision's
    there); in 4.x the Pillow one is ``CLIPImageProcessor``.
    """
    import transformers

    cls = getattr(transformers, "CLIPImageProcessorPil", None)
    return cls if cls is not None else transformers.CLIPImageProcessor


class HFClipEncoder(TorchEncoder):
    """Raw text and image vectors from a transformers ``CLIPModel`` checkpoint.

    :meth:`encode` embeds texts (the text tower is :attr:`module`, so the text probe adapter works
    unchanged); :meth:`encode_images` embeds images through :attr:`image_module`.

    Parameters
    ----------
    name : str
        Local directory (``config.json`` with ``model_type`` ``clip``, weights, tokenizer files,
        ``preprocessor_config.json``) or hub id, e.g. ``openai/clip-vit-base-patch32``; an
        ``hf-clip:`` prefix is allowed.
    device : str, keyword-only

    Attributes
    ----------
    module : ClipTextTower
    image_module : ClipImageTower
    fingerprint, image_fingerprint : ModelFingerprint
        Backend ``hf-clip``; ``pooling`` names the tower's pooled token and projection
        (e.g. ``text:eos+text_projection(512x512)``); ``dropped_modules=("normalize",)``.
    max_seq_length : int
        Text tokens kept (CLIP: 77), the smaller of the tokenizer's and the position table's limits.

    Raises
    ------
    ModelError
        Not a CLIP checkpoint, weights missing from it (they would be random), or the model cannot
        be loaded (offline and not cached: the message names the offline default).
    """

    def __init__(self, name: str, *, device: str = "cpu"):
        from transformers import AutoConfig, AutoTokenizer, CLIPModel

        _quiet_transformers()
        source = str(name).removeprefix("hf-clip:")

        def load(local_files_only: bool):
            cfg = AutoConfig.from_pretrained(source, local_files_only=local_files_only)
            if getattr(cfg, "model_type", None) != "clip":
                raise ModelError(
                    f"'{source}' is not a CLIP checkpoint (model_type {getattr(cfg, 'model_type', None)!r}); "
                    "hf-clip: needs a transformers CLIPModel"
                )
            tok = AutoTokenizer.from_pretrained(source, local_files_only=local_files_only)
            proc = _image_processor_class().from_pretrained(source, local_files_only=local_files_only)
            mdl, info = CLIPModel.from_pretrained(
                source, local_files_only=local_files_only, attn_implementation="eager", output_loading_info=True
            )
            if info.get("missing_keys"):
                missing = sorted(info["missing_keys"])
                raise ModelError(f"'{source}' lacks {len(missing)} CLIP weights (e.g. {missing[0]}); they would be random")
            return tok, proc, mdl

        self.tokenizer, self.processor, clip = resolve(source, load, what="CLIP model")
        clip.eval()
        self.clip = clip.to(device)
        self.device = device
        self.module = ClipTextTower(clip.text_model, clip.text_projection).eval()
        self.image_module = ClipImageTower(clip.vision_model, clip.visual_projection).eval()
        limits = [getattr(self.tokenizer, "model_max_length", None), clip.config.text_config.max_position_embeddings]
        self.max_seq_length = min(int(x) for x in limits if isinstance(x, int) and 0 < x < 1_000_000)
        revision = _weights_hash(source) if Path(source).is_dir() else str(getattr(clip.config, "_commit_hash", None) or "hub")
        tp, vp = clip.text_projection.weight, clip.visual_projection.weight  # (out, in)

        common = {"name": f"hf-clip:{source}", "revision": revision, "dropped_modules": ("normalize",), "backend": "hf-clip",
                  "config": config_hash(source if Path(source).is_dir() else None, self.max_seq_length)}
        self.fingerprint = ModelFingerprint(pooling=f"text:eos+text_projection({tp.shape[1]}x{tp.shape[0]})", **common)
        self.image_fingerprint = ModelFingerprint(
            pooling=f"image:cls+post_layernorm+visual_projection({vp.shape[1]}x{vp.shape[0]})", **common
        )

    @property
    def dim(self) -> int:
        """Embedding dimension d, the projection's output size (``projection_dim``)."""
        return int(self.clip.text_projection.weight.shape[0])

    @property
    def temperature(self) -> float:
        """The checkpoint's learned InfoNCE temperature ``tau = 1 / exp(logit_scale)`` (openai ViT-B/32: 0.01)."""
        return float(torch.exp(-self.clip.logit_scale.detach().float()))

    @property
    def hf_tokenizer(self):
        return self.tokenizer

    def tokenize(self, texts: Sequence[str]) -> dict:
        """``input_ids`` and ``attention_mask`` (n, L) on :attr:`device`, truncated at :attr:`max_seq_length`."""
        feats = self.tokenizer(
            [str(t) for t in texts], padding=True, truncation=True, max_length=self.max_seq_length, return_tensors="pt"
        )
        return {k: feats[k].to(self.device) for k in ("input_ids", "attention_mask")}

    def forward(self, features: dict) -> torch.Tensor:
        """Raw text vectors, ``torch.Tensor`` of shape (n, d), differentiable (= ``get_text_features``)."""
        return self.module(features)

    def encode(self, texts: Sequence[str], *, batch_size: int = 64, progress: bool = False) -> np.ndarray:
        """Raw text vectors, ndarray of shape (n, d), float32 (batched by decreasing token count)."""
        texts = [str(t) for t in texts]
        lengths = [len(x) for x in self.tokenizer(texts, truncation=True, max_length=self.max_seq_length)["input_ids"]] if texts else []
        return self._encode_in_batches(texts, lengths, batch_size=batch_size, progress=progress, prepare=self.tokenize)

    def pixel_values(self, images: Sequence) -> torch.Tensor:
        """The image processor's ``pixel_values``, float32 tensor (n, 3, H, W) on :attr:`device`.

        Parameters
        ----------
        images : sequence of PIL.Image.Image or PNG/JPEG paths, length n
            Resized (shortest edge), centre-cropped, rescaled to [0, 1] and normalised with the
            checkpoint's ``preprocessor_config.json`` (CLIP: 224 x 224, OpenAI mean and std).

        Raises
        ------
        InputError
            A path that is missing or not an image.
        """
        pil = [load_image(x) for x in images]
        return self.processor(images=pil, return_tensors="pt")["pixel_values"].to(self.device)

    def encode_images(self, images: Sequence, *, batch_size: int = 32, progress: bool = False) -> np.ndarray:
        """Raw image vectors (= ``get_image_features``), ndarray of shape (n, d), float32.

        Parameters
        ----------
        images : sequence of PIL.Image.Image or PNG/JPEG paths, length n
        batch_size : int, keyword-only
        progress : bool, keyword-only

        Raises
        ------
        InputError
            A path that is missing or not an image.
        """
        items = list(images)
        out = np.empty((len(items), self.dim), dtype=np.float32)

        n_batches = -(-len(items) // batch_size)
        with self.inference(), progress_bar(progress and n_batches > 1, n_batches) as advance:
            for s in range(0, len(items), batch_size):
                pixels = self.pixel_values(items[s : s + batch_size])
                out[s : s + batch_size] = self.image_module(pixels).float().cpu().numpy()
                advance()
        return out
