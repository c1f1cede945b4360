"""``normscope probe`` CLI: bad input exits 2 with one line; a small real run writes JSON + parquet."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest
import torch
from scipy import stats as sps

from normscope.cli import run


@pytest.fixture
def files(tmp_path):
    items = tmp_path / "items.txt"
    items.write_text("apple\nriver bank\nfree\nlight\nmusic\nthe theory of relativity\n")
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text(
        "dog\ta domesticated carnivorous mammal\ncat\ta small domesticated feline\nbank\ta financial institution\n"
        "river\ta large natural stream of water\npiano\ta keyboard instrument\nspring\tthe season after winter\n"
    )
    one = tmp_path / "one.tsv"
    one.write_text("alpha\nbeta\ngamma\n")
    return items, pairs, one, tmp_path


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--batches", "1"], "--batches must be >= 2"),
        (["--pairs", "ONE"], "line 1 has 1 column"),
        (["--batch-size", "1"], "--batch-size must be >= 2"),
        (["--json", "/no/such/dir/s.json"], "output directory does not exist"),
        (["--decay-mask", "biases"], "unknown decay mask 'biases'"),
    ],
)
def test_bad_input_exit_2(files, capsys, extra, message):
    items, pairs, one, _ = files
    extra = [str(one) if e == "ONE" else e for e in extra]
    argv = ["probe", str(items), *([] if "--pairs" in extra else ["--pairs", str(pairs)]), *extra]
    assert run(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and message in err and "Traceback" not in err


def test_bad_wordfreq_spec(capsys):
    assert run(["probe", "wordfreq:abc"]) == 2
    assert "wordfreq:N" in capsys.readouterr().err


def test_small_real_run_writes_consistent_outputs(files, bundled_encoder, monkeypatch, capsys):
    items, pairs, _, tmp = files
    import normscope.cli.probe

    monkeypatch.setattr(normscope.cli.probe, "load_encoder", lambda *a, **k: bundled_encoder)
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        code = run(["probe", str(items), "--pairs", str(pairs), "--batch-size", "4", "--batches", "2",
                    "--json", str(tmp / "s.json"), "-o", str(tmp / "i.parquet"), "--fig", str(tmp / "f.png")])
    finally:
        torch.set_num_threads(n)
    assert code == 0, capsys.readouterr().err
    # the progress count is what runs: K = 2 pair batches, then the weight-decay pass (3 passes, not "3 batches")
    err = capsys.readouterr().err
    assert re.search(r"^probe \(2 pair batches \+ the weight-decay term\): 3/3 passes \(100 %\), .* elapsed, ETA ",
                     err, re.M), err

    def _no_nan(tok):
        raise ValueError(f"non-strict JSON token {tok}")

    s = json.loads((tmp / "s.json").read_text(), parse_constant=_no_nan)  # strict JSON: NaN written as null
    df = pd.read_parquet(tmp / "i.parquet")
    assert len(df) == s["n_items"] == 6 and s["batches"] == 2 and s["batch_size"] == 4
    assert s["batch_size_source"] == "given (--batch-size)" and s["pairs"] == "file:pairs.tsv"
    assert s["lr_source"] == "known training value of sentence-transformers/all-MiniLM-L6-v2"
    # the JSON correlations are those of the parquet columns (independent recomputation with scipy)
    assert s["corr_norm_heat"]["pearson"] == pytest.approx(sps.pearsonr(df["r"], df["heat"]).statistic, abs=1e-9)
    assert s["corr_norm_displacement"]["spearman"] == pytest.approx(sps.spearmanr(df["r"], df["displacement"]).statistic, abs=1e-9)
    assert s["heat_cancelled_by_d2"] == pytest.approx(np.median(-2 * df["d2"] * df["r"] ** 2 / df["s"]), rel=1e-9)
    assert s["n_negative_q"] == int((df["q"] < 0).sum())
    assert (tmp / "f.png").stat().st_size > 0 and (tmp / "f_heat_drift.png").stat().st_size > 0


def test_out_must_end_in_parquet(files, capsys):
    items, pairs, _, tmp = files
    assert run(["probe", str(items), "--pairs", str(pairs), "-o", str(tmp / "i.csv")]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"error: -o/--out must be a .parquet file (the table is written as parquet), got '{tmp / 'i.csv'}'"
    assert not (tmp / "i.csv").exists()


def test_table_shows_n_and_c_fit_and_lr_source_says_where_eta_came_from(files, bundled_encoder, monkeypatch, capsys):
    items, pairs, _, tmp = files
    import normscope.cli.probe

    monkeypatch.setattr(normscope.cli.probe, "load_encoder", lambda *a, **k: bundled_encoder)
    monkeypatch.setenv("COLUMNS", "250")
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        code = run(["probe", str(items), "--pairs", str(pairs), "--batch-size", "4", "--batches", "2",
                    "--lr", "0.001", "--json", str(tmp / "s.json")])
    finally:
        torch.set_num_threads(n)
    err = capsys.readouterr().err
    assert code == 0, err
    s = json.loads((tmp / "s.json").read_text())
    assert s["lr_source"] == "given (--lr)" and s["lr"] == 0.001
    assert f"c_fit: {s['c_fit']:.3g} " in err
    from normscope.probes import ProbeResult

    req = next(line for line in err.splitlines() if ProbeResult.label("corr_req_norm") in line)
    cells = [c.strip() for c in req.strip(" │|").split("│")]
    assert cells[-2] == str(s["corr_req_norm"]["n"]) and cells[-1] == s["corr_req_norm"]["p_text"]
