"""normscope command-line interface (typer + rich).

One sub-command per stage, each in its own module of this package. Exit codes:
0 success, 2 bad input or usage (one-line message, no traceback), 1 internal error.

Conventions, applied to every command here (:class:`_Command`, :class:`_Group`):

- a command that prints nothing for 10 s prints a progress line on stderr (:func:`normscope._progress.heartbeat`);
- help is plain text wrapped at the terminal's width (readable at 80 columns, never cut); a flag
  shows no value placeholder (typer >= 0.22 prints ``<bool>``), positional arguments appear in the
  usage line as ``ITEMS`` / ``[INPUT]`` (click's convention, not typer's ``{items}``), and an option
  declared without help takes the help of the shared option of the same name in
  :mod:`normscope.cli._options` (``--seed``, ``--device``, ``--trust-remote-code`` ...);
- an option that takes one value given twice (``embed --model A --model B``) is a usage error, never
  "the last one wins"; a list option (``--model`` where several models run side by side,
  ``--scorer``, ``--signals``, ``--only``, ``--control``) is repeatable and also takes a comma list:
  ``--scorer a,b`` is ``--scorer a --scorer b`` (:func:`normscope.cli._options.split_list`);
- one name per concept across commands: ``--dataset`` the data a command analyses, ``--data`` (global)
  the folder searched first for datasets, ``--pairs`` training pairs, ``--n-items`` an item count,
  ``wordfreq:N`` the N most frequent English words as items, ``--fig`` the figure (a command with
  several writes the others beside it), ``--json`` the summary, ``-o/--out`` the per-item table.
"""

from __future__ import annotations

import contextvars
import sys
import warnings

import typer
from typer.core import TyperCommand

from normscope.cli._app import _Command, _Group, _click_exceptions, app
from normscope.errors import NormscopeError

__all__ = ["app", "run", "main"]

# Each module registers its command(s) on ``app`` at import.
from normscope.cli import embed as _embed  # noqa: E402,F401
from normscope.cli import probe as _probe  # noqa: E402,F401
from normscope.cli import correlate as _correlate  # noqa: E402,F401
from normscope.cli import report as _report  # noqa: E402,F401
from normscope.cli import lab as _lab  # noqa: E402,F401
from normscope.cli import retrieval as _retrieval  # noqa: E402,F401
from normscope.cli import data as _data  # noqa: E402,F401
from normscope.cli import similarity as _similarity  # noqa: E402,F401
from normscope.cli import index as _index  # noqa: E402,F401
from normscope.cli import tokens as _tokens  # noqa: E402,F401
from normscope.cli import calibrate as _calibrate  # noqa: E402,F401
from normscope.cli import inspect as _inspect  # noqa: E402,F401


def _use_help_classes(t: typer.Typer) -> None:
    """Every command and sub-group registered on ``t`` uses :class:`_Command` / :class:`_Group`."""
    for info in t.registered_commands:
        if info.cls in (None, TyperCommand):
            info.cls = _Command
    for group in t.registered_groups:
        group.typer_instance.info.cls = _Group
        _use_help_classes(group.typer_instance)


_use_help_classes(app)


def run(argv: list[str] | None = None) -> int:
    """Run the CLI on ``argv`` and return the exit code (0 ok, 2 bad input/usage, 1 internal error).

    :class:`NormscopeError` and usage errors (a missing or malformed option) become one line
    ``error: <message>`` on stderr, with no traceback and no box (exit code 2). Each call runs in its
    own :mod:`contextvars` context, so global options (``--offline``, ``--mirror``) end with it.
    """
    cx = _click_exceptions()
    old_show = warnings.showwarning
    warnings.showwarning = _one_line_warning
    try:
        code = contextvars.copy_context().run(_run_app, argv)
    except NormscopeError as exc:
        typer.echo(f"error: {exc}", err=True)
        return 2
    except cx.UsageError as exc:
        if isinstance(exc, getattr(cx, "NoArgsIsHelpError", ())) and exc.ctx is not None:
            typer.echo(exc.ctx.get_help(), err=True)  # a command group called bare: its help, as typer would
            return 2
        where = exc.ctx.command_path if exc.ctx is not None else "normscope"
        typer.echo(f"error: {exc.format_message()} (see `{where} --help`)", err=True)
        return 2
    except cx.ClickException as exc:
        typer.echo(f"error: {exc.format_message()}", err=True)
        return exc.exit_code
    except typer.Abort:
        typer.echo("error: aborted", err=True)
        return 130
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        warnings.showwarning = old_show
    return code if isinstance(code, int) else 0


def _one_line_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """Every Python warning a command raises prints as one ``warning: <message>`` line on stderr
    (no source line, no file path of normscope's or a library's code)."""
    print(f"warning: {str(message).splitlines()[0] if str(message) else category.__name__}", file=sys.stderr)


def main() -> None:
    """Console-script entry point."""
    sys.exit(run())


def _run_app(argv):
    """The app on ``argv``, its requests' errors naming command-line options (:data:`normscope.requests.CLI_NAMES`)."""
    from normscope.requests import CLI_NAMES  # deferred: keeps the CLI's start-up imports light

    CLI_NAMES.set(True)
    return app(args=argv, prog_name="normscope", standalone_mode=False)
