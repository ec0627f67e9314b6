"""The differential fuzzer: random NumPy programs under ``jit`` on every backend give
NumPy's answer, and their derivatives under ``jit`` give the reference interpreter's.

Programs come from ``tests/random_programs.py``: multi-output, matmul epilogues read by
several consumers, NaN/inf/-0.0 inputs, size-0 and size-1 dimensions, float32 and
float64. The default run is small; ``NUMBAX_FUZZ_EXAMPLES=N`` draws N programs per test
and backend (thousands for a soak run; Hypothesis prints the failing program's draws).
``NUMBAX_FUZZ_WIDE=1`` draws rows of up to 257 elements too and runs every cpu kernel on
all cores, so the loops of long rows and the parallel kernels are fuzzed.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from random_programs import WIDE, Choices, inputs, program

import numbax
from numbax.backends import cpu

EXAMPLES = int(os.environ.get("NUMBAX_FUZZ_EXAMPLES", "6"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,  # a soak run's failures are printed, not replayed by the next run
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.function_scoped_fixture,
    ],
)


@pytest.fixture(autouse=True)
def _parallel_kernels_when_wide(monkeypatch):
    if WIDE:
        monkeypatch.setattr(cpu, "PARALLEL_MIN_WORK", 16)


# Sums reassociate (vectorised and blocked accumulation); nothing else may differ.
TOLERANCE = {np.dtype(np.float64): 1e-9, np.dtype(np.float32): 2e-4}


def _draw_program(data):
    """A recorded program, its inputs, and how it runs again the same way."""
    dtype = np.dtype(data.draw(st.sampled_from([np.float64, np.float32]), label="dtype"))
    arrays = inputs(data, dtype, edge_shapes=data.draw(st.booleans(), label="edges"))
    choices = Choices(data)
    run = program(choices, data.draw(st.integers(1, 8), label="steps"), max_outputs=3)

    def replayed(*args):
        choices.replay()
        return run(*args)

    with np.errstate(all="ignore"):
        expected = run(*arrays)  # records the draws
    return replayed, arrays, expected, dtype


def _assert_matches(got, expected, dtype, backend):
    got = backend.to_host(got)
    assert len(got) == len(expected)
    for index, (value, want) in enumerate(zip(got, expected, strict=True)):
        value, want = np.asarray(value), np.asarray(want)
        assert value.shape == want.shape, (index, value.shape, want.shape)
        assert value.dtype == want.dtype, (index, value.dtype, want.dtype)
        tolerance = TOLERANCE[dtype]
        np.testing.assert_allclose(
            value, want, rtol=tolerance, atol=tolerance, equal_nan=True, err_msg=f"output {index}"
        )


@FUZZ
@given(data=st.data())
def test_random_programs_equal_numpy(backend, data):
    replayed, arrays, expected, dtype = _draw_program(data)
    with np.errstate(all="ignore"):
        got = numbax.jit(replayed, backend=backend)(*arrays)
    _assert_matches(got, expected, dtype, backend)


@FUZZ
@given(data=st.data())
def test_random_program_gradients_equal_the_interpreter(compiled_backend, data):
    """``jit(grad)`` and ``grad(jit)`` on a compiled backend against ``grad`` evaluated
    eagerly by the reference implementations, for a loss reading every output."""
    replayed, arrays, expected, dtype = _draw_program(data)
    rng = np.random.default_rng(len(arrays))
    weights = [rng.standard_normal(np.shape(out)).astype(dtype) for out in expected]

    def loss(*args):
        outputs = replayed(*args)
        return sum(np.sum(out * w) for out, w in zip(outputs, weights, strict=True))

    argnums = tuple(range(len(arrays)))
    with np.errstate(all="ignore"):
        want = numbax.grad(loss, argnums=argnums)(*arrays)
        staged = numbax.jit(numbax.grad(loss, argnums=argnums), backend=compiled_backend)
        through = numbax.grad(numbax.jit(loss, backend=compiled_backend), argnums=argnums)
        for got in (staged(*arrays), through(*arrays)):
            _assert_matches(got, want, dtype, compiled_backend)
