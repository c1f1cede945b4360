"""nAUC (MTEB's abstention metric) of the confidence functions and the norm signals; the scorecard row.

Planted per-query scores, no model: values checked against mteb's own functions on the same inputs and
against a hand computation."""

from __future__ import annotations

import numpy as np
import pytest

from normscope.errors import InputError
from normscope.retrieval.abstention import (abstention_study, confidence_normscope, confidence_table, mteb_functions,
                                            nauc, nauc_normscope)


def _mteb():
    f = mteb_functions()
    if f is None:
        pytest.skip("mteb is not importable")
    return f


def test_nauc_equals_mteb_on_the_same_inputs_with_ties():
    mteb_nauc, mteb_conf, _ = _mteb()
    rng = np.random.default_rng(3)
    m = rng.integers(0, 4, 57) / 3.0  # graded metric with many ties
    c = np.round(rng.normal(size=57), 1)  # confidences with ties: the tie rule (group means) matters
    expected = float(mteb_nauc(c, m))
    assert nauc(c, m) == expected
    assert nauc_normscope(c, m) == pytest.approx(expected, abs=1e-12)
    for scores in ([0.9, 0.5, 0.4], [0.3, 0.3, 0.1, -0.2], [0.7], []):
        assert confidence_normscope(scores) == pytest.approx(mteb_conf(scores))


def test_nauc_by_hand():
    # 10 queries, one with metric 1 and the least confident: abstaining 10 % removes it and the curve drops to 0
    m = np.zeros(10)
    m[0] = 1.0
    c = np.arange(10.0)
    rates = np.linspace(0, 1, 11)[:-1]
    auc = 0.5 * 0.1 * (0.1 + 0.0)  # trapezoid: 0.1 at rate 0, then 0
    oracle = np.array([1 / (10 - k) for k in range(10)])  # the oracle keeps the good query to the end
    auc_or = float(np.sum((oracle[1:] + oracle[:-1]) / 2 * np.diff(rates)))
    flat = 0.1 * 0.9
    expected = (auc - flat) / (auc_or - flat)
    assert expected == pytest.approx(-0.5747, abs=1e-4)
    for use in (True, False):
        assert nauc(c, m, use_mteb=use) == pytest.approx(expected, abs=1e-12)
        assert nauc(m, m, use_mteb=use) == pytest.approx(1.0)  # the oracle itself
        assert nauc(np.ones(10), m, use_mteb=use) == pytest.approx(0.0)  # one tie group: the flat curve
    assert np.isnan(nauc_normscope(c, np.ones(10)))  # every query equal: no oracle gain, undefined


def test_confidence_table_reads_each_querys_scores():
    run = {"q1": {"a": 0.9, "b": 0.5, "c": 0.4}, "q2": {"a": 0.2, "b": 0.2}}
    for use in (True, False):
        t = confidence_table(run, ["q2", "q1"], use_mteb=use)
        assert t["max"].tolist() == pytest.approx([0.2, 0.9])
        assert t["diff1"].tolist() == pytest.approx([0.0, 0.4])
        assert t["std"].tolist() == pytest.approx([0.0, np.std([0.9, 0.5, 0.4])])


def _planted(n=200, seed=0):
    rng = np.random.default_rng(seed)
    m = rng.uniform(size=n)
    return m, {"max": m + rng.normal(0, 0.3, n), "std": rng.normal(size=n), "diff1": m + rng.normal(0, 0.6, n)}


def test_study_norm_above_and_below_the_best_baseline():
    m, conf = _planted()
    up = abstention_study({**conf, "query_norm": m.copy()}, m, n_boot=200, seed=1)
    c = up["comparison"]
    assert up["signals"]["query_norm"]["nauc"] == pytest.approx(1.0)
    assert c["best_baseline"] == "max" and c["position"] == "above" and c["ci"][0] > 0
    assert c["diff"] == pytest.approx(1.0 - up["signals"]["max"]["nauc"])
    assert up["signals"]["max"]["nauc_ci"][0] <= up["signals"]["max"]["nauc"] <= up["signals"]["max"]["nauc_ci"][1]
    down = abstention_study({**conf, "query_norm": np.random.default_rng(9).normal(size=m.size)}, m, n_boot=200, seed=1)
    assert down["comparison"]["position"] == "below" and down["comparison"]["ci"][1] < 0
    # the fallback gives the same study; a permutation of the queries leaves every nAUC unchanged
    own = abstention_study({**conf, "query_norm": m.copy()}, m, n_boot=200, seed=1, use_mteb=False)
    assert own["signals"]["max"]["nauc"] == pytest.approx(up["signals"]["max"]["nauc"], abs=1e-12)
    assert own["comparison"]["ci"] == pytest.approx(c["ci"], abs=1e-12)
    p = np.random.default_rng(4).permutation(m.size)
    perm = abstention_study({k: v[p] for k, v in {**conf, "query_norm": m}.items()}, m[p], n_boot=50, seed=1)
    assert {k: v["nauc"] for k, v in perm["signals"].items()} == pytest.approx(
        {k: v["nauc"] for k, v in up["signals"].items()})
    with pytest.raises(InputError, match="at least 10 queries"):
        abstention_study({"max": m[:5]}, m[:5])
    with pytest.raises(InputError, match="has 3 values"):
        abstention_study({"max": m[:3]}, m)


def test_scorecard_row_verdicts():
    from normscope.retrieval.claims import nauc_claim

    m, conf = _planted()
    base = {"model": "m", "dataset_name": "d", "split": "test", "fit_split": "train", "n_queries": {"eval": 200}}
    row = nauc_claim({**base, "abstention": abstention_study({**conf, "query_norm": m.copy()}, m, n_boot=200, seed=1)})
    assert row["key"] == "norm_confidence_nauc" and row["verdict"] == "reproduced" and row["section"] == "calibration"
    assert "above max's CI" in row["beside"]
    noise = np.random.default_rng(9).normal(size=m.size)
    row = nauc_claim({**base, "abstention": abstention_study({**conf, "query_norm": noise}, m, n_boot=200, seed=1)})
    assert row["verdict"] == "refuted" and "below max's CI" in row["beside"]
    within = abstention_study({**conf, "query_norm": conf["max"] + np.random.default_rng(2).normal(0, 0.02, m.size)}, m,
                              n_boot=200, seed=1)
    row = nauc_claim({**base, "abstention": within})
    assert within["comparison"]["position"] == "within" and row["verdict"] == "inconclusive"
    assert nauc_claim(base)["verdict"] == "not testable here"


def test_report_table_and_console_table():
    import io

    from rich.console import Console

    from normscope.cli.retrieval import _print_abstention
    from normscope.report.stages.retrieval import qpp_tables
    from normscope.retrieval import RetrievalResult

    m, conf = _planted()
    ab = abstention_study({**conf, "query_norm": m.copy()}, m, depth=100, n_boot=100, seed=1)
    res = RetrievalResult.from_dict({"scorers": {}, "calibration": {}, "abstention": ab})
    (t,) = qpp_tables(res)
    assert [r[0] for r in t.rows] == ["max", "std", "diff1", "query_norm"]
    assert t.rows[3][4] == pytest.approx(1.0) and "MTEB's metric" in t.title and "depth 100" in t.title
    out, err = io.StringIO(), io.StringIO()
    _print_abstention(ab, Console(file=out, width=200), Console(file=err, width=400))
    assert "nAUC of ndcg@10 by abstention" in out.getvalue() and "1.000" in out.getvalue()
    assert "vs best MTEB confidence max" in err.getvalue() and "above its CI" in err.getvalue()
