"""Adapter for open_clip models (text and image towers), raw vectors (``normalize=False``).

CLIP-style models (Radford et al. 2021; open_clip, Ilharco et al. 2021) normalise
their tower outputs inside the InfoNCE loss; normscope asks the towers for the
un-normalised projection ``encode_text(tokens, normalize=False)`` /
``encode_image(pixels, normalize=False)``, and records the skipped step as
``dropped_modules=("normalize",)`` in the fingerprint.

Needs the optional extra: ``pip install normscope[clip]`` (``open_clip_torch``,
which pulls in torchvision). Without it, constructing the encoder raises a
one-line :class:`~normscope.errors.ModelError`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from normscope.encoders.base import TorchEncoder
from normscope.encoders.images import load_image
from normscope.errors import ModelError
from normscope.table import ModelFingerprint, file_sha256

__all__ = ["OpenClipEncoder", "parse_open_clip_name"]


def parse_open_clip_name(name: str) -> tuple[str, str | None]:
    """Split ``"<arch>/<pretrained>"`` (``open_clip:`` prefix optional) into ``(arch, pretrained)``.

    ``pretrained`` is a tag known to open_clip (e.g. ``laion2b_s34b_b79k``) or a
    checkpoint file; it is None when absent (random weights are refused later).
    """
    name = name.removeprefix("open_clip:")
    arch, _, pretrained = name.partition("/")
    if not arch:
        raise ModelError(f"open_clip model name '{name}' must look like '<arch>/<pretrained>', e.g. 'ViT-B-32/laion2b_s34b_b79k'")
    return arch, (pretrained or None)


def _import_open_clip():
    try:
        import open_clip  # noqa: F401
    except ImportError as exc:
        raise ModelError(
            f"the open_clip backend needs the optional extra: pip install normscope[clip] ({exc.msg})"
        ) from None
    except RuntimeError as exc:  # torchvision built for another torch, e.g. CUDA wheels on a CPU-only torch
        if "torchvision" not in str(exc):
            raise
        first = str(exc).strip().splitlines()[0][:160]
        raise ModelError(
            f"open_clip cannot import torchvision on this torch ({first}): PyPI's torchvision wheels need the "
            "CUDA build of torch; on a CPU-only torch use hf-clip:openai/clip-vit-base-patch32 (no torchvision)"
        ) from None
    return open_clip


class OpenClipEncoder(TorchEncoder):
    """Raw text (and image) vectors from an open_clip model.

    Parameters
    ----------
    name : str
        ``"<arch>/<pretrained>"``, e.g. ``"ViT-B-32/laion2b_s34b_b79k"`` (an
        ``open_clip:`` prefix is allowed); ``pretrained`` may be a local checkpoint.
    device : str, keyword-only

    Raises
    ------
    ModelError
        open_clip not installed (names ``pip install normscope[clip]``), no
        ``pretrained`` given, or the weights cannot be loaded (offline, unknown tag).
    """

    def __init__(self, name: str, *, device: str = "cpu"):
        open_clip = _import_open_clip()
        import torch

        arch, pretrained = parse_open_clip_name(name)
        if pretrained is None:
            raise ModelError(f"open_clip model '{name}' names no pretrained weights ('<arch>/<pretrained>')")
        try:
            model, _, preprocess = open_clip.create_model_and_transforms(arch, pretrained=pretrained, device=device)
            tokenizer = open_clip.get_tokenizer(arch)
        except Exception as exc:
            first = str(exc).strip().splitlines()[0][:160] if str(exc).strip() else type(exc).__name__
            raise ModelError(f"cannot load open_clip model '{arch}/{pretrained}' ({first})") from None
        model.eval()
        self.module = model
        self.preprocess = preprocess
        self.tokenizer = tokenizer
        self.device = device
        self.max_seq_length = getattr(model, "context_length", None)
        self._torch = torch
        revision = "sha256:" + file_sha256(pretrained)[:16] if Path(pretrained).is_file() else pretrained
        self.fingerprint = ModelFingerprint(
            name=f"open_clip:{arch}/{pretrained}",
            revision=revision,
            pooling="open_clip-text",
            dropped_modules=("normalize",),
            backend="open_clip",
        )

    @property
    def dim(self) -> int:
        proj = getattr(self.module, "text_projection", None)
        if proj is not None and hasattr(proj, "shape"):
            return int(proj.shape[1])
        with self._torch.inference_mode():
            return int(self.forward(self.tokenize(["a"])).shape[1])

    @property
    def temperature(self) -> float | None:
        """The checkpoint's learned InfoNCE temperature ``tau = 1 / exp(logit_scale)``, or None without one."""
        scale = getattr(self.module, "logit_scale", None)
        return None if scale is None else float(self._torch.exp(-scale.detach().float()))

    def tokenize(self, texts: Sequence[str]) -> dict:
        return {"text": self.tokenizer([str(t) for t in texts]).to(self.device)}

    def forward(self, features: dict):
        """Raw text-tower vectors, ``torch.Tensor`` (n, d): ``encode_text(tokens, normalize=False)``."""
        return self.module.encode_text(features["text"], normalize=False)

    def encode(self, texts: Sequence[str], *, batch_size: int = 64, progress: bool = False) -> np.ndarray:
        """Raw text vectors, ndarray of shape (n, d), float32 (forward pass at :attr:`precision`)."""
        texts = [str(t) for t in texts]
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        with self.inference():
            for s in range(0, len(texts), batch_size):
                out[s : s + batch_size] = self.forward(self.tokenize(texts[s : s + batch_size])).float().cpu().numpy()
        return out

    def encode_images(self, images: Sequence, *, batch_size: int = 32) -> np.ndarray:
        """Raw image-tower vectors ``encode_image(pixels, normalize=False)``.

        Parameters
        ----------
        images : sequence of PIL.Image.Image or image file paths, length n

        Returns
        -------
        ndarray of shape (n, d), float32

        Raises
        ------
        InputError
            An image path that does not exist or cannot be decoded.
        """
        items = list(images)
        out = np.empty((len(items), self.dim), dtype=np.float32)
        with self.inference():
            for s in range(0, len(items), batch_size):
                pix = self._torch.stack([self.preprocess(load_image(x)) for x in items[s : s + batch_size]]).to(self.device)
                out[s : s + batch_size] = self.module.encode_image(pix, normalize=False).float().cpu().numpy()
        return out
