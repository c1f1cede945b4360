"""Which tests need the shared data, and what they do without it.

Tests that read ../shared/data (or ``$NORMSCOPE_DATA``) skip with the reason when it is absent -- unless
``NORMSCOPE_REQUIRE_DATA=1`` (``make test`` sets it when ../shared/data exists), when they fail instead,
so a broken data path cannot hide behind skips. README.md ("Tests") lists them.
"""

from __future__ import annotations

import os

import pytest


def data_required() -> bool:
    """``NORMSCOPE_REQUIRE_DATA=1`` (set by ``make test`` when ../shared/data exists): a test that needs the
    shared data fails instead of skipping, so a broken data path cannot hide behind skips."""
    return os.environ.get("NORMSCOPE_REQUIRE_DATA", "").strip() not in ("", "0")


def skip_without_data(reason: str):
    """Skip with ``reason`` -- or fail with it when :func:`data_required`."""
    if data_required():
        pytest.fail(f"{reason} (NORMSCOPE_REQUIRE_DATA=1: tests that need the data must run)", pytrace=False)
    pytest.skip(reason)
