"""The extensions (Ray engine, ANN indexes, calibrator, integrations) sit outside the core: the import-linter
contract covers every core module, no core import loads them at run time, and ``engine='ray'`` reaches the Ray
engine only through the registry that importing :mod:`normscope.extensions` fills."""

from __future__ import annotations

import json
import pkgutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import normscope
from normscope.engine import register_engine
from normscope.errors import InputError

ROOT = Path(__file__).resolve().parents[1]


def _forbidden_contract() -> dict:
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    (c,) = [c for c in contracts if c["type"] == "forbidden" and "normscope.extensions" in c["forbidden_modules"]]
    return c


def test_the_contract_names_every_core_module():
    top = {f"normscope.{m.name}" for m in pkgutil.iter_modules(normscope.__path__)}
    core = top - {"normscope.cli", "normscope.extensions", "normscope.__main__"}
    assert set(_forbidden_contract()["source_modules"]) == core


def _fresh(code: str):
    """Run ``code`` (which prints one JSON line) in a fresh interpreter on this checkout's source."""
    env_path = str(ROOT / "src")
    out = subprocess.run([sys.executable, "-c", f"import sys; sys.path.insert(0, {env_path!r}); {code}"],
                         capture_output=True, text=True, check=True, timeout=120)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_core_imports_do_not_load_the_extensions_and_ray_needs_registering():
    pytest.importorskip("ray")
    got = _fresh(
        "import json, sys\n"
        "import normscope.engine, normscope.retrieval, normscope.report\n"
        "from normscope.errors import ModelError\n"
        "loaded = sorted(m for m in sys.modules if m.startswith('normscope.extensions'))\n"
        "try:\n"
        "    normscope.engine.check_engine('ray'); before = 'ok'\n"
        "except ModelError as e:\n"
        "    before = str(e)\n"
        "import normscope.extensions\n"
        "print(json.dumps({'loaded': loaded, 'before': before, 'after': normscope.engine.check_engine('ray')}))"
    )
    assert got["loaded"] == []
    assert got["before"] == "--engine ray is an extension: import normscope.extensions first (the CLI does)"
    assert got["after"] == "ray"


def test_importing_the_extensions_loads_no_heavy_dependency():
    got = _fresh(
        "import json, sys\n"
        "import normscope.extensions\n"
        "print(json.dumps(sorted(m for m in ('ray', 'faiss', 'sklearn', 'torch', 'normscope.retrieval')\n"
        "                        if m in sys.modules)))"
    )
    assert got == []


@pytest.mark.parametrize("name", ["local", "dask"])
def test_register_engine_refuses_local_and_unknown_names(name):
    with pytest.raises(InputError, match=f"cannot register engine '{name}'"):
        register_engine(name, object())


def test_lazy_names_are_the_submodules_objects():
    import normscope.extensions as ext
    from normscope.extensions import ann, calibrate, calibrator, integrations

    assert ext.norm_aware_similarity is integrations.norm_aware_similarity
    assert ext.Calibrator is calibrator.Calibrator
    assert ext.run_calibrate is calibrate.run_calibrate
    assert ext.build_ann_index is ann.build_ann_index
    assert set(ext.__all__) <= set(dir(ext))
    with pytest.raises(AttributeError):
        ext.no_such_name  # noqa: B018


@pytest.mark.parametrize("old, new", [
    ("normscope.extensions.ann", "normscope.extensions.ann_index"),
    ("normscope.extensions.calibrator", "normscope.extensions.calibrator_file"),
    ("normscope.extensions.calibrate", "normscope.extensions.calibrate_result"),
    ("normscope.encoders.openvino_runtime", "normscope.encoders.openvino_ir"),
])
def test_a_split_module_still_exports_what_moved_out_of_it(old, new):
    """Modules split at a seam (issue 37 item 6): every public name of the new module is still in the old module's
    ``__all__`` and is the very same object there, so ``from <old> import X`` keeps working."""
    import importlib

    o, n = importlib.import_module(old), importlib.import_module(new)
    assert n.__all__ and set(n.__all__) <= set(o.__all__)
    for name in n.__all__:
        assert getattr(o, name) is getattr(n, name), name
