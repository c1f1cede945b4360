"""Report stage ``tokens``: the input embedding table as a trace of the mechanism (``normscope tokens``).

Its scorecard row "rows never sampled decay (no heat)" is built by :func:`tokens_claim`, a pure function
of the stage's result, with its verdict rule fixed in advance (:data:`TOKENS_RULE`).
"""

from __future__ import annotations

from pathlib import Path

from normscope.report.claims import claim_row, verdict_not_testable
from normscope.report.context import StageContext
from normscope.report.stages._common import ci_text, fmt_n

__all__ = ["stage_tokens", "tokens_claim", "TOKENS_RULE", "DECAY_RATIO"]

#: The size the claim needs: never-used rows at most this fraction of the used rows' median norm.
DECAY_RATIO = 0.9
#: The verdict rule of the row, stated before any model is measured.
TOKENS_RULE = (f"reproduced when the 95% CI of median(unused) - median(used) lies below 0 and the CI of "
               f"median(unused) / median(used) lies below {DECAY_RATIO} (never-used rows at least 10 % smaller); "
               "refuted when the difference's CI lies above 0; inconclusive otherwise; not testable without 10 "
               "never-used rows")


def tokens_claim(result: dict | None, reason: str | None = None) -> dict:
    """Scorecard row ``unused_rows_decay`` from the ``normscope tokens`` result dict (pure; :data:`TOKENS_RULE`).

    Parameters
    ----------
    result : dict or None
        :meth:`normscope.tokens.TokensResult.to_dict`, or None when the stage did not run.
    reason : str, optional
        Why there is no result.

    Returns
    -------
    dict
        A :func:`~normscope.report.claims.claim_row`: measured = difference of medians (unused minus used),
        its CI; the verdict and a why computed from the same numbers.
    """
    what = ("median row norm of never-used ([unused*]) rows minus that of used (word and ## piece) rows of the input "
            "embedding table; percentile bootstrap CI, the two groups resampled independently over tokens")
    if result is None:
        verdict, why = verdict_not_testable(reason or "the tokens stage did not run")
        return claim_row("unused_rows_decay", measured=None, ci=None, verdict=verdict, why=why, section="token_table")
    c = result.get("unused_vs_used")
    if not c or c.get("ci") is None or None in c["ci"] or c.get("ratio_ci") is None or None in c["ratio_ci"]:
        n = (result.get("counts") or {}).get("unused", 0)
        verdict, why = verdict_not_testable(f"this table has {n} never-used rows (the test needs 10 with a CI)")
        return claim_row("unused_rows_decay", measured=None, ci=None, verdict=verdict, why=why, section="token_table",
                         what=what)
    lo, hi = c["ci"]
    rlo, rhi = c["ratio_ci"]
    if hi < 0 and rhi < DECAY_RATIO:
        verdict = "reproduced"
        why = (f"the 95% CI [{lo:.3g}, {hi:.3g}] lies below 0 and the ratio of medians {c['ratio']:.3f} "
               f"[{rlo:.3f}, {rhi:.3f}] below {DECAY_RATIO}")
    elif lo > 0:
        verdict = "refuted"
        why = f"the 95% CI [{lo:.3g}, {hi:.3g}] lies above 0: never-used rows are larger"
    elif hi < 0:
        verdict = "inconclusive"
        why = (f"the 95% CI [{lo:.3g}, {hi:.3g}] lies below 0 but the ratio of medians {c['ratio']:.3f} "
               f"[{rlo:.3f}, {rhi:.3f}] does not lie below {DECAY_RATIO}: smaller, not by the size the rule asks")
    else:
        verdict, why = "inconclusive", f"the 95% CI [{lo:.3g}, {hi:.3g}] includes 0"
    init = result.get("init_norm")
    why += (f"; medians {c['median_unused']:.3f} ({c['n_unused']} unused) vs {c['median_used']:.3f} ({c['n_used']} used)"
            + (f"; a row at initialisation has norm about {init:.3f}, so the table shows the unheated rows small, not "
               "whether they shrank from a larger value" if init else ""))
    return claim_row("unused_rows_decay", measured=c["difference"], ci=c["ci"], verdict=verdict, why=why,
                     section="token_table", n=c["n_unused"] + c["n_used"], what=what)


def stage_tokens(ctx: StageContext) -> dict:
    from normscope.tokens import plot_tokens, run_tokens

    s, seed = ctx.sizes, ctx.config.seed
    res = run_tokens(ctx.encoder(), n_boot=s.n_boot, n_perm=s.n_perm, seed=seed)
    r = res.to_dict()
    fig = plot_tokens(res, ctx.figure_path("token_table.png"))
    rows = []
    for k in ("word", "subword", "special", "unused"):
        rows.append([k, r["counts"].get(k, 0), r["norm_median"].get(k)])
    key_numbers = []
    freq_rows = []
    for g, label in (("word", "words"), ("subword", "## pieces (string as a word)"), ("used", "all used tokens")):
        f = r["frequency"].get(g)
        if f is None:
            continue
        freq_rows.append([label, f["n"], f["n_no_frequency"], f["spearman"], ci_text(f["spearman_ci"])])
        if g == "word":
            key_numbers.append([f"Spearman \u03c1, row norm vs Zipf frequency, word tokens (n = {fmt_n(f['n'])})",
                                f["spearman"], ""])
    c = r["unused_vs_used"]
    if c is not None:
        key_numbers += [["median row norm, never-used rows", c["median_unused"], "||E[t]||"],
                        ["median row norm, used rows", c["median_used"], "||E[t]||"],
                        ["median norm, unused minus used", c["difference"], "||E[t]||"]]
    tables = [{"title": "Rows per kind and their median norm",
               "columns": ["kind", "rows", "median ||E[t]||"], "rows": rows},
              {"title": "Spearman \u03c1 of row norm and Zipf frequency (95% bootstrap CIs over tokens)",
               "columns": ["tokens", "n", "left out (no frequency)", "Spearman \u03c1", "95% CI"], "rows": freq_rows}]
    if c is not None:
        tables.append({"title": "Never-used vs used rows (verdict rule: " + TOKENS_RULE + ")",
                       "columns": ["statistic", "value", "95% CI"],
                       "rows": [["median(unused) \u2212 median(used)", c["difference"], ci_text(c["ci"])],
                                ["median(unused) / median(used)", c["ratio"], ci_text(c["ratio_ci"])]]})
    return {
        "token_table": {
            "status": "ok",
            "reason": None,
            "command": f"normscope tokens --model {ctx.config.model} --n-boot {s.n_boot} --n-perm {s.n_perm} --seed {seed} --json tokens.json",
            "sizes": f"all {fmt_n(r['n_rows'])} rows of the input embedding table ({r['source']}); {s.n_boot} bootstrap resamples",
            "result": r,
            "derived": {"rule": TOKENS_RULE},
            "key_numbers": key_numbers,
            "tables": tables,
            "figures": [{"file": Path(fig).name,
                         "caption": "Left: row norm against the Zipf frequency of the token's string (lines: binned "
                                    "medians). Right: row norms per kind; dotted: the norm of a row at "
                                    "initialisation."}],
            "notes": list(r["notes"]),
            "claims": [tokens_claim(r)],
        }
    }
