"""``normscope similarity``: norm-aware pair scorers against human similarity ratings (STS-B, word lists).

A thin wrapper over :func:`normscope.similarity.run_similarity` (its result's ``to_dict()`` is the
``--json`` output) and :func:`normscope.similarity.plot_similarity` (``--fig``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from normscope.cli._app import app
from normscope._format import MISSING, ci_fixed, fixed
from normscope.cli._console import make_console, styled
from normscope.cli._outputs import Row, Rows, figure_outputs, print_claim_lines, single_or_compare
from normscope.cli._options import (BatchSize, Device, FigOut, JsonOut, JunkError, Models, NBoot, Precision, Runtime,
                                    Seed,
                                    TableOut, models_of, split_list)
from normscope.data import dataset_path
from normscope.requests import Embedding, Resampling
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
    dataset: Annotated[str, typer.Option("--dataset", help="Evaluated pairs: simlex-999 (found or fetched: normscope data path simlex-999), an STS-B file (sts-dev.csv, sts-test.csv) or a word-similarity list (SimLex-999.txt, WS-353, MEN, RW).")] = _DEFAULT.dataset,
    fit: Annotated[Optional[Path], typer.Option("--fit", help="Fit the scorers' parameters on this pair file (default: sts-train.csv beside an STS-B file, else a seeded random half of --dataset).")] = None,
    scorer: Annotated[Optional[list[str]], typer.Option("--scorer", callback=split_list, help="cosine, dot, inverse_norm, power (repeatable or a comma list; default all; cosine is always the baseline).")] = None,
    fmt: Annotated[str, typer.Option("--format", help="Format of --dataset: auto, sts or words.")] = _DEFAULT.fmt,
    fit_format: Annotated[str, typer.Option("--fit-format", help="Format of --fit: auto, sts or words.")] = _DEFAULT.fit_format,
    model: Models = None,
    seed: Seed = _DEFAULT.resampling.seed,
    n_boot: NBoot = _DEFAULT.resampling.n_boot,
    batch_size: BatchSize = _DEFAULT.embedding.batch_size,
    device: Device = _DEFAULT.embedding.device,
    precision: Precision = _DEFAULT.embedding.precision,
    runtime: Runtime = _DEFAULT.embedding.runtime,
    json_path: JsonOut = None,
    out: TableOut = None,
    fig: FigOut = None,
    junk_error: JunkError = False,
    keep_duplicates: Annotated[bool, typer.Option("--keep-duplicates", help="Keep pairs that repeat another pair (same "
                                                  "texts and score; default: count each once and say how many were left out).")] = False,
    whiten: Annotated[Optional[list[str]], typer.Option("--whiten", callback=split_list, help="zipf, uniform (repeatable or a comma list). Also score the pairs by the cosine of whitened vectors (Zipfian whitening, Yokoi et al. 2024: mean and covariance weighted by word frequency; or uniform), fitted on --whiten-vocab wordfreq words, never on the pairs.")] = None,
    whiten_vocab: Annotated[int, typer.Option("--whiten-vocab", min=2, help="Words of the whitening vocabulary: the top-N alphabetic English words of wordfreq, embedded by the model.")] = _DEFAULT.whiten_vocab,
) -> None:
    """Score human-rated pairs with norm-aware similarities fitted on other pairs; Spearman, Pearson, gain over cosine."""
    from normscope.similarity import plot_similarity, run_similarity  # torch: start-up stays light

    models = models_of(model)
    check_paths([("-o/--out", out, "table"), ("--json", json_path, "json"), *figure_outputs(fig, models)],
                inputs=[("--dataset", dataset), ("--fit", fit)])
    request = SimilarityRequest(dataset=dataset, fit=None if fit is None else str(fit),
                                scorers=tuple(scorer) if scorer else _DEFAULT.scorers, fmt=fmt, fit_format=fit_format,
                                keep_duplicates=keep_duplicates, whiten=tuple(whiten or ()), whiten_vocab=whiten_vocab,
                                resampling=Resampling(n_boot=n_boot, seed=seed))
    dataset = dataset_path(dataset)  # found (or fetched) once, before any model runs

    def call(m):
        emb = Embedding(model=m, device=device, precision=precision, runtime=runtime, batch_size=batch_size,
                        junk="error" if junk_error else "drop")
        return run_similarity(request.replace(dataset=str(dataset), embedding=emb), progress=True)

    console = make_console(stderr=True)

    def notes(res) -> None:
        if res.junk is not None and res.junk.count:
            console.print(styled(f"{res.junk.count} junk text(s) left out with their {res.n_pairs_junk} evaluated "
                                 f"pair(s): {', '.join(res.junk.ids[:5])}", "yellow"))
        if res.n_truncated:
            console.print(f"{res.n_truncated} text(s) were cut at the model's maximum sequence length")
        for note in res.notes:
            console.print(f"note: {note}")
        print_claim_lines(res.claims, console)

    single_or_compare(models, call, _table, title=f"{Path(dataset).name}: {len(models)} models side by side",
                      console=console, out=out, json_path=json_path, fig=fig, plot=plot_similarity, notes=notes)
