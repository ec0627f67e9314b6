"""The memory plan's in-place updates: which ``dynamic_update_slice``/``scatter`` eqns
write into their operand's memory (``Liveness.in_place``), why the others may not
(``Liveness.update_refusal``), which carries a loop owns (``loop_ownership``), and that a
plan with its updates in place computes what the interpreter does."""

from __future__ import annotations

import numpy as np
import pytest
from passes_util import evaluate, optimize
from test_memory import run_in_planned_buffers

import numbax
from numbax.ir.core import Var
from numbax.passes import plan_memory
from numbax.passes.memory import Liveness, updated_operand

rng = np.random.default_rng(3)


def updates(liveness: Liveness) -> list[int]:
    return [k for k, eqn in enumerate(liveness.eqns) if updated_operand(eqn) is not None]


def refusals(fn, *args) -> list[str | None]:
    fused, _ = optimize(fn, *args)
    liveness = Liveness(fused)
    return [liveness.update_refusal(k) for k in updates(liveness)]


def chain(x):
    y = np.tanh(x)
    y = y.at[1:3].set(y[0:2] * 2.0)
    y = y.at[0].add(1.0)
    return y.at[np.array([4, 1])].set(-1.0) * 3.0


def read_later(x):
    y = np.tanh(x)
    return y.at[1:3].set(0.0) + y


def of_an_input(x):
    return x.at[0].set(1.0)


def view_outlives(x):
    y = np.tanh(x).reshape(2, 3)
    return y.reshape(6).at[0].set(5.0), y


def operand_twice(x):
    y = np.tanh(x)
    return y.at[np.array([4, 3, 2, 1, 0])].set(y)


def test_updates_of_a_dying_intermediate_are_in_place():
    assert refusals(chain, rng.standard_normal(5)) == [None, None, None]


@pytest.mark.parametrize(
    "fn, reason",
    [
        (read_later, "reads the operand after the update"),
        (of_an_input, "the operand is the caller's array"),
        (view_outlives, "a value sharing the operand's memory is the caller's"),
        (operand_twice, "the update reads the operand as another operand"),
    ],
)
def test_an_update_that_could_be_read_through_is_refused(fn, reason):
    (refusal,) = refusals(fn, rng.standard_normal(6 if fn is view_outlives else 5))
    assert refusal is not None and reason in refusal, refusal


def test_an_update_in_place_keeps_its_operands_buffer_until_it_dies():
    x = rng.standard_normal(5)
    fused, _ = optimize(lambda v: np.tanh(chain(v)) + 1.0, x)
    plan = plan_memory(fused)
    assert len(plan.in_place) == 3
    for out, operand in plan.in_place.items():
        if operand in plan.buffer_of:
            assert plan.buffer_of[out] == plan.buffer_of[operand]
    # Every value written into its planned buffer (an update over its operand's) still
    # computes the interpreter's answer: nothing reads a buffer after it is overwritten.
    for got, want in zip(run_in_planned_buffers(fused, plan, x), evaluate(fused, x), strict=True):
        np.testing.assert_array_equal(got, want)


def test_the_plan_hands_on_no_buffer_an_update_result_still_holds():
    def fn(x):
        y = np.tanh(x)
        z = y.at[0].set(2.0)  # in y's buffer from here on
        w = np.exp(x) * 2.0  # must not take that buffer: z is read below
        return (z * w).sum(), w

    x = rng.standard_normal(5)
    fused, _ = optimize(fn, x)
    plan = plan_memory(fused)
    assert plan.in_place
    for got, want in zip(run_in_planned_buffers(fused, plan, x), evaluate(fused, x), strict=True):
        np.testing.assert_allclose(got, want)


# --- loops ------------------------------------------------------------------------------


def ownership(fn, *args):
    fused, _ = optimize(fn, *args)
    liveness = Liveness(fused)
    ((_, loop),) = liveness.loops.items()
    return loop


def swap(a, b):
    def body(i, grids):
        src, dst = grids
        return dst.at[1:-1].set(src[2:] + src[:-2]), src

    return numbax.fori_loop(0, 4, body, (a, b))


def test_the_double_buffer_owns_both_carries_and_copies_the_callers_arrays_once():
    loop = ownership(swap, rng.standard_normal(6), rng.standard_normal(6))
    assert loop.owned == loop.reaching == loop.copied == frozenset({0, 1})
    assert len(loop.body.in_place) == 1


def test_a_loop_over_dying_intermediates_copies_nothing():
    loop = ownership(lambda a, b: swap(np.tanh(a), np.tanh(b)), np.ones(6), np.ones(6))
    assert loop.reaching == frozenset({0, 1}) and not loop.copied


def test_an_initial_value_read_after_the_loop_is_copied():
    def fn(a, b):
        a, b = np.tanh(a), np.tanh(b)
        return swap(a, b), b

    loop = ownership(fn, np.ones(6), np.ones(6))
    assert loop.copied == frozenset({1})


def test_carries_sharing_memory_are_not_owned():
    def body(i, carries):
        a, _ = carries
        a = a.at[i].add(1.0)
        return a, a

    loop = ownership(lambda x: numbax.fori_loop(0, 3, body, (np.tanh(x), x)), np.ones(4))
    assert not loop.reaching and not loop.body.in_place


def test_a_carry_that_becomes_a_const_is_not_owned():
    def fn(x, c):
        def body(i, a):
            return a.at[i].set(1.0) + c[i] * 0.0, c

        return numbax.fori_loop(0, 3, lambda i, ac: body(i, ac[0]), (np.tanh(x), x))

    loop = ownership(fn, np.ones(4), np.ones(4))  # carries: the counter, a, then c
    assert 2 not in loop.owned and loop.reaching == frozenset({1})


def test_a_while_loop_copies_only_the_carry_it_writes():
    """A while body that updates its second carry only: the counter is never copied."""

    def fn(x):
        def cond(carry):
            return carry[0] < 3

        def body(carry):
            i, a = carry
            return i + 1, a.at[i].set(0.0)

        return numbax.while_loop(cond, body, (0, x))

    loop = ownership(fn, np.ones(4))
    assert loop.reaching == loop.copied == frozenset({1})
    (operand,) = loop.body.in_place.values()
    assert operand not in loop.body.callers


def loop_outputs_memory(fn, *args):
    """``fn``'s fused program and, per output of its one loop, the values
    made before the loop whose memory the output may share (the loop's operands')."""
    fused, _ = optimize(fn, *args)
    liveness = Liveness(fused)
    ((index, _),) = liveness.loops.items()
    loop = liveness.eqns[index]
    before = {v for eqn in liveness.eqns[:index] for v in eqn.outputs} | set(fused.jaxpr.invars)
    shared = [
        {v for v in before if liveness.storage[v] & liveness.storage[out]} for out in loop.outputs
    ]
    return fused, shared


def test_a_copied_carrys_final_value_shares_no_memory_with_its_initial_value():
    # ``x`` is the caller's: the loop copies it before writing it in place.
    def fn(x):
        return numbax.fori_loop(0, 3, lambda i, a: a.at[i].set(a[i] * 2.0), x)

    _, shared = loop_outputs_memory(fn, np.ones(4))
    assert shared == [set(), set()]  # the counter, then the array


def test_loop_outputs_share_what_their_values_may_be():
    """Swapped carries each may end as the other's initial value; a carry returned from
    a const is the const's memory; ys are new arrays."""

    def fn(a, b, c):
        def step(carry, _):
            p, q, r = carry
            return (q, p, c[1:]), np.sin(p)

        return numbax.scan(step, (a, b, c[:3]), None, length=3)

    fused, (p, q, r, ys) = loop_outputs_memory(fn, np.ones(3), np.ones(3), np.ones(4))
    a, b, c = fused.jaxpr.invars
    assert p == q == {a, b}
    assert c in r and not r & {a, b}
    assert ys == set()


def assert_no_buffer_overwritten_while_read(fused, plan):
    """A value takes a buffer only once every reader of the buffer's previous memory has
    run, counting views of it and updates written into it."""
    liveness = Liveness(fused)
    first_owner: dict[int, Var] = {}  # buffer -> the value whose memory it holds now
    for index, eqn in enumerate(liveness.eqns):
        for var in eqn.outputs:
            buffer = plan.buffer_of.get(var)
            if buffer is None or var in plan.in_place:
                continue
            if buffer in first_owner:
                assert liveness.release(first_owner[buffer]) < index, (var, buffer)
            first_owner[buffer] = var


def test_a_view_of_an_update_in_place_keeps_the_buffer_until_it_is_read():
    """The gradient of ``take_along_axis`` scatters into zeros in place, then reshapes the
    result (a view on the CPU): the next kernel must not take that buffer."""
    w = rng.standard_normal((4, 5)).astype(np.float32)
    x = rng.standard_normal((3, 4)).astype(np.float32)
    labels = np.array([0, 4, 2])

    def loss(w, x, labels):
        logits = x @ w
        log_probs = logits - numbax.nn.logsumexp(logits, axis=-1, keepdims=True)
        return -np.mean(np.take_along_axis(log_probs, labels[:, None], axis=1))

    fused, _ = optimize(numbax.grad(loss), w, x, labels)
    plan = plan_memory(fused)
    assert plan.in_place
    assert_no_buffer_overwritten_while_read(fused, plan)
    for got, want in zip(
        run_in_planned_buffers(fused, plan, w, x, labels),
        evaluate(fused, w, x, labels),
        strict=True,
    ):
        np.testing.assert_allclose(got, want, rtol=1e-5)


# --- window stores ------------------------------------------------------------------------


def window_store_refusals(fn, *args) -> list[str | None]:
    """Per update of ``fn`` (the program's, then each loop body's), why its loop kernel
    may not store the update straight into the operand's window."""
    fused, _ = optimize(fn, *args)
    liveness = Liveness(fused)
    programs = [liveness, *(loop.body for loop in liveness.loops.values())]
    return [p.window_store_refusal(k) for p in programs for k in updates(p)]


def in_a_loop(update):
    """``update(a, b)`` as the body of a loop over carries ``(a, b)`` it owns."""
    body = lambda i, grids: (update(*grids), grids[1])  # noqa: E731
    return lambda a, b: numbax.fori_loop(0, 3, body, (np.tanh(a), np.tanh(b)))


@pytest.mark.parametrize(
    "update, reason",
    [
        (lambda a, b: a.at[1:-1].set(b[2:] + b[:-2]), None),  # Jacobi's double buffer
        (lambda a, b: a.at[1:].set(a[1:] * 2.0 + b[1:]), None),  # read where written
        (lambda a, b: a.at[1:-1].set(a[2:] + a[:-2]), "another window than it writes"),
        (lambda a, b: a.at[1:].set(a[:-1] * 2.0), "another window than it writes"),
        (lambda a, b: a.at[1:3].set(b[1:3] * a[1:2]), "another window than it writes"),
        (lambda a, b: a.at[1].set(a[1] * 2.0 + b[1]), None),  # a row, through unit moves
    ],
)
def test_a_kernel_stores_into_a_window_unless_it_reads_other_points_of_it(update, reason):
    (refusal,) = window_store_refusals(in_a_loop(update), rng.random(6), rng.random(6))
    assert refusal == reason if reason is None else reason in refusal, refusal


def dies_at_the_update(x, w):
    y = np.tanh(x)
    return y.at[1:3].set(np.sin(w) * 2.0)


def read_before_the_update(x, w):
    y = np.tanh(x)
    v = np.sin(w) * 2.0
    read = np.concatenate([y, np.cos(w)])  # after v's kernel, which makes the cos
    return y.at[1:3].set(v), read


def made_after_the_kernel(x, w):
    destination = np.concatenate([np.cos(w), x[2:]])  # after the kernel making sin and cos
    return destination.at[0:2].set(np.sin(w) * 3.0)


def update_returned(x, w):
    v = np.sin(w) * 2.0
    return np.tanh(x).at[1:3].set(v), v


@pytest.mark.parametrize(
    "fn, reason",
    [
        (dies_at_the_update, None),
        (read_before_the_update, "reads the operand's memory before the update"),
        (made_after_the_kernel, "the operand is made after the kernel begins"),
        (update_returned, "is a result of the program"),
        (read_later, "does not write in place"),
        (of_an_input, "does not write in place: the operand is the caller's"),
    ],
)
def test_a_straight_line_update_is_stored_by_its_kernel_unless_refused(fn, reason):
    args = (rng.random(5), rng.random(2))[: 1 if fn in (read_later, of_an_input) else 2]
    (refusal,) = window_store_refusals(fn, *args)
    assert refusal == reason if reason is None else reason in refusal, refusal


def test_the_plan_records_the_values_stored_into_windows():
    fused, _ = optimize(dies_at_the_update, rng.random(5), rng.random(2))
    plan = plan_memory(fused)
    ((value, output),) = plan.window_stores.items()
    (update,) = [e for e in fused.eqns if output in e.outputs]
    assert value in update.inputs and output in plan.in_place
    assert "1 stored into their windows by their kernels" in str(plan)
