"""Report stage ``norms``: the distribution of raw norms (``normscope embed``)."""

from __future__ import annotations

import numpy as np

from normscope.report.context import StageContext
from normscope.report.stages._common import fmt_n, jsonable

__all__ = ["stage_norms"]


def stage_norms(ctx: StageContext) -> dict:
    from normscope.report.figures import plot_norm_distribution

    from normscope.encoders.embed import embed_input

    cfg = ctx.config
    ctx.encoder()  # loaded once (load_encoder is memoised: embed_input reuses it)
    if cfg.items is not None:
        result, table = embed_input(cfg.items, model=cfg.model, device=cfg.device, progress=True,
                                    precision=cfg.precision)
        source = f"items of {cfg.items.name}"
        sizes = f"{fmt_n(len(table))} items from {cfg.items.name}"
        command = f"normscope embed {cfg.items} --model {cfg.model} -o items.parquet --json items.json"
    else:
        result, table = embed_input(wordfreq_top=ctx.sizes.words, model=cfg.model, device=cfg.device, progress=True,
                                    precision=cfg.precision)
        source = f"top-{fmt_n(len(table))} wordfreq words"
        sizes = f"top {fmt_n(len(table))} alphabetic English words of wordfreq (most frequent first)"
        command = f"normscope embed --wordfreq-top {ctx.sizes.words} --model {cfg.model} -o words.parquet --json words.json"
    result = jsonable(result)
    texts = table.texts
    r = table.norms.astype(np.float64)
    qs = [5, 25, 50, 75, 95]
    quant = {f"p{q}": float(np.percentile(r, q)) for q in qs}
    order = np.argsort(r, kind="stable")
    k = min(10, len(r))
    lowest = [{"text": texts[i], "norm": float(r[i])} for i in order[:k]]
    highest = [{"text": texts[i], "norm": float(r[i])} for i in order[::-1][:k]]
    derived = {
        "quantiles": quant,
        "cv": float(r.std(ddof=1) / r.mean()) if len(r) > 1 else float("nan"),
        "lowest": lowest,
        "highest": highest,
        "source": source,
    }
    fig = plot_norm_distribution(r, ctx.figure_path("norm_distribution.png"), model=cfg.model, source=source)
    key_numbers = [
        ["items embedded n", result["n"], ""],
        ["mean norm", result["norm_mean"], "||z||"],
        ["sd of norm", result["norm_std"], "||z||"],
        ["min / max", f"{result['norm_min']:.3f} / {result['norm_max']:.3f}", "||z||"],
        ["5% / 50% / 95% quantile", f"{quant['p5']:.3f} / {quant['p50']:.3f} / {quant['p95']:.3f}", "||z||"],
        ["coefficient of variation", derived["cv"], ""],
    ]
    rows = [[lo["text"], lo["norm"], hi["text"], hi["norm"]] for lo, hi in zip(lowest, highest)]
    return {
        "norm_distribution": {
            "status": "ok",
            "reason": None,
            "command": command,
            "sizes": sizes,
            "result": result,
            "derived": derived,
            "key_numbers": key_numbers,
            "tables": [
                {
                    "title": f"The {k} lowest- and highest-norm items",
                    "columns": ["lowest-norm item", "||z||", "highest-norm item", "||z||"],
                    "rows": rows,
                }
            ],
            "figures": [{"file": fig.name, "caption": f"Histogram of raw norms ||z|| of the {source}."}],
            "notes": [],
        }
    }
