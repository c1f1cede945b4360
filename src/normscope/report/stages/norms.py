"""Report stage ``norms``: the distribution of raw norms (``normscope embed``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from normscope._format import count, fixed, num
from normscope._io import to_jsonable
from normscope.encoders.embed import embed_input
from normscope.encoders.summary import EmbedSummary
from normscope.report.figures import plot_norm_distribution
from normscope.report.stage import Command, KeyNumber, Section, Stage, Table, Figure
from normscope.requests import Precision, Request, Runtime, param
from normscope.table import file_sha256

__all__ = ["NormsStage", "NormsRequest", "norm_distribution_sentences"]

SECTION = "norm_distribution"


@dataclasses.dataclass(frozen=True)
class NormsRequest(Request):
    """The norm distribution of ``words`` wordfreq words, or of the items of ``items`` (whose sha256 keys the cache)."""

    model: str
    precision: Precision = "fp32"
    device: str = "cpu"
    words: int = param(5000, min=1)
    items: Path | None = None
    items_sha256: str | None = None
    runtime: Runtime = "auto"

    def to_json(self) -> dict:
        """Every field as strict JSON, ``runtime`` only when not ``"auto"`` (stage keys as before; the model's
        fingerprint in the key records the runtime that ran)."""
        out = super().to_json()
        if out["runtime"] == "auto":
            del out["runtime"]
        return out


def norm_distribution_sentences(result: dict | None, explained_by: Sequence[str] | None = None) -> list[str]:
    """Norm-distribution sentences from ``normscope embed --json``; ``explained_by`` names the stages that
    ran and try to explain the spread ("the training lab"), None when not known."""
    r = EmbedSummary.from_json(result or {})
    if r.norm_mean is None:
        return []
    cv = r.norm_std / r.norm_mean if (r.norm_std is not None and r.norm_mean) else None
    base = (f"Over {num(r.n)} items the raw norm has mean {num(r.norm_mean)} (sd {num(r.norm_std)}, range "
            f"{num(r.norm_min)} to {num(r.norm_max)}).")
    if cv is not None and cv < 1e-3:
        return [base + " The norms are constant: this model normalises its outputs, so the norm carries no "
                "per-item information" + (" and the norm analyses below are void for it." if explained_by else ".")]
    if abs(r.norm_mean - 1.0) < 1e-3:
        return [base + " The vectors are unit length on average; their spread still varies per item."]
    tail = f" The model's raw vectors are not unit length; their spread (coefficient of variation {num(cv)})"
    names = list(explained_by or [])
    if names:
        what = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
        tail += f" is what {what} below {'tries' if len(names) == 1 else 'try'} to explain."
    else:
        tail += " is not explained by this run (the sections that try to explain it did not run)."
    return [base + tail]


class NormsStage(Stage[NormsRequest]):
    """The distribution of raw norms over the top wordfreq words (or ``--items``)."""

    name = "norms"
    sections = {SECTION: "Norm distribution"}
    aliases = ("embed",)
    size_names = ("words",)
    uses_data = False

    def request(self, config) -> NormsRequest:
        items = config.items
        return NormsRequest(model=config.model, precision=config.precision, device=config.device, runtime=config.runtime,
                            words=config.sizes.words, items=items,
                            items_sha256=file_sha256(items) if items is not None else None)

    def commands(self, request: NormsRequest) -> list[Command]:
        what = [str(request.items)] if request.items is not None else [f"wordfreq:{request.words}"]
        stem = "items" if request.items is not None else "words"
        argv = ["normscope", "embed", *what, "--model", request.model, "--precision", request.precision]
        if request.device != "cpu":
            argv += ["--device", request.device]
        if request.runtime != "auto":
            argv += ["--runtime", request.runtime]
        return [Command(tuple(argv + ["-o", f"{stem}.parquet", "--json", f"{stem}.json"]))]

    def run(self, ctx, request: NormsRequest) -> dict[str, Section]:
        ctx.encoder()  # loaded once (load_encoder is memoised: embed_input reuses it)
        if request.items is not None:
            result, table = embed_input(request.items, model=request.model, device=request.device, progress=True,
                                        precision=request.precision, runtime=request.runtime)
            source = f"items of {request.items.name}"
            sizes = f"{count(len(table))} items from {request.items.name}"
        else:
            result, table = embed_input(wordfreq_top=request.words, model=request.model, device=request.device,
                                        progress=True, precision=request.precision, runtime=request.runtime)
            source = f"top-{count(len(table))} wordfreq words"
            sizes = f"top {count(len(table))} alphabetic English words of wordfreq (most frequent first)"
        result = to_jsonable(result)
        r = table.norms.astype(np.float64)
        quant = {f"p{q}": float(np.percentile(r, q)) for q in (5, 25, 50, 75, 95)}
        order = np.argsort(r, kind="stable")
        k = min(10, len(r))
        lowest = [{"text": table.texts[i], "norm": float(r[i])} for i in order[:k]]
        highest = [{"text": table.texts[i], "norm": float(r[i])} for i in order[::-1][:k]]
        derived = {"quantiles": quant, "cv": float(r.std(ddof=1) / r.mean()) if len(r) > 1 else float("nan"),
                   "lowest": lowest, "highest": highest, "source": source}
        fig = plot_norm_distribution(r, ctx.figure_path("norm_distribution.png"), model=request.model, source=source)
        key_numbers = [
            KeyNumber("n", "items embedded n", result["n"]),
            KeyNumber("norm_mean", "mean norm", result["norm_mean"], "||z||"),
            KeyNumber("norm_std", "sd of norm", result["norm_std"], "||z||"),
            KeyNumber("norm_min,norm_max", "min / max",
                      f"{fixed(result['norm_min'], '.3f')} / {fixed(result['norm_max'], '.3f')}", "||z||"),
            KeyNumber("derived.quantiles", "5% / 50% / 95% quantile",
                      " / ".join(fixed(quant[q], ".3f") for q in ("p5", "p50", "p95")), "||z||"),
            KeyNumber("derived.cv", "coefficient of variation", derived["cv"]),
        ]
        rows = [[lo["text"], lo["norm"], hi["text"], hi["norm"]] for lo, hi in zip(lowest, highest)]
        return {SECTION: Section(
            SECTION, commands=self.commands(request), sizes=sizes, result=result, derived=derived,
            key_numbers=key_numbers,
            tables=[Table(f"The {k} lowest- and highest-norm items",
                          ["lowest-norm item", "||z||", "highest-norm item", "||z||"], rows)],
            figures=[Figure(fig.name, f"Histogram of raw norms ||z|| of the {source}.")])}

    def sentences(self, section: Section, *, explained_by: Sequence[str] = ()) -> list[str]:
        return norm_distribution_sentences(section.result, explained_by=list(explained_by))

    def headline(self, section: Section) -> str:
        r = EmbedSummary.from_json(section.result or {})
        return (f"n = {num(r.n)}: mean ||z|| {num(r.norm_mean)}, sd {num(r.norm_std)}, "
                f"range {num(r.norm_min)} to {num(r.norm_max)}")

    def sizes_used(self, sizes, request: NormsRequest, sections) -> dict[str, int]:
        if request.items is None:
            return {"words": request.words}
        n = EmbedSummary.from_json(sections[SECTION].result or {}).n if sections[SECTION].ok else None
        return {"items": n} if isinstance(n, int) else {}
