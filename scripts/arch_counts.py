"""The architecture counts of issue 29, measured on the source tree (no model, no data; ~2 s).

    .venv/bin/python scripts/arch_counts.py [--json PATH]

Prints, for ``src/normscope``:

- ``.get("`` calls in ``report/`` + ``cli/`` and in the whole package (string-keyed reads of dicts);
- the summary fields of the stages' typed results (every dataclass field of a ``StageResult``
  subclass that goes to ``--json``), and how many of them are untyped: a bare ``dict``, ``list``,
  ``tuple``, ``Any`` or ``object``, or a container of such (``list[dict]``); a container of value types
  or scalars (``dict[str, ScorerEval]``, ``list[str]``) is typed. The earlier, stricter count (every
  ``dict``/``list`` untyped, parameterised or not) is printed beside it;
- the longest functions (lines, ``ast``) and how many exceed 80 lines (whole definitions, and bodies without
  the signature and the docstring);
- the parameters of each stage entry point;
- function-level imports of normscope's own modules (and how many of them carry a comment saying
  why they are deferred: on the import's line, or on its block of consecutive imports or the comment line
  just above that block);
- import cycles between normscope's modules (strongly connected components of the graph of module-level imports,
  ``if TYPE_CHECKING`` ones included; and, for information, with the function-level imports added);
- ruff's C901 findings above complexity 15 (when ruff is installed);
- the modules over :data:`MODULE_LIMIT` (600) lines (issue 37 item 6: split where a seam exists;
  ``tests/test_layout.py`` fails on a new one).
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import importlib
import inspect
import json
import re
import shutil
import subprocess
import sys
import typing
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "normscope"

#: The stage entry points (module, function).
ENTRY_POINTS = (("normscope.probes", "run_probe"), ("normscope.retrieval", "run_retrieval"),
                ("normscope.signals", "run_correlate"), ("normscope.similarity", "run_similarity"),
                ("normscope.lab", "run_lab"), ("normscope.lab", "run_transformer_lab"),
                ("normscope.report", "run_report"))
#: The typed results (module, class).
RESULTS = (("normscope.probes", "ProbeResult"), ("normscope.retrieval", "RetrievalResult"),
           ("normscope.signals", "CorrelateResult"), ("normscope.similarity", "SimilarityResult"),
           ("normscope.lab", "LabResult"), ("normscope.lab", "TransformerLabResult"))


#: Lines above which a module should be split at a seam (issue 37 item 6).
MODULE_LIMIT = 600


def modules_over(limit: int = MODULE_LIMIT, root: Path = SRC) -> list[tuple[int, str]]:
    """(lines, path relative to ``root``'s parent, with ``/``) of every ``.py`` file under ``root`` longer than
    ``limit`` lines (``str.splitlines``), longest first, then by path."""
    sizes = [(len(p.read_text(encoding="utf-8").splitlines()), p.relative_to(root.parent).as_posix())
             for p in root.rglob("*.py")]
    return sorted(((n, name) for n, name in sizes if n > limit), key=lambda t: (-t[0], t[1]))


def count_get(paths) -> int:
    return sum(p.read_text(encoding="utf-8").count('.get("') for d in paths for p in sorted(d.rglob("*.py")))


def _bare(ann) -> bool:
    """True when ``ann`` says nothing of its values: dict/list/tuple without parameters, Any, object, or a container
    of those."""
    origin = typing.get_origin(ann)
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        return any(_bare(a) for a in typing.get_args(ann) if a is not type(None))
    if origin in (dict, list, tuple):
        return any(_bare(a) for a in typing.get_args(ann) if a is not Ellipsis)
    return ann in (dict, list, tuple, typing.Any, object)


def _untyped(ann, strict: bool = False) -> bool:
    """True when a field's annotation is untyped (:func:`_bare`); ``strict``: the earlier rule, any dict/list/tuple
    (optionally | None), Any or object."""
    if not strict and not isinstance(ann, str):
        return _bare(ann)
    if isinstance(ann, str):
        s = ann.replace(" ", "")
        return bool(re.match(r"^(Optional\[)?(dict|list|Dict|List|Any|object|tuple)\b", s)) or s in ("dict|None", "list|None")
    origin = typing.get_origin(ann)
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        args = [a for a in typing.get_args(ann) if a is not type(None)]
        return len(args) == 1 and _untyped(args[0], strict)
    return ann in (dict, list, tuple, typing.Any, object) or origin in (dict, list)


def summary_fields() -> tuple[int, int, int, dict]:
    total = untyped = strict = 0
    per = {}
    for mod, name in RESULTS:
        cls = getattr(importlib.import_module(mod), name)
        skip = set(getattr(cls, "NOT_IN_JSON", ()))
        try:
            hints = typing.get_type_hints(cls)
        except Exception:  # forward references the module cannot resolve: read the raw strings
            hints = {f.name: f.type for f in dataclasses.fields(cls)}
        fields = [f for f in dataclasses.fields(cls) if f.name not in skip]
        u = [f.name for f in fields if _untyped(hints.get(f.name, f.type))]
        s = [f.name for f in fields if _untyped(hints.get(f.name, f.type), strict=True)]
        per[name] = {"fields": len(fields), "untyped": len(u), "untyped_names": u, "untyped_strict": len(s)}
        total += len(fields)
        untyped += len(u)
        strict += len(s)
    return total, untyped, strict, per


def functions(body: bool = False) -> list[tuple[int, str]]:
    """(lines, name) of every function, longest first: the whole definition, or (``body``) its statements
    without the signature and the docstring."""
    out = []
    for p in sorted(SRC.rglob("*.py")):
        tree = ast.parse(p.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                stmts = node.body
                if body and stmts and isinstance(stmts[0], ast.Expr) and isinstance(getattr(stmts[0], "value", None),
                                                                                   ast.Constant):
                    stmts = stmts[1:]
                start = stmts[0].lineno if body and stmts else node.lineno
                out.append((node.end_lineno - start + 1, f"{p.relative_to(SRC.parent)}:{node.name}"))
    return sorted(out, reverse=True)


def _block_comment(lines: list[str], lineno: int) -> bool:
    """Whether the block of consecutive import lines holding line ``lineno`` (1-based) carries a comment: on one
    of its lines or on the comment line just above it (one comment gives the reason for the whole block)."""
    i = lineno - 1
    while i > 0 and lines[i - 1].strip().startswith(("from ", "import ")):
        i -= 1
    j = lineno - 1
    while j + 1 < len(lines) and lines[j + 1].strip().startswith(("from ", "import ")):
        j += 1
    block = lines[i : j + 1]
    return any("#" in b for b in block) or (i > 0 and lines[i - 1].strip().startswith("#"))


def function_imports() -> tuple[int, int, list[str]]:
    """Function-level imports of normscope modules: (count, count with a reason comment, examples)."""
    n = with_reason = 0
    examples = []
    for p in sorted(SRC.rglob("*.py")):
        text = p.read_text(encoding="utf-8")
        lines = text.splitlines()
        tree = ast.parse(text)
        for fn in ast.walk(tree):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(fn):
                if isinstance(node, ast.ImportFrom) and (node.level > 0 or (node.module or "").startswith("normscope")):
                    n += 1
                    line = lines[node.lineno - 1]
                    if "#" in line or _block_comment(lines, node.lineno):
                        with_reason += 1
                    elif len(examples) < 10:
                        examples.append(f"{p.relative_to(SRC.parent)}:{node.lineno} {line.strip()}")
    return n, with_reason, examples


def _module_name(p: Path) -> str:
    parts = list(p.relative_to(SRC.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(node, module: str, is_package: bool, modules: set[str], deferred: bool):
    """The normscope modules ``node``'s import statements name: module-level ones (also under ``if TYPE_CHECKING``)
    or, with ``deferred``, those inside functions. ``from a import b`` names ``a.b`` when that is a module, else
    ``a``; relative imports are resolved against ``module``."""
    for n in ast.walk(node):
        if not isinstance(n, (ast.Import, ast.ImportFrom)):
            continue
        if isinstance(n, ast.Import):
            yield from (a.name for a in n.names if a.name.split(".")[0] == "normscope")
            continue
        base = n.module or ""
        if n.level:
            pkg = module.split(".") if is_package else module.split(".")[:-1]
            pkg = pkg[: len(pkg) - (n.level - 1)]
            base = ".".join(pkg + ([base] if base else []))
        if base.split(".")[0] != "normscope":
            continue
        for a in n.names:
            yield f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base


def import_graph(deferred: bool = False) -> dict[str, set[str]]:
    """Module -> the normscope modules it imports at module level (``deferred``: also inside functions).

    A package's ``__init__`` is the package's node; importing a submodule is an edge to that submodule only (not to
    its parent packages, which Python imports first but which do not make the submodule depend on them)."""
    files = {_module_name(p): p for p in sorted(SRC.rglob("*.py"))}
    modules = set(files)
    graph: dict[str, set[str]] = {}
    for mod, p in files.items():
        tree = ast.parse(p.read_text(encoding="utf-8"))
        is_package = p.name == "__init__.py"
        top = [st for st in tree.body if not isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
        edges = {t for st in top for t in _imports(st, mod, is_package, modules, False)}
        if deferred:
            edges |= {t for fn in ast.walk(tree) if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))
                      for t in _imports(fn, mod, is_package, modules, True)}
        # methods' and class bodies' module-level imports (rare) count as module level
        edges |= {t for st in tree.body if isinstance(st, ast.ClassDef)
                  for sub in st.body if isinstance(sub, (ast.Import, ast.ImportFrom))
                  for t in _imports(sub, mod, is_package, modules, False)}
        graph[mod] = {t for t in edges if t in modules and t != mod}
    return graph


def import_cycles(deferred: bool = False) -> list[list[str]]:
    """The import cycles of :func:`import_graph`: its strongly connected components of more than one module
    (Tarjan's algorithm), each sorted, largest first."""
    graph = import_graph(deferred)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out, key=lambda c: (-len(c), c))


def ruff_c901() -> list[str] | None:
    ruff = shutil.which("ruff") or str(Path(sys.executable).with_name("ruff"))
    if not Path(ruff).exists():
        return None
    r = subprocess.run([ruff, "check", "--isolated", "--select", "C901", "--config", "lint.mccabe.max-complexity=15",
                        "--output-format", "concise", str(SRC)], capture_output=True, text=True)
    return [line for line in r.stdout.splitlines() if "C901" in line]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", type=Path, help="also write the counts as JSON here")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(SRC.parent))
    res: dict = {}
    res["get_report_cli"] = count_get([SRC / "report", SRC / "cli"])
    res["get_total"] = count_get([SRC])
    total, untyped, strict, per = summary_fields()
    res["summary_fields"] = {"total": total, "untyped": untyped, "untyped_strict": strict, "per_result": per}
    fns = functions()
    res["longest_functions"] = [f"{n} {name}" for n, name in fns[:10]]
    res["functions_over_80_lines"] = [f"{n} {name}" for n, name in fns if n > 80]
    bodies = functions(body=True)
    res["function_bodies_over_80_lines"] = [f"{n} {name}" for n, name in bodies if n > 80]
    res["entry_point_params"] = {}
    for mod, name in ENTRY_POINTS:
        fn = getattr(importlib.import_module(mod), name)
        res["entry_point_params"][name] = len(inspect.signature(fn).parameters)
    n, why, ex = function_imports()
    res["function_level_imports"] = {"normscope_modules": n, "with_reason_comment": why, "examples": ex}
    cycles, with_deferred = import_cycles(), import_cycles(deferred=True)
    res["import_cycles"] = cycles
    res["import_cycles_with_function_level_imports"] = with_deferred
    c = ruff_c901()
    res["ruff_c901_over_15"] = c
    big = modules_over()
    res[f"modules_over_{MODULE_LIMIT}_lines"] = [f"{n} {name}" for n, name in big]
    print(f".get(\" in report/ + cli/: {res['get_report_cli']} (whole package {res['get_total']})")
    print(f"summary fields: {total}, untyped (dict/list/Any): {untyped} ({100 * untyped / max(total, 1):.0f} %); "
          f"counting every dict/list, parameterised or not: {strict} ({100 * strict / max(total, 1):.0f} %)")
    for k, v in per.items():
        print(f"  {k}: {v['fields']} fields, {v['untyped']} untyped")
    print(f"functions over 80 lines: {len(res['functions_over_80_lines'])} (bodies without signature and docstring: "
          f"{len(res['function_bodies_over_80_lines'])}); longest:")
    for line in res["longest_functions"][:5]:
        print(f"  {line}")
    print("parameters per entry point: " + ", ".join(f"{k} {v}" for k, v in res["entry_point_params"].items()))
    print(f"function-level imports of normscope modules: {n} ({why} with a reason comment)")
    print(f"import cycles (module-level imports, TYPE_CHECKING ones included): {len(cycles)}")
    for comp in cycles:
        print(f"  {' <-> '.join(comp)}")
    print(f"import cycles counting function-level imports too: {len(with_deferred)}")
    for comp in with_deferred:
        print(f"  {' <-> '.join(comp)}")
    print("ruff C901 > 15: " + ("ruff not installed" if c is None else f"{len(c)}"))
    for line in c or []:
        print(f"  {line}")
    print(f"modules over {MODULE_LIMIT} lines: {len(big)}")
    for n, name in big:
        print(f"  {n} {name}")
    if args.json:
        args.json.write_text(json.dumps(res, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
