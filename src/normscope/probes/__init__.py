"""Heat and radial-drift probes on pretrained encoders (docs/theory.md sections 3, 4, 6 and 9).

For each probe input x of an encoder ``z = f_theta(x)`` this module estimates, by K *virtual*
SGD steps on training-like pairs (symmetric InfoNCE on cosine logits), the per-unit-eta
quantities of (E8)

- ``D1 = E_b <z, a_b>``: first-order radial drift, ``a_b = jvp(f(., x), theta, -g_b)``;
- ``D2 = E_b <z, c_b>``: second-order radial drift, ``c_b = (1/2) f''_x[g_b, g_b]`` exactly by
  forward-over-forward AD (a JVP of the JVP, :mod:`normscope.probes.second_order`), or by central
  finite differences at a safe step (never at the real eta in float32);
- ``S = R^2 E_b ||a_b||^2``: first-order heat;

and from them, with the learning rate eta and the weight decay lambda, the heat
``Sigma^2 = eta^2 S``, the drift ``D~ = eta D1 + eta^2 D2``, the radial decay rate
``lambda_rad`` (E4), the implied decay ``q`` (E9) and the predicted norm ``R_eq`` (E7).

Cost (docs/theory.md section 6): ``K`` backward passes on ``B`` pairs shared by all probes, plus per
probe and batch one nested JVP (9 matrix products per product of a forward), i.e. about
``K (C_bwd(B) + 9 P C_fwd) + 4 P C_fwd``.

The public entry point is :func:`run_probe`; the raw estimator is :func:`probe_moments`.
Package layout: ``run`` (entry point), ``result`` (result type), ``training`` (known training values
with sources), ``adapters`` (encoder adapters), ``moments`` (estimators), ``summary`` (per-item
quantities and caveats), ``figures``. Encoders are reached through :class:`ProbeAdapter`; adapters exist for the
foundation's :class:`~normscope.encoders.base.TorchEncoder` (texts) and for plain
``torch.nn.Module`` towers mapping tensors to ``(n, d)`` (:class:`ModuleAdapter`).
"""

from normscope.pairs import sample_pair_batches
from normscope.probes.adapters import ModuleAdapter, ProbeAdapter, TextEncoderAdapter, as_adapter
from normscope.probes.figures import plot_heat_drift, plot_predicted_vs_observed
from normscope.probes.moments import ProbeMoments, decay_mask_for, probe_moments, symmetric_info_nce
from normscope.probes.result import CorrelationCI, ProbeCorrelation, ProbeResult
from normscope.probes.quantities import item_quantities
from normscope.probes.run import run_probe
from normscope.requests.probe import ProbeRequest
from normscope.probes.summary import summarize_probe
from normscope.probes.training import DEFAULT_PROBE_BATCH, KNOWN_TRAINING, TrainingFacts, training_for
from normscope.probes.uncertainty import crossed_bootstrap

__all__ = [
    "ProbeAdapter",
    "TextEncoderAdapter",
    "ModuleAdapter",
    "as_adapter",
    "KNOWN_TRAINING",
    "DEFAULT_PROBE_BATCH",
    "TrainingFacts",
    "training_for",
    "decay_mask_for",
    "symmetric_info_nce",
    "sample_pair_batches",
    "ProbeMoments",
    "probe_moments",
    "ProbeResult",
    "ProbeCorrelation",
    "CorrelationCI",
    "run_probe",
    "ProbeRequest",
    "item_quantities",
    "crossed_bootstrap",
    "summarize_probe",
    "plot_predicted_vs_observed",
    "plot_heat_drift",
]
