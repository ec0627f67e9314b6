"""The pass tests compare programs on the interpreter: a nested ``jit_call`` evaluated
eagerly runs on the default backend, so make that the interpreter too (no Numba
compiles in these tests). Debug checks are on for the session (tests/conftest.py)."""

from __future__ import annotations

import pytest

from numbax.config import config


@pytest.fixture(autouse=True)
def _interpret_nested_calls(monkeypatch):
    monkeypatch.setattr(config, "backend", "interpret")
