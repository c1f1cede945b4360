"""What ``normscope probe`` runs on given items and pairs (:class:`ProbeRequest`): checked at construction."""

from __future__ import annotations

import dataclasses
import typing
from typing import Literal

from normscope.errors import InputError
from normscope.requests import Junk, Precision, Request, Resampling, param, said

__all__ = ["ProbeRequest", "FdDtype", "FD_DTYPES", "DecayMask", "SecondOrder", "SECOND_ORDER"]

#: Precision of the D2 finite differences (``auto``: float64).
FdDtype = Literal["float64", "float32", "auto"]
FD_DTYPES: tuple[str, ...] = typing.get_args(FdDtype)
#: How the second-order radial term of D2 is computed (:func:`normscope.probes.moments.probe_moments`).
SecondOrder = Literal["auto", "jvp", "fd"]
SECOND_ORDER: tuple[str, ...] = typing.get_args(SecondOrder)
#: Which parameters weight decay acts on (:func:`normscope.probes.moments.decay_mask_for`).
DecayMask = Literal["matrices", "all"]


@dataclasses.dataclass(frozen=True)
class ProbeRequest(Request):
    """The probe's settings (:func:`normscope.probes.run_probe`); the encoder, items and pairs are its data.

    Attributes
    ----------
    batch_size : int or None
        B. None: the checkpoint's training batch size when known, capped at 64 for CPU cost; else 64.
    batches : int
        K >= 2 virtual SGD steps.
    tau, lr, weight_decay : float or None
        Temperature, eta and the what-if lambda (None: the checkpoint's stored or known training values; see
        :func:`normscope.probes.run_probe`).
    decay_mask : {"matrices", "all"}
    chunk_size : int
        Most probe items per JVP chunk.
    second_order : {"auto", "jvp", "fd"}
        How the second-order radial term of D2 is computed: ``jvp`` forward-over-forward AD (exact, checked
        on one chunk against float64 differences), ``fd`` finite differences in ``fd_dtype``, ``auto`` ``jvp``
        where the model supports it, else ``fd``.
    fd_dtype : {"float64", "float32", "auto"}
        Precision of the D2 finite differences; ``fd_target`` the step ``eps ||a|| / R`` (None: 3e-3 in
        float64, 1e-2 in float32).
    symmetric : bool
        Symmetric (CLIP) InfoNCE, else the one-directional row loss.
    junk : {"drop", "error"}
    precision : {"fp32", "bf16"}
        Precision of the K pair-gradient passes only.
    resampling : Resampling
        ``n_boot`` replicates of every bootstrap (>= 1); ``seed`` of the pair batches and every bootstrap.
    """

    batch_size: int | None = param(None, min=2, help="Probe batch size B.")
    batches: int = param(16, min=2, help="Number of probe batches K (>= 2).")
    tau: float | None = param(None, above=0.0)
    lr: float | None = param(None, above=0.0)
    weight_decay: float | None = param(None, min=0.0)
    decay_mask: DecayMask = "matrices"
    chunk_size: int = param(128, min=1)
    second_order: SecondOrder = "auto"
    fd_dtype: FdDtype = "float64"
    fd_target: float | None = param(None, above=0.0)
    symmetric: bool = True
    junk: Junk = "drop"
    precision: Precision = "fp32"
    resampling: Resampling = Resampling(n_boot=1000)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.resampling.n_boot < 1:
            raise InputError(f"{said('n_boot')} must be >= 1, got {self.resampling.n_boot}")

    def argv(self) -> list[str]:
        """The ``normscope probe`` options of this request (after ITEMS, ``--model`` and ``--pairs``)."""
        out = ["--batches", str(self.batches)]
        for flag, value, default in (("--batch-size", self.batch_size, None), ("--tau", self.tau, None),
                                     ("--lr", self.lr, None), ("--weight-decay", self.weight_decay, None),
                                     ("--decay-mask", self.decay_mask, "matrices"), ("--chunk-size", self.chunk_size, 128),
                                     ("--second-order", self.second_order, "auto"),
                                     ("--fd-dtype", self.fd_dtype, "float64")):
            if value != default:
                out += [flag, str(value)]
        out += self.resampling.argv() + ["--precision", self.precision]
        return out + (["--junk-error"] if self.junk == "error" else [])
