"""Report stage ``probes``: heat, drift and the predicted norm (``normscope probe``), with the claims it tests."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import numpy as np

from normscope._format import MISSING, ci as ci_text, num, p_text
from normscope._io import atomic_path
from normscope.datasets import wordfreq_words
from normscope.errors import DataError, NormscopeError
from normscope.pairs import load_pairs
from normscope.probes import ProbeCorrelation, ProbeResult, plot_heat_drift, plot_predicted_vs_observed, run_probe
from normscope.probes.result import (Balance, BalanceCI, BalanceNull, BalanceP, BalanceStats, FiniteDifferences,
                                     KConvergence, SecondOrder)
from normscope.values import JunkSummary
from normscope.probes.claims import probe_claims
from normscope.report.context import refuse_static
from normscope.report.missing import data_unavailable
from normscope.report.sizes import FULL
from normscope.report.stage import Command, Figure, KeyNumber, Section, Stage, Table
from normscope.report.text import ci_excludes_zero, correlation_sentence, corr_parts, strength
from normscope.requests import Request, Resampling, param
from normscope.requests.probe import ProbeRequest

__all__ = ["ProbesStage", "ProbesRequest", "prediction_reading", "probe_words", "POPULATION",
           "equilibrium_sentences"]

SECTION = "equilibrium_theory"
#: The probed population: the 1,000 most frequent English words (wordfreq). P of them are drawn at
#: random, so a smaller P estimates the same correlations less precisely instead of other ones (the
#: signs of the weak statistics differ between the top 100, 500 and 1,000 words; docs/probe.md).
POPULATION = 1000
#: File (in the report folder) with the drawn probe words, one JSON object ``{id, text}`` per line.
WORDS_FILE = "probe_words.jsonl"


@dataclasses.dataclass(frozen=True)
class ProbesRequest(Request):
    """The probe (``probe``: K batches of B pairs, resampling) of the report's model on P probe words drawn from
    the :data:`POPULATION` most frequent words.

    ``pairs`` ``"auto"``: WordNet (term, gloss) pairs, else SciFact train pairs (the run resolves it and
    its commands name the source used).
    """

    model: str
    device: str = "cpu"
    items: int = param(1000, min=2)
    pairs: Literal["auto", "wordnet", "scifact"] = "auto"
    probe: ProbeRequest = ProbeRequest()


def probe_words(P: int, seed: int) -> tuple[list[str], list[str]]:
    """The report's probe items: P words drawn without replacement (``default_rng(seed)``) from the
    :data:`POPULATION` most frequent English words, in frequency order; all of the top P when P >= it.

    Returns
    -------
    ids, texts : list of str
        ``ids`` are the words' 0-based frequency ranks.
    """
    words = wordfreq_words(max(P, POPULATION))
    ranks = np.arange(len(words)) if P >= len(words) else np.sort(
        np.random.default_rng(seed).choice(len(words), size=P, replace=False))
    return [str(int(i)) for i in ranks], [words[int(i)] for i in ranks]


def _pair_source(spec: str):
    """``(spec, pairs)``: WordNet (term, gloss) pairs, else SciFact train pairs for ``"auto"``;
    :class:`~normscope.report.stage.StageUnavailable` naming every candidate when none loads."""
    errors: list[DataError] = []
    for cand in (("wordnet", "scifact") if spec == "auto" else (spec,)):
        try:
            return cand, load_pairs(cand)
        except DataError as exc:
            errors.append(exc)
        except (NormscopeError, OSError, LookupError) as exc:
            errors.append(DataError(f"{cand}: {exc}".splitlines()[0]))
    raise data_unavailable(errors, "its training-like pairs")


#: Why R_eq(x; c_fit) is the reading of the prediction, by ``decay_reading``.
_CFIT_WHY = {
    "trained_without_decay": "the checkpoint was trained without weight decay, so (E7) has no lambda-based prediction "
                             "for it",
    "unknown": "the checkpoint's weight decay is unknown",
    "what_if": "the given weight decay is a what-if value, not the checkpoint's",
}


def prediction_reading(res: dict) -> tuple[str, str]:
    """Which correlation tests "R_eq predicts R" and why: ``(key, reading)`` from a probe summary dict.

    The checkpoint's own lambda gives R_eq(x; lambda_rad) (``corr_req_lambda_rad_norm``); otherwise
    R_eq(x; c_fit) with one fitted c (``corr_req_norm``, docs/theory.md section 6, step 6(ii)).
    """
    r = ProbeResult.from_dict(res)
    dr = r.decay_reading or "unknown"
    if dr == "checkpoint" and r.corr_req_lambda_rad_norm is not None:
        return "corr_req_lambda_rad_norm", ("R_eq(x; \u03bb_rad) with the checkpoint's own training weight decay "
                                            f"\u03bb = {r.weight_decay}")
    return "corr_req_norm", ("R_eq(x; c_fit), one fitted c = median q (docs/theory.md section 6, step 6(ii)), because "
                             + _CFIT_WHY.get(dr, "no lambda applies") + ": a rank test of the (E7) shape, not a "
                             "prediction from the checkpoint's training values")


def _fmt(x) -> str:
    return "n/a" if x is None else f"{x:+.3f}"


def _balance_numbers(b: Balance) -> list[KeyNumber]:
    """Key numbers of Theorem 1's requirement q(x) = c (:mod:`normscope.probes.balance`)."""
    st, null = b.statistics or BalanceStats(), b.null or BalanceNull()
    cis, p_below = b.ci or BalanceCI(), b.p_below or BalanceP()
    rows = []
    for name, label in (("dispersion", "dispersion of the implied decay, mean |q/c_fit − 1| (0 = one decay "
                                       "balances every item)"),
                        ("share_negative_q", "share of items with q < 0"),
                        ("mean_abs_rel_error", "mean |R_eq(c_fit) − R| / R")):
        value = getattr(st, name)
        if value is None:
            continue
        n = getattr(null, name)
        ci = getattr(cis, name)
        p = p_text(getattr(p_below, name), int(b.n_perm or 0))
        null_mean = n.mean if n is not None and n.mean is not None else float("nan")
        rows.append(KeyNumber(f"balance.statistics.{name}", label,
                              f"{value:.3g} {ci_text(ci)}; permutation null mean {null_mean:.3g}, "
                              f"{p} (one-sided, below)" if n is not None and n.to_json() else f"{value:.3g} {ci_text(ci)}"))
    if st.heat_share is not None:
        rows.append(KeyNumber("balance.statistics.heat_share",
                              "median heat share of the balance, Σ²/2R⁴ over |D~|/R² + Σ²/2R⁴",
                              st.heat_share))
    return rows


def _excluded_text(block: ProbeCorrelation, total) -> str:
    """Which items a correlation left out and why, as a sentence, from the block's own mask counts."""
    n_ex = int(block.n_excluded or 0)
    if not n_ex:
        return f"All {num(total)} items enter this check (no root of (E7) is undefined)."
    why = "; ".join(f"{num(v)} with {k}" for k, v in (block.excluded or {}).items())
    return f"{num(n_ex)} of {num(total)} items are left out of this check because their R_eq is undefined ({why})."


def _optimizer(res: ProbeResult) -> str:
    """The optimizer the checkpoint was trained with, when the training values say (``""`` otherwise)."""
    return str(res.training_value("optimizer") or "")


def _prediction_sentence(res: ProbeResult, key: str, reading: str | None) -> str | None:
    """The first sentence: does R_eq predict R (or why the comparison could not be made)."""
    req = getattr(res, key)
    rho, ci, m = corr_parts(req)
    if rho is None:
        if req is None:
            return None
        why = (f"the fitted decay c_fit = {num(res.c_fit)} is not positive, so (E7) predicts no finite norm"
               if res.c_fit is not None and res.c_fit <= 0 else (req.note or "too few items have a prediction"))
        return (f"The predicted-vs-observed comparison could not be made on this model: {why} "
                f"({num(req.n or 0)} items with a prediction).")
    stats = f"{m} = {num(rho)}, {_ci_words(ci)} (CI over batches and items), n = {num(req.n)}"
    if ci_excludes_zero(ci) and ci[1] < 0:
        sent = f"The prediction fails on this model: the norm predicted by (E7) falls as the observed norm rises ({stats})."
    elif ci_excludes_zero(ci):
        sent = f"The observed norm rises with the norm predicted by (E7) ({strength(rho)}; {stats})."
    else:
        sent = f"No evidence that the norm predicted by (E7) tracks the observed norm: the CI includes 0 ({stats})."
    if reading:
        sent += f" Reading: {reading}."
    sent += " " + _excluded_text(req, res.n_items)
    opt = _optimizer(res)
    if opt.lower().startswith("adam"):
        sent += (f" This model was trained with {opt}, for which the SGD form of Theorem 1 is not expected to "
                 "hold quantitatively: read this as a rank statistic.")
    return sent


def _ci_words(ci) -> str:
    return "no CI" if ci_excludes_zero(ci) is None else f"95% CI {num(ci[0])} to {num(ci[1])}"


def _correlation_sentence(x: str, y: str, c: ProbeCorrelation | None) -> str | None:
    rho, ci, m = corr_parts(c)
    return None if rho is None else correlation_sentence(x, y, rho, ci, c.n, method=m)


def equilibrium_sentences(result: dict | None, derived: dict | None = None) -> list[str]:
    """Sentences of the probes section, every number from the correlation block it describes.

    The prediction comes first; when its CI lies below 0 the first words say that it fails on this
    model. Each correlation's sentence uses its own ``n``; "left out" counts come from the same
    mask as the statistic (``n_excluded``, ``excluded``).
    """
    res = ProbeResult.from_dict(result)
    key, reading = ("corr_req_norm", None) if not derived else (derived["prediction_key"], derived["prediction_reading"])
    out = [s for s in [_prediction_sentence(res, key, reading)] if s]
    heat = _correlation_sentence("the norm", "the heat \u03a3\u00b2", res.corr_norm_heat)
    if heat:
        out.append(heat + " Heat \u03a3\u00b2 = R\u00b2 E||\u0394||\u00b2 contains R\u00b2 by construction:"
                          " the R-free displacement below is the fair test.")
    disp = _correlation_sentence("the norm", "the R-free displacement E||a||\u00b2", res.corr_norm_displacement)
    if disp:
        if ci_excludes_zero(corr_parts(res.corr_norm_heat)[1]) and ci_excludes_zero(corr_parts(res.corr_norm_displacement)[1]) is False:
            disp += (" Since heat contains R\u00b2 by definition, the heat correlation above may be mechanical: "
                     "the R-free quantity shows no relation.")
        out.append(disp)
    drift = _correlation_sentence("the norm", "the radial drift D~", res.corr_norm_drift)
    if drift:
        out.append(drift)
    if res.n_negative_q:
        out.append(f"{num(res.n_negative_q)} items have q < 0 (their measured radial motion is inward even without "
                   "decay); (E7) still has a positive root for them, so they stay in the prediction check.")
    return out


def _table_rows(res: ProbeResult) -> list[list]:
    return [[label, c.pearson, ci_text(c.ci.pearson if c.ci else None), c.spearman,
             ci_text(c.ci.spearman if c.ci else None),
             ci_text(c.ci_items_only.spearman if c.ci_items_only else None), c.n, c.p_text]
            for _, label, c in res.correlations()]


def _k_table(res: ProbeResult) -> list[Table]:
    kc = res.k_convergence or KConvergence()
    if not kc.rows:
        return []
    heads = [k for k in kc["rows"][0] if k != "batches"]
    labels = res.labels()
    cols = ["batches K"] + [f"{labels[h][0]}: Spearman \u03c1 [95% CI]" for h in heads]
    rows = [[row["batches"], *[f"{_fmt(row[h]['spearman'])} {ci_text(row[h]['ci'])}" for h in heads]]
            for row in kc["rows"]]
    return [Table("Convergence in the number of batches K (the first K/4, K/2, K batches)", cols, rows)]


def _key_numbers(res: ProbeResult, key: str) -> list[KeyNumber]:
    labels = res.labels()
    req = getattr(res, key) or ProbeCorrelation()
    so = res.second_order or SecondOrder()
    chk = so.check if so.check is not None and so.check.to_json() else (res.fd or FiniteDifferences()).check
    spot = (f"; float64 spot check: median {chk.median_rel_diff:.2%}, max {chk.max_rel_diff:.2%} of mean |D2|"
            if chk is not None and chk.to_json() else "")
    return [
        KeyNumber(f"{key}.spearman", f"Spearman \u03c1, {labels[key][0]}", req.spearman),
        KeyNumber(f"{key}.ci.spearman", "95% CI (batches and items)", ci_text(req.ci.spearman if req.ci else None)),
        KeyNumber(f"{key}.n,n_excluded", "items in the prediction check / left out (no (E7) root)",
                  f"{req.n} / {req.n_excluded}", "items"),
        KeyNumber("heat_cancelled_by_d2", labels["heat_cancelled_by_d2"][0], res.heat_cancelled_by_d2),
        KeyNumber("n_negative_q", labels["n_negative_q"][0], res.n_negative_q, "items"),
        KeyNumber("n_negative_lambda_rad", labels["n_negative_lambda_rad"][0], res.n_negative_lambda_rad, "items"),
        KeyNumber("c_fit", labels["c_fit"][0], res.c_fit, labels["c_fit"][1]),
        *_balance_numbers(res.balance or Balance()),
        KeyNumber("batch_size,batches,tau", "probe batch size B / batches K / \u03c4",
                  f"{res.batch_size} / {res.batches} / {res.tau}"),
        KeyNumber("lr,weight_decay", "\u03b7 / \u03bb used", f"{res.lr} / {res.weight_decay}"),
        KeyNumber("second_order.description", "D2 second-order term", f"{so.description or ''}{spot}"),
        KeyNumber("junk.count", labels["junk"][0], (res.junk or JunkSummary()).count, "items"),
    ]


def _notes(res: ProbeResult, reading: str, P: int, K: int) -> list[str]:
    """The caveats (the design below the sign-stable sizes first)."""
    labels = res.labels()
    notes = [f"prediction reading: {reading}"] + list(res.caveats or [])
    if P < FULL.probe_items or K < FULL.probe_batches:
        notes.insert(0, f"P = {P} items and K = {K} batches are below the report's default P = {FULL.probe_items}, "
                        f"K = {FULL.probe_batches}, the smallest sizes at which the headline signs were stable on "
                        "all-MiniLM-L6-v2 (docs/probe.md): weak correlations may change sign between runs, so the "
                        "scorecard does not decide the probe's claims at this size")
    for k in ("batch_size_source", "tau_source", "lr_source", "weight_decay_source"):
        notes.append(f"{labels[k][0]}: {getattr(res, k)}")
    for k, v in (res.training or {}).items():
        if isinstance(v, dict) and v.get("value") is not None:
            notes.append(f"training {k}: {v['value']} (source: {v['source']})")
    return notes


class ProbesStage(Stage[ProbesRequest]):
    """Heat and radial drift of the report's model by K virtual SGD steps; R_eq (E7) against the observed norm."""

    name = "probes"
    sections = {SECTION: "Equilibrium theory: predicted vs observed norm"}
    aliases = ("probe",)
    size_names = ("probe_items", "probe_batches", "probe_batch_size", "n_boot")
    explains = "the equilibrium theory"
    reads = ("wordnet",)

    def request(self, config) -> ProbesRequest:
        s = config.sizes
        probe = ProbeRequest(batches=s.probe_batches or 16, batch_size=s.probe_batch_size, precision=config.precision,
                             resampling=Resampling(n_boot=s.n_boot, seed=config.seed))
        return ProbesRequest(model=config.model, device=config.device, items=s.probe_items or POPULATION, probe=probe)

    def commands(self, request: ProbesRequest) -> list[Command]:
        items = WORDS_FILE if request.items < POPULATION else f"wordfreq:{request.items}"
        argv = ["normscope", "probe", items, "--model", request.model, "--pairs", request.pairs, *request.probe.argv()]
        if request.device != "cpu":
            argv += ["--device", request.device]
        return [Command(tuple(argv + ["--json", "probe.json"]))]

    def run(self, ctx, request: ProbesRequest) -> dict[str, Section]:
        refuse_static(ctx)  # GloVe: no network to differentiate
        spec, pairs = _pair_source(request.pairs)
        request = request.replace(pairs=spec)
        P, K, seed, n_boot = request.items, request.probe.batches, request.probe.resampling.seed, request.probe.resampling.n_boot
        ids, texts = probe_words(P, seed)
        res = run_probe(ctx.torch_encoder(), texts, pairs, request.probe, ids=ids, progress=True)
        summary = res.to_dict()
        if P < POPULATION:  # the drawn words, so that the command reproduces the section
            with atomic_path(ctx.out / WORDS_FILE) as tmp:
                Path(tmp).write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in zip(ids, texts)))
        p1 = plot_predicted_vs_observed(res, ctx.figure_path("equilibrium_predicted_vs_observed.png"))
        p2 = plot_heat_drift(res, ctx.figure_path("equilibrium_heat_drift.png"))
        figs = [Figure(Path(p1).name, "Predicted norm R_eq(x; c_fit) from the probed heat and drift (E7) against the "
                       "observed raw norm R = ||z||, one point per word; dashed: y = x."),
                Figure(Path(p2).name, "Heat \u03a3\u00b2, radial drift D~ and the R-free displacement E||a||\u00b2 "
                       "against the observed norm R (the last panel guards against the circularity of heat, which "
                       "contains R\u00b2).")]
        key, reading = prediction_reading(summary)
        notes = _notes(res, reading, P, K)
        tables = [Table("Correlations with the observed norm (95% CIs over batches and items, and over items only) and "
                        "circularity guards",
                        ["comparison", "Pearson r", "95% CI (batches+items)", "Spearman \u03c1",
                         "95% CI (batches+items)", "Spearman 95% CI (items only)", "n", "p (items permuted)"],
                        _table_rows(res))] + _k_table(res)
        drawn = (f"drawn at random (seed {seed}) from the {POPULATION:,} most frequent English words (wordfreq); "
                 f"{WORDS_FILE} holds them" if P < POPULATION else "the most frequent English words (wordfreq)")
        sizes = (f"P = {res.n_items} probe words {drawn}, K = {res.batches} virtual SGD batches of "
                 f"B = {res.batch_size} {spec} pairs ({res.pairs}); {n_boot} bootstrap replicates per CI")
        return {SECTION: Section(
            SECTION, commands=self.commands(request), sizes=sizes, result=summary,
            derived={"pairs_spec": spec, "prediction_key": key, "prediction_reading": reading},
            key_numbers=_key_numbers(res, key), tables=tables, figures=figs, notes=notes,
            claims=probe_claims(res))}

    def sentences(self, section: Section, *, explained_by: Sequence[str] = ()) -> list[str]:
        return equilibrium_sentences(section.result, section.derived)

    def headline(self, section: Section) -> str:
        res = ProbeResult.from_dict(section.result)
        req = getattr(res, section.derived["prediction_key"]) or ProbeCorrelation()
        return (f"Spearman R_eq vs R {_rho_ci(req)} (n = {req.n}; CIs over batches and items); "
                f"Spearman R vs heat {_rho_ci(res.corr_norm_heat)}; "
                f"Spearman R vs drift {_rho_ci(res.corr_norm_drift)}; q<0: {res.n_negative_q}")

    def sizes_used(self, sizes, request: ProbesRequest, sections) -> dict[str, int]:
        used = super().sizes_used(sizes, request, sections)
        sec = sections[SECTION]
        if sec.ok and sec.result:
            res = ProbeResult.from_dict(sec.result)
            for size, value in (("probe_items", res.n_items), ("probe_batches", res.batches),
                                ("probe_batch_size", res.batch_size)):
                if isinstance(value, int) and not isinstance(value, bool):
                    used[size] = value
        return used


def _rho_ci(c: ProbeCorrelation | None) -> str:
    rho, ci, _ = corr_parts(c)
    if rho is None:
        return MISSING
    return f"{num(rho)} {ci_text(ci)}" if ci_excludes_zero(ci) is not None else num(rho)
