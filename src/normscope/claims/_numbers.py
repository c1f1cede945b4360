"""How the verdict rules write a number in a sentence, and when a number or a CI counts as one."""

from __future__ import annotations

import math
import numbers

__all__ = ["fmt_value"]


def _finite(x) -> bool:
    """A finite real number: Python's or numpy's (``np.float32`` included: a typed result's values are not always
    Python floats, as JSON read back's are), never a bool."""
    return isinstance(x, numbers.Real) and not isinstance(x, bool) and math.isfinite(float(x))


def _ci_ok(ci) -> bool:
    return ci is not None and len(ci) == 2 and all(_finite(c) for c in ci)


def fmt_value(x, *, sign: bool = False) -> str:
    """A number for a sentence: 3 significant digits, scientific below 1e-3, ``n/a`` for None."""
    if not _finite(x):
        return "n/a"
    x = float(x)
    if x != 0 and abs(x) < 1e-3:
        return f"{x:+.2e}" if sign else f"{x:.2e}"
    return f"{x:+.3g}" if sign else f"{x:.3g}"
