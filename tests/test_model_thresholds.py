"""Measured thresholds per model (issue 40 item 3): a file built from a planted calibrate run equals an independent
recomputation (map in cosine units vs the calibrator's predict_proba, the grid threshold by brute force, the held-out
counts by hand); a tampered file is refused; every shipped file is consistent and `calibrate --model M` prints it, and
a model without one is one error line (exit 2)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from _retrieval_data import LookupEncoder, _at_cosine, write_beir

from normscope.errors import InputError
from normscope.extensions.calibrator import SCORE_GRID, Calibrator
from normscope.extensions.model_thresholds import (THRESHOLD_DIR, check_threshold_file, describe_thresholds, file_name,
                                                   load_thresholds, measure_thresholds, score_at_p, shipped_thresholds,
                                                   top1_threshold)


def _score_beir(root, rng, *, n_train=240, n_test=160, d=16, n_noise=150):
    """Each query's relevant document sits at cosine c ~ U(0.3, 0.95) and is the top-1 with probability c (else a
    distractor at c + m ranks first): a larger top-1 cosine means a relevant top-1 more often."""
    table, corpus, queries = {}, [], []
    qrels: dict[str, list] = {"train": [], "test": []}
    for split, n in (("train", n_train), ("test", n_test)):
        for i in range(n):
            u = rng.normal(size=d)
            u /= np.linalg.norm(u)
            qn = f"{split}-q{i}"
            table[qn] = u * rng.uniform(1.0, 3.0)
            c, m = rng.uniform(0.3, 0.95), abs(rng.normal(0, 0.03)) + 1e-3
            right = rng.uniform() < c
            for name, cos in ((f"{split}-g{i}", c), (f"{split}-b{i}", c - m if right else min(c + m, 0.999))):
                table[name] = _at_cosine(u, cos, rng) * rng.uniform(1.0, 3.0)
                corpus.append({"_id": name, "title": "", "text": name})
            queries.append({"_id": qn, "text": qn})
            qrels[split].append((qn, f"{split}-g{i}", 1))
    for j in range(n_noise):
        table[f"noise{j}"] = rng.normal(size=d)
        corpus.append({"_id": f"noise{j}", "title": "", "text": f"noise{j}"})
    write_beir(root, corpus, queries, qrels)
    return root, LookupEncoder(table)


@pytest.fixture(scope="module")
def planted_file(tmp_path_factory):
    from normscope.extensions.calibrate import run_calibrate
    from normscope.requests import Resampling
    from normscope.requests.retrieval import CalibrateRequest
    from normscope.extensions.model_thresholds import threshold_file

    root, enc = _score_beir(tmp_path_factory.mktemp("thr"), np.random.default_rng(3))
    res = run_calibrate(CalibrateRequest(dataset=str(root), signals=("top1_score",), resampling=Resampling(n_boot=200)),
                        encoder=enc)
    return res, threshold_file(res, command="planted", date="2026-01-01", n_boot=200)


def test_file_equals_an_independent_recomputation(planted_file):
    res, d = planted_file
    check_threshold_file(d)
    items = res.items
    held = items[items["part"] == "held-out"].sort_values("query_id")
    cal = items[items["part"] == "calibration"]
    # the map in cosine units gives the calibrator's own P(relevant) on every query
    c = Calibrator(**{k: v for k, v in res.calibrator.items() if k not in ("format", "version")})
    s_all = items["top1_score"].to_numpy()
    p_map = np.clip(np.interp(s_all, d["map"]["score"], d["map"]["p"]), 0, 1)
    assert np.allclose(p_map, c.predict_proba(items[["top1_score"]]), atol=1e-9)
    assert d["map"]["held_out_auroc"] == pytest.approx(res.heldout.auroc)
    # the measured threshold by brute force over the grid on the calibration queries
    s_c, y_c = cal["top1_score"].to_numpy(), cal["label"].to_numpy()
    ok = [t for t in SCORE_GRID if (s_c >= t).any() and y_c[s_c >= t].mean() >= 0.8]
    t = d["answer"]["measured"]["score_threshold"]
    assert t == min(ok)
    assert top1_threshold(s_c, y_c, precision=0.8) == t
    # held-out counts by hand
    s_h, y_h = held["top1_score"].to_numpy(), held["label"].to_numpy()
    st = d["answer"]["measured"]["held_out"]
    assert st["answered"] == int((s_h >= t).sum()) and st["correct"] == int(y_h[s_h >= t].sum()) and st["n"] == len(s_h)
    assert st["precision"] == pytest.approx(st["correct"] / st["answered"])
    assert st["coverage"] == pytest.approx(st["answered"] / len(s_h))
    assert st["precision_ci"][0] <= st["precision"] <= st["precision_ci"][1]
    # the guaranteed threshold: its cosine selects the queries whose P >= lambda (the map is monotone)
    g = d["answer"]["guaranteed"]
    if g["p_threshold"] is not None:
        assert g["p_threshold"] == res.calibrator["thresholds"]["answer"]["threshold"]
        p_h = c.predict_proba(held[["top1_score"]])
        away = np.abs(s_h - g["score_threshold"]) > 1e-9
        assert np.array_equal((s_h >= g["score_threshold"])[away], (p_h >= g["p_threshold"] - 1e-12)[away])
    assert d["keep_documents"]["score_threshold"] == res.calibrator["thresholds"]["keep_documents"]["threshold"]
    lines = describe_thresholds(d)
    assert f"t = {t:.3f}" in "\n".join(lines) and f"({st['correct']}/{st['answered']})" in "\n".join(lines)


def test_score_at_p_by_hand():
    m = {"score": [0.2, 0.4, 0.6], "p": [0.1, 0.5, 0.9]}
    assert score_at_p(m, 0.7) == pytest.approx(0.5)  # halfway between 0.4 (0.5) and 0.6 (0.9)
    assert score_at_p(m, 0.5) == pytest.approx(0.4)
    assert score_at_p(m, 0.95) is None
    assert score_at_p(m, 0.05) == -1.0  # constant 0.1 below the first knot: every cosine


def test_a_tampered_file_is_refused(planted_file):
    _, d = planted_file
    bad = json.loads(json.dumps(d))
    bad["answer"]["measured"]["held_out"]["correct"] += 1
    with pytest.raises(InputError, match="stored counts"):
        check_threshold_file(bad)
    bad = json.loads(json.dumps(d))
    bad["held_out"]["top1_relevant"][0] ^= 1  # a label flipped changes the recomputed counts or nothing at all
    t = d["answer"]["measured"]["score_threshold"]
    if d["held_out"]["top1_score"][0] >= t:
        with pytest.raises(InputError, match="stored counts"):
            check_threshold_file(bad)
    bad = json.loads(json.dumps(d))
    bad["map"]["p"] = bad["map"]["p"][::-1]
    with pytest.raises(InputError, match="non-decreasing"):
        check_threshold_file(bad)
    with pytest.raises(InputError, match="not a normscope-thresholds"):
        check_threshold_file({"format": "x"})


def test_measure_thresholds_writes_a_loadable_file(tmp_path):
    from normscope.extensions.model_thresholds import write_thresholds

    root, enc = _score_beir(tmp_path / "b", np.random.default_rng(5), n_train=120, n_test=80)
    d = measure_thresholds("test/lookup", dataset=str(root), encoder=enc, n_boot=50)
    p = write_thresholds(d, tmp_path / "out")
    assert p.name == "test-lookup.json" and file_name("glove:6B-50d") == "glove-6B-50d.json"
    assert load_thresholds("test/lookup", tmp_path / "out") == json.loads(p.read_text())
    with pytest.raises(InputError, match="no measured thresholds shipped for model 'other'"):
        load_thresholds("other", tmp_path / "out")


def test_shipped_files_are_consistent_and_printed(capsys):
    from normscope.cli import run

    files = shipped_thresholds()
    assert files, f"no thresholds file in {THRESHOLD_DIR}"
    for name, p in files.items():
        d = json.loads(p.read_text())
        check_threshold_file(d, source=p.name)
        assert p.name == file_name(name) and d["data"]["dataset"] == "scifact" and d["data"]["n_held_out"] == 300
        assert d["precision_target"] == 0.8 and "dataset-specific" in d["caveat"] and d["command"].startswith("python ")
    d = load_thresholds("all-MiniLM-L6-v2")  # an alias of the bundled default
    capsys.readouterr()
    assert run(["calibrate", "--model", "all-MiniLM-L6-v2"]) == 0
    out = capsys.readouterr().out
    t = d["answer"]["measured"]["score_threshold"]
    assert "sentence-transformers/all-MiniLM-L6-v2 on scifact" in out and f"t = {t:.3f}" in out
    assert run(["calibrate", "--model", "no-such-model"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no measured thresholds shipped for model 'no-such-model'" in err[0]
