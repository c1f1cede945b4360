"""Report stage ``probes``: heat, drift and the predicted norm (``normscope probe``), with the claims it tests."""

from __future__ import annotations

from pathlib import Path

from normscope.report.config import FULL
from normscope.report.context import StageContext, StageUnavailable
from normscope.report.stages._common import ci_text, refuse_static

__all__ = ["stage_probes", "probe_claims", "prediction_reading", "probe_words", "POPULATION"]

SECTION = "equilibrium_theory"
#: The probed population: the 1,000 most frequent English words (wordfreq). P of them are drawn at
#: random, so a smaller P estimates the same correlations less precisely instead of other ones (the
#: signs of the weak statistics differ between the top 100, 500 and 1,000 words; docs/probe.md).
POPULATION = 1000
#: File (in the report folder) with the drawn probe words, one JSON object ``{id, text}`` per line.
WORDS_FILE = "probe_words.jsonl"


def probe_words(P: int, seed: int) -> tuple[list[str], list[str]]:
    """The report's probe items: P words drawn without replacement (``default_rng(seed)``) from the
    :data:`POPULATION` most frequent English words, in frequency order; all of the top P when P >= it.

    Returns
    -------
    ids, texts : list of str
        ``ids`` are the words' 0-based frequency ranks.
    """
    import numpy as np

    from normscope.datasets import wordfreq_words

    words = wordfreq_words(max(P, POPULATION))
    ranks = np.arange(len(words)) if P >= len(words) else np.sort(
        np.random.default_rng(seed).choice(len(words), size=P, replace=False))
    return [str(int(i)) for i in ranks], [words[int(i)] for i in ranks]


def _pair_source(ctx: StageContext):
    """WordNet (term, gloss) pairs, else SciFact train pairs; StageUnavailable when neither exists."""
    from normscope.errors import NormscopeError
    from normscope.pairs import load_pairs

    reasons = []
    for spec in ("wordnet", "scifact"):
        try:
            return spec, load_pairs(spec)
        except (NormscopeError, OSError, LookupError) as exc:
            reasons.append(f"{spec}: {exc}".splitlines()[0])
    raise StageUnavailable("no training-like pairs: " + "; ".join(reasons))


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
    dr = res.get("decay_reading") or "unknown"
    if dr == "checkpoint" and isinstance(res.get("corr_req_lambda_rad_norm"), dict):
        return "corr_req_lambda_rad_norm", ("R_eq(x; \u03bb_rad) with the checkpoint's own training weight decay "
                                            f"\u03bb = {res.get('weight_decay')}")
    return "corr_req_norm", ("R_eq(x; c_fit), one fitted c = median q (docs/theory.md section 6, step 6(ii)), because "
                             + _CFIT_WHY.get(dr, "no lambda applies") + ": a rank test of the (E7) shape, not a "
                             "prediction from the checkpoint's training values")


def _fmt(x) -> str:
    return "n/a" if x is None else f"{x:+.3f}"


def probe_claims(res: dict, design_note: str = "") -> list[dict]:
    """Scorecard rows ``corr_norm_heat``, ``corr_norm_drift``, ``req_predicts_norm`` from a probe summary dict.

    Each verdict comes from :func:`normscope.report.claims.verdict_sign` on the estimate and its 95% CI
    over batches and items; the heat row says what the R-free displacement gives (circularity) and,
    when that CI includes 0, that the heat correlation may be mechanical. ``design_note`` (e.g. the
    design is below the sign-stable sizes) is appended to every row's reason.
    """
    from normscope.report.claims import claim_row, verdict_not_testable, verdict_sign

    rows = []
    src = "95% CI over batches and items (two-stage bootstrap)"
    opt = str(((res.get("training") or {}).get("optimizer") or {}).get("value") or "")
    adam = (f"; trained with {opt}: the SGD form of Theorem 1 is not expected to hold quantitatively "
            "(docs/theory.md C3), so only the sign is read") if opt.lower().startswith("adam") else ""
    for key, what, sign in (("corr_norm_heat", "heat \u03a3\u00b2", +1), ("corr_norm_drift", "drift D~", -1)):
        c = res.get(key) or {}
        ci = (c.get("ci") or {}).get("pearson")
        verdict, why = verdict_sign(c.get("pearson"), ci, sign)
        if key == "corr_norm_heat":
            d = res.get("corr_norm_displacement") or {}
            dci = (d.get("ci") or {}).get("spearman") or [None, None]
            why += (f"; heat = R\u00b2 E||a||\u00b2 contains R\u00b2 by construction: the R-free displacement gives "
                    f"Spearman {_fmt(d.get('spearman'))} [{_fmt(dci[0])}, {_fmt(dci[1])}]")
            if None not in dci and dci[0] <= 0 <= dci[1]:
                why += (", a CI that includes 0: the heat correlation may be mechanical (R\u00b2 inside heat), not "
                        "evidence that heat sets the norm")
        rows.append(claim_row(key, measured=c.get("pearson"), ci=ci, verdict=verdict, why=why + adam + design_note, section=SECTION,
                              n=c.get("n"), what=f"Pearson r(R, {what}) over the probe items, {src}"))
    key, reading = prediction_reading(res)
    c = res.get(key) or {}
    ci = (c.get("ci") or {}).get("spearman")
    if c.get("spearman") is None:
        c_fit = res.get("c_fit")
        reason = (f"c_fit = median q = {c_fit:.3g} is not positive: no single decay balances the median item, so (E7) "
                  "predicts no finite norm" if isinstance(c_fit, (int, float)) and c_fit <= 0
                  else c.get("note") or "no R_eq could be computed")
        verdict, why = verdict_not_testable(reason)
    else:
        verdict, why = verdict_sign(c.get("spearman"), ci, +1)
        err = res.get("r_eq_cfit_mean_abs_rel_error") if key == "corr_req_norm" else None
        why += "; a test of the sign of the rank correlation only" + (
            f" (mean |R_eq - R| / R = {err:.3g})" if isinstance(err, (int, float)) else "") + f"; reading: {reading}"
    rows.append(claim_row("req_predicts_norm", measured=c.get("spearman"), ci=ci, verdict=verdict, why=why + adam + design_note,
                          section=SECTION, n=c.get("n"), what=f"Spearman \u03c1(R_eq, R), {src}; {reading}"))
    return rows


def _table_rows(res) -> list[list]:
    rows = []
    for _, label, c in res.correlations():
        ci = c.get("ci") or {}
        rows.append([label, c.get("pearson"), ci_text(ci.get("pearson")), c.get("spearman"), ci_text(ci.get("spearman")),
                     ci_text((c.get("ci_items_only") or {}).get("spearman")), c.get("n"), c.get("p_text")])
    return rows


def _k_rows(res) -> tuple[list[str], list[list]]:
    kc = res.k_convergence or {}
    if not kc.get("rows"):
        return [], []
    heads = [k for k in kc["rows"][0] if k != "batches"]
    labels = res.labels()
    cols = ["batches K"] + [f"{labels[h][0]}: Spearman \u03c1 [95% CI]" for h in heads]
    rows = [[row["batches"], *[f"{_fmt(row[h]['spearman'])} {ci_text(row[h]['ci'])}" for h in heads]]
            for row in kc["rows"]]
    return cols, rows


def stage_probes(ctx: StageContext) -> dict:
    from normscope import probes

    refuse_static(ctx)  # GloVe: no network to differentiate
    s = ctx.sizes
    seed = ctx.config.seed
    spec, pairs = _pair_source(ctx)
    P = s.probe_items or 1000
    K = s.probe_batches or 16
    n_boot = s.n_boot
    ids, texts = probe_words(P, seed)
    res = probes.run_probe(ctx.encoder(), texts, pairs, batch_size=s.probe_batch_size, batches=K, seed=seed,
                           progress=True, ids=ids, n_boot=n_boot, precision=ctx.config.precision)
    summary = res.to_dict()
    if P < POPULATION:  # the drawn words, so that the command below reproduces the section
        import json

        from normscope._io import atomic_path

        with atomic_path(ctx.out / WORDS_FILE) as tmp:
            Path(tmp).write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in zip(ids, texts)))
    cmd = f"normscope probe {WORDS_FILE if P < POPULATION else f'wordfreq:{P}'} --pairs {spec} --batches {K}"
    if s.probe_batch_size is not None:
        cmd += f" --batch-size {s.probe_batch_size}"
    cmd += f" --n-boot {n_boot} --seed {seed}" + (f" --precision {ctx.config.precision}" if ctx.config.precision != "fp32" else "")
    cmd += " --json probe.json"
    figs = []
    p1 = probes.plot_predicted_vs_observed(res, ctx.figure_path("equilibrium_predicted_vs_observed.png"))
    figs.append({"file": Path(p1).name, "caption": "Predicted norm R_eq(x; c_fit) from the probed heat and drift "
                 "(E7) against the observed raw norm R = ||z||, one point per word; dashed: y = x."})
    p2 = probes.plot_heat_drift(res, ctx.figure_path("equilibrium_heat_drift.png"))
    figs.append({"file": Path(p2).name, "caption": "Heat \u03a3\u00b2, radial drift D~ and the R-free displacement "
                 "E||a||\u00b2 against the observed norm R (the last panel guards against the circularity of heat, "
                 "which contains R\u00b2)."})
    labels = res.labels()
    key, reading = prediction_reading(summary)
    req = getattr(res, key) or {}
    fd = res.fd or {}
    chk = fd.get("check") or {}
    key_numbers = [
        [f"Spearman \u03c1, {labels[key][0]}", req.get("spearman"), ""],
        ["95% CI (batches and items)", ci_text((req.get("ci") or {}).get("spearman")), ""],
        ["items in the prediction check / left out (no (E7) root)", f"{req.get('n')} / {req.get('n_excluded')}", "items"],
        [labels["heat_cancelled_by_d2"][0], res.heat_cancelled_by_d2, ""],
        [labels["n_negative_q"][0], res.n_negative_q, "items"],
        [labels["n_negative_lambda_rad"][0], res.n_negative_lambda_rad, "items"],
        [labels["c_fit"][0], res.c_fit, labels["c_fit"][1]],
        ["probe batch size B / batches K / \u03c4", f"{res.batch_size} / {res.batches} / {res.tau}", ""],
        ["\u03b7 / \u03bb used", f"{res.lr} / {res.weight_decay}", ""],
        ["D2 finite differences", f"{fd.get('dtype')}, step target {fd.get('target')}"
         + (f"; float64 spot check: median {chk['median_rel_diff']:.2%}, max {chk['max_rel_diff']:.2%} of mean |D2|"
            if chk else ""), ""],
        [labels["junk"][0], (res.junk or {}).get("count"), "items"],
    ]
    notes = [f"prediction reading: {reading}"] + list(res.caveats or [])
    design_note = ""
    if P < FULL.probe_items or K < FULL.probe_batches:
        notes.insert(0, f"P = {P} items and K = {K} batches are below the report's default P = {FULL.probe_items}, "
                        f"K = {FULL.probe_batches}, the smallest sizes at which the headline signs were stable on "
                        "all-MiniLM-L6-v2 (docs/probe.md): weak correlations may change sign between runs")
        design_note = (f"; P = {P}, K = {K} is below the sign-stable design (P = {FULL.probe_items}, "
                       f"K = {FULL.probe_batches}): the sign may change between runs")
    for k in ("batch_size_source", "tau_source", "lr_source", "weight_decay_source"):
        notes.append(f"{labels[k][0]}: {getattr(res, k)}")
    for k, v in (res.training or {}).items():
        if isinstance(v, dict) and v.get("value") is not None:
            notes.append(f"training {k}: {v['value']} (source: {v['source']})")
    k_cols, k_rows = _k_rows(res)
    tables = [{"title": "Correlations with the observed norm (95% CIs over batches and items, and over items only) and "
                        "circularity guards",
               "columns": ["comparison", "Pearson r", "95% CI (batches+items)", "Spearman \u03c1",
                           "95% CI (batches+items)", "Spearman 95% CI (items only)", "n", "p (items permuted)"],
               "rows": _table_rows(res)}]
    if k_rows:
        tables.append({"title": "Convergence in the number of batches K (the first K/4, K/2, K batches)",
                       "columns": k_cols, "rows": k_rows})
    drawn = (f"drawn at random (seed {seed}) from the {POPULATION:,} most frequent English words (wordfreq); "
             f"{WORDS_FILE} holds them" if P < POPULATION else "the most frequent English words (wordfreq)")
    sizes = (f"P = {res.n_items} probe words {drawn}, K = {res.batches} virtual SGD batches of "
             f"B = {res.batch_size} {spec} pairs ({res.pairs}); {n_boot} bootstrap replicates per CI")
    return {
        SECTION: {
            "status": "ok",
            "reason": None,
            "command": cmd,
            "sizes": sizes,
            "result": summary,
            "derived": {"pairs_spec": spec, "prediction_key": key, "prediction_reading": reading},
            "key_numbers": key_numbers,
            "tables": tables,
            "figures": figs,
            "notes": notes,
            "claims": probe_claims(summary, design_note),
        }
    }
