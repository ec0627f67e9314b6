"""A program of kernel calls run as steps (``backends/cpu/steps.py``): the launcher that
remains allocates the outputs and one arena, and a machine compiled once runs the calls.
Every result is checked against the reference interpreter and NumPy, and the results
against each other and the arguments."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import numbax
from numbax.backends import cpu

pytest.importorskip("numba")

RNG = np.random.default_rng(7)


def _program(fn, *args):
    return cpu.backend.lower(numbax.make_jaxpr(fn)(*args), fn.__name__)


def _same_as_interpreter(fn, *args, rtol=1e-6):
    got = numbax.jit(fn, backend="cpu", tiered=False)(*args)
    want = numbax.jit(fn, backend="interpret")(*args)
    for g, w in zip(numbax.tree_leaves(got), numbax.tree_leaves(want), strict=True):
        assert np.asarray(g).shape == np.asarray(w).shape
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=rtol, atol=rtol)
    return got


def _mlp_loss(params, x, labels):
    (w1, b1), (w2, b2) = params
    h = np.tanh(x @ w1 + b1)
    logits = h @ w2 + b2
    logits = logits - logits.max(axis=1, keepdims=True)
    log_probs = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
    return -np.take_along_axis(log_probs, labels[:, None], axis=1).mean()


def _mlp_inputs():
    params = (
        (RNG.standard_normal((12, 16)).astype(np.float32), np.zeros(16, np.float32)),
        (RNG.standard_normal((16, 5)).astype(np.float32), np.zeros(5, np.float32)),
    )
    x = RNG.standard_normal((8, 12)).astype(np.float32)
    labels = RNG.integers(0, 5, 8).astype(np.int32)
    return params, x, labels


def test_a_training_step_runs_as_steps_and_matches_the_interpreter():
    params, x, labels = _mlp_inputs()
    step = numbax.value_and_grad(_mlp_loss)
    program = _program(step, params, x, labels)
    assert program.steps and "nbx_steps.run(" in program.launcher
    assert "nbx_launch.call" not in program.launcher  # no call of its own to compile
    assert "nbx_launch.call" in program.code  # what the steps stand for, on show
    before = [a.copy() for a in numbax.tree_leaves((params, x, labels))]
    loss, grads = _same_as_interpreter(step, params, x, labels, rtol=2e-5)
    for a, b in zip(numbax.tree_leaves((params, x, labels)), before, strict=True):
        np.testing.assert_array_equal(a, b)  # the arguments are unchanged
    # Each result is memory of its own: writing one changes no other, nor an argument.
    leaves = numbax.tree_leaves(grads)
    for k, g in enumerate(leaves):
        g[...] = k
        assert not np.shares_memory(g, x)
        assert not any(np.shares_memory(g, p) for p in numbax.tree_leaves(params))
    assert all(np.all(g == k) for k, g in enumerate(leaves))
    assert np.isfinite(loss)


def test_a_scalar_a_kernel_returns_is_read_by_the_next_through_the_arena():
    def normalised(x):
        total = x.sum()  # a scalar returned by its kernel
        return x / total, total * 2.0

    x = RNG.random((6, 5)) + 0.5
    program = _program(normalised, x)
    assert program.steps
    y, doubled = _same_as_interpreter(normalised, x)
    np.testing.assert_allclose(y, x / x.sum(), rtol=1e-12)
    assert np.asarray(doubled).shape == () and np.isclose(doubled, 2 * x.sum())


def test_an_output_that_is_an_argument_or_another_output_is_copied_by_a_step():
    def passthrough(x, y):
        t = np.tanh(y) * 2.0
        return x, t, y.reshape(-1), t.reshape(-1), t, t.reshape(5, 4)[1:]

    x, y = RNG.random((3, 4)), RNG.random((4, 5))
    program = _program(passthrough, x, y)
    assert program.steps
    got = _same_as_interpreter(passthrough, x, y)
    assert not np.shares_memory(got[0], x) and not np.shares_memory(got[2], y)
    assert not any(np.shares_memory(a, b) for k, a in enumerate(got) for b in got[k + 1 :])
    np.testing.assert_array_equal(got[0], x)
    np.testing.assert_array_equal(got[2], y.reshape(-1))


def test_data_movement_and_updates_are_units_the_steps_call():
    def moves(x, i):
        t = x.T * 1.5
        p = np.pad(x, ((1, 1), (0, 2)))
        u = x * 1.0
        u[1:3, :4] = t[:2, :4]  # an update of an intermediate
        rows = np.take(x, np.array([3, 0, 2]), axis=0)
        return t, p, u, rows, numbax.lax.dynamic_slice(x, (i, 1), (2, 4)), x[1:3]

    x = RNG.random((4, 6)).astype(np.float32)
    program = _program(moves, x, 1)
    assert program.steps, program.code
    assert any(unit.name.startswith("opaque_") for unit in program.units)
    _same_as_interpreter(moves, x, 1)


def test_a_program_with_a_loop_keeps_its_compiled_launcher():
    def looped(x):
        return numbax.fori_loop(0, 3, lambda i, v: np.tanh(v) + 1.0, x)

    x = RNG.random((5, 5))
    program = _program(looped, x)
    assert not program.steps and "for step" in program.launcher
    _same_as_interpreter(looped, x)


def test_concurrent_calls_each_have_an_arena_of_their_own():
    params, x, labels = _mlp_inputs()
    step = numbax.jit(numbax.value_and_grad(_mlp_loss), tiered=False)
    inputs = [(params, x * k, labels) for k in (0.5, 1.0, 2.0, 3.0)]
    want = [step(*args) for args in inputs]
    got, errors = {}, []

    def work(k):
        try:
            for _ in range(20):
                got[k] = step(*inputs[k])
                pairs = zip(numbax.tree_leaves(got[k]), numbax.tree_leaves(want[k]), strict=True)
                for g, w in pairs:
                    np.testing.assert_array_equal(g, w)
        except AssertionError as error:
            errors.append(error)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors[0]


def test_a_large_output_is_written_into_the_pooled_array():
    def doubled(x):
        return np.tanh(x) * 2.0

    x = np.linspace(-1.0, 1.0, 1 << 23, dtype=np.float32)  # 32 MiB: a pooled output
    program = _program(doubled, x)
    assert program.steps and program.pooled == [0]
    f = numbax.jit(doubled, tiered=False)
    first = f(x)
    np.testing.assert_allclose(first, np.tanh(x) * 2.0, rtol=1e-6, atol=1e-6)
    del first
    np.testing.assert_allclose(f(x), np.tanh(x) * 2.0, rtol=1e-6, atol=1e-6)
