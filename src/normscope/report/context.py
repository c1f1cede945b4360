"""What a report stage sees (:class:`StageContext`) and how it says it cannot run (:class:`StageUnavailable`)."""

from __future__ import annotations

from pathlib import Path

from normscope.report.config import ReportConfig, Sizes

__all__ = ["StageContext", "StageUnavailable"]


class StageUnavailable(Exception):
    """Raised by a stage that cannot run here; the message says why (shown on the page).

    Parameters
    ----------
    reason : str
        One line, shown on the page and in the summary.
    missing : dict, keyword-only
        ``{dataset name: {"title", "cause"}}`` of the datasets whose absence stops the stage (built by
        :func:`normscope.report.missing.data_unavailable`); the report counts the claims they block.
    detail : str, keyword-only
        The full error text (library messages included), kept in the stage record, never printed.
    """

    def __init__(self, reason: str, *, missing: dict | None = None, detail: str = "") -> None:
        super().__init__(reason)
        self.missing = dict(missing or {})
        self.detail = detail


class StageContext:
    """What a stage sees: the config, the output directory, a lazily loaded encoder, a console.

    Attributes
    ----------
    config : ReportConfig
    out : Path
    console : rich.console.Console
        stderr console (progress and notes).
    """

    def __init__(self, config: ReportConfig, console) -> None:
        self.config = config
        self.out = config.out
        self.console = console
        self._encoder = None

    @property
    def sizes(self) -> Sizes:
        return self.config.sizes  # type: ignore[return-value]

    def encoder(self):
        """The report's encoder, loaded once (``normscope.load_encoder(model, device=..., precision=...)``)."""
        if self._encoder is None:
            from normscope.encoders import load_encoder

            with self.console.status(f"loading model {self.config.model} ..."):
                self._encoder = load_encoder(self.config.model, device=self.config.device,
                                             precision=self.config.precision)
        return self._encoder

    def data_dir(self) -> Path | None:
        """The shared-data directory in use, or None."""
        if self.config.data is not None:
            return self.config.data
        from normscope.datasets import shared_data_dir

        return shared_data_dir()

    def figure_path(self, name: str) -> Path:
        return self.out / name

