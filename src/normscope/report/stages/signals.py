"""Report stage ``signals``: norm vs semantic signals (``normscope correlate``)."""

from __future__ import annotations

from pathlib import Path

from normscope.report.context import StageContext, StageUnavailable
from normscope.report.stages._common import ci_text
from normscope.signals.claims import controlled_figure as _controlled
from normscope.signals.claims import signal_claims
from normscope.stats import p_text

__all__ = ["stage_signals", "SIGNAL_ORDER"]

SIGNAL_ORDER = ("frequency", "specificity", "concreteness", "uncertainty")


def _row(sig: str, r: dict) -> list:
    part = r.get("partial_spearman") or {}
    nl = r.get("norm_length") or {}
    controls = ", ".join(part.get("controls") or []) + "".join(
        f"{'; ' if part.get('controls') else ''}{c} not controlled (constant)" for c in r.get("controls_dropped") or [])
    return [sig, r.get("dataset"), r.get("n"), r.get("n_missing"), r.get("spearman"), ci_text(r.get("spearman_ci")),
            p_text(r.get("p_value"), int(r.get("n_perm") or 0)), part.get("rho"), ci_text(part.get("ci")), controls, nl.get("spearman"),
            r.get("n_truncated")]


def stage_signals(ctx: StageContext) -> dict:
    from normscope.errors import DataMissing, NormscopeError
    from normscope.report.missing import missing_entry, missing_reason
    from normscope.signals import plot_signal, run_correlate

    s = ctx.sizes
    seed = ctx.config.seed
    enc = ctx.encoder()
    results: dict[str, dict] = {}
    unavailable: dict[str, str] = {}
    missing: dict[str, dict] = {}  # signal -> the dataset it lacks (the report says once how to get it)
    commands: dict[str, str] = {}
    figs, rows, strata_rows = [], [], []
    for sig in SIGNAL_ORDER:
        if sig not in ctx.config.signals:
            unavailable[sig] = "not selected"
            continue
        n = s.signal_items
        if n is not None and sig == "specificity":
            n = min(n, 2000)
        ctx.console.print(f"signals: {sig}")
        try:
            res = run_correlate(sig, encoder=enc, model=ctx.config.model, n=n, seed=seed, n_boot=s.n_boot,
                                n_perm=s.n_perm, progress=True, device=ctx.config.device)
        except DataMissing as exc:
            unavailable[sig] = missing_reason({exc.dataset: missing_entry(exc)})
            missing[sig] = {"dataset": exc.dataset, **missing_entry(exc)}
            continue
        except (NormscopeError, FileNotFoundError, LookupError) as exc:
            unavailable[sig] = f"{type(exc).__name__}: {exc}".splitlines()[0]
            continue
        r = res.to_dict()
        results[sig] = r
        cmd = f"normscope correlate --signal {sig}" + (f" --n {n}" if n is not None else "")
        commands[sig] = cmd + f" --n-boot {s.n_boot} --n-perm {s.n_perm} --seed {seed} --json {sig}.json"
        fig = plot_signal(res, ctx.figure_path(f"semantic_signals_{sig}.png"))
        per_source = " per source" if res.strata else ""
        figs.append({"file": Path(fig).name, "caption": f"Raw norm vs {res.covariate}: items (points), "
                     f"equal-count binned means{per_source} with 95% CIs; {res.dataset}."})
        rows.append(_row(sig, r))
        for st in r.get("strata") or []:
            p = st.get("partial_spearman") or {}
            strata_rows.append([sig, st["name"], st["n"], st["spearman"], ci_text(st["spearman_ci"]), p.get("rho"),
                                ci_text(p.get("ci")), ", ".join(p.get("controls") or []), st["norm_length_spearman"],
                                st["mean_length"], st["mean_covariate"]])
    if not results:
        raise StageUnavailable("no signal could run: " + "; ".join(f"{k}: {v}" for k, v in unavailable.items()),
                               missing={m["dataset"]: {"title": m["title"], "cause": m["cause"],
                                                       "claims": [g for g, x in missing.items() if x["dataset"] == m["dataset"]]}
                                        for m in missing.values()})
    notes = [f"{k}: not available ({v})" for k, v in unavailable.items()]
    for sig, r in results.items():
        notes += [f"{sig}: {x}" for x in r.get("notes") or []]
        if r.get("n_missing"):
            notes.append(f"{sig}: {r['n_missing']} of {r.get('n_items')} items have no value and are excluded "
                         f"(e.g. {', '.join(map(str, (r.get('missing_examples') or [])[:5]))}).")
        if (r.get("junk") or {}).get("count"):
            notes.append(f"{sig}: {r['junk']['count']} junk item(s) left out (ids {', '.join(r['junk']['ids'][:5])}).")
    key_numbers = []
    for k, r in results.items():
        est, _, n, what = _controlled(r)
        key_numbers.append([f"Spearman \u03c1, norm vs {k} (n = {r.get('n')}{', pooled over sources' if r.get('strata') else ''})",
                            r.get("spearman"), ""])
        if est is not None and est != r.get("spearman"):
            key_numbers.append([f"{what} (n = {n})", est, ""])
    sizes = "; ".join(f"{k}: {r.get('dataset')}" for k, r in results.items())
    sizes += f"; {s.n_boot} bootstrap resamples, {s.n_perm} permutations"
    tables = [{"title": "One row per signal (95% bootstrap CIs, permutation p; length = tokens the model saw)",
               "columns": ["signal", "items", "n", "missing", "Spearman \u03c1", "95% CI", "p", "partial \u03c1",
                           "95% CI", "controls", "\u03c1(norm, length)", "truncated"],
               "rows": rows}]
    if strata_rows:
        tables.append({"title": "Per source (the pooled figure mixes sources; partial \u03c1 controls length and "
                                "frequency within the source)",
                       "columns": ["signal", "source", "n", "Spearman \u03c1", "95% CI", "partial \u03c1", "95% CI",
                                   "controls", "\u03c1(norm, length)", "mean length (tokens)", "mean covariate"],
                       "rows": strata_rows})
    return {
        "semantic_signals": {
            "status": "ok",
            "reason": None,
            "command": " ; ".join(commands.values()),
            "sizes": sizes,
            "result": results,
            "derived": {"unavailable": unavailable, "missing": missing, "commands": commands},
            "key_numbers": key_numbers,
            "tables": tables,
            "figures": figs,
            "notes": notes,
            "claims": signal_claims(results, unavailable),
        }
    }
