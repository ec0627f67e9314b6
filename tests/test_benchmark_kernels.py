"""The benchmark kernels agree with NumPy: numbax on each backend, JAX, the Numba loops.

Each kernel of `benchmarks/kernels.py` at its quick (tiny) size, checked as the suite checks
it: against the kernel's source run eagerly by NumPy, with the workload's tolerances.
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

import numbax
import numbax.numpy as xnp
from benchmarks.__main__ import parse_args
from benchmarks.implementation import bind, first_calls
from benchmarks.kernel_workloads import (
    FIRST_CALL,
    KERNELS,
    NUMPY_IN_PLACE,
    kernel_workload,
)
from benchmarks.kernels import library_loops

NAMES = list(KERNELS)


def _workload(name: str):
    return kernel_workload(name, "quick", np.random.default_rng(0))


def _numbax_kernel(workload):
    return bind(workload.program, xnp, library_loops(numbax.fori_loop, numbax.scan))


@pytest.mark.parametrize("name", NAMES)
def test_numbax_matches_numpy(name, backend):
    if backend.simulated:
        pytest.skip("the loop-heavy kernels are too slow for the CUDA simulator")
    workload = _workload(name)
    result = numbax.jit(_numbax_kernel(workload), backend=backend)(*workload.inputs)
    workload.check(backend.to_host(result), workload.reference())


@pytest.mark.parametrize("name", NAMES)
def test_numba_loop_matches_numpy(name):
    workload = _workload(name)
    workload.check(workload.by_hand(*workload.inputs), workload.reference())


@pytest.mark.skipif(importlib.util.find_spec("jax") is None, reason="jax is not installed")
@pytest.mark.parametrize("name", NAMES)
def test_jax_matches_numpy(name):
    if name in NUMPY_IN_PLACE:
        pytest.skip("in-place NumPy: JAX's arrays are immutable")
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)
    workload = _workload(name)
    kernel = bind(workload.program, jnp, library_loops(jax.lax.fori_loop, jax.lax.scan))
    result = jax.tree_util.tree_map(np.asarray, jax.jit(kernel)(*workload.inputs))
    workload.check(result, workload.reference())


def test_first_calls_compile_a_new_instance_each_call():
    workload = _workload("floyd_warshall")
    names = []

    def recording_jit(function):
        names.append(function.__name__)
        return numbax.jit(function, backend="interpret")

    call = first_calls(_numbax_kernel(workload), recording_jit)
    expected = workload.reference()
    for _ in range(2):
        workload.check(call(*workload.inputs), expected)
    assert names == ["floyd_warshall_0", "floyd_warshall_1"]


def test_the_compiled_first_call_row_finds_nothing_compiled_before(tmp_path, monkeypatch):
    """Time to compiled code (issue #34): each call compiles every kernel again, none
    from memory, none from a disk cache, and waits for them."""
    pytest.importorskip("numba")
    from benchmarks.peers import NumbaxPeer
    from numbax.backends.cpu import units
    from numbax.config import config

    monkeypatch.setattr(config, "compile_workers", 0)
    workload = _workload("jacobi_2d")
    call = NumbaxPeer("cpu", str(tmp_path)).compiled_first_calls(_numbax_kernel(workload))
    expected = workload.reference()
    for _ in range(2):
        before = units.COUNTS.copy()
        workload.check(call(*workload.inputs), expected)
        counts = units.COUNTS - before
        assert counts["compiled"] >= 1 and not counts["memory"] and not counts["disk"]


def test_kernels_are_a_group_of_their_own():
    default = parse_args(["--backend", "interpret"]).names
    kernels = parse_args(["--backend", "interpret", "--group", "kernels"]).names
    assert not set(default) & set(kernels)
    assert kernels == [n for name in NAMES for n in (name, name + FIRST_CALL)]
    only = parse_args(["--backend", "interpret", "--only", "lu,chain"]).names
    assert only == ["lu", "chain"]
