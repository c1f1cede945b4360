"""``normscope inspect A [B]``: vector health (NaN/Inf, near-zero norms, dimension, duplicates) and, with B, whether
B comes from A's model and distribution (KS test of norms, permutation test of the mean direction).

A thin wrapper around :mod:`normscope.extensions.vector_health`; see ``docs/scale.md``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.table import Table

from normscope._io import write_json, write_outputs
from normscope.cli._app import app
from normscope.cli._console import make_console
from normscope.cli._options import JsonOut, Seed
from normscope.validate import check_paths


def _g(x) -> str:
    return "-" if x is None else f"{x:.4g}"


def _health_rows(t: Table, h: dict) -> None:
    nf, nz, du, nm = h["nonfinite"], h["near_zero"], h["duplicates"], h["norms"]
    t.add_row("vectors n x d", f"{h['n']} x {h['dim']}")
    t.add_row("rows with NaN / Inf", f"{nf['nan_rows']} / {nf['inf_rows']}" + (f"  (ids {', '.join(nf['ids'])})" if nf["ids"] else ""))
    t.add_row(f"near-zero norm (< {nz['floor']:.3g})", f"{nz['count']} ({nz['exact_zero']} exactly 0)"
              + (f"  (ids {', '.join(nz['ids'])})" if nz["ids"] else ""))
    t.add_row("duplicate vectors", f"{du['groups']} groups, {du['extra_rows']} extra rows"
              + (f"  (e.g. {' = '.join(du['examples'][0])})" if du["examples"] else ""))
    t.add_row("norm min / q25 / median / q75 / max", " / ".join(_g(nm[k]) for k in ("min", "q25", "median", "q75", "max")))


def print_inspect(res: dict, console, err) -> None:
    """The tables and verdict lines of ``normscope inspect`` for :func:`~normscope.extensions.vector_health.inspect_files`."""
    for key in ("a", "b"):
        h = res[key]
        if h is None:
            continue
        t = Table(title=f"{key.upper()}: {h['path']}" + (f" ({h['model']})" if h["model"] else " (no model recorded)"),
                  title_justify="left")
        t.add_column("check")
        t.add_column("value")
        _health_rows(t, h)
        console.print(t)
        console.print(f"{key.upper()}: " + ("healthy (no NaN/Inf, near-zero or duplicate vector)" if h["ok"] else
                                            "PROBLEMS found (above)"), markup=False, highlight=False, soft_wrap=True)
        if h["near_zero"]["count"]:
            err.print(f"near-zero vectors: {h['near_zero']['note']}", soft_wrap=True, markup=False, highlight=False)
    c = res["compare"]
    if c is None:
        return
    t = Table(title=f"B vs A: same model and distribution? (tests at alpha = {c['alpha']:g} each)", title_justify="left")
    t.add_column("test")
    t.add_column("statistic")
    t.add_column("p")
    t.add_row("recorded models", f"{c['models']['a'] or '?'} / {c['models']['b'] or '?'}",
              {True: "same", False: "DIFFER", None: "not recorded"}[c["models"]["same"]])
    t.add_row("dimension", f"{c['dim_a']} / {c['dim_b']}", "same" if c["dim_a"] == c["dim_b"] else "DIFFER")
    t.add_row("norms, two-sample KS", f"D = {c['ks']['D']:.4f}", f"{c['ks']['p']:.3g}")
    md = c["mean_direction"]
    if md is not None:
        t.add_row(f"mean direction, cos(mu_A, mu_B) ({md['n_perm']} label permutations)", f"{md['cosine']:.4f}",
                  f"{md['p']:.3g}")
        t.add_row("B's vectors also in A (byte-identical)", f"{100 * c['b_in_a']:.1f} %", "")
    console.print(t)
    if c["flag"]:
        console.print(flag_line(c), markup=False, highlight=False, soft_wrap=True)
    else:
        console.print(f"B vs A: no difference detected at alpha = {c['alpha']:g} (not a proof of sameness: "
                      f"{c['n_a']} and {c['n_b']} vectors)", markup=False, highlight=False, soft_wrap=True)


def flag_line(c: dict) -> str:
    """The one line of a flagged comparison (:func:`~normscope.extensions.vector_health.compare_sets`): what the
    difference suggests, from the recorded models (the same model: a shifted distribution; different models: another
    model; not recorded: either), then the reasons."""
    what = {True: "a shifted distribution (both files record the same model)",
            False: "another model"}.get(c["models"]["same"], "another model or a shifted distribution")
    return f"B vs A: FLAGGED: {what}: " + "; ".join(c["reasons"])


@app.command()
def inspect(
    a: Annotated[Path, typer.Argument(help="Vectors: a parquet of `normscope embed` (file or shard folder) or a .npy.",
                                      show_default=False)],
    b: Annotated[Optional[Path], typer.Argument(help="Optional second set (e.g. the queries) tested against A.",
                                                show_default=False)] = None,
    floor: Annotated[float, typer.Option("--floor", min=0.0, help="Near-zero norm floor (default 3.45e-4 = "
                                         "sqrt(float32 eps), below which qdrant is reported to skip normalising).")] = 3.4526698e-4,
    n_perm: Annotated[int, typer.Option("--n-perm", min=1, help="Label permutations of the mean-direction test.")] = 1000,
    alpha: Annotated[float, typer.Option("--alpha", help="Level of each of the two tests for the flag.")] = 0.01,
    seed: Seed = 0,
    json_path: JsonOut = None,
) -> None:
    """Check stored vectors (NaN/Inf, near-zero norms, dimension, duplicates); with B, test whether B comes from A's
    model and distribution (KS of norms, permutation test of the mean direction)."""
    from normscope.extensions.vector_health import inspect_files  # scipy: the CLI's start-up stays light

    check_paths([("--json", json_path, "json")], inputs=[("A", a), ("B", b)])
    res = inspect_files(a, b, floor=floor, n_perm=n_perm, alpha=alpha, seed=seed)
    write_outputs({json_path: lambda p: write_json(res, p)}, options={json_path: "--json"})
    err = make_console(stderr=True)
    print_inspect(res, make_console(wide=120), err)
    if json_path is not None:
        err.print(f"wrote {json_path}", soft_wrap=True, markup=False, highlight=False)
