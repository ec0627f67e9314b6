"""A batched matmul against one matrix broadcast over the batch is one product: no
broadcast copy of the matrix, no GEMM per batch. Values against NumPy on every backend."""

from __future__ import annotations

import numpy as np
import pytest
from passes_util import assert_same_values, kernels, optimize, trace

import numbax

rng = np.random.default_rng(15)


def doitgen(a, c4):
    r, q, p = a.shape
    return (a.reshape(r, q, 1, p) @ c4).reshape(r, q, p)


CASES = {
    "doitgen": (doitgen, (rng.standard_normal((3, 4, 5)), rng.standard_normal((5, 5)))),
    "batched_rows": (np.matmul, (rng.standard_normal((2, 3, 4, 5)), rng.standard_normal((5, 6)))),
    "vector_batch": (
        lambda a, b: np.matmul(a, np.broadcast_to(b, (3, 5, 2))),
        (rng.standard_normal((3, 4, 5)), rng.standard_normal((5, 2))),
    ),
    # A convolution's tap: the weights' window, (1, 1, C, O) squeezed and broadcast over
    # the batch, which simplify makes one broadcast from the size-1 dims.
    "window_of_weights": (
        lambda x, w: x[:, 1:3, 1:3] @ w[1, 2],
        (rng.standard_normal((2, 4, 4, 5)), rng.standard_normal((3, 3, 5, 6))),
    ),
}


@pytest.mark.parametrize("name", CASES)
def test_batch_broadcast_matmul_is_one_product(name):
    fn, args = CASES[name]
    fused, _ = optimize(fn, *args)
    assert_same_values(trace(fn, *args), fused, args, rtol=1e-12, atol=1e-12)
    (dot,) = [k for k in kernels(fused) if k.params["kind"] == "contraction"]
    matrix = args[1].shape[-2:]
    assert dot.inputs[1].aval.size == np.prod(matrix)  # the matrix itself, not broadcast
    (numbers,) = [e.params["dimension_numbers"] for e in dot.params["jaxpr"].eqns]
    assert numbers[1] == ((), ())


@pytest.mark.parametrize("name", CASES)
def test_batch_broadcast_matmul_matches_numpy(backend, name):
    fn, args = CASES[name]
    got = backend.to_host(numbax.jit(fn, backend=backend)(*args))
    np.testing.assert_allclose(got, fn(*args), rtol=1e-12, atol=1e-12)
