"""What ``normscope probe`` runs on given items and pairs (:class:`ProbeRequest`): checked at construction."""

from __future__ import annotations

import dataclasses
import typing
from typing import Literal

from normscope.errors import InputError
from normscope.requests import JUNK_HELP, Junk, Precision, Request, Resampling, param, said

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

    batch_size: int | None = param(None, min=2, cli="--batch-size",
                                   help="Probe batch size B (default: training B if known, capped at 64).")
    batches: int = param(16, min=2, cli="--batches", show=True, help="Number of probe batches K (>= 2).")
    tau: float | None = param(None, above=0.0, cli="--tau",
                              help="InfoNCE temperature (default: the temperature the checkpoint stores (CLIP), else its "
                              "known training value, else 0.05).")
    lr: float | None = param(None, above=0.0, cli="--lr",
                             help="Learning rate eta (default: known training value, else fitted by E11).")
    weight_decay: float | None = param(
        None, min=0.0, cli="--weight-decay",
        help="What-if weight decay lambda (the user's value, not the checkpoint's). Default: the checkpoint's training "
        "value when known and > 0; otherwise lambda_rad, q/c and R_eq(lambda_rad) are not computed.")
    decay_mask: DecayMask = param("matrices", cli="--decay-mask", help="matrices (ndim>=2, no biases/LayerNorm) or all.")
    chunk_size: int = param(128, min=1, cli="--chunk-size", help="Most probe items per JVP chunk.")
    second_order: SecondOrder = param(
        "auto", cli="--second-order",
        help="Second-order radial term of D2: jvp (forward-over-forward AD, exact, checked against float64 differences "
        "on one chunk), fd (finite differences, --fd-dtype), auto = jvp where the model supports it, else fd.")
    fd_dtype: FdDtype = param(
        "float64", cli="--fd-dtype",
        help="Precision of the D2 finite differences when used: float64 (a float64 copy, step 3e-3) or float32 (step "
        "1e-2, with a float64 spot check); auto = float64.")
    fd_target: float | None = param(None, above=0.0, cli="--fd-target",
                                    help="Step eps ||a|| / R of the D2 finite differences (default: 3e-3 in float64, "
                                    "1e-2 in float32).")
    symmetric: bool = param(True, cli="--one-sided", flag=False,
                            help="The one-directional row InfoNCE loss instead of the symmetric (CLIP) one.")
    junk: Junk = param("drop", cli="--junk-error", flag="error", help=JUNK_HELP)
    precision: Precision = param("fp32", cli="--precision", show=True,
                                 help="Precision of the K pair-gradient passes only: fp32, or bf16 (under "
                                 "torch.autocast).")
    resampling: Resampling = param(Resampling(n_boot=1000), omit=("n_perm",))

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.resampling.n_boot < 1:
            raise InputError(f"{said('n_boot')} must be >= 1, got {self.resampling.n_boot}")
