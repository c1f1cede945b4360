"""What a report could not do for lack of data, said once: the one line per missing dataset, the claims count.

A stage whose data is absent raises :func:`data_unavailable` (a
:class:`~normscope.report.context.StageUnavailable` that names the missing datasets and why they could
not be had, without library exception text: that stays in the stage record's ``detail``). From the
sections' ``missing`` fields (and ``derived.missing`` of a section that ran without some parts: per semantic
signal, per length-matched design),
:func:`availability` builds two entries of ``summary.json``:

- ``claims_tested``: how many of the paper's claims this run tested (a verdict other than ``not testable
  here``), which it did not, the count per verdict, and the count per verdict of each kind of row apart
  (``kinds``, ``headline``: the paper's claims, checks by construction, exploratory rows;
  :func:`normscope.claims.kind_counts`);
- ``missing_data``: one entry per missing dataset with the sections it stopped, the claims it left
  untested (a section's ``missing`` entry may restrict them with its own ``claims`` list; a section
  that needs one of several datasets counts its claims for each) and ``line``: one sentence naming what is missing, why, and the three ways to get it
  (``normscope data fetch NAME`` with network, a local copy with ``--data DIR`` / ``NORMSCOPE_DATA``, or
  ``--mirror URL|DIR``). The page and ``normscope report``'s final summary print these lines.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from normscope.claims import counts_text, kind_counts
from normscope.errors import DataError, DataMissing
from normscope.report.stage import StageUnavailable
from normscope.report.summary import ClaimsTested, MissingData, MissingEntry, ReportSummary

__all__ = ["data_unavailable", "missing_reason", "missing_entry", "availability", "missing_parts", "WAYS"]

#: The three ways to get a dataset, after its fetch command.
WAYS = "a local copy (--data DIR or NORMSCOPE_DATA=DIR) or --mirror URL|DIR"

_PART_LABEL = "{} ({})"


def _cause(cause: str) -> str:
    return "not here" if cause in ("", "not here") else f"not here: {cause}"


def missing_entry(err: DataMissing) -> dict:
    """``{"title", "cause"}`` of a :class:`~normscope.errors.DataMissing` (what a section's ``missing`` holds)."""
    return {"title": err.title, "cause": err.cause}


def missing_reason(missing: Mapping[str, Mapping], what: str = "") -> str:
    """One line for a section that lacks data: the datasets, why they are not here, the three ways to get them.

    Parameters
    ----------
    missing : mapping of dataset name -> {"title", "cause"}
    what : str
        What the data is for (e.g. ``"its training-like pairs"``); when several datasets are given, any
        one of them would do (``"WordNet 3.0 or SciFact (BEIR)"``).

    Returns
    -------
    str
        E.g. ``"needs SimLex-999 (not here: --offline is set); get it with `normscope data fetch simlex-999`
        (network), a local copy (--data DIR or NORMSCOPE_DATA=DIR) or --mirror URL|DIR"``.
    """
    names = list(missing)
    titles = " or ".join(f"{m['title']} ({_cause(m.get('cause', ''))})" for m in missing.values())
    cmds = " or ".join(f"`normscope data fetch {n}`" for n in names)
    return f"needs {titles}{' for ' + what if what else ''}; get {'it' if len(names) == 1 else 'one'} with {cmds} " \
           f"(network), {WAYS}"


def data_unavailable(errors: Sequence[DataError], what: str = "") -> StageUnavailable:
    """The :class:`StageUnavailable` of a stage stopped by absent data (or another data error).

    Parameters
    ----------
    errors : sequence of DataError
        The errors of the datasets tried (any one would have done). :class:`DataMissing` errors
        become ``missing`` entries; others (a copy that fails verification, a damaged download) are
        quoted as they are (one line each).
    what : str
        What the data is for, for the reason.
    """
    missing = {e.dataset: missing_entry(e) for e in errors if isinstance(e, DataMissing)}
    others = [str(e) for e in errors if not isinstance(e, DataMissing)]
    parts = [missing_reason(missing, what)] if missing else []
    parts += others
    detail = "; ".join(getattr(e, "detail", "") or str(e) for e in errors)
    return StageUnavailable("; ".join(parts) or "data unavailable", missing=missing, detail=detail)


def missing_parts(derived: Mapping | None) -> list[tuple[str, MissingEntry, list[str]]]:
    """The parts a section ran without (its ``derived["missing"]``: ``{part: {"dataset", "title", "cause"[,
    "claims"]}}``), each as ``(part, entry, claim keys it blocks)``: the claims the entry lists, else the one
    keyed by the part's name (a semantic signal). Read by :func:`availability` and the scorecard alike."""
    out = []
    for part, raw in ((derived or {}).get("missing") or {}).items():
        entry = MissingEntry.from_json(raw)
        out.append((part, entry, list(entry.claims) if entry.claims is not None else [part]))
    return out


def availability(summary: Mapping, sections: Mapping[str, str]) -> dict:
    """``{"claims_tested": ..., "missing_data": [...]}`` of a summary (see the module docstring).

    Parameters
    ----------
    summary : mapping
        summary.json's content, with ``claims`` and the sections (each may hold ``missing`` and, for
        semantic signals and the length-matched designs, ``derived.missing``: ``{part: {"dataset", "title", "cause"}}``,
        with ``"claims"`` when the part's claims are not keyed by its name).
    sections : mapping of section key -> heading
        The page's section titles (:data:`normscope.report.config.SECTIONS`).
    """
    summ = ReportSummary.from_json(dict(summary))
    claims = summ.claims or []
    untested = [c for c in claims if c.verdict == "not testable here"]
    verdicts: dict[str, int] = {}
    for c in claims:
        v = c.verdict if c.verdict is not None else "?"
        verdicts[v] = verdicts.get(v, 0) + 1
    by_data: dict[str, dict] = {}

    def add(name: str, entry: MissingEntry, where: str, claim_keys: Sequence[str]) -> None:
        d = by_data.setdefault(name, {"dataset": name, "title": entry.title if entry.title is not None else name,
                                      "cause": entry.cause if entry.cause is not None else "", "sections": [],
                                      "claims": []})
        if where not in d["sections"]:
            d["sections"].append(where)
        for k in claim_keys:
            if k not in d["claims"]:
                d["claims"].append(k)

    for key, title in sections.items():
        sec = summ.section(key)
        in_sec = [c.key for c in untested if c.section == key]
        for name, entry in (sec.missing or {}).items():
            only = entry.claims  # a stage that lacks several datasets may say which claims each one blocks
            add(name, entry, title.split(":")[0], in_sec if only is None else [k for k in in_sec if k in only])
        # a section that ran without some of its parts (semantic signals, the length-matched designs) names the
        # dataset per part in its derived numbers (a stage's own free-form dict), with the claims it blocks when
        # they are not keyed by the part's name
        for sig, entry, only in missing_parts(sec.derived):
            add(entry.dataset, entry, _PART_LABEL.format(title.split(":")[0], sig), [k for k in in_sec if k in only])
    for d in by_data.values():
        n = len(d["claims"])  # the keys are in ``claims``; the line counts them so it stays one line
        blocked = f", {n} claim{'s' if n != 1 else ''} left untested" if n else ""
        d["line"] = (f"{d['title']} is {_cause(d['cause'])}: {', '.join(d['sections'])} not run{blocked}. "
                     f"Get it: `normscope data fetch {d['dataset']}` (network) | --data DIR or NORMSCOPE_DATA=DIR "
                     "(local copy) | --mirror URL|DIR")
    kinds = kind_counts(claims)
    tested = ClaimsTested(total=len(claims), tested=len(claims) - len(untested), not_tested=[c.key for c in untested],
                          verdicts=verdicts, kinds=kinds, headline=counts_text(kinds))
    return {"claims_tested": tested.to_json(), "missing_data": [MissingData(**d).to_json() for d in by_data.values()]}
