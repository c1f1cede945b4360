"""The report without its data: one line per missing dataset (what it stops, how to get it), no library exception
text, a final summary that fits one screen (<= 40 rows) whatever happened, and the claims counted.

Tiny runs: the stages that need data stop at once (offline, or the mirror is a closed port on 127.0.0.1), so only
the model's set-up runs. No test reaches the network.
"""

from __future__ import annotations

import json
import math
import socket

import pytest

#: Text of the network stack's exceptions (requests / urllib3 / socket / pip) that must not reach the user.
RAW = ("Traceback", "HTTPConnectionPool", "HTTPSConnectionPool", "Max retries", "NewConnectionError",
       "NameResolutionError", "Errno", "urllib3", "requests.exceptions", "Retrying (Retry(")
MISSING_TITLES = {"wordnet": "WordNet 3.0", "scifact": "SciFact (BEIR)", "chaosnli": "ChaosNLI v1.0",
                  "concreteness": "Brysbaert et al. 2014 concreteness ratings", "simlex-999": "SimLex-999"}
DATA_STAGES = "setup,probes,transformer,signals,similarity,retrieval"


def _joined(text: str) -> list[str]:
    """The lines of ``text`` with each indented continuation row joined to the line it continues."""
    out: list[str] = []
    for ln in text.splitlines():
        if ln.startswith("    ") and out:
            out[-1] += " " + ln.strip()
        else:
            out.append(ln)
    return out


def _rows(text: str, width: int) -> int:
    """Screen rows ``text`` takes on a terminal ``width`` columns wide (long lines wrap)."""
    return sum(max(1, math.ceil(len(line) / width)) for line in text.splitlines())


def _all_unavailable(preset: str, seconds: float) -> tuple[dict, dict]:
    """A summary and stage records of a report whose every stage was unavailable ("needs data")."""
    from normscope.report.stage import StageRecord
    from normscope.report.stages import STAGES
    from normscope.values import Status

    summary = {"report": {"model": "m", "preset": preset, "seconds": seconds, "stages_run": [st.name for st in STAGES],
                          "stage_cached": {st.name: False for st in STAGES}}, "what_this_says": {}}
    records = {}
    for st in STAGES:
        rec = StageRecord.error(st, Status.UNAVAILABLE, "needs data", key="k", request={}, seconds=1.0)
        for key, sec in rec.sections.items():
            summary[key] = sec.summary()
        records[st.name] = rec
    return summary, records


@pytest.fixture
def nothing_here(tmp_path, monkeypatch):
    """No data folder, an empty cache, no mirror, no NLTK data."""
    (tmp_path / "nodata").mkdir()
    monkeypatch.setenv("NORMSCOPE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("NORMSCOPE_DATA", str(tmp_path / "nodata"))
    for var in ("NORMSCOPE_DATA_MIRROR", "NORMSCOPE_WORDNET", "NORMSCOPE_OFFLINE"):
        monkeypatch.delenv(var, raising=False)
    import nltk

    def _none(*a, **k):
        raise LookupError("no NLTK data here")

    monkeypatch.setattr(nltk.data, "find", _none)
    return tmp_path


def test_offline_report_says_once_what_it_could_not_do(nothing_here, capsys):
    from normscope.cli import run

    out = nothing_here / "r"
    code = run(["--offline", "report", "--out", str(out), "--quick", "--only", DATA_STAGES,
                "--signals", "specificity,concreteness,uncertainty"])
    cap = capsys.readouterr()
    assert code == 0, cap.err
    for raw in RAW:
        assert raw not in cap.out and raw not in cap.err, raw
    assert _rows(cap.out, 140) <= 40  # printed for a 140-column console (not a terminal)
    lines = _joined(cap.out)
    for name, title in MISSING_TITLES.items():
        mine = [ln for ln in lines if ln.startswith(f"{title} is not here")]
        assert len(mine) == 1, (title, cap.out)  # once, in one short line, with its fetch command
        assert "--offline is set" in mine[0] and f"`normscope data fetch {name}`" in mine[0] and len(mine[0]) <= 140
    # the other two ways to get data, said once for all of them
    assert cap.out.count("--data DIR or NORMSCOPE_DATA=DIR") == 1 and cap.out.count("--mirror URL|DIR") == 1
    from normscope.claims import CLAIMS

    n = len(CLAIMS)
    assert f"claims: 0 of {n} tested here; {n} not testable here" in cap.out
    summary = json.loads((out / "summary.json").read_text())
    ct = summary["claims_tested"]
    assert ct["total"] == n and ct["tested"] == 0 and len(ct["not_tested"]) == n
    blocked = {m["dataset"]: sorted(m["claims"]) for m in summary["missing_data"]}
    assert blocked == {"wordnet": ["ambiguity", "corr_norm_drift", "corr_norm_heat", "req_predicts_norm", "specificity",
                                   "theorem1_transformer", "theorem1_transformer_items"],
                       "scifact": ["calibration_discrimination", "calibration_incremental", "corr_norm_drift",
                                   "corr_norm_heat", "gain_high_frequency", "gain_low_quality", "inference_cost",
                                   "norm_confidence_nauc", "req_predicts_norm", "similarity_gain"],
                       "concreteness": [], "chaosnli": ["uncertainty"], "simlex-999": ["similarity_pairs"]}
    html = (out / "index.html").read_text()
    assert f"0 of {n} claims tested" in html and html.count("is not here: --offline is set") >= 5


def test_unreachable_origins_are_named_in_words_and_kept_in_the_record(nothing_here, monkeypatch, bundled_encoder,
                                                                      capsys):
    """Not offline, but every origin refuses (the mirror is a closed port): the section reasons and the summary name
    the refusal in words; the library's text is kept in the stage record's ``detail``."""
    from rich.console import Console

    from normscope.cli.report import print_summary
    from normscope.report import ReportConfig, Sizes, run_report

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("NORMSCOPE_DATA_MIRROR", f"http://127.0.0.1:{port}")
    cfg = ReportConfig(out=nothing_here / "r", sizes=Sizes(n_boot=50), only=("probes", "similarity"))
    res = run_report(cfg, progress=False, encoder=bundled_encoder)
    sec = res.summary["similarity"]
    assert sec["status"] == "unavailable" and sec["missing"] == {
        "simlex-999": {"title": "SimLex-999", "cause": "127.0.0.1 refused the connection"}}
    assert sec["reason"].startswith("needs SimLex-999 (not here: 127.0.0.1 refused the connection); get it with "
                                    "`normscope data fetch simlex-999` (network)")
    # an unavailable stage is not cached: its record goes beside, never over, a finished stage record
    rec = json.loads((nothing_here / "r" / "stages" / "similarity.failed.json").read_text())
    assert "ConnectionError" in rec["detail"] and "ConnectionError" not in rec["reason"]
    probes = res.summary["equilibrium_theory"]
    assert sorted(probes["missing"]) == ["scifact", "wordnet"] and "for its training-like pairs" in probes["reason"]
    console = Console(record=True, width=120)
    print_summary(res, console)
    text = console.export_text()
    for raw in RAW + ("ConnectionError",):
        assert raw not in text and raw not in capsys.readouterr().err, raw
    assert text.count("refused the connection") == 3  # SimLex-999, WordNet 3.0, SciFact: one line each


def test_the_summary_fits_one_screen_whatever_happened(tmp_path):
    """Every section failed with a long, multi-line reason, a dataset missing per section, every claim: still <= 40
    rows at 80 and at 200 columns (the missing datasets shrink to one row each when their full lines do not fit)."""
    from rich.console import Console

    from normscope.cli.report import print_summary
    from normscope.claims import CLAIMS, not_testable_row
    from normscope.report.missing import availability
    from normscope.report.runner import ReportResult
    from normscope.report.stage import StageRecord
    from normscope.report.stages import SECTIONS, STAGES
    from normscope.values import Status

    long = "ValueError: " + "a very long reason " * 30 + "\nsecond line\nthird line"
    summary = {"report": {"model": "m" * 80, "preset": "full", "seconds": 12.0, "stages_run": [st.name for st in STAGES],
                          "stage_cached": {st.name: False for st in STAGES}}, "what_this_says": {}}
    records = {}
    for i, st in enumerate(STAGES):
        rec = StageRecord.error(st, Status.UNAVAILABLE if i % 2 else Status.FAILED, long, key="k", request={},
                                seconds=1.0)
        for j, (key, sec) in enumerate(rec.sections.items()):
            sec.missing = {f"data{i}_{j}": {"title": f"Dataset number {i} with a long title", "cause": long}}
            summary[key] = sec.summary()
        records[st.name] = rec
    summary["claims"] = [not_testable_row(k, long, section=sec) for k, sec in zip(CLAIMS, list(SECTIONS)[1:] * 3)]
    summary.update(availability(summary, SECTIONS))
    assert len(summary["missing_data"]) == len(SECTIONS)
    res = ReportResult(index=tmp_path / "index.html", summary_path=tmp_path / "summary.json", summary=summary,
                       records=records, seconds=1.0)
    for width in (80, 200):
        console = Console(record=True, width=width)
        print_summary(res, console)
        text = console.export_text()
        assert _rows(text, width) <= 40, (width, text)
        assert text.rstrip().endswith(str((tmp_path / "summary.json").resolve()))
        lines = _joined(text)
        for st in STAGES:  # every failure (one row) and every missing dataset (one line) listed
            if records[st.name].status is Status.FAILED:
                assert sum(ln.startswith(f"failed: {st.name}: ValueError: a very long") for ln in lines) == 1
        for i, st in enumerate(STAGES):
            for j in range(len(st.sections)):
                # one line each: in full (why it is not here) when they fit, else one row each, the causes on the page
                row = [ln for ln in lines if ln.startswith(f"Dataset number {i} ")
                       and ln.endswith(f"`normscope data fetch data{i}_{j}`")]
                assert len(row) == 1 and len(row[0]) <= 2 * width, (i, j, text)
                assert " is not here: " in row[0] or ("why each dataset is not here: on the page" in lines
                                                      and len(row[0]) <= width), (i, j, text)


def test_at_80_columns_every_tested_claim_is_listed_whole(tmp_path):
    """A fresh user's case (PyPI-only machine) at 80 columns: 10 claims tested, 4 datasets missing with long causes.
    Every tested claim is listed: its verdict whole at the start of a row, its figure and reason wrapped under it (no
    ellipsis in them); each missing dataset is one row with its fetch command; the other ways once."""
    from rich.console import Console

    from normscope.cli.report import print_summary
    from normscope.claims import CLAIMS, claim_row, judge, not_testable_row
    from normscope.report.runner import ReportResult

    summary, records = _all_unavailable("full", 12.0)
    keys = [k for k, c in CLAIMS.items() if c.sign in (1, -1)][:10]
    rows = []
    for i, k in enumerate(keys):  # reproduced, refuted and inconclusive rows
        sgn = CLAIMS[k].sign * (1, -1, 1)[i % 3]
        ci = [0.05 * sgn, 0.15 * sgn] if i % 3 != 2 else [-0.05, 0.15]
        rows.append(claim_row(k, measured=0.1 * sgn, ci=ci, judged=judge(k, 0.1 * sgn, ci)))
    rows += [not_testable_row(k, "needs data") for k in CLAIMS if k not in keys]
    summary["claims"] = rows
    summary["claims_tested"] = {"total": len(rows), "tested": len(keys), "not_tested": [k for k in CLAIMS if k not in keys],
                                "verdicts": {"reproduced": len(keys)}}
    summary["missing_data"] = [{"dataset": f"d{i}", "title": f"Dataset {i}", "sections": ["Norm-aware retrieval"],
                                "claims": keys[:i], "cause": "its host could not be resolved: " + "section, " * 20,
                                "line": "a long line " * 30} for i in range(4)]
    res = ReportResult(index=tmp_path / "index.html", summary_path=tmp_path / "summary.json", summary=summary,
                       records=records, seconds=1.0)
    console = Console(record=True, width=80)
    print_summary(res, console)
    text = console.export_text()
    lines = text.splitlines()
    assert all(len(ln) <= 80 for ln in lines if not ln.startswith(("report: ", "numbers: "))), text
    for row in rows[: len(keys)]:
        start = [i for i, ln in enumerate(lines) if ln.startswith(row["verdict"] + "  ")
                 and row["claim"][:40] in ln]
        assert len(start) == 1, (row["claim"], text)
        block = " ".join(ln.strip() for ln in lines[start[0] + 1: start[0] + 6])
        assert row["reason"] in block, (row["reason"], block)  # wrapped, never cut
    assert len({r["verdict"] for r in rows[: len(keys)]}) == 3
    for i in range(4):  # one line each (two rows at most at 80 columns), with its fetch command
        mine = [ln for ln in _joined(text) if ln.startswith(f"Dataset {i} is not here: its host could not be resolved")]
        assert len(mine) == 1 and mine[0].endswith(f"`normscope data fetch d{i}`"), text
    assert "a long line" not in text and text.count("--mirror URL|DIR") == 1
    assert f"claims: 10 of {len(CLAIMS)} tested here" in text.replace("\n", " ")


def test_a_stored_full_runs_row_says_so_on_the_console_and_in_the_count(tmp_path):
    """A row whose figure comes from a stored full run (the transformer design, the frozen tower) is not this run's:
    the console says so before its figure and the count of tested claims says how many such rows it holds; the
    page says so under the figure; summary.json carries ``stored`` only on that row."""
    from rich.console import Console

    from normscope.cli.report import print_summary
    from normscope.claims import CLAIMS, claim_row, judge, not_testable_row
    from normscope.report.runner import ReportResult

    summary, records = _all_unavailable("quick", 1.0)
    own = claim_row("frequency", measured=-0.4, ci=[-0.45, -0.35], judged=judge("frequency", -0.4, [-0.45, -0.35]))
    j = judge("theorem1_transformer", 0.0003, [0.00002, 0.0015])
    stored = claim_row("theorem1_transformer", measured=0.0003, ci=[0.00002, 0.0015], judged=j).but(
        stored="lab/results/decisive_full.json")
    rows = [own, stored] + [not_testable_row(k, "needs data") for k in CLAIMS if k not in ("frequency",
                                                                                           "theorem1_transformer")]
    summary["claims"] = rows
    summary["claims_tested"] = {"total": len(rows), "tested": 2, "not_tested": [r.key for r in rows[2:]]}
    res = ReportResult(index=tmp_path / "index.html", summary_path=tmp_path / "summary.json", summary=summary,
                       records=records, seconds=1.0)
    console = Console(record=True, width=120)
    print_summary(res, console)
    text = " ".join(console.export_text().split())
    assert f"claims: 2 of {len(rows)} tested here (1 from a stored full run);" in text
    assert ("stored full run (lab/results/decisive_full.json), not re-run by this report: "
            in text) and text.count("not re-run by this report") == 1
    as_json = [r.to_json() for r in rows[:2]]
    assert "stored" not in as_json[0] and as_json[1]["stored"] == "lab/results/decisive_full.json"
    assert type(stored).from_json(as_json[1]).stored == "lab/results/decisive_full.json"
