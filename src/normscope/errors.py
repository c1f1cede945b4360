"""Typed exceptions of normscope.

Every error a user can cause derives from :class:`NormscopeError`; the CLI turns
it into a one-line message and exit code 2. Anything else is an internal error
(exit code 1).
"""

from __future__ import annotations

__all__ = ["NormscopeError", "InputError", "OutputError", "ModelError", "DataError", "DataMissing"]


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


class DataMissing(DataError):
    """A dataset is in no data folder and could not be fetched here (offline, unreachable, not found).

    Raised by :func:`normscope.data.data_path`. The message is one line without library exception
    text; the report turns it into its one "missing data" line (what is missing, how to get it).

    Attributes
    ----------
    dataset : str
        Registry name (``normscope data fetch NAME``).
    title : str
        Human name of the dataset (``"SciFact (BEIR)"``).
    cause : str
        Why it could not be fetched, in a few words (``"--offline is set"``, ``"no connection to
        fh295.github.io"``).
    detail : str
        The full error text of every source tried (for the run log, never printed as the message).
    """

    def __init__(self, message: str, *, dataset: str, title: str, cause: str, detail: str = "") -> None:
        super().__init__(message)
        self.dataset = dataset
        self.title = title
        self.cause = cause
        self.detail = detail
