"""Report stage ``probes``: heat, drift and the predicted norm (``normscope probe``), with the claims it tests."""

from __future__ import annotations

from pathlib import Path

from normscope.probes.claims import probe_claims
from normscope.report.config import FULL
from normscope.report.context import StageContext
from normscope.report.stages._common import ci_text, refuse_static

__all__ = ["stage_probes", "prediction_reading", "probe_words", "POPULATION"]

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
    """WordNet (term, gloss) pairs, else SciFact train pairs; StageUnavailable (naming both) when neither exists."""
    from normscope.errors import DataError, NormscopeError
    from normscope.pairs import load_pairs
    from normscope.report.missing import data_unavailable

    errors: list[DataError] = []
    for spec in ("wordnet", "scifact"):
        try:
            return spec, load_pairs(spec)
        except DataError as exc:
            errors.append(exc)
        except (NormscopeError, OSError, LookupError) as exc:
            errors.append(DataError(f"{spec}: {exc}".splitlines()[0]))
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
    dr = res.get("decay_reading") or "unknown"
    if dr == "checkpoint" and isinstance(res.get("corr_req_lambda_rad_norm"), dict):
        return "corr_req_lambda_rad_norm", ("R_eq(x; \u03bb_rad) with the checkpoint's own training weight decay "
                                            f"\u03bb = {res.get('weight_decay')}")
    return "corr_req_norm", ("R_eq(x; c_fit), one fitted c = median q (docs/theory.md section 6, step 6(ii)), because "
                             + _CFIT_WHY.get(dr, "no lambda applies") + ": a rank test of the (E7) shape, not a "
                             "prediction from the checkpoint's training values")


def _fmt(x) -> str:
    return "n/a" if x is None else f"{x:+.3f}"


def _balance_numbers(b: dict) -> list[list]:
    """Key-number rows of Theorem 1's requirement q(x) = c (:mod:`normscope.probes.balance`)."""
    from normscope.stats import p_text

    st, null = b.get("statistics") or {}, b.get("null") or {}
    rows = []
    for name, label in (("dispersion", "dispersion of the implied decay, mean |q/c_fit − 1| (0 = one decay "
                                       "balances every item)"),
                        ("share_negative_q", "share of items with q < 0"),
                        ("mean_abs_rel_error", "mean |R_eq(c_fit) − R| / R")):
        if st.get(name) is None:
            continue
        n = null.get(name) or {}
        ci = (b.get("ci") or {}).get(name)
        p = p_text((b.get("p_below") or {}).get(name), int(b.get("n_perm") or 0))
        rows.append([label, f"{st[name]:.3g} {ci_text(ci)}; permutation null mean {n.get('mean', float('nan')):.3g}, "
                            f"{p} (one-sided, below)" if n else f"{st[name]:.3g} {ci_text(ci)}", ""])
    if st.get("heat_share") is not None:
        rows.append(["median heat share of the balance, Σ²/2R⁴ over |D~|/R² + Σ²/2R⁴",
                     st["heat_share"], ""])
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
    so = res.second_order or {}
    chk = so.get("check") or (res.fd or {}).get("check") or {}
    key_numbers = [
        [f"Spearman \u03c1, {labels[key][0]}", req.get("spearman"), ""],
        ["95% CI (batches and items)", ci_text((req.get("ci") or {}).get("spearman")), ""],
        ["items in the prediction check / left out (no (E7) root)", f"{req.get('n')} / {req.get('n_excluded')}", "items"],
        [labels["heat_cancelled_by_d2"][0], res.heat_cancelled_by_d2, ""],
        [labels["n_negative_q"][0], res.n_negative_q, "items"],
        [labels["n_negative_lambda_rad"][0], res.n_negative_lambda_rad, "items"],
        [labels["c_fit"][0], res.c_fit, labels["c_fit"][1]],
        *_balance_numbers(res.balance or {}),
        ["probe batch size B / batches K / \u03c4", f"{res.batch_size} / {res.batches} / {res.tau}", ""],
        ["\u03b7 / \u03bb used", f"{res.lr} / {res.weight_decay}", ""],
        ["D2 second-order term", (so.get("description") or "")
         + (f"; float64 spot check: median {chk['median_rel_diff']:.2%}, max {chk['max_rel_diff']:.2%} of mean |D2|"
            if chk else ""), ""],
        [labels["junk"][0], (res.junk or {}).get("count"), "items"],
    ]
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
            "claims": probe_claims(summary),
        }
    }
