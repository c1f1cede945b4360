"""Scorecard rows of the semantic-signal claims (verdict rules: :mod:`normscope.claims`).

Each row follows the *length-matched* figure of ``normscope correlate`` (issue 39): the partial
Spearman rho within strata of equal token count (each item compared only with items of its own
length as the model saw it, and of its own source), frequency partialled where it is a control;
the pooled Spearman rho and the partial rho with a linear length control stand beside it. Where no
length-matched figure exists (too few items share a length) the row follows the partial rho, else
the plain rho. The paper calls the associations with specificity, frequency and human uncertainty
"strong" and states no direction for any of them: each is an association without a direction whose
size is read against the declared strong minimum |rho| >= :data:`~normscope.claims.STRONG_RHO`. A CI
wholly inside +-0.3 is ``refuted`` in size; when the raw (plain) CI excludes 0 and the controlled one
does not, the row says so: "the raw association exists and is explained by the controls".

Each builder reads its design's typed result by attribute: a :class:`~normscope.signals.result.CorrelateResult`
(``normscope correlate``), or the ``to_dict()`` of a shuffle, abstention or hierarchy result read once as its
:class:`~normscope.signals.result.ShuffleSummary` / :class:`~normscope.signals.result.AbstentionSummary` /
:class:`~normscope.signals.result.HierarchySummary` (a result's ``--json`` dict is accepted and read back the same
way). Each returns a :class:`~normscope.claims.ClaimRow`.
"""

from __future__ import annotations

from collections.abc import Mapping

from normscope._format import plural
from normscope.claims import ClaimRow, Gate, claim_row, judge, not_testable_row
from normscope.signals.result import (AbstentionStats, AbstentionSummary, CorrelateResult, FeverousStats,
                                      FeverousSummary, FeverousTime, HierarchySummary, KruskalWallis, LengthMatched,
                                      MatchedShare, PartialCorrelation, PoolingTrends, ShuffleStats, ShuffleSummary)
from normscope.values import Correlation

__all__ = ["signal_claims", "ambiguity_claim", "pooling_claim", "shuffle_claim", "abstention_claim", "feverous_claim", "hierarchy_claim", "controlled_figure", "SIGNAL_CLAIMS", "EXPLAINED_BY_CONTROLS",
           "AMBIGUITY_REFERENCE"]

#: Share of tied pairs from which an encoder counts as blind to word order (its shuffle row: not testable here).
ORDER_BLIND = 0.99
#: Fewest untied pairs per source for a share, a sign test and a CI of the shuffle row.
MIN_PAIRS = 10
#: Fewest clusters whose bootstrap decides the hierarchy row (one cluster gives a zero-width CI).
MIN_CLUSTERS = 10

#: The signals with a claim row, in scorecard order.
SIGNAL_CLAIMS: tuple[str, ...] = ("specificity", "frequency", "uncertainty")
#: The sentence of a row whose raw association is real (raw CI excludes 0) and vanishes under the controls
#: (controlled CI includes 0).
EXPLAINED_BY_CONTROLS = "the raw association exists and is explained by the controls"


def _excludes_zero(ci) -> bool:
    return bool(ci) and None not in ci and (ci[0] > 0 or ci[1] < 0)


def _includes_zero(ci) -> bool:
    return bool(ci) and None not in ci and ci[0] <= 0 <= ci[1]


def _correlate(r) -> CorrelateResult:
    """``r`` as a :class:`CorrelateResult` (its ``to_dict()`` given: read back once)."""
    return r if isinstance(r, CorrelateResult) else CorrelateResult.from_dict(r)


def _summary(r, cls):
    """A design's result (or its ``to_dict()``) as its summary Record ``cls``."""
    return cls.from_json(r.to_dict() if hasattr(r, "to_dict") else dict(r))


def controlled_figure(r, name: str | None = None) -> tuple:
    """``(estimate, ci, n, what)`` of the figure a claim follows: the length-matched rho when there is one, else the
    partial rho, else rho (``name``: the row's name when it is not the result's signal, e.g. ``ambiguity``).

    Parameters
    ----------
    r : CorrelateResult or dict
        The signal's result (or its ``to_dict()``).
    name : str, optional
        The row's name when it is not ``r.signal``.

    Returns
    -------
    tuple
        ``(estimate, ci, n, what)``: the figure, its CI (an Interval or None), its items and the words saying what it is
        and what its CI resamples.
    """
    r = _correlate(r)
    sig = {"ambiguity": "noun senses"}.get(name or "", r.signal)
    lm = r.length_matched or LengthMatched()
    if lm.rho is not None:
        unit = "word count" if str(lm.length or "").startswith("words") else "token count"
        ctrl = f" | {', '.join(lm.controls)}" if lm.controls else ""
        src = f" and {r.by}" if r.strata else ""
        resampled = (f"CI resamples whole {lm.ci_unit} with all their texts" if (lm.ci_unit or "items") != "items"
                     else f"CI resamples items within each stratum of equal {unit}{src}")
        return lm.rho, lm.ci, lm.n, (
            f"length-matched Spearman \u03c1(norm, {sig}){ctrl}, within equal {unit}{src}; {resampled}")
    part = r.partial_spearman or PartialCorrelation()
    if part.rho is not None:
        within = f"; CI resamples items within each {r.by}" if r.strata else "; CI resamples items"
        return part.rho, part.ci, part.n, (
            f"partial Spearman \u03c1(norm, {sig}) | {', '.join(part.controls or [])}{within}")
    return r.spearman, r.spearman_ci, r.n, f"Spearman \u03c1(norm, {sig}); CI resamples items"


def _ci(ci) -> str:
    return f" [{ci[0]:+.3g}, {ci[1]:+.3g}]" if ci and None not in ci else ""


def _beside(r: CorrelateResult, est) -> str:
    """The pooled rho, the linear-length partial rho and the equal-length pairs' share beside the deciding figure."""
    out = []
    if r.spearman is not None and r.spearman != est:
        out.append(f"pooled Spearman {r.spearman:+.3g}{_ci(r.spearman_ci)}")
    part = r.partial_spearman or PartialCorrelation()
    if part.rho is not None and part.rho != est:
        out.append(f"partial on {', '.join(part.controls or [])} {part.rho:+.3g}{_ci(part.ci)}")
    pairs = (r.length_matched or LengthMatched()).pairs or MatchedShare()
    if pairs.share is not None:
        out.append(f"larger {r.signal} has the larger norm in {100 * pairs.share:.1f} % "
                   f"[{100 * pairs.ci[0]:.1f}, {100 * pairs.ci[1]:.1f}] of "
                   f"{pairs.n_concordant + pairs.n_discordant} equal-length pairs (Wilson)")
    return "; ".join(out)


def _details(r: CorrelateResult) -> dict:
    lm = r.length_matched or LengthMatched()
    part = r.partial_spearman or PartialCorrelation()
    pairs = lm.pairs or MatchedShare()
    return {"plain Spearman rho": r.spearman, "its 95% CI": r.spearman_ci, "n": r.n,
            "partial rho (linear controls)": part.rho, "partial CI": part.ci,
            "length-matched rho": lm.rho, "length-matched CI": lm.ci,
            "items alone at their length (unmatched)": lm.n_unmatched,
            "equal-length pairs: share larger covariate, larger norm": pairs.share,
            "its Wilson CI": pairs.ci}


def signal_claims(results: Mapping, unavailable: Mapping[str, str]) -> list[ClaimRow]:
    """Rows ``specificity``, ``frequency``, ``uncertainty`` and ``ambiguity`` from ``normscope correlate`` results
    (``results["ambiguity"]``: :func:`normscope.signals.ambiguity.run_ambiguity`'s).

    Parameters
    ----------
    results : mapping of signal -> CorrelateResult or dict
        The result (or its :meth:`CorrelateResult.to_dict`) of each signal that ran.
    unavailable : mapping of signal -> str
        Why a signal did not run.

    Returns
    -------
    list of ClaimRow
    """
    rows = []
    for key in SIGNAL_CLAIMS:
        if results.get(key) is None:
            rows.append(not_testable_row(key, f"the {key} signal did not run ({unavailable.get(key, 'not run')})"))
            continue
        r = _correlate(results[key])
        est, ci, n, what = controlled_figure(r)
        j = judge(key, est, ci)
        controlled = est is not None and est != r.spearman
        if controlled and _excludes_zero(r.spearman_ci) and _includes_zero(ci):
            raw = (f"{EXPLAINED_BY_CONTROLS} (plain Spearman CI [{r.spearman_ci[0]:+.3g}, "
                   f"{r.spearman_ci[1]:+.3g}] excludes 0; the controlled CI includes 0)")
            j = j.but(reason=(f"{j.reason}; {EXPLAINED_BY_CONTROLS}" if j.verdict == "refuted"
                              else f"{EXPLAINED_BY_CONTROLS}; {j.reason}"), why=f"{j.why}; {raw}")
        strata = "; ".join(f"{s.name}: \u03c1 = {s.spearman:.3g}" for s in r.strata or [] if s.spearman is not None)
        rows.append(claim_row(key, measured=est, ci=ci, judged=j, n=n, what=what, label=what.split(";")[0].split(" |")[0],
                              tested_on=f"{r.model}, {r.dataset}",
                              statistic=f"signals: {what.split(';')[0]}", beside=_beside(r, est),
                              details=_details(r), note=strata))
    amb = results.get("ambiguity")
    rows.append(ambiguity_claim(None if amb is None else _correlate(amb),
                                unavailable.get("ambiguity") or unavailable.get("specificity") or "not run"))
    return rows


def pooling_claim(trends: PoolingTrends | dict | None, reason: str = "not run") -> ClaimRow:
    """Row ``mean_pooling``: do CLS and mean pooling give the norm the same trend with Zipf frequency?

    Parameters
    ----------
    trends : PoolingTrends, dict or None
        :func:`normscope.signals.pooling.pooling_trends` (read as :class:`PoolingTrends`); None: ``reason`` says why
        it did not run.
    reason : str
        Why it did not run.

    Returns
    -------
    ClaimRow
    """
    from normscope.signals.pooling import pooling_direction

    if trends is None:
        return not_testable_row("mean_pooling", reason)
    t = PoolingTrends.from_json(trends)
    c, m = t.cls, t.mean
    d = pooling_direction(t)
    j = judge("mean_pooling", c.spearman, c.spearman_ci, direction=d)
    if j.verdict in ("reproduced", "refuted", "inconclusive"):  # the direction is two CIs' sides, not a null
        j = j.but(reason=d[1].rsplit(": ", 1)[-1])
    return claim_row("mean_pooling", measured=c.spearman, ci=c.spearman_ci, judged=j, n=t.n,
                     label="Spearman \u03c1(norm, Zipf), CLS pooling",
                     beside=(f"mean pooling {m.spearman:+.3g} [{m.spearman_ci[0]:+.3g}, "
                             f"{m.spearman_ci[1]:+.3g}]"),
                     tested_on=f"{t.model} ({t.weights}), the frequency signal's words",
                     statistic="signals: Spearman rho(norm, Zipf) CLS vs mean pooling, signs",
                     what=("Spearman \u03c1(norm, Zipf frequency) of the same words with CLS pooling (shown) and with "
                           "mean pooling (beside); 'similar trends': both CIs exclude 0 on one side; percentile "
                           "bootstrap CIs resampling words, each pooling on its own"),
                     details={"CLS pooling": c, "mean pooling": m})


#: The reference figure the ambiguity row is shown beside (an earlier measurement, not the paper's).
AMBIGUITY_REFERENCE = "an earlier reference measured \u03c1(norm, senses) = -0.19 on all-MiniLM-L6-v2, without controls"


def ambiguity_claim(r, reason: str = "not run") -> ClaimRow:
    """Row ``ambiguity``: partial Spearman rho(norm, WordNet noun senses | frequency, length), claimed positive
    (the mechanism "conflicting gradients -> larger norm"; :mod:`normscope.signals.ambiguity`).

    Parameters
    ----------
    r : CorrelateResult, dict or None
        :func:`normscope.signals.ambiguity.run_ambiguity`'s result (or its ``to_dict()``); None: ``reason`` says
        why it did not run.
    reason : str
        Why it did not run.

    Returns
    -------
    ClaimRow
    """
    if r is None:
        return not_testable_row("ambiguity", f"the ambiguity statistic did not run ({reason})")
    r = _correlate(r)
    est, ci, n, what = controlled_figure(r, "ambiguity")
    j = judge("ambiguity", est, ci)
    return claim_row("ambiguity", measured=est, ci=ci, judged=j, n=n, what=what + " (WordNet 3.0 noun senses)",
                     label=what.split(";")[0].split(" |")[0], tested_on=f"{r.model}, {r.dataset}",
                     statistic=f"signals: {what.split(';')[0]}",
                     beside=(f"plain Spearman {r.spearman:+.3g}" if r.spearman is not None else ""),
                     details={"plain Spearman rho": r.spearman, "its 95% CI": r.spearman_ci, "n": r.n},
                     note=AMBIGUITY_REFERENCE)


def _or(x, default):
    return default if x is None else x


def shuffle_claim(r) -> ClaimRow:
    """The row ``atypical_input_shuffle`` from :class:`normscope.signals.shuffle.ShuffleResult` (or its
    ``to_dict()``), read as a :class:`~normscope.signals.result.ShuffleSummary`.

    Judged on the pooled median relative norm change ``||z(shuffled)|| / ||z(text)|| - 1`` (claimed
    negative) with its bootstrap CI over pairs, the two-sided sign test p beside it (a CI that
    excludes 0 while the sign test does not reject is ``inconclusive``); the share of pairs whose
    shuffled copy has the smaller norm (Wilson CI) is shown beside. The paper states no figure: the
    row is exploratory and has no claimed size.
    """
    s = _summary(r, ShuffleSummary)
    pooled = s.pooled or ShuffleStats()
    est, ci = pooled.median_rel_change, pooled.median_ci
    within = f" within each {s.by}" if s.strata else ""
    what = (f"median relative norm change of the word-shuffled copy, ||z(shuffled)||/||z(text)|| - 1; CI resamples "
            f"pairs{within} (the shuffles are fixed by the seed)")
    share = pooled.share_smaller
    share_ci = pooled.share_ci
    beside = (f"shuffled smaller in {100 * share:.1f} % [{100 * share_ci[0]:.1f}, {100 * share_ci[1]:.1f}] of "
              f"{_or(pooled.n_smaller, 0) + _or(pooled.n_larger, 0)} untied pairs (Wilson); sign test "
              f"p = {pooled.sign_p:.3g}" if share is not None else "")
    gate = None
    n_pairs, n_ties = pooled.n_pairs or 0, pooled.n_ties or 0
    if n_pairs and n_ties >= ORDER_BLIND * n_pairs:
        gate = Gate(False, f"{n_ties} of {n_pairs} pairs tie: this encoder's norm (almost) ignores word order",
                    "an encoder whose pooling sees word order", verdict="not testable here")
    elif share is None:
        gate = Gate(False, f"fewer than {MIN_PAIRS} untied pairs", f"at least {MIN_PAIRS} untied pairs")
    j = judge("atypical_input_shuffle", est, ci, p=pooled.sign_p, gate=gate)
    strata = "; ".join(f"{x.name}: median {100 * x.median_rel_change:+.2f} %" for x in s.strata or []
                       if x.median_rel_change is not None)
    return claim_row("atypical_input_shuffle", measured=est, ci=ci, judged=j, n=pooled.n_pairs, what=what,
                     label="median relative norm change (shuffled vs text)", percent=True,
                     tested_on=f"{s.model}, {s.dataset}",
                     statistic="signals: shuffle median relative norm change", beside=beside,
                     details={"share shuffled smaller": share, "its 95% Wilson CI": share_ci,
                              "sign test p": pooled.sign_p, "ties": pooled.n_ties,
                              "pairs with different token counts": s.n_token_mismatch}, note=strata)


def abstention_claim(r) -> ClaimRow:
    """The row ``abstention_treecut`` / ``abstention_ruletaker`` from
    :class:`normscope.signals.abstention.AbstentionResult` (or its ``to_dict()``), read as an
    :class:`~normscope.signals.result.AbstentionSummary`.

    Judged on the **length-matched** figure: the matched-pairs rank-biserial r_rb = 2 share - 1 of
    answerable/unanswerable pairs at equal token count (share: the unanswerable item has the larger
    norm), its CI the Wilson interval mapped the same way, the exact sign test p beside it (a CI that
    excludes 0 while the test does not reject is ``inconclusive``). The norm may flag either way: the
    claim states no direction. Fewer than :data:`MIN_PAIRS` untied pairs: ``not decided at this size``.
    The pooled AUROC, the AUROC of the token count and the length-partial rho stand beside it.
    """
    a = _summary(r, AbstentionSummary)
    st = a.stats or AbstentionStats()
    key = f"abstention_{a.signal}"
    est, ci = st.r_rb, st.r_rb_ci
    untied = (st.n_pairs or 0) - (st.n_ties or 0)
    gate = None
    if est is None or untied < MIN_PAIRS:
        gate = Gate(False, f"{untied} untied equal-length pairs of an answerable and an unanswerable item",
                    f"at least {MIN_PAIRS} untied equal-length pairs (more items, or items closer in length)")
    j = judge(key, est, ci, p=st.matched_p, gate=gate)
    beside = ""
    if st.auroc_norm is not None:
        beside = (f"pooled AUROC of the norm {st.auroc_norm:.3f} (token count alone: {st.auroc_tokens:.3f}); "
                  f"partial \u03c1 on tokens {st.partial_rho:+.3g}{_ci(st.partial_ci)}")
        if st.matched_share is not None:
            beside += (f"; unanswerable larger in {100 * st.matched_share:.1f} % [{100 * st.matched_ci[0]:.1f}, "
                       f"{100 * st.matched_ci[1]:.1f}] of {untied} equal-length pairs (Wilson)")
    what = ("matched-pairs rank-biserial r = 2 share - 1 over answerable/unanswerable pairs at equal token count "
            "(share: the unanswerable item has the larger norm); CI: the Wilson interval of the share, mapped")
    return claim_row(key, measured=est, ci=ci, judged=j, n=st.n_pairs, what=what,
                     label="length-matched rank-biserial r (unanswerable vs answerable norm)",
                     tested_on=f"{a.model}, {a.dataset}",
                     statistic=f"signals: {a.signal} length-matched rank-biserial r", beside=beside,
                     details={"pooled AUROC of the norm": st.auroc_norm, "its Mann-Whitney p": st.auroc_norm_p,
                              "AUROC of the token count": st.auroc_tokens,
                              "partial rho (unanswerable, norm | tokens)": st.partial_rho,
                              "its CI": st.partial_ci, "matched share": st.matched_share,
                              "its Wilson CI": st.matched_ci, "sign test p": st.matched_p,
                              "unmatched answerable": st.n_unmatched_a,
                              "unmatched unanswerable": st.n_unmatched_b})


def _feverous_figure(st: AbstentionStats) -> tuple:
    """``(estimate, ci, p, n, what, label, statistic)`` deciding the FEVEROUS row: the length-matched r_rb with
    enough untied pairs, else the partial rho on tokens."""
    untied = (st.n_pairs or 0) - (st.n_ties or 0)
    if st.r_rb is not None and untied >= MIN_PAIRS:
        return (st.r_rb, st.r_rb_ci, st.matched_p, st.n_pairs,
                "matched-pairs rank-biserial r = 2 share - 1 over NOT ENOUGH INFO / decided claim pairs at equal token "
                "count (share: the NEI claim has the larger norm); CI: the Wilson interval of the share, mapped",
                "length-matched rank-biserial r (NEI vs decided claims' norm)", "length-matched rank-biserial r")
    n = (st.n_answerable or 0) + (st.n_unanswerable or 0)
    return (st.partial_rho, st.partial_ci, None, st.partial_n or n,
            f"partial Spearman \u03c1(NEI (0/1), norm | tokens); CI resamples claims (only {untied} untied equal-length "
            f"pairs, fewer than {MIN_PAIRS}: the length-matched share does not decide)",
            "partial \u03c1(NOT ENOUGH INFO, norm | tokens)", "partial rho on tokens")


def feverous_claim(r) -> ClaimRow:
    """The row ``abstention_feverous`` from :class:`normscope.signals.feverous.FeverousResult` (or its
    ``to_dict()``), read as a :class:`~normscope.signals.result.FeverousSummary`.

    Decided by NOT ENOUGH INFO vs the decided claims (SUPPORTS, REFUTES) at equal length: the length-matched
    rank-biserial r with at least :data:`MIN_PAIRS` untied pairs, else the partial Spearman rho on tokens (the
    row says which). The claim states no direction. A CI that includes 0 is ``not decided at this size``: the
    sample has 50 claims and no more can be fetched here (the full dev set is not on PyPI). The pooled AUROC (and
    the token count's), the annotation time's rho and the challenge types' Kruskal-Wallis H stand beside it.
    """
    f = _summary(r, FeverousSummary)
    stats = f.stats or FeverousStats()
    st, tm = stats.nei or AbstentionStats(), stats.time or FeverousTime()
    ch = stats.challenge or KruskalWallis()
    est, ci, p, n, what, label, which = _feverous_figure(st)
    unit = (f"{(st.n_pairs or 0) - (st.n_ties or 0)} untied equal-length pairs of "
            f"{(st.n_answerable or 0) + (st.n_unanswerable or 0)} claims"
            if which.startswith("length") else f"{n} claims")
    j = judge("abstention_feverous", est, ci, p=p)
    if j.verdict not in ("reproduced", "refuted"):  # 50 claims are all there is: no decision is "not decided"
        why = (f"the {label}'s CI{_ci(ci)} includes 0" if _includes_zero(ci) or est is None
               else j.why.split("; size")[0].removeprefix("direction inconclusive: "))  # the CI vs the sign test
        j = judge("abstention_feverous", est, ci, p=p, gate=Gate(
            False, f"{unit}: {why}", "more FEVEROUS claims (the full dev set, fever.ai; not fetchable from PyPI)"))
    beside = ""
    if st.auroc_norm is not None:
        beside = (f"pooled AUROC of the norm for NEI {st.auroc_norm:.3f} (token count alone: "
                  f"{st.auroc_tokens:.3f}); partial \u03c1 on tokens {st.partial_rho:+.3g}"
                  f"{_ci(st.partial_ci)}")
    if tm.spearman is not None:
        beside += (f"; annotation time: \u03c1 {tm.spearman:+.3g}{_ci(tm.spearman_ci)}, partial on tokens "
                   f"{tm.partial_rho:+.3g}{_ci(tm.partial_ci)} (n {tm.n})")
    if ch.H is not None:
        beside += (f"; challenge types: Kruskal-Wallis H {ch.H:.2f} (p {ch.p:.2g}; token count's H "
                   f"{ch.tokens_H:.2f})")
    return claim_row("abstention_feverous", measured=est, ci=ci, judged=j, n=n, what=what, label=label,
                     tested_on=f"{f.model}, {f.dataset}",
                     statistic=f"signals: feverous NEI {which}", beside=beside.lstrip("; "),
                     details={"pooled AUROC of the norm (NEI)": st.auroc_norm,
                              "its Mann-Whitney p": st.auroc_norm_p,
                              "AUROC of the token count": st.auroc_tokens,
                              "partial rho (NEI, norm | tokens)": st.partial_rho,
                              "partial rho's CI": st.partial_ci,
                              "matched share": st.matched_share, "its Wilson CI": st.matched_ci,
                              "equal-length pairs": st.n_pairs, "ties": st.n_ties,
                              "annotation time rho": tm.spearman, "annotation time rho's CI": tm.spearman_ci,
                              "annotation time partial rho on tokens": tm.partial_rho,
                              "challenge Kruskal-Wallis H": ch.H, "its p": ch.p,
                              "label Kruskal-Wallis H": (stats.label or KruskalWallis()).H})


def hierarchy_claim(r) -> ClaimRow:
    """The row ``specificity_hierarchy`` from :class:`normscope.signals.hierarchy.HierarchyResult` (or its
    ``to_dict()``, read as a :class:`~normscope.signals.result.HierarchySummary`; hierarchies of texts, level =
    specificity): the rule of :func:`signal_claims` (strong |rho|, no direction) on the rho(level, norm) within the
    same hierarchy and token count, its CI resampling whole clusters (hierarchies, or WordNet chains grouped by
    their depth-3 synset: the result's ``ci_unit``; fewer than :data:`MIN_CLUSTERS` clusters: not decided at this
    size); the pooled and the length-partial rho
    beside it. Without a length-matched figure the row follows the partial, then the pooled rho."""
    h = _summary(r, HierarchySummary)
    pooled = h.pooled or Correlation()
    partial = (h.partial or PartialCorrelation()).to_json()
    lm = h.length_matched
    matched = lm is not None and lm.rho is not None
    as_correlate = CorrelateResult(
        signal="specificity level", covariate=None, model=h.model, dataset=h.dataset, n_items=None, n=pooled.n,
        n_missing=None, spearman=pooled.spearman, spearman_ci=pooled.spearman_ci,
        partial_spearman=PartialCorrelation.from_json(dict(partial, controls=["tokens"])), length_matched=lm,
        strata=[{}] if matched else None, by="hierarchy")
    est, ci, n, what = controlled_figure(as_correlate)
    key = "specificity_hierarchy"
    gate = None
    if h.n_clusters is not None and h.n_clusters < MIN_CLUSTERS:  # a bootstrap over so few clusters has no spread
        gate = Gate(False, f"the CIs resample {plural(h.n_clusters, 'cluster')} of hierarchies: too few to resample",
                    f"at least {MIN_CLUSTERS} clusters (more hierarchies, or WordNet chains from a deeper synset)")
    j = judge(key, est, ci, gate=gate)
    if est is not None and est != as_correlate.spearman and _excludes_zero(as_correlate.spearman_ci) \
            and _includes_zero(ci):
        j = j.but(reason=f"{j.reason}; {EXPLAINED_BY_CONTROLS}" if j.verdict == "refuted"
                  else f"{EXPLAINED_BY_CONTROLS}; {j.reason}")
    return claim_row(key, measured=est, ci=ci, judged=j, n=n, what=what, label=what.split(";")[0].split(" |")[0],
                     tested_on=f"{h.model}, {h.dataset}", statistic=f"signals: hierarchies: {what.split(';')[0]}",
                     beside=_beside(as_correlate, est), details=_details(as_correlate))
