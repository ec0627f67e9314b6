"""The first cpu compile tells glibc to keep freed memory for the next call (heap.py): set
once, skipped on request and off glibc, and what it did is said."""

from __future__ import annotations

import platform

import numpy as np
import pytest

import numbax
from numbax.backends.cpu import heap
from numbax.config import config


@pytest.fixture
def fresh_decision():
    heap.keep_freed_memory.cache_clear()
    yield
    heap.keep_freed_memory.cache_clear()


def _on_glibc() -> bool:
    return platform.system() == "Linux" and platform.libc_ver()[0] == "glibc"


@pytest.mark.skipif(not _on_glibc(), reason="glibc's mallopt: Linux with glibc only")
def test_a_compile_sets_glibcs_thresholds_once(monkeypatch, fresh_decision):
    calls = []

    # Records the calls; the real ones were made by the session's first compile.
    monkeypatch.setattr(heap, "_mallopt", lambda: lambda *call: calls.append(call) or 1)
    x = np.arange(4.0)
    for program in (lambda v: v * 3.0 + 1.0, lambda v: v - 2.0):
        numbax.jit(program, backend="cpu").lower(x).compile()  # compiles here, not tiered
    assert calls == [
        (heap.M_MMAP_THRESHOLD, 32 << 20),
        (heap.M_TRIM_THRESHOLD, 64 << 20),
    ]
    assert heap.keep_freed_memory() == "kept: thresholds 32 MiB and 64 MiB"


def test_the_tuning_can_be_switched_off(monkeypatch, fresh_decision):
    monkeypatch.setattr(config, "heap_tuning", False)
    monkeypatch.setattr(heap, "_mallopt", None)  # must not be reached
    assert heap.keep_freed_memory() == "left as it is: NUMBAX_HEAP_TUNING=0"


def test_other_c_libraries_are_left_alone(monkeypatch, fresh_decision):
    monkeypatch.setattr(heap.platform, "libc_ver", lambda: ("musl", "1.2"))
    monkeypatch.setattr(heap, "_mallopt", None)
    assert heap.keep_freed_memory() == "left as it is: not glibc"
