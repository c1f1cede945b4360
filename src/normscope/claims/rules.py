"""The verdict rules, written once: the direction (:func:`direction_verdict`, :func:`permutation_direction`), the
size (:func:`size_verdict`), the headline (:func:`headline`), the shared gates (:class:`Gate`,
:func:`degenerate_gate`, :func:`ceiling_gate`) and :func:`judge`, which applies them to one claim's numbers and
returns a :class:`Judgement`."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from normscope.claims._numbers import _ci_ok, _finite, fmt_value
from normscope.claims.registry import CLAIMS, VERDICTS, Claim, Size

__all__ = ["Gate", "Judgement", "ceiling_gate", "direction_verdict", "permutation_direction", "size_verdict",
           "headline", "judge", "degenerate_gate"]


@dataclasses.dataclass(frozen=True)
class Gate:
    """A validity or power condition a row must meet before its verdict counts.

    Attributes
    ----------
    passed : bool
    reason : str
        Why the design cannot decide (shown as the row's reason when not passed).
    needs : str
        What would decide it (a size, a longer run, a command).
    verdict : str
        ``"not decided at this size"`` (the default) or ``"not testable here"``.
    """

    passed: bool
    reason: str = ""
    needs: str = ""
    verdict: str = "not decided at this size"


@dataclasses.dataclass(frozen=True)
class Judgement:
    """The verdicts of one claim's numbers (:func:`judge`), before they become a :class:`~normscope.claims.ClaimRow`.

    Attributes
    ----------
    verdict : str
        The headline, one of :data:`~normscope.claims.VERDICTS`.
    direction : str
        One of :data:`~normscope.claims.DIRECTION_VERDICTS`.
    size : str
        One of :data:`~normscope.claims.SIZE_VERDICTS`.
    reason : str
        The one-line reason the row shows.
    why : str
        The full reasoning (both verdicts, the gate, the size's basis).

    Raises
    ------
    ValueError
        A verdict outside :data:`~normscope.claims.VERDICTS`.

    Notes
    -----
    ``judgement["verdict"]`` and ``dict(judgement)`` read it as the dict :func:`judge` returned before it was
    typed (for callers written against that dict); new code reads attributes and derives with :meth:`but`.
    """

    verdict: str
    direction: str
    size: str
    reason: str
    why: str

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"unknown verdict {self.verdict!r}")

    @classmethod
    def of(cls, judged: "Judgement | Mapping") -> "Judgement":
        """A judgement from itself or from the dict form (``verdict``, ``direction``, ``size``, ``reason``, ``why``).

        Raises
        ------
        ValueError
            A verdict outside :data:`~normscope.claims.VERDICTS`.
        """
        if isinstance(judged, cls):
            return judged
        return cls(*(str(judged.get(k) or "") for k in _JUDGEMENT_KEYS))

    def but(self, **changes: str) -> "Judgement":
        """This judgement with some parts replaced (e.g. ``j.but(reason=...)``)."""
        return dataclasses.replace(self, **changes)

    def keys(self) -> tuple[str, ...]:
        return _JUDGEMENT_KEYS

    def __getitem__(self, k: str) -> str:
        if k not in _JUDGEMENT_KEYS:
            raise KeyError(k)
        return getattr(self, k)


_JUDGEMENT_KEYS = ("verdict", "direction", "size", "reason", "why")


def ceiling_gate(mean, n_ceiling: int, n_floor: int, n: int, *, claimed_gain: float | None = None,
                 baseline: str = "cosine", metric: str = "nDCG@10", unit: str = "queries", low: float = 0.0,
                 high: float = 1.0) -> Gate:
    """Whether a gain over ``baseline`` is possible at all: a ceiling / floor gate for the gain claims.

    A metric bounded by ``[low, high]`` (nDCG@10, a correlation) leaves no room for a gain where the baseline is
    already at ``high``: a scorer can only tie or lose there, so a CI below the claimed size says nothing about
    the claim. The relative gain ``mean(scorer) / mean(baseline) - 1`` is at most ``high / mean - 1``; when that
    largest possible gain is below the claimed one, or the baseline is at the ceiling on every unit, the claim is
    ``not testable here``. A baseline at ``low`` on every unit leaves the relative gain undefined: also
    ``not testable here``. Used by the retrieval and similarity gain rows (:mod:`normscope.retrieval.claims`,
    :mod:`normscope.similarity.claims`).

    Parameters
    ----------
    mean : float
        The baseline's mean of ``metric`` over the evaluated units.
    n_ceiling, n_floor : int
        Units on which the baseline scores ``high`` / ``low``.
    n : int
        Evaluated units; 1 for a statistic of the whole set (a Spearman rho over all pairs: ``mean`` is it).
    claimed_gain : float, optional
        The smallest relative gain the claim states (a fraction: 0.012 for +1.2 %); None: only the all-at-the-
        ceiling / all-at-the-floor cases fail.
    baseline, metric, unit : str
        Words of the reason.
    low, high : float
        The metric's bounds.

    Returns
    -------
    Gate
        ``verdict`` ``"not testable here"``; ``reason`` (the row's reason beside that verdict) e.g. ``"cosine is at
        the ceiling on 40 of 40 queries (nDCG@10 = 1): no gain is possible"``.
    """
    m = float(mean) if _finite(mean) else None
    if n == 1 and m is not None:  # one statistic over the whole set (a correlation), not a mean over units
        where = f"{baseline}'s {metric} is {fmt_value(m)} (at most {high:g})"
    else:
        where = f"{baseline} is at the ceiling on {n_ceiling} of {n} {unit} ({metric} = {high:g})"
    needs = f"a harder dataset, where {baseline} leaves room below {metric} = {high:g}"
    if n <= 0 or m is None:
        return Gate(False, f"no {unit} with a {metric} of {baseline}", needs,
                    "not testable here")
    if n_ceiling >= n:
        return Gate(False, f"{where}: no gain is possible", needs, "not testable here")
    if n_floor >= n or m <= low:
        floor = (f"{baseline}'s {metric} is {fmt_value(m)}" if n == 1 else
                 f"{baseline} is at the floor on {n_floor} of {n} {unit} ({metric} = {low:g})")
        return Gate(False, f"{floor}: the relative gain over it is undefined", f"a dataset on which {baseline} "
                    f"scores above {low:g}", "not testable here")
    best = high / m - 1 if low == 0 else None
    if claimed_gain is not None and best is not None and best < claimed_gain:
        return Gate(False, f"{where}: the largest possible gain, {100 * best:+.2f} %, is below "
                           f"the claimed {100 * claimed_gain:+.2f} %", needs, "not testable here")
    return Gate(True, f"{where}; the largest possible gain is {100 * best:+.2f} %" if best is not None else where)


def _ci_text(ci, size: Size | None = None) -> str:
    f = size.fmt if size is not None and size.percent else fmt_value
    return f"[{f(ci[0])}, {f(ci[1])}]"


def direction_verdict(estimate, ci: Sequence[float] | None, sign: int | None, *, p: float | None = None
                      ) -> tuple[str, str]:
    """Verdict on the claimed direction from an estimate and its 95 % CI.

    Parameters
    ----------
    estimate : float or None
    ci : (low, high) or None
    sign : {+1, -1, 0} or None
        Claimed direction; 0: an association without a direction (either side reproduces it);
        None: no direction claimed.
    p : float, optional
        p-value of a test of the same effect given beside the CI (e.g. a paired t-test): a CI that
        excludes 0 while ``p >= 0.05`` is ``inconclusive`` (the two disagree).

    Returns
    -------
    (verdict, why) : tuple of str
        ``verdict`` in :data:`DIRECTION_VERDICTS`.
    """
    if sign is None:
        return "no direction claimed", "the claim states no direction"
    if not _finite(estimate) or not _ci_ok(ci):
        return "not tested", "no estimate with a 95% CI"
    lo, hi = float(ci[0]), float(ci[1])
    txt = f"the 95% CI [{fmt_value(lo)}, {fmt_value(hi)}]"
    excluded = lo > 0 or hi < 0
    if excluded and _finite(p) and p >= 0.05:
        return "inconclusive", f"{txt} excludes 0, but the paired test does not reject equality (p = {p:.3g} >= 0.05)"
    if not excluded:
        return "inconclusive", f"{txt} includes 0"
    if sign == 0:
        return "reproduced", f"{txt} excludes 0 (the claim names no direction)"
    side = "positive" if sign > 0 else "negative"
    if (sign > 0) == (lo > 0):
        return "reproduced", f"{txt} excludes 0 on the claimed ({side}) side"
    return "refuted", f"{txt} excludes 0 on the side opposite to the claimed {side} sign"


def permutation_direction(p_below: float | None, p_above: float | None, n_perm: int, what: str,
                          alpha: float = 0.05) -> tuple[str, str]:
    """Direction verdict from a one-sided permutation test in each direction.

    ``reproduced`` when the observed statistic lies below the permutation null (``p_below <
    alpha``: closer to the claim than chance), ``refuted`` when it lies above it, ``inconclusive``
    otherwise.

    Parameters
    ----------
    p_below, p_above : float or None
        ``(1 + #{T* <= T}) / (n_perm + 1)`` and ``(1 + #{T* >= T}) / (n_perm + 1)``.
    n_perm : int
    what : str
        The statistic, for the sentence.
    alpha : float
    """
    from normscope.stats import p_text  # deferred: normscope.stats imports scipy, and this module loads at start-up

    if not _finite(p_below) or not _finite(p_above):
        return "not tested", "no permutation test"
    if p_below < alpha:
        return "reproduced", f"{what} is below its permutation null ({p_text(p_below, n_perm)}, one-sided)"
    if p_above < alpha:
        return "refuted", f"{what} is above its permutation null ({p_text(p_above, n_perm)}, one-sided)"
    return "inconclusive", (f"{what} is not distinguishable from its permutation null ({p_text(p_below, n_perm)} "
                            "below, one-sided)")


def size_verdict(ci: Sequence[float] | None, size: Size, sign: int | None = None) -> tuple[str, str]:
    """Verdict on the claimed size from a 95 % CI.

    Range and point claims: ``consistent`` when the CI meets ``[low, high]``; ``smaller`` when it
    lies wholly on the zero side of the range, ``larger`` when wholly beyond it (along the claimed
    sign; a range of negative values is read in magnitude). Bounds: ``at_most b`` is
    ``consistent`` when ``hi <= b`` and ``larger`` when ``lo > b``; ``at_least b`` is
    ``consistent`` when ``lo >= b`` and ``smaller`` when ``hi < b``; ``undetermined`` between.

    Returns
    -------
    (verdict, why) : tuple of str
        ``verdict`` in :data:`SIZE_VERDICTS`.
    """
    if size.kind == "none":
        return "no size claimed", "the claim states no size"
    if not _ci_ok(ci):
        return "undetermined", "no 95% CI to compare with the claimed size"
    lo, hi = float(ci[0]), float(ci[1])
    txt = f"the 95% CI {_ci_text((lo, hi), size)}"
    claimed = _claimed(size)
    if size.kind == "at_most":
        if hi <= size.high:
            return "consistent", f"{txt} lies wholly below {claimed}"
        if lo > size.high:
            return "larger", f"{txt} lies wholly above {claimed}"
        return "undetermined", f"{txt} straddles {claimed}"
    if size.kind == "strong":
        return _strong_verdict(lo, hi, size.low, sign, txt, claimed)
    if size.kind == "at_least":
        if lo >= size.low:
            return "consistent", f"{txt} lies wholly above {claimed}"
        if hi < size.low:
            return "smaller", f"{txt} lies wholly below {claimed}"
        return "undetermined", f"{txt} straddles {claimed}"
    a, b = size.low, size.high
    neg = (sign is not None and sign < 0) or (sign is None and b <= 0)
    if hi < a:
        return ("larger" if neg else "smaller"), f"{txt} lies wholly {'beyond' if neg else 'below'} {claimed}"
    if lo > b:
        return ("smaller" if neg else "larger"), f"{txt} lies wholly {'on the zero side of' if neg else 'above'} {claimed}"
    return "consistent", f"{txt} meets {claimed}"


def _strong_verdict(lo: float, hi: float, m: float, sign: int | None, txt: str, claimed: str) -> tuple[str, str]:
    """Size verdict of a "strong" claim, ``|effect| >= m``: on the claimed side when there is one, else on either."""
    if sign is not None and sign != 0:
        lo, hi = (lo, hi) if sign > 0 else (-hi, -lo)
        if lo >= m:
            return "consistent", f"{txt} lies wholly beyond {claimed} on the claimed side"
        if hi < m:
            return "smaller", f"{txt} lies wholly short of {claimed}"
        return "undetermined", f"{txt} straddles {claimed}"
    if lo >= m or hi <= -m:
        return "consistent", f"{txt} lies wholly beyond \u00b1{fmt_value(m)} ({claimed})"
    if -m < lo and hi < m:
        return "smaller", f"{txt} lies wholly inside \u00b1{fmt_value(m)}, short of {claimed}"
    return "undetermined", f"{txt} straddles \u00b1{fmt_value(m)} ({claimed})"


def _claimed(size: Size) -> str:
    """``the claimed size (+1.2 to +2.3 %)`` / ``the claimed bound (at most 0.001)``."""
    if size.kind == "strong":
        return f"the strong minimum (|\u03c1| \u2265 {fmt_value(size.low)})"
    return f"the claimed {'bound' if size.kind in ('at_most', 'at_least') else 'size'} ({size.text()})"


def _contradicts(size: Size, s: str) -> bool:
    """Whether size verdict ``s`` excludes the claimed size on the side that contradicts the claim."""
    if size.kind == "at_most":
        return s == "larger"
    if size.kind == "at_least":
        return s == "smaller"
    return s == "smaller"


def headline(direction: str, size_v: str, size: Size, *, gate: Gate | None = None,
             conditions_met: bool | None = None) -> str:
    """The headline verdict from the two verdicts by :data:`HEADLINE_RULE`.

    Parameters
    ----------
    direction : str
        From :func:`direction_verdict` (or :func:`permutation_direction`).
    size_v : str
        From :func:`size_verdict`.
    size : Size
        The claimed size (which side of it contradicts the claim).
    gate : Gate, optional
        A design / validity condition; when not passed its verdict is the headline.
    conditions_met : bool, optional
        Further conditions a reproduction needs (e.g. the lab gate's median and Pearson parts):
        False turns ``reproduced`` into ``inconclusive``.

    Returns
    -------
    str
        One of :data:`VERDICTS`.
    """
    if gate is not None and not gate.passed:
        return gate.verdict
    if direction == "refuted" or _contradicts(size, size_v):
        return "refuted"
    if direction == "no direction claimed":  # the size is the only evidence: it must hold
        ok = size_v == "consistent"
    else:  # the direction is the evidence; a claimed size must be shown too (a CI straddling a claimed bound,
        # e.g. |rho| >= 0.3 for "strong", cannot say the claim holds: inconclusive, never reproduced)
        ok = direction == "reproduced" and size_v != "undetermined"
    if ok:
        return "inconclusive" if conditions_met is False else "reproduced"
    return "inconclusive"


def _short(verdict: str, direction: str, size_v: str, claim: Claim, gate: Gate | None,
           conditions_met: bool | None, by_null: bool = False, test_disagrees: bool = False) -> str:
    """The row's one-line reason (about 20 words at most), from the same verdicts; ``by_null``: the direction
    came from a permutation test (:func:`permutation_direction`), not from the CI; ``test_disagrees``: the CI
    excludes 0 but the paired test beside it does not reject (:func:`direction_verdict`)."""
    size = claim.size
    if gate is not None and not gate.passed:
        return gate.reason
    if verdict == "refuted":
        if direction == "refuted":
            return ("the statistic is worse than its permutation null" if by_null
                    else "the CI excludes 0 on the side opposite to the claim")
        if size.kind == "at_most":
            return f"the whole CI lies above {_claimed(size)}"
        if size.kind == "at_least":
            return f"the whole CI lies below {_claimed(size)}"
        if size.kind == "strong":
            return (f"the CI lies wholly inside \u00b1{fmt_value(size.low)}: "
                    + ("the association exists but is not strong" if direction == "reproduced"
                       else f"a null, tight enough to exclude {_claimed(size)}"))
        zero = ("" if direction != "inconclusive" else ", though the paired test does not reject 0"
                if test_disagrees else ", even though it includes 0")
        side = "on the zero side of" if (claim.sign or 0) < 0 else "below"
        return f"the CI lies wholly {side} {_claimed(size)}{zero}"
    if verdict == "reproduced":
        if direction == "no direction claimed":
            side = {"at_most": "below", "at_least": "above", "strong": "beyond"}.get(size.kind, "within")
            return f"the whole CI lies {side} {_claimed(size)}"
        tail = {"consistent": (" and lies beyond the strong minimum" if size.kind == "strong"
                               else " and meets the claimed size"), "larger": ", larger than the claimed size",
                "undetermined": "; its size is undetermined", "no size claimed": ""}.get(size_v, "")
        if by_null:
            return "the statistic beats its permutation null" + tail
        return ("the CI excludes 0" if claim.sign == 0 else "the CI excludes 0 on the claimed side") + tail
    if conditions_met is False and size_v == "consistent":
        return "the CI is within the claimed size but the gate's other conditions fail"
    if direction == "inconclusive":
        return (("the statistic does not beat its permutation null" if by_null else
                 "the CI excludes 0 but the paired test does not reject it" if test_disagrees else "the CI includes 0")
                + (" but meets the claimed size" if by_null and size_v == "consistent" else
                   " and meets the claimed size" if size_v == "consistent" else ""))
    if size_v == "undetermined":
        return f"the CI straddles {_claimed(size)}"
    return "the data cannot decide"


def judge(claim: Claim | str, estimate, ci: Sequence[float] | None, *, p: float | None = None,
          size_ci: Sequence[float] | None = None, direction: tuple[str, str] | None = None,
          gate: Gate | None = None, conditions_met: bool | None = None, adamw: bool = False,
          degenerate: str = "") -> Judgement:
    """Both verdicts and the headline of one claim from its numbers.

    Two shared rules come first (after a failed ``gate``): a CI of zero width (``ci``, or ``size_ci``
    when the claim has a size) is never a decision (:func:`degenerate_gate`: ``not decided at this
    size``), and a size that only the SGD form predicts, on an AdamW checkpoint, is outside the
    claim's scope (``not testable here``).

    Parameters
    ----------
    claim : Claim or str
        The claim or its key in :data:`CLAIMS`.
    estimate : float or None
    ci : (low, high) or None
        95 % CI of ``estimate`` (the direction is read from it).
    p : float, optional
        A paired test's p-value beside the CI (:func:`direction_verdict`).
    size_ci : (low, high), optional
        The CI compared with the claimed size when it is another statistic's (e.g. the raw
        correlation the paper's figure measures); default ``ci``.
    direction : (verdict, why), optional
        A direction verdict computed otherwise (e.g. :func:`permutation_direction`).
    gate : Gate, optional
    conditions_met : bool, optional
        See :func:`headline`.
    adamw : bool
        The checkpoint was trained with AdamW: a size that only the SGD form predicts is
        ``undetermined`` and the row is ``not testable here`` (docs/theory.md C3).
    degenerate : str
        Why a zero-width CI has zero width, when the caller knows (e.g. "the fitted alpha changes no
        ranking in this stratum"); the reason of the row then reads "<degenerate>: the CI has zero width".

    Returns
    -------
    Judgement
        ``verdict``, ``direction``, ``size``, ``reason`` (one line), ``why`` (the full reasoning).
    """
    c = CLAIMS[claim] if isinstance(claim, str) else claim
    d, d_why = direction if direction is not None else direction_verdict(estimate, ci, c.sign, p=p)
    if adamw and c.size_needs_sgd and c.size.kind != "none":
        s, s_why = "undetermined", ("the claimed size comes from the SGD form of Theorem 1, which is not expected to hold "
                                    "quantitatively for an AdamW-trained checkpoint (docs/theory.md C3)")
    else:
        s, s_why = size_verdict(size_ci if size_ci is not None else ci, c.size, c.sign)
    if gate is None or gate.passed:
        flat = degenerate_gate(ci, degenerate) or (degenerate_gate(size_ci, degenerate) if c.size.kind != "none"
                                                   else None)
        if flat is not None:
            gate = flat
        elif adamw and c.size_needs_sgd and c.size.kind != "none":
            gate = Gate(False, "outside the claim's scope: an AdamW checkpoint is outside the SGD form of Theorem 1 "
                               "(docs/theory.md C3)", "an SGD-trained checkpoint", verdict="not testable here")
    v = headline(d, s, c.size, gate=gate, conditions_met=conditions_met)
    why = []
    if gate is not None and not gate.passed:
        head = "not decided" if gate.verdict == "not decided at this size" else gate.verdict
        why.append(f"{head}: {gate.reason}" + (f"; would decide it: {gate.needs}" if gate.needs else ""))
    why.append("direction: none claimed" if d == "no direction claimed" else f"direction {d}: {d_why}")
    why.append("size: none claimed" if s == "no size claimed" else
               f"size {s}: {s_why}" + (f" ({c.size.basis})" if c.size.basis else ""))
    disagrees = (direction is None and d == "inconclusive" and _ci_ok(ci)
                 and (float(ci[0]) > 0 or float(ci[1]) < 0))
    return Judgement(v, d, s, _short(v, d, s, c, gate, conditions_met, by_null=direction is not None,
                                     test_disagrees=disagrees), "; ".join(why))


def degenerate_gate(ci: Sequence[float] | None, reason: str = "") -> Gate | None:
    """The failed gate of a degenerate CI (both ends equal: zero width), else None.

    A CI of zero width means that no resample moved the statistic (e.g. a fitted parameter that changes
    no ranking, so a scorer is compared with itself): it says nothing about sampling error, so it decides
    nothing, whichever side of a claimed size it sits on.

    Parameters
    ----------
    ci : (low, high) or None
    reason : str
        Why it has zero width, when known.

    Returns
    -------
    Gate or None
        ``not decided at this size`` with the reason ``"<reason>: the CI has zero width"``.
    """
    if not _ci_ok(ci) or float(ci[0]) != float(ci[1]):
        return None
    why = reason or f"every resample gave the same value ({fmt_value(ci[0])}), so the run cannot estimate its error"
    return Gate(False, f"{why}: the CI has zero width",
                "a design in which the statistic varies across resamples (more items, or a fitted parameter that "
                "changes the result)")
