"""Issue 36 items 2 and 5: calibrator files against a schema with ranges, odd qrels grades, ``calibrate``'s grade
hint, ``data list`` with a read-only HOME, and a model folder without its vocabulary.

The bad-input table (tests/test_bad_inputs.py) holds one row per damaged calibrator field; here: a calibrator
``normscope calibrate`` really fits passes the schema and predicts as before, the reversed map that gave P = 1 for
every query and the NaN threshold that still printed a guarantee are refused where they are read, and the cases
whose command prints a progress line before its error (so they cannot be one-line table rows).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from normscope.errors import DataError, InputError

sys.path.insert(0, os.path.dirname(__file__))
from test_bad_inputs import _calibrator  # noqa: E402  (the table's well-formed calibrator)


def test_a_fitted_calibrator_passes_the_schema_and_round_trips(tmp_path):
    """A real fit (scikit-learn's isotonic calibration on 60 queries), saved and read back through the schema."""
    import pandas as pd

    from normscope.extensions.calibrator import fit_calibrator, load_calibrator
    from normscope.table import ModelFingerprint

    rng = np.random.default_rng(0)
    top1 = rng.uniform(0.2, 0.9, 60)
    y = (top1 + rng.normal(0, 0.1, 60) > 0.55).astype(int)
    feats = pd.DataFrame({"top1_score": top1, "margin": rng.uniform(0, 0.2, 60),
                          "query_norm": rng.uniform(1.5, 3.0, 60)})  # the default signals
    fp = ModelFingerprint(name="m", revision="r", pooling="mean")
    for method in ("isotonic", "platt"):
        cal = fit_calibrator(feats, y, method=method, model={**fp.to_dict(), "key": fp.key}, target_k=1)
        cal.thresholds = {"answer": {"threshold": 0.7, "precision": 0.8, "delta": 0.1},
                          "keep_documents": {"threshold": 0.4, "k": 10}}
        path = cal.save(tmp_path / f"{method}.json")
        back = load_calibrator(path)
        assert back.signals == ["top1_score", "margin", "query_norm"]
        assert np.array_equal(back.predict_proba(feats), cal.predict_proba(feats))


def test_a_reversed_map_is_refused(tmp_path):
    """Before: a descending x = [2, 0, -2] is undefined input for ``np.interp`` (it needs increasing x): it gave
    P = 0.9 for three of four decision values, P = 0.1 for the lowest, whatever the map said."""
    from normscope.extensions.calibrator import Calibrator, load_calibrator

    good = _calibrator()
    d = np.array([-3.0, -1.0, 0.5, 3.0])
    ok = Calibrator.from_dict(good)
    mp = good["map"]
    assert np.allclose(np.interp(d, mp["x"], mp["y"]), [0.1, 0.25, 0.525, 0.9])  # the monotone map, by hand
    reversed_ = dict(good, map={"x": [2.0, 0.0, -2.0], "y": [0.1, 0.4, 0.9]})
    assert np.allclose(np.interp(d, reversed_["map"]["x"], reversed_["map"]["y"]), [0.1, 0.9, 0.9, 0.9])  # what it gave
    p = tmp_path / "rev.json"
    p.write_text(json.dumps(reversed_))
    with pytest.raises(InputError, match=r"rev\.json: calibrator field 'map\.x' is not increasing"):
        load_calibrator(p)
    assert ok.map == good["map"]


@pytest.mark.parametrize("field, value, message", [
    ("thresholds.answer.threshold", math.nan, r"'thresholds\.answer\.threshold' is NaN, not a finite number in \[0, 1\]"),
    ("thresholds.answer.threshold", math.inf, r"'thresholds\.answer\.threshold' is Infinity"),
    ("thresholds.answer.delta", 2.0, r"'thresholds\.answer\.delta' is 2\.0, not a number in \[0, 1\]"),
    ("target", "any_relevant_at_00", r"'target' is \"any_relevant_at_00\""),
    ("target", "any_relevant_at_-1", r"'target' is \"any_relevant_at_-1\""),
    ("depth", 0, r"'depth' is 0, not an integer >= 1"),
    ("intercept", "x", r"'intercept' is \"x\", not a finite number"),
    ("map.y", [0.1, 0.4], r"'map\.y' should be a list of 3 numbers, is 2 entries"),
    ("scorer", "dot", r"'scorer' is \"dot\", not cosine"),
    ("signals", ["margin", "margin"], r"'signals' names a signal twice"),
])
def test_each_field_out_of_range_is_one_line_naming_it(tmp_path, field, value, message):
    from normscope.extensions.calibrator import load_calibrator

    c = _calibrator()
    node = c
    *head, last = field.split(".")
    for k in head:
        node = node[k]
    node[last] = value
    p = tmp_path / "c.json"
    p.write_text(json.dumps(c))
    with pytest.raises(InputError) as exc:
        load_calibrator(p)
    msg = str(exc.value)
    assert "\n" not in msg and msg.startswith(f"{p}: calibrator field ") and __import__("re").search(message, msg), msg


def test_target_k_and_depth_are_read_as_written():
    from normscope.extensions.calibrator import Calibrator

    c = dict(_calibrator(), target="any_relevant_at_5", depth=5)
    assert Calibrator.from_dict(c).target == "any_relevant_at_5"
    with pytest.raises(InputError, match=r"'depth' is 2, not an integer >= 5 \(the target's K\)"):
        Calibrator.from_dict(dict(c, depth=2))


# ---------------------------------------------------------------------------------------------------------
# grades
# ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("grade, read", [("1_0", None), ("\u0661", None), ("\uff11", None), ("1e0", 1), ("+2", 2),
                                         ("2.", 2), (".0", 0)])
def test_a_grade_is_a_plain_ascii_number(tmp_path, grade, read):
    """``float()`` reads '1_0' as 10 and other scripts' digits ('\u0661', fullwidth '1') as numbers: refused."""
    from normscope.data.beir import load_qrels

    q = tmp_path / "test.tsv"
    q.write_text(f"query-id\tcorpus-id\tscore\nq1\ta\t{grade}\n", encoding="utf-8")
    if read is None:
        with pytest.raises(DataError, match=rf"test\.tsv:2: score '{grade}' is not a plain number"):
            load_qrels(q)
    else:
        assert load_qrels(q) == {"q1": {"a": read}}


def _cli_error(argv, capsys) -> str:
    from normscope.cli import run

    capsys.readouterr()
    assert run(argv) == 2
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.startswith("error:")]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


@pytest.fixture
def beir_dir(tmp_path):
    def make(qrels: str):
        b = tmp_path / "beir"
        (b / "qrels").mkdir(parents=True, exist_ok=True)
        (b / "corpus.jsonl").write_text("".join(json.dumps({"_id": f"d{i}", "text": f"doc {i}"}) + "\n" for i in range(6)))
        (b / "queries.jsonl").write_text("".join(json.dumps({"_id": f"q{i}", "text": f"query {i}"}) + "\n" for i in range(3)))
        (b / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + qrels)
        return b
    return make


def test_calibrate_never_suggests_a_grade_scale_option_it_lacks(beir_dir, capsys):
    b = beir_dir("q0\td0\t1.5\nq1\td1\t0.5\n")
    line = _cli_error(["calibrate", "--dataset", str(b)], capsys)
    assert "--grade-scale" not in line
    assert line.endswith("test.tsv:2: grade '1.5' is not an integer (2 such lines); `normscope calibrate` reads "
                         "integer grades only (its label is grade >= 1, unscaled): write the grades as integers in the "
                         "qrels file"), line
    from normscope.cli import run

    capsys.readouterr()
    assert run(["retrieval", "--dataset", str(b), "--fit-split", "cv"]) == 2  # retrieval has the option: suggested
    assert "--grade-scale 2" in capsys.readouterr().err


def test_calibrate_refuses_an_underscore_grade(beir_dir, capsys):
    b = beir_dir("q0\td0\t1\nq1\td1\t1_0\n")
    assert "score '1_0' is not a plain number" in _cli_error(["calibrate", "--dataset", str(b)], capsys)


# ---------------------------------------------------------------------------------------------------------
# a read-only HOME
# ---------------------------------------------------------------------------------------------------------


def test_data_list_with_a_read_only_home(tmp_path):
    """``data list`` (and ``data path``) with HOME on a read-only file system and no NORMSCOPE_CACHE: the table,
    exit 0 (it used to try to create ~/.cache/normscope and end in a traceback)."""
    home = tmp_path / "home"
    home.mkdir()
    mounted = os.geteuid() == 0 and shutil.which("mount") is not None and subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(home)], capture_output=True).returncode == 0
    if not mounted:
        if os.geteuid() == 0:
            pytest.skip("root without CAP_SYS_ADMIN: cannot make a read-only HOME")
        home.chmod(0o555)
    try:
        env = {k: v for k, v in os.environ.items() if k not in ("NORMSCOPE_CACHE", "XDG_CACHE_HOME")}
        env.update(HOME=str(home), PYTHONPATH=os.pathsep.join(sys.path))
        r = subprocess.run([sys.executable, "-m", "normscope", "data", "list"], capture_output=True, text=True, env=env)
        assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
        assert "scifact" in r.stdout and "nfcorpus" in r.stdout
        assert not any(home.iterdir())
    finally:
        if mounted:
            if subprocess.run(["umount", str(home)]).returncode != 0:
                subprocess.run(["umount", "-l", str(home)])
        else:
            home.chmod(0o755)
