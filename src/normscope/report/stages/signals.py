"""Report stage ``signals``: norm vs semantic signals (``normscope correlate``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

from normscope._format import ci as ci_text, join_and, num, p_text, plural
from normscope.encoders import DEFAULT_MODEL
from normscope.errors import DataMissing, NormscopeError
from normscope.report.missing import missing_entry, missing_reason
from normscope.report.stage import Command, Figure, KeyNumber, Section, Stage, StageUnavailable, Table
from normscope.report.stages.designs import (
    DESIGNS,
    DESIGNS_SECTION,
    design_commands,
    designs_headline,
    designs_sentences,
    run_designs,
)
from normscope.report.text import ci_excludes_zero, ci_words, correlation_sentence, corr_parts
from normscope.requests import Embedding, Request, Resampling, param
from normscope.requests.correlate import CorrelateRequest
from normscope.signals import CorrelateResult, plot_signal, run_correlate
from normscope.signals.ambiguity import ambiguity_request, run_ambiguity
from normscope.signals.claims import controlled_figure as _controlled
from normscope.signals.claims import pooling_claim, signal_claims
from normscope.signals.pooling import pooling_trends
from normscope.signals.labels import SIGNAL_DATASETS, SIGNAL_WORDS, SIGNALS, Signal
from normscope.values import Status

__all__ = ["SignalsStage", "SignalsRequest", "semantic_signal_sentences"]

SECTION = "semantic_signals"
#: Most specificity items (the WordNet nouns among the most frequent words run out beyond this).
SPECIFICITY_MAX = 2000


@dataclasses.dataclass(frozen=True)
class SignalsRequest(Request):
    """``normscope correlate`` once per signal (:meth:`correlate`); ``items`` None: each signal's default item set."""

    signals: tuple[Signal, ...] = SIGNALS
    items: int | None = param(None, min=10)
    embedding: Embedding = Embedding()
    resampling: Resampling = Resampling(n_boot=2000, n_perm=2000)
    #: The length-matched designs of the section ``length_designs`` (:mod:`normscope.report.stages.designs`).
    designs: tuple[str, ...] = DESIGNS
    #: Their item cap (None: :data:`~normscope.report.stages.designs.DESIGN_N`).
    design_items: int | None = param(None, min=20)

    def n_items(self, signal: str) -> int | None:
        """The item count of ``signal`` (specificity at most :data:`SPECIFICITY_MAX`)."""
        if self.items is not None and signal == "specificity":
            return min(self.items, SPECIFICITY_MAX)
        return self.items

    def correlate(self, signal: str) -> CorrelateRequest:
        """The request of one signal's ``normscope correlate``."""
        return CorrelateRequest(signal=signal, n=self.n_items(signal), embedding=self.embedding,
                                resampling=self.resampling)


def _stratified_signal_sentence(name: str, s: CorrelateResult) -> str:
    """Sentence of a signal pooled from several sources: per source, then the source-controlled partial."""
    word = SIGNAL_WORDS.get(name, name)
    parts = [f"{st.name}: not estimated (n = {num(st.n)})" if st.spearman is None else
             f"{st.name}: \u03c1 = {num(st.spearman)}, {ci_words(st.spearman_ci)}, n = {num(st.n)}"
             for st in s.strata or []]
    out = (f"The items come from {len(parts)} sources, so the pooled Spearman \u03c1 = {num(s.spearman)} "
           f"({ci_words(s.spearman_ci)}) mixes them; per source, norm vs {word}: " + "; ".join(parts) + ".")
    p = s.partial_spearman
    if p is not None and p.rho is not None:
        out += " " + correlation_sentence("the raw norm", f"{word} controlling for {join_and(p.controls or [])}",
                                          p.rho, p.ci, p.n, method="partial \u03c1")
        out += f" Its CI and p-value resample and permute items within each {s.by or 'source'}."
    return out


def _partial_sentence(s: CorrelateResult, ci) -> str:
    """How the partial correlation (controls actually partialled out) compares with the marginal one."""
    p = s.partial_spearman
    if p is None:
        return ""
    pci = list(p.ci) if p.ci is not None else None
    ctrl = join_and(list(p.controls or s.controls or [])) or "the controls"
    ex = ci_excludes_zero(pci)
    if ex is True:
        # "stays" only when the marginal's CI lies on the same side of 0 (signs from the CIs)
        p_up = pci[0] > 0
        m_ex = ci_excludes_zero(ci)
        verb = "it stays" if m_ex and (ci[0] > 0) == p_up else "it turns" if m_ex else "it is"
        return f" Controlling for {ctrl} {verb} {'positive' if p_up else 'negative'} (partial \u03c1 = {num(p.rho)}, {ci_words(pci)})."
    if ex is False:
        return f" Controlling for {ctrl}, the CI includes 0 (partial \u03c1 = {num(p.rho)}, {ci_words(pci)})."
    return f" Partial \u03c1 controlling for {ctrl} = {num(p.rho)} (no CI)." if p.rho is not None else ""


def _length_matched_sentence(s: CorrelateResult) -> str:
    """The deciding, length-matched figure and why it decides (issue 39)."""
    lm = s.length_matched
    if lm is None or lm.rho is None:
        return ""
    unit = "word count" if str(lm.length or "").startswith("words") else "token count"
    out = (f" Compared only within equal {unit}{' and source' if s.strata else ''} ({plural(lm.n or 0, 'item')} "
           f"share a length with another; {plural(lm.n_unmatched or 0, 'item')} alone at theirs left out), "
           f"\u03c1 = {num(lm.rho)} ({ci_words(lm.ci)})"
           + (f" with {join_and(list(lm.controls))} partialled" if lm.controls else "") + ".")
    pr = lm.pairs
    if pr is not None and pr.share is not None:
        out += (f" In {plural(pr.n_pairs or 0, 'disjoint equal-length pair')}, the item with the larger value has the "
                f"larger norm in {100 * pr.share:.1f} % ({ci_words(pr.ci)}).")
    return out + (" This length-matched figure decides the scorecard row: longer texts differ in both the covariate "
                  "and the norm, and a linear length control lets a curved length effect through.")


def _signal_sentence(name: str, s: CorrelateResult) -> str | None:
    rho, ci, m = corr_parts(s)
    if rho is None:
        return None
    if s.strata:
        sentence = _stratified_signal_sentence(name, s)
    else:
        sentence = correlation_sentence("the raw norm", SIGNAL_WORDS.get(name, name), rho, ci, s.n, method=m)
        sentence += _partial_sentence(s, ci)
    if s.controls_dropped:
        sentence += (f" {', '.join(s.controls_dropped).capitalize()} is constant over these items, so it was not"
                     " controlled" + ("." if s.partial_spearman is not None else " and no partial correlation was computed."))
    sentence += _length_matched_sentence(s)
    nl = s.norm_length
    if nl is not None and nl.spearman is not None:
        unit = "tokens the model saw" if str(nl.length or "").startswith("tokens") else "words"
        sentence += (f" For comparison, the norm and the length ({unit}) have Spearman \u03c1 = "
                     f"{num(nl.spearman)} ({ci_words(nl.spearman_ci)}).")
    return sentence


def semantic_signal_sentences(result: dict | None) -> list[str]:
    """One sentence per signal that ran, chosen by the sign and CI of its (partial) correlation."""
    out = [_signal_sentence(name, CorrelateResult.from_dict(d)) for name, d in (result or {}).items()]
    return [s for s in out if s]


def _row(sig: str, r: CorrelateResult) -> list:
    part = r.partial_spearman
    controls = ", ".join(part.controls or []) if part is not None else ""
    controls += "".join(f"{'; ' if controls else ''}{c} not controlled (constant)" for c in r.controls_dropped or [])
    return [sig, r.dataset, r.n, r.n_missing, r.spearman, ci_text(r.spearman_ci), p_text(r.p_value, int(r.n_perm or 0)),
            part.rho if part is not None else None, ci_text(part.ci if part is not None else None), controls,
            r.length_matched.rho if r.length_matched is not None else None,
            ci_text(r.length_matched.ci if r.length_matched is not None else None),
            r.norm_length.spearman if r.norm_length is not None else None, r.n_truncated]


def _strata_rows(sig: str, r: CorrelateResult) -> list[list]:
    rows = []
    for st in r.strata or []:
        p = st.partial_spearman
        rows.append([sig, st.name, st.n, st.spearman, ci_text(st.spearman_ci), p.rho if p else None,
                     ci_text(p.ci if p else None), ", ".join(p.controls or []) if p else "", st.norm_length_spearman,
                     st.mean_length, st.mean_covariate])
    return rows


def _notes(results: dict[str, CorrelateResult], unavailable: dict[str, str]) -> list[str]:
    notes = [f"{k}: not available ({v})" for k, v in unavailable.items()]
    for sig, r in results.items():
        notes += [f"{sig}: {x}" for x in r.notes or []]
        if r.n_missing:
            notes.append(f"{sig}: {r.n_missing} of {r.n_items} items have no value and are excluded "
                         f"(e.g. {', '.join(map(str, (r.missing_examples or [])[:5]))}).")
        if r.junk is not None and r.junk.count:
            notes.append(f"{sig}: {plural(r.junk.count, 'junk item')} left out (ids {', '.join(r.junk.ids[:5])}).")
    return notes


def _key_numbers(results: dict[str, CorrelateResult]) -> list[KeyNumber]:
    out = []
    for k, r in results.items():
        pooled = ", pooled over sources" if r.strata else ""
        out.append(KeyNumber(f"{k}.spearman", f"Spearman \u03c1, norm vs {k} (n = {r.n}{pooled})", r.spearman))
        part = r.partial_spearman
        if part is not None and part.rho is not None and part.rho != r.spearman:
            _, _, n, what = _controlled(dataclasses.replace(r, length_matched=None), k)
            out.append(KeyNumber(f"{k}.partial_spearman.rho", f"{what} (n = {n})", part.rho))
        lm = r.length_matched
        if lm is not None and lm.rho is not None:
            _, _, n, what = _controlled(r, k)
            out.append(KeyNumber(f"{k}.length_matched.rho", f"{what.split(';')[0]} (n = {n}; decides the row)",
                                 lm.rho))
    return out


def _tables(rows: list[list], strata_rows: list[list]) -> list[Table]:
    tables = [Table("One row per signal (95% bootstrap CIs, permutation p; length = tokens the model saw)",
                    ["signal", "items", "n", "missing", "Spearman \u03c1", "95% CI", "p", "partial \u03c1", "95% CI",
                     "controls", "length-matched \u03c1", "95% CI", "\u03c1(norm, length)", "truncated"], rows)]
    if strata_rows:
        tables.append(Table("Per source (the pooled figure mixes sources; partial \u03c1 controls length and "
                            "frequency within the source)",
                            ["signal", "source", "n", "Spearman \u03c1", "95% CI", "partial \u03c1", "95% CI",
                             "controls", "\u03c1(norm, length)", "mean length (tokens)", "mean covariate"], strata_rows))
    return tables


#: The rows of the section: the signals, then ambiguity (WordNet noun senses of the specificity items).
_ORDER = (*SIGNALS, "ambiguity")


def _pooling_row(ctx, request: SignalsRequest, freq: CorrelateResult | None) -> dict:
    """Row ``mean_pooling`` on the frequency signal's words: CLS against mean pooling where the model allows."""
    if freq is None or freq.items is None or "item" not in freq.items:
        return pooling_claim(None, "the frequency signal did not run (its words are the items)")
    e, rs = request.embedding, request.resampling
    ctx.console.print("signals: CLS vs mean pooling (frequency words)")
    try:
        trends = pooling_trends(e.model or DEFAULT_MODEL, freq.items["item"].astype(str).tolist(), n_boot=rs.n_boot,
                                seed=rs.seed, device=e.device, batch_size=e.batch_size)
    except (NormscopeError, OSError, ValueError) as exc:
        return pooling_claim(None, "the model does not load with both CLS and mean pooling: "
                             + f"{type(exc).__name__}: {exc}".splitlines()[0])
    return pooling_claim(trends)


def _figure(ctx, sig: str, res: CorrelateResult) -> Figure:
    fig = plot_signal(res, ctx.figure_path(f"semantic_signals_{sig}.png"))
    per_source = " per source" if res.strata else ""
    return Figure(Path(fig).name, f"Raw norm vs {res.covariate}: items (points), equal-count binned means{per_source} "
                                  f"with 95% CIs; {res.dataset}.")


class SignalsStage(Stage[SignalsRequest]):
    """The raw norm against Zipf frequency, WordNet specificity, concreteness and human label entropy."""

    name = "signals"
    sections = {SECTION: "Semantic signals", DESIGNS_SECTION: "Text rows at equal length: WordNet chains, generated "
                                                               "benchmarks, FEVEROUS and shuffled titles"}
    aliases = ("signal",)
    size_names = ("signal_items", "design_items", "n_boot", "n_perm")
    explains = "the semantic signals"

    def datasets(self, config) -> list[tuple[str, str]]:
        out = [(SIGNAL_DATASETS[s], f"signals ({s})") for s in SIGNALS if s in config.signals and s in SIGNAL_DATASETS]
        out += [("wordnet", "signals (wordnet_chains)")] if "wordnet_chains" in config.signals else []
        out += [("scifact", "signals (shuffle)")] if "shuffle" in config.signals else []
        return out + ([("feverous", "signals (feverous)")] if "feverous" in config.signals else [])

    def request(self, config) -> SignalsRequest:
        s = config.sizes
        return SignalsRequest(signals=tuple(x for x in SIGNALS if x in config.signals), items=s.signal_items,
                              embedding=Embedding(model=config.model, device=config.device, precision=config.precision,
                                                    runtime=config.runtime),
                              resampling=Resampling(n_boot=s.n_boot, n_perm=s.n_perm, seed=config.seed),
                              designs=tuple(d for d in DESIGNS if d in config.signals),
                              design_items=s.design_items if s.design_items is not None else
                              None if s.signal_items is None else max(s.signal_items, 20))  # 20: the generators' least

    def commands(self, request: SignalsRequest) -> list[Command]:
        out = [Command(tuple(request.correlate(sig).argv() + ["--json", f"{sig}.json"]), part=sig)
               for sig in request.signals]
        if "specificity" in request.signals:  # ambiguity: the same items, the number of noun senses
            out.append(Command(tuple(ambiguity_request(request.correlate("specificity")).argv()
                                     + ["--json", "ambiguity.json"]), part="ambiguity"))
        return out + design_commands(request.designs, request.design_items, request.embedding, request.resampling)

    def section_results(self, commands: Sequence[Command], outputs: Sequence[dict]) -> dict[str, dict]:
        """The signals' and the designs' JSON, each under its section, keyed by the command's part."""
        out: dict[str, dict] = {}
        for c, o in zip(commands, outputs):
            out.setdefault(DESIGNS_SECTION if c.part in DESIGNS else SECTION, {})[c.part] = o
        return out

    def run(self, ctx, request: SignalsRequest) -> dict[str, Section]:
        enc = ctx.encoder()
        results: dict[str, CorrelateResult] = {}
        unavailable = {sig: "not selected" for sig in SIGNALS if sig not in request.signals}
        missing: dict[str, dict] = {}  # signal -> the dataset it lacks (the report says once how to get it)
        figs = []
        for sig in request.signals:
            ctx.console.print(f"signals: {sig}")
            try:
                res = run_correlate(request.correlate(sig), encoder=enc, progress=True)
            except DataMissing as exc:
                unavailable[sig] = missing_reason({exc.dataset: missing_entry(exc)})
                missing[sig] = {"dataset": exc.dataset, **missing_entry(exc)}
                continue
            except (NormscopeError, FileNotFoundError, LookupError) as exc:
                unavailable[sig] = f"{type(exc).__name__}: {exc}".splitlines()[0]
                continue
            results[sig] = res
            figs.append(_figure(ctx, sig, res))
        if "specificity" in results:  # ambiguity (WordNet noun senses) on the specificity items
            ctx.console.print("signals: ambiguity (WordNet noun senses)")
            try:
                results["ambiguity"] = run_ambiguity(request.correlate("specificity"), encoder=enc, progress=True)
                figs.append(_figure(ctx, "ambiguity", results["ambiguity"]))
            except (NormscopeError, FileNotFoundError, LookupError) as exc:
                unavailable["ambiguity"] = f"{type(exc).__name__}: {exc}".splitlines()[0]
        elif "specificity" in missing:
            missing["ambiguity"] = missing["specificity"]
        pooling = _pooling_row(ctx, request, results.get("frequency"))
        designs = run_designs(ctx, request.designs, request.design_items, request.embedding, request.resampling)
        if not results and request.signals and not designs.ok:
            raise StageUnavailable("no signal could run: " + "; ".join(f"{k}: {v}" for k, v in unavailable.items()),
                                   missing={m["dataset"]: {"title": m["title"], "cause": m["cause"],
                                                           "claims": [g for g, x in missing.items()
                                                                      if x["dataset"] == m["dataset"]]}
                                            for m in missing.values()})
        if not results:  # only designs selected, or no signal could run while a design did
            why = "; ".join(f"{k}: {v}" for k, v in unavailable.items() if v != "not selected") or \
                "no semantic signal selected (--signals)"
            status = Status.NOT_RUN if not request.signals else Status.UNAVAILABLE
            return {SECTION: Section(SECTION, status=status, reason=why), DESIGNS_SECTION: designs}
        sizes = "; ".join(f"{k}: {r.dataset}" for k, r in results.items())
        sizes += f"; {request.resampling.n_boot} bootstrap resamples, {request.resampling.n_perm} permutations"
        commands = [c for c in self.commands(request) if c.part in results]
        dicts = {k: r.to_dict() for k, r in results.items()}
        return {DESIGNS_SECTION: designs, SECTION: Section(
            SECTION, commands=commands, sizes=sizes, result=dicts,
            derived={"unavailable": dict(sorted(unavailable.items(), key=lambda kv: _ORDER.index(kv[0]))),
                     "missing": missing, "commands": {c.part: c.text for c in commands}},
            key_numbers=_key_numbers(results), tables=_tables([_row(k, r) for k, r in results.items()],
                                                              [x for k, r in results.items() for x in _strata_rows(k, r)]),
            figures=figs, notes=_notes(results, unavailable), claims=signal_claims(results, unavailable) + [pooling])}

    def sentences(self, section: Section, *, explained_by: Sequence[str] = ()) -> list[str]:
        if section.key == DESIGNS_SECTION:
            return designs_sentences(section.result)
        return semantic_signal_sentences(section.result)

    def headline(self, section: Section) -> str:
        if section.key == DESIGNS_SECTION:
            return designs_headline(section)
        parts = []
        for k, v in (section.result or {}).items():
            rho, ci, _ = corr_parts(CorrelateResult.from_dict(v))
            parts.append(f"{k} Spearman \u03c1 {num(rho)} {ci_text(ci)}" if ci_excludes_zero(ci) is not None
                         else f"{k} Spearman \u03c1 {num(rho)}")
        return "; ".join(parts)

    def sizes_used(self, sizes, request: SignalsRequest, sections) -> dict[str, int]:
        used = {k: v for k, v in super().sizes_used(sizes, request, sections).items()
                if k not in ("signal_items", "design_items")}
        for d, r in ((sections[DESIGNS_SECTION].result or {}).items() if DESIGNS_SECTION in sections
                     and sections[DESIGNS_SECTION].ok else ()):
            st = r["stats"]["nei"] if d == "feverous" else r.get("stats")
            used[f"design_items.{d}"] = (r["n_hierarchies"] if d == "wordnet_chains" else r["n_pairs"] if d == "shuffle"
                                         else st["n_answerable"] + st["n_unanswerable"])
        sec = sections[SECTION]
        for sig, d in ((sec.result or {}).items() if sec.ok else ()):
            n = CorrelateResult.from_dict(d).n_items
            if isinstance(n, int):
                used[f"signal_items.{sig}"] = n
        return used
