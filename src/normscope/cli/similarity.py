"""``normscope similarity``: norm-aware pair scorers against human similarity ratings (STS-B, word lists).

A thin wrapper over :func:`normscope.similarity.run_similarity` (its result's ``to_dict()`` is the
``--json`` output) and :func:`normscope.similarity.plot_similarity` (``--fig``).
"""

from __future__ import annotations

from pathlib import Path
from normscope.cli._app import app
from normscope._format import MISSING, ci_fixed, fixed, noun, plural
from normscope.cli._console import make_console, styled
from normscope.cli._outputs import Row, Rows, figure_outputs, print_claim_lines, single_or_compare
from normscope.cli._options import (BatchSize, Device, FigOut, JsonOut, JunkError, Models, NBoot, Precision, Runtime,
                                    Seed, TableOut, models_of, option_for)
from normscope.data import dataset_path
from normscope.requests import from_options
from normscope.requests.similarity import SimilarityRequest
from normscope.validate import check_paths


def _f(v) -> str:
    """A Spearman difference: 4 decimals with a sign below 0.1 in size, else 3."""
    return MISSING if v is None else fixed(v, "+.4f") if abs(v) < 0.1 else fixed(v, ".3f")


def _table(res) -> Rows:
    fit_txt = (f"fitted on {res.fit.n_pairs} pairs ({res.fit.source}"
               + (f": {Path(res.fit.path).name}" if res.fit.source != "random half" else f", seed {res.seed}")
               + ")")
    rows = []
    for name, s in res.scorers.items():
        par = MISSING if s.param is None else f"{s.param_name} = {s.param:.4g}"
        dci = MISSING if s.delta_ci is None else f"[{_f(s.delta_ci.lo)}, {_f(s.delta_ci.hi)}]"
        rows.append(Row(f"scorers.{name}", name, (par, fixed(s.spearman, ".3f"), ci_fixed(s.spearman_ci),
                                                  fixed(s.pearson, ".3f"),
                                                  MISSING if name == "cosine" else _f(s.delta_spearman), dci)))
    return Rows(f"{Path(res.dataset).name}: {res.n_pairs} evaluated pairs — {res.model}",
                ("scorer", "parameter", "Spearman ρ", "95% CI", "Pearson r", "Δ Spearman vs cosine", "95% CI (paired)"),
                tuple(rows), caption=fit_txt)


_DEFAULT = SimilarityRequest()


@app.command()
def similarity(
    dataset: option_for(SimilarityRequest, "dataset") = _DEFAULT.dataset,
    fit: option_for(SimilarityRequest, "fit") = _DEFAULT.fit,
    scorers: option_for(SimilarityRequest, "scorers") = None,
    fmt: option_for(SimilarityRequest, "fmt") = _DEFAULT.fmt,
    fit_format: option_for(SimilarityRequest, "fit_format") = _DEFAULT.fit_format,
    models: Models = None,
    seed: Seed = _DEFAULT.resampling.seed,
    n_boot: NBoot = _DEFAULT.resampling.n_boot,
    batch_size: BatchSize = _DEFAULT.embedding.batch_size,
    device: Device = _DEFAULT.embedding.device,
    precision: Precision = _DEFAULT.embedding.precision,
    runtime: Runtime = _DEFAULT.embedding.runtime,
    json_path: JsonOut = None,
    out: TableOut = None,
    fig: FigOut = None,
    junk: JunkError = False,
    keep_duplicates: option_for(SimilarityRequest, "keep_duplicates") = False,
    whiten: option_for(SimilarityRequest, "whiten") = None,
    whiten_vocab: option_for(SimilarityRequest, "whiten_vocab") = _DEFAULT.whiten_vocab,
) -> None:
    """Score human-rated pairs with norm-aware similarities fitted on other pairs; Spearman, Pearson, gain over cosine."""
    from normscope.similarity import plot_similarity, run_similarity  # torch: start-up stays light

    models = models_of(models)
    check_paths([("-o/--out", out, "table"), ("--json", json_path, "json"), *figure_outputs(fig, models)],
                inputs=[("--dataset", dataset), ("--fit", fit)])
    request = from_options(SimilarityRequest, locals())
    dataset = dataset_path(dataset)  # found (or fetched) once, before any model runs

    def call(m):
        return run_similarity(request.replace(dataset=str(dataset), embedding=request.embedding.replace(model=m)),
                              progress=True)

    console = make_console(stderr=True)

    def notes(res) -> None:
        if res.junk is not None and res.junk.count:
            console.print(styled(f"{plural(res.junk.count, 'junk text')} left out with their "
                                 f"{plural(res.n_pairs_junk, 'evaluated pair')}: {', '.join(res.junk.ids[:5])}", "yellow"))
        if res.n_truncated:
            console.print(f"{plural(res.n_truncated, 'text')} {noun(res.n_truncated, 'was', 'were')} cut at the model's maximum "
                          "sequence length")
        for note in res.notes:
            console.print(f"note: {note}")
        print_claim_lines(res.claims, console)

    single_or_compare(models, call, _table, title=f"{Path(dataset).name}: {len(models)} models side by side",
                      console=console, out=out, json_path=json_path, fig=fig, plot=plot_similarity, notes=notes)
