"""No code runs from a user's file (issue 24): a crafted checkpoint and a crafted CIFAR-10 batch are refused
in one line (exit 2) and their payload never runs (it would create a file).

Each payload is a pickle whose ``__reduce__`` calls ``open(marker, "w")``: under a free unpickler
(``torch.load(weights_only=False)``, ``pickle.load``) it creates ``marker``; the tests assert it does not exist.
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from normscope.cli import run


class _Payload:
    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def _one_error_line(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    return lines[0]


def test_lab_checkpoint_payload_never_runs(tmp_path, capsys):
    import torch

    marker = tmp_path / "ran"
    ck = tmp_path / "run.ckpt"
    torch.save({"format": 2, "settings": {}, "key": "x", "step": 0, "extra": _Payload(marker)}, ck)
    before = ck.read_bytes()
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("".join(f"word{i}\tthe word {i} here\n" for i in range(40)))
    code = run(["lab", "--encoder", "transformer", "--checkpoint", str(ck), "--pairs", str(pairs), "--steps", "2",
                "--batch-size", "4", "--probe-items", "3", "--probe-batches", "2"])
    err = capsys.readouterr().err
    assert not marker.exists(), "the checkpoint's payload ran"
    assert code == 2
    line = _one_error_line(err)
    assert "--checkpoint" in line and "never runs code" in line and ("builtins.open" in line or "io.open" in line)
    assert ck.read_bytes() == before


def test_checkpoint_round_trip_is_weights_only(tmp_path):
    """What the lab stores (tensors, numpy arrays and scalars, nested lists/dicts) reads back exactly with
    ``torch.load(weights_only=True)``."""
    import torch

    from normscope.lab.checkpoint import load_checkpoint, save_checkpoint, settings_key

    settings = {"lr": 0.1, "model": "m"}
    rec = {"r2": np.arange(6, dtype=np.float64).reshape(3, 2), "batches": np.arange(4, dtype=np.int64),
           "lam": [np.float64(0.5)], "lam_steps": [0]}
    payload = {"settings": settings, "key": settings_key(settings), "step": 2, "params": [torch.ones(3)],
               "opt": {"buf": [torch.zeros(3)]}, "extra": {"lam0": np.array([1.5, 2.5])}, "record": rec}
    ck = save_checkpoint(tmp_path / "c.ckpt", payload)
    assert not torch.serialization.get_unsafe_globals_in_checkpoint(str(ck))
    back = load_checkpoint(ck, settings)
    np.testing.assert_array_equal(back["record"]["r2"], rec["r2"])
    assert back["record"]["r2"].dtype == np.float64 and back["record"]["batches"].dtype == np.int64
    assert back["record"]["lam"] == [0.5] and isinstance(back["record"]["lam"][0], float)
    np.testing.assert_array_equal(back["extra"]["lam0"], [1.5, 2.5])
    assert torch.equal(back["params"][0], torch.ones(3))


def _cifar_dict(n=10000, seed=0):
    data = np.random.default_rng(seed).integers(0, 256, (n, 3072), dtype=np.uint8)
    return {b"batch_label": b"testing batch 1 of 1", b"labels": [0] * n, b"data": data,
            b"filenames": [b"x.png"] * n}


@pytest.mark.parametrize("protocol", [2, 4, 5])
def test_cifar_batch_is_read_by_the_restricted_unpickler(tmp_path, protocol):
    from normscope.signals.cifar import load_cifar_images

    d = _cifar_dict()
    p = tmp_path / "test_batch"
    p.write_bytes(pickle.dumps(d, protocol=protocol))
    arr = load_cifar_images(tmp_path)
    # the format's layout: (n, 3, 32, 32) channel-major rows -> (n, 32, 32, 3)
    np.testing.assert_array_equal(arr, d[b"data"].reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1))


@pytest.mark.parametrize("what", ["payload", "not_dict", "no_data", "float_data", "garbage"])
def test_cifar_batch_payload_and_bad_batches_are_one_line(tmp_path, capsys, what):
    marker = tmp_path / "ran"
    batch = tmp_path / "cifar-10-batches-py"
    batch.mkdir()
    obj = {"payload": {b"data": _Payload(marker)}, "not_dict": [1, 2, 3], "no_data": {b"labels": [1]},
           "float_data": {b"data": np.zeros((10, 3072))}}.get(what)
    raw = b"\x00not a pickle at all" if what == "garbage" else pickle.dumps(obj, protocol=2)
    (batch / "test_batch").write_bytes(raw)
    code = run(["correlate", "--signal", "uncertainty", "--dataset", "cifar10h", "--images", str(batch)])
    err = capsys.readouterr().err
    assert not marker.exists(), "the CIFAR file's payload ran"
    assert code == 2
    line = _one_error_line(err)
    expect = {"payload": "never runs code", "not_dict": "holds a list", "no_data": "no b'data' entry",
              "float_data": "float64 array", "garbage": "unreadable pickle"}[what]
    assert expect in line and "test_batch" in line
    assert (batch / "test_batch").read_bytes() == raw
