"""`normscope --help` starts without the heavy libraries (issue 38): ``import normscope.cli`` loads neither pandas,
pyarrow, scipy nor torch (benchmarks/cli_startup.py measures the time; 786 -> 415 modules when pandas left)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"


def test_cli_import_leaves_out_pandas_scipy_and_torch():
    code = ("import sys, normscope.cli; print(','.join(m for m in ('pandas', 'pyarrow', 'scipy', 'torch', 'sklearn', "
            "'matplotlib', 'faiss', 'transformers') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": str(SRC)}, capture_output=True,
                         text=True, check=True, timeout=120)
    assert out.stdout.strip() == ""


def test_help_lists_every_command_without_them():
    code = ("import sys; from normscope.cli import run; code = run(['--help']); "
            "print(code, 'pandas' in sys.modules, 'torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": str(SRC), "COLUMNS": "100"},
                         capture_output=True, text=True, check=True, timeout=120)
    *help_lines, last = out.stdout.strip().splitlines()
    assert last == "0 False False"
    text = "\n".join(help_lines)
    for command in ("calibrate", "correlate", "embed", "index", "lab", "probe", "report", "retrieval", "similarity",
                    "tokens"):
        assert command in text
