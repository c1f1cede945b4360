"""Every public function's numpydoc ``Parameters`` section names its signature's parameters, in order (in the style
of scikit-learn's ``test_docstring_parameters``): the public API (:data:`normscope.PUBLIC_MODULES`, each module's
``__all__``), its functions, its classes' constructors and public methods.

A callable whose docstring has no ``Parameters`` section is not checked (many small helpers say their arguments in
one sentence); one that has the section must list every parameter (``self``, ``cls`` and private ``_x`` aside; ``*args`` and
``**kwargs`` as written), each once, in the signature's order, and nothing else. ``a, b : float`` documents both.
"""

from __future__ import annotations

import importlib
import inspect
import re

import pytest

import normscope

_HEADER = re.compile(r"^\s*Parameters\s*\n\s*-{3,}\s*$", re.M)
_SECTION_END = re.compile(r"^\s*(Returns|Yields|Raises|Attributes|Notes|Examples|See Also|References|Warns|"
                          r"Other Parameters|Receives|Methods)\s*\n\s*-{3,}\s*$", re.M)


def documented_parameters(doc: str) -> list[str] | None:
    """The parameter names of a numpydoc ``Parameters`` section (None without one)."""
    doc = inspect.cleandoc(doc or "")
    m = _HEADER.search(doc)
    if m is None:
        return None
    body = doc[m.end():]
    end = _SECTION_END.search(body)
    body = body[: end.start()] if end else body
    names = []
    for line in body.splitlines():
        if not line.strip() or line[:1].isspace():  # blank, or a description line (indented)
            continue
        head = line.split(" : ")[0].rstrip(":").strip() if " : " in line or line.rstrip().endswith(":") else line.strip()
        for name in head.split(","):
            name = name.strip()
            if name:
                names.append(name)
    return names


def signature_parameters(fn) -> list[str] | None:
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    out = []
    for p in sig.parameters.values():
        if p.name in ("self", "cls") or p.name.startswith("_"):  # private parameters are not documented
            continue
        out.append(("*" if p.kind is p.VAR_POSITIONAL else "**" if p.kind is p.VAR_KEYWORD else "") + p.name)
    return out


def _public_callables():
    seen = set()
    for modname in normscope.PUBLIC_MODULES:
        mod = importlib.import_module(modname)
        for name in getattr(mod, "__all__", ()):
            obj = getattr(mod, name)
            if inspect.isfunction(obj):
                targets = [(f"{modname}.{name}", obj)]
            elif inspect.isclass(obj) and obj.__module__.startswith("normscope"):
                targets = [(f"{modname}.{name}", obj)]  # the class docstring documents the constructor
                targets += [(f"{modname}.{name}.{k}", v) for k, v in vars(obj).items()
                            if not k.startswith("_") and inspect.isfunction(v)]
            else:
                continue
            for qual, fn in targets:
                key = getattr(fn, "__qualname__", qual), getattr(fn, "__module__", "")
                if key not in seen:
                    seen.add(key)
                    yield qual, fn


def _mismatch(qual: str, fn) -> str | None:
    doc = fn.__doc__ if not inspect.isclass(fn) else (fn.__doc__ or "")
    documented = documented_parameters(doc)
    if documented is None:
        return None
    target = fn.__init__ if inspect.isclass(fn) else fn
    if inspect.isclass(fn) and "Parameters" not in (fn.__doc__ or ""):
        return None
    params = signature_parameters(target)
    if params is None:
        return None
    star_free = [p.lstrip("*") for p in params]
    if [d.lstrip("*") for d in documented] != star_free:
        return f"{qual}: docstring {documented} != signature {params}"
    return None


def test_the_parser_reads_numpydoc_sections():
    doc = """Summary.

    Parameters
    ----------
    x, y : str
        What is correlated.
    rho : float
    ci : [lo, hi] or None
        Its CI.
    **kwargs
        Passed on.

    Returns
    -------
    str
    """
    assert documented_parameters(doc) == ["x", "y", "rho", "ci", "**kwargs"]
    assert documented_parameters("Summary only.") is None

    def f(x, y, rho, ci=None, **kwargs):
        pass
    assert signature_parameters(f) == ["x", "y", "rho", "ci", "**kwargs"]


def test_public_docstrings_match_their_signatures():
    checked, wrong = 0, []
    for qual, fn in _public_callables():
        if documented_parameters(fn.__doc__) is None:
            continue
        checked += 1
        m = _mismatch(qual, fn)
        if m:
            wrong.append(m)
    assert checked > 50, checked  # the API is documented: most entry points have a Parameters section
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("modname", normscope.PUBLIC_MODULES)
def test_every_public_name_exists(modname):
    mod = importlib.import_module(modname)
    assert mod.__all__, modname
    for name in mod.__all__:
        assert hasattr(mod, name), f"{modname}.__all__ names {name}, which the module does not define"
