"""The building blocks of the report's "what this says" sentences (each stage writes its own from them).

No sentence is canned: each one is chosen by the sign of the measured statistic and by whether its
95% confidence interval excludes 0 (or, for the lab, whether the measured error passes the
theorem's gate). When a number is missing the sentence says so instead of guessing.
"""

from __future__ import annotations

from normscope._format import finite, num
from normscope.probes.result import GradError
from normscope.report.summary import ReportInfo, SectionEntry
from normscope.values import Correlation, Interval, NormError

__all__ = ["strength", "ci_excludes_zero", "ci_words", "corr_parts", "correlation_sentence", "precision_errors",
           "precision_sentence"]


def strength(rho: float) -> str:
    """Conventional size word for |rho| (Cohen 1988): <0.1 negligible, <0.3 weak, <0.5 moderate, else strong."""
    a = abs(rho)
    if a < 0.1:
        return "negligible"
    if a < 0.3:
        return "weak"
    if a < 0.5:
        return "moderate"
    return "strong"


def ci_excludes_zero(ci) -> bool | None:
    """True if the interval ``[lo, hi]`` excludes 0, False if it contains 0, None if unknown."""
    if ci is None or not isinstance(ci, (list, tuple, Interval)) or len(ci) != 2:
        return None
    lo, hi = finite(ci[0]), finite(ci[1])
    if lo is None or hi is None:
        return None
    return lo > 0 or hi < 0


def ci_words(ci) -> str:
    """``95% CI 0.120 to 0.340``, or ``no CI`` without both ends."""
    if ci_excludes_zero(ci) is None:
        return "no CI"
    return f"95% CI {num(ci[0])} to {num(ci[1])}"


def corr_parts(c) -> tuple:
    """``(rho, ci, method)`` of a correlation, Spearman preferred: a probe correlation
    (:class:`~normscope.probes.ProbeCorrelation`: ``spearman`` and ``ci.spearman``), a correlate result
    (``spearman`` and ``spearman_ci``, as an object or its JSON), or None (``(None, None, ...)``)."""
    if c is None:
        return None, None, "Spearman \u03c1"
    if isinstance(c, dict):  # a correlate result's JSON
        c = Correlation.from_json(c)
    ci = c.ci.spearman if getattr(c, "ci", None) is not None else getattr(c, "spearman_ci", None)
    return c.spearman, (list(ci) if ci is not None else None), "Spearman \u03c1"


def correlation_sentence(
    x: str,
    y: str,
    rho,
    ci,
    n=None,
    *,
    method: str = "Spearman \u03c1",
    relation: str = "monotone relation",
) -> str:
    """One sentence about a correlation, chosen by its sign and whether its CI excludes 0.

    Parameters
    ----------
    x, y : str
        What is correlated ("the raw norm", "Zipf frequency").
    rho : float
        The estimate.
    ci : [lo, hi] or None
        Its 95% confidence interval.
    n : int, optional
        Sample size.

    Returns
    -------
    str
        - CI excludes 0: "<x> rises/falls with <y> (<strength>): rho = ..., 95% CI ..., n = ...; the CI excludes 0."
          The direction is the side of 0 the CI lies on; a point estimate on the other side is said.
        - CI contains 0: "For <x> and <y> the CI includes 0: no evidence of a <relation> (...)."
        - no CI: the estimate only, with "no CI, so no claim about its sign".
    """
    r = finite(rho)
    stats = f"{method} = {num(r)}, {ci_words(ci)}" + (f", n = {num(int(n))}" if n is not None else "")
    if r is None:
        return f"The {relation} between {x} and {y} could not be estimated ({stats})."
    ex = ci_excludes_zero(ci)
    if ex is None:
        return f"{x[0].upper() + x[1:]} vs {y}: {stats}; no CI, so no claim about its sign."
    if not ex:
        return f"For {x} and {y} the CI includes 0: no evidence of a {relation} ({stats})."
    up = finite(ci[0]) > 0
    direction = "rises" if up else "falls"
    if (r > 0) != up:
        return (f"{x[0].upper() + x[1:]} {direction} with {y} by its CI, which excludes 0 ({stats}), while the point "
                "estimate lies on the other side of 0: read the sign from the CI, the size as uncertain.")
    return f"{x[0].upper() + x[1:]} {direction} with {y} ({strength(r)}; {stats}); the CI excludes 0."


def precision_errors(summary: dict, sections: dict[str, str]) -> list[tuple[str, NormError | GradError]]:
    """What a reduced precision cost, as each section measured it: ``(label, error)`` rows, in page order.

    Parameters
    ----------
    summary : dict
        summary.json content (section key -> :class:`~normscope.report.summary.SectionEntry` JSON).
    sections : dict
        Section key -> title (``normscope.report.stages.SECTIONS``), in page order; labels are the titles'
        part before ":", plus the result's sub-key where a section holds several runs (e.g. one per signal).

    Returns
    -------
    list of (str, NormError or GradError)
        :class:`~normscope.values.NormError`: a ``norm_rel_error_vs_fp32`` (``median``, ``max``: relative norm
        error, dimensionless, against the same model in fp32 on ``n_sample`` seeded items);
        :class:`~normscope.probes.result.GradError`: a ``grad_error_vs_fp32`` (the probe's pair gradient:
        ``rel_error``, ``cosine``). Entries without a finite ``median`` / ``rel_error`` are skipped; empty in fp32.
    """
    rows: list[tuple[str, NormError | GradError]] = []

    def walk(obj, label: str) -> None:
        for k, v in (obj.items() if isinstance(obj, dict) else ()):
            if k == "norm_rel_error_vs_fp32" and isinstance(v, dict):
                err = NormError.from_json(v)
                if finite(err.median) is not None:
                    rows.append((label, err))
            elif k == "grad_error_vs_fp32" and isinstance(v, dict):
                grad = GradError.from_json(v)
                if finite(grad.rel_error) is not None:
                    rows.append((label, grad))
            else:
                walk(v, label if k in ("result", "derived") else f"{label} ({k})")

    for key, title in sections.items():
        if isinstance(summary.get(key), dict):
            walk(SectionEntry.from_json(summary[key]).result, title.split(":")[0])
    return rows


def precision_sentence(summary: dict, sections: dict[str, str]) -> str | None:
    """One sentence saying a report ran below fp32 and what that cost, from :func:`precision_errors`.

    Parameters
    ----------
    summary, sections : dict
        As for :func:`precision_errors`; the precision is ``summary["report"]["precision"]``.

    Returns
    -------
    str or None
        None in fp32 (or when the report names no precision). Otherwise the precision, that the verdicts read
        its numbers, and each section's median / max relative norm error against fp32 on its seeded sample
        and the probe's pair-gradient relative error and cosine, as summary.json holds them (so the page and
        the console say the same).
    """
    precision = ReportInfo.from_json(summary.get("report") or {}).precision or "fp32"
    if precision == "fp32":
        return None
    parts = []
    for label, err in precision_errors(summary, sections):
        if isinstance(err, NormError):
            parts.append(f"{label} {err.median:.1e} / {err.max:.1e} ({err.n_sample} items)")
        else:
            parts.append(f"{label}: pair gradient relative error {err.rel_error:.1e}, cosine {err.cosine:.5f}")
    cost = "; ".join(parts) if parts else "no section measured it"
    return (f"Precision {precision}: the stages' embeddings and the probe's pair gradients ran under torch.autocast "
            f"in {precision}, and every verdict reads those numbers. Relative norm error against fp32, median / max "
            f"on a seeded sample of each run's items: {cost}. Rerun with --precision fp32 for the fp32 figures.")
