"""What a report stage sees while it runs (:class:`StageContext`)."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from normscope.datasets import shared_data_dir
from normscope.encoders import load_encoder
from normscope.encoders.glove import is_static_encoder, static_refusal
from normscope.report.stage import StageUnavailable

__all__ = ["StageContext", "StageSettings", "refuse_static"]


class StageSettings(Protocol):
    """What a stage's context reads of the report's settings (:class:`normscope.report.config.ReportConfig` has it).

    A protocol, not the config class: the config module sits above the stages (it checks ``--only`` against
    them), so the stages' context does not import it.
    """

    out: Path
    model: str
    device: str
    precision: str
    data: Path | None


class StageContext:
    """What a stage sees: the config, the output directory, a lazily loaded encoder, a console.

    Attributes
    ----------
    config : StageSettings
        The report's settings (a :class:`~normscope.report.config.ReportConfig`).
    out : Path
    console : rich.console.Console
        stderr console (progress and notes).
    """

    def __init__(self, config: StageSettings, console, encoder=None) -> None:
        self.config = config
        self.out = config.out
        self.console = console
        self._encoder = encoder

    def encoder(self):
        """The report's encoder, loaded once (``normscope.load_encoder(model, device=..., precision=..., runtime=...)``)."""
        if self._encoder is None:
            with self.console.status(f"loading model {self.config.model} ..."):
                self._encoder = load_encoder(self.config.model, device=self.config.device,
                                             precision=self.config.precision, runtime=self.config.runtime)
        return self._encoder

    def torch_encoder(self):
        """The report's model on torch (the probes differentiate it, the tokens stage reads its weights): the
        torch twin of :meth:`encoder` when that runs on OpenVINO, else :meth:`encoder` itself."""
        enc = self.encoder()
        return getattr(enc, "torch_encoder", enc)

    def data_dir(self) -> Path | None:
        """The data folder in use (``--data``, else ``$NORMSCOPE_DATA`` / the shared folder), or None."""
        return self.config.data if self.config.data is not None else shared_data_dir()

    def figure_path(self, name: str) -> Path:
        """Where figure ``name`` is written: in the report folder."""
        return self.out / name


def refuse_static(ctx: StageContext) -> None:
    """Raise :class:`~normscope.report.stage.StageUnavailable` with the one-line reason when the report's
    model is a static word-vector table (GloVe): the probe and the labs need a network to differentiate."""
    enc = ctx.encoder()
    if is_static_encoder(enc):
        raise StageUnavailable(str(static_refusal(enc)))
