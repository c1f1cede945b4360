"""Moving bytes for a fetch: downloads with pooch (hash checked before a file gets its name), local copies,
mirrors, and the one-line causes of a failure.

Used by :mod:`normscope.data.fetch` (the fetch of a dataset) and :mod:`normscope.data.pypi` (a source
distribution on PyPI). ``_Absent`` means "not at this location" (the next source is tried); every other
failure is a one-line :class:`~normscope.errors.DataError`.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path, PurePosixPath
from urllib.parse import unquote, urlsplit
from urllib.request import url2pathname

from normscope.data.registry import Remote
from normscope.errors import DataError

__all__ = ["TIMEOUT", "fmt_bytes", "mirrored_url", "net_cause", "merge_causes"]

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


def _hash(rf: Remote) -> str | None:
    return f"sha256:{rf.sha256}" if rf.sha256 else f"md5:{rf.md5}" if rf.md5 else None

