"""Helpers shared by the report's stage modules."""

from __future__ import annotations

__all__ = ["fmt_n", "jsonable", "sig3", "ci_text", "refuse_static"]


def fmt_n(n) -> str:
    return f"{int(n):,}"


def jsonable(obj):
    """Exactly what ``--json`` would write (strict JSON values, NaN as None): :func:`normscope._io.to_jsonable`."""
    from normscope._io import to_jsonable

    return to_jsonable(obj)


def sig3(x):
    """A number as a string with 3 significant digits (``None`` stays ``None``)."""
    return None if x is None else format(float(x), ".3g")


def ci_text(ci) -> str:
    from normscope.report.text import fmt

    if not ci or len(ci) != 2:
        return "n/a"
    return f"[{fmt(ci[0])}, {fmt(ci[1])}]"



def refuse_static(ctx) -> None:
    """Raise :class:`~normscope.report.context.StageUnavailable` with the one-line reason when the report's
    model is a static word-vector table (GloVe): the probe and the labs need a network to differentiate."""
    from normscope.encoders.glove import is_static_encoder, static_refusal
    from normscope.report.context import StageUnavailable

    enc = ctx.encoder()
    if is_static_encoder(enc):
        raise StageUnavailable(str(static_refusal(enc)))
