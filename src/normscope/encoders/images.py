"""Folders of images (PNG/JPEG): listing, embedding through the cache, and index-named datasets.

:func:`embed_image_folder` is what ``normscope embed <folder>`` runs with an image-capable encoder
(``hf-clip:...``, ``open_clip:...``): every PNG/JPEG below the folder, in sorted relative-path order,
becomes one row (id and text = its relative path). Vectors go through the content-addressed cache
keyed by the sha256 of each file's bytes, under the encoder's *image* fingerprint.

:func:`read_indexed_images` reads a dataset exported as one file per image named by its position
(e.g. the CIFAR-10 test set as ``0.png`` ... ``9999.png``), for the CIFAR-10H signal.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from normscope.encoders.base import Encoder
from normscope.encoders.cache import encode_cached
from normscope.errors import InputError
from normscope.table import EmbeddingTable

__all__ = ["IMAGE_SUFFIXES", "load_image", "list_images", "is_image_folder", "embed_image_folder", "read_indexed_images"]

#: Image file suffixes read (compared in lower case).
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg")


def load_image(image):
    """An RGB ``PIL.Image`` from a path (PNG/JPEG) or an image (converted to RGB).

    Raises
    ------
    InputError
        The path does not exist or cannot be decoded as an image; ``image`` is neither.
    """
    from PIL import Image

    if isinstance(image, (str, Path)):
        try:
            with Image.open(image) as im:
                return im.convert("RGB")
        except (OSError, ValueError) as exc:
            raise InputError(f"cannot read image {image}: {str(exc).splitlines()[0][:160]}") from None
    if not isinstance(image, Image.Image):
        raise InputError(f"not an image or image path: {type(image).__name__}")
    return image.convert("RGB")


def list_images(folder: str | Path, *, hint: str = "") -> list[Path]:
    """PNG/JPEG files below ``folder`` (recursive; hidden files and folders skipped), sorted by relative path.

    ``hint`` ends the message of the error raised when there are none.

    Raises
    ------
    InputError
        ``folder`` is not a directory, or holds no PNG/JPEG file.
    """
    root = Path(folder)
    if not root.is_dir():
        raise InputError(f"not a directory: {root}")
    found = [
        p for p in root.rglob("*")
        if p.suffix.lower() in IMAGE_SUFFIXES and p.is_file()
        and not any(part.startswith(".") for part in p.relative_to(root).parts)
    ]
    if not found:
        raise InputError(f"no PNG/JPEG images in {root}{hint}")
    return sorted(found, key=lambda p: p.relative_to(root).as_posix())


def is_image_folder(path: str | Path) -> bool:
    """True for a directory that is not a BEIR dataset (no ``corpus.jsonl[.gz]``): ``embed`` reads its images."""
    p = Path(path)
    return p.is_dir() and not any((p / c).is_file() for c in ("corpus.jsonl", "corpus.jsonl.gz"))


def _image_fingerprint(encoder):
    fp = getattr(encoder, "image_fingerprint", None)
    return fp if fp is not None else dataclasses.replace(encoder.fingerprint, pooling=f"{encoder.fingerprint.pooling}|image")


class _ImageFiles(Encoder):
    """The cache's view of an image encoder: its "texts" are ``sha256:<hex>`` keys of image files."""

    def __init__(self, encoder, path_of: dict[str, Path]):
        self._encoder = encoder
        self._path_of = path_of
        self.fingerprint = _image_fingerprint(encoder)

    @property
    def dim(self) -> int:
        return int(self._encoder.dim)

    def encode(self, texts: Sequence[str], *, batch_size: int = 32, progress: bool = False) -> np.ndarray:
        return self._encoder.encode_images([self._path_of[k] for k in texts], batch_size=batch_size)


def embed_image_folder(
    folder: str | Path,
    *,
    encoder,
    batch_size: int = 32,
    cache: bool = True,
    progress: bool = False,
) -> EmbeddingTable:
    """Raw image vectors of every PNG/JPEG below ``folder`` (see :func:`list_images`).

    Parameters
    ----------
    folder : str or Path
    encoder : Encoder with ``encode_images``, keyword-only
        E.g. :class:`~normscope.encoders.hf_clip.HFClipEncoder`; its ``image_fingerprint`` (else its
        fingerprint marked ``|image``) names the cache namespace and the table's fingerprint.
    batch_size : int, keyword-only
        Images per model call and per cache shard.
    cache : bool, keyword-only
        Read and fill the embedding cache (keyed by the sha256 of each file's bytes).
    progress : bool, keyword-only

    Returns
    -------
    EmbeddingTable
        ``ids`` and ``texts`` the relative posix paths; vectors float32 (n, d); ``tokens`` None.

    Raises
    ------
    InputError
        No images; the encoder embeds text only; a file that is not a decodable image.
    """
    root = Path(folder)
    paths = list_images(root, hint=" (and no corpus.jsonl[.gz]: not a BEIR dataset either)")
    if not callable(getattr(encoder, "encode_images", None)):
        raise InputError(
            f"model '{encoder.fingerprint.name}' embeds text only; a folder of images needs an image model "
            "(hf-clip:<dir or hub id>, e.g. hf-clip:openai/clip-vit-base-patch32)"
        )
    keys = ["sha256:" + hashlib.sha256(p.read_bytes()).hexdigest() for p in paths]
    view = _ImageFiles(encoder, dict(zip(keys, paths)))
    vectors = encode_cached(view, keys, batch_size=batch_size, progress=progress, cache=cache)
    rel = [p.relative_to(root).as_posix() for p in paths]
    return EmbeddingTable(ids=rel, texts=list(rel), vectors=vectors, fingerprint=view.fingerprint)


_TRAILING_INT = re.compile(r"(\d+)$")


def read_indexed_images(folder: str | Path, *, n: int, size: tuple[int, int]) -> np.ndarray:
    """A dataset stored as one image file per item, named by its 0-based position.

    The position is the run of digits that ends the file name's stem: ``0.png``, ``00042.png``,
    ``test_00042.png`` and ``cat/00042.png`` are all item 42. Sub-folders are allowed (e.g. one per
    class) as long as the numbers are positions in the whole set, not within a class.

    Parameters
    ----------
    folder : str or Path
    n : int, keyword-only
        Number of items; positions must be exactly ``0 .. n-1``, each once (CIFAR-10 test set: 10000).
    size : (int, int), keyword-only
        ``(height, width)`` of every image (CIFAR-10: 32 x 32).

    Returns
    -------
    ndarray of shape (n, height, width, 3), uint8
        Row i is the image named i, as RGB.

    Raises
    ------
    InputError
        A file without a trailing number; a position given twice (e.g. per-class numbering), outside
        ``0 .. n-1`` or missing; an image of another size; an undecodable file.
    """
    root = Path(folder)
    where: dict[int, Path] = {}
    for p in list_images(root, hint=f" ({n} files named by 0-based position expected)"):
        m = _TRAILING_INT.search(p.stem)
        if m is None:
            raise InputError(f"image {p.relative_to(root)} has no number at the end of its name: name each file by its 0-based position")
        i = int(m.group(1))
        if i in where:
            raise InputError(
                f"position {i} is named twice ({where[i].relative_to(root)} and {p.relative_to(root)}): numbers must "
                f"be positions in the whole set (0 .. {n - 1}), not within a class folder"
            )
        if not 0 <= i < n:
            raise InputError(f"image {p.relative_to(root)} names position {i}, outside 0 .. {n - 1} (positions are 0-based)")
        where[i] = p
    if len(where) != n:
        gone = sorted(set(range(n)) - set(where))
        raise InputError(f"{root} holds {len(where)} of the {n} images; missing positions e.g. {gone[:5]}")
    out = np.empty((n, size[0], size[1], 3), dtype=np.uint8)
    for i in range(n):
        arr = np.asarray(load_image(where[i]), dtype=np.uint8)
        if arr.shape[:2] != tuple(size):
            raise InputError(f"image {where[i].relative_to(root)} is {arr.shape[1]}x{arr.shape[0]}, expected {size[1]}x{size[0]}")
        out[i] = arr
    return out
