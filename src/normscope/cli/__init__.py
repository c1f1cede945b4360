"""normscope command-line interface (typer + rich).

One sub-command per stage, each in its own module of this package. Exit codes:
0 success, 2 bad input or usage (one-line message, no traceback), 1 internal error.
"""

from __future__ import annotations

import sys

import typer

from normscope.errors import NormscopeError

app = typer.Typer(
    name="normscope",
    help="The embedding norm as a measured, theory-backed signal.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

@app.callback()
def _root() -> None:
    """The embedding norm as a measured, theory-backed signal."""


# Each module registers its command(s) on ``app`` at import.
from normscope.cli import embed as _embed  # noqa: E402,F401
from normscope.cli import probe as _probe  # noqa: E402,F401
from normscope.cli import correlate as _correlate  # noqa: E402,F401
from normscope.cli import report as _report  # noqa: E402,F401
from normscope.cli import lab as _lab  # noqa: E402,F401
from normscope.cli import retrieval as _retrieval  # noqa: E402,F401
from normscope.cli import index as _index  # noqa: E402,F401


def run(argv: list[str] | None = None) -> int:
    """Run the CLI on ``argv`` and return the exit code (0 ok, 2 bad input/usage, 1 internal error).

    :class:`NormscopeError` becomes ``error: <message>`` on stderr, with no traceback; usage
    errors are reported by typer itself (exit code 2).
    """
    try:
        app(args=argv, prog_name="normscope")
    except NormscopeError as exc:
        typer.echo(f"error: {exc}", err=True)
        return 2
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return 0


def main() -> None:
    """Console-script entry point."""
    sys.exit(run())
