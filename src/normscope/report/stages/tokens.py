"""Report stage ``tokens``: the input embedding table as a trace of the mechanism (``normscope tokens``).

Its scorecard row ``unused_rows_decay`` (Theorem 1's mechanism: a row that gets no gradient feels no heat,
only decay) is built by :func:`tokens_claim`, a pure function of the stage's result, judged by the shared
rules of :mod:`normscope.claims` (a direction, no size: the paper gives no figure).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from normscope._format import ci as ci_text, count, finite, num
from normscope.claims import ClaimRow, claim_row, judge, not_testable_row
from normscope.report.stage import Command, Figure, KeyNumber, Section, Stage, Table
from normscope.report.text import ci_excludes_zero, ci_words
from normscope.requests import Resampling
from normscope.requests.tokens import TokensRequest
from normscope.tokens import TokensResult, plot_tokens, run_tokens
from normscope.tokens.result import FrequencyCorrelation, MedianContrast

__all__ = ["TokensStage", "tokens_claim", "token_table_sentences"]

SECTION = "token_table"


def tokens_claim(result: dict | None, reason: str | None = None) -> ClaimRow:
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
    ClaimRow
        A :func:`normscope.claims.claim_row`.
    """
    what = ("median row norm of never-used ([unused*]) rows minus that of used (word and ## piece) rows of the input "
            "embedding table; percentile bootstrap CI, the two groups resampled independently over tokens")
    if result is None:
        return not_testable_row("unused_rows_decay", reason or "the tokens stage did not run", section=SECTION,
                                what=what)
    res = TokensResult.from_dict(result)
    c = res.unused_vs_used
    if c is None or c.ci is None or not c.ci.known:
        n = (res.counts or {}).get("unused", 0)
        return not_testable_row("unused_rows_decay", f"this table has {n} never-used rows (the test needs 10 with a CI)",
                                section=SECTION, what=what,
                                needs="a vocabulary with at least 10 reserved rows no training text uses ([unused*])")
    ci = list(c.ci)
    j = judge("unused_rows_decay", c.difference, ci)
    init = res.init_norm
    j = j.but(why=j.why + f"; medians {c.median_unused:.3f} ({c.n_unused} unused) vs {c.median_used:.3f} "
              f"({c.n_used} used)"
              + (f"; a row at initialisation has norm about {init:.3f}, so the table shows the unheated rows small, "
                 "not whether they shrank from a larger value" if init else ""))
    ratio = f"ratio of medians {c.ratio:.3f} {ci_text(c.ratio_ci)}" if c.ratio is not None else ""
    return claim_row("unused_rows_decay", measured=c.difference, ci=ci, judged=j, section=SECTION,
                     n=c.n_unused + c.n_used, what=what, label="median(unused) - median(used)",
                     statistic="tokens: median(unused) - median(used)", beside=ratio, tested_on=str(res.model or ""))


def token_table_sentences(result: dict | None) -> list[str]:
    """The input embedding table: row norm vs frequency among word tokens, never-used vs used rows, by their CIs."""
    res = TokensResult.from_dict(result)
    out = []
    f = (res.frequency or {}).get("word") or FrequencyCorrelation()
    rho = finite(f.spearman)
    if rho is not None:
        ci = f.spearman_ci
        ex = ci_excludes_zero(ci)
        stats = f"Spearman \u03c1 = {num(rho)}, {ci_words(ci)}, {num(f.n)} word tokens"
        if ex is None:
            out.append(f"Row norm and Zipf frequency of word tokens: {stats} (no CI, so no claim).")
        elif not ex:
            out.append(f"The row norms of word tokens show no evidence of a relation with their frequency ({stats}).")
        else:
            verb = "rise" if rho > 0 else "fall"
            out.append(f"In the input embedding table, the row norms of word tokens {verb} with their frequency "
                       f"({stats}).")
    c = res.unused_vs_used or MedianContrast()
    if finite(c.difference) is not None:
        out.append(f"The {num(c.n_unused)} never-used rows have median norm {num(c.median_unused)} "
                   f"against {num(c.median_used)} for the {num(c.n_used)} used rows (difference "
                   f"{num(c.difference)}, {ci_words(c.ci)}; ratio {num(c.ratio)}, {ci_words(c.ratio_ci)}).")
    elif result:
        out.append(f"This table has {num((res.counts or {}).get('unused', 0))} never-used rows: no contrast.")
    return out


class TokensStage(Stage[TokensRequest]):
    """The rows of the model's input embedding table: norm vs token frequency, never-used vs used rows."""

    name = "tokens"
    sections = {SECTION: "Input embedding table: used and never-used rows"}
    size_names = ("n_boot", "n_perm")
    uses_data = False

    def request(self, config) -> TokensRequest:
        s = config.sizes
        return TokensRequest(model=config.model, device=config.device,
                             resampling=Resampling(n_boot=s.n_boot, n_perm=s.n_perm, seed=config.seed))

    def commands(self, request: TokensRequest) -> list[Command]:
        return [Command(tuple(request.argv() + ["--json", "tokens.json"]))]

    def run(self, ctx, request: TokensRequest) -> dict[str, Section]:
        res = run_tokens(request, encoder=ctx.torch_encoder())
        r = res.to_dict()
        fig = plot_tokens(res, ctx.figure_path("token_table.png"))
        rows = [[k, res.counts.get(k, 0), res.norm_median.get(k)] for k in ("word", "subword", "special", "unused")]
        key_numbers, freq_rows = [], []
        for g, label in (("word", "words"), ("subword", "## pieces (string as a word)"), ("used", "all used tokens")):
            f = res.frequency.get(g)
            if f is None:
                continue
            freq_rows.append([label, f.n, f.n_no_frequency, f.spearman, ci_text(f.spearman_ci)])
            if g == "word":
                key_numbers.append(KeyNumber("frequency.word.spearman", "Spearman \u03c1, row norm vs Zipf frequency, "
                                             f"word tokens (n = {count(f.n)})", f.spearman))
        c = res.unused_vs_used
        if c is not None:
            key_numbers += [KeyNumber("unused_vs_used.median_unused", "median row norm, never-used rows",
                                      c.median_unused, "||E[t]||"),
                            KeyNumber("unused_vs_used.median_used", "median row norm, used rows", c.median_used,
                                      "||E[t]||"),
                            KeyNumber("unused_vs_used.difference", "median norm, unused minus used", c.difference,
                                      "||E[t]||")]
        tables = [Table("Rows per kind and their median norm", ["kind", "rows", "median ||E[t]||"], rows),
                  Table("Spearman \u03c1 of row norm and Zipf frequency (95% bootstrap CIs over tokens)",
                        ["tokens", "n", "left out (no frequency)", "Spearman \u03c1", "95% CI"], freq_rows)]
        if c is not None:
            tables.append(Table("Never-used vs used rows (verdict: the shared rule under the scorecard; a direction is "
                                "claimed, no size)", ["statistic", "value", "95% CI"],
                                [["median(unused) \u2212 median(used)", c.difference, ci_text(c.ci)],
                                 ["median(unused) / median(used)", c.ratio, ci_text(c.ratio_ci)]]))
        n_boot = request.resampling.n_boot
        return {SECTION: Section(
            SECTION, commands=self.commands(request),
            sizes=f"all {count(res.n_rows)} rows of the input embedding table ({res.source}); {n_boot} bootstrap resamples",
            result=r, key_numbers=key_numbers, tables=tables,
            figures=[Figure(Path(fig).name, "Left: row norm against the Zipf frequency of the token's string (lines: "
                            "binned medians). Right: row norms per kind; dotted: the norm of a row at initialisation.")],
            notes=list(res.notes), claims=[tokens_claim(r)])}

    def sentences(self, section: Section, *, explained_by: Sequence[str] = ()) -> list[str]:
        return token_table_sentences(section.result)
