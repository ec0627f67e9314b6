"""Column reductions (the reduced dims first, the kept ones inner: a bias gradient over a
batch of images) on the cpu backend, against the interpreter: a large one splits its
reduced loop into chunks run in parallel, and an output that is also the reduction's
operand is computed once, by the pass that sums it."""

from __future__ import annotations

import re

import numpy as np

import numbax
from numbax.backends import cpu
from numbax.backends.cpu import reductions


def _relu_gradient_and_bias_gradient(upstream, positive, zero):
    """A relu's backward (the half-gradient at zero, as JAX's) and its bias gradient:
    the output ``g`` is the operand of the column sum."""
    g = upstream * (positive.astype(np.float32) + 0.5 * zero.astype(np.float32))
    return g, g.sum(axis=(0, 1, 2))


def _inputs(rng, shape=(6, 7, 9, 5)):
    upstream = rng.standard_normal(shape).astype(np.float32)
    pre = rng.integers(-2, 3, shape)
    return upstream, pre > 0, pre == 0


def _reduction_kernel(source: str) -> str:
    (kernel,) = re.findall(r"# --- kernel reduction_.*?(?=# --- kernel|\Z)", source, re.S)
    return kernel


def _check(program, args):
    want = numbax.jit(program, backend="interpret")(*args)
    jitted = numbax.jit(program, backend="cpu")
    for got, expected in zip(jitted(*args), want, strict=True):
        np.testing.assert_allclose(got, expected, rtol=2e-5, atol=2e-5)
    return jitted.lower(*args).source()


def test_a_large_column_sum_runs_in_chunks_and_computes_its_operand_once(monkeypatch, rng):
    monkeypatch.setattr(cpu, "PARALLEL_MIN_WORK", 16)
    kernel = _reduction_kernel(_check(_relu_gradient_and_bias_gradient, _inputs(rng)))
    chunks = reductions.REDUCTION_CHUNKS
    assert f"in prange({chunks}):" in kernel and f"in range({chunks}):" in kernel, kernel
    # Each eqn's line once: the operand stored where it is summed, no second loop nest.
    for eqn, count in (("= mul", 2), ("= add", 1), ("= convert_element_type", 2)):
        assert kernel.count(eqn) == count, (eqn, kernel)


def test_a_small_column_sum_is_one_serial_pass(rng):
    kernel = _reduction_kernel(_check(_relu_gradient_and_bias_gradient, _inputs(rng, (2, 3, 4, 5))))
    assert "prange" not in kernel.split("SIGNATURE")[1], kernel
    assert kernel.count("= add") == 1, kernel


def test_chunked_column_reductions_of_every_kind(monkeypatch, rng):
    """Sums, maxima and first-maximum positions over a leading axis of 40 (16 chunks of
    3, the last empty) combine their chunks in order: argmax keeps the first of equal
    maxima and the first NaN."""
    monkeypatch.setattr(cpu, "PARALLEL_MIN_WORK", 16)
    x = rng.integers(0, 4, (40, 3, 4)).astype(np.float32)
    x[25, 1, 2] = np.nan

    def program(x):
        return x.sum(axis=0), x.max(axis=(0, 1)), np.argmax(x, axis=0), (x > 2).any(axis=0)

    kernel_sources = _check(program, (x,))
    assert f"in prange({reductions.REDUCTION_CHUNKS}):" in kernel_sources
