"""The settings of one ``normscope report`` run (:class:`ReportConfig`)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from normscope.encoders import DEFAULT_MODEL
from normscope.engine import check_engine
from normscope.errors import InputError
from normscope.report.sizes import FULL, QUICK, Sizes
from normscope.report.stages import STAGE_NAMES, STAGES, parse_stages
from normscope.requests import ENGINES, PRECISIONS, RUNTIMES
from normscope.signals.labels import LENGTH_DESIGNS, SIGNALS
from normscope.validate import check_choice

__all__ = ["ReportConfig"]


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
        Use :data:`~normscope.report.sizes.QUICK` sizes instead of ``FULL`` (ignored when ``sizes`` is given).
    data : Path or None
        Data folder searched first (default: :func:`normscope.datasets.shared_data_dir`).
    seed : int
        Seed of every stochastic stage.
    device : str
        Torch device.
    only : tuple of str
        Stages to run (names, section keys or aliases; see
        :func:`~normscope.report.stages.parse_stages`); the others keep what an earlier run in the same
        folder wrote, or show as "not run".
    sizes : Sizes or None
        Explicit sizes (tests use tiny ones).
    items : Path or None
        Norm distribution on the items of this file (one per line, .jsonl, .csv) instead of wordfreq.
    force : bool
        Ignore cached stage records.
    signals : tuple of str
        Semantic signals to run (default all four: frequency, specificity, concreteness, uncertainty) and the
        length-matched designs beside them (default all five: treecut, ruletaker, wordnet_chains, feverous, shuffle).
    precision : {"fp32", "bf16"}
        Precision of the model's forward passes in the stages that embed (``--precision``); part
        of the model fingerprint, hence of the stage keys and the embedding cache keys. The
        transformer lab trains in fp32 whatever it is.
    runtime : {"auto", "torch", "openvino"}
        Runtime of the forward passes in the stages that embed (``--runtime``, :func:`normscope.load_encoder`;
        ``auto``, the default: OpenVINO f32 when installed and measured equal to torch, else torch), also in
        the Ray engine's workers; the runtime that ran is recorded in the model fingerprint (hence the stage
        keys and the embedding cache keys) and stated on the page. The probes, tokens and lab stages use the
        torch model (gradients, weight tables) whatever it is.
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
    only: tuple[str, ...] = STAGE_NAMES
    sizes: Sizes | None = None
    items: Path | None = None
    force: bool = False
    signals: tuple[str, ...] = SIGNALS + LENGTH_DESIGNS
    precision: str = "fp32"
    runtime: str = "auto"
    engine: str = "local"
    address: str | None = None

    def __post_init__(self) -> None:
        check_choice("precision", self.precision, PRECISIONS)
        check_choice("runtime", self.runtime, RUNTIMES)
        check_choice("engine", self.engine, ENGINES)
        check_engine(self.engine, self.address)
        self.signals = tuple(s.strip() for s in self.signals if s.strip())
        if not self.signals:
            raise InputError(f"unknown signal '(none)' (choose from {', '.join(SIGNALS + LENGTH_DESIGNS)})")
        for i, s in enumerate(self.signals):
            if s not in SIGNALS + LENGTH_DESIGNS:
                raise InputError(f"unknown signal[{i}] {s!r}; choose from {', '.join(SIGNALS + LENGTH_DESIGNS)}")
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
        """``quick``, ``full`` or ``custom`` (the sizes are neither preset)."""
        if self.sizes == QUICK:
            return "quick"
        if self.sizes == FULL:
            return "full"
        return "custom"

    def needed_datasets(self) -> dict[str, list[str]]:
        """``{dataset: [stages of this run that read it]}`` for the selected stages (and signals)."""
        need: dict[str, list[str]] = {}
        for st in STAGES:
            if st.name not in self.only:
                continue
            for name, who in st.datasets(self):
                need.setdefault(name, []).append(who)
        return need
