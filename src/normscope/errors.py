"""Typed exceptions of normscope.

Every error a user can cause derives from :class:`NormscopeError`; the CLI turns
it into a one-line message and exit code 2. Anything else is an internal error
(exit code 1).
"""

from __future__ import annotations

__all__ = ["NormscopeError", "InputError", "OutputError", "ModelError", "DataError"]


class NormscopeError(Exception):
    """Base class of every user-facing normscope error."""


class InputError(NormscopeError, ValueError):
    """Bad user input: a missing, empty, malformed or inconsistent file or argument."""


class OutputError(InputError):
    """An output cannot be written: a read-only directory or mount, a full disk, a file size limit.

    A subclass of :class:`InputError` (the user chose the place), so code that catches
    ``InputError`` keeps working; the CLI shows it as one line and exits with code 2.
    """


class ModelError(NormscopeError):
    """A model cannot be resolved or loaded (unknown name, offline, missing extra)."""


class DataError(NormscopeError):
    """A dataset (shared data, BEIR directory, lexical resource) is missing or malformed."""
