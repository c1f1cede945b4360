"""How numbers are written for people: the one formatting module of the page, the CLI tables and the prose.

Every value that is missing (``None``, NaN, an interval without ends) is written :data:`MISSING`.
Two families:

- **prose and page** (:func:`num`, :func:`ci`, :func:`pct`): 3 decimals, scientific below 1e-3
  and from 1e5, thousands separators for integers, the typographic minus sign U+2212;
- **tables** (:func:`fixed`, :func:`ci_fixed`, :func:`p_value`): a fixed ``format`` spec chosen
  by the column, ASCII minus, a value that rounds to zero without its minus sign.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = ["MISSING", "finite", "num", "ci", "pct", "sig3", "count", "fixed", "ci_fixed", "p_value", "p_text", "duration",
           "join_and", "noun", "plural"]

#: How every missing value is written.
MISSING = "n/a"

_MINUS = "\u2212"


def finite(x) -> float | None:
    """``x`` as a float, or None when it is None, not a number, NaN or infinite (bools are not numbers)."""
    if x is None or isinstance(x, bool):
        return None
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def num(x, digits: int = 3) -> str:
    """A number for prose and the page: ``0.123``, ``−0.045``, ``1,234``, ``2.5e−04``; :data:`MISSING` for None/NaN.

    Integers get thousands separators; other numbers ``digits`` decimals, or scientific notation
    below ``10**-digits`` and from 1e5. A string is returned as it is.
    """
    if x is None:
        return MISSING
    if isinstance(x, bool):
        return str(x)
    if isinstance(x, int):
        return f"{x:,}"
    if isinstance(x, str):
        return x
    v = finite(x)
    if v is None:
        return MISSING
    if v != 0 and (abs(v) < 10 ** (-digits) or abs(v) >= 1e5):
        return f"{v:.{digits - 1}e}".replace("-", _MINUS)
    return f"{v:.{digits}f}".replace("-", _MINUS)


def _one_format(values: Sequence, digits: int = 3):
    """A formatter for a figure and its CI ends in one notation: :func:`num` when it writes them all alike; when
    it would mix fixed and scientific notation (``7.97e−04 [−0.005, 0.007]``), fixed with the decimals that give
    the smallest non-zero value two significant digits (``0.00080 [−0.00500, 0.00700]``, at most 8)."""
    vals = [v for v in (finite(x) for x in values) if v is not None]
    small = [abs(v) for v in vals if v != 0 and abs(v) < 10 ** (-digits)]
    if not small or len(small) == len(vals) or any(abs(v) >= 1e5 for v in vals):
        return lambda x: num(x, digits)
    decimals = min(max(digits, 1 - math.floor(math.log10(min(small)))), 8)
    return lambda x: MISSING if finite(x) is None else f"{finite(x):.{decimals}f}".replace("-", _MINUS)


def claim_figure(c) -> str:
    """This run's figure of a scorecard row with its 95% CI: percentages where the row says so (a gain sized in %),
    otherwise :func:`num`, the figure and both ends in one notation (:func:`_one_format`); :data:`MISSING`
    without a figure.

    Parameters
    ----------
    c : ClaimRow
        A :class:`normscope.claims.ClaimRow` (read by attribute: ``measured``, ``ci``, ``percent``).
    """
    measured = getattr(c, "measured", None)
    if measured is None:
        return MISSING
    ci_ = _ends(getattr(c, "ci", None))
    if getattr(c, "percent", None):
        f = lambda x: f"{100 * x:+.2f} %".replace("-", _MINUS)  # noqa: E731
    else:
        f = _one_format([measured, *(ci_ or [])])
    return f(measured) + (f" [{f(ci_[0])}, {f(ci_[1])}]" if ci_ else "")


def _ends(interval) -> tuple[float, float] | None:
    if interval is None:
        return None
    lo_hi = (interval.lo, interval.hi) if hasattr(interval, "lo") else interval
    if not isinstance(lo_hi, (list, tuple)) or len(lo_hi) != 2:
        return None
    lo, hi = finite(lo_hi[0]), finite(lo_hi[1])
    return None if lo is None or hi is None else (lo, hi)


def ci(interval, digits: int = 3) -> str:
    """An interval for prose and the page: ``[0.120, 0.340]`` (:func:`num` ends); :data:`MISSING` without both ends.

    ``interval`` is a ``[lo, hi]`` pair or an object with ``lo`` and ``hi``.
    """
    ends = _ends(interval)
    return MISSING if ends is None else f"[{num(ends[0], digits)}, {num(ends[1], digits)}]"


def pct(x) -> str:
    """A fraction as a signed percentage: ``+0.17 %``, ``−2.65 %``; :data:`MISSING` for None/NaN."""
    v = finite(x)
    return MISSING if v is None else f"{100 * v:+.2f} %".replace("-", _MINUS)


def sig3(x) -> str | None:
    """3 significant digits (``0.000123``, ``1.23e+04``); ``None`` stays ``None`` (a missing table cell)."""
    v = finite(x)
    return None if v is None else format(v, ".3g")


def count(n) -> str:
    """A count with thousands separators: ``5,000``; :data:`MISSING` for None."""
    return MISSING if n is None else f"{int(n):,}"


def fixed(x, spec: str = ".4f") -> str:
    """``x`` with the format ``spec`` for a table column; :data:`MISSING` for None/NaN; ``-0.0000`` loses its sign."""
    v = finite(x)
    if v is None:
        return MISSING
    t = format(v, spec)
    return t[1:] if t.startswith("-") and not t.strip("-0.") else t


def ci_fixed(interval, spec: str = ".3f") -> str:
    """An interval for a table column: ``[0.120, 0.340]`` (:func:`fixed` ends); :data:`MISSING` without both ends."""
    ends = _ends(interval)
    return MISSING if ends is None else f"[{fixed(ends[0], spec)}, {fixed(ends[1], spec)}]"


def p_value(p) -> str:
    """A p-value for a table: 3 decimals (``1.000``, ``0.042``), scientific below 0.001; :data:`MISSING` when None."""
    v = finite(p)
    if v is None:
        return MISSING
    return f"{v:.3f}" if v >= 1e-3 else f"{v:.1e}"


def p_text(p: float | None, n_perm: int) -> str:
    """A permutation p-value as text: ``p < 1/(n_perm+1)`` at the floor, never as an exact value there.

    Parameters
    ----------
    p : float or None
        ``(1 + #{|T*| >= |T|}) / (n_perm + 1)``, as :func:`correlation` returns it.
    n_perm : int
        Permutations behind ``p`` (0: an analytic p, printed as it is).

    Returns
    -------
    str
        ``"p < 1/2001"``, ``"p = 0.0123"`` or ``"no p-value"``.
    """
    if p is None or not math.isfinite(p):
        return "no p-value"
    if n_perm > 0 and p <= 1.0 / (n_perm + 1) * (1 + 1e-9):
        return f"p < 1/{n_perm + 1}"
    return f"p = {p:.3g}"


def duration(seconds) -> str:
    """A wall time: ``0.02 s``, ``12.3 s``, ``34 min 05 s``, ``1 h 02 min``; :data:`MISSING` for None,
    ``""`` for a value that is not a number (a stage that did not run has no time)."""
    if seconds is None:
        return MISSING
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not math.isfinite(seconds):
        return ""
    s = float(seconds)
    if s < 10:
        return f"{s:.2f} s"
    if s < 60:
        return f"{s:.1f} s"
    if s < 3600:
        m, sec = divmod(int(round(s)), 60)
        return f"{m} min {sec:02d} s"
    h, m = divmod(int(round(s / 60)), 60)
    return f"{h} h {m:02d} min"


def join_and(items: Sequence[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    items = list(items)
    return (", ".join(items[:-1]) + " and " + items[-1]) if len(items) > 1 else (items[0] if items else "")


def noun(n: int, word: str, many: str | None = None) -> str:
    """``word`` in the form for ``n`` of it, without the number: ``noun(1, "signal")`` is ``signal``,
    ``noun(2, "signal")`` ``signals`` (``many``: an irregular plural, or a verb: ``noun(n, "is", "are")``)."""
    return word if n == 1 else (many or word + "s")


def plural(n: int, word: str, many: str | None = None) -> str:
    """``n`` and ``word`` in the number's form: ``1 library warning``, ``3 library warnings``, ``2 texts``
    (``many``: an irregular plural, e.g. ``plural(n, "index", "indexes")``); thousands separated."""
    return f"{n:,} {noun(n, word, many)}"
