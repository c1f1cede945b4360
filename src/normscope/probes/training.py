"""Known training values of pretrained encoders, each with its source.

The probe needs the training batch size B, temperature tau, learning rate eta and weight decay
lambda of the checkpoint it probes (THEORY section 6, step 5). Each value here names where it was
read (model card, training script, paper); a value that is not published is absent, not guessed.
"""

from __future__ import annotations

__all__ = ["KNOWN_TRAINING", "DEFAULT_PROBE_BATCH", "training_defaults"]

#: Training values of known models (used when the caller does not give them).
KNOWN_TRAINING: dict[str, dict] = {
    "all-MiniLM-L6-v2": {
        "batch_size": 1024,
        "tau": 0.05,
        "lr": 2e-5,
        "weight_decay": 0.01,
        "optimizer": "AdamW",
        "loss": "MultipleNegativesRankingLoss (in-batch negatives, scale 20)",
        "source": (
            "model card of sentence-transformers/all-MiniLM-L6-v2: MultipleNegativesRankingLoss with "
            "scale 20 (tau = 1/20 = 0.05), batch size 1024, learning rate 2e-5, AdamW; weight decay 0.01 "
            "is the sentence-transformers fit() default"
        ),
    },
}

#: CPU-friendly default probe batch size when the training batch size is larger.
DEFAULT_PROBE_BATCH = 64


def training_defaults(model_name: str | None) -> dict | None:
    """Known training values of ``model_name`` (a copy), or None.

    Parameters
    ----------
    model_name : str or None
        Model name or hub id; matched on its last path component, case-insensitively.

    Returns
    -------
    dict or None
        Keys ``batch_size``, ``tau``, ``lr``, ``weight_decay``, ``optimizer``, ``loss``, ``source``.
    """
    if not model_name:
        return None
    key = str(model_name).rstrip("/").split("/")[-1].lower()
    for name, vals in KNOWN_TRAINING.items():
        if key == name.lower() or key.startswith(name.lower() + "-"):
            return dict(vals)
    return None
