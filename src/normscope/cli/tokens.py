"""``normscope tokens``: the input embedding table's row norms against token frequency and use.

A thin wrapper over :func:`normscope.tokens.run_tokens` (its result's ``to_dict()`` is the ``--json``
output) and :func:`normscope.tokens.plot_tokens` (``--fig``).
"""

from __future__ import annotations

from normscope._format import MISSING
from normscope.cli._app import app
from normscope.cli._console import make_console
from normscope.cli._outputs import Row, Rows, figure_outputs, single_or_compare
from normscope.cli._options import FigOut, JsonOut, Models, TableOut, models_of, option_for
from normscope.requests import Resampling, from_options
from normscope.requests.tokens import TokensRequest
from normscope.validate import check_paths


def _ci(ci) -> str:
    return MISSING if not ci or ci[0] is None else f"[{ci[0]:+.3f}, {ci[1]:+.3f}]"


def _table(res) -> Rows:
    """The tokens table (rows keyed by the result's field paths)."""
    rows = []
    for k in ("word", "subword", "special", "unused"):
        med = res.norm_median.get(k)
        rows.append(Row(f"counts.{k}", f"{k} rows: n, median norm",
                        (f"{res.counts.get(k, 0):,}, {MISSING if med is None else f'{med:.3f}'}", "")))
    for g, label in (("word", "words"), ("subword", "## pieces (string as a word)"), ("used", "all used tokens")):
        r = res.frequency.get(g)
        if r is not None:
            rows.append(Row(f"frequency.{g}.spearman", f"Spearman ρ(norm, Zipf), {label} (n = {r['n']:,})",
                            (f"{r['spearman']:+.3f}", _ci(r["spearman_ci"]))))
    c = res.unused_vs_used
    if c is not None:
        rows.append(Row("unused_vs_used.difference", f"median norm, unused − used (n = {c['n_unused']:,} / {c['n_used']:,})",
                        (f"{c['difference']:+.3f}", _ci(c["ci"]))))
        rows.append(Row("unused_vs_used.ratio", "median norm, unused / used",
                        (f"{c['ratio']:.3f}", _ci(c["ratio_ci"]).replace("+", ""))))
    if res.init_norm is not None:
        rows.append(Row("init_norm", "row norm at initialisation (sd·√d)", (f"{res.init_norm:.3f}", "")))
    return Rows(f"input embedding table — {res.model} ({res.n_rows:,} rows x {res.dim})", ("quantity", "value", "95% CI"),
                tuple(rows), caption=f"95% CIs: bootstrap over tokens ({res.n_boot} resamples); frequency: wordfreq Zipf")


_DEFAULT = TokensRequest()


@app.command()
def tokens(
    models: Models = None,
    seed: option_for(Resampling, "seed") = _DEFAULT.resampling.seed,
    n_boot: option_for(Resampling, "n_boot") = _DEFAULT.resampling.n_boot,
    n_perm: option_for(Resampling, "n_perm") = _DEFAULT.resampling.n_perm,
    device: option_for(TokensRequest, "device") = _DEFAULT.device,
    json_path: JsonOut = None,
    out: TableOut = None,
    fig: FigOut = None,
) -> None:
    """Row norms of the model's input embedding table: vs token frequency, and never-used vs used rows."""
    from normscope.tokens import plot_tokens, run_tokens  # torch: the CLI's start-up stays light

    models = models_of(models)
    check_paths([("-o/--out", out, "table"), ("--json", json_path, "json"), *figure_outputs(fig, models)])
    request = from_options(TokensRequest, locals())

    def call(m):
        return run_tokens(request.replace(model=m))

    console = make_console(stderr=True)

    def notes(res) -> None:
        for note in res.notes:
            console.print(f"note: {note}", markup=False)

    single_or_compare(models, call, _table, title=f"input embedding tables: {len(models)} models side by side",
                      console=console, out=out, json_path=json_path, fig=fig, plot=plot_tokens, notes=notes)
