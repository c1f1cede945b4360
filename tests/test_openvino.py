"""The OpenVINO runtime (``--runtime openvino``): the same vectors as torch fp32, its precision recorded,
no telemetry under HOME, the IR converted once, and torch when openvino is missing or broken.

Needs ``openvino`` (``pip install 'normscope[openvino]'``); those tests skip without it unless
``NORMSCOPE_REQUIRE_EXTRAS=1`` (``make test``) makes that a failure. The fallback tests run always.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from normscope.encoders import load_encoder
from normscope.encoders import openvino_runtime as ovr
from normscope.encoders.bundled import DEFAULT_MODEL, L3_MODEL, MPNET_MODEL, bundled_model_path
from normscope.errors import InputError
from normscope.requests import Embedding

_HAVE_OV = importlib.util.find_spec("openvino") is not None
SRC = str(Path(__file__).resolve().parents[1] / "src")

#: Mixed lengths: one word, sentences, an empty and a whitespace item (junk), a repeat (duplicate), characters
#: outside ASCII, and one text far over every bundled model's max_seq_length (256 / 128 / 384 word pieces).
TEXTS = ["a", "the red apple fell from the tree", "Heat shock proteins chaperone misfolded polypeptides. " * 60,
         "x y z", "Mixed CASE ÜNICODE naïve café ✓", "the red apple fell from the tree", "protein",
         "The cell membrane regulates what enters and leaves the cell.", "b " * 40, "quantum chromodynamics"]


def require_openvino() -> None:
    if not _HAVE_OV:
        if os.environ.get("NORMSCOPE_REQUIRE_EXTRAS") == "1":
            pytest.fail("NORMSCOPE_REQUIRE_EXTRAS=1 but the openvino extra is not installed")
        pytest.skip("pip install 'normscope[openvino]'")


def rel_norm_error(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    ra = np.linalg.norm(a.astype(np.float64), axis=1)
    rb = np.linalg.norm(b.astype(np.float64), axis=1)
    return np.abs(ra - rb) / rb


def _installed(name: str) -> bool:
    return bundled_model_path(name, missing_ok=True) is not None


@pytest.mark.parametrize("name", [DEFAULT_MODEL, L3_MODEL, MPNET_MODEL])
def test_vectors_equal_torch_fp32_with_truncation(name):
    require_openvino()
    if name != DEFAULT_MODEL and not _installed(name):
        pytest.skip(f"{name} is not installed (docs/models.md)")
    torch_enc = load_encoder(name)
    ov_enc = load_encoder(name, runtime="openvino")
    assert isinstance(ov_enc, ovr.OpenVINOEncoder)
    seen, raw = ov_enc.token_counts(TEXTS)
    assert (raw > seen).sum() == 1 and seen.max() == torch_enc.max_seq_length  # one text cut at max_seq_length
    ref = torch_enc.encode(TEXTS, batch_size=4)
    got = ov_enc.encode(TEXTS, batch_size=4)
    assert got.dtype == np.float32 and got.shape == ref.shape
    assert rel_norm_error(got, ref).max() <= 1e-6
    cos = np.sum(got * ref, axis=1) / (np.linalg.norm(got, axis=1) * np.linalg.norm(ref, axis=1))
    assert cos.min() >= 1 - 1e-6


def test_precision_hint_set_read_back_and_in_the_cache_key():
    require_openvino()
    torch_enc = load_encoder()
    f32 = load_encoder(runtime="openvino")
    bf16 = load_encoder(runtime="openvino", precision="bf16")
    assert f32.inference_precision == "f32" and f32.fingerprint.runtime == "openvino:f32"
    assert bf16.inference_precision == "bf16" and bf16.fingerprint.runtime == "openvino:bf16"
    hint = bf16.compiled.get_property("INFERENCE_PRECISION_HINT")  # read from OpenVINO, not from our record
    assert hint.get_type_name() == "bf16"
    assert f32.compiled.get_property("INFERENCE_PRECISION_HINT").get_type_name() == "f32"
    keys = {torch_enc.fingerprint.key, f32.fingerprint.key, bf16.fingerprint.key, torch_enc.at_precision("bf16").fingerprint.key}
    assert len(keys) == 4
    assert f32.fingerprint.to_dict()["runtime"] == "openvino:f32" and "runtime" not in torch_enc.fingerprint.to_dict()
    assert bf16.at_precision("fp32") is f32.at_precision("fp32").at_precision("bf16").at_precision("fp32")
    # bf16 really is reduced precision (median error ~5e-4 measured), f32 is not
    ref = torch_enc.encode(TEXTS)
    assert np.median(rel_norm_error(bf16.encode(TEXTS), ref)) > 1e-5
    assert rel_norm_error(f32.encode(TEXTS), ref).max() <= 1e-6


def test_junk_and_duplicates_as_torch():
    require_openvino()
    from normscope.encoders.embed import embed_texts

    texts = TEXTS + ["", "   ", "[UNK]"]
    a = embed_texts(texts, encoder=load_encoder(), cache=False)
    b = embed_texts(texts, encoder=load_encoder(runtime="openvino"), cache=False)
    assert a.junk.to_dict() == b.junk.to_dict() and len(a.junk.to_dict()["ids"]) == 3
    assert a.ids == b.ids and a.n_truncated == b.n_truncated == 1
    assert np.array_equal(a.tokens, b.tokens)
    sa, sb = a.summary(), b.summary()
    assert sa["n_distinct"] == sb["n_distinct"] == len(a) - 1  # the repeated sentence
    assert sb["fingerprint"]["runtime"] == "openvino:f32"
    assert rel_norm_error(b.vectors, a.vectors).max() <= 1e-6


def test_permutation_equivariant_over_several_batches():
    require_openvino()
    enc = load_encoder(runtime="openvino")
    perm = np.random.default_rng(3).permutation(len(TEXTS))
    base = enc.encode(TEXTS, batch_size=3)  # 4 batches of mixed lengths
    moved = enc.encode([TEXTS[i] for i in perm], batch_size=3)
    assert rel_norm_error(moved, base[perm]).max() <= 1e-6
    np.testing.assert_allclose(moved, base[perm], rtol=0, atol=1e-5)


_CHILD = textwrap.dedent("""
    import json, os, sys
    from normscope.encoders import load_encoder
    if sys.argv[1:] == ["no-convert"]:  # a conversion would fail: load_encoder would fall back with a warning
        from normscope.encoders.openvino_runtime import telemetry_off
        with telemetry_off():
            import openvino
        def refuse(*args, **kwargs):
            raise RuntimeError("converted again")
        openvino.convert_model = refuse
    enc = load_encoder(runtime="openvino")
    v = enc.encode(["the red apple", "a"])
    print(json.dumps({"cls": type(enc).__name__, "runtime": enc.fingerprint.runtime, "v": v.tolist(),
                      "ci": os.environ.get("CI")}))
""")


#: Telemetry would be sent with urllib, which honours these: a closed local port, so no test reaches the network.
_NO_NET = {"https_proxy": "http://127.0.0.1:9", "HTTPS_PROXY": "http://127.0.0.1:9", "http_proxy": "http://127.0.0.1:9",
           "HTTP_PROXY": "http://127.0.0.1:9"}


def _telemetry_env() -> dict:
    """This environment without any opt-out of openvino's telemetry (``CI`` and the other CI markers) and offline."""
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "TF_BUILD", "JENKINS_URL", "no_proxy", "NO_PROXY")}
    env.update(_NO_NET)
    return env


def _child(home: Path, cache: Path, *args: str) -> tuple[dict, str]:
    env = _telemetry_env()
    env.update(HOME=str(home), NORMSCOPE_CACHE=str(cache), PYTHONPATH=SRC, HF_HUB_OFFLINE="1")
    p = subprocess.run([sys.executable, "-c", _CHILD, *args], env=env, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-2000:]
    return json.loads(p.stdout.strip().splitlines()[-1]), p.stderr


def _files(root: Path) -> list[str]:
    return sorted(str(Path(d) / f) for d, _, fs in os.walk(root) for f in fs)


def test_conversion_writes_nothing_under_home_and_a_cache_hit_does_not_convert(tmp_path):
    require_openvino()
    home, cache = tmp_path / "home", tmp_path / "cache"
    home.mkdir()
    first, err1 = _child(home, cache)
    assert first["cls"] == "OpenVINOEncoder" and first["runtime"] == "openvino:f32"
    assert err1.count("note: converting") == 1  # the converter (and its telemetry) did run
    assert first["ci"] is None  # the opt-out is restored after the conversion
    assert _files(home) == []  # no ~/intel/openvino_ga_cid, no ~/intel/stats
    xml = next((cache / "openvino").glob("*/model.xml"))
    stamp = xml.stat().st_mtime_ns
    second, err2 = _child(home, cache, "no-convert")
    assert "note: converting" not in err2 and "warning" not in err2  # read from the cached IR, convert_model not called
    assert second["cls"] == "OpenVINOEncoder"
    assert xml.stat().st_mtime_ns == stamp
    assert second["v"] == first["v"]
    assert _files(home) == []


def test_the_home_check_detects_telemetry_without_the_opt_out(tmp_path):
    """Control: openvino's converter called without the opt-out does write under an empty HOME (its events go
    to a closed local proxy port)."""
    require_openvino()
    env = _telemetry_env()
    env.update(HOME=str(tmp_path))
    code = "import torch, openvino as ov; ov.convert_model(torch.nn.Linear(2, 2), example_input=torch.zeros(1, 2))"
    subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, timeout=300, check=True)
    assert any("intel" in f for f in _files(tmp_path))


def _fresh_torch_encoder():
    return load_encoder(fresh=True)


def test_missing_openvino_falls_back_to_torch_with_one_line(monkeypatch, capsys):
    enc = _fresh_torch_encoder()
    monkeypatch.setitem(sys.modules, "openvino", None)  # import openvino -> ImportError
    monkeypatch.setattr(ovr, "_WARNED", set())
    assert ovr.to_openvino(enc) is enc
    assert ovr.to_openvino(enc) is enc
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("warning: OpenVINO is not available (ModuleNotFoundError") \
        and err[0].endswith("running on torch (pip install 'normscope[openvino]')")
    assert not ovr.openvino_available()


def test_broken_openvino_falls_back_to_torch_with_one_line(monkeypatch, capsys):
    import types

    enc = _fresh_torch_encoder()
    broken = types.ModuleType("openvino")  # imports, but has no Core / convert_model
    monkeypatch.setitem(sys.modules, "openvino", broken)
    monkeypatch.setattr(ovr, "_WARNED", set())
    monkeypatch.setattr(ovr, "_COMPILED", {})
    assert ovr.to_openvino(enc) is enc
    err = capsys.readouterr().err.strip().splitlines()
    err = [ln for ln in err if ln.startswith("warning:")]
    assert len(err) == 1 and "OpenVINO could not run" in err[0] and "AttributeError" in err[0]


def test_runtime_option_refusals_and_request():
    with pytest.raises(InputError, match="runtime"):
        load_encoder(runtime="onnx")
    with pytest.raises(InputError, match="--runtime openvino runs on the CPU"):
        load_encoder(runtime="openvino", device="cuda")
    e = Embedding(runtime="openvino")
    assert e.argv()[-2:] == ["--runtime", "openvino"] and e.to_json()["runtime"] == "openvino"
    assert "runtime" not in Embedding().to_json() and "--runtime" not in Embedding().argv()
    assert Embedding().runtime == "auto" and Embedding(runtime="torch").to_json()["runtime"] == "torch"
    assert Embedding(runtime="torch").argv()[-2:] == ["--runtime", "torch"]
    with pytest.raises(InputError, match="runtime"):
        Embedding(runtime="onnx")


def test_cli_refuses_openvino_for_precomputed_vectors(tmp_path, capsys):
    from normscope.cli import run

    np.save(tmp_path / "v.npy", np.random.default_rng(0).normal(size=(4, 3)).astype(np.float32))
    assert run(["embed", str(tmp_path / "v.npy"), "-o", str(tmp_path / "o.parquet"), "--runtime", "openvino"]) == 2
    assert "--runtime openvino applies to models" in capsys.readouterr().err
    assert not (tmp_path / "o.parquet").exists()
    # the default (auto) takes precomputed vectors as stored, without a word
    assert run(["embed", str(tmp_path / "v.npy"), "-o", str(tmp_path / "o.parquet")]) == 0
    assert "runtime" not in capsys.readouterr().err


def test_ray_workers_run_the_encoders_runtime(tmp_path):
    """A Ray worker rebuilds an OpenVINO encoder on OpenVINO (same fingerprint, checked by the worker) and a torch
    one on torch; the actor class runs in this process (no cluster)."""
    require_openvino()
    pytest.importorskip("ray", reason="the ray extra is not installed")
    import pyarrow as pa

    from normscope.extensions.ray_engine import CorpusWorker, EncoderSpec

    ov_enc = load_encoder(runtime="openvino")
    spec = EncoderSpec.from_encoder(ov_enc)
    assert spec.options == {"precision": "fp32", "runtime": "openvino"} and spec.fingerprint.runtime == "openvino:f32"
    worker = CorpusWorker(spec, None, False, 1, str(tmp_path / "junk"), "drop")
    assert isinstance(worker.encoder, ovr.OpenVINOEncoder) and worker.encoder.fingerprint == ov_enc.fingerprint
    out = worker(pa.table({"id": ["a", "b"], "text": TEXTS[:2]}))
    got = np.asarray(out.column("vector").to_pylist(), dtype=np.float32)
    assert rel_norm_error(got, load_encoder().encode(TEXTS[:2])).max() <= 1e-6
    assert EncoderSpec.from_encoder(load_encoder()).options == {"precision": "fp32", "runtime": "torch"}
    # --engine ray's default: the driver decides auto once (here OpenVINO) and pins it with the fingerprint
    auto = EncoderSpec(model=DEFAULT_MODEL, options={"precision": "fp32", "runtime": "auto"}).chosen()
    assert auto.options["runtime"] == "openvino" and auto.fingerprint == ov_enc.fingerprint
    bf16 = EncoderSpec(model=DEFAULT_MODEL, options={"precision": "bf16", "runtime": "auto"}).chosen()
    assert bf16.options["runtime"] == "torch" and bf16.fingerprint is None  # off OpenVINO's scope: nothing loaded


def test_auto_takes_openvino_when_it_passes_the_equality_check(tmp_path, monkeypatch):
    """``runtime="auto"``: OpenVINO f32, its check error measured against torch on CHECK_TEXTS (and equal to an
    independent measurement), kept in checks.json and read back there the next time (not measured again)."""
    require_openvino()
    torch_enc = _fresh_torch_encoder()
    enc = ovr.choose_runtime(torch_enc)
    assert isinstance(enc, ovr.OpenVINOEncoder) and enc.fingerprint.runtime == "openvino:f32"
    assert enc.fingerprint == load_encoder(runtime="openvino").fingerprint  # the same IR, hint and key
    z = enc.encode(list(ovr.CHECK_TEXTS), batch_size=2)
    t = torch_enc.encode(list(ovr.CHECK_TEXTS), batch_size=2)
    assert enc.check_error == pytest.approx(rel_norm_error(z, t).max(), rel=1e-6)
    assert 0 < enc.check_error <= ovr.EQUALITY_TOLERANCE
    seen, raw = torch_enc.token_counts([ovr.CHECK_TEXTS[-1]])
    assert seen[0] == torch_enc.max_seq_length < raw[0]  # the longest check text is truncated
    checks = json.loads((enc.xml.parent / "checks.json").read_text())
    assert enc.check_error in [c["max_rel_norm_error"] for c in checks.values()]
    text = ovr.describe_runtime(enc, "auto")
    assert text.startswith("OpenVINO 20") and " f32 (equal to torch fp32 to " in text and text.endswith("--runtime auto)")

    def measured_again(*a, **k):
        raise AssertionError("the check was measured again")

    monkeypatch.setattr(ovr, "equality_error", measured_again)
    again = ovr.choose_runtime(_fresh_torch_encoder())
    assert isinstance(again, ovr.OpenVINOEncoder) and again.check_error == enc.check_error


def test_auto_stays_on_torch_when_the_check_fails_silently(monkeypatch, capsys):
    """A measured error above the tolerance (here the tolerance set below the ~2e-7 OpenVINO measures): torch, no
    line on stderr, and the reason, with the figure, for the page."""
    require_openvino()
    enc = load_encoder(runtime="auto")
    assert isinstance(enc, ovr.OpenVINOEncoder)
    monkeypatch.setattr(ovr, "EQUALITY_TOLERANCE", enc.check_error / 2)
    torch_enc = _fresh_torch_encoder()
    capsys.readouterr()
    assert ovr.choose_runtime(torch_enc) is torch_enc and torch_enc.fingerprint.runtime == "torch"
    assert capsys.readouterr().err == ""
    assert ovr.describe_runtime(torch_enc, "auto") == (
        f"torch (--runtime auto: OpenVINO's vectors differ from torch fp32 by {enc.check_error:.1e} relative in norm "
        f"on 8 check texts (tolerance {enc.check_error / 2:.0e}))")


def test_auto_without_openvino_or_off_its_scope_is_torch_without_a_word(tmp_path, monkeypatch, capsys):
    enc = _fresh_torch_encoder()
    monkeypatch.setitem(sys.modules, "openvino", None)  # import openvino -> ImportError
    assert ovr.choose_runtime(enc) is enc
    assert ovr.describe_runtime(enc, "auto") == "torch (--runtime auto: openvino is not installed (pip install " \
        "'normscope[openvino]'))"
    bf16 = enc.at_precision("bf16")
    assert ovr.choose_runtime(bf16) is bf16
    assert "fp32 only; bf16 runs under torch.autocast" in ovr.describe_runtime(bf16, "auto")
    assert ovr.describe_runtime(enc, "torch") == "torch"
    np.save(tmp_path / "v.npy", np.random.default_rng(0).normal(size=(4, 3)).astype(np.float32))
    assert load_encoder(str(tmp_path / "v.npy"), runtime="auto").fingerprint.backend == "precomputed"
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("runtime", ["openvino", "auto"])
def test_report_runs_its_inference_stages_on_openvino_and_its_commands_reproduce(tmp_path, monkeypatch,
                                                                                 bundled_encoder, runtime):
    """``ReportConfig(runtime="openvino")`` and the default ``auto`` (which takes OpenVINO here): the norms stage
    embeds in OpenVINO (fingerprint, command, the printed command reproduces the numbers), the page and
    summary.json state the runtime, the tokens stage reads the torch twin's weight table, and the norms equal
    the torch encoder's own."""
    require_openvino()
    from _reproduce import check_reproduces
    from normscope.datasets import wordfreq_words
    from normscope.report import ReportConfig, Sizes, run_report

    cfg = ReportConfig(out=tmp_path / "r", sizes=Sizes(words=40, n_boot=20, n_perm=20), only=("norms", "tokens"),
                       runtime=runtime)
    res = run_report(cfg, encoder=bundled_encoder, progress=False)
    norms = res.summary["norm_distribution"]
    assert norms["status"] == "ok" and norms["result"]["fingerprint"]["runtime"] == "openvino:f32"
    assert ("--runtime openvino" in norms["command"]) == (runtime == "openvino")
    stated = res.summary["report"]["runtime"]
    check = load_encoder(runtime="openvino").check_error
    assert stated.startswith("OpenVINO 20") and f" f32 (equal to torch fp32 to {check:.1e} relative in norm" in stated
    assert stated.endswith("--runtime auto)") == (runtime == "auto")
    from rich.console import Console

    from normscope.cli.report import print_summary

    console = Console(record=True, width=300)
    print_summary(res, console)
    assert f"(custom sizes, runtime {stated.split(' (')[0]}, " in console.export_text()
    page = (cfg.out / "index.html").read_text(encoding="utf-8")
    assert "&middot; runtime OpenVINO 20" in page and f"to {check:.1e} relative in norm on 8 check texts" in page
    r = np.linalg.norm(bundled_encoder.encode(wordfreq_words(40)).astype(np.float64), axis=1)
    assert norms["result"]["norm_mean"] == pytest.approx(r.mean(), rel=1e-6)
    assert res.summary["token_table"]["status"] == "ok"
    assert res.summary["token_table"]["result"]["counts"]["unused"] == 994  # the torch model's table
    check_reproduces(cfg.out, res.records, ["norm_distribution"], tmp_path, monkeypatch, rel=1e-5)


def test_a_damaged_cached_ir_is_converted_again(tmp_path, monkeypatch, capsys):
    """A truncated ``model.bin`` in the IR cache: one note, the IR converted again, the vectors still torch's."""
    require_openvino()
    monkeypatch.setenv("NORMSCOPE_CACHE", str(tmp_path))
    torch_enc = _fresh_torch_encoder()
    xml = ovr.convert(torch_enc, progress=False)
    data = (xml.parent / "model.bin").read_bytes()
    (xml.parent / "model.bin").write_bytes(data[: len(data) // 3])
    monkeypatch.setattr(ovr, "_COMPILED", {})
    enc = ovr.OpenVINOEncoder(torch_enc)
    err = capsys.readouterr().err
    assert err.count("could not be used") == 1 and err.count("note: converting") == 1
    assert (xml.parent / "model.bin").stat().st_size == len(data)
    assert rel_norm_error(enc.encode(TEXTS[:4]), torch_enc.encode(TEXTS[:4])).max() <= 1e-6


def test_torch_fp32_and_openvino_f32_count_as_one_model():
    """``model_key``: a calibrator fitted on torch fp32 applies to OpenVINO f32 vectors (and a report folder keeps
    sections of either); the embedding cache key (``key``) still keeps them apart; bf16 stays apart from fp32."""
    import dataclasses

    import pandas as pd

    from normscope.report.stage import made_with
    from normscope.extensions.calibrator import check_fingerprint, fit_calibrator
    from normscope.table import ModelFingerprint

    fp = ModelFingerprint(name="m", revision="r", pooling="mean")
    ov = dataclasses.replace(fp, runtime="openvino:f32")
    bf16 = dataclasses.replace(fp, precision="bf16")
    ov_bf16 = dataclasses.replace(fp, precision="bf16", runtime="openvino:bf16")
    assert ov.key != fp.key and ov.model_key == fp.model_key == fp.key
    assert len({fp.model_key, bf16.model_key, ov_bf16.model_key}) == 3
    assert made_with({"model": ov.to_dict()}) == made_with({"model": fp.to_dict()})
    rng = np.random.default_rng(0)
    feats = pd.DataFrame({"top1_score": rng.uniform(0.2, 0.9, 40), "margin": rng.uniform(0, 0.2, 40)})
    y = (feats["top1_score"].to_numpy() > 0.55).astype(int)
    cal = fit_calibrator(feats, y, signals=("top1_score", "margin"), model={**fp.to_dict(), "key": fp.key}, target_k=1)
    check_fingerprint(cal, ov)  # no error
    with pytest.raises(InputError, match="fitted for model 'm'"):
        check_fingerprint(cal, bf16)
