"""Views of planned buffers and flattened loops are ``intrinsics.shaped_view``, which LLVM
sees through: every loop of a multi-kernel program over 2-D values vectorises, and the
parallel version (whose loops Numba's parfor passes move into worker functions) stores
into the arrays the program returns.

Numba's ``reshape`` computes a view's strides in a C helper; with such views no loop of
this program vectorised, and a view the parfor passes did not know for an alias of its
array had its loops dropped as dead (the program returned uninitialised memory)."""

from __future__ import annotations

import re

import numpy as np
import pytest

import numbax
from numbax.backends import cpu


def _program(x, y):
    for k in range(60):  # kernels cut by weight, buffers reused between them
        x = np.sin(x) * 0.5 + y * 0.25 if k % 3 == 0 else np.tanh(x * y) - x
    return x, x.T + y  # a transposed read: a view that stays Numba's reshape


@pytest.mark.parametrize("parallel", [False, True], ids=["serial", "prange"])
def test_shaped_views_vectorise_and_store(monkeypatch, parallel):
    if parallel:
        monkeypatch.setattr(cpu, "PARALLEL_MIN_WORK", 16)
    x = np.linspace(0.0, 1.0, 64 * 64).reshape(64, 64)
    y = x[::-1].copy() * 2.0
    jitted = numbax.jit(_program, backend="cpu")
    for got, want in zip(jitted(x, y), _program(x, y), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13)
    executable = jitted.lower(x, y).compile()
    # Each loop kernel a function of its own (the transpose is a loop nest of its own).
    units = [u for u in executable.program.units if not u.name.startswith("opaque_")]
    assert units and all("shaped_view(" in unit.source for unit in units)
    if not parallel:  # the worker functions of prange loops are not in a kernel's own IR
        llvm_ir = executable.llvm_ir()
        for unit in units:
            loops = unit.source.count("for i0 in range(")
            assert loops and _vector_loops(llvm_ir, unit.name) >= loops, unit.source


def _vector_loops(llvm_ir: str, function_name: str) -> int:
    """The vectorised loop bodies in a kernel function's own IR (not its callees', not
    its CPython or C wrapper's)."""
    count, inside = 0, False
    for line in llvm_ir.splitlines():
        if line.startswith("define"):
            inside = function_name in line and "cpython" not in line and "@cfunc." not in line
        elif inside and re.match(r"vector\.body\d*:", line):
            count += 1
    return count
