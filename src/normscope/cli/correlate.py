"""``normscope correlate``: what does the raw norm track? Norm vs a semantic covariate.

A thin wrapper over :func:`normscope.signals.run_correlate` (its result's ``to_dict()`` is the
``--json`` output) and :func:`normscope.signals.plot_signal` (``--fig``); this module parses the
options, prints the rich table and writes the files.
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
                                    Seed, TableOut, models_of, option_for)
from normscope.errors import InputError
from normscope.inputs import read_items
from normscope.requests import Embedding, Resampling, from_options
from normscope.requests.correlate import CorrelateRequest
from normscope.signals.labels import SIGNALS
from normscope._format import p_text
from normscope.validate import check_paths


def _p(p, n_perm: int = 0) -> str:
    """Permutation p for the table: ``< 1/(n_perm+1)`` at the floor (:func:`normscope._format.p_text`)."""
    return MISSING if p is None else p_text(p, n_perm).removeprefix("p = ").removeprefix("p ")


def _strata_rows(res) -> list[Row]:
    rows = []
    for row in res.strata or []:
        p, name = row["partial_spearman"], row["name"]
        rows.append(Row(f"strata.{name}.spearman", f"  {res.by} {name}: Spearman ρ",
                        (fixed(row["spearman"], ".3f"), ci_fixed(row["spearman_ci"]), _p(row["p_value"], res.n_perm),
                         str(row["n"]))))
        if p:
            rows.append(Row(f"strata.{name}.partial_spearman", f"  {res.by} {name}: partial ρ | {', '.join(p['controls'])}",
                            (fixed(p["rho"], ".3f"), ci_fixed(p["ci"]), _p(p["p_value"], res.n_perm), str(p["n"]))))
        rows.append(Row(f"strata.{name}.norm_length", f"  {res.by} {name}: ρ(norm, length); mean length, covariate",
                        (fixed(row["norm_length_spearman"], ".3f"),
                         f"{fixed(row['mean_length'], '.1f')}, {fixed(row['mean_covariate'], '.3f')}", "", "")))
    return rows


def _table(res) -> Rows:
    pooled = " (pooled over sources)" if res.strata else ""
    rows = [Row("spearman", f"Spearman ρ{pooled}", (fixed(res.spearman, ".3f"), ci_fixed(res.spearman_ci),
                                                    _p(res.p_value, res.n_perm), str(res.n))),
            Row("pearson", f"Pearson r{pooled}", (fixed(res.pearson, ".3f"), ci_fixed(res.pearson_ci),
                                                  _p(res.pearson_p, res.n_perm), str(res.n)))]
    part = res.partial_spearman
    if part:
        within = f" (CI, p within {res.by})" if res.strata else ""
        rows.append(Row("partial_spearman", f"partial ρ | {', '.join(part['controls'])}{within}",
                        (fixed(part["rho"], ".3f"), ci_fixed(part["ci"]), _p(part["p_value"], res.n_perm), str(part["n"]))))
    elif res.partial_reason:
        rows.append(Row("partial_spearman", "partial ρ",
                        (MISSING, "not computed: " + ", ".join(res.controls_dropped) + " constant", "", "")))
    lm = res.length_matched
    if lm and lm["rho"] is not None:
        unit = "token count" if str(lm["length"]).startswith("tokens") else "word count"
        ctrl = f" | {', '.join(lm['controls'])}" if lm["controls"] else ""
        rows.append(Row("length_matched", f"length-matched ρ{ctrl}, within equal {unit} (decides the row)",
                        (fixed(lm["rho"], ".3f"), ci_fixed(lm["ci"]), _p(lm["p_value"], res.n_perm),
                         f"{lm['n']} ({lm['n_unmatched']} unmatched)")))
        pr = lm["pairs"]
        if pr and pr["share"] is not None:
            rows.append(Row("length_matched.pairs", "  equal-length pairs: larger value has the larger norm (Wilson)",
                            (f"{100 * pr['share']:.1f} %", f"[{100 * pr['ci'][0]:.1f}, {100 * pr['ci'][1]:.1f}] %",
                             _p(pr["p"]), str(pr["n_concordant"] + pr["n_discordant"]))))
    elif lm:
        rows.append(Row("length_matched", "length-matched ρ", (MISSING, f"not computed: {lm['reason']}", "", "")))
    if res.norm_length:
        nl = res.norm_length
        unit = "tokens seen" if nl["length"].startswith("tokens") else "words"
        rows.append(Row("norm_length", f"ρ(norm, length in {unit})",
                        (fixed(nl["spearman"], ".3f"), ci_fixed(nl["spearman_ci"]), "", str(nl["n"]))))
    elif res.items is not None and "tokens" in res.items:
        rows.append(Row("norm_length", "ρ(norm, length)",
                        (MISSING, "not defined: the length is constant over the items", "", "")))
    rows += _strata_rows(res)
    rows += [Row(f"measures.{m}", f"  ρ with {m}", (fixed(r["spearman"], ".3f"), ci_fixed(r["spearman_ci"]), "", str(r["n"])))
             for m, r in (res.measures or {}).items()]
    return Rows(f"norm vs {res.signal} — {res.model}",
                ("statistic", "value", f"{int(res.ci_level * 100)}% CI", "p", "n"), tuple(rows), caption=res.dataset)


def _pct(x) -> str:
    return MISSING if x is None else f"{100 * x:+.2f} %"


def _pct_ci(ci) -> str:
    return MISSING if not ci else f"[{100 * ci[0]:+.2f}, {100 * ci[1]:+.2f}] %"


def _shuffle_rows(prefix: str, label: str, s: dict) -> list[Row]:
    share, ci = s.get("share_smaller"), s.get("share_ci")
    untied = s["n_smaller"] + s["n_larger"]
    return [Row(f"{prefix}share_smaller", f"{label}share of pairs, shuffled copy smaller (Wilson CI, sign test p)",
                (MISSING if share is None else f"{100 * share:.1f} %",
                 MISSING if not ci else f"[{100 * ci[0]:.1f}, {100 * ci[1]:.1f}] %",
                 MISSING if s.get("sign_p") is None else f"{s['sign_p']:.3g}", str(untied))),
            Row(f"{prefix}median_rel_change", f"{label}median relative norm change, shuffled vs text (bootstrap CI)",
                (_pct(s.get("median_rel_change")), _pct_ci(s.get("median_ci")), "", str(s["n_pairs"])))]


def _shuffle_table(res) -> Rows:
    rows = _shuffle_rows("", "", res.pooled)
    for s in res.strata or []:
        rows += _shuffle_rows(f"strata.{s['name']}.", f"  {res.by} {s['name']}: ", s)
    return Rows(f"norm of each text vs its word-shuffled copy — {res.model}",
                ("statistic", "value", "95% CI", "p", "n"), tuple(rows), caption=res.dataset)


def _shuffle(model, items_path, n, by, seed, n_boot, emb: Embedding, json_path, out, fig, keep_duplicates) -> None:
    """``correlate --signal shuffle``: :func:`normscope.signals.shuffle.run_shuffle`, one model or several side by side."""
    from normscope.signals.items import read_item_column
    from normscope.signals.shuffle import run_shuffle

    if fig is not None:
        raise InputError("--fig: the shuffle signal has no figure (its per-pair table is -o/--out)")
    models = models_of(model)
    check_paths([("-o/--out", out, "table"), ("--json", json_path, "json")], inputs=[("--items", items_path)])
    ids = items = strata = None
    if items_path is not None:
        ids, items = read_items(items_path)
        if by is not None:
            strata = read_item_column(items_path, by, len(items))
    elif by is not None:
        raise InputError("--by needs an --items .csv/.jsonl file with that column (SciFact titles have one source)")

    def call(m):
        return run_shuffle(items=items, ids=ids, strata=strata, by=by, n=n, embedding=emb.replace(model=m),
                           resampling=Resampling(n_boot=n_boot, n_perm=0, seed=seed),
                           keep_duplicates=keep_duplicates, progress=True)

    console = make_console(stderr=True)

    def notes(res) -> None:
        c = res.counts
        console.print(f"{c['n_pairs']} pairs; left out: {c['n_short']} of fewer than 2 words, {c['n_unshufflable']} "
                      f"unshufflable, {c['n_duplicates']} duplicates, {c['n_junk']} junk; {res.pooled['n_ties']} tied "
                      f"pairs; {c['n_token_mismatch']} pair(s) with different token counts", markup=False)
        for note in res.notes:
            console.print(f"note: {note}", markup=False)
        print_claim_lines(res.claims, console)

    single_or_compare(models, call, _shuffle_table, title=f"norm vs word-shuffled copy: {len(models)} models side by "
                      "side", console=console, out=out, json_path=json_path, fig=None, plot=None, notes=notes)


def _abstention_table(res) -> Rows:
    st = res.stats
    untied = st["n_pairs"] - st["n_ties"]
    rows = [Row("stats.auroc_norm", "pooled AUROC of the norm for unanswerable (Mann-Whitney p)",
                (fixed(st["auroc_norm"], ".3f"), "", _p(st["auroc_norm_p"]),
                 f"{st['n_answerable']} + {st['n_unanswerable']}")),
            Row("stats.auroc_tokens", "pooled AUROC of the token count (the confound)",
                (fixed(st["auroc_tokens"], ".3f"), "", "", "")),
            Row("stats.partial_rho", "partial ρ(unanswerable, norm | tokens)",
                (fixed(st["partial_rho"], ".3f"), ci_fixed(st["partial_ci"]), "", str(st["partial_n"]))),
            Row("stats.matched_share", "length-matched: unanswerable has the larger norm (Wilson CI, sign test p)",
                (MISSING if st["matched_share"] is None else f"{100 * st['matched_share']:.1f} %",
                 MISSING if not st["matched_ci"] else f"[{100 * st['matched_ci'][0]:.1f}, {100 * st['matched_ci'][1]:.1f}] %",
                 _p(st["matched_p"]), f"{untied} pairs")),
            Row("stats.r_rb", "length-matched rank-biserial r = 2 share - 1 (decides the row)",
                (fixed(st["r_rb"], ".3f"), ci_fixed(st["r_rb_ci"]), "",
                 f"{st['n_unmatched_a']} + {st['n_unmatched_b']} unmatched"))]
    return Rows(f"norm vs unanswerable, {res.signal} — {res.model}", ("statistic", "value", "95% CI", "p", "n"),
                tuple(rows), caption=res.dataset)


def _abstention(signal, model, items_path, n, seed, n_boot, emb: Embedding, json_path, out, fig) -> None:
    """``correlate --signal treecut|ruletaker``: :func:`normscope.signals.abstention.run_abstention`, one model or several."""
    from normscope.signals.abstention import DEFAULT_N_ABSTENTION, run_abstention

    if fig is not None:
        raise InputError(f"--fig: the {signal} signal has no figure (its per-item table is -o/--out)")
    if items_path is not None:
        raise InputError(f"--items: the {signal} signal generates its own items (set their number with --n-items)")
    models = models_of(model)
    check_paths([("-o/--out", out, "table"), ("--json", json_path, "json")])

    def call(m):
        return run_abstention(signal, n=DEFAULT_N_ABSTENTION if n is None else n, embedding=emb.replace(model=m),
                              resampling=Resampling(n_boot=n_boot, n_perm=0, seed=seed), progress=True)

    console = make_console(stderr=True)

    def notes(res) -> None:
        for note in res.notes:
            console.print(f"note: {note}", markup=False)
        print_claim_lines(res.claims, console)

    single_or_compare(models, call, _abstention_table, title=f"norm vs unanswerable ({signal}): {len(models)} models "
                      "side by side", console=console, out=out, json_path=json_path, fig=None, plot=None, notes=notes)


def _feverous_table(res) -> Rows:
    st, tm, ch, lb = res.stats["nei"], res.stats["time"], res.stats["challenge"], res.stats["label"]
    untied = st["n_pairs"] - st["n_ties"]
    share = (MISSING if st["matched_share"] is None else f"{100 * st['matched_share']:.1f} %",
             MISSING if not st["matched_ci"] else f"[{100 * st['matched_ci'][0]:.1f}, {100 * st['matched_ci'][1]:.1f}] %",
             _p(st["matched_p"]), f"{untied} pairs")
    rows = [Row("stats.nei.auroc_norm", "label: pooled AUROC of the norm for NOT ENOUGH INFO (Mann-Whitney p)",
                (fixed(st["auroc_norm"], ".3f"), "", _p(st["auroc_norm_p"]),
                 f"{st['n_answerable']} + {st['n_unanswerable']}")),
            Row("stats.nei.auroc_tokens", "label: pooled AUROC of the token count (the confound)",
                (fixed(st["auroc_tokens"], ".3f"), "", "", "")),
            Row("stats.nei.partial_rho", "label: partial ρ(NEI, norm | tokens)",
                (fixed(st["partial_rho"], ".3f"), ci_fixed(st["partial_ci"]), "", str(st["partial_n"]))),
            Row("stats.nei.matched_share", "label: equal-length pairs, NEI has the larger norm (Wilson CI, sign p)", share),
            Row("stats.nei.r_rb", "label: length-matched rank-biserial r = 2 share - 1",
                (fixed(st["r_rb"], ".3f"), ci_fixed(st["r_rb_ci"]), "",
                 f"{st['n_unmatched_a']} + {st['n_unmatched_b']} unmatched")),
            Row("stats.time.spearman", "annotation time: Spearman ρ(norm, seconds) (permutation p)",
                (fixed(tm["spearman"], ".3f"), ci_fixed(tm["spearman_ci"]), _p(tm["p_value"]), str(tm["n"]))),
            Row("stats.time.partial_rho", "annotation time: partial ρ | tokens",
                (fixed(tm["partial_rho"], ".3f"), ci_fixed(tm["partial_ci"]), "", str(tm["n"]))),
            Row("stats.challenge.H", "challenge types: Kruskal-Wallis H of the norm (token count's H in n)",
                (fixed(ch["H"], ".2f"), "", _p(ch["p"]), f"H tokens {fixed(ch['tokens_H'], '.2f')}")),
            Row("stats.label.H", "3 labels: Kruskal-Wallis H of the norm (token count's H in n)",
                (fixed(lb["H"], ".2f"), "", _p(lb["p"]), f"H tokens {fixed(lb['tokens_H'], '.2f')}"))]
    return Rows(f"norm vs FEVEROUS label, challenge, annotation time — {res.model}", ("statistic", "value", "95% CI", "p",
                                                                                      "n"), tuple(rows), caption=res.dataset)


def _feverous(model, items_path, n, seed, n_boot, n_perm, emb: Embedding, json_path, out, fig) -> None:
    """``correlate --signal feverous``: :func:`normscope.signals.feverous.run_feverous`, one model or several."""
    from normscope.signals.feverous import run_feverous

    if fig is not None:
        raise InputError("--fig: the feverous signal has no figure (its per-claim table is -o/--out)")
    if n is not None:
        raise InputError("--n-items: the feverous signal reads the 50 claims of the FEVEROUS sample, all of them")
    models = models_of(model)
    check_paths([("-o/--out", out, "table"), ("--json", json_path, "json")], inputs=[("--items", items_path)])

    def call(m):
        return run_feverous(embedding=emb.replace(model=m), path=items_path,
                            resampling=Resampling(n_boot=n_boot, n_perm=n_perm, seed=seed), progress=True)

    console = make_console(stderr=True)

    def notes(res) -> None:
        for note in res.notes:
            console.print(f"note: {note}", markup=False)
        print_claim_lines(res.claims, console)

    single_or_compare(models, call, _feverous_table, title=f"norm vs FEVEROUS label: {len(models)} models side by side",
                      console=console, out=out, json_path=json_path, fig=None, plot=None, notes=notes)


def _hierarchy_table(res) -> Rows:
    lm, pr, pa = res.length_matched, res.pooled, res.partial
    rows = [Row("pooled", "pooled Spearman ρ(level, norm)", (fixed(pr["spearman"], ".3f"), ci_fixed(pr["spearman_ci"]), "",
                                                            str(pr["n"]))),
            Row("partial", "partial ρ(level, norm | tokens)", (fixed(pa["rho"], ".3f"), ci_fixed(pa["ci"]), "",
                                                               str(pa["n"])))]
    if lm["rho"] is not None:
        rows.append(Row("length_matched", "length-matched ρ, within hierarchy and token count (decides the row)",
                        (fixed(lm["rho"], ".3f"), ci_fixed(lm["ci"]), _p(lm["p_value"]),
                         f"{lm['n']} ({lm['n_unmatched']} unmatched)")))
    else:
        rows.append(Row("length_matched", "length-matched ρ", (MISSING, f"not computed: {lm['reason']}", "", "")))
    p = lm["pairs"]
    if p["share"] is not None:
        rows.append(Row("length_matched.pairs", "  equal-length pairs: more specific has the larger norm (Wilson)",
                        (f"{100 * p['share']:.1f} %", f"[{100 * p['ci'][0]:.1f}, {100 * p['ci'][1]:.1f}] %", _p(p["p"]),
                         str(p["n_concordant"] + p["n_discordant"]))))
    return Rows(f"norm vs level of specificity in hierarchies — {res.model}", ("statistic", "value", "95% CI", "p", "n"),
                tuple(rows), caption=f"{res.dataset}; {res.n_hierarchies} hierarchies, {res.n_texts} texts; CIs resample "
                                     f"whole {lm.get('ci_unit') or 'hierarchies'} ({res.n_clusters})")


def _hierarchy(pairs, model, n, wordnet, seed, n_boot, n_perm, emb: Embedding, json_path, out, fig) -> None:
    """``correlate --signal specificity --pairs FILE|wordnet``: :func:`normscope.signals.hierarchy.run_hierarchy`."""
    from normscope.signals.hierarchy import WORDNET_CLUSTER_UNIT, read_hierarchies, run_hierarchy, wordnet_hierarchies

    if fig is not None:
        raise InputError("--fig: the hierarchy design has no figure (its per-text table is -o/--out)")
    models = models_of(model)
    check_paths([("-o/--out", out, "table"), ("--json", json_path, "json")])
    if pairs == "wordnet":
        df, what = wordnet_hierarchies(n, wordnet=wordnet)
    else:
        df = read_hierarchies(pairs)
        what = f"hierarchies of {Path(pairs).name}"

    def call(m):
        return run_hierarchy(df, dataset=what, embedding=emb.replace(model=m),
                             resampling=Resampling(n_boot=n_boot, n_perm=n_perm, seed=seed), progress=True,
                             cluster_unit=WORDNET_CLUSTER_UNIT if pairs == "wordnet" else None)

    console = make_console(stderr=True)

    def notes(res) -> None:
        console.print("mean length by level: " + ", ".join(f"{k}: {v:.1f}" for k, v in res.mean_tokens_by_level.items()),
                      markup=False)
        for note in res.notes:
            console.print(f"note: {note}", markup=False)
        print_claim_lines(res.claims, console)

    single_or_compare(models, call, _hierarchy_table, title=f"norm vs specificity level: {len(models)} models side by side",
                      console=console, out=out, json_path=json_path, fig=None, plot=None, notes=notes)


_DEFAULT = CorrelateRequest(signal="frequency")


@app.command()
def correlate(
    signal: option_for(CorrelateRequest, "signal"),
    models: Models = None,
    items_path: Annotated[Optional[Path], typer.Option("--items", help="Items: .txt (one per line), .jsonl or .csv (text, id) (default: the signal's dataset).")] = None,
    n: option_for(CorrelateRequest, "n") = _DEFAULT.n,
    controls: option_for(CorrelateRequest, "controls") = None,
    by: option_for(CorrelateRequest, "by") = _DEFAULT.by,
    covariate_file: Annotated[Optional[Path], typer.Option("--covariate-file", help="CSV with columns item,value (+ extra control or --by columns).")] = None,
    measure: option_for(CorrelateRequest, "measure") = _DEFAULT.measure,
    dataset: option_for(CorrelateRequest, "dataset") = _DEFAULT.dataset,
    images: option_for(CorrelateRequest, "images") = _DEFAULT.images,
    subtlex: option_for(CorrelateRequest, "subtlex") = _DEFAULT.subtlex,
    wordnet: option_for(CorrelateRequest, "wordnet") = _DEFAULT.wordnet,
    seed: Seed = _DEFAULT.resampling.seed,
    n_boot: NBoot = _DEFAULT.resampling.n_boot,
    n_perm: option_for(Resampling, "n_perm") = _DEFAULT.resampling.n_perm,
    batch_size: BatchSize = _DEFAULT.embedding.batch_size,
    device: Device = _DEFAULT.embedding.device,
    precision: Precision = _DEFAULT.embedding.precision,
    runtime: Runtime = _DEFAULT.embedding.runtime,
    json_path: JsonOut = None,
    out: TableOut = None,
    fig: FigOut = None,
    junk: JunkError = False,
    pairs: Annotated[Optional[str], typer.Option("--pairs", help="With --signal specificity: a hierarchy CSV (columns hierarchy, level, text; larger level = more specific; optional cluster: hierarchies resampled together) or 'wordnet' (hypernym chains of the --n-items most frequent nouns, grouped by their depth-3 synset); judged within hierarchy at equal token count.")] = None,
    keep_duplicates: option_for(CorrelateRequest, "keep_duplicates") = False,
) -> None:
    """Correlate raw embedding norms with a semantic signal (rho, bootstrap CI, permutation p, partial rho)."""
    # signals/ imports torch (the encoders): imported here so that the CLI's start-up stays light
    from normscope.signals import plot_signal, run_correlate
    from normscope.signals.items import read_covariate_file, read_item_column

    if signal == "shuffle":
        _shuffle(models, items_path, n, by, seed, n_boot, from_options(Embedding, locals()), json_path, out, fig,
                 keep_duplicates)
        return
    if pairs is not None:
        if signal != "specificity":
            raise InputError(f"--pairs goes with --signal specificity, not {signal!r}")
        _hierarchy(pairs, models, n, wordnet, seed, n_boot, n_perm, from_options(Embedding, locals()), json_path,
                   out, fig)
        return
    if signal in ("treecut", "ruletaker"):
        _abstention(signal, models, items_path, n, seed, n_boot, from_options(Embedding, locals()), json_path, out,
                    fig)
        return
    if signal == "feverous":
        _feverous(models, items_path, n, seed, n_boot, n_perm, from_options(Embedding, locals()), json_path, out, fig)
        return
    if signal not in SIGNALS:
        raise InputError(f"unknown signal {signal!r}; choose from "
                         f"{', '.join(SIGNALS + ('shuffle', 'treecut', 'ruletaker', 'feverous'))}")
    request = from_options(CorrelateRequest, locals())
    models = models_of(models)
    check_paths([("-o/--out", out, "table"), ("--json", json_path, "json"), *figure_outputs(fig, models)],
                inputs=[("--items", items_path), ("--covariate-file", covariate_file), ("--images", images),
                        ("--subtlex", subtlex), ("--wordnet", wordnet)])
    ids = items = strata = None
    if items_path is not None:
        ids, items = read_items(items_path)
    cov = read_covariate_file(covariate_file, signal) if covariate_file is not None else None
    if by is not None and items_path is not None and not (cov is not None and by in cov.columns):
        strata = read_item_column(items_path, by, len(items))

    def call(m):
        return run_correlate(request.replace(embedding=request.embedding.replace(model=m)), items=items, ids=ids,
                             strata=strata, covariates=cov, progress=True)

    console = make_console(stderr=True)

    def notes(res) -> None:
        if res.n_missing:
            console.print(styled(f"{res.n_missing} of {res.n_items} items have no {signal} value "
                                 f"(excluded), e.g. {res.missing_examples[:5]}", "yellow"))
        if res.junk is not None and res.junk.count:
            console.print(styled(f"{res.junk.count} junk item(s) left out: ids {', '.join(res.junk.ids[:5])}", "yellow"))
        if res.n_truncated:
            console.print(f"{res.n_truncated} item(s) were cut at the model's maximum sequence length; the length "
                          "control counts the tokens the model saw")
        for note in res.notes:
            console.print(f"note: {note}")

    what = f"the values of {covariate_file.name}" if covariate_file is not None else signal
    single_or_compare(models, call, _table, title=f"norm vs {what}: {len(models)} models side by side",
                      console=console, out=out, json_path=json_path, fig=fig, plot=plot_signal, notes=notes)
