"""Writing a command's files, for one model or several side by side.

One model: the per-item table (``-o``, parquet), the strict-JSON summary (``--json``) and the figure
(``--fig``), written as one set (all or none, :func:`normscope._io.write_outputs`).
Several models (``--model`` given more than once): the entry point runs once per model; a model that
fails is reported with its one-line error and does not stop the others; the JSON is
``{"models": {name: summary}, "failed_models": {name: error}}``, the table stacks every model's
rows with a ``model`` column, and the figure is written once per model as ``<stem>.<model>.<ext>``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from pathlib import Path

from rich.table import Table

from normscope._format import MISSING
from normscope._io import write_json
from normscope._io import write_outputs as _write_set
from normscope.cli._console import make_console
from normscope.encoders import model_slug
from normscope.errors import NormscopeError
from normscope.validate import check_paths

__all__ = ["Row", "Rows", "write_outputs", "run_models", "write_multi_outputs", "side_by_side", "compare_models",
           "single_or_compare",
           "model_figure", "figure_outputs", "print_claim_lines"]



def model_figure(fig: Path, model: str) -> Path:
    """The figure of one model in a several-model run: ``<stem>.<model slug><suffix>`` beside ``fig``."""
    fig = Path(fig)
    return fig.with_name(f"{fig.stem}.{model_slug(model)}{fig.suffix}")


def figure_outputs(fig: Path | None, models, option: str = "--fig") -> list[tuple[str, Path, str]]:
    """The figure outputs of a run as :func:`normscope.validate.check_paths` rows: ``fig`` itself for one model,
    one :func:`model_figure` per model for several."""
    if fig is None:
        return []
    models = list(models)
    if len(models) <= 1:
        return [(option, Path(fig), "figure")]
    return [(f"{option} ({m})", model_figure(fig, m), "figure") for m in models]


def write_outputs(result, console, *, out: Path | None, json_path: Path | None, fig: Path | None,
                  plot: Callable[[object, Path], Path] | None) -> None:
    """Write ``result.items`` (parquet), ``result.to_dict()`` (strict JSON) and ``plot(result, fig)`` as one set.

    Each is written only when its path is given (the paths were checked before any work); the
    written paths are then printed as ``wrote <paths>`` on ``console``.
    """
    check_paths([("-o/--out", out, "table"), ("--json", json_path, "json"),
                 ("--fig", fig if plot is not None else None, "figure")])  # distinct before they become dict keys
    _write_set({out: lambda p: result.items.to_parquet(p, index=False),
                json_path: lambda p: write_json(result.to_dict(), p),
                fig if plot is not None else None: lambda p: plot(result, p)},
               options={out: "-o/--out", json_path: "--json", fig: "--fig"})
    written = [str(p) for p in (out, json_path, fig) if p is not None]
    if written:
        console.print("wrote " + ", ".join(written), soft_wrap=True)


def run_models(models: Sequence[str], call: Callable[[str], object], console) -> tuple[dict, dict]:
    """Run ``call(model)`` for every model; a :class:`~normscope.errors.NormscopeError` of one model is kept, not raised.

    Returns
    -------
    results : dict
        Model name -> result, for the models that ran.
    errors : dict
        Model name -> one-line error. When every model failed, the first error is raised instead.
    """
    results, errors = {}, {}
    for m in models:
        console.print(f"model {m}")
        try:
            results[m] = call(m)
        except NormscopeError as exc:
            errors[m] = str(exc).splitlines()[0]
            console.print(f"model {m}: failed: {errors[m]}", markup=False)
    if not results:
        raise NormscopeError(f"every model failed; {models[0]}: {errors[models[0]]}")
    return results, errors


def write_multi_outputs(results: dict, errors: dict, console, *, out: Path | None, json_path: Path | None,
                        fig: Path | None = None, plot: Callable[[object, Path], Path] | None = None) -> None:
    """The outputs of a several-model run, as one set (see the module docstring)."""
    import pandas as pd  # pandas is only needed when a table is written: the CLI's start-up stays light

    figs = {}
    if fig is not None and plot is not None:
        fig = Path(fig)
        figs = {model_figure(fig, m): r for m, r in results.items()}

    def table(p):
        frames = [r.items.assign(model=m) for m, r in results.items()]
        pd.concat(frames, ignore_index=True).to_parquet(p, index=False)

    check_paths([("-o/--out", out, "table"), ("--json", json_path, "json"), *[("--fig", p, "figure") for p in figs]])
    writers = {out: table if out is not None else None,
               json_path: lambda p: write_json({"models": {m: r.to_dict() for m, r in results.items()},
                                                "failed_models": errors}, p)}
    writers.update({p: (lambda q, r=r: plot(r, q)) for p, r in figs.items()})
    _write_set(writers, options={out: "-o/--out", json_path: "--json", **{p: "--fig" for p in figs}})
    written = [str(p) for p in (out, json_path, *figs) if p is not None]
    if written:
        console.print("wrote " + ", ".join(written), soft_wrap=True)


@dataclasses.dataclass(frozen=True)
class Row:
    """One row of a command's table: ``key`` identifies the statistic (a field path such as
    ``scorers.power``), ``label`` says it, ``cells`` are its formatted values (one per column after the first)."""

    key: str
    label: str
    cells: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class Rows:
    """A command's table as data: a title, the column headings (the first is the label column), the rows and
    an optional caption. :meth:`table` renders it; :func:`side_by_side` joins several models' on row keys."""

    title: str
    columns: tuple[str, ...]
    rows: tuple[Row, ...]
    caption: str | None = None

    def table(self):
        """The rich table of one model."""
        t = Table(title=self.title, caption=self.caption)
        for c in self.columns:
            t.add_column(c)
        for r in self.rows:
            t.add_row(r.label, *r.cells)
        return t


def side_by_side(tables: dict[str, Rows], *, title: str, errors: dict | None = None):
    """One rich table with the models side by side, from each model's :class:`Rows`.

    Rows are joined on :attr:`Row.key` (never on a label, which may hold per-model details), in order of
    first appearance and labelled as the first model that has them labels them; each model's cell joins
    that row's cells (value, CI, p, n) that are not empty. A failed model shows its error.

    Parameters
    ----------
    tables : dict
        Model name -> :class:`Rows` of that model.
    title : str
    errors : dict, optional
        Model name -> one-line error of a model that failed.
    """
    errors = errors or {}
    models = list(tables) + [m for m in errors if m not in tables]
    labels: dict[str, str] = {}
    cells: dict[str, dict[str, str]] = {}
    for m, t in tables.items():
        for r in t.rows:
            labels.setdefault(r.key, r.label)
            cells.setdefault(r.key, {})[m] = "  ".join(c for c in r.cells if c not in ("", MISSING))
    short = [m.rstrip("/").rsplit("/", 1)[-1] for m in models]  # hub ids: the last component, when unique
    heads = short if len(set(short)) == len(short) else models
    first = next(iter(tables.values()), None)
    fields = "  ".join(first.columns[1:]) if first is not None else ""
    out = Table(title=title, caption=(f"cells: {fields}" if fields else "") + (
        "; " + ", ".join(f"{h} = {m}" for h, m in zip(heads, models) if h != m) if heads != models else ""))
    out.add_column("statistic")
    for h in heads:
        out.add_column(h)
    for key, label in labels.items():
        out.add_row(label, *[cells[key].get(m, "") if m in tables else "" for m in models])
    if errors:
        out.add_row("failed", *["" if m in tables else errors[m][:80] for m in models])
    return out


def compare_models(models: Sequence[str], call: Callable[[str], object], table: Callable[[object], Rows], *,
                   title: str, console, out: Path | None, json_path: Path | None, fig: Path | None = None,
                   plot: Callable[[object, Path], Path] | None = None, width: int | None = None) -> None:
    """A several-model run of one command: :func:`run_models`, one :func:`side_by_side` table of
    ``table(result)`` (each model's :class:`Rows`) on stdout, then :func:`write_multi_outputs`.

    Raises
    ------
    NormscopeError
        Every model failed (the first model's error).
    """
    results, errors = run_models(models, call, console)
    make_console(width=width).print(side_by_side({m: table(r) for m, r in results.items()}, errors=errors, title=title))
    write_multi_outputs(results, errors, console, out=out, json_path=json_path, fig=fig, plot=plot)


def single_or_compare(models: Sequence[str], call: Callable[[str], object], table: Callable[[object], Rows], *,
                      title: str, console, out: Path | None, json_path: Path | None, fig: Path | None = None,
                      plot: Callable[[object, Path], Path] | None = None,
                      notes: Callable[[object], None] | None = None) -> None:
    """A command's run for one model or several (the commands' one shape).

    Several models: :func:`compare_models` (one side-by-side table titled ``title``, each model's files).
    One model: ``call(model)``, its ``table(result)`` on stdout, ``notes(result)`` (the command's own lines on
    ``console``), then its files as one set (:func:`write_outputs`).

    Raises
    ------
    NormscopeError
        The one model's error, or with several models the first one's when every model failed.
    """
    if len(models) > 1:
        compare_models(models, call, table, title=title, console=console, out=out, json_path=json_path, fig=fig,
                       plot=plot)
        return
    res = call(models[0])
    make_console().print(table(res).table())
    if notes is not None:
        notes(res)
    write_outputs(res, console, out=out, json_path=json_path, fig=fig, plot=plot)


def print_claim_lines(rows: Sequence[dict], console) -> None:
    """One line per scorecard row a command feeds (its ``--json`` ``claims``): claim, verdict, the two verdicts and
    the one-line reason (the same rows and words as ``normscope report``)."""
    from rich.text import Text

    for r in rows or []:  # plain Text: a claim, reason or dataset name is never read as console markup
        # a row the run could not decide (a failed gate: not testable here, not decided at this size) shows its
        # reason alone: the two verdicts behind it were not what decided the row
        judged = r["verdict"] in ("reproduced", "refuted", "inconclusive")
        both = f" (direction {r['direction']}, size {r['size']})" if judged else ""
        console.print(Text.assemble(f"claim: {r['claim']}: ", (str(r["verdict"]), "bold"), f"{both}: {r['reason']}"),
                      soft_wrap=True, highlight=False)

