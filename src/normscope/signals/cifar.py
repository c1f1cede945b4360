"""Uncertainty on CIFAR-10H images: raw image-embedding norm vs human label entropy (``--dataset cifar10h``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from normscope.encoders import load_encoder
from normscope.encoders.images import read_indexed_images
from normscope.errors import InputError
from normscope.signals.items import sample_indices
from normscope.signals.labels import COVARIATE_LABEL, MIN_VALID, model_name
from normscope.signals.result import CorrelateResult
from normscope.signals.uncertainty import cifar10h_entropy
from normscope.stats import correlation
from normscope.table import require_raw_norms

__all__ = ["run_cifar10h", "load_cifar_images", "read_cifar_batch"]


#: The only Python objects a CIFAR-10 python batch names (numpy's array pickling; ``_codecs.encode`` is how
#: Python 3 writes ``bytes`` at protocol 2). Anything else is refused without being called.
_CIFAR_GLOBALS = {
    ("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct"),
    ("numpy", "ndarray"), ("numpy", "dtype"),
    ("numpy.core.numeric", "_frombuffer"), ("numpy._core.numeric", "_frombuffer"),
    ("_codecs", "encode"),
}


def _safe_global(module: str, name: str):
    import codecs

    if (module, name) == ("_codecs", "encode"):
        return codecs.encode
    if name == "_reconstruct":
        from numpy._core.multiarray import _reconstruct

        return _reconstruct
    if name == "_frombuffer":
        from numpy._core.numeric import _frombuffer

        return _frombuffer
    return getattr(np, name)


def read_cifar_batch(path: str | Path) -> dict:
    """One CIFAR-10 python batch (``test_batch``, ``data_batch_N``) through a restricted unpickler.

    The format is a pickled dict ``{b"batch_label": bytes, b"labels": list, b"data": uint8 ndarray
    (n, 3072), b"filenames": list}``. Only the numpy array constructors and ``_codecs.encode`` are
    admitted (:data:`_CIFAR_GLOBALS`); any other object named in the file (a crafted payload) is
    refused before it is called, so no code runs from the file.

    Returns
    -------
    dict
        The batch, keys as bytes.

    Raises
    ------
    InputError
        The file names another Python object, is not a pickle, or is not a dict with a ``b"data"`` array.
    """
    import pickle

    p = Path(path)

    class _Restricted(pickle.Unpickler):
        def find_class(self, module, name):
            if (module, name) not in _CIFAR_GLOBALS:
                raise InputError(f"{p} names a Python object the CIFAR-10 format never holds ({module}.{name}); "
                                 "normscope never runs code from a file: refused")
            return _safe_global(module, name)

    try:
        with open(p, "rb") as f:
            d = _Restricted(f, encoding="bytes").load()
    except InputError:
        raise
    except Exception as exc:  # not a pickle, truncated
        raise InputError(f"{p} is not a CIFAR-10 python batch (unreadable pickle: {type(exc).__name__}); give the "
                         "test_batch of cifar-10-batches-py, a .npy array (10000,32,32,3) or an image folder") from None
    if not isinstance(d, dict):
        raise InputError(f"{p} is not a CIFAR-10 python batch: it holds a {type(d).__name__}, not a dict with b'data'")
    data = d.get(b"data", d.get("data"))
    if not isinstance(data, np.ndarray) or data.dtype != np.uint8 or data.ndim != 2 or data.shape[1] != 3072:
        got = (f"{data.dtype} array of shape {data.shape}" if isinstance(data, np.ndarray)
               else "no b'data' entry" if data is None else type(data).__name__)
        raise InputError(f"{p} is not a CIFAR-10 python batch: b'data' must be a uint8 array (n, 3072), got {got}")
    return d


def load_cifar_images(path: str | Path) -> np.ndarray:
    """CIFAR-10 test images as uint8 (10000, 32, 32, 3): a ``.npy`` array, the python ``test_batch`` (read by
    :func:`read_cifar_batch`, never unpickled freely), or a folder of 32x32 PNG/JPEG files named by test-set
    position (:func:`~normscope.encoders.images.read_indexed_images`).

    Raises
    ------
    InputError
        Missing file, another shape, a file that is not a CIFAR-10 batch or names other Python objects.
    """
    p = Path(path)
    if p.is_dir() and not (p / "test_batch").is_file():
        return read_indexed_images(p, n=10000, size=(32, 32))
    if p.is_dir():
        p = p / "test_batch"
    if not p.is_file():
        raise InputError(f"CIFAR-10 test images not found: {p} (give a .npy array (10000,32,32,3) or cifar-10-batches-py/test_batch)")
    if p.suffix == ".npy":
        try:
            arr = np.load(p, allow_pickle=False)
        except (ValueError, OSError, EOFError) as exc:
            raise InputError(f"{p} is not a numeric .npy array ({str(exc).splitlines()[0] if str(exc) else type(exc).__name__}); "
                             "normscope never unpickles") from None
        if arr.dtype != np.uint8:
            raise InputError(f"CIFAR-10 test images must be uint8 (0-255), got {arr.dtype} from {p}")
    else:
        d = read_cifar_batch(p)
        arr = np.asarray(d.get(b"data", d.get("data")), dtype=np.uint8).reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)
    if arr.ndim != 4 or arr.shape[1:] != (32, 32, 3) or arr.shape[0] != 10000:
        raise InputError(f"CIFAR-10 test images must have shape (10000, 32, 32, 3), got {arr.shape} from {p}")
    return arr


def run_cifar10h(*, encoder, model, images, n, seed, n_boot, n_perm, batch_size, device) -> CorrelateResult:
    """Norm of image embeddings vs CIFAR-10H label entropy (bits); see :func:`normscope.signals.run_correlate`.

    Raises
    ------
    InputError
        No ``images``, a text-only encoder, normalised vectors.
    """

    if images is None:
        raise InputError(
            "uncertainty on CIFAR-10H needs the CIFAR-10 test images (--images); only the human labels are shipped"
        )
    arr = load_cifar_images(images)
    if encoder is None:
        encoder = load_encoder(model, device=device)
    if not hasattr(encoder, "encode_images"):
        raise InputError(f"model {model_name(encoder, model)!r} is a text encoder; CIFAR-10H needs an image model (e.g. hf-clip:openai/clip-vit-base-patch32)")
    ent = cifar10h_entropy()
    keep = sample_indices(len(ent), n or None, seed)
    from PIL import Image

    pil = [Image.fromarray(arr[i]) for i in keep]
    vecs = np.asarray(encoder.encode_images(pil, batch_size=batch_size))
    norm = np.linalg.norm(vecs.astype(np.float64), axis=1)
    require_raw_norms(norm, "correlate")
    res = correlation(norm, ent[keep], n_boot=n_boot, n_perm=n_perm, seed=seed, min_n=MIN_VALID).to_dict()
    ids = [f"cifar10-test-{i}" for i in keep]
    items = pd.DataFrame({"id": ids, "item": ids, "norm": norm, "covariate": ent[keep]})
    return CorrelateResult(
        signal="uncertainty", covariate=COVARIATE_LABEL["uncertainty"], model=model_name(encoder, model),
        dataset=f"CIFAR-10H ({len(keep)} test images)", n_items=len(keep), n=res["n"], n_missing=0,
        spearman=res["spearman"], spearman_ci=res["spearman_ci"], pearson=res["pearson"],
        pearson_ci=res["pearson_ci"], p_value=res["p_value"], pearson_p=res["pearson_p"],
        ci_level=res["ci_level"], ci_method=res["ci_method"], p_method=res["p_method"], n_boot=n_boot,
        n_perm=res["n_perm"], seed=seed, norm_mean=float(norm.mean()), norm_sd=float(norm.std(ddof=1)),
        entropy_unit="bits", notes=["images have no text length or word frequency: no controls"], items=items,
    )
