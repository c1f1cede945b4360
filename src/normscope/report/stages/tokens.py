"""Report stage ``tokens``: the input embedding table as a trace of the mechanism (``normscope tokens``).

Its scorecard row ``unused_rows_decay`` (Theorem 1's mechanism: a row that gets no gradient feels no heat,
only decay) is built by :func:`tokens_claim`, a pure function of the stage's result, judged by the shared
rules of :mod:`normscope.claims` (a direction, no size: the paper gives no figure).
"""

from __future__ import annotations

from pathlib import Path

from normscope.claims import claim_row, judge, not_testable_row
from normscope.report.context import StageContext
from normscope.report.stages._common import ci_text, fmt_n

__all__ = ["stage_tokens", "tokens_claim"]


def tokens_claim(result: dict | None, reason: str | None = None) -> dict:
    """Scorecard row ``unused_rows_decay`` from the ``normscope tokens`` result dict (pure).

    The statistic is the difference of median row norms, never-used minus used rows of the input
    embedding table, with its percentile bootstrap CI (the two groups resampled independently over
    tokens). Claimed direction: negative; no size is claimed. The ratio of medians is given beside.

    Parameters
    ----------
    result : dict or None
        :meth:`normscope.tokens.TokensResult.to_dict`, or None when the stage did not run.
    reason : str, optional
        Why there is no result.

    Returns
    -------
    dict
        A :func:`normscope.claims.claim_row`.
    """
    what = ("median row norm of never-used ([unused*]) rows minus that of used (word and ## piece) rows of the input "
            "embedding table; percentile bootstrap CI, the two groups resampled independently over tokens")
    if result is None:
        return not_testable_row("unused_rows_decay", reason or "the tokens stage did not run", section="token_table",
                                what=what)
    c = result.get("unused_vs_used")
    if not c or c.get("ci") is None or None in c["ci"]:
        n = (result.get("counts") or {}).get("unused", 0)
        return not_testable_row("unused_rows_decay", f"this table has {n} never-used rows (the test needs 10 with a CI)",
                                section="token_table", what=what,
                                needs="a vocabulary with at least 10 reserved rows no training text uses ([unused*])")
    j = judge("unused_rows_decay", c["difference"], c["ci"])
    init = result.get("init_norm")
    j["why"] += (f"; medians {c['median_unused']:.3f} ({c['n_unused']} unused) vs {c['median_used']:.3f} "
                 f"({c['n_used']} used)"
                 + (f"; a row at initialisation has norm about {init:.3f}, so the table shows the unheated rows small, "
                    "not whether they shrank from a larger value" if init else ""))
    ratio = (f"ratio of medians {c['ratio']:.3f} {ci_text(c.get('ratio_ci'))}" if c.get("ratio") is not None else "")
    return claim_row("unused_rows_decay", measured=c["difference"], ci=c["ci"], judged=j, section="token_table",
                     n=c["n_unused"] + c["n_used"], what=what, label="median(unused) - median(used)",
                     statistic="tokens: median(unused) - median(used)", beside=ratio,
                     tested_on=str(result.get("model") or ""))


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
        tables.append({"title": "Never-used vs used rows (verdict: the shared rule under the scorecard; a direction is claimed, no size)",
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
