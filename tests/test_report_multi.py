"""Several models in one report (issue 16 section 3): each model's own report, one page side by side,
a failing model does not lose the others."""

from __future__ import annotations

import json

import pytest

from normscope.report import ReportConfig, Sizes

MODELS = ["sentence-transformers/all-MiniLM-L6-v2", "hf:sentence-transformers/all-MiniLM-L6-v2"]


@pytest.fixture(scope="module")
def multi_run(tmp_path_factory):
    from normscope.report.multi import run_multi_report

    out = tmp_path_factory.mktemp("multi") / "report"
    cfg = ReportConfig(out=out, sizes=Sizes(words=40, n_boot=50, n_perm=50), only=("setup", "norms"))
    res = run_multi_report(cfg, MODELS + ["not/a-real-model"], progress=False)
    return cfg, res


def test_each_model_has_its_own_report_and_cache(multi_run):
    cfg, res = multi_run
    from normscope.encoders import model_slug

    for m in MODELS:
        sub = cfg.out / "models" / model_slug(m)
        assert (sub / "index.html").is_file() and (sub / "stages" / "norms.json").is_file()
        own = json.loads((sub / "summary.json").read_text())
        assert own["report"]["model"] == m
    assert set(res.results) == set(MODELS)


def test_a_failing_model_does_not_lose_the_others(multi_run, monkeypatch):
    cfg, res = multi_run
    assert list(res.errors) == ["not/a-real-model"] and "not/a-real-model" in res.failed
    s = json.loads((cfg.out / "summary.json").read_text(), parse_constant=lambda c: pytest.fail(f"non-strict JSON {c}"))
    assert s["report"]["failed_models"]["not/a-real-model"] == res.errors["not/a-real-model"]
    assert s["models"]["not/a-real-model"] == {"error": res.errors["not/a-real-model"]}
    page = (cfg.out / "index.html").read_text()
    assert "not/a-real-model</code> failed" in page


def test_side_by_side_numbers_are_each_models_own(multi_run):
    """The side-by-side rows hold, per model, the value of that model's own norm section; the two backends
    run the same weights (mean pooling), so their mean norms agree to float32 rounding, computed independently."""
    cfg, res = multi_run
    s = json.loads((cfg.out / "summary.json").read_text())
    rows = {r[0]: r[1:] for r in s["side_by_side"]["norm_distribution"]["rows"]}
    mean_row = next(v for k, v in rows.items() if k.startswith("mean norm"))
    for m, v in zip(MODELS, mean_row):
        assert v == pytest.approx(res.results[m].summary["norm_distribution"]["result"]["norm_mean"], rel=1e-12)
    assert mean_row[0] == pytest.approx(mean_row[1], rel=1e-5)
    assert s["side_by_side"]["norm_distribution"]["status"] == {m: "ok" for m in MODELS}
    from normscope.claims import CLAIMS

    assert set(s["claims"]) == set(MODELS) and all(len(rows) == len(CLAIMS) for rows in s["claims"].values())
    page = (cfg.out / "index.html").read_text()
    for m in MODELS:
        assert f"<th>{m}</th>" in page
    assert page.count('src="data:image/png;base64,') >= 2  # each model's norm histogram, side by side


def test_cli_several_models_and_bad_input(tmp_path, capsys):
    from normscope.cli import run

    assert run(["report", "--model", "a", "--model", "a/", "--only", "norms", "--out", str(tmp_path / "r")]) == 2
    assert "same folder name" in capsys.readouterr().err


def _pairs_files(tmp_path):
    words = [("cat", "dog", 7.0), ("car", "automobile", 9.0), ("sun", "justice", 0.5), ("tree", "forest", 6.5),
             ("bread", "butter", 6.0), ("king", "queen", 7.5), ("stone", "idea", 0.3), ("river", "stream", 8.6),
             ("cup", "mug", 8.0), ("happy", "glad", 8.8), ("cloud", "piano", 0.4), ("doctor", "nurse", 6.1)]
    ev, fit = tmp_path / "eval.txt", tmp_path / "fit.txt"
    ev.write_text("".join(f"{a}\t{b}\t{s}\n" for a, b, s in words))
    fit.write_text("".join(f"{a}\t{words[(i + 1) % len(words)][1]}\t{s}\n" for i, (a, _, s) in enumerate(words)))
    return ev, fit


def test_similarity_several_models_side_by_side_equals_single_runs(tmp_path, capsys):
    """`similarity --model A --model B`: the JSON holds each model's summary, equal to that model's own run; the
    table stacks both with a model column; a failing model is listed and does not stop the others."""
    import pandas as pd

    from normscope.cli import run

    ev, fit = _pairs_files(tmp_path)
    common = ["similarity", "--dataset", str(ev), "--fit", str(fit), "--n-boot", "50"]
    assert run(common + ["--model", MODELS[0], "--model", MODELS[1], "--model", "not/a-real-model",
                         "--json", str(tmp_path / "m.json"), "-o", str(tmp_path / "m.parquet")]) == 0
    assert "side by side" in capsys.readouterr().out
    multi = json.loads((tmp_path / "m.json").read_text())
    assert list(multi["models"]) == MODELS and list(multi["failed_models"]) == ["not/a-real-model"]
    for i, m in enumerate(MODELS):
        assert run(common + ["--model", m, "--json", str(tmp_path / f"s{i}.json")]) == 0
        single = json.loads((tmp_path / f"s{i}.json").read_text())
        assert multi["models"][m]["scorers"] == single["scorers"]
    table = pd.read_parquet(tmp_path / "m.parquet")
    assert sorted(table["model"].unique()) == sorted(MODELS)
    assert run(common + ["--model", "not/a-real-model", "--model", "also/not-real"]) == 2  # every model failed
