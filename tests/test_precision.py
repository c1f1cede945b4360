"""bfloat16 on CPU (issue 17, section 1): twins share weights, precision is in every cache key, the norm error is measured."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest

from normscope.cli import run

TEXTS = ["a red apple", "quantum chromodynamics describes the strong force between quarks", "the",
         "justice", "Scientific claims are verified against the abstracts of research papers."]


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch):
    monkeypatch.setattr("normscope.encoders.cache.cache_dir", lambda: tmp_path / "cache")


def test_precision_is_in_the_cache_key_and_fp32_keys_are_unchanged():
    from normscope.table import ModelFingerprint

    fp = ModelFingerprint(name="m", revision="r", pooling="mean", dropped_modules=("Normalize",))
    old_form = {"name": "m", "revision": "r", "pooling": "mean", "dropped_modules": ["Normalize"],
                "backend": "sentence-transformers"}  # the fingerprint before precision existed
    assert fp.key == hashlib.sha256(json.dumps(old_form, sort_keys=True).encode()).hexdigest()
    bf = ModelFingerprint.from_dict(dict(fp.to_dict(), precision="bf16"))
    assert bf.precision == "bf16" and bf.key != fp.key
    assert ModelFingerprint.from_dict(old_form) == fp  # parquet metadata written before: fp32


def test_bf16_twin_shares_weights_and_never_serves_fp32(bundled_encoder):
    from normscope.encoders import load_encoder
    from normscope.encoders.cache import encode_cached

    bf = load_encoder(precision="bf16")
    assert bf is bundled_encoder.at_precision("bf16") and bf.at_precision("fp32") is bundled_encoder
    assert bf.module is bundled_encoder.module and bf.fingerprint.precision == "bf16"
    low = encode_cached(bf, TEXTS)
    calls = []
    orig = bundled_encoder.encode
    bundled_encoder.encode = lambda t, **kw: calls.append(list(t)) or orig(t, **kw)
    try:
        full = encode_cached(bundled_encoder, TEXTS)  # nothing of the bf16 entries may be served
    finally:
        del bundled_encoder.encode
    assert sorted(sum(calls, [])) == sorted(TEXTS)
    np.testing.assert_array_equal(full, bundled_encoder.encode(TEXTS))
    assert low.dtype == np.float32 and not np.array_equal(low, full)
    r_low, r_full = np.linalg.norm(low, axis=1), np.linalg.norm(full, axis=1)
    assert np.max(np.abs(r_low - r_full) / r_full) < 2e-2
    cos = np.sum(low * full, axis=1) / (r_low * r_full)
    assert cos.min() > 0.999


def test_embed_bf16_writes_precision_and_the_measured_norm_error(tmp_path, bundled_encoder):
    src = tmp_path / "items.txt"
    src.write_text("\n".join(TEXTS) + "\n")
    out, js = tmp_path / "o.parquet", tmp_path / "o.json"
    assert run(["embed", str(src), "-o", str(out), "--json", str(js), "--precision", "bf16"]) == 0
    s = json.loads(js.read_text())
    assert s["precision"] == s["fingerprint"]["precision"] == "bf16"
    err = s["norm_rel_error_vs_fp32"]
    assert err["n_sample"] == len(TEXTS) and 0 <= err["median"] <= err["max"] < 2e-2
    # independent check: the table's bf16 norms against fp32 norms of the same items
    import pyarrow.parquet as pq

    r_low = pq.read_table(out).column("norm").to_numpy().astype(np.float64)
    r_ref = np.linalg.norm(bundled_encoder.encode(TEXTS).astype(np.float64), axis=1)
    rel = np.abs(r_low - r_ref) / r_ref
    assert err["median"] == pytest.approx(np.median(rel), rel=1e-3, abs=1e-7)
    assert err["max"] == pytest.approx(rel.max(), rel=1e-3, abs=1e-7)
    assert run(["embed", str(src), "-o", str(out), "--json", str(js)]) == 0
    s = json.loads(js.read_text())
    assert s["precision"] == "fp32" and s["norm_rel_error_vs_fp32"] is None


def test_bad_precision_is_one_line_exit_2(tmp_path, capsys, rng):
    src = tmp_path / "items.txt"
    src.write_text("cat\n")
    assert run(["embed", str(src), "-o", str(tmp_path / "o.parquet"), "--precision", "fp16"]) == 2
    assert capsys.readouterr().err.strip() == "error: unknown precision 'fp16' (choose from fp32, bf16)"
    np.save(tmp_path / "v.npy", rng.normal(size=(3, 4)).astype(np.float32))
    assert run(["embed", str(tmp_path / "v.npy"), "-o", str(tmp_path / "o.parquet"), "--precision", "bf16"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: --precision bf16 applies to models") and "\n" not in err
    assert not (tmp_path / "o.parquet").exists()


def test_report_stage_keys_follow_the_precision(tmp_path, bundled_encoder):
    from normscope.errors import InputError
    from normscope.report import ReportConfig
    from normscope.report.stages import get_stage

    fp32 = ReportConfig(out=tmp_path / "r")
    bf16 = ReportConfig(out=tmp_path / "r", precision="bf16")

    def key(name, cfg, fp):
        st = get_stage(name)
        return st.key(st.request(cfg), fingerprint=fp.to_dict() if fp is not None else None, data_dir=None)

    for stage in ("setup", "norms", "signals", "retrieval", "probes", "similarity"):
        assert key(stage, fp32, bundled_encoder.fingerprint) != key(
            stage, bf16, bundled_encoder.at_precision("bf16").fingerprint), stage
    assert key("lab", fp32, None) == key("lab", bf16, None)  # no model in it
    with pytest.raises(InputError, match="unknown precision 'half'"):
        ReportConfig(out=tmp_path / "r", precision="half")


def test_similarity_bf16_reports_precision_and_norm_error_against_an_fp32_run(tmp_path, bundled_encoder):
    """--precision reaches every command that embeds: similarity in bf16 reports its precision and the norm
    error measured on its own texts, which agrees with the error computed here from two direct encodings."""
    pairs = tmp_path / "pairs.txt"
    words = [("cat", "dog", 7.0), ("car", "automobile", 9.0), ("sun", "justice", 0.5), ("tree", "forest", 6.5),
             ("bread", "butter", 6.0), ("king", "queen", 7.5), ("stone", "idea", 0.3), ("river", "stream", 8.6),
             ("cup", "mug", 8.0), ("happy", "glad", 8.8), ("cloud", "piano", 0.4), ("doctor", "nurse", 6.1)]
    pairs.write_text("".join(f"{a}\t{b}\t{s}\n" for a, b, s in words))
    fit = tmp_path / "fit.txt"  # other pairs of the same words: parameters are never fitted on evaluated pairs
    fit.write_text("".join(f"{a}\t{words[(i + 1) % len(words)][1]}\t{s}\n" for i, (a, _, s) in enumerate(words)))
    for prec in ("fp32", "bf16"):
        assert run(["similarity", "--dataset", str(pairs), "--fit", str(fit), "--precision", prec,
                    "--json", str(tmp_path / f"{prec}.json")]) == 0
    fp32 = json.loads((tmp_path / "fp32.json").read_text())
    bf16 = json.loads((tmp_path / "bf16.json").read_text())
    assert fp32["precision"] == "fp32" and fp32["norm_rel_error_vs_fp32"] is None
    assert bf16["precision"] == "bf16"
    err = bf16["norm_rel_error_vs_fp32"]
    texts = sorted({w for a, b, _ in words for w in (a, b)})  # the evaluated texts (the fit file adds none)
    ref32 = np.linalg.norm(bundled_encoder.encode(texts).astype(np.float64), axis=1)
    ref16 = np.linalg.norm(bundled_encoder.at_precision("bf16").encode(texts).astype(np.float64), axis=1)
    rel = np.abs(ref16 - ref32) / ref32
    assert err["n_sample"] == len(texts)
    assert err["median"] == pytest.approx(float(np.median(rel)), rel=1e-3, abs=1e-7)
    assert err["max"] == pytest.approx(float(rel.max()), rel=1e-3, abs=1e-7)
