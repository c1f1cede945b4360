"""The content-addressed embedding cache: no recomputation, atomic shards, resume after SIGKILL."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from normscope.encoders.cache import _read_shard, encode_cached, model_cache_dir
from normscope.table import ModelFingerprint

TOY_SRC = '''
import hashlib, time
import numpy as np
from normscope.encoders.base import Encoder
from normscope.table import ModelFingerprint


class ToyEncoder(Encoder):
    """Deterministic 8-d vectors from sha256(text); counts what it computes."""

    fingerprint = ModelFingerprint(name="toy", revision="v1", pooling="none", backend="toy")

    def __init__(self, delay=0.0):
        self.calls = 0
        self.seen = []
        self.delay = delay

    @property
    def dim(self):
        return 8

    def encode(self, texts, *, batch_size=64, progress=False):
        self.calls += 1
        self.seen.extend(texts)
        time.sleep(self.delay)
        return np.stack([toy_vector(t) for t in texts]).astype(np.float32)


def toy_vector(t):
    h = np.frombuffer(hashlib.sha256(t.encode()).digest()[:8], dtype=np.uint8)
    return (h.astype(np.float32) - 127.5) / 16.0
'''
ns: dict = {}
exec(TOY_SRC, ns)
ToyEncoder, toy_vector = ns["ToyEncoder"], ns["toy_vector"]

TEXTS = [f"text number {i} " + "x" * (i % 7) for i in range(40)]


@pytest.fixture
def cache_root(tmp_path, monkeypatch):
    monkeypatch.setattr("normscope.encoders.cache.cache_dir", lambda: tmp_path)
    return tmp_path


def _reference(texts):
    return np.stack([toy_vector(t) for t in texts])


def test_second_run_computes_nothing(cache_root):
    enc = ToyEncoder()
    first = encode_cached(enc, TEXTS, batch_size=8)
    assert enc.calls == 5 and sorted(enc.seen) == sorted(TEXTS)
    np.testing.assert_array_equal(first, _reference(TEXTS))
    enc2 = ToyEncoder()
    second = encode_cached(enc2, TEXTS[::-1], batch_size=8)
    assert enc2.calls == 0
    np.testing.assert_array_equal(second, _reference(TEXTS[::-1]))
    shards = list(model_cache_dir(enc.fingerprint).glob("shard-*.npz"))
    assert len(shards) == 5


def test_only_new_texts_and_duplicates_once(cache_root):
    encode_cached(ToyEncoder(), TEXTS[:20], batch_size=8)
    enc = ToyEncoder()
    new = ["fresh a", "fresh b", "fresh a"]
    got = encode_cached(enc, TEXTS[10:30] + new, batch_size=8)
    assert sorted(enc.seen) == sorted(TEXTS[20:30] + ["fresh a", "fresh b"])
    np.testing.assert_array_equal(got, _reference(TEXTS[10:30] + new))


def test_cache_off_reads_and_writes_nothing(cache_root):
    encode_cached(ToyEncoder(), TEXTS, batch_size=8)
    enc = ToyEncoder()
    got = encode_cached(enc, TEXTS + ["other"], batch_size=8, cache=False)
    assert len(enc.seen) == 41
    np.testing.assert_array_equal(got, _reference(TEXTS + ["other"]))
    assert len(list(model_cache_dir(enc.fingerprint).glob("shard-*.npz"))) == 5  # nothing added


def test_corrupt_partial_and_foreign_shards_are_recomputed(cache_root):
    enc = ToyEncoder()
    encode_cached(enc, TEXTS[:8], batch_size=8)
    root = model_cache_dir(enc.fingerprint)
    (good,) = root.glob("shard-*.npz")
    blob = good.read_bytes()
    (root / "shard-truncated.npz").write_bytes(blob[: len(blob) // 2])
    (root / "shard-garbage.npz").write_bytes(b"\x00" * 100)
    (root / ".shard-left-by-kill.tmp").write_bytes(blob[:10])
    # a readable shard whose vectors disagree in count with its hashes
    np.savez(root / "shard-inconsistent.npz", hashes=np.zeros((3, 32), np.uint8), vectors=np.zeros((2, 8), np.float32))
    # a shard holding a wrong (NaN) vector for a real text must not be served
    h = np.frombuffer(hashlib.sha256(TEXTS[9].encode()).digest(), np.uint8)[None]
    np.savez(root / "shard-nan.npz", hashes=h, vectors=np.full((1, 8), np.nan, np.float32))
    enc2 = ToyEncoder()
    got = encode_cached(enc2, TEXTS[:10], batch_size=8)
    assert sorted(enc2.seen) == sorted(TEXTS[8:10])
    np.testing.assert_array_equal(got, _reference(TEXTS[:10]))
    # the damaged shards that were read are removed; the inconsistent one holds none of these texts, so
    # only its hash list was read and it stays (as do the good shard, the new one and the .tmp)
    left = sorted(p.name for p in root.glob("shard-*.npz"))
    assert len(left) == 3 and good.name in left and "shard-inconsistent.npz" in left
    assert (root / ".shard-left-by-kill.tmp").exists()


def test_fingerprint_separates_models(cache_root):
    encode_cached(ToyEncoder(), TEXTS, batch_size=8)
    other = ToyEncoder()
    other.fingerprint = ModelFingerprint(name="toy", revision="v2", pooling="none", backend="toy")
    encode_cached(other, TEXTS, batch_size=8)
    assert other.calls == 5


def test_sigkill_half_way_resumes_without_recomputing(tmp_path, monkeypatch):
    script = tmp_path / "run.py"
    script.write_text(
        TOY_SRC
        + textwrap.dedent(
            f"""
            from normscope.encoders.cache import encode_cached
            texts = {TEXTS!r}
            encode_cached(ToyEncoder(delay=0.4), texts, batch_size=4)
            """
        )
    )
    env = dict(os.environ, NORMSCOPE_CACHE=str(tmp_path / "cache"))
    root = tmp_path / "cache" / "embeddings" / ToyEncoder.fingerprint.key
    proc = subprocess.Popen([sys.executable, str(script)], env=env)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and len(list(root.glob("shard-*.npz"))) < 3:
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()
    assert proc.returncode == -signal.SIGKILL
    shards = sorted(root.glob("shard-*.npz"))
    assert 3 <= len(shards) < 10, "the run must be killed half way"
    # every file under a shard name is complete and valid
    done = set()
    for s in shards:
        got = _read_shard(s, 8)
        assert got is not None, f"corrupt shard {s.name}"
        hashes, vectors = got
        done |= {h.tobytes() for h in hashes}
        assert vectors.shape == (4, 8)
    monkeypatch.setenv("NORMSCOPE_CACHE", str(tmp_path / "cache"))
    enc = ToyEncoder()
    out = encode_cached(enc, TEXTS, batch_size=4)
    recomputed = {hashlib.sha256(t.encode()).digest() for t in enc.seen}
    assert not (recomputed & done), "finished batches were recomputed"
    assert len(enc.seen) == len(TEXTS) - len(done)
    np.testing.assert_array_equal(out, _reference(TEXTS))


def test_real_model_cache_roundtrip(bundled_encoder, cache_root):
    texts = ["a red apple", "quantum chromodynamics", "the", "a red apple"]
    direct = bundled_encoder.encode(texts)
    first = encode_cached(bundled_encoder, texts, batch_size=2)
    np.testing.assert_allclose(first, direct, atol=1e-5)
    calls = []
    orig = bundled_encoder.encode
    try:
        bundled_encoder.encode = lambda t, **kw: calls.append(t) or orig(t, **kw)
        again = encode_cached(bundled_encoder, texts)
    finally:
        del bundled_encoder.encode
    assert calls == []
    np.testing.assert_array_equal(again, first)
