"""Report stage ``signals``: norm vs semantic signals (``normscope correlate``)."""

from __future__ import annotations

from pathlib import Path

from normscope.report.context import StageContext, StageUnavailable
from normscope.report.stages._common import jsonable, ci_text

__all__ = ["stage_signals", "SIGNAL_ORDER"]

SIGNAL_ORDER = ("frequency", "specificity", "concreteness", "uncertainty")




def stage_signals(ctx: StageContext) -> dict:
    from normscope.signals import plot_signal, run_correlate
    from normscope.errors import NormscopeError

    s = ctx.sizes
    seed = ctx.config.seed
    enc = ctx.encoder()
    results: dict[str, dict] = {}
    unavailable: dict[str, str] = {}
    commands: dict[str, str] = {}
    figs = []
    rows = []
    for sig in SIGNAL_ORDER:
        if sig not in ctx.config.signals:
            unavailable[sig] = "not selected"
            continue
        n = s.signal_items
        if n is not None and sig == "specificity":
            n = min(n, 2000)
        ctx.console.print(f"signals: {sig}")
        try:
            summary, per_item = run_correlate(sig, encoder=enc, model=ctx.config.model, n=n, seed=seed,
                                              n_boot=s.n_boot, n_perm=s.n_perm, progress=True,
                                              device=ctx.config.device)
        except (NormscopeError, FileNotFoundError, LookupError) as exc:
            unavailable[sig] = f"{type(exc).__name__}: {exc}".splitlines()[0]
            continue
        summary = jsonable(summary)
        results[sig] = summary
        cmd = f"normscope correlate --signal {sig}" + (f" --n {n}" if n is not None else "")
        commands[sig] = cmd + f" --n-boot {s.n_boot} --n-perm {s.n_perm} --seed {seed} --json {sig}.json"
        fig = plot_signal(per_item, summary, ctx.figure_path(f"semantic_signals_{sig}.png"))
        figs.append({"file": Path(fig).name, "caption": f"Raw norm vs {summary.get('covariate', sig)}: items (grey), "
                     f"equal-count binned means with 95% CIs (red); {summary.get('dataset', '')}."})
        part = summary.get("partial_spearman") or {}
        rows.append([sig, summary.get("dataset"), summary.get("n"), summary.get("n_missing"), summary.get("spearman"),
                     ci_text(summary.get("spearman_ci")), summary.get("p_value"), summary.get("pearson"),
                     part.get("rho"), ci_text(part.get("ci")), ", ".join(part.get("controls") or [])
                     + "".join(f"{'; ' if part.get('controls') else ''}{c} not controlled (constant)"
                               for c in summary.get("controls_dropped") or [])])
    if not results:
        raise StageUnavailable("no signal could run: " + "; ".join(f"{k}: {v}" for k, v in unavailable.items()))
    notes = [f"{k}: not available ({v})" for k, v in unavailable.items()]
    for sig, r in results.items():
        notes += [f"{sig}: {x}" for x in r.get("notes") or []]
        if r.get("n_missing"):
            notes.append(f"{sig}: {r['n_missing']} of {r.get('n_items')} items have no value and are excluded "
                         f"(e.g. {', '.join(map(str, (r.get('missing_examples') or [])[:5]))}).")
    key_numbers = [[f"Spearman \u03c1, norm vs {k} (n = {r.get('n')})", r.get("spearman"), ""] for k, r in results.items()]
    sizes = "; ".join(f"{k}: {r.get('dataset')}" for k, r in results.items())
    sizes += f"; {s.n_boot} bootstrap resamples, {s.n_perm} permutations"
    return {
        "semantic_signals": {
            "status": "ok",
            "reason": None,
            "command": " ; ".join(commands.values()),
            "sizes": sizes,
            "result": results,
            "derived": {"unavailable": unavailable, "commands": commands},
            "key_numbers": key_numbers,
            "tables": [{"title": "One row per signal (95% bootstrap CIs, permutation p)",
                        "columns": ["signal", "items", "n", "missing", "Spearman \u03c1", "95% CI", "p",
                                    "Pearson r", "partial \u03c1", "95% CI", "controls"],
                        "rows": rows}],
            "figures": figs,
            "notes": notes,
        }
    }
