"""Shared pytest fixtures: the bundled real model (session-scoped) and the shared-data directory."""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch

from _data import skip_without_data

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # tests never reach the hub
os.environ.setdefault("NORMSCOPE_OFFLINE", "1")  # ... nor a dataset origin (tests/test_data*.py use a local server)
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

#: torch's thread count at the start of the session (its default: the machine's cores), restored after each test.
TORCH_THREADS = torch.get_num_threads()


@pytest.fixture(autouse=True)
def _keep_torch_threads():
    """Restore torch's intra-op thread count after every test. A test (or code it runs in-process, such as the Ray
    engine's worker class, which sets its actor's threads) that left it at 1 made every later test in the session
    run torch on one core."""
    yield
    if torch.get_num_threads() != TORCH_THREADS:
        torch.set_num_threads(TORCH_THREADS)


@pytest.fixture(scope="session")
def bundled_encoder():
    """The real all-MiniLM-L6-v2 (raw vectors), loaded once per session."""
    from normscope.encoders import load_encoder

    return load_encoder()


@pytest.fixture(scope="session")
def shared_data():
    """Path of ../shared/data (or $NORMSCOPE_DATA); skips the test when absent, fails under NORMSCOPE_REQUIRE_DATA=1."""
    from normscope.datasets import shared_data_dir

    d = shared_data_dir()
    if d is None:
        skip_without_data("../shared/data is absent")
    return d


@pytest.fixture
def rng():
    return np.random.default_rng(0)


@pytest.fixture
def no_network(monkeypatch):
    """Any attempt to open a network connection fails the test (``socket.connect`` / ``connect_ex``)."""
    import socket

    def refuse(self, *a, **k):
        raise AssertionError(f"network access attempted: {a}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
