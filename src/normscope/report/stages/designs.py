"""The signals stage's second section, ``length_designs``: text rows decided at equal length on designs of their own.

Five designs (four of issue 39, and the shuffle), each the function its ``normscope correlate`` command wraps:

- ``treecut`` / ``ruletaker``: normscope's seeded TreeCut-style problems and RuleTaker-style theories
  (:func:`normscope.signals.abstention.run_abstention`), answerable vs unanswerable items paired at equal
  token count; rows ``abstention_treecut`` / ``abstention_ruletaker``;
- ``wordnet_chains``: WordNet hypernym chains of the most frequent nouns from their depth-3 synset down
  (:func:`normscope.signals.hierarchy.run_hierarchy`), rho(level, norm) within the same chain and token count,
  every CI a bootstrap over groups of chains sharing that synset; row ``specificity_hierarchy``;
- ``feverous``: the 50 claims of the FEVEROUS dev sample (:func:`normscope.signals.feverous.run_feverous`; the
  dataset ``normscope data fetch feverous``), NOT ENOUGH INFO vs decided claims at equal token count; row
  ``abstention_feverous``;
- ``shuffle``: SciFact document titles against their word-shuffled copies (same words, so the same length in
  words; :func:`normscope.signals.shuffle.run_shuffle`), the median relative norm change; row
  ``atypical_input_shuffle`` (exploratory).

They run with the report's model and seed; their sizes are :data:`DESIGN_N` (``Sizes.design_items`` caps
them: the quick report runs 200 of each, stated on the page; FEVEROUS is its 50 claims, nothing to cap). A design
whose dataset is absent (WordNet, FEVEROUS, SciFact) gets its row ``not testable here`` naming the dataset, and the
section's ``derived["missing"]`` names it per design, so that the report's missing-data list says once how to
get it (:func:`normscope.report.missing.availability`).
"""

from __future__ import annotations

import dataclasses

from normscope._format import ci as ci_text, num, plural
from normscope._io import to_jsonable
from normscope.claims import not_testable_row
from normscope.errors import DataMissing, InputError, NormscopeError
from normscope.report.missing import missing_entry
from normscope.report.stage import Command, KeyNumber, Section, Table
from normscope.requests import Embedding, Resampling
from normscope.requests.correlate import CorrelateRequest
from normscope.signals.labels import LENGTH_DESIGNS
from normscope.values import Status

__all__ = ["DESIGNS_SECTION", "DESIGNS", "DESIGN_N", "DESIGN_CLAIMS", "design_n", "design_commands", "run_designs",
           "designs_sentences", "designs_headline"]

DESIGNS_SECTION = "length_designs"
#: The designs, in page order (``--signals`` names).
DESIGNS: tuple[str, ...] = LENGTH_DESIGNS
#: Items of each design by default: generated problems; WordNet nouns (one chain each from its depth-3 synset
#: down, about 4.4 texts a chain).
#: FEVEROUS: the sample's 50 claims, all of them (``correlate --signal feverous`` has no ``--n-items``).
#: Shuffle: SciFact titles (each with its shuffled copy), the command's default.
DESIGN_N = {"treecut": 1000, "ruletaker": 1000, "wordnet_chains": 300, "feverous": 50, "shuffle": 2000}
#: The scorecard row each design decides.
DESIGN_CLAIMS = {"treecut": "abstention_treecut", "ruletaker": "abstention_ruletaker",
                 "wordnet_chains": "specificity_hierarchy", "feverous": "abstention_feverous",
                 "shuffle": "atypical_input_shuffle"}
_TITLES = {"treecut": "TreeCut-style problems (unanswerable vs answerable)",
           "ruletaker": "RuleTaker-style statements (Unknown vs True/False)",
           "wordnet_chains": "WordNet hypernym chains (level vs norm)",
           "feverous": "FEVEROUS dev claims (NOT ENOUGH INFO vs decided)",
           "shuffle": "SciFact titles vs their word-shuffled copies"}
#: Designs that read a fixed sample: their size is the sample's, whatever the cap.
_FIXED = ("feverous",)


def design_n(design: str, items: int | None) -> int:
    """Items of ``design``: :data:`DESIGN_N`, capped at ``items`` when given (FEVEROUS: its 50 claims, never capped)."""
    return DESIGN_N[design] if items is None or design in _FIXED else min(int(items), DESIGN_N[design])


def _argv(design: str, n: int, embedding: Embedding, resampling: Resampling) -> list[str]:
    """The ``normscope correlate`` argv of one design (the request's options: model, precision, runtime, seed)."""
    base = CorrelateRequest(signal="specificity", n=n, embedding=embedding, resampling=resampling).argv()
    if design == "wordnet_chains":
        return base + ["--pairs", "wordnet"]
    argv = list(base)
    argv[argv.index("--signal") + 1] = design
    if design in _FIXED:  # the sample's claims, all of them (no --n-items); --n-perm: the annotation time's p
        k = argv.index("--n-items")
        return argv[:k] + argv[k + 2:]
    k = argv.index("--n-perm")  # the abstention and shuffle rows have no permutation p-value
    return argv[:k] + argv[k + 2:]


def design_commands(designs, items: int | None, embedding: Embedding, resampling: Resampling) -> list[Command]:
    """One command per design, ``part`` = the design name, ``--json <design>.json``."""
    return [Command(tuple(_argv(d, design_n(d, items), embedding, resampling) + ["--json", f"{d}.json"]), part=d)
            for d in designs]


def _run_one(design: str, n: int, embedding: Embedding, resampling: Resampling, encoder):
    if design == "wordnet_chains":
        from normscope.signals.hierarchy import WORDNET_CLUSTER_UNIT, run_hierarchy, wordnet_hierarchies

        df, what = wordnet_hierarchies(n)
        return run_hierarchy(df, dataset=what, embedding=embedding, resampling=resampling, encoder=encoder,
                             progress=True, cluster_unit=WORDNET_CLUSTER_UNIT)
    if design == "shuffle":
        from normscope.signals.shuffle import run_shuffle

        try:
            return run_shuffle(n=n, embedding=embedding, resampling=dataclasses.replace(resampling, n_perm=0),
                               encoder=encoder, progress=True)
        except InputError as exc:  # SciFact absent: the command says --items, the report names the dataset
            if isinstance(exc.__cause__, DataMissing):
                raise exc.__cause__ from None
            raise
    if design == "feverous":
        from normscope.signals.feverous import run_feverous

        return run_feverous(embedding=embedding, resampling=resampling, encoder=encoder, progress=True)
    from normscope.signals.abstention import run_abstention

    return run_abstention(design, n=n, embedding=embedding, encoder=encoder, progress=True,
                          resampling=dataclasses.replace(resampling, n_perm=0))


def _row(design: str, d: dict) -> list:
    if design == "wordnet_chains":
        lm, po, pa = d["length_matched"], d["pooled"], d["partial"]
        return [design, d["n_texts"], po["spearman"], ci_text(po["spearman_ci"]), pa.get("rho"), ci_text(pa.get("ci")),
                lm.get("rho"), ci_text(lm.get("ci")), lm.get("ci_unit") or "hierarchies"]
    st = d["stats"]["nei"] if design == "feverous" else d["stats"]
    return [design, st["n_answerable"] + st["n_unanswerable"], st["auroc_norm"], f"tokens {num(st['auroc_tokens'])}",
            st["partial_rho"], ci_text(st.get("partial_ci")), st.get("r_rb"), ci_text(st.get("r_rb_ci")),
            "equal-length pairs (Wilson)"]


def run_designs(ctx, designs, items: int | None, embedding: Embedding, resampling: Resampling) -> Section:
    """Run the selected designs with the report's encoder; the ``length_designs`` section.

    A design whose data is missing (WordNet, FEVEROUS, SciFact) or that fails with a normscope error is listed as
    unavailable and its row reads ``not testable here`` with why; a missing dataset is named per design in
    ``derived["missing"]`` (``{design: {"dataset", "title", "cause", "claims"}}``) while the section ran, in the
    section's ``missing`` (each entry with the claims it blocks) when none ran. The section is unavailable when
    none ran, not run when none was selected.
    """
    if not designs:
        return Section(DESIGNS_SECTION, status=Status.NOT_RUN, reason="no design selected (--signals)")
    enc = ctx.encoder()
    results, unavailable, missing, not_run = {}, {}, {}, []
    for d in designs:
        ctx.console.print(f"signals: {d} (length-matched design)")
        try:
            # as the command's --json writes it (claims as JSON objects), so that the page is the commands' JSON
            results[d] = to_jsonable(_run_one(d, design_n(d, items), embedding, resampling, enc).to_dict())
            continue
        except DataMissing as exc:
            missing[d] = {"dataset": exc.dataset, **missing_entry(exc), "claims": [DESIGN_CLAIMS[d]]}
            known = exc.cause not in ("", "not here", None)
            # short: the missing-data list says once, in full, how to get it
            unavailable[d] = f"{exc.title} is not here{', ' + exc.cause if known else ''}; see Missing data"
            why = (f"{exc.title} is not here{f' ({exc.cause})' if known else ''}: get it with `normscope data fetch "
                   f"{exc.dataset}` (see Missing data)")
        except (NormscopeError, FileNotFoundError, LookupError) as exc:
            unavailable[d] = f"{type(exc).__name__}: {exc}".splitlines()[0]
            why = f"the {d} design failed: {unavailable[d]}"
        not_run.append(not_testable_row(DESIGN_CLAIMS[d], why))
    notes = [f"{k}: not available ({v})" for k, v in unavailable.items()]
    if not results:
        by_data: dict[str, dict] = {}
        for m in missing.values():
            e = by_data.setdefault(m["dataset"], {"title": m["title"], "cause": m["cause"], "claims": []})
            e["claims"] += m["claims"]
        return Section(DESIGNS_SECTION, status=Status.UNAVAILABLE, reason="; ".join(f"{k}: {v}" for k, v in
                                                                                   unavailable.items()),
                       missing=by_data or None, notes=notes, claims=not_run)
    commands = [c for c in design_commands(designs, items, embedding, resampling) if c.part in results]
    sizes = "; ".join(f"{d}: {_size(d, r)}" for d, r in results.items())
    sizes += f"; {resampling.n_boot} bootstrap resamples, seed {resampling.seed}"
    for d, r in results.items():
        notes += [f"{d}: {x}" for x in r.get("notes") or []]
    key_numbers = []
    for d, r in results.items():
        row = r["claims"][0]
        pct = bool(row.get("percent")) and row["measured"] is not None  # the shuffle's median change: a fraction
        key_numbers.append(KeyNumber(f"{d}.deciding", f"{row['label']} ({d}; decides the row)",
                                     100 * row["measured"] if pct else row["measured"], "%" if pct else ""))
    tables = [Table("One row per design: pooled, length-partial and length-matched figures (95% CIs; the last "
                    "column says what the length-matched CI resamples)",
                    ["design", "items", "pooled \u03c1 or AUROC", "95% CI (AUROC: of the token count alone)",
                     "partial \u03c1 on tokens", "95% CI", "length-matched \u03c1 or r_rb (decides)", "95% CI",
                     "CI resamples"], [_row(d, r) for d, r in results.items() if d != "shuffle"])]
    if "shuffle" in results:
        p = results["shuffle"]["pooled"]
        share, sci = p.get("share_smaller"), p.get("share_ci")
        tables.append(Table("Each title against its word-shuffled copy (same words; the median change decides, "
                            "its CI resamples pairs)",
                            ["pairs", "median relative norm change, shuffled vs text (decides)", "95% CI",
                             "shuffled copy smaller (Wilson 95% CI)", "sign test p"],
                            [[results["shuffle"]["n_pairs"], _pct(p.get("median_rel_change")),
                              _pct_ci(p.get("median_ci")),
                              "" if share is None else f"{100 * share:.1f} % [{100 * sci[0]:.1f}, {100 * sci[1]:.1f}]",
                              p.get("sign_p")]]))
    tables = [t for t in tables if t.rows]
    claims = [c for r in results.values() for c in r["claims"]] + not_run
    return Section(DESIGNS_SECTION, commands=commands, sizes=sizes, result=results,
                   derived={"unavailable": unavailable, "missing": missing,
                            "commands": {c.part: c.text for c in commands}},
                   key_numbers=key_numbers, tables=tables, notes=notes, claims=claims)


def _pct(v) -> str:
    """A relative change (fraction) as a signed percentage, ``"+0.07 %"``; empty for None."""
    return "" if v is None else f"{100 * v:+.2f} %"


def _pct_ci(ci) -> str:
    return "" if not ci else f"[{100 * ci[0]:+.2f}, {100 * ci[1]:+.2f}] %"


def _value(row: dict) -> str:
    """The row's deciding figure as the page prints it (a signed percentage for a row in percent)."""
    return _pct(row["measured"]) if row.get("percent") and row.get("measured") is not None else num(row.get("measured"))


def _figure(row: dict) -> str:
    """:func:`_value` with its CI."""
    ci = row.get("ci")
    if not ci:
        return _value(row)
    return f"{_value(row)} {_pct_ci(ci)}" if row.get("percent") else f"{_value(row)} [{num(ci[0])}, {num(ci[1])}]"


def _size(design: str, r: dict) -> str:
    if design == "wordnet_chains":
        groups = f" in {r['n_clusters']} groups" if r.get("n_clusters") not in (None, r["n_hierarchies"]) else ""
        return f"{plural(r['n_hierarchies'], 'chain')}{groups}, {plural(r['n_texts'], 'text')}"
    if design == "shuffle":
        return f"{plural(r['n_pairs'], 'title')} and their shuffled copies ({r['dataset']})"
    if design == "feverous":
        st = r["stats"]["nei"]
        return (f"{st['n_answerable'] + st['n_unanswerable']} claims ({st['n_unanswerable']} NOT ENOUGH INFO; the "
                "whole sample)")
    st = r["stats"]
    return f"{st['n_answerable'] + st['n_unanswerable']} generated items"


def designs_sentences(result: dict | None) -> list[str]:
    """One sentence per design that ran: the deciding figure, why it decides, and the pooled figure beside."""
    out = []
    for d, r in (result or {}).items():
        row = (r.get("claims") or [{}])[0]
        if row.get("measured") is None:
            out.append(f"{_TITLES.get(d, d)}: not decided ({row.get('reason') or 'no figure'}).")
            continue
        if d == "shuffle":  # same words: no pooled figure to set beside it
            out.append(f"{_TITLES[d]}: {row.get('label')} = {_figure(row)}, {row.get('verdict')}; "
                       f"{row.get('beside') or ''}".rstrip("; ") + ". The copy has the same words as the text, so "
                       "the comparison is at equal length in words.")
            continue
        out.append(f"{_TITLES.get(d, d)}: {row.get('label')} = {_figure(row)}, {row.get('verdict')}; "
                   f"{row.get('beside') or ''}".rstrip("; ") + ". The equal-length figure decides: the pooled one "
                   "mixes the design's contrast with length.")
    return out


def designs_headline(section: Section) -> str:
    """The CLI summary line: each design's deciding figure and verdict."""
    rows = {d: (r.get("claims") or [{}])[0] for d, r in (section.result or {}).items()}
    return "; ".join(f"{d} {_value(row)} ({row.get('verdict')})" for d, row in rows.items())
