"""One round trip of every rendering (issue 37 item 2): the written page, read back with an HTML parser, and the
console scorecard, read back with its colours, say what summary.json and the typed objects say.

Three reports are built through the real runner (:func:`normscope.report.run_report` /
:func:`~normscope.report.multi.run_multi_report`), the real stages' ``run`` (signals, retrieval), their real claims
builders and the real page and console, with no model and no data: the stage entry points (``run_correlate``,
``run_retrieval``) return typed results planted below, one set per model, so the two models of the side-by-side
report differ in every figure and in several verdicts. The offline report has every dataset missing.

The verdicts of the planted figures are worked out by hand (docs/report.md's rule) in ``EXPECTED``; the readers
(tests/_render_parse.py) go by structure (rows, cells, classes, colours), not by the template's words.
"""

from __future__ import annotations

import json
import re
import struct
import zlib
from pathlib import Path

import pandas as pd
import pytest
from rich.console import Console

from _render_parse import (ansi_spans, close_to_shown, css_rules, figure_parts, hex_rgb, numbers, parse_html, plain,
                           table_grid)
from normscope._io import to_jsonable
from normscope.claims import CLAIMS, DIRECTION_VERDICTS, KIND_TITLES, SIZE_VERDICTS, VERDICTS, ClaimRow
from normscope.errors import DataMissing, NormscopeError
from normscope.report import ReportConfig, Sizes, run_report
from normscope.report.summary import ReportSummary
from normscope.retrieval import RetrievalResult
from normscope.retrieval.claims import retrieval_claims
from normscope.signals import CorrelateResult

MODEL_A, MODEL_B = "planted/model-a", "planted/model-b"
NOT_TESTABLE = "not testable here"
#: The colour each verdict has in the terminal (cli/report.py's promise; docs/report.md).
TERMINAL = {"reproduced": "green", "refuted": "red", "inconclusive": "yellow"}

#: Per model: signal -> (plain rho, its CI, p, partial rho, its CI) and the retrieval figures.
PLANTED = {
    MODEL_A: {
        "signals": {"specificity": (0.25, (0.15, 0.33), 0.004, 0.21, (0.12, 0.30)),
                    "frequency": (-0.18, (-0.27, -0.08), 3.2e-05, -0.15, (-0.25, -0.05)),
                    "uncertainty": (0.04, (-0.05, 0.12), 0.41, 0.02, (-0.06, 0.10))},
        # inverse_norm: nDCG 0.4572 vs cosine 0.450 -> delta 0.0072, relative 0.0160. The relative CI meets the
        # claimed +1.2 to +2.3 %; the absolute delta's CI lies wholly below 0.012: a row or column that reads the
        # absolute value for the relative one shows a different figure and verdict.
        "scorers": {"cosine": (0.450, None, None, None, None, None),
                    "inverse_norm": (0.4572, 0.0072, (0.0040, 0.0105), 0.0160, (0.0089, 0.0233), 2.4e-05)},
    },
    MODEL_B: {
        "signals": {"specificity": (-0.22, (-0.31, -0.12), 0.0009, -0.19, (-0.28, -0.11)),
                    "frequency": (0.07, (-0.02, 0.16), 0.13, 0.05, (-0.04, 0.14)),
                    "uncertainty": (0.31, (0.22, 0.40), 6.0e-06, 0.28, (0.19, 0.37))},
        "scorers": {"cosine": (0.652, None, None, None, None, None),
                    "inverse_norm": (0.6494, -0.0026, (-0.0061, 0.0009), -0.0040, (-0.0093, 0.0014), 0.21)},
    },
}
#: Hand-worked verdicts of the planted figures: (verdict, direction, size). The signals name no direction (sign 0)
#: and claim a strong association: |rho| >= STRONG_RHO (0.3), so the size is judged on |rho|'s CI; the similarity
#: gain claims a positive direction and no size (its sized rows are gain_high_frequency / gain_low_quality).
EXPECTED = {
    MODEL_A: {"specificity": ("inconclusive", "reproduced", "undetermined"),  # CI > 0; [0.12, 0.30] reaches 0.3
              "frequency": ("refuted", "reproduced", "smaller"),  # CI < 0; |rho| wholly below 0.3
              "uncertainty": ("refuted", "inconclusive", "smaller"),  # CI holds 0 but lies wholly inside +-0.3
              "similarity_gain": ("reproduced", "reproduced", "no size claimed")},  # relative CI > 0
    MODEL_B: {"specificity": ("refuted", "reproduced", "smaller"),  # CI < 0 (no direction claimed); |rho| < 0.3
              "frequency": ("refuted", "inconclusive", "smaller"),
              "uncertainty": ("inconclusive", "reproduced", "undetermined"),  # CI > 0; [0.19, 0.37] straddles 0.3
              "similarity_gain": ("inconclusive", "inconclusive", "no size claimed")},  # relative CI holds 0
}


def _png(path: Path, w: int = 4, h: int = 3) -> Path:
    """A small valid PNG (grey), so the page embeds a real image."""
    raw = b"".join(b"\x00" + b"\x80" * w for _ in range(h))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0))
                     + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))
    return path


class _Fingerprint:
    def __init__(self, model: str) -> None:
        self.model = model

    def to_dict(self) -> dict:
        return {"model": self.model}


class _Encoder:
    """Stands for a loaded model: the stages' entry points are planted, so nothing is encoded."""

    hf_tokenizer = None  # as Encoder's: no tokenizer (the stages ask for it)

    def __init__(self, model: str) -> None:
        self.fingerprint = _Fingerprint(model)

    def at_precision(self, precision):
        return self


def _correlate(signal: str, model: str) -> CorrelateResult:
    rho, ci, p, prho, pci = PLANTED[model]["signals"][signal]
    return CorrelateResult.from_dict({
        "signal": signal, "covariate": f"{signal} covariate", "model": model, "dataset": f"{signal} items",
        "n_items": 120, "n": 118, "n_missing": 2, "missing_examples": ["x1", "x2"], "spearman": rho,
        "spearman_ci": list(ci), "p_value": p, "n_perm": 0,
        "partial_spearman": {"rho": prho, "ci": list(pci), "n": 118, "controls": ["frequency", "length"]}})


#: Per model: the inverse_norm rows of the pre-specified strata: (stratifier, quartile, cosine mean, scorer mean,
#: its CI, p (Holm)); the relative difference is scorer / cosine - 1, the absolute one scorer - cosine.
STRATA = {MODEL_A: [("query_zipf", 1, 0.40, 0.404, (-0.002, 0.010), 0.9), ("query_zipf", 4, 0.50, 0.515, (0.006, 0.024),
                                                                          0.012)],
          MODEL_B: [("query_zipf", 1, 0.62, 0.61, (-0.02, 0.0), 0.4), ("query_zipf", 4, 0.66, 0.663, (-0.004, 0.010),
                                                                        1.0)]}


def _strata(model: str) -> dict:
    rows = [{"stratifier": st, "quartile": q, "range": [q - 0.5, q + 0.5], "n": 4, "baseline_mean": base,
             "scorer_mean": mean, "mean_delta": mean - base, "mean_delta_ci": list(ci), "relative": mean / base - 1,
             "relative_ci": [ci[0] / base, ci[1] / base], "p": p, "p_holm": p}
            for st, q, base, mean, ci, p in STRATA[model]]
    return {"metric": "ndcg@10", "correction": "Holm", "scorers": {"inverse_norm": rows}}


def _retrieval(model: str) -> RetrievalResult:
    scorers = {}
    for name, (nd, d, dci, rel, relci, p) in PLANTED[model]["scorers"].items():
        scorers[name] = {"param_name": None if name == "cosine" else "alpha", "param": None if name == "cosine" else 0.3,
                         "param_source": "fitted", "fitted_on": "train", "ndcg@10": nd, "mrr@10": nd - 0.05,
                         "recall@100": 0.9, "p_value": p, "p_value_randomization": p, "delta": d,
                         "delta_ci": list(dci) if dci else None, "relative": rel,
                         "relative_ci": list(relci) if relci else None}
    summary = {"dataset": "scifact", "dataset_name": "SciFact", "model": model, "split": "test", "fit_split": "train",
               "tie_rule": "doc id", "relevance": "graded", "ignore_identical_ids": True, "identical_ids": {"test": 0},
               "n_docs": 60, "n_queries": {"eval": 15, "fit": 20}, "excluded_queries": {},
               "junk": {}, "significance": {"p_value": "paired t", "p_value_randomization": "randomisation",
                                             "delta_ci": "paired bootstrap", "n_permutations": 0},
               "scorers": scorers, "strata": _strata(model), "calibration": {},
               "calibration_info": {"label": "top-1 relevant", "fitted_on": "train", "ece_bins": 15,
                                    "mapping": "isotonic", "direction_rule": "fixed", "auroc_ci": "bootstrap"},
               "qpp": {}, "qpp_info": {}, "calibration_incremental": None}
    summary["claims"] = retrieval_claims(summary)
    res = RetrievalResult.from_dict(summary)
    res.per_query = pd.DataFrame({"query_id": [f"q{i}" for i in range(6)], "text": [f"query {i}" for i in range(6)],
                                  "query_norm": [1.0 + i / 10 for i in range(6)], "top1_doc": ["d1"] * 6,
                                  "top1_relevant": [1, 0, 1, 0, 1, 0]})
    res.doc_titles = {"d1": "A document"}
    return res


@pytest.fixture
def planted(monkeypatch):
    """The stage entry points return the planted results; ``missing=True`` makes every dataset absent."""
    import normscope.report.context as context
    import normscope.report.stages.retrieval as rstage
    import normscope.report.stages.signals as sstage

    state = {"missing": False}

    def missing(name):
        return DataMissing(f"{name} is not here", dataset=name, title=f"Dataset {name}", cause="--offline is set")

    def run_correlate(request, encoder=None, progress=False):
        if state["missing"]:
            raise missing({"specificity": "wordnet", "frequency": "wordfreq", "uncertainty": "chaosnli"}[request.signal])
        return _correlate(request.signal, request.embedding.model)

    def data_path(name):
        if state["missing"]:
            raise missing("scifact")
        return Path(".")

    monkeypatch.setattr(context, "load_encoder", lambda model, **kw: _Encoder(model))
    monkeypatch.setattr(sstage, "run_correlate", run_correlate)
    monkeypatch.setattr(sstage, "plot_signal", lambda res, path: _png(Path(path)))

    def not_planted(*args, **kwargs):  # ambiguity and CLS-vs-mean pooling: rows not testable here (no model)
        raise NormscopeError("not planted in this test")

    monkeypatch.setattr(sstage, "run_ambiguity", not_planted)
    monkeypatch.setattr(sstage, "pooling_trends", not_planted)
    monkeypatch.setattr(rstage, "data_path", data_path)
    monkeypatch.setattr(rstage, "run_retrieval", lambda request, encoder=None, progress=False:
                        _retrieval(request.embedding.model))
    monkeypatch.setattr(rstage, "measure_cost", lambda res, enc: (None, "not measured in this test"))
    return state


_SIGNALS = ("specificity", "frequency", "uncertainty")


def _config(out: Path, model: str = MODEL_A) -> ReportConfig:
    return ReportConfig(out=out, model=model, sizes=Sizes(words=40, n_boot=50, n_perm=50),
                        only=("signals", "retrieval"), signals=_SIGNALS)


def _console(width: int = 200) -> Console:
    return Console(record=True, width=width, force_terminal=True, color_system="standard")


# --- the expected content, from summary.json and the typed objects --------------------------------------------------


def _summary_from_disk(res) -> ReportSummary:
    on_disk = json.loads(Path(res.summary_path).read_text(encoding="utf-8"))
    assert on_disk == json.loads(json.dumps(to_jsonable(res.summary))), "summary.json is not the summary the page was rendered from"
    return ReportSummary.from_json(on_disk)


def _check_hand_verdicts(rows: list[ClaimRow], model: str) -> None:
    by_key = {r.key: r for r in rows}
    assert list(by_key) == list(CLAIMS), "one scorecard row per claim, in CLAIMS order"
    for key, (verdict, direction, size) in EXPECTED[model].items():
        r = by_key[key]
        assert (r.verdict, r.direction, r.size) == (verdict, direction, size), (model, key, r)
    for sig in _SIGNALS:  # the controlled (partial) figure is the row's, with its CI, in order
        prho, pci = PLANTED[model]["signals"][sig][3:]
        assert by_key[sig].measured == prho and tuple(by_key[sig].ci) == pci
    rel, relci = PLANTED[model]["scorers"]["inverse_norm"][3:5]
    assert by_key["similarity_gain"].measured == rel and tuple(by_key["similarity_gain"].ci) == relci
    assert by_key["similarity_gain"].percent is True
    for key in EXPECTED[model]:  # the reasoning quotes the row's own interval (the one its verdict was judged on)
        r = by_key[key]
        quoted = re.findall(r"CI (\[[^\]]*\])", r.why or "")
        assert quoted, (key, r.why)
        for q in quoted:
            lo, hi = figure_parts("0 " + q)[1]
            scale = 100.0 if "%" in q else 1.0
            assert close_to_shown(lo, scale * r.ci.lo) and close_to_shown(hi, scale * r.ci.hi), (key, q, r.ci, r.why)


# --- the page --------------------------------------------------------------------------------------------------------


def _scorecard(page):
    """The claims table: the table with class ``claims``."""
    table = page.find("table", "claims")
    assert table is not None, "no scorecard table (class claims) on the page"
    return table_grid(table)


def _column(head: list[str], word: str) -> int:
    hits = [i for i, h in enumerate(head) if word in h.lower()]
    assert hits, f"no column {word!r} in {head}"
    return hits[0]


def _check_figure(text: str, row: ClaimRow, where: str) -> None:
    """A figure cell: the estimate and its CI, ends in order, in the row's unit (percent for a relative gain)."""
    est, ci = figure_parts(text)
    scale = 100.0 if row.percent else 1.0
    assert est is not None and close_to_shown(est, scale * row.measured, digits=2 if row.percent else 3), \
        (where, row.key, text, row.measured)
    assert ci is not None, (where, row.key, text)
    lo, hi = ci
    assert lo <= est <= hi or not (row.ci.lo <= row.measured <= row.ci.hi), (where, row.key, text)
    assert lo < hi, f"{where} {row.key}: CI ends out of order: {text}"
    assert close_to_shown(lo, scale * row.ci.lo, digits=2 if row.percent else 3), (where, row.key, text)
    assert close_to_shown(hi, scale * row.ci.hi, digits=2 if row.percent else 3), (where, row.key, text)
    if row.percent:
        assert "%" in text, (where, row.key, text)


def _verdict_colours(page) -> dict[str, tuple[int, int, int]]:
    """The colour the page's CSS gives each verdict's row (its background or text colour)."""
    out = {}
    for sel, props in css_rules(page):
        for v in VERDICTS:
            if re.search(r"\.verdict-" + re.escape(v.replace(" ", "-")) + r"(?![\w-])", sel):
                colour = props.get("background") or props.get("background-color") or props.get("color")
                rgb = hex_rgb(colour.split()[0]) if colour else None
                if rgb is not None:
                    out.setdefault(v, rgb)
    return out


def _check_count(texts: list[str], rows: list[ClaimRow], tested_field, where: str) -> None:
    """The headline count: the first text (a page paragraph, a console line) that says "N of M ... tested". Its
    "N of M" pairs must be the whole scorecard (one pair) or add up to it (one pair per kind of row)."""
    tested = sum(r.verdict != NOT_TESTABLE for r in rows)
    line = next((t for t in texts if re.search(r"\d+ of \d+\b[^.\n]*?tested", t)), None)
    assert line is not None, f"{where}: no 'N of M ... tested' count"
    pairs = [(int(a), int(b)) for a, b in re.findall(r"(\d+) of (\d+)\b", line)]
    whole = (tested, len(rows))
    assert whole in pairs or tuple(map(sum, zip(*pairs))) == whole, (where, line, whole)
    assert (tested_field.tested, tested_field.total) == whole, "summary.json's claims_tested"


def _check_page(index: Path, s: ReportSummary, res, model: str) -> None:
    page = parse_html(index.read_text(encoding="utf-8"))
    rows = s.claims
    head, grid = _scorecard(page)
    assert [cells[0].text_without("meta") for _, cells in grid] == [r.claim for r in rows], \
        "page rows != summary.json rows"
    for (_, cells), r in zip(grid, rows):  # a row of another kind than the paper's says its kind under the claim
        labels = [sp.text() for sp in cells[0].find_all("span", "meta")]
        assert labels == ([] if r.kind in (None, "paper") else [KIND_TITLES[r.kind]]), (r.key, r.kind, labels)
    fig_col, verdict_col = _column(head, "this run"), _column(head, "verdict")
    for (tr, cells), r in zip(grid, rows):
        verdict_cell = cells[verdict_col]
        bold = verdict_cell.find("b")
        assert bold is not None and bold.text() == r.verdict, (r.key, verdict_cell.text(), r.verdict)
        assert "verdict-" + r.verdict.replace(" ", "-") in tr.classes, (r.key, tr.classes)
        assert [c for c in tr.classes if c.startswith("verdict-")] == ["verdict-" + r.verdict.replace(" ", "-")]
        if r.measured is not None:
            _check_figure(cells[fig_col].text(), r, "page")
            labels = verdict_cell.text()[len(r.verdict):]
            d_at, s_at = labels.find("direction"), labels.find("size")
            assert 0 <= d_at < s_at, (r.key, labels)
            d_text, s_text = labels[d_at:s_at], labels[s_at:]
            assert r.direction.replace("no direction claimed", "none claimed") in d_text, (r.key, labels)
            assert r.size.replace("no size claimed", "none claimed") in s_text, (r.key, labels)
            assert not any(w in d_text for w in SIZE_VERDICTS if w != "no size claimed"), (r.key, labels)
            assert not any(w in s_text for w in DIRECTION_VERDICTS if w not in ("no direction claimed", "not tested")), \
                (r.key, labels)
        else:
            assert not numbers(cells[fig_col].text().replace("95%", "")), (r.key, cells[fig_col].text())
    colours = _verdict_colours(page)
    green, red = colours.get("reproduced"), colours.get("refuted")
    assert green is not None and red is not None, f"no CSS colour for the verdict rows: {colours}"
    assert green[1] > green[0] and red[0] > red[1], f"verdict colours: reproduced {green}, refuted {red}"
    _check_count([p.text() for p in page.find_all("p")], rows, s.claims_tested, "page")
    items = [li.text() for ul in page.find_all("ul", "notes") for li in ul.find_all("li")]
    for m in s.missing_data or []:
        assert m.line in items, ("missing-data line not on the page", m.line)
    _check_sections(page, s, res, model)


def _section_tables(page, key: str):
    sec = page.find("section", id=f"sec-{key}")
    assert sec is not None, f"no section {key}"
    return sec, [t for t in sec.find_all("table") if "kv" not in t.classes and "key" not in t.classes]


def _check_sections(page, s: ReportSummary, res, model: str) -> None:
    for key in ("semantic_signals", "retrieval"):
        entry = s.section(key)
        sec, tables = _section_tables(page, key)
        assert any(f"status-{entry.status}" in sp.classes for sp in sec.find_all("span", "status")), (key, entry.status)
        if entry.status != "ok":
            continue
        kn = sec.find("table", "key")  # the key numbers: each row's value is summary.json's
        if kn is not None:
            _, grid = table_grid(kn)
            for (_, cells), (label, value, _unit) in zip(grid, entry.key_numbers, strict=True):
                assert cells[0].text() == label
                if isinstance(value, float):
                    assert close_to_shown(numbers(cells[1].text())[0], value), (key, label, cells[1].text())
        if key == "semantic_signals":
            _check_signal_table(tables[0], model)
        else:
            _check_scorer_table(tables[0], model)
            _check_strata_table(next(t for t in tables if "strat" in table_grid(t)[0][0].lower()), model)


def _p_shown(text: str, p: float) -> None:
    """A p value is never written as 0 when it is not 0, and is the value to its precision."""
    shown = numbers(text.replace("1/", "").split("<")[-1] if "<" in text else text)
    assert shown, text
    if "<" not in text:
        assert shown[-1] > 0 and close_to_shown(shown[-1], p), (text, p)


def _check_signal_table(table, model: str) -> None:
    head, grid = table_grid(table)
    rho_col = next(i for i, h in enumerate(head) if "\u03c1" in h and "partial" not in h and "length" not in h)
    ci_cols = [i for i, h in enumerate(head) if "ci" in h.lower()]
    p_col = next(i for i, h in enumerate(head) if h.strip().lower() == "p")
    partial_col = next(i for i, h in enumerate(head) if "partial" in h)
    seen = []
    for _, cells in grid:
        sig = cells[0].text()
        rho, ci, p, prho, pci = PLANTED[model]["signals"][sig]
        seen.append(sig)
        assert close_to_shown(numbers(cells[rho_col].text())[0], rho), (sig, cells[rho_col].text())
        lo, hi = numbers(cells[ci_cols[0]].text())
        assert (lo < hi) and close_to_shown(lo, ci[0]) and close_to_shown(hi, ci[1]), (sig, cells[ci_cols[0]].text())
        _p_shown(cells[p_col].text(), p)
        assert close_to_shown(numbers(cells[partial_col].text())[0], prho), (sig, cells[partial_col].text())
        lo, hi = numbers(cells[ci_cols[1]].text())
        assert (lo < hi) and close_to_shown(lo, pci[0]) and close_to_shown(hi, pci[1]), (sig, cells[ci_cols[1]].text())
    assert sorted(seen) == sorted(_SIGNALS)  # each signal once (in the stage's order)


def _check_scorer_table(table, model: str) -> None:
    head, grid = table_grid(table)
    low = [h.lower() for h in head]
    rel_col = next(i for i, h in enumerate(low) if "relative" in h)
    delta_col = next(i for i, h in enumerate(low) if h.startswith("\u03b4") or h.startswith("delta"))
    ci_col = next(i for i, h in enumerate(low) if "ci" in h)
    p_cols = [i for i, h in enumerate(low) if h.startswith("p ") or h == "p" or h.startswith("p (")]
    nd_col = next(i for i, h in enumerate(low) if h == "ndcg@10")
    assert p_cols, head
    for _, cells in grid:
        name = cells[0].text()
        nd, d, dci, rel, relci, p = PLANTED[model]["scorers"][name]
        assert close_to_shown(numbers(cells[nd_col].text())[0], nd), (name, cells[nd_col].text())
        if d is None:
            continue
        assert close_to_shown(numbers(cells[delta_col].text())[0], d), (name, cells[delta_col].text())
        shown_rel = cells[rel_col].text()
        assert "%" in shown_rel and close_to_shown(numbers(shown_rel)[0], 100 * rel, digits=2), (name, shown_rel, rel)
        lo, hi = numbers(cells[ci_col].text())
        assert lo < hi and close_to_shown(lo, dci[0]) and close_to_shown(hi, dci[1]), (name, cells[ci_col].text())
        for c in p_cols:
            _p_shown(cells[c].text(), p)


def _check_strata_table(table, model: str) -> None:
    """The strata table: the absolute difference, its CI and the relative difference, each its own column."""
    head, grid = table_grid(table)
    low = [h.lower() for h in head]
    rel_col = next(i for i, h in enumerate(low) if "relative" in h)
    delta_col = next(i for i, h in enumerate(low) if h == "\u03b4" or h.startswith("delta"))
    ci_col = next(i for i, h in enumerate(low) if "ci" in h)
    assert len(grid) == len(STRATA[model])
    for (_, cells), (_st, _q, base, mean, ci, _p) in zip(grid, STRATA[model]):
        assert close_to_shown(numbers(cells[delta_col].text())[0], mean - base), cells[delta_col].text()
        shown = cells[rel_col].text()
        assert "%" in shown and close_to_shown(numbers(shown)[0], 100 * (mean / base - 1), digits=2), (shown, base, mean)
        lo, hi = numbers(cells[ci_col].text())
        assert lo < hi and close_to_shown(lo, ci[0]) and close_to_shown(hi, ci[1]), cells[ci_col].text()


# --- the console -----------------------------------------------------------------------------------------------------


def _leading_verdict(span: str) -> str | None:
    """The verdict a span starts with (``"refuted       The norm ..."`` -> ``"refuted"``), else None."""
    s = span.lstrip()
    hits = [v for v in VERDICTS if s == v or s.startswith(v + " ")]
    return max(hits, key=len) if hits else None


def _console_claim_blocks(text: str) -> list[tuple[str, str, str | None, str]]:
    """The scorecard blocks of the console: a line that starts with a verdict (its span coloured), then the
    indented lines under it (the figure [CI] and the reason, wrapped). ``[(head line, verdict, colour, body)]``,
    the body's wrapped lines joined."""
    out = []
    lines = text.splitlines()
    for k, line in enumerate(lines):
        spans = ansi_spans(line)
        first = next(((sp, colour) for sp, colour, _ in spans if sp.strip()), None)
        if first is None or first[0][:1].isspace() or _leading_verdict(first[0]) is None:
            continue
        body = []
        for nxt in lines[k + 1:]:
            if not plain(nxt).startswith(" ") or not plain(nxt).strip():
                break
            body.append(plain(nxt).strip())
        out.append((plain(line), _leading_verdict(first[0]), first[1], " ".join(body)))
    return out


def _check_console(text: str, s: ReportSummary) -> None:
    rows = s.claims
    tested = [r for r in rows if r.verdict != NOT_TESTABLE]
    blocks = _console_claim_blocks(text)
    assert len(blocks) == len(tested), (len(blocks), [r.key for r in tested], text)
    for (line, verdict, colour, body), r in zip(blocks, tested):
        assert verdict == r.verdict, (r.key, line)
        assert colour == TERMINAL.get(r.verdict), (r.key, r.verdict, colour)
        claim_words = r.claim.split()
        assert " ".join(claim_words[:2]) in " ".join(line.split()), (r.key, line)  # the row's claim (cut or not)
        if r.measured is not None:
            _check_figure(body, r, "console")  # the figure [CI] is never cut
    _check_count(plain(text).splitlines(), rows, s.claims_tested, "console")
    logical = re.sub(r"\n {4}(?=\S)", " ", plain(text))  # a missing-data row wraps onto an indented second row
    for m in s.missing_data or []:  # one row per dataset: its title, the claims it leaves untested, its fetch command
        row = next((ln for ln in logical.splitlines() if f"`normscope data fetch {m.dataset}`" in ln), None)
        assert row is not None, ("missing-data row not printed", m.dataset, logical)
        assert row.startswith(" ".join(str(m.title or m.dataset).split()) + " is not here"), (m.dataset, row)
        n = len(m.claims or [])
        assert (f"{n} claim{'s' if n != 1 else ''} untested" in row) == bool(n), (m.dataset, n, row)


# --- the tests -------------------------------------------------------------------------------------------------------


def test_single_model_page_and_console_say_what_summary_json_says(planted, tmp_path):
    from normscope.cli.report import print_summary

    res = run_report(_config(tmp_path / "a"), progress=False)
    s = _summary_from_disk(res)
    _check_hand_verdicts(s.claims, MODEL_A)
    _check_page(res.index, s, res, MODEL_A)
    console = _console()
    print_summary(res, console)
    _check_console(console.export_text(styles=True), s)


def test_side_by_side_page_and_console_put_each_models_figures_under_it(planted, tmp_path):
    from normscope.cli.report import print_multi_summary
    from normscope.report.multi import run_multi_report

    res = run_multi_report(_config(tmp_path / "m"), [MODEL_A, MODEL_B], progress=False)
    on_disk = json.loads(Path(res.summary_path).read_text(encoding="utf-8"))
    assert on_disk == json.loads(json.dumps(to_jsonable(res.summary)))
    models = on_disk["report"]["models"]
    assert models == [MODEL_A, MODEL_B]
    rows = {m: [ClaimRow.from_json(r) for r in on_disk["claims"][m]] for m in models}
    for m in models:
        _check_hand_verdicts(rows[m], m)
        own = ReportSummary.from_json(json.loads((res.index.parent / on_disk["report"]["folders"][m] / "summary.json")
                                                 .read_text(encoding="utf-8")))
        assert [r.to_json() for r in own.claims] == [r.to_json() for r in rows[m]], "combined != the model's own"
    page = parse_html(res.index.read_text(encoding="utf-8"))
    head, grid = _scorecard(page)
    cols = {m: head.index(m) for m in models}
    assert [cols[m] for m in models] == sorted(cols.values())
    assert [cells[0].text() for _, cells in grid] == [c.claim for c in CLAIMS.values()]
    for i, (_, cells) in enumerate(grid):
        for m in models:
            r, cell = rows[m][i], cells[cols[m]]
            bold = cell.find("b")
            assert bold is not None and bold.text() == r.verdict, (m, r.key, cell.text())
            if r.measured is not None:
                _check_figure(cell.text(), r, f"side-by-side page ({m})")
    # the side-by-side section tables: one column per model, each model's own key numbers
    for key in ("semantic_signals", "retrieval"):
        sec, tables = _section_tables(page, key)
        shead, sgrid = table_grid(tables[0])
        assert shead[1:] == models, shead
        for m in models:
            own = ReportSummary.from_json(json.loads(
                (res.index.parent / on_disk["report"]["folders"][m] / "summary.json").read_text())).section(key)
            by_label = {label: value for label, value, _unit in own.key_numbers}
            for _, cells in sgrid[1:]:
                want = by_label.get(cells[0].text())
                if isinstance(want, float):
                    assert close_to_shown(numbers(cells[shead.index(m)].text())[0], want), (m, key, cells[0].text())
    console = _console()
    print_multi_summary(res, console)
    text = plain(console.export_text(styles=True))
    lines = text.splitlines()
    # one block per claim some model tested, in CLAIMS order: the claim, then one row per model (in the report's
    # order): its name, then its cell (figure [CI] verdict, never cut); the claims no model tested are counted
    keys = [k for k in CLAIMS if any(next(x for x in rows[m] if x.key == k).verdict != NOT_TESTABLE for m in models)]
    k = 0
    for key in keys:
        c = CLAIMS[key]
        while k < len(lines) and " ".join(c.claim.split()[:2]) not in " ".join(lines[k].split()):
            k += 1
        assert k < len(lines), (key, "claim line not printed", text)
        model_rows = lines[k + 1: k + 1 + len(models)]
        named = [next((m for m in models if re.search(re.escape(m) + r"(\s|$)", line)), None) for line in model_rows]
        assert named == models, (key, model_rows)
        for m, line in zip(models, model_rows):
            r = next(x for x in rows[m] if x.key == key)
            cell = line.split(m, 1)[1]
            assert r.verdict in cell, (m, key, cell)
            if r.measured is not None:
                _check_figure(cell, r, f"side-by-side console ({m})")
        k += 1 + len(models)
    n_untested = len(CLAIMS) - len(keys)
    if n_untested:
        assert any(line.startswith(f"{n_untested} claims not testable here") for line in lines), text


def test_offline_report_page_and_console_count_nothing_tested_and_name_every_missing_dataset(planted, tmp_path):
    from normscope.cli.report import print_summary

    planted["missing"] = True
    res = run_report(_config(tmp_path / "off"), progress=False)
    s = _summary_from_disk(res)
    assert {m.dataset for m in s.missing_data} == {"wordnet", "wordfreq", "chaosnli", "scifact"}
    assert all(r.verdict == NOT_TESTABLE for r in s.claims if r.key in EXPECTED[MODEL_A])
    _check_page(res.index, s, res, MODEL_A)
    console = _console()
    print_summary(res, console)
    _check_console(console.export_text(styles=True), s)
