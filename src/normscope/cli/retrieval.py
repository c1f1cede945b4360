"""``normscope retrieval``: norm-aware scoring and confidence calibration on a BEIR dataset."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.table import Table

from normscope._io import atomic_path, write_json
from normscope.validate import check_output_path
from normscope.cli import app


def fmt_p(p) -> str:
    """A p-value for the table: 3 decimals (``1.000``, ``0.042``), scientific below 0.001, ``-`` when None."""
    if p is None:
        return "-"
    return f"{p:.3f}" if p >= 1e-3 else f"{p:.1e}"


@app.command()
def retrieval(
    dataset: Annotated[str, typer.Option("--dataset", help="BEIR directory (corpus.jsonl[.gz], queries.jsonl, qrels/), scifact or nfcorpus (fetched if absent, docs/data.md), or hf:BeIR/<name>.")],
    model: Annotated[Optional[str], typer.Option("--model", "-m", help="Model name or path (default: bundled all-MiniLM-L6-v2).")] = None,
    scorer: Annotated[Optional[list[str]], typer.Option("--scorer", help="cosine|dot|inverse_norm|power (repeatable; default all).")] = None,
    fit_split: Annotated[str, typer.Option("--fit-split", help="Split fitting alpha/beta and confidence maps ('cv': cross-validation).")] = "train",
    split: Annotated[str, typer.Option("--split", help="Evaluation split.")] = "test",
    max_docs: Annotated[Optional[int], typer.Option("--max-docs", min=2, help="Subsample the corpus (relevant docs kept).")] = None,
    max_queries: Annotated[Optional[int], typer.Option("--max-queries", min=1, help="Subsample each split's queries.")] = None,
    seed: Annotated[int, typer.Option("--seed")] = 0,
    device: Annotated[str, typer.Option("--device")] = "cpu",
    batch_size: Annotated[int, typer.Option("--batch-size", min=1)] = 64,
    json_path: Annotated[Optional[Path], typer.Option("--json", help="Write the summary as JSON.")] = None,
    out: Annotated[Optional[Path], typer.Option("-o", "--out", help="Write the runs (scorer, query, rank, doc, score...) as parquet.")] = None,
) -> None:
    """Fit norm-aware scorers on a train split, evaluate them on a test split, and calibrate confidence signals."""
    from normscope.retrieval import SCORERS, run_retrieval
    from normscope.retrieval.scoring import check_scorer

    console = Console(stderr=True)
    for p in (json_path, out):
        if p is not None:
            check_output_path(p)
    scorers = [check_scorer(s) for s in (scorer or SCORERS)]
    summary, runs = run_retrieval(
        dataset,
        model=model,
        scorers=scorers,
        fit_split=fit_split,
        split=split,
        max_docs=max_docs,
        max_queries=max_queries,
        seed=seed,
        progress=True,
        batch_size=batch_size,
        device=device,
    )
    if out is not None:
        with atomic_path(out) as tmp:
            runs.to_parquet(tmp, index=False)
    if json_path is not None:
        write_json(summary, json_path)

    out_console = Console(width=max(Console().width, 120))
    t = Table(title=f"{summary['dataset_name']} / {summary['split']} ({summary['n_queries']['eval']} queries, {summary['n_docs']} docs); fitted on {summary['fit_split']}")
    for c in ("scorer", "param", "nDCG@10", "MRR@10", "R@100", "p vs cosine (t)", "p (rand.)"):
        t.add_column(c)
    for name, r in summary["scorers"].items():
        p = r["param"]
        ptxt = "-" if r["param_name"] is None else (f"{r['param_name']}=" + (", ".join(f"{x:.4g}" for x in p) if isinstance(p, list) else f"{p:.4g}"))
        t.add_row(
            name,
            ptxt,
            f"{r['ndcg@10']:.4f}",
            f"{r['mrr@10']:.4f}",
            f"{r['recall@100']:.4f}",
            fmt_p(r["p_value"]),
            fmt_p(r.get("p_value_randomization")),
        )
    out_console.print(t)
    c = Table(title=f"confidence of the cosine top-1 (base rate {summary['calibration_info']['base_rate_eval']:.3f})")
    for col in ("signal", "AUROC", "ECE (15 bins)", "AURC", "AURC optimal"):
        c.add_column(col)
    for name, e in summary["calibration"].items():
        c.add_row(name, f"{e['auroc']:.3f}", f"{e['ece']:.3f}", f"{e['aurc']:.3f}", f"{e['aurc_optimal']:.3f}")
    out_console.print(c)
    ex = summary["excluded_queries"]["eval"]
    console.print(
        f"excluded from '{summary['split']}': {ex['excluded_no_text']} without text, {ex['excluded_no_relevant']} without relevant documents; "
        f"{ex['qrels_unknown_docs']} qrels rows name unknown documents"
    )
    written = [str(p) for p in (json_path, out) if p is not None]
    if written:
        console.print("wrote " + ", ".join(written), soft_wrap=True)
