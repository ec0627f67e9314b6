"""What the compile log says of a compile's stages (backends/compile_stats.py)."""

from __future__ import annotations

import numpy as np
import pytest

import numbax
from numbax.backends.compile_stats import CompileStats


def test_the_backend_stage_is_split_into_numba_and_llvm():
    text = str(CompileStats(0.002, 0.001, 1.5, "disk miss", llvm_s=0.5))
    assert "backend 1500.0 ms (Numba 1000.0 ms, LLVM 500.0 ms)" in text
    assert "(disk cache miss, compiled)" in text


def test_a_launcher_of_kernels_splits_its_backend_stage_into_kernels_and_launcher():
    kernels = {"compiled": 2, "memory": 3, "disk": 1}
    text = str(CompileStats(0.002, 0.001, 1.5, "disk miss", 0.5, kernels, kernels_s=0.25))
    assert "backend 1500.0 ms (kernels 250.0 ms: 2 new, 3 from memory, 1 from disk" in text
    assert "launcher: Numba 750.0 ms, LLVM 500.0 ms, disk cache miss, compiled)" in text
    stepped = CompileStats(0.002, 0.001, 1.5, "disk hit", None, kernels, 0.25, True, llvmlite=5)
    assert "1 from disk, 5 by llvmlite; launcher of steps: disk cache hit)" in str(stepped)


def test_a_disk_hit_or_an_unknown_split_shows_the_backend_stage_whole():
    for stats in (
        CompileStats(0.002, 0.001, 0.03, "disk hit", llvm_s=0.0),
        CompileStats(0.002, 0.001, 0.03, "off"),
    ):
        assert "Numba" not in str(stats) and "backend 30.0 ms" in str(stats)


def test_a_cpu_compile_reports_the_time_llvm_took(monkeypatch):
    pytest.importorskip("numba")
    from numbax.config import config

    monkeypatch.setattr(config, "steps", False)  # a launcher compiled by Numba and LLVM
    # A program no other test compiles, so that this compile is a compile.
    executable = numbax.jit(lambda x: np.cos(x) * 3.25 - 0.125).lower(np.ones(3)).compile()
    stats = executable.compile_stats
    assert stats.cache in ("disk miss", "off")
    assert 0.0 < stats.llvm_s <= stats.backend_s
