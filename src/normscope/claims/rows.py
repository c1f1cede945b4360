"""Scorecard rows as typed values (:class:`ClaimRow`), the row builders every stage's claims builder calls
(:func:`claim_row`, :func:`not_testable_row`, :func:`paper_scope_rows`), the per-kind headline count
(:func:`kind_counts`, :func:`counts_text`) and the one-verdict-per-statistic check."""

from __future__ import annotations

import dataclasses
import numbers
from collections.abc import Iterable, Mapping, Sequence

from normscope.claims._numbers import _ci_ok, _finite
from normscope.claims.registry import CLAIMS, KIND_TITLES, KINDS, VERDICTS, Claim
from normscope.claims.rules import Judgement
from normscope.values import Interval, Record, when_set

__all__ = ["ClaimRow", "claim_row", "not_testable_row", "paper_scope_rows", "kind_of", "kind_counts", "counts_text",
           "check_one_verdict_per_statistic"]


def claim_row(key: str, *, measured, ci: Sequence[float] | None, judged: Judgement | Mapping,
              section: str | None = None,
              n: int | None = None, what: str = "", statistic: str | None = None, details: Mapping | None = None,
              note: str = "", tested_on: str = "", beside: str = "", needs: str = "", percent: bool | None = None,
              label: str = "", claim: Claim | None = None, kind: str | None = None) -> ClaimRow:
    """One scorecard row, typed (written as a JSON object of ``claims`` in ``summary.json`` and in a command's
    ``--json`` by :meth:`ClaimRow.to_json`, at the edge).

    Parameters
    ----------
    key : str
        A key of :data:`CLAIMS`.
    measured : float or None
        This run's figure (the statistic ``what`` names).
    ci : (float, float) or None
        Its 95 % CI (``what`` says which sources of sampling it resamples).
    judged : Judgement or mapping
        :func:`~normscope.claims.judge`'s output (a mapping with the same five keys is read as one).
    section : str, optional
        The page section with the evidence (default the claim's).
    n : int, optional
        Items (queries, pairs) behind the figure.
    what : str
        What ``measured`` is and what its CI resamples.
    statistic : str, optional
        Identity of the number the verdict rests on (two rows with the same ``statistic`` must
        carry the same verdict: :func:`check_one_verdict_per_statistic`).
    details : mapping, optional
        Further numbers behind the verdict (shown one click away).
    note : str
        Appended to the full reasoning (``why``).
    tested_on : str
        What actually ran (model, encoder, optimizer, data).
    beside : str
        A figure shown beside ``measured`` (e.g. the raw correlation next to the R-free one).
    needs : str
        What would decide the claim when this run cannot.
    percent : bool, optional
        ``measured`` and ``ci`` are fractions to show as percentages (default: when the claimed size is
        in percent).
    label : str
        The statistic's short name, shown above the figure (e.g. ``"Pearson r(R, D~)"``).
    claim : Claim, optional
        The claim as this design tests it (default ``CLAIMS[key]``), e.g. a direction-only form.
    kind : {"paper", "construction", "exploratory"}, optional
        The row's kind (:data:`KINDS`; default the claim's), e.g. ``construction`` for a lab row that ran
        on a free table.

    Returns
    -------
    ClaimRow
        Its JSON keys ``key, kind, claim, paper, claimed_size, tested_on, label, measured, ci, percent, beside,
        verdict, direction, size, reason, why, needs, section, n, what, statistic, details``, in that order.

    Raises
    ------
    KeyError
        Unknown claim key.
    ValueError
        A verdict outside :data:`VERDICTS`, or a kind outside :data:`KINDS`.
    """
    c = claim or CLAIMS[key]
    j = Judgement.of(judged)
    kind = kind or c.kind
    if kind not in KINDS:
        raise ValueError(f"unknown kind {kind!r} (one of {', '.join(KINDS)})")
    return ClaimRow(
        key=key, kind=kind, claim=c.claim, paper=c.paper, claimed_size=c.size.text(), tested_on=tested_on, label=label,
        measured=float(measured) if _finite(measured) else None,
        ci=Interval(float(ci[0]), float(ci[1])) if _ci_ok(ci) else None,
        percent=bool(c.size.percent if percent is None else percent), beside=beside,
        verdict=j.verdict, direction=j.direction, size=j.size,
        reason=j.reason, why=j.why + (f"; {note}" if note else ""), needs=needs, section=section or c.section,
        n=int(n) if isinstance(n, numbers.Integral) and not isinstance(n, bool) else n,
        what=what, statistic=statistic, details=dict(details or {}))


@dataclasses.dataclass(frozen=True)
class ClaimRow(Record, Mapping):
    """A scorecard row as a typed value: built by :func:`claim_row` (every stage's claims builder), rendered by
    the page and the console from its attributes, written to ``summary.json`` and the commands' ``--json`` by
    :meth:`~normscope.values.Record.to_json` at the edge and read back with
    :meth:`~normscope.values.Record.from_json`, the same JSON keys in the same order. Rows written by an earlier
    normscope may lack keys (they read as None).

    Attributes
    ----------
    key : str
        A key of :data:`~normscope.claims.CLAIMS`.
    kind : {"paper", "construction", "exploratory"}
    claim, paper, claimed_size : str
        The claim, the paper's figure and the claimed size in words (from the :class:`~normscope.claims.Claim`).
    tested_on, label, beside, what : str
        What ran; the statistic's short name; a figure shown beside; what the figure is and what its CI
        resamples.
    measured : float or None
        This run's figure (a fraction when ``percent``).
    ci : Interval or None
        Its 95 % CI (JSON ``[lo, hi]``).
    percent : bool
        Show ``measured`` and ``ci`` as percentages.
    verdict, direction, size, reason, why : str
        The :class:`~normscope.claims.Judgement` (:attr:`judgement`), ``why`` with the builder's note appended.
    needs, section, statistic : str
        What would decide it; the page section with the evidence; the identity of the number the verdict rests on.
    n : int or None
        Items behind the figure.
    details : dict
        Further numbers behind the verdict.
    stored : str or None
        Where the figure comes from when this run did not compute it (a stored full run shipped with
        normscope, e.g. ``"lab/results/decisive_full.json"``); the page and the console say so beside the
        figure and in the count of tested claims. None: this run's own figure.

    Notes
    -----
    During the move from dict rows it also reads as a read-only mapping of its JSON keys (``row["verdict"]``,
    ``row.get("ci")``, ``dict(row)``) for code written against the dict; new code reads attributes.
    """

    key: str | None = None
    kind: str | None = None
    claim: str | None = None
    paper: str | None = None
    claimed_size: str | None = None
    tested_on: str | None = None
    label: str | None = None
    measured: float | None = None
    ci: Interval | None = None
    percent: bool | None = None
    beside: str | None = None
    verdict: str | None = None
    direction: str | None = None
    size: str | None = None
    reason: str | None = None
    why: str | None = None
    needs: str | None = None
    section: str | None = None
    n: int | None = None
    what: str | None = None
    statistic: str | None = None
    details: dict | None = None
    stored: str | None = when_set()  # in JSON only when set: a row this run computed keeps the keys rows always had

    @property
    def judgement(self) -> Judgement | None:
        """The verdicts as a :class:`~normscope.claims.Judgement` (None for a row read back without a known
        verdict)."""
        if self.verdict not in VERDICTS:
            return None
        return Judgement(self.verdict, self.direction or "", self.size or "", self.reason or "", self.why or "")

    @property
    def row_kind(self) -> str:
        """:func:`kind_of` this row (its ``kind``, else its claim's)."""
        return kind_of(self)

    def but(self, **changes) -> "ClaimRow":
        """This row with some fields replaced (its JSON key order kept)."""
        return dataclasses.replace(self, **changes)

    def __iter__(self):
        return iter(self.to_json())

    def __len__(self) -> int:
        return len(self.to_json())


def not_testable_row(key: str, reason: str, *, section: str | None = None, what: str = "", needs: str = "",
                     verdict: str = "not testable here", tested_on: str = "", note: str = "") -> ClaimRow:
    """A row whose claim this run cannot judge: ``reason`` says why, ``needs`` (default the claim's
    ``how_to_test``) what would test it; ``verdict`` may be ``"not decided at this size"``."""
    c = CLAIMS[key]
    needs = needs or c.how_to_test
    judged = Judgement(verdict, "not tested", "undetermined" if c.size.kind != "none" else "no size claimed", reason,
                       reason + (f"; would test it: {needs}" if needs else ""))
    return claim_row(key, measured=None, ci=None, judged=judged, section=section, what=what, needs=needs,
                     tested_on=tested_on, note=note)


#: Names of the paper's models as they appear in model ids.
_PAPER_MODELS = {"clip-vit-base-patch32": "CLIP ViT-B/32", "vit-b-32": "CLIP ViT-B/32",
                 "all-minilm-l12": "MiniLM-L12"}


#: The paper's benchmarks: (row, the row that measures the norm on it here, what that row tests, what it cannot).
PAPER_BENCHMARKS: tuple[tuple[str, str, str, str], ...] = (
    ("paper_benchmark_feverous", "abstention_feverous",
     "real FEVEROUS claims (a 50-claim dev sample, `normscope data fetch feverous`): does the raw norm of a claim's "
     "text separate NOT ENOUGH INFO from decided claims at equal length",
     "the paper's accuracy gain: no protocol is given; 50 claims decide only a large effect; no evidence is "
     "retrieved or read"),
    ("paper_benchmark_treecut", "abstention_treecut",
     "TreeCut-style problems from normscope's own generator (the TreeCut paper's description, arXiv 2502.13442): "
     "does the raw norm flag unanswerable problems at equal length",
     "the paper's accuracy gain (no protocol) and the paper's own TreeCut instances (not published with it)"),
    ("paper_benchmark_ruletaker", "abstention_ruletaker",
     "RuleTaker-style theories from normscope's own generator (Clark et al. 2020's description): does the raw norm "
     "flag Unknown statements at equal length",
     "the paper's accuracy gain (no protocol) and the RuleTaker datasets themselves (not bundled or fetched)"),
)


def _benchmark_row(key: str, measuring: str, tests: str, cannot: str, found: ClaimRow | None) -> ClaimRow:
    """One paper-benchmark row: not testable as the paper states it; what normscope measures on the benchmark, and
    the measuring row's verdict when it ran in this report."""
    name = CLAIMS[key].claim.split(" on ", 1)[-1].split(" (")[0]
    reason = f"the paper's +1.2 to +2.3 % accuracy names no protocol for {name}"
    what = f"tests: {tests}; cannot test: {cannot}"
    if found is not None and not found.tested_on:  # its design's row that says why it did not run
        note = f"the row {measuring} did not run in this report: {found.reason}"
    elif found is not None:
        fig = ""
        if found.measured is not None:
            ci = found.ci
            fig = f": {found.label or 'figure'} {found.measured:+.3f}" + (
                f" [{ci[0]:+.3f}, {ci[1]:+.3f}]" if ci is not None else "")
        note = f"measured here by the row {measuring}: {found.verdict}{fig} ({found.tested_on})"
    else:
        note = f"the row {measuring} did not run in this report"
    return not_testable_row(key, reason, what=what, note=note)


def paper_scope_rows(model: str | None, measured: Mapping[str, ClaimRow] | None = None) -> list[ClaimRow]:
    """The rows ``paper_models``, one row per paper benchmark (``paper_benchmark_feverous``, ``_treecut``,
    ``_ruletaker``) and ``llm_baselines`` for a run of ``model``.

    ``paper_models`` is ``not testable here`` unless ``model`` is one of the paper's (its other rows
    then test the paper's model). Each benchmark row is ``not testable here`` (the paper's +1.2 to +2.3 %
    accuracy states no protocol for these sets) and says what normscope measures on the benchmark and what it
    cannot; when ``measured`` (the rows of this run by key) holds the measuring row
    (:data:`PAPER_BENCHMARKS`), its verdict and figure are on the row, or, when that row did not run (it names
    nothing it was tested on: e.g. its dataset is absent), its reason. The paper's LLM baselines are generative
    models on those benchmarks, outside what normscope measures.
    """
    name = (model or "").lower()
    hit = next((v for k, v in _PAPER_MODELS.items() if k in name), None)
    if hit:
        judged = Judgement("inconclusive", "no direction claimed", "no size claimed",
                           f"this run's model is the paper's {hit}: its verdicts are the other rows",
                           f"this run's model {model} is the paper's {hit}; the other rows test it; the paper's other "
                           f"model is not in this run")
        models = claim_row("paper_models", measured=None, ci=None, judged=judged, tested_on=model or "")
    else:
        models = not_testable_row("paper_models", f"this run's model is {model or 'unknown'}, not one of the paper's",
                                  tested_on=model or "")
    found = measured or {}
    bench = [_benchmark_row(k, m, t, c, found.get(m)) for k, m, t, c in PAPER_BENCHMARKS]
    llm = not_testable_row("llm_baselines", "the LLM baselines are generative models run on the paper's benchmarks; "
                           "neither is part of this run")
    return [models, *bench, llm]


def kind_of(row: Mapping) -> str:
    """The kind of a row (:data:`KINDS`): its ``kind``, else its claim's (rows written before kinds existed)."""
    k = row.get("kind")
    if k in KINDS:
        return k
    c = CLAIMS.get(str(row.get("key")))
    return c.kind if c is not None else "paper"


def kind_counts(rows: Iterable[Mapping]) -> dict[str, dict[str, int]]:
    """Verdict counts per kind: ``{kind: {verdict: n}}``, kinds in :data:`KINDS` order, verdicts in
    :data:`VERDICTS` order (only those that occur; a kind without rows is left out)."""
    out: dict[str, dict[str, int]] = {}
    rows = list(rows)
    for k in KINDS:
        vs = [str(r.get("verdict")) for r in rows if kind_of(r) == k]
        if vs:
            order = list(VERDICTS) + sorted(set(vs) - set(VERDICTS))
            out[k] = {v: vs.count(v) for v in order if v in vs}
    return out


def counts_text(counts: Mapping[str, Mapping[str, int]]) -> str:
    """The headline count, each kind apart (:func:`kind_counts`), e.g. ``"paper's claims: 3 reproduced,
    2 refuted, 1 not testable here (of 12); checks by construction: 1 reproduced (of 1); exploratory: 2
    inconclusive (of 4)"``. Exploratory rows and checks by construction never add to the paper's count."""
    parts = []
    for k in KINDS:
        c = counts.get(k)
        if not c:
            continue
        body = ", ".join(f"{n} {v}" for v, n in c.items())
        parts.append(f"{KIND_TITLES[k]}: {body} (of {sum(c.values())})")
    return "; ".join(parts)


def check_one_verdict_per_statistic(rows: Iterable[Mapping]) -> None:
    """Raise ``ValueError`` when two rows with the same ``statistic`` carry different verdicts.

    A statistic decides one verdict: a second row that reduces to the same number says so in its
    reasoning and rests on another statistic (or none).
    """
    seen: dict[str, tuple[str, str]] = {}
    bad = []
    for r in rows:
        st = r.get("statistic")
        if not st:
            continue
        if st in seen and seen[st][1] != r.get("verdict"):
            bad.append(f"{seen[st][0]} ({seen[st][1]}) and {r.get('key')} ({r.get('verdict')}) rest on '{st}'")
        seen.setdefault(st, (str(r.get("key")), str(r.get("verdict"))))
    if bad:
        raise ValueError("one statistic, two verdicts: " + "; ".join(bad))
