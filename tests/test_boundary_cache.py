"""Cache keys and shards (issue 24): a changed max_seq_length or tokenizer never serves stale vectors, and a
well-formed shard whose vectors were changed after it was written is recomputed, not served."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from normscope.encoders.cache import encode_cached, model_cache_dir, shard_checksum
from test_cache import TEXTS, ToyEncoder, _reference


@pytest.fixture
def cache_root(tmp_path, monkeypatch):
    monkeypatch.setattr("normscope.encoders.cache.cache_dir", lambda: tmp_path / "cache")
    return tmp_path / "cache"


def test_doubled_vectors_in_a_well_formed_shard_are_recomputed(cache_root, capsys):
    ref = encode_cached(ToyEncoder(), TEXTS[:8], batch_size=8)
    (shard,) = model_cache_dir(ToyEncoder.fingerprint).glob("shard-*.npz")
    with np.load(shard) as z:
        hashes, vectors, checksum = z["hashes"], z["vectors"], z["checksum"]
    assert checksum.tobytes() == shard_checksum(hashes, vectors)  # written with its shard
    np.savez(shard, hashes=hashes, vectors=2 * vectors, checksum=checksum)  # readable, finite, consistent: doubled
    enc = ToyEncoder()
    got = encode_cached(enc, TEXTS[:8], batch_size=8)
    assert sorted(enc.seen) == sorted(TEXTS[:8])  # recomputed, not served
    np.testing.assert_array_equal(got, ref)
    np.testing.assert_array_equal(got, _reference(TEXTS[:8]))
    assert "1 damaged shard" in capsys.readouterr().err
    # a shard without a checksum (written by an older normscope, or by hand) is not trusted either
    with np.load(next(model_cache_dir(ToyEncoder.fingerprint).glob("shard-*.npz"))) as z:
        hashes, vectors = z["hashes"], z["vectors"]
    for p in model_cache_dir(ToyEncoder.fingerprint).glob("shard-*.npz"):
        np.savez(p, hashes=hashes, vectors=vectors)
    enc = ToyEncoder()
    encode_cached(enc, TEXTS[:8], batch_size=8)
    assert sorted(enc.seen) == sorted(TEXTS[:8])


@pytest.fixture(scope="module")
def tiny_st(tmp_path_factory):
    """A random 2-layer BERT saved as a sentence-transformers directory (max_seq_length 32)."""
    from _tiny import tiny_sentence_transformer

    return tiny_sentence_transformer(tmp_path_factory.mktemp("tinyst"))


def _copy(src, dst):
    shutil.copytree(src, dst)
    return dst


def _set_max_len(model_dir, n):
    for cfg in model_dir.rglob("sentence_bert_config.json"):
        d = json.loads(cfg.read_text())
        d["max_seq_length"] = n
        cfg.write_text(json.dumps(d))


LONG = " ".join(f"word{i}" for i in range(40))  # > 8 tokens: cut differently at 8 and 32


def test_max_seq_length_and_tokenizer_files_change_the_cache_key(tiny_st, tmp_path, cache_root):
    from normscope.encoders import load_encoder

    model = _copy(tiny_st, tmp_path / "m")
    a = load_encoder(str(model), fresh=True)
    va = encode_cached(a, [LONG, "short"], batch_size=4)
    assert a.fingerprint.config.startswith("sha256:")
    _set_max_len(model, 8)  # only the configuration: the weights (revision) are the same
    b = load_encoder(str(model))
    assert b.max_seq_length == 8 and b.fingerprint.revision == a.fingerprint.revision
    assert b.fingerprint.key != a.fingerprint.key
    vb = encode_cached(b, [LONG, "short"], batch_size=4)
    ref = b.encode([LONG, "short"])  # the model's own output at max_seq_length 8, no cache
    np.testing.assert_allclose(vb, ref, rtol=1e-5, atol=1e-6)
    assert not np.allclose(vb[0], va[0], atol=1e-4)  # the long text was cut at 8 tokens: another vector
    np.testing.assert_allclose(vb[1], va[1], rtol=1e-5, atol=1e-6)  # the short one is the same vector
    # a tokenizer file changed (no lower-casing any more): another key again, and the new vectors
    tc = model / "tokenizer_config.json"
    spec = json.loads(tc.read_text())
    assert spec["do_lower_case"] is True
    spec["do_lower_case"] = False
    tc.write_text(json.dumps(spec))
    c = load_encoder(str(model))
    assert c.fingerprint.key not in (a.fingerprint.key, b.fingerprint.key)
    vc = encode_cached(c, ["SHORT"], batch_size=4)
    np.testing.assert_allclose(vc, c.encode(["SHORT"]), rtol=1e-5, atol=1e-6)
    assert not np.allclose(vc[0], encode_cached(b, ["SHORT"], batch_size=4)[0], atol=1e-4)
    # the bundled model's key holds its configuration too
    assert load_encoder().fingerprint.config.startswith("sha256:")


def test_a_shard_linking_out_of_the_cache_is_not_read(cache_root, tmp_path, capsys):
    """A valid shard moved outside the cache and linked back (issue 36): not read, the link removed, the items
    recomputed, the target untouched."""
    ref = encode_cached(ToyEncoder(), TEXTS[:8], batch_size=8)
    (shard,) = model_cache_dir(ToyEncoder.fingerprint).glob("shard-*.npz")
    outside = tmp_path / "elsewhere.npz"
    shutil.move(shard, outside)
    shard.symlink_to(outside)
    kept = outside.read_bytes()
    capsys.readouterr()
    enc = ToyEncoder()
    got = encode_cached(enc, TEXTS[:8], batch_size=8)
    assert sorted(enc.seen) == sorted(TEXTS[:8])  # recomputed: the linked shard was not served
    np.testing.assert_array_equal(got, ref)
    assert "1 damaged shard" in capsys.readouterr().err
    assert outside.read_bytes() == kept and not any(p.is_symlink() for p in shard.parent.iterdir())
