"""normscope retrieval CLI output: p-value formatting and the paths it writes (the numbers are tested in
tests/test_retrieval_pipeline.py; here the pipeline is replaced by a fixed summary so only printing is tested)."""

from __future__ import annotations

import pandas as pd


def test_fmt_p_is_consistent():
    from normscope.cli.retrieval import fmt_p

    assert fmt_p(1.0) == "1.000" and fmt_p(0.04213) == "0.042" and fmt_p(0.5) == "0.500"
    assert fmt_p(2.5e-5) == "2.5e-05" and fmt_p(None) == "-"


def test_cli_prints_p_values_and_written_paths(tmp_path, monkeypatch, capsys):
    import normscope.retrieval as retr
    from normscope.cli import run

    scorer = {"param": None, "param_name": None, "ndcg@10": 0.5, "mrr@10": 0.4, "recall@100": 0.9,
              "p_value": None, "p_value_randomization": None}
    summary = {
        "dataset_name": "planted", "split": "test", "n_queries": {"eval": 3}, "n_docs": 10, "fit_split": "train",
        "scorers": {"cosine": scorer, "dot": dict(scorer, p_value=1.0, p_value_randomization=1.0)},
        "calibration_info": {"base_rate_eval": 0.5},
        "calibration": {"query_norm": {"auroc": 0.5, "ece": 0.1, "aurc": 0.3, "aurc_optimal": 0.2}},
        "excluded_queries": {"eval": {"excluded_no_text": 0, "excluded_no_relevant": 0, "qrels_unknown_docs": 0}},
    }
    monkeypatch.setattr(retr, "run_retrieval", lambda *a, **k: (summary, pd.DataFrame({"scorer": ["cosine"]})))
    js, pq = tmp_path / "s.json", tmp_path / "r.parquet"
    assert run(["retrieval", "--dataset", str(tmp_path), "--scorer", "dot", "--json", str(js), "-o", str(pq)]) == 0
    cap = capsys.readouterr()
    dot_row = next(line for line in cap.out.splitlines() if line.strip("│ ").startswith("dot"))
    assert dot_row.count("1.000") == 2 and " 1 " not in dot_row
    assert f"wrote {js}, {pq}" in cap.err and js.is_file() and pq.is_file()
