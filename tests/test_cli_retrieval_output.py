"""normscope retrieval on the command line: strict JSON equal to the library's result, the -o table, what the tables
print (p-values, CIs, fixed parameters), phase lines and one-line warnings in a redirected log, bad input -> exit 2."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from _retrieval_data import GRIDS, planted


def test_p_value_text_is_consistent():
    from normscope._format import p_value

    assert p_value(1.0) == "1.000" and p_value(0.04213) == "0.042" and p_value(0.5) == "0.500"
    assert p_value(2.5e-5) == "2.5e-05" and p_value(None) == "n/a" and p_value(float("nan")) == "n/a"


@pytest.fixture
def planted_cli(tmp_path, rng, monkeypatch):
    import normscope.encoders as encs
    import normscope.retrieval.evaluate as ev

    ddir, enc = planted(tmp_path / "ds", rng, with_train=False, junk_query=True, n_test=40)
    monkeypatch.setattr(encs, "load_encoder", lambda *a, **k: enc)
    monkeypatch.setattr(ev, "default_grid", lambda scorer, norms: GRIDS.get(scorer, [None]))
    return ddir, enc


def test_cli_outputs_and_log(planted_cli, tmp_path, capsys):
    from normscope.cli import run
    from _retrieval_call import run_retrieval

    ddir, enc = planted_cli
    js, out = tmp_path / "s.json", tmp_path / "run.parquet"
    argv = ["retrieval", "--dataset", str(ddir), "--scorer", "power", "--alpha", "0.05", "--n-boot", "50", "--seed", "3",
            "--json", str(js), "-o", str(out)]
    assert run(argv) == 0
    cap = capsys.readouterr()
    s = json.loads(js.read_text(), parse_constant=lambda c: pytest.fail(f"non-strict JSON token {c}"))
    with pytest.warns(UserWarning, match="cross-validation"):
        ref = run_retrieval(ddir, encoder=enc, scorers=("power", "inverse_norm"), params={"inverse_norm": 0.05}, n_boot=50,
                            seed=3, grids=GRIDS)
    assert s == json.loads(json.dumps(ref.to_dict()))
    df = pd.read_parquet(out)
    assert set(df.scorer) == {"cosine", "power", "inverse_norm"} and df["rank"].min() == 1
    pd.testing.assert_frame_equal(df, ref.items)
    # the tables: fixed parameter said so, p-values with 3 decimals, AUROC CIs, strata with Holm
    row = next(line for line in cap.out.splitlines() if line.strip("│ ").startswith("inverse_norm"))
    assert "alpha=0.05" in row and "not fitted" in row
    qn = s["calibration"]["query_norm"]
    if qn["status"] == "ok" and qn["auroc_raw_ci"]:
        assert f"[{qn['auroc_raw_ci'][0]:.3f}, {qn['auroc_raw_ci'][1]:.3f}]" in cap.out
    assert "Holm-corrected over the 12 strata" in cap.out
    # a redirected log: phase start and end lines with elapsed time, warnings on one line without a source path
    err = cap.err
    for phase in ("embedding the corpus", "power: fitting beta and searching", "calibration"):
        assert f"retrieval: {phase}" in err and f"retrieval: {phase} done in" in err
    warn = [line for line in err.splitlines() if line.startswith("warning:")]
    assert any("5-fold cross-validation" in w for w in warn) and not any(".py" in w for w in err.splitlines())
    assert "junk queries left out: 1 (test-junk)" in err
    assert f"wrote {js}, {out}" in err
    # the scorecard rows this run feeds: in the JSON (the report's rules) and one line each on stderr
    from normscope._io import to_jsonable
    from normscope.retrieval.claims import retrieval_claims

    assert [c["key"] for c in s["claims"]] == ["similarity_gain", "gain_high_frequency", "gain_low_quality",
                                                "calibration_discrimination", "calibration_incremental",
                                                "norm_confidence_nauc"]
    assert s["claims"] == json.loads(json.dumps(to_jsonable(retrieval_claims(s))))
    flat = " ".join(err.split())
    for c in s["claims"]:  # a decided row shows both verdicts; a gated one (not testable / not decided) its reason alone
        if c["verdict"] in ("reproduced", "refuted", "inconclusive"):
            assert f"claim: {c['claim']}: {c['verdict']} (direction {c['direction']}, size {c['size']}):" in flat
        else:
            assert f"claim: {c['claim']}: {c['verdict']}: {' '.join(c['reason'].split())}" in flat


def test_cli_bad_input_exit_2(planted_cli, tmp_path, capsys):
    from normscope.cli import run

    ddir, _ = planted_cli
    assert run(["retrieval", "--dataset", str(tmp_path / "missing")]) == 2
    assert run(["retrieval", "--dataset", str(ddir), "--scorer", "bm25"]) == 2
    assert run(["retrieval", "--dataset", str(ddir), "--fit-split", "test"]) == 2
    assert run(["retrieval", "--dataset", str(ddir), "--relevance", "partial"]) == 2
    assert run(["retrieval", "--dataset", str(ddir), "--json", str(tmp_path / "no" / "s.json")]) == 2
    assert run(["retrieval", "--dataset", str(ddir), "-o", str(tmp_path / "run.csv")]) == 2
    capsys.readouterr()
    assert run(["retrieval", "--dataset", str(ddir), "--junk-error", "--n-boot", "20"]) == 2
    err = capsys.readouterr().err
    assert "error: 1 junk 'test' queries found" in err and "test-junk" in err and "Traceback" not in err


def test_default_tables_fit_100_columns_and_full_prints_every_stratum(planted_cli, tmp_path, capsys):
    """The default console output fits 100 columns and still names every scorer and every confidence signal; the
    strata are one row per scorer whose count and best stratum are those of the JSON; --full prints every stratum."""
    from normscope.cli import run

    ddir, _ = planted_cli
    js = tmp_path / "s.json"
    assert run(["retrieval", "--dataset", str(ddir), "--n-boot", "50", "--json", str(js)]) == 0
    out = capsys.readouterr().out
    s = json.loads(js.read_text())
    lines = out.splitlines()
    assert max(len(x.rstrip()) for x in lines) <= 100 and len(lines) < 60
    rows = {x.strip("│ ").split(" ")[0]: x for x in lines if x.startswith("│")}
    for name, e in s["scorers"].items():
        if name != "cosine":
            rel = f"{100 * e['relative']:+.2f} % [{100 * e['relative_ci'][0]:+.2f}, {100 * e['relative_ci'][1]:+.2f}]"
            assert rel in out
    for signal in s["calibration"]:
        assert signal in rows
    for scorer, strata in s["strata"]["scorers"].items():
        apart = sum(r["p_holm"] < 0.05 for r in strata)
        best = max(strata, key=lambda r: r["relative"])
        summary = [x for x in lines if x.startswith(f"│ {scorer} ") and " of 12 " in x]
        assert len(summary) == 1 and f"{apart} of {len(strata)}" in summary[0]
        assert f"{best['stratifier']} Q{best['quartile']}" in summary[0] and f"{100 * best['relative']:+.2f} %" in summary[0]
    assert "Q1 (" not in out  # no per-stratum rows by default

    assert run(["retrieval", "--dataset", str(ddir), "--n-boot", "50", "--full"]) == 0
    full = capsys.readouterr().out
    n_rows = sum(len(v) for v in s["strata"]["scorers"].values())
    assert sum(1 for x in full.splitlines() if x.startswith("│") and " Q" in x and " (" in x) == n_rows
    def heads(text):
        return " ".join(x for x in text.splitlines() if x.startswith("┃"))

    for col in ("MRR@10", "Recall@100", "randomisat", "direction"):
        assert col in heads(full) and col not in heads(out)


def test_an_undefined_nauc_says_why():
    """nAUC is NaN when every query has the same metric (the oracle's curve is flat: nauc_normscope's rule): the table's
    n/a gets its reason on stderr (a new user saw 'n/a n/a' on a 30-document folder where every nDCG@10 was 1)."""
    import io

    import numpy as np
    from rich.console import Console

    from normscope.cli.retrieval import _print_abstention
    from normscope.retrieval.abstention import abstention_study

    ab = abstention_study({"max": np.arange(12.0), "diff1": np.ones(12)}, np.ones(12), metric_name="nDCG@10",
                          n_boot=50, use_mteb=False)
    assert all(np.isnan(e["nauc"]) for e in ab["signals"].values())
    out, err = io.StringIO(), io.StringIO()
    _print_abstention(ab, Console(file=out, width=120), Console(file=err, width=120))
    assert "n/a" in out.getvalue()
    assert ("n/a: nAUC is undefined for max, diff1: every query has the same nDCG@10 (the oracle's curve is flat"
            in " ".join(err.getvalue().split()))
