"""Fetching a dataset: download (pooch), unpack, verify, install atomically.

A fetch works in a private staging folder ``<dest>/.staging/<folder>.<pid>.<random>/``:

1. the files of the first source that answers are downloaded with :func:`pooch.retrieve`
   (HTTP(S) through :class:`pooch.HTTPDownloader` with a rich progress bar; ``file://`` URLs and
   mirror folders by a local copy), each into a temporary file that pooch renames only after the
   pinned hash (if any) matched;
2. archives are unpacked member by member into the dataset folder; WordNet goes through NLTK's
   downloader (the index's checksum and size, its safe unzip) from the files just downloaded;
3. :func:`normscope.data.verify.verify` checks pinned sha256 values and content facts;
4. the folder is renamed to ``<dest>/<folder>`` in one ``os.replace``.

Any failure (HTTP error, a transfer cut short, a wrong hash, a failed content check) raises a
one-line :class:`~normscope.errors.DataError` and removes the staging folder, so nothing is left
behind; a staging folder of a killed process is removed by the next fetch, which starts over.

Mirrors (``mirror=`` or ``$NORMSCOPE_DATA_MIRROR``): a URL or a folder holding each file at
``<host>/<path>`` of its origin URL (the layout ``wget -x`` writes), or holding the shared-data
layout ``<folder>/<file>``; both are tried, in that order.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as _dt
import os
import shutil
import sys
import tempfile
import warnings
import zipfile
from pathlib import Path
from urllib.parse import urlsplit
from urllib.request import url2pathname

from normscope.data import locate
from normscope.data.registry import Dataset, Remote, Source, get_dataset
from normscope.data.verify import verify
from normscope.errors import DataError

__all__ = ["FetchResult", "fetch_dataset", "fmt_bytes", "mirrored_url"]

#: (connect, read) timeouts of every HTTP request, seconds.
TIMEOUT = (15, 120)


class _Absent(Exception):
    """The file is not at this location (HTTP 404/410, no such local file, host unreachable)."""


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


def fmt_bytes(n: int | None, approximate: bool = False) -> str:
    """``2.8 MB`` (decimal units); ``~`` in front when approximate."""
    if n is None:
        return "size unknown"
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{'~' if approximate else ''}{n / scale:.1f} {unit}"
    return f"{'~' if approximate else ''}{n} B"


def mirrored_url(url: str, mirror: str | None) -> str:
    """``url`` as served by ``mirror``: ``<mirror>/<host>/<path>`` (query dropped); unchanged without one.

    A mirror without a URL scheme is a local folder and yields a ``file://`` URL.
    """
    if not mirror:
        return url
    u = urlsplit(url)
    return _join(mirror, u.netloc + u.path)


def _join(mirror: str, rel: str) -> str:
    if urlsplit(mirror).scheme in ("http", "https", "file"):
        return mirror.rstrip("/") + "/" + rel.lstrip("/")
    return Path(mirror).resolve().joinpath(rel).as_uri()


# ------------------------------------------------------------------------------------ transfer
class _Bar:
    """pooch's progress-bar protocol (``total``, ``update``, ``reset``, ``close``) on a rich task."""

    def __init__(self, progress, label: str):
        self._p, self._total = progress, None
        self._task = progress.add_task(label, total=None)

    @property
    def total(self):
        return self._total

    @total.setter
    def total(self, value):
        self._total = value or None
        self._p.update(self._task, total=self._total)

    def update(self, n):
        self._p.advance(self._task, n)

    def reset(self):
        self._p.reset(self._task, total=self._total)

    def close(self):
        if self._total:
            self._p.update(self._task, completed=self._total)


class _LocalCopy:
    """pooch downloader for ``file://`` URLs: a chunked copy with the same progress protocol."""

    def __init__(self, bar: _Bar):
        self.bar = bar

    def __call__(self, url, output_file, pooch):
        src = Path(url2pathname(urlsplit(url).path))
        if not src.is_file():
            raise _Absent(f"{src} does not exist")
        self.bar.total = src.stat().st_size
        with open(src, "rb") as fin, open(output_file, "wb") as fout:
            for block in iter(lambda: fin.read(1 << 20), b""):
                fout.write(block)
                self.bar.update(len(block))


def _download(url: str, out: Path, known_hash: str | None, progress) -> int:
    """Download ``url`` to ``out`` with pooch (hash checked before the file gets its name); bytes read.

    Raises
    ------
    _Absent
        Not there (404/410, missing local file) or host unreachable.
    DataError
        Transfer cut short, other HTTP error, or hash mismatch.
    """
    import logging

    import pooch
    import requests

    bar = _Bar(progress, out.name)
    local = urlsplit(url).scheme == "file"
    downloader = _LocalCopy(bar) if local else pooch.HTTPDownloader(progressbar=bar, timeout=TIMEOUT)
    logger = pooch.get_logger()
    level = logger.level
    logger.setLevel(logging.WARNING)  # pooch logs every download at INFO
    try:
        pooch.retrieve(url, known_hash=known_hash, fname=out.name, path=out.parent, downloader=downloader)
    except requests.HTTPError as exc:
        code = exc.response.status_code if exc.response is not None else None
        if code in (404, 410):
            raise _Absent(f"{url}: HTTP {code}") from None
        raise DataError(f"{url}: HTTP error {code}") from None
    except requests.exceptions.ChunkedEncodingError as exc:
        raise DataError(f"the transfer of {url} was cut short ({_short(exc)})") from None
    except (requests.ConnectionError, requests.Timeout) as exc:
        raise _Absent(f"{url}: cannot connect ({_short(exc)})") from None
    except ValueError:  # pooch: hash mismatch
        algo = known_hash.split(":")[0] if known_hash and ":" in known_hash else "sha256"
        raise DataError(f"{url}: {algo} of the downloaded file differs from the pinned value "
                        f"{(known_hash or '').split(':')[-1][:16]}... (corrupted or a different file); nothing kept") from None
    finally:
        logger.setLevel(level)
    return out.stat().st_size


def _short(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text if len(text) < 160 else text[:157] + "..."


def _first_present(urls, out: Path, known_hash: str | None, mirror: str | None, progress) -> tuple[str, int]:
    """Try ``urls`` (mirrored) in order; the first that is there wins. Returns ``(url, bytes)``."""
    misses = []
    for u in urls:
        url = mirrored_url(u, mirror)
        try:
            return url, _download(url, out, known_hash, progress)
        except _Absent as exc:
            misses.append(str(exc))
    raise _Absent("; ".join(misses))


# ------------------------------------------------------------------------------------- sources
def _unzip(archive: Path, members, target: Path, url: str) -> None:
    try:
        with zipfile.ZipFile(archive) as zf:
            names = [n for n in zf.namelist() if not n.startswith("__MACOSX/") and not n.endswith("/")]
            for suffix, rel in members:
                hits = [n for n in names if n == suffix or n.endswith("/" + suffix)]
                if len(hits) != 1:
                    raise DataError(f"{url}: the archive has {len(hits)} members named {suffix} (expected 1)")
                dest = target / rel
                dest.parent.mkdir(parents=True, exist_ok=True)
                with zf.open(hits[0]) as src, open(dest, "wb") as out:
                    shutil.copyfileobj(src, out, 1 << 20)
    except (zipfile.BadZipFile, EOFError, OSError) as exc:
        raise DataError(f"{url} is not a complete zip archive ({_short(exc)})") from None


def _run_files(src: Source, target: Path, mirror, progress) -> tuple[list[str], int]:
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
    return urls, total


def _hash(rf: Remote) -> str | None:
    return f"sha256:{rf.sha256}" if rf.sha256 else None


def _run_zip(src: Source, target: Path, mirror, progress) -> tuple[list[str], int]:
    rf = src.files[0]
    archive = target.parent / ("download-" + Path(urlsplit(rf.urls[0]).path).name)
    url, n = _first_present(rf.urls, archive, _hash(rf), mirror, progress)
    _unzip(archive, rf.members, target, url)
    archive.unlink()
    return [url], n


def _run_nltk(src: Source, target: Path, mirror, progress) -> tuple[list[str], int]:
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
    return [index_url, pkg_url], n_index + n_pkg


def _run_shared(ds: Dataset, target: Path, mirror: str, progress) -> tuple[list[str], int]:
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
    return urls, total


_RUNNERS = {"files": _run_files, "zip": _run_zip, "nltk": _run_nltk}


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
        sys.stderr.write(f"normscope: {ds.title} is not here: fetching {fmt_bytes(ds.download_bytes, ds.approximate)} "
                         f"from {origin} into {dest} (--offline forbids this)\n")
        sys.stderr.flush()
    staging = Path(tempfile.mkdtemp(prefix=f"{ds.folder}.{os.getpid()}.", dir=staging_root))
    try:
        target = staging / ds.folder
        target.mkdir()
        tried = []
        candidates = [(s.label, lambda s=s, p=None: _RUNNERS[s.kind](s, target, mirror, p)) for s in ds.sources]
        if mirror and ds.shared:
            candidates.append((f"shared-data layout at {mirror}", lambda p=None: _run_shared(ds, target, mirror, p)))
        with _progress(progress) as prog:
            for label, run in candidates:  # noqa: B007 (label is read after the loop: the source that answered)
                try:
                    urls, nbytes = run(p=prog)
                    break
                except _Absent as exc:
                    tried.append(str(exc))
                    shutil.rmtree(target)
                    target.mkdir()
            else:
                raise DataError(f"{ds.title} not found: {'; '.join(tried)}")
        try:
            checked = verify(ds, target)
        except DataError as exc:
            raise DataError(f"{ds.title} from {urls[-1]}: {exc}; nothing kept") from None
        from normscope._io import write_json

        write_json({"dataset": ds.name, "title": ds.title, "source": label, "urls": urls, "bytes": nbytes,
                    "mirror": mirror, "fetched_utc": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                    "verified": checked, "licence": ds.licence, "citation": ds.citation}, target / locate.MARKER)
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

