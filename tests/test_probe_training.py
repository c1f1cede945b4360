"""Training values of the probed checkpoint: looked up by its weights' fingerprint, each with a source."""

from __future__ import annotations

import pytest

from normscope.probes.training import KNOWN_TRAINING, resolve_settings, training_for
from normscope.table import ModelFingerprint


def test_bundled_minilm_is_known_by_its_weights_hash(bundled_encoder):
    from normscope.encoders.bundled import bundled_model_path
    from normscope.table import file_sha256

    digest = file_sha256(bundled_model_path() / "model.safetensors")  # independent: hash the file itself
    assert f"sha256:{digest[:16]}" in KNOWN_TRAINING
    facts = training_for(bundled_encoder.fingerprint)
    assert facts is not None and facts.get("weight_decay") == 0.0 and facts.get("lr") == 2e-5
    assert facts.get("batch_size") == 1024 and facts.get("tau") == 0.05
    block = facts.to_dict()
    for key in ("optimizer", "lr", "weight_decay", "batch_size", "loss", "tau"):
        assert block[key]["source"] and block[key]["source"] != "unknown", key


def test_same_name_other_weights_is_unknown():
    fp = ModelFingerprint(name="sentence-transformers/all-MiniLM-L6-v2", revision="sha256:0123456789abcdef",
                          pooling="mean")
    assert training_for(fp) is None
    s = resolve_settings(None, fingerprint=fp, n_pairs=100, batch_size=None, tau=None, lr=None, weight_decay=None)
    assert s.decay_reading == "unknown" and s.weight_decay is None and s.lr is None
    assert s.training["known"] is False and "0123456789abcdef" in s.training["reason"]
    assert s.batch_size == 64 and s.tau == 0.05


def test_decay_readings():
    facts = training_for({"revision": next(iter(KNOWN_TRAINING))})
    s = resolve_settings(facts, n_pairs=10_000, batch_size=None, tau=None, lr=None, weight_decay=None)
    assert s.decay_reading == "trained_without_decay" and s.weight_decay is None
    assert s.batch_size == 64 and "1024" in s.batch_size_source
    assert any("peak of the training schedule" in n for n in s.notes)
    what_if = resolve_settings(facts, n_pairs=10_000, batch_size=8, tau=None, lr=None, weight_decay=0.01)
    assert what_if.decay_reading == "what_if" and what_if.weight_decay == 0.01
    assert "what-if" in what_if.weight_decay_source and "not the checkpoint's" in what_if.weight_decay_source
    assert what_if.batch_size == 8 and what_if.batch_size_source == "given (--batch-size)"


@pytest.mark.parametrize("kw, msg", [({"batches": 1}, "batches must be >= 2"), ({"batches": 2, "tau": 0.0}, "tau must be > 0"),
                                     ({"batches": 2, "weight_decay": -1.0}, "weight_decay must be >= 0"),
                                     ({"batches": 2, "fd_dtype": "float16"}, "unknown fd_dtype 'float16'")])
def test_option_checks(kw, msg):
    """The probe's request checks every option at construction (before any model or data); from the API its errors
    name the field (the CLI names the option)."""
    from normscope.errors import InputError
    from normscope.probes import ProbeRequest

    with pytest.raises(InputError, match=msg):
        ProbeRequest(**kw)


def test_checkpoint_temperature_comes_before_the_default_and_after_tau():
    """CLIP stores its learned temperature: the probe uses it unless --tau is given."""
    fp = ModelFingerprint(name="openai/clip-vit-base-patch32", revision="sha256:fedcba9876543210", pooling="clip-text")
    s = resolve_settings(None, fingerprint=fp, n_pairs=100, batch_size=None, tau=None, lr=None, weight_decay=None,
                         checkpoint_tau=0.01)
    assert s.tau == 0.01 and "learned temperature" in s.tau_source
    given = resolve_settings(None, fingerprint=fp, n_pairs=100, batch_size=None, tau=0.07, lr=None, weight_decay=None,
                             checkpoint_tau=0.01)
    assert given.tau == 0.07 and given.tau_source == "given (--tau)"
