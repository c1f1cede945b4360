"""Several models in one report: each model's full report, then one page with the models side by side.

``normscope report --model A --model B ...`` runs :func:`~normscope.report.runner.run_report` once per
model into ``OUT/models/<slug>/`` (its own page, summary.json and resumable stage cache, so each
model's stages are cached separately and a re-run skips what is done), then writes the combined
``OUT/index.html`` and ``OUT/summary.json``:

- the claims scorecard with one column per model (figure, 95% CI and verdict of each model's run);
- a forest plot per headline statistic: the estimate and CI of every model, one panel per claim;
- every section with the models side by side: the section's key numbers as rows with one column
  per model, and each model's figures next to each other.

The stages that do not depend on the model (``uses_model = False``: the training lab and the transformer
lab, which train their own encoders) run once, for the first model; the other models' folders get a copy
of their finished records and figures, which each model's run reads from its stage cache.

A model that fails (it cannot be loaded, or its run raises) is recorded with its one-line error
and does not stop the others; the page says which model failed and why.
"""

from __future__ import annotations

import dataclasses
import textwrap
import time
from pathlib import Path

from rich.console import Console

from normscope._io import output_set, write_json
from normscope.encoders import model_slug
from normscope.errors import InputError, NormscopeError
from normscope._plot import pyplot, save_figure
from normscope.claims import CLAIMS, ClaimRow
from normscope.report.config import ReportConfig
from normscope.report.html import render_multi_report
from normscope.report.runner import ReportResult, check_report_inputs, read_record, run_report
from normscope.report.stage import StageRecord
from normscope.report.stages import STAGES

__all__ = ["MultiReportResult", "run_multi_report", "side_by_side", "forest_data", "plot_forest", "ForestPanel",
           "ForestRow", "short_names"]


@dataclasses.dataclass
class MultiReportResult:
    """What :func:`run_multi_report` produced.

    Attributes
    ----------
    index, summary_path : Path
        ``OUT/index.html`` and ``OUT/summary.json`` (the combined page and numbers).
    summary : dict
        Keys ``report`` (models, folders, seconds), ``models`` (model name -> that model's summary.json
        or ``{"error": ...}``), ``claims`` (model name -> scorecard rows), ``side_by_side``.
    results : dict
        Model name -> :class:`~normscope.report.runner.ReportResult` (models that ran).
    errors : dict
        Model name -> one-line error (models that failed as a whole).
    seconds : float
    """

    index: Path
    summary_path: Path
    summary: dict
    results: dict
    errors: dict
    seconds: float

    @property
    def failed(self) -> list[str]:
        """``"<model>: <stage>"`` for every failed stage, and ``"<model>"`` for a model that failed as a whole."""
        out = [m for m in self.errors]
        for m, r in self.results.items():
            out += [f"{m}: {st}" for st in r.failed]
        return out


def side_by_side(records: dict[str, dict[str, StageRecord]]) -> dict[str, dict]:
    """Per section, the key numbers of every model: ``{section: {"status": {model: status}, "rows": [[label, v_A, v_B...]]}}``.

    Rows are joined on each key number's :attr:`~normscope.report.stage.KeyNumber.key` (a field path),
    never on its label, which may hold per-model details (``n = 120``): a row is labelled as the first
    model that has it labels it, and a number only some models have shows ``None`` for the others.

    Parameters
    ----------
    records : dict
        Model name -> stage records (stage name -> :class:`~normscope.report.stage.StageRecord`).
    """
    models = list(records)
    out: dict[str, dict] = {}
    for st in STAGES:
        for sec in st.sections:
            status, labels, values = {}, {}, {}
            for m in models:
                rec = records[m].get(st.name)
                section = rec.sections[sec] if rec is not None else None
                status[m] = section.status.value if section is not None else "not_run"
                for k in (section.key_numbers if section is not None else ()):
                    labels.setdefault(k.key, k.label + (f" ({k.unit})" if k.unit else ""))
                    values.setdefault(k.key, {})[m] = k.value
            out[sec] = {"status": status, "rows": [[labels[k]] + [values[k].get(m) for m in models] for k in labels]}
    return out


@dataclasses.dataclass(frozen=True)
class ForestRow:
    """One model's estimate of one claim in the forest plot (``ci`` None: no interval; ``estimate`` None: not measured)."""

    model: str
    estimate: float | None
    ci: tuple[float, float] | None
    refuted: bool


@dataclasses.dataclass(frozen=True)
class ForestPanel:
    """One panel of the forest plot: a claim, what its statistic is, one row per model (in the models' order)."""

    key: str
    title: str
    what: str
    rows: tuple[ForestRow, ...]


def forest_data(claims: dict[str, list[ClaimRow]]) -> list[ForestPanel]:
    """What the forest plot draws: one panel per claim (in :data:`CLAIMS` order) that some model measured.

    Parameters
    ----------
    claims : dict
        Model name -> scorecard rows (``key``, ``measured``, ``ci``, ``verdict``, ``what``).
    """
    models = list(claims)
    panels = []
    for key in CLAIMS:
        rows = [_row(claims[m], key) for m in models]
        if all(r.measured is None for r in rows):
            continue
        what = next((r.what for r in rows if r.what), "") or ""
        panels.append(ForestPanel(key, CLAIMS[key].claim, what, tuple(
            ForestRow(m, r.measured, tuple(r.ci) if r.ci else None, r.verdict == "refuted")
            for m, r in zip(models, rows))))
    return panels


def plot_forest(claims: dict[str, list[ClaimRow]], path: str | Path) -> Path | None:
    """Forest plot of the headline statistics (:func:`forest_data`): one panel per claim, one estimate with its 95%
    CI per model.

    Parameters
    ----------
    claims : dict
        Model name -> scorecard rows (``key``, ``claim``, ``measured``, ``ci``, ``what``).
    path : str or Path
        PNG output (written atomically).

    Returns
    -------
    Path or None
        None when no claim has a figure for any model.
    """
    panels = forest_data(claims)
    if not panels:
        return None
    models = list(claims)
    plt = pyplot()
    # each panel: its title (the claim, bold) and what the statistic is, wrapped, in a band of its own above the
    # axes, so that no title runs over the tick labels; the rows 0.32 in each; fonts 9-10 pt at 110 dpi
    titles = [textwrap.wrap(p.title, 95) + textwrap.wrap(p.what, 110) for p in panels]
    row_h, line_h = 0.32, 0.19
    heights = []
    for t in titles:
        heights += [0.42 + line_h * len(t), 0.35 + row_h * len(models)]  # 0.3 in of it: the x labels above
    fig = plt.figure(figsize=(9.0, sum(heights) + 0.3))
    grid = fig.add_gridspec(len(heights), 1, height_ratios=heights, hspace=0.0, left=0.24, right=0.97,
                            top=1 - 0.1 / (sum(heights) + 0.3), bottom=0.2 / (sum(heights) + 0.3))
    for k, (panel, title) in enumerate(zip(panels, titles)):
        head = fig.add_subplot(grid[2 * k, 0])
        head.axis("off")
        n_claim = len(textwrap.wrap(panel.title, 95))
        for i, line in enumerate(title):
            y = (len(title) - i - 0.5) * line_h / (0.42 + line_h * len(title))  # from the band's foot up
            head.text(-0.3, y, line, transform=head.transAxes, va="center", ha="left",
                      fontsize=10 if i < n_claim else 8.5, fontweight="bold" if i < n_claim else "normal",
                      color="0" if i < n_claim else "0.3")
        ax = fig.add_subplot(grid[2 * k + 1, 0])
        for y, row in enumerate(panel.rows):
            if row.estimate is None:
                ax.text(0.0, y, "  not measured", va="center", fontsize=9, color="0.4", transform=ax.get_yaxis_transform())
                continue
            if row.ci is not None:
                ax.plot(row.ci, [y, y], color="C0", lw=2.2)
            ax.plot([row.estimate], [y], "o", color="C3" if row.refuted else "C0", ms=7)
        ax.axvline(0.0, color="0.5", lw=0.8, ls="--")
        ax.set_yticks(range(len(models)))
        ax.set_yticklabels(short_names(models, 34), fontsize=9)
        ax.set_ylim(-0.6, len(models) - 0.4)
        ax.invert_yaxis()
        ax.tick_params(axis="x", labelsize=9)
        ax.grid(axis="x", color="0.92", lw=0.6)
    return save_figure(fig, Path(path), dpi=110)


def short_names(models: list[str], width: int) -> list[str]:
    """Model names of at most ``width`` characters, cut in the middle (``hf:sentence-t…all-MiniLM-L6-v2``: both
    ends tell models apart); the full names when two shortened ones would be equal."""
    if width < 8:
        return list(models)
    head = (width - 1) // 2
    out = [m if len(m) <= width else m[:head] + "\u2026" + m[-(width - 1 - head):] for m in models]
    return out if len(set(out)) == len(out) else list(models)


def _reuse_shared(src: Path, sub: ReportConfig, shared: list, console, model: str) -> ReportConfig:
    """Copy the finished records (and figures) of the stages that do not depend on the model (the labs train their
    own encoders) from the first model's folder ``src`` into ``sub.out``, where :func:`run_report` finds them in
    its stage cache (their cache key holds no model): they are computed once per side-by-side report. Under
    ``--force`` the model's own stages are cleared instead, and the returned config no longer forces."""
    import shutil

    dst = Path(sub.out)
    (dst / "stages").mkdir(parents=True, exist_ok=True)
    reused = []
    for st in shared:
        rec = read_record(src, st)
        if rec is None or rec.status.value != "ok":
            continue
        for name in [f"stages/{st.name}.json"] + [f.file for f in rec.figures()]:
            tmp = dst / f".{Path(name).name}.copy"
            (dst / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src / name, tmp)
            tmp.replace(dst / name)
        reused.append(st.name)
    if reused:
        console.print(f"model {model}: {', '.join(reused)}: the same for every model (the labs train their own "
                      f"encoders): reused from {src}", soft_wrap=True, markup=False, highlight=False)
    if sub.force:  # the model's own stages are recomputed; the reused records stay
        for st in STAGES:
            if st.name not in reused:
                (dst / "stages" / f"{st.name}.json").unlink(missing_ok=True)
        sub = dataclasses.replace(sub, force=False)
    return sub


def _row(rows: list[ClaimRow], key: str) -> ClaimRow:
    """The scorecard row of claim ``key`` (an empty row when there is none)."""
    return next((r for r in map(ClaimRow.from_json, rows or []) if r.key == key), ClaimRow())


def run_multi_report(config: ReportConfig, models: list[str], *, console=None, progress: bool = True,
                     json_path: str | Path | None = None) -> MultiReportResult:
    """Run the report for every model and write the side-by-side page (see the module docstring).

    Parameters
    ----------
    config : ReportConfig
        Settings shared by every model; ``config.out`` is the combined report folder and
        ``config.model`` is ignored.
    models : list of str
        Two or more model names (as for ``--model``), all different.
    console : rich.console.Console, optional
    progress : bool, keyword-only
    json_path : str or Path, optional, keyword-only
        Also write the combined summary.json here (one set with ``OUT/summary.json`` and ``OUT/index.html``).

    Returns
    -------
    MultiReportResult

    Raises
    ------
    InputError
        Fewer than two models, a model named twice, two models with the same folder name, or an
        output place that cannot be written (checked before any model runs).
    """
    t0 = time.perf_counter()
    console = console or Console(stderr=True, markup=False)
    models = [str(m) for m in models]
    if len(models) < 2:
        raise InputError("a side-by-side report needs at least two --model")
    if len(set(models)) != len(models):
        raise InputError(f"a model is named twice: {', '.join(sorted({m for m in models if models.count(m) > 1}))}")
    slugs = {m: model_slug(m) for m in models}
    if len(set(slugs.values())) != len(models):
        raise InputError("two models map to the same folder name: " + ", ".join(f"{m} -> {s}" for m, s in slugs.items()))
    out = Path(config.out)
    check_report_inputs(config, json_path)
    (out / "models").mkdir(parents=True, exist_ok=True)

    results: dict[str, ReportResult] = {}
    errors: dict[str, str] = {}
    shared = [st for st in STAGES if not st.uses_model and st.name in config.only]
    for m in models:
        console.print(f"model {m}: report into {out / 'models' / slugs[m]}")
        sub = dataclasses.replace(config, out=out / "models" / slugs[m], model=m)
        done = next((r for r in results.values()), None)  # the first model that ran
        if done is not None and shared:
            sub = _reuse_shared(done.index.parent, sub, shared, console, m)
        try:
            results[m] = run_report(sub, console=console, progress=progress)
        except NormscopeError as exc:  # e.g. the model cannot be loaded: the other models go on
            errors[m] = str(exc).splitlines()[0]
            console.print(f"model {m}: failed: {errors[m]}")
    summaries = {m: r.summary for m, r in results.items()}
    records = {m: r.records for m, r in results.items()}
    claims = {m: s["claims"] for m, s in summaries.items()}
    forest = plot_forest(claims, out / "forest.png") if claims else None
    summary = {
        "report": {
            "models": models,
            "folders": {m: f"models/{slugs[m]}" for m in models},
            "preset": config.preset,
            "precision": config.precision,
            "seed": config.seed,
            "seconds": round(time.perf_counter() - t0, 2),
            "failed_models": errors,
        },
        "claims": claims,
        "side_by_side": side_by_side(records),
        "models": {m: summaries.get(m, {"error": errors.get(m)}) for m in models},
    }
    summary_path, index = out / "summary.json", out / "index.html"
    with output_set(summary_path, index, json_path, options={json_path: "--json"}) as tmp:
        write_json(summary, tmp[summary_path])
        render_multi_report(summary, records, out, tmp[index], forest=forest)
        if json_path is not None:
            write_json(summary, tmp[json_path])
    return MultiReportResult(index=index, summary_path=summary_path, summary=summary, results=results,
                             errors=errors, seconds=time.perf_counter() - t0)
