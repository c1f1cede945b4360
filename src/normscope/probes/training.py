"""Known training values of pretrained encoders, each with its source, looked up by model fingerprint.

The probe needs the training batch size B, temperature tau, learning rate eta and weight decay
lambda of the checkpoint it probes (docs/theory.md section 6, step 5). Each value here names where
it was read (model card, training script, paper); a value that is not published is absent, not
guessed. Entries are keyed by the weights of the checkpoint (the ``revision`` of its
:class:`~normscope.table.ModelFingerprint`: ``sha256:`` and the first 16 hex digits of the
weights file), never by the model's name: a fine-tuned copy saved under the same name has other
weights and other training values.

:func:`resolve_settings` turns the known values and the caller's options into the probe's
settings, each with the reason it was chosen, and decides how a weight decay may be read
(:data:`DECAY_READINGS`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from normscope.encoders.model_cards import TRAINING_VALUES

__all__ = [
    "KNOWN_TRAINING",
    "DEFAULT_PROBE_BATCH",
    "DEFAULT_TAU",
    "DECAY_READINGS",
    "TrainingFacts",
    "ProbeSettings",
    "training_for",
    "resolve_settings",
]

_MINILM_CARD = "model card (huggingface.co/sentence-transformers/all-MiniLM-L6-v2, README.md)"
_MINILM_SCRIPT = "training script (huggingface.co/sentence-transformers/all-MiniLM-L6-v2, train_script.py)"

#: Known training values: fingerprint revision -> {name, values: {key: (value, source)}}.
#: ``sha256:53aa51172d142c89`` is model.safetensors of sentence-transformers/all-MiniLM-L6-v2
#: (sha256 53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db), the bundled model.
KNOWN_TRAINING: dict[str, dict] = {
    "sha256:53aa51172d142c89": {
        "name": "sentence-transformers/all-MiniLM-L6-v2",
        "values": {
            "optimizer": ("AdamW (transformers.AdamW, correct_bias=True)", _MINILM_SCRIPT),
            "lr": (2e-5, f"{_MINILM_SCRIPT}: AdamW(lr=2e-5); {_MINILM_CARD}: learning rate 2e-5"),
            "weight_decay": (0.0, f"{_MINILM_SCRIPT}: transformers.AdamW is called without weight_decay, "
                                  "whose default is 0"),
            "batch_size": (1024, f"{_MINILM_CARD}: batch size 1024 (128 per TPU core)"),
            "loss": ("symmetric InfoNCE on cosine similarities (cross-entropy in both directions, as CLIP)",
                     _MINILM_SCRIPT),
            "tau": (0.05, f"{_MINILM_SCRIPT}: similarity scale 20 on normalised embeddings, tau = 1/20"),
            "schedule": ("linear warm-up (500 steps) then linear decay to 0",
                         f"{_MINILM_SCRIPT}: get_linear_schedule_with_warmup; {_MINILM_CARD}: warm-up 500"),
            "gradient_clipping": ("gradient-norm clipping", _MINILM_SCRIPT),
        },
    },
}



def _from_model_card(name: str, hub_id: str) -> dict:
    """A :data:`KNOWN_TRAINING` entry from :data:`normscope.encoders.model_cards.TRAINING_VALUES` (one source for all)."""
    card = TRAINING_VALUES[name]
    keys = ("optimizer", "lr", "weight_decay", "batch_size", "loss", "tau", "schedule", "gradient_clipping")
    return {"name": hub_id, "values": {k: (card[k], card["source"]) for k in keys if k in card}}


#: ``sha256:78c0197b6159d926``: the weights of sentence-transformers/all-mpnet-base-v2 shipped by the ``mpnet``
#: extra (docs/models.md); the schedule after its 500 warm-up steps is not in its card, so it is left unknown.
KNOWN_TRAINING["sha256:78c0197b6159d926"] = _from_model_card("all-mpnet-base-v2", "sentence-transformers/all-mpnet-base-v2")
#: ``sha256:b388816f4fe4becc``: paraphrase-MiniLM-L3-v2.onnx of the ``minilm-l3`` extra, the file its rebuilt
#: weights come from (:func:`normscope.encoders.bundled.bundle_revision`); the recipe's published settings.
KNOWN_TRAINING["sha256:b388816f4fe4becc"] = _from_model_card("paraphrase-MiniLM-L3-v2",
                                                             "sentence-transformers/paraphrase-MiniLM-L3-v2")

#: CPU-friendly probe batch size used when the training batch size is larger (or unknown).
DEFAULT_PROBE_BATCH = 64
#: Temperature used when the training temperature is unknown.
DEFAULT_TAU = 0.05

#: How the probe may read a weight decay lambda (``ProbeSettings.decay_reading``).
DECAY_READINGS = {
    "checkpoint": "the checkpoint's own training weight decay (known training value)",
    "what_if": "the user's what-if value (--weight-decay), not the checkpoint's training value",
    "trained_without_decay": "the checkpoint was trained without weight decay (lambda = 0)",
    "unknown": "the checkpoint's training weight decay is unknown",
}


@dataclass(frozen=True)
class TrainingFacts:
    """Training values of one checkpoint, each with its source.

    Attributes
    ----------
    name : str
        The model the values belong to.
    values : dict of str -> (value, source)
        Keys among ``optimizer, lr, weight_decay, batch_size, loss, tau, schedule, gradient_clipping``.
    """

    name: str
    values: dict

    def get(self, key: str, default=None):
        """The value of ``key`` (without its source), or ``default``."""
        return self.values[key][0] if key in self.values else default

    def source(self, key: str) -> str | None:
        return self.values[key][1] if key in self.values else None

    def to_dict(self) -> dict:
        """JSON ``training`` block: ``{key: {"value": ..., "source": ...}}`` plus ``model``."""
        out = {"known": True, "model": self.name}
        for k in ("optimizer", "lr", "weight_decay", "batch_size", "loss", "tau", "schedule", "gradient_clipping"):
            v, s = self.values.get(k, (None, "not published"))
            out[k] = {"value": v, "source": s}
        return out


def training_for(fingerprint) -> TrainingFacts | None:
    """Known training values of the checkpoint with this fingerprint, or None.

    Parameters
    ----------
    fingerprint : ModelFingerprint, dict or None
        Matched on its ``revision`` (the weights hash), not on its name.

    Returns
    -------
    TrainingFacts or None
    """
    if fingerprint is None:
        return None
    rev = fingerprint.get("revision") if isinstance(fingerprint, dict) else getattr(fingerprint, "revision", None)
    entry = KNOWN_TRAINING.get(str(rev)) if rev else None
    return TrainingFacts(entry["name"], dict(entry["values"])) if entry else None


def unknown_training_block(fingerprint) -> dict:
    """The JSON ``training`` block of a checkpoint without known training values."""
    rev = fingerprint.get("revision") if isinstance(fingerprint, dict) else getattr(fingerprint, "revision", None)
    out = {"known": False, "model": None,
           "reason": f"no training values recorded for this checkpoint (weights {rev or 'unknown'})"}
    for k in ("optimizer", "lr", "weight_decay", "batch_size", "loss", "tau"):
        out[k] = {"value": None, "source": "unknown"}
    return out


@dataclass
class ProbeSettings:
    """The probe's B, tau, eta, lambda, each with why it was chosen (JSON keys ``*_source``).

    Attributes
    ----------
    batch_size, tau : int, float
    lr : float or None
        eta; None when neither given nor known (then fitted by (E11) or per unit eta).
    weight_decay : float or None
        The lambda used for lambda_rad, q/c and R_eq(lambda_rad): None unless it is the
        checkpoint's own positive training value or the user's what-if value.
    decay_reading : str
        A key of :data:`DECAY_READINGS`.
    training : dict
        The JSON ``training`` block (every value with its source).
    notes : list of str
        Caveats that follow from the settings.
    """

    batch_size: int
    batch_size_source: str
    tau: float
    tau_source: str
    lr: float | None
    lr_source: str
    weight_decay: float | None
    weight_decay_source: str
    decay_reading: str
    training: dict
    notes: list = field(default_factory=list)


def resolve_settings(facts: TrainingFacts | None, *, fingerprint=None, n_pairs: int, batch_size: int | None,
                     tau: float | None, lr: float | None, weight_decay: float | None,
                     checkpoint_tau: float | None = None) -> ProbeSettings:
    """Choose B, tau, eta and lambda from the caller's options and the checkpoint's training values.

    Parameters
    ----------
    facts : TrainingFacts or None
        From :func:`training_for`.
    fingerprint : ModelFingerprint, optional
        For the ``training`` block of an unknown checkpoint.
    n_pairs : int
        Pairs available (a default B is capped at it).
    batch_size, tau, lr, weight_decay : optional
        The caller's values (``--batch-size``, ``--tau``, ``--lr``, ``--weight-decay``).
    checkpoint_tau : float, optional
        The temperature the checkpoint stores (CLIP's learned ``1 / exp(logit_scale)``); used when
        ``tau`` is not given, before a recorded training value and the default.

    Returns
    -------
    ProbeSettings

    Notes
    -----
    The values are checked by :func:`normscope.probes.run.check_probe_options` before this runs.
    """
    notes: list[str] = []
    b, b_src = _probe_batch_size(facts, batch_size, n_pairs, notes)
    t, t_src = _probe_tau(facts, tau, checkpoint_tau)
    eta, eta_src = _probe_lr(facts, lr, notes)
    lam, reading, lam_src = _probe_decay(facts, weight_decay, notes)
    opt = str(facts.get("optimizer") or "") if facts else ""
    if opt.lower().startswith("adam"):
        notes.append(f"{facts.name} was trained with {opt}: the SGD form of Theorem 1 is not expected to hold "
                     "quantitatively (docs/theory.md C3 and section 8); read rank statistics only")
    training = facts.to_dict() if facts else unknown_training_block(fingerprint)
    return ProbeSettings(batch_size=b, batch_size_source=b_src, tau=t, tau_source=t_src, lr=eta, lr_source=eta_src,
                         weight_decay=lam, weight_decay_source=lam_src, decay_reading=reading, training=training,
                         notes=notes)


def _probe_batch_size(facts: TrainingFacts | None, batch_size: int | None, n_pairs: int,
                      notes: list[str]) -> tuple[int, str]:
    """(B, its source): the given one, else the training B capped at :data:`DEFAULT_PROBE_BATCH` and the pairs
    available, else the default; a note when B differs from the training B."""
    train_b = facts.get("batch_size") if facts else None
    if batch_size is not None:
        b, b_src = int(batch_size), "given (--batch-size)"
    elif train_b:
        b = min(int(train_b), DEFAULT_PROBE_BATCH, n_pairs)
        b_src = f"training batch size {train_b} is too costly on CPU; the probe uses {b}"
    else:
        b, b_src = min(DEFAULT_PROBE_BATCH, n_pairs), "default (training batch size unknown)"
    if train_b and b != train_b:
        notes.append(f"probe batch size B={b} differs from the training B={train_b}: heat scales about as 1/B, so "
                     f"absolute heat and q are not the training values (heat here is roughly {train_b / b:.0f}x the "
                     "training heat; ranks are unaffected)")
    return b, b_src


def _probe_tau(facts: TrainingFacts | None, tau: float | None, checkpoint_tau: float | None) -> tuple[float, str]:
    """(tau, its source): the given one, else the checkpoint's learned temperature, else the training value,
    else :data:`DEFAULT_TAU`."""
    if tau is not None:
        return float(tau), "given (--tau)"
    if checkpoint_tau is not None and checkpoint_tau > 0:
        return float(checkpoint_tau), "the checkpoint's learned temperature 1/exp(logit_scale)"
    if facts and facts.get("tau") is not None:
        return float(facts.get("tau")), "known training value: " + facts.source("tau")
    return DEFAULT_TAU, "default (training temperature unknown)"


def _probe_lr(facts: TrainingFacts | None, lr: float | None, notes: list[str]) -> tuple[float | None, str]:
    """(eta, its source): the given one, else the training value (a note when its schedule decays to 0),
    else None."""
    if lr is not None:
        return float(lr), "given (--lr)"
    if facts and facts.get("lr") is not None:
        eta = float(facts.get("lr"))
        sched = facts.get("schedule") or ""
        if "decay to 0" in sched:
            notes.append(f"eta = {eta:g} is the peak of the training schedule ({sched}); the end-of-training eta "
                         "that the theory asks for is 0 under that schedule, so eta is ill-defined (docs/theory.md "
                         "section 8): absolute heat, drift, q and c_fit scale with this choice; rank statistics of "
                         "heat do not")
        return eta, f"known training value of {facts.name}"
    return None, "unknown"


def _probe_decay(facts: TrainingFacts | None, weight_decay: float | None,
                 notes: list[str]) -> tuple[float | None, str, str]:
    """(lambda, its reading, its source): the given what-if value, the checkpoint's decay, none (trained without
    decay) or unknown; a note saying what the reading allows."""
    train_wd = facts.get("weight_decay") if facts else None
    if weight_decay is not None:
        lam, reading = float(weight_decay), "what_if"
        lam_src = "given (--weight-decay): " + DECAY_READINGS["what_if"]
    elif train_wd is not None and train_wd > 0:
        lam, reading = float(train_wd), "checkpoint"
        lam_src = "known training value: " + facts.source("weight_decay")
    elif train_wd is not None:
        lam, reading = None, "trained_without_decay"
        lam_src = f"{facts.name} was trained without weight decay ({facts.source('weight_decay')})"
    else:
        lam, reading, lam_src = None, "unknown", "unknown (not a known checkpoint, and --weight-decay not given)"
    if reading == "trained_without_decay":
        notes.append(f"{facts.name} was trained without weight decay: lambda_rad, q/c and R_eq(lambda_rad) need a decay "
                     "the checkpoint did not have, so they are not predictions for it and are not computed; "
                     "R_eq(x; c_fit) uses one fitted c (docs/theory.md section 6, step 6(ii)), a rank test of the (E7) "
                     "shape; give --weight-decay to ask what a decay would predict")
    elif reading == "unknown":
        notes.append("the checkpoint's weight decay is unknown: lambda_rad, q/c and R_eq(lambda_rad) are not computed; "
                     "R_eq(x; c_fit) uses one fitted c (docs/theory.md section 6, step 6(ii))")
    elif reading == "what_if":
        notes.append(f"weight decay lambda = {lam:g} is the user's what-if value (--weight-decay), not the "
                     "checkpoint's: lambda_rad, q/c and R_eq(lambda_rad) answer 'what if', they are not predictions "
                     "for this checkpoint")
    return lam, reading, lam_src
