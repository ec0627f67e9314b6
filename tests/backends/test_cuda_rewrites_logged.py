"""The CUDA backend's rewrites of the fused program (reshape kernels dropped, narrow
matmul operands folded into their contraction, scalar kernels folded into their
readers, kernels split) are recorded on the pass log as the pass ``cuda_launch``.

Generating the program needs no GPU and no simulator (nothing is compiled), so these
run everywhere; the oracle is the fused program against the program the device runs.
"""

from __future__ import annotations

import numpy as np
import pytest

import numbax
from numbax import passes
from numbax.ir import dtypes

pytest.importorskip("numba.cuda")

from numbax.backends.cuda import CudaOptions, build_program  # noqa: E402


def lowered(fn, *args):
    fused, log = passes.optimize(numbax.make_jaxpr(fn)(*args), debug_checks=True)
    program = build_program(fused, "fn", CudaOptions.for_simulator(), log)
    (record,) = [r for r in log if r.name == "cuda_launch"]
    assert log.records[-1] is record and str(record).split()[1] == "cuda_launch"
    return fused, program, record


def kernel_inputs(eqn):
    return [a.aval.dtype for a in eqn.inputs]


def test_narrow_matmul_operands_folded_into_the_contraction(rng):
    a = rng.normal(size=(8, 16)).astype(np.float16)
    b = rng.normal(size=(16, 4)).astype(np.float16)
    fused, program, record = lowered(lambda a, b: a @ b, a, b)
    (dot,) = [e for e in program.jaxpr.eqns if e.params.get("kind") == "contraction"]
    narrow = [d for d in kernel_inputs(dot) if d == dtypes.float16]
    assert len(narrow) == 2  # both operands read as stored
    assert record.changes["widened_operands_folded"] == len(narrow)
    dropped = len(fused.jaxpr.eqns) - len(program.jaxpr.eqns)
    assert dropped > 0
    assert record.changes["widening_kernels_dropped"] == dropped
    assert (record.eqns_before, record.eqns_after) == (
        len(fused.jaxpr.eqns),
        len(program.jaxpr.eqns),
    )


def test_reshape_kernels_dropped(rng):
    x = rng.normal(size=(3, 4))
    fused, program, record = lowered(lambda x: np.exp(x).reshape(12) @ np.ones(12), x)
    reshapes = [e for e in fused.jaxpr.eqns if e.params["name"] == "reshape"]
    assert reshapes  # the matmul's operand, and its result back to a scalar
    assert record.changes["views_dropped"] == len(reshapes)
    assert not [e for e in program.jaxpr.eqns if e.params.get("name") == "reshape"]


def test_a_program_without_rewrites_records_none(rng):
    _, _, record = lowered(lambda x: np.tanh(x) * 2.0, rng.normal(size=5))
    assert not record.changed and str(record).endswith("-")
