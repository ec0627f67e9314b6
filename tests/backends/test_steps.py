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
from numbax.backends.cpu import heap, step_machine

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


def _runs_as_steps(program) -> None:
    """The program is steps, its loops among them: no launcher code of its own to
    compile, and the loops on show in the launcher the steps stand for."""
    assert program.steps and "nbx_steps.run(" in program.launcher
    assert "nbx_launch.call" not in program.launcher and "for step" not in program.launcher
    assert "for step" in program.code and "nbx_launch.call" in program.code


def test_a_loop_the_steps_cannot_express_keeps_its_compiled_launcher():
    def until_large(x):  # a trip count the data decides
        return numbax.while_loop(lambda v: v.sum() < 100.0, lambda v: np.tanh(v) + v * 2.0, x)

    def indexed(x):  # the index is a scalar the launcher computes inline
        return numbax.fori_loop(0, 3, lambda i, v: np.tanh(v) * i + v, x)

    x = RNG.random((5, 5))
    for fn in (until_large, indexed):
        program = _program(fn, x)
        assert not program.steps and (
            "while True" in program.launcher or "for step" in program.launcher
        )
        _same_as_interpreter(fn, x)


def _lstm_loss(params, xs, targets):
    w_x, w_h, b, w_out = params
    units = w_h.shape[0]

    def cell(carry, x):
        h, c = carry
        z = x @ w_x + h @ w_h + b
        gates = 1.0 / (1.0 + np.exp(-z[:, : 3 * units]))
        candidate = np.tanh(z[:, 3 * units :])
        c = gates[:, units : 2 * units] * c + gates[:, :units] * candidate
        h = gates[:, 2 * units :] * np.tanh(c)
        return (h, c), h

    zeros = np.zeros((xs.shape[1], units), xs.dtype)
    _, states = numbax.lax.scan(cell, (zeros, zeros), xs)
    error = states @ w_out - targets
    return (error * error).mean()


def _lstm_loss_numpy(params, xs, targets):
    """The same loss with a Python loop over the time steps: NumPy's answer."""
    w_x, w_h, b, w_out = params
    units = w_h.shape[0]
    h = c = np.zeros((xs.shape[1], units), xs.dtype)
    states = []
    for x in xs:
        z = x @ w_x + h @ w_h + b
        gates = 1.0 / (1.0 + np.exp(-z[:, : 3 * units]))
        c = gates[:, units : 2 * units] * c + gates[:, :units] * np.tanh(z[:, 3 * units :])
        h = gates[:, 2 * units :] * np.tanh(c)
        states.append(h)
    error = np.stack(states) @ w_out - targets
    return (error * error).mean()


def test_an_lstm_training_step_through_scan_runs_as_steps():
    n_in, units, steps, batch = 3, 4, 5, 2
    params = (
        RNG.standard_normal((n_in, 4 * units)) * 0.5,
        RNG.standard_normal((units, 4 * units)) * 0.5,
        RNG.standard_normal(4 * units) * 0.1,
        RNG.standard_normal((units, 2)) * 0.5,
    )
    xs, targets = RNG.standard_normal((steps, batch, n_in)), RNG.standard_normal((steps, batch, 2))
    step = numbax.value_and_grad(_lstm_loss)
    _runs_as_steps(_program(step, params, xs, targets))
    before = [a.copy() for a in numbax.tree_leaves((params, xs, targets))]
    loss, grads = _same_as_interpreter(step, params, xs, targets, rtol=1e-10)
    for a, b in zip(numbax.tree_leaves((params, xs, targets)), before, strict=True):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(loss, _lstm_loss_numpy(params, xs, targets), rtol=1e-12)
    # The gradient along a random direction: central finite differences of NumPy's loss.
    direction = [RNG.standard_normal(p.shape) for p in params]
    eps = 1e-6
    shifted = [
        _lstm_loss_numpy(
            tuple(p + sign * eps * d for p, d in zip(params, direction, strict=True)), xs, targets
        )
        for sign in (1, -1)
    ]
    along = sum(float(np.sum(g * d)) for g, d in zip(grads, direction, strict=True))
    np.testing.assert_allclose(along, (shifted[0] - shifted[1]) / (2 * eps), rtol=1e-6)


def test_a_reversed_scan_reads_and_writes_its_rows_backwards():
    def backwards(c, xs):
        def body(carry, x):
            new = np.tanh(carry * x) + 0.5
            return new, new * 2.0 - carry

        return numbax.scan(body, c, xs, reverse=True)

    c, xs = RNG.random((3, 4)), RNG.random((5, 3, 4))
    _runs_as_steps(_program(backwards, c, xs))
    final, ys = _same_as_interpreter(backwards, c, xs)
    carry, want = c, np.empty_like(xs)
    for k in reversed(range(len(xs))):
        new = np.tanh(carry * xs[k]) + 0.5
        want[k], carry = new * 2.0 - carry, new
    np.testing.assert_allclose(ys, want, rtol=1e-12)
    np.testing.assert_allclose(final, carry, rtol=1e-12)


def test_a_fori_loop_with_carries_swapped_and_passed_through():
    def swapping(a, b, w):
        def body(i, carries):
            x, y, kept = carries
            return np.tanh(y @ w), x, kept  # y takes x's memory, which x's update writes

        return numbax.fori_loop(0, 5, body, (a, b, a * 3.0))

    a, b, w = RNG.random((4, 4)), RNG.random((4, 4)), RNG.random((4, 4))
    _runs_as_steps(_program(swapping, a, b, w))
    got = _same_as_interpreter(swapping, a, b, w)
    x, y = a, b
    for _ in range(5):
        x, y = np.tanh(y @ w), x
    np.testing.assert_allclose(got[0], x, rtol=1e-12)
    np.testing.assert_allclose(got[1], y, rtol=1e-12)
    np.testing.assert_allclose(got[2], a * 3.0, rtol=1e-12)


def test_a_scan_over_an_arguments_memory_leaves_the_argument_unchanged():
    def updated(x, xs):
        def body(carry, row):
            # The ys read the incoming carry, updated in place by the body.
            return carry.at[0].set(carry[0] * 0.5 + row), carry[1] * 1.0

        return numbax.scan(body, x, xs)

    x, xs = RNG.random((3, 4)), RNG.random((6, 4))
    program = _program(updated, x, xs)
    _runs_as_steps(program)
    kept = x.copy(), xs.copy()
    final, ys = _same_as_interpreter(updated, x, xs)
    np.testing.assert_array_equal(x, kept[0])
    np.testing.assert_array_equal(xs, kept[1])
    carry, want = x.copy(), np.empty((6, 4))
    for k, row in enumerate(xs):
        want[k] = carry[1]
        carry[0] = carry[0] * 0.5 + row
    np.testing.assert_allclose(final, carry, rtol=1e-12)
    np.testing.assert_allclose(ys, want, rtol=1e-12)
    # Each result is memory of its own: writing one changes no other, nor an argument.
    results = numbax.jit(updated, tiered=False)(x, xs)
    for k, result in enumerate(results):
        assert not np.shares_memory(result, x) and not np.shares_memory(result, xs)
        result[...] = k
    assert all(np.all(r == k) for k, r in enumerate(results))
    np.testing.assert_array_equal(x, kept[0])


def test_a_scan_inside_a_loop_runs_as_nested_steps():
    def nested(c, xs):
        def outer(i, carry):
            carry, ys = numbax.scan(lambda h, x: (np.tanh(h + x), h * x), carry, xs)
            return carry + ys.sum(axis=0)

        return numbax.fori_loop(0, 3, outer, c)

    c, xs = RNG.random((2, 3)), RNG.random((4, 2, 3))
    _runs_as_steps(_program(nested, c, xs))
    got = _same_as_interpreter(nested, c, xs)
    carry = c
    for _ in range(3):
        h, total = carry, 0.0
        for x in xs:
            h, total = np.tanh(h + x), total + h * x
        carry = h + total
    np.testing.assert_allclose(got, carry, rtol=1e-12)


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


def test_a_program_of_steps_compiles_no_launcher_and_converts_arguments_it_cannot_read():
    """The launcher of a program of steps is ``step_machine.StepLauncher``: nothing to
    compile. An argument the machine cannot read where it lies (a view with strides, a
    read-only array, another dtype, a list) is converted first, as a compiled launcher's
    would be, and the result is the same."""
    params, x, labels = _mlp_inputs()
    step = numbax.jit(numbax.value_and_grad(_mlp_loss), tiered=False)
    executable = step.lower(params, x, labels).compile()
    assert executable.compile_stats.cache == "none"
    assert "launcher of steps: none to compile" in str(executable.compile_stats)
    assert executable.compile_stats.llvm_s is None
    want = numbax.jit(numbax.value_and_grad(_mlp_loss), backend="interpret")(params, x, labels)
    wide = np.zeros((8, 24), np.float32)
    wide[:, ::2] = x
    read_only = x.copy()
    read_only.flags.writeable = False
    # An equal dtype that is another object (metadata): the entry's quick check of the
    # descriptor fails, NumPy's comparison passes, and it runs as it is.
    same = np.array(x, dtype=np.dtype(np.float32, metadata={"unit": "pixel"}))
    for other in (wide[:, ::2], read_only, x.astype(np.float64), x.tolist(), same):
        got = step(params, other, labels)
        for g, w in zip(numbax.tree_leaves(got), numbax.tree_leaves(want), strict=True):
            np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=2e-5, atol=2e-5)
    assert executable.llvm_ir() and executable.asm()  # the kernels' code, on show


def test_a_large_arena_is_kept_for_the_next_call_and_never_returned(monkeypatch):
    """An arena of ``heap.MMAP_THRESHOLD_BYTES`` or more (here every arena) is the next
    call's: the same memory, no result in it, every call's results the interpreter's, and
    the first call's results unchanged by the second."""
    monkeypatch.setattr(heap, "MMAP_THRESHOLD_BYTES", 0)
    made = []

    class Recording(step_machine.StepLauncher):
        def __init__(self, plan):
            super().__init__(plan)
            made.append(self)

    monkeypatch.setattr(step_machine, "StepLauncher", Recording)
    params, x, labels = _mlp_inputs()
    x, labels = x[:7] * 1.5, labels[:7]  # a shape no other test compiles
    step = numbax.jit(numbax.value_and_grad(_mlp_loss), tiered=False)
    reference = numbax.jit(numbax.value_and_grad(_mlp_loss), backend="interpret")
    first = step(params, x, labels)
    (launcher,) = made
    (arena,) = launcher._spare
    second = step(params, 2.0 * x, labels)
    assert len(launcher._spare) == 1 and launcher._spare[0] is arena
    for got, args in ((first, (params, x, labels)), (second, (params, 2.0 * x, labels))):
        for g, w in zip(numbax.tree_leaves(got), numbax.tree_leaves(reference(*args)), strict=True):
            np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=2e-5, atol=2e-5)
            assert not np.shares_memory(np.asarray(g), arena)
