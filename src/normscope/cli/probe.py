"""``normscope probe``: heat and radial drift of each item, predicted vs observed norm (docs/theory.md section 6)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from normscope._format import ci_fixed, count, fixed, p_text
from normscope.cli._app import app
from normscope.cli._console import make_console, styled
from normscope.cli._outputs import Row, Rows, compare_models, figure_outputs, model_figure, write_outputs
from normscope.encoders import load_encoder, resolve_backend
from normscope.encoders.glove import static_refusal
from normscope.validate import check_paths
from normscope.cli._options import Device, FigOut, JsonOut, Models, TableOut, TrustRemoteCode, models_of, option_for
from normscope.datasets import wordfreq_spec, wordfreq_words
from normscope.errors import InputError
from normscope.inputs import read_items
from normscope.requests import Resampling, from_options
from normscope.requests.probe import ProbeRequest


def load_probe_items(spec: str) -> tuple[list[str], list[str]]:
    """Probe items from ``wordfreq:N`` (top-N English words of wordfreq) or a file read by
    :func:`normscope.inputs.read_items`.

    Returns
    -------
    (ids, texts) : two lists of str

    Raises
    ------
    InputError
        Malformed ``wordfreq:N`` or an unreadable items file.
    """
    n = wordfreq_spec(spec)
    if n is not None:
        texts = wordfreq_words(n)
        return [str(i) for i in range(len(texts))], texts
    return read_items(spec)


def heat_drift_path(fig: Path) -> Path:
    """The heat/drift panel written beside a probe figure: ``<stem>_heat_drift.png``."""
    return Path(fig).with_name(f"{Path(fig).stem}_heat_drift.png")


def _probe_table(res) -> Rows:
    """The correlations with the observed norm (labels from :class:`~normscope.probes.ProbeResult`)."""
    eta = fixed(res.lr, ".3g")
    rows = tuple(Row(field, label, (fixed(c["pearson"], "+.2f"), fixed(c["spearman"], "+.2f"),
                                    ci_fixed(c["ci"]["spearman"], "+.2f"), ci_fixed(c["ci_items_only"]["spearman"], "+.2f"),
                                    str(c.n), c.p_text or "no p-value"))
                 for field, label, c in res.correlations())
    return Rows(f"probe: {res.model} | {res.n_items} items | K={res.batches} B={res.batch_size} tau={res.tau} eta={eta}",
                ("comparison", "Pearson", "Spearman", "95% CI (batches+items)", "95% CI (items only)", "n",
                 "p (items perm.)"), rows)


def print_probe(res, console: Console) -> None:
    """The probe's console output: correlations, the K-convergence table, the reading of lambda, and the caveats."""
    console.print(_probe_table(res).table())
    kc = res.k_convergence
    if kc is not None and kc.rows:
        k = Table(title="Spearman rho by number of batches (first K/4, K/2, K; 95% CI over batches and items)")
        k.add_column("K", justify="right")
        heads = [key for key in kc.rows[0] if key != "batches"]
        labels = res.labels()
        for key in heads:
            k.add_column(labels[key][0])
        for row in kc.rows:
            k.add_row(str(row["batches"]), *[f"{fixed(row[h]['spearman'], '+.2f')} {ci_fixed(row[h]['ci'], '+.2f')}"
                                             for h in heads])
        console.print(k)
    console.print(f"heat cancelled by D2 (median): {fixed(res.heat_cancelled_by_d2, '.2f')} | q<0: {res.n_negative_q} | "
                  f"lambda_rad/lambda<0: {res.n_negative_lambda_rad} | c_fit: {fixed(res.c_fit, '.3g')} | "
                  f"junk left out: {res.junk.count} | truncated: {count(res.n_truncated)}")
    b = res.balance
    if b is not None and b.statistics is not None and b.statistics.dispersion is not None:
        st = b.statistics
        null = b.null.dispersion if b.null is not None else None
        null_mean = null.mean if null is not None and null.mean is not None else float("nan")
        p_below = b.p_below.dispersion if b.p_below is not None else None
        console.print(f"Theorem 1's requirement q(x) = c: dispersion mean |q/c_fit - 1| = {st.dispersion:.3g} "
                      f"(permutation null mean {null_mean:.3g}, {p_text(p_below, int(b.n_perm or 0))} below); "
                      f"q < 0: {st.share_negative_q:.1%} of items; heat share of the balance {st.heat_share:.2%}",
                      soft_wrap=True, highlight=False)
    console.print(f"weight decay: {res.weight_decay_source}")
    so = res.second_order
    chk = so.check if so is not None else None
    console.print(f"D2 second-order term: {so.description if so is not None else None}"
                  + (f"; float64 check ({chk.items} items): max {chk.max_rel_diff:.1e} of mean |D2|"
                     if chk is not None and chk.to_json() else ""))
    for c in res.caveats:
        console.print(styled("caveat:", "yellow"), c)


_DEFAULT = ProbeRequest()


@app.command()
def probe(
    items: Annotated[str, typer.Argument(help="Items file (.txt one per line, .jsonl, .csv, BEIR dir) or wordfreq:N.")],
    models: Models = None,
    pairs: Annotated[str, typer.Option("--pairs", help="Pair source: wordnet[:pos], scifact[:split], beir:DIR[:split], or a 2-column .tsv/.csv.")] = "wordnet",
    batch_size: option_for(ProbeRequest, "batch_size") = _DEFAULT.batch_size,
    batches: option_for(ProbeRequest, "batches") = _DEFAULT.batches,
    lr: option_for(ProbeRequest, "lr") = _DEFAULT.lr,
    weight_decay: option_for(ProbeRequest, "weight_decay") = _DEFAULT.weight_decay,
    tau: option_for(ProbeRequest, "tau") = _DEFAULT.tau,
    decay_mask: option_for(ProbeRequest, "decay_mask") = _DEFAULT.decay_mask,
    second_order: option_for(ProbeRequest, "second_order") = _DEFAULT.second_order,
    fd_dtype: option_for(ProbeRequest, "fd_dtype") = _DEFAULT.fd_dtype,
    fd_target: option_for(ProbeRequest, "fd_target") = _DEFAULT.fd_target,
    symmetric: option_for(ProbeRequest, "symmetric") = False,
    chunk_size: option_for(ProbeRequest, "chunk_size") = _DEFAULT.chunk_size,
    n_boot: option_for(Resampling, "n_boot") = _DEFAULT.resampling.n_boot,
    seed: option_for(Resampling, "seed") = _DEFAULT.resampling.seed,
    device: Device = "cpu",
    precision: option_for(ProbeRequest, "precision") = _DEFAULT.precision,
    json_path: JsonOut = None,
    out: TableOut = None,
    fig: FigOut = None,
    junk: option_for(ProbeRequest, "junk") = False,
    trust_remote_code: TrustRemoteCode = False,
) -> None:
    """Estimate heat and radial drift per item by virtual SGD steps and compare R_eq with the norm."""
    from normscope.pairs import load_pairs, pair_source_path  # pairs/ and probes/ import torch: start-up stays light
    from normscope.probes import plot_heat_drift, plot_predicted_vs_observed, run_probe

    models = models_of(models)
    figs = figure_outputs(fig, models)
    panels = [(f"{o} (heat/drift panel)", heat_drift_path(p), "png") for o, p, _ in figs]
    check_paths([("-o/--out", out, "table"), ("--json", json_path, "json"), *figs, *panels],
                inputs=[("ITEMS", None if items.startswith("wordfreq:") else items), ("--pairs", pair_source_path(pairs))])
    request = from_options(ProbeRequest, locals())  # checked before any model or data
    for m in models:
        if resolve_backend(m)[0] == "precomputed":
            raise InputError(f"--model {m}: precomputed vectors cannot be probed (the probe differentiates the model's weights); give a model")
        if resolve_backend(m)[0] == "static":  # GloVe: no network to differentiate
            raise static_refusal(m)
    console = make_console(stderr=True)
    if len(models) == 1:
        load_encoder(models[0], device=device, trust_remote_code=trust_remote_code)  # a bad model fails before the items load
    ids, texts = load_probe_items(items)
    pair_source = load_pairs(pairs)

    names: dict[int, str] = {}  # result -> the --model it came from (its figure's name)

    def call(m):
        encoder = load_encoder(m, device=device, trust_remote_code=trust_remote_code)
        res = run_probe(encoder, texts, pair_source, request, ids=ids, progress=True)
        names[id(res)] = m
        return res

    def plot(result, path):  # the heat/drift panel goes beside each figure (one per model when several)
        final = Path(fig) if len(models) == 1 else model_figure(fig, names[id(result)])
        plot_heat_drift(result, heat_drift_path(final))
        return plot_predicted_vs_observed(result, path)

    if len(models) > 1:
        compare_models(models, call, _probe_table, title=f"probe: {len(models)} models side by side",
                       console=console, out=out, json_path=json_path, fig=fig, plot=plot)
        return
    res = call(models[0])
    write_outputs(res, console, out=out, json_path=json_path, fig=fig, plot=plot)
    print_probe(res, console)
