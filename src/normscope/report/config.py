"""Settings of ``normscope report``: stages, page sections, sizes, the run configuration."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

from normscope.encoders import DEFAULT_MODEL
from normscope.errors import InputError

__all__ = [
    "STAGES",
    "SECTIONS",
    "STAGE_SECTIONS",
    "Sizes",
    "SIZE_STAGES",
    "sizes_of_stages",
    "sizes_used",
    "MODEL_STAGES",
    "QUICK",
    "FULL",
    "ReportConfig",
    "parse_stages",
]

#: Stage names, in run order (``--only`` takes a comma-separated subset).
STAGES: tuple[str, ...] = ("setup", "norms", "tokens", "probes", "lab", "transformer", "signals", "similarity",
                           "retrieval")

#: Stages that run the report's model: their cache key holds the model's fingerprint. The training
#: lab trains its own small encoder and does not depend on ``--model``.
MODEL_STAGES: tuple[str, ...] = ("setup", "norms", "tokens", "probes", "transformer", "signals", "similarity",
                                 "retrieval")

#: Page sections (= top-level keys of summary.json), in page order, with their headings.
SECTIONS: dict[str, str] = {
    "setup": "Model and set-up",
    "norm_distribution": "Norm distribution",
    "token_table": "Input embedding table: used and never-used rows",
    "equilibrium_theory": "Equilibrium theory: predicted vs observed norm",
    "training_lab": "Training-lab check of the theorem",
    "transformer_lab": "Theorem 1 on a real transformer",
    "semantic_signals": "Semantic signals",
    "similarity": "Norm-aware similarity",
    "retrieval": "Norm-aware retrieval",
    "calibration": "Calibration: the norm as a confidence signal",
}

#: Which sections each stage fills.
STAGE_SECTIONS: dict[str, tuple[str, ...]] = {
    "setup": ("setup",),
    "norms": ("norm_distribution",),
    "tokens": ("token_table",),
    "probes": ("equilibrium_theory",),
    "lab": ("training_lab",),
    "transformer": ("transformer_lab",),
    "signals": ("semantic_signals",),
    "similarity": ("similarity",),
    "retrieval": ("retrieval", "calibration"),
}

@dataclasses.dataclass(frozen=True)
class Sizes:
    """Subset sizes of every stage (stated on the page). ``None`` means the stage command's default.

    Attributes
    ----------
    words : int
        Norm distribution: top-N alphabetic English words of wordfreq.
    probe_items, probe_batches, probe_batch_size : int or None
        Probes: P probe inputs, K virtual SGD batches of B pairs each (None B: the probe's default,
        64). The full default P = 500, K = 16 is the smallest design whose headline signs are
        stable on MiniLM by the criterion of docs/probe.md.
    lab_steps, lab_snapshots, lab_probe_batches : int or None
        Training lab (free table, SGD): training steps, snapshot states S, virtual batches K per state.
    transformer_design : str
        Transformer lab: the size of the decisive design (:data:`normscope.lab.DESIGNS`: ``report``
        about a minute of CPU, ``quick``, ``full`` about an hour on 2 cores); the page also shows the
        stored full design's result.
    signal_items : int or None
        Semantic signals: items per signal (None: ``normscope correlate``'s defaults: frequency 5,000,
        specificity 2,000, concreteness 5,000, uncertainty all 3,113 ChaosNLI pairs).
    retrieval_docs, retrieval_queries : int or None
        Retrieval: corpus subset (relevant documents always kept) and test-query subset (None: all).
    n_boot, n_perm : int
        Bootstrap resamples of every confidence interval (norm-aware similarity: of the SimLex-999
        pairs); permutations of every p-value.
    """

    words: int = 5000
    # probes: the smallest (P, K) whose headline signs are stable on MiniLM (criterion in docs/probe.md)
    probe_items: int | None = 500
    probe_batches: int | None = 16
    probe_batch_size: int | None = None
    lab_steps: int | None = None
    lab_snapshots: int | None = None
    lab_probe_batches: int | None = None
    transformer_design: str = "report"
    signal_items: int | None = None
    retrieval_docs: int | None = None
    retrieval_queries: int | None = None
    n_boot: int = 2000
    n_perm: int = 2000

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


#: The stages each size applies to (the page lists only the sizes of stages that ran).
SIZE_STAGES: dict[str, tuple[str, ...]] = {
    "words": ("norms",),
    "probe_items": ("probes",),
    "probe_batches": ("probes",),
    "probe_batch_size": ("probes",),
    "lab_steps": ("lab",),
    "lab_snapshots": ("lab",),
    "lab_probe_batches": ("lab",),
    "transformer_design": ("transformer",),
    "signal_items": ("signals",),
    "retrieval_docs": ("retrieval",),
    "retrieval_queries": ("retrieval",),
    "n_boot": ("tokens", "signals", "similarity", "retrieval"),
    "n_perm": ("tokens", "signals"),
}


def sizes_of_stages(sizes: dict | None, stages: Sequence[str]) -> dict:
    """The entries of ``sizes`` (:meth:`Sizes.to_dict` or :func:`sizes_used`) that apply to at least one of ``stages``.

    A dotted key (``signal_items.frequency``) applies where its prefix does; ``items`` (the norm
    distribution of ``--items``) to ``norms``.
    """
    run = set(stages)
    where = dict(SIZE_STAGES, items=("norms",))
    return {k: v for k, v in (sizes or {}).items() if run & set(where.get(k.split(".")[0], (k,)))}


#: Where each size is read in the record of the stage that used it: (stage, section, result path).
_USED_AT: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "probe_items": ("probes", "equilibrium_theory", ("n_items",)),
    "probe_batches": ("probes", "equilibrium_theory", ("batches",)),
    "probe_batch_size": ("probes", "equilibrium_theory", ("batch_size",)),
    "lab_steps": ("lab", "training_lab", ("steps",)),
    "lab_snapshots": ("lab", "training_lab", ("snapshots",)),
    "lab_probe_batches": ("lab", "training_lab", ("probe_batches",)),
    "retrieval_docs": ("retrieval", "retrieval", ("n_docs",)),
    "retrieval_queries": ("retrieval", "retrieval", ("n_queries", "eval")),
}


def sizes_used(config: "ReportConfig", records: dict[str, dict]) -> dict:
    """The sizes the stages that ran actually used: numbers, never None ("stage default").

    A size left to the stage command's default (None in :class:`Sizes`) is read from the stage's
    result (e.g. the lab's ``steps``, retrieval's ``n_docs``); ``signal_items`` becomes one
    ``signal_items.<signal>`` entry per signal that ran (its ``n_items``); with ``--items`` the
    norm distribution's size is ``items`` (items embedded) instead of ``words``. Sizes of stages
    that did not run, or whose result lacks the number (a failed stage), are left out.

    Parameters
    ----------
    config : ReportConfig
    records : dict
        Stage name -> stage record (:func:`normscope.report.runner.run_report`).

    Returns
    -------
    dict
        Size name -> int, in :class:`Sizes` order.
    """
    def result(stage: str, section: str) -> dict:
        rec = records.get(stage) or {}
        sec = (rec.get("sections") or {}).get(section) or {}
        return sec.get("result") if rec.get("status") == "ok" and isinstance(sec.get("result"), dict) else {}

    ran = {st for st, rec in records.items() if rec.get("status") not in (None, "not_run")}
    used: dict = {}
    for name, value in config.sizes.to_dict().items():
        if not ran & set(SIZE_STAGES[name]):
            continue
        if name == "words" and config.items is not None:
            n = result("norms", "norm_distribution").get("n")
            if isinstance(n, int):
                used["items"] = n
            continue
        if name == "signal_items":
            for sig, r in result("signals", "semantic_signals").items():
                if isinstance(r, dict) and isinstance(r.get("n_items"), int):
                    used[f"signal_items.{sig}"] = r["n_items"]
            continue
        if name in _USED_AT:
            stage, section, path = _USED_AT[name]
            got = result(stage, section)
            for part in path:
                got = got.get(part) if isinstance(got, dict) else None
            if isinstance(got, int) and not isinstance(got, bool):
                value = got
        if value is not None:
            used[name] = value
    return used


#: Default sizes of ``normscope report`` (and ``make run``).
FULL = Sizes()
#: ``--quick``: whole run under 5 minutes on 2 CPU cores.
QUICK = Sizes(
    words=2000,
    probe_items=100,  # below the sign-stable sizes (docs/probe.md): the page says so
    probe_batches=4,
    probe_batch_size=None,
    lab_steps=None,
    lab_snapshots=None,
    lab_probe_batches=None,
    transformer_design="quick",
    signal_items=800,
    retrieval_docs=600,
    retrieval_queries=100,
    n_boot=500,
    n_perm=500,
)


@dataclasses.dataclass
class ReportConfig:
    """Settings of one report run.

    Attributes
    ----------
    out : Path
        Output directory (created; must have an existing parent).
    model : str
        Model name or path (default: the bundled all-MiniLM-L6-v2).
    quick : bool
        Use :data:`QUICK` sizes instead of :data:`FULL` (ignored when ``sizes`` is given).
    data : Path or None
        Shared-data directory (default: :func:`normscope.datasets.shared_data_dir`).
    seed : int
        Seed of every stochastic stage.
    device : str
        Torch device.
    only : tuple of str
        Stages to run (subset of :data:`STAGES`); the others are shown as "not run".
    sizes : Sizes or None
        Explicit sizes (tests use tiny ones).
    items : Path or None
        Norm distribution on the items of this file (one per line, .jsonl, .csv) instead of wordfreq.
    force : bool
        Ignore cached stage records.
    signals : tuple of str
        Semantic signals to run (default all four: frequency, specificity, concreteness, uncertainty).
    precision : {"fp32", "bf16"}
        Precision of the model's forward passes in the stages that embed (``--precision``); part
        of the model fingerprint, hence of the stage keys and the embedding cache keys.
    engine : {"local", "ray"}
        Where the retrieval stage embeds its corpus (``--engine``, :mod:`normscope.engine`); the
        other stages embed word lists and claims in this process. Not part of the stage keys: the
        vectors are equal to 1e-6 on either engine.
    address : str or None
        Ray cluster address with ``engine='ray'`` (default: a local cluster).
    """

    out: Path
    model: str = DEFAULT_MODEL
    quick: bool = False
    data: Path | None = None
    seed: int = 0
    device: str = "cpu"
    only: tuple[str, ...] = STAGES
    sizes: Sizes | None = None
    items: Path | None = None
    force: bool = False
    signals: tuple[str, ...] = ("frequency", "specificity", "concreteness", "uncertainty")
    precision: str = "fp32"
    engine: str = "local"
    address: str | None = None

    def __post_init__(self) -> None:
        from normscope.engine import check_engine
        from normscope.table import PRECISIONS
        from normscope.validate import check_choice

        check_choice("precision", self.precision, PRECISIONS)
        check_engine(self.engine, self.address)
        allowed = ("frequency", "specificity", "concreteness", "uncertainty")
        self.signals = tuple(self.signals)
        bad = [x for x in self.signals if x not in allowed]
        if bad or not self.signals:
            raise InputError(f"unknown signal {bad[0] if bad else '(none)'!r} (choose from {', '.join(allowed)})")
        self.out = Path(self.out)
        if self.sizes is None:
            self.sizes = QUICK if self.quick else FULL
        self.only = tuple(parse_stages(self.only))
        if self.data is not None:
            self.data = Path(self.data)
            if not self.data.is_dir():
                raise InputError(f"--data directory does not exist: {self.data}")
        if self.items is not None:
            self.items = Path(self.items)
            if not self.items.is_file():
                raise InputError(f"--items file does not exist: {self.items}")

    @property
    def preset(self) -> str:
        if self.sizes == QUICK:
            return "quick"
        if self.sizes == FULL:
            return "full"
        return "custom"


def parse_stages(spec: str | Sequence[str]) -> list[str]:
    """Parse ``--only`` (``"norms,lab"``) into stage names in run order.

    Raises
    ------
    InputError
        On an unknown stage name (the valid names are listed).
    """
    if not isinstance(spec, str):
        spec = ",".join(spec)
    names = [s.strip() for s in spec.split(",") if s.strip()]
    aliases = {s: s for s in STAGES}
    for stage, sections in STAGE_SECTIONS.items():
        for sec in sections:
            aliases.setdefault(sec, stage)
    aliases.update({"signal": "signals", "probe": "probes", "embed": "norms", "calibration": "retrieval"})
    bad = [n for n in names if n not in aliases]
    if bad:
        raise InputError(f"unknown stage {bad[0]!r} (choose from {', '.join(STAGES)})")
    if not names:
        raise InputError("--only names no stage")
    chosen = {aliases[n] for n in names}
    return [s for s in STAGES if s in chosen]

