"""The report's "what this says" sentences, generated from the measured numbers.

No sentence is canned: each one is chosen by the sign of the measured statistic and by whether its
95% confidence interval excludes 0 (or, for the lab, whether the measured error passes the
theorem's gate). When a number is missing the sentence says so instead of guessing.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = [
    "fmt_duration",
    "fmt",
    "pct",
    "strength",
    "ci_excludes_zero",
    "correlation_sentence",
    "what_this_says",
]


def fmt(x, digits: int = 3) -> str:
    """Format a number for prose: ``0.123``, ``-0.045``, ``1,234``; ``n/a`` for None/NaN."""
    if x is None:
        return "n/a"
    if isinstance(x, bool):
        return str(x)
    if isinstance(x, int):
        return f"{x:,}"
    try:
        v = float(x)
    except (TypeError, ValueError):
        return str(x)
    if math.isnan(v):
        return "n/a"
    if v != 0 and (abs(v) < 10 ** (-digits) or abs(v) >= 1e5):
        return f"{v:.{digits - 1}e}".replace("-", "\u2212")
    return f"{v:.{digits}f}".replace("-", "\u2212")


def _num(x) -> float | None:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(v) else v


def strength(rho: float) -> str:
    """Conventional size word for |rho| (Cohen 1988): <0.1 negligible, <0.3 weak, <0.5 moderate, else strong."""
    a = abs(rho)
    if a < 0.1:
        return "negligible"
    if a < 0.3:
        return "weak"
    if a < 0.5:
        return "moderate"
    return "strong"


def ci_excludes_zero(ci) -> bool | None:
    """True if the interval ``[lo, hi]`` excludes 0, False if it contains 0, None if unknown."""
    if ci is None or not isinstance(ci, (list, tuple)) or len(ci) != 2:
        return None
    lo, hi = _num(ci[0]), _num(ci[1])
    if lo is None or hi is None:
        return None
    return lo > 0 or hi < 0


def _ci_text(ci) -> str:
    if ci_excludes_zero(ci) is None:
        return "no CI"
    return f"95% CI {fmt(ci[0])} to {fmt(ci[1])}"


def correlation_sentence(
    x: str,
    y: str,
    rho,
    ci,
    n=None,
    *,
    method: str = "Spearman \u03c1",
    relation: str = "monotone relation",
) -> str:
    """One sentence about a correlation, chosen by its sign and whether its CI excludes 0.

    Parameters
    ----------
    x, y : str
        What is correlated ("the raw norm", "Zipf frequency").
    rho : float
        The estimate.
    ci : [lo, hi] or None
        Its 95% confidence interval.
    n : int, optional
        Sample size.

    Returns
    -------
    str
        - CI excludes 0: "<x> rises/falls with <y> (<strength>): rho = ..., 95% CI ..., n = ...; the CI excludes 0."
          The direction is the side of 0 the CI lies on; a point estimate on the other side is said.
        - CI contains 0: "For <x> and <y> the CI includes 0: no evidence of a <relation> (...)."
        - no CI: the estimate only, with "no CI, so no claim about its sign".
    """
    r = _num(rho)
    stats = f"{method} = {fmt(r)}, {_ci_text(ci)}" + (f", n = {fmt(int(n))}" if n is not None else "")
    if r is None:
        return f"The {relation} between {x} and {y} could not be estimated ({stats})."
    ex = ci_excludes_zero(ci)
    if ex is None:
        return f"{x[0].upper() + x[1:]} vs {y}: {stats}; no CI, so no claim about its sign."
    if not ex:
        return f"For {x} and {y} the CI includes 0: no evidence of a {relation} ({stats})."
    up = _num(ci[0]) > 0
    direction = "rises" if up else "falls"
    if (r > 0) != up:
        return (f"{x[0].upper() + x[1:]} {direction} with {y} by its CI, which excludes 0 ({stats}), while the point "
                "estimate lies on the other side of 0: read the sign from the CI, the size as uncertain.")
    return f"{x[0].upper() + x[1:]} {direction} with {y} ({strength(r)}; {stats}); the CI excludes 0."


def _get(d, *path, default=None):
    for p in path:
        if not isinstance(d, dict) or p not in d:
            return default
        d = d[p]
    return d


def _corr_parts(c) -> tuple:
    """(rho, ci, method) from a correlation dict of any stage (spearman preferred)."""
    if not isinstance(c, dict):
        return None, None, "Spearman \u03c1"
    if "spearman" in c:
        sp = c["spearman"]
        if isinstance(sp, dict):
            return sp.get("estimate", sp.get("rho", sp.get("value"))), sp.get("ci"), "Spearman \u03c1"
        ci = c.get("spearman_ci", c.get("ci"))
        if isinstance(ci, dict):
            ci = ci.get("spearman")
        return sp, ci, "Spearman \u03c1"
    if "pearson" in c:
        pe = c["pearson"]
        if isinstance(pe, dict):
            return pe.get("estimate", pe.get("r")), pe.get("ci"), "Pearson r"
        ci = c.get("pearson_ci", c.get("ci"))
        return pe, (ci.get("pearson") if isinstance(ci, dict) else ci), "Pearson r"
    return c.get("estimate"), c.get("ci"), "\u03c1"


# ---------------------------------------------------------------------------------------------
# per section
# ---------------------------------------------------------------------------------------------


#: Sections that try to explain the norm's spread (the norm-distribution text points to those that ran).
_EXPLAINING = {"equilibrium_theory": "the equilibrium theory", "training_lab": "the training lab",
               "semantic_signals": "the semantic signals"}


def norm_distribution_sentences(sec: dict, explained_by: Sequence[str] | None = None) -> list[str]:
    """Norm-distribution sentences; ``explained_by`` = keys of the sections that ran and try to
    explain the spread (None: not known, the sentence then names no other section)."""
    res = sec.get("result") or {}
    mean, sd, n = _num(res.get("norm_mean")), _num(res.get("norm_std")), res.get("n")
    if mean is None:
        return []
    cv = sd / mean if (sd is not None and mean) else None
    base = (f"Over {fmt(n)} items the raw norm has mean {fmt(mean)} (sd {fmt(sd)}, range "
            f"{fmt(_num(res.get('norm_min')))} to {fmt(_num(res.get('norm_max')))}).")
    if cv is not None and cv < 1e-3:
        return [base + " The norms are constant: this model normalises its outputs, so the norm carries no "
                "per-item information" + (" and the norm analyses below are void for it." if explained_by
                                          else ".")]
    unit = abs(mean - 1.0) < 1e-3
    if unit:
        tail = " The vectors are unit length on average; their spread still varies per item."
    else:
        tail = (" The model's raw vectors are not unit length; their spread (coefficient of variation "
                f"{fmt(cv)})")
        names = [_EXPLAINING[k] for k in (explained_by or []) if k in _EXPLAINING]
        if names:
            what = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
            tail += f" is what {what} below {'tries' if len(names) == 1 else 'try'} to explain."
        else:
            tail += " is not explained by this run (the sections that try to explain it did not run)."
    return [base + tail]


def _excluded_text(block: dict, total) -> str:
    """Which items a correlation left out and why, as a sentence, from the block's own mask counts."""
    n_ex = int(block.get("n_excluded") or 0)
    if not n_ex:
        return f"All {fmt(total)} items enter this check (no root of (E7) is undefined)."
    why = "; ".join(f"{fmt(v)} with {k}" for k, v in (block.get("excluded") or {}).items())
    return f"{fmt(n_ex)} of {fmt(total)} items are left out of this check because their R_eq is undefined ({why})."


def equilibrium_sentences(sec: dict) -> list[str]:
    """Sentences of the probes section, every number from the correlation block it describes.

    The prediction comes first; when its CI lies below 0 the first words say that it fails on this
    model. Each correlation's sentence uses its own ``n``; "left out" counts come from the same
    mask as the statistic (``n_excluded``, ``excluded``).
    """
    res = sec.get("result") or {}
    derived = sec.get("derived") or {}
    out: list[str] = []
    total = res.get("n_items")
    key = derived.get("prediction_key") or "corr_req_norm"
    reading = derived.get("prediction_reading")
    req = res.get(key)
    rho, ci, m = _corr_parts(req)
    src = " (CI over batches and items)"
    if rho is not None:
        n = (req or {}).get("n")
        ex = ci_excludes_zero(ci)
        stats = f"{m} = {fmt(rho)}, {_ci_text(ci)}{src}, n = {fmt(n)}"
        if ex and _num(ci[1]) < 0:
            sent = (f"The prediction fails on this model: the norm predicted by (E7) falls as the observed norm rises "
                    f"({stats}).")
        elif ex:
            sent = f"The observed norm rises with the norm predicted by (E7) ({strength(rho)}; {stats})."
        else:
            sent = (f"No evidence that the norm predicted by (E7) tracks the observed norm: the CI includes 0 "
                    f"({stats}).")
        if reading:
            sent += f" Reading: {reading}."
        sent += " " + _excluded_text(req, total)
        opt = _get(res, "training", "optimizer", default="") or ""
        opt = str(opt.get("value") or "") if isinstance(opt, dict) else str(opt)
        if opt.lower().startswith("adam"):
            sent += (f" This model was trained with {opt}, for which the SGD form of Theorem 1 is not expected to "
                     "hold quantitatively: read this as a rank statistic.")
        out.append(sent)
    elif isinstance(req, dict):
        c_fit = _num(res.get("c_fit"))
        why = (f"the fitted decay c_fit = {fmt(c_fit)} is not positive, so (E7) predicts no finite norm"
               if c_fit is not None and c_fit <= 0 else (req.get("note") or "too few items have a prediction"))
        out.append(f"The predicted-vs-observed comparison could not be made on this model: {why} "
                   f"({fmt(req.get('n', 0))} items with a prediction).")
    heat = res.get("corr_norm_heat") or {}
    rho_h, ci_h, mh = _corr_parts(heat)
    if rho_h is not None:
        out.append(correlation_sentence("the norm", "the heat \u03a3\u00b2", rho_h, ci_h, heat.get("n"), method=mh)
                   + " Heat \u03a3\u00b2 = R\u00b2 E||\u0394||\u00b2 contains R\u00b2 by construction:"
                   " the R-free displacement below is the fair test.")
    disp = res.get("corr_norm_displacement") or {}
    rho_d, ci_d, md = _corr_parts(disp)
    if rho_d is not None:
        s = correlation_sentence("the norm", "the R-free displacement E||a||\u00b2", rho_d, ci_d, disp.get("n"),
                                 method=md)
        if ci_excludes_zero(ci_h) and ci_excludes_zero(ci_d) is False:
            s += (" Since heat contains R\u00b2 by definition, the heat correlation above may be mechanical: "
                  "the R-free quantity shows no relation.")
        out.append(s)
    drift = res.get("corr_norm_drift") or {}
    rho_dr, ci_dr, mdr = _corr_parts(drift)
    if rho_dr is not None:
        out.append(correlation_sentence("the norm", "the radial drift D~", rho_dr, ci_dr, drift.get("n"), method=mdr))
    nq = res.get("n_negative_q")
    if nq:
        out.append(f"{fmt(nq)} items have q < 0 (their measured radial motion is inward even without decay); (E7) "
                   "still has a positive root for them, so they stay in the prediction check.")
    return out


def training_lab_sentences(sec: dict) -> list[str]:
    res = sec.get("result") or {}
    mare = _num(res.get("mean_abs_rel_error"))
    med = _num(res.get("median_rel_error"))
    pear = _num(res.get("pearson"))
    if mare is None:
        return []
    setting = f"{res.get('encoder', '?')} encoder, {res.get('optimizer', '?')}"
    passed = mare <= 0.05 and (med is None or abs(med) <= 0.02) and (pear is None or pear >= 0.95)
    numbers = (f"mean |relative error| {fmt(mare)}, median signed error {fmt(med)}, Pearson r {fmt(pear)} "
               "between predicted R_eq and the measured stationary norm")
    if passed:
        return [f"In the training lab ({setting}) the measured stationary norms agree with the (E7) prediction "
                f"within the gate (mean |rel. error| \u2264 0.05, |median| \u2264 0.02, r \u2265 0.95): {numbers}."]
    return [f"In the training lab ({setting}) the measured stationary norms do not meet the gate "
            f"(mean |rel. error| \u2264 0.05, |median| \u2264 0.02, r \u2265 0.95): {numbers}."]


_SIGNAL_WORDS = {
    "frequency": "Zipf frequency",
    "specificity": "WordNet specificity (hypernym depth)",
    "concreteness": "concreteness rating",
    "uncertainty": "human label entropy",
}


def _and_list(items: Sequence[str]) -> str:
    items = list(items)
    return (", ".join(items[:-1]) + " and " + items[-1]) if len(items) > 1 else (items[0] if items else "")


def _stratified_signal_sentence(name: str, s: dict) -> str:
    """Sentence of a signal pooled from several sources: per source, then the source-controlled partial."""
    word = _SIGNAL_WORDS.get(name, name)
    parts = []
    for st in s.get("strata") or []:
        if _num(st.get("spearman")) is None:
            parts.append(f"{st.get('name')}: not estimated (n = {fmt(st.get('n'))})")
        else:
            parts.append(f"{st.get('name')}: \u03c1 = {fmt(st.get('spearman'))}, {_ci_text(st.get('spearman_ci'))}, "
                         f"n = {fmt(st.get('n'))}")
    out = (f"The items come from {len(parts)} sources, so the pooled Spearman \u03c1 = {fmt(s.get('spearman'))} "
           f"({_ci_text(s.get('spearman_ci'))}) mixes them; per source, norm vs {word}: " + "; ".join(parts) + ".")
    p = s.get("partial_spearman")
    if isinstance(p, dict) and _num(p.get("rho")) is not None:
        ctrl = _and_list(p.get("controls") or [])
        out += " " + correlation_sentence("the raw norm", f"{word} controlling for {ctrl}", p.get("rho"), p.get("ci"),
                                          p.get("n"), method="partial \u03c1")
        out += f" Its CI and p-value resample and permute items within each {s.get('by') or 'source'}."
    return out


def semantic_signal_sentences(sec: dict) -> list[str]:
    out = []
    for name, s in (sec.get("result") or {}).items():
        if not isinstance(s, dict) or s.get("status", "ok") != "ok":
            continue
        rho, ci, m = _corr_parts(s)
        if rho is None:
            continue
        if s.get("strata"):
            sentence = _stratified_signal_sentence(name, s)
        else:
            sentence = correlation_sentence("the raw norm", _SIGNAL_WORDS.get(name, name), rho, ci, s.get("n"), method=m)
            p = s.get("partial_spearman")
            if isinstance(p, dict):
                prho = p.get("estimate", p.get("rho"))
                pci = p.get("ci")
                # the controls actually partialled out (a constant control is dropped by run_correlate)
                ctrl = _and_list(list(p.get("controls") or s.get("controls") or [])) or "the controls"
                ex = ci_excludes_zero(pci)
                if ex is True:
                    # "stays" only when the marginal's CI lies on the same side of 0 (signs from the CIs)
                    p_up = _num(pci[0]) > 0
                    m_ex = ci_excludes_zero(ci)
                    verb = ("it stays" if m_ex and (_num(ci[0]) > 0) == p_up else "it turns" if m_ex else "it is")
                    sentence += f" Controlling for {ctrl} {verb} {'positive' if p_up else 'negative'} (partial \u03c1 = {fmt(prho)}, {_ci_text(pci)})."
                elif ex is False:
                    sentence += f" Controlling for {ctrl}, the CI includes 0 (partial \u03c1 = {fmt(prho)}, {_ci_text(pci)})."
                elif _num(prho) is not None:
                    sentence += f" Partial \u03c1 controlling for {ctrl} = {fmt(prho)} (no CI)."
        dropped = list(s.get("controls_dropped") or [])
        if dropped:
            sentence += (f" {', '.join(dropped).capitalize()} is constant over these items, so it was not"
                         " controlled" + ("." if isinstance(s.get("partial_spearman"), dict) else
                                          " and no partial correlation was computed."))
        nl = s.get("norm_length")
        if isinstance(nl, dict) and _num(nl.get("spearman")) is not None:
            unit = "tokens the model saw" if str(nl.get("length", "")).startswith("tokens") else "words"
            sentence += (f" For comparison, the norm and the length ({unit}) have Spearman \u03c1 = "
                         f"{fmt(nl.get('spearman'))} ({_ci_text(nl.get('spearman_ci'))}).")
        out.append(sentence)
    return out


def similarity_sentences(sec: dict) -> list[str]:
    """Norm-aware similarity on human-rated pairs: each scorer's Spearman gain over cosine, by its paired CI."""
    res = sec.get("result") or {}
    scorers = res.get("scorers") or {}
    cos = _num(_get(scorers, "cosine", "spearman"))
    if cos is None:
        return []
    fit = res.get("fit") or {}
    out = [f"On {fmt(res.get('n_pairs'))} evaluated pairs, cosine similarity has Spearman \u03c1 = {fmt(cos)} "
           f"({_ci_text(_get(scorers, 'cosine', 'spearman_ci'))}) with the human scores; parameters were fitted on "
           f"{fmt(fit.get('n_pairs'))} other pairs ({fit.get('source', 'fit pairs')})."]
    for name, s in scorers.items():
        if name == "cosine" or not isinstance(s, dict) or _num(s.get("delta_spearman")) is None:
            continue
        d, ci = _num(s.get("delta_spearman")), s.get("delta_ci")
        par = f"{s.get('param_name')} = {fmt(s.get('param'))}, " if s.get("param_name") else ""
        stats = f"\u0394\u03c1 = {fmt(d)}, paired {_ci_text(ci)}"
        ex = ci_excludes_zero(ci)
        if ex is None:
            out.append(f"{name} ({par}{stats}): no CI, so no claim about the difference.")
        elif not ex:
            out.append(f"For {name} ({par}{stats}) the CI includes 0: no evidence of a difference from cosine.")
        else:
            verb = "improves on" if d > 0 else "is worse than"
            out.append(f"{name} {verb} cosine ({par}{stats}); the CI excludes 0.")
    return out


def token_table_sentences(sec: dict) -> list[str]:
    """The input embedding table: row norm vs frequency among word tokens, never-used vs used rows, by their CIs."""
    res = sec.get("result") or {}
    out = []
    f = (res.get("frequency") or {}).get("word") or {}
    rho = _num(f.get("spearman"))
    if rho is not None:
        ci = f.get("spearman_ci")
        ex = ci_excludes_zero(ci)
        stats = f"Spearman \u03c1 = {fmt(rho)}, {_ci_text(ci)}, {fmt(f.get('n'))} word tokens"
        if ex is None:
            out.append(f"Row norm and Zipf frequency of word tokens: {stats} (no CI, so no claim).")
        elif not ex:
            out.append(f"The row norms of word tokens show no evidence of a relation with their frequency ({stats}).")
        else:
            verb = "rise" if rho > 0 else "fall"
            out.append(f"In the input embedding table, the row norms of word tokens {verb} with their frequency "
                       f"({stats}).")
    c = res.get("unused_vs_used") or {}
    if _num(c.get("difference")) is not None:
        out.append(f"The {fmt(c.get('n_unused'))} never-used rows have median norm {fmt(c.get('median_unused'))} "
                   f"against {fmt(c.get('median_used'))} for the {fmt(c.get('n_used'))} used rows (difference "
                   f"{fmt(c.get('difference'))}, {_ci_text(c.get('ci'))}; ratio {fmt(c.get('ratio'))}, "
                   f"{_ci_text(c.get('ratio_ci'))}).")
    elif res:
        out.append(f"This table has {fmt((res.get('counts') or {}).get('unused', 0))} never-used rows: no contrast.")
    return out


def pct(x) -> str:
    """A fraction as a signed percentage for prose: ``+0.17 %``, ``\u22122.65 %``; ``n/a`` for None/NaN."""
    v = _num(x)
    return "n/a" if v is None else f"{100 * v:+.2f} %".replace("-", "\u2212")


def retrieval_sentences(sec: dict) -> list[str]:
    """One sentence per norm-aware scorer (its nDCG@10 difference to cosine: a direction only when the paired CI
    over queries excludes 0 and the paired p < 0.05; when they disagree, no firm evidence), and one on the
    pre-specified strata (Holm-corrected)."""
    res = sec.get("result") or {}
    scorers = res.get("scorers") or {}
    base = _num(_get(scorers, "cosine", "ndcg@10"))
    out = []
    for name, s in scorers.items():
        if name == "cosine" or not isinstance(s, dict):
            continue
        nd, d, p = _num(s.get("ndcg@10")), _num(s.get("delta")), _num(s.get("p_value"))
        if nd is None or base is None:
            continue
        d = nd - base if d is None else d
        ci = s.get("delta_ci")
        how = f" ({s.get('param_name')} fixed at {fmt(s.get('param'))}, not fitted)" if s.get("param_source") == "fixed (not fitted)" else ""
        stats = (f"{fmt(nd)} vs {fmt(base)}, \u0394 {fmt(d)}, {_ci_text(ci)} over queries, relative {pct(s.get('relative'))}"
                 + (f", paired p = {fmt(p)}" if p is not None else ""))
        ex = ci_excludes_zero(ci)
        if ex is None:
            out.append(f"Scorer {name}{how}: nDCG@10 {stats}; no CI, so no claim about the sign.")
        elif ex and p is not None and p >= 0.05:
            out.append(f"For the {name} scorer{how} the bootstrap CI of the nDCG@10 difference to cosine excludes 0 "
                       f"but the paired test does not reject equality (p = {fmt(p)} >= 0.05): no firm evidence of a "
                       f"difference ({stats}).")
        elif ex:
            verb = "improves" if d > 0 else "lowers"
            out.append(f"The {name} scorer{how} {verb} test nDCG@10 over cosine ({stats}); the CI excludes 0"
                       + (" and the paired p < 0.05." if p is not None else "."))
        else:
            out.append(f"For the {name} scorer{how} the CI of the nDCG@10 difference to cosine includes 0: no evidence "
                       f"of a difference ({stats}).")
    for name, rows in (_get(res, "strata", "scorers", default={}) or {}).items():
        if name != "inverse_norm" or not rows:
            continue
        sig = [r for r in rows if _num(r.get("p_holm")) is not None and r["p_holm"] < 0.05]
        if sig:
            listed = "; ".join(f"{r['stratifier']} Q{r['quartile']}: \u0394 {fmt(r['mean_delta'])} ({pct(r['relative'])}, "
                               f"Holm p = {fmt(r['p_holm'])})" for r in sig)
            out.append(f"In the pre-specified strata (quartiles of query norm, query word frequency and top-1 document "
                       f"norm), {len(sig)} of {len(rows)} differ from cosine after Holm correction: {listed}.")
        else:
            ps = [_num(r.get("p_holm")) for r in rows if _num(r.get("p_holm")) is not None]
            out.append(f"In none of the {len(rows)} pre-specified strata (quartiles of query norm, query word frequency "
                       "and top-1 document norm) does inverse_norm differ from cosine after Holm correction"
                       + (f" (smallest adjusted p = {fmt(min(ps))})." if ps else "."))
    return out


def calibration_sentences(sec: dict) -> list[str]:
    """One sentence per confidence signal, chosen by whether the AUROC CI (bootstrap over queries) excludes 0.5.

    Raw signals are judged by ``auroc_raw`` (the signal in its pre-specified direction), learned ones by ``auroc``.
    """
    res = sec.get("result") or {}
    out = []
    for name, c in res.items():
        if not isinstance(c, dict):
            continue
        if c.get("status", "ok") != "ok":
            out.append(f"{name}: not computed ({c.get('reason')}).")
            continue
        raw = _num(c.get("auroc_raw")) is not None
        auc = _num(c.get("auroc_raw") if raw else c.get("auroc"))
        if auc is None:
            continue
        ci = c.get("auroc_raw_ci") if raw else c.get("auroc_ci")
        mapped = (c.get("fit") or {}).get("mapping") == "platt"
        cal = f"; calibrated map AUROC {fmt(c.get('auroc'))}" if mapped and _num(c.get("auroc")) is not None else ""
        flag = (_get(c, "ece_bins", "flag") or "")
        ece_txt = f"; ECE {fmt(c.get('ece'))}" + (f" ({flag})" if flag else "") if _num(c.get("ece")) is not None else ""
        if isinstance(ci, (list, tuple)) and len(ci) == 2 and _num(ci[0]) is not None:
            lo, hi = _num(ci[0]), _num(ci[1])
            stats = f"AUROC {fmt(auc)}, 95% CI {fmt(lo)} to {fmt(hi)}{cal}{ece_txt}"
            if lo > 0.5:
                out.append(f"{name} predicts a relevant top-1 better than chance ({stats}).")
            elif hi < 0.5:
                out.append(f"{name} ranks relevant top-1 results below chance in its pre-specified direction ({stats}): "
                           "it works the other way round.")
            else:
                out.append(f"For {name} the AUROC CI includes 0.5: no evidence that it predicts a relevant top-1 ({stats}).")
        else:
            out.append(f"{name}: AUROC {fmt(auc)} for a relevant top-1 (0.5 = chance; no CI, so no claim){ece_txt}.")
    return out


_SECTION_TEXT = {
    "norm_distribution": norm_distribution_sentences,
    "token_table": token_table_sentences,
    "equilibrium_theory": equilibrium_sentences,
    "training_lab": training_lab_sentences,
    "semantic_signals": semantic_signal_sentences,
    "similarity": similarity_sentences,
    "retrieval": retrieval_sentences,
    "calibration": calibration_sentences,
}


def section_sentences(key: str, sec: dict) -> list[str]:
    """Sentences of one section (empty unless it ran)."""
    if not isinstance(sec, dict) or sec.get("status") != "ok" or key not in _SECTION_TEXT:
        return []
    return _SECTION_TEXT[key](sec)


def what_this_says(summary: dict, sections: Sequence[str] | None = None) -> dict[str, list[str]]:
    """The "what this says" paragraph: section key -> sentences, from summary.json's numbers."""
    keys = sections if sections is not None else list(_SECTION_TEXT)
    out = {}
    ran = [k for k in _EXPLAINING if isinstance(summary.get(k), dict) and summary[k].get("status") == "ok"]
    for k in keys:
        sec = summary.get(k) or {}
        if k == "norm_distribution":
            ok = isinstance(sec, dict) and sec.get("status") == "ok"
            s = norm_distribution_sentences(sec, explained_by=ran) if ok else []
        else:
            s = section_sentences(k, sec)
        if s:
            out[k] = s
    return out


def fmt_duration(seconds) -> str:
    """A wall time for people: ``0.02 s``, ``12.3 s``, ``34 min 05 s``, ``1 h 02 min``; ``n/a`` for None,
    ``""`` for a value that is not a number (a stage that did not run has no time)."""
    if seconds is None:
        return "n/a"
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not math.isfinite(seconds):
        return ""
    s = float(seconds)
    if s < 10:
        return f"{s:.2f} s"
    if s < 60:
        return f"{s:.1f} s"
    if s < 3600:
        m, sec = divmod(int(round(s)), 60)
        return f"{m} min {sec:02d} s"
    h, m = divmod(int(round(s / 60)), 60)
    return f"{h} h {m:02d} min"
