"""A kernel a backend cannot write runs split into kernels of one op each
(``passes.kernels.split_into_ops``), on every backend that generates code, whatever its
body returns: a value it makes, its input, a value at a second position, a literal.
The interpreter is the oracle. The cuda case needs Numba's CUDA simulator
(``NUMBA_ENABLE_CUDASIM=1``) or ``NUMBAX_TEST_GPU=1`` on a GPU machine."""

from __future__ import annotations

import numpy as np
import pytest
import switches
from kernel_programs import across_rows

from numbax.backends import get_backend
from numbax.config import cuda_simulator
from numbax.ir.core import ClosedJaxpr, Literal
from numbax.ir.interpret import eval_jaxpr

RETURNS = {
    "made": lambda x, out: [out],
    "input": lambda x, out: [out, x],
    "twice": lambda x, out: [out, out],
    "literal": lambda x, out: [out, Literal(2.5, np.float32)],
}


def run_cpu(closed: ClosedJaxpr, data):
    return get_backend("cpu").compile(closed, "across_rows", optimize=False)(data)


def run_cuda(closed: ClosedJaxpr, data):
    if not (cuda_simulator() or switches.flag("NUMBAX_TEST_GPU")):
        pytest.skip("needs NUMBA_ENABLE_CUDASIM=1 (or NUMBAX_TEST_GPU=1 on a GPU machine)")
    from numbax.backends.cuda import CudaExecutable, CudaOptions, build_program

    program = build_program(closed, "across_rows", CudaOptions.default())
    return [np.asarray(result) for result in CudaExecutable(program)(data)]


@pytest.mark.parametrize("run", [run_cpu, run_cuda], ids=["cpu", "cuda"])
@pytest.mark.parametrize("returns", RETURNS.values(), ids=RETURNS.keys())
def test_a_kernel_beyond_the_writers_runs_split_whatever_it_returns(run, returns):
    closed = across_rows(returns)
    data = np.arange(9, dtype=np.float32).reshape(3, 3)
    want = eval_jaxpr(closed.jaxpr, [], data)
    got = run(closed, data)
    assert len(got) == len(want)
    for result, expected in zip(got, want, strict=True):
        np.testing.assert_allclose(result, expected, rtol=1e-6)
