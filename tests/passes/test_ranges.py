"""The ``ranges`` pass: comparisons that the ranges of loop counters and literals decide
fold to literals, and the index normalisations and bounds checks they fed disappear.
Each program is checked against a NumPy loop on the cpu backend and, after the cleanup
group, against the traced program on the interpreter; the negative cases (a counter
that may be negative, a counter that may wrap) keep their checks."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from passes_util import assert_same_values, trace

import numbax
from numbax import passes
from numbax.passes import ranges
from numbax.tracer.control_flow import fori_loop, scan, while_loop


def cleaned(fn, *args):
    """The passes before fusion (``passes.clean``), checked against the traced program."""
    traced = trace(fn, *args)
    out = passes.clean(traced, debug_checks=True)
    assert_same_values(traced, out, args)
    return out


def prims(jaxpr) -> Counter:
    """How often each primitive occurs, sub-jaxprs included."""
    names: Counter = Counter()
    for eqn in jaxpr.eqns:
        names[eqn.prim.name] += 1
        for value in eqn.params.values():
            for sub in value if isinstance(value, tuple) else (value,):
                if hasattr(sub, "eqns"):
                    names += prims(sub)
    return names


def shift_rows(a):
    """Row i becomes row i - 1 plus twice row i, for i = 1 .. n - 1, in order."""
    return fori_loop(1, a.shape[0], lambda i, a: a.at[i].set(a[i - 1] + 2.0 * a[i]), a)


def shift_rows_numpy(a):
    a = a.copy()
    for i in range(1, a.shape[0]):
        a[i] = a[i - 1] + 2.0 * a[i]
    return a


def test_a_counters_index_checks_fold_away():
    a = np.arange(12.0).reshape(4, 3)
    out = cleaned(shift_rows, a)
    # No index normalisation (i < 0), no bounds check (0 <= i < n), no selects left.
    assert not {"lt", "ge", "gt", "le", "and", "select"} & set(prims(out.jaxpr))
    np.testing.assert_array_equal(numbax.jit(shift_rows)(a), shift_rows_numpy(a))


def test_the_pass_counts_what_it_decides():
    a = np.arange(12.0).reshape(4, 3)
    _, counts = ranges.run(trace(shift_rows, a))
    assert counts["lt_decided"] >= 2 and counts["ge_decided"] >= 1


def test_a_counter_that_may_be_negative_keeps_its_normalisation():
    # a[i] with i from -2: NumPy's negative indices count from the end.
    def fn(a):
        return fori_loop(-2, 3, lambda i, c: c + a[i], np.zeros(3))

    a = np.arange(15.0).reshape(5, 3)
    out = cleaned(fn, a)
    assert prims(out.jaxpr)["select"] >= 1
    want = sum(a[i] for i in range(-2, 3))
    np.testing.assert_array_equal(numbax.jit(fn)(a), want)


def test_a_sum_that_may_overflow_has_no_range():
    # i + 10 wraps for the int32 counters near the top: "i + 10 > 0" is not decidable.
    top = np.iinfo(np.int32).max

    def fn(x):
        def body(i, c):
            return c + numbax.numpy.where(i + np.int32(10) > 0, x, -x)

        return fori_loop(np.int32(top - 4), np.int32(top - 1), body, np.zeros(3))

    x = np.array([1.0, 2.0, 3.0])
    out = cleaned(fn, x)
    assert prims(out.jaxpr)["gt"] == 1
    with np.errstate(over="ignore"):
        signs = [1.0 if np.int32(i) + np.int32(10) > 0 else -1.0 for i in range(top - 4, top - 1)]
    np.testing.assert_array_equal(numbax.jit(fn)(x), sum(signs) * x)


def test_a_while_counters_range_comes_from_its_predicate():
    # fori_loop with a traced bound is a while loop: i < n bounds the counter above.
    def fn(a, n):
        return fori_loop(1, n, lambda i, a: a.at[i].set(a[i - 1] + 2.0 * a[i]), a)

    a = np.arange(12.0).reshape(4, 3)
    out = cleaned(fn, a, np.int64(4))
    body = next(e for e in out.jaxpr.eqns if e.prim.name == "while").params["body_jaxpr"]
    # i >= 1 from its start: a[i - 1] and a[i] need no normalisation; the upper bound of
    # the write (i < 4) is unknown, since n is: that check stays.
    assert prims(body)["select"] <= 1
    jitted = numbax.jit(fn)
    for n in (0, 1, 3, 4):
        want = a.copy()
        for i in range(1, n):
            want[i] = want[i - 1] + 2.0 * want[i]
        np.testing.assert_array_equal(jitted(a, np.int64(n)), want)


def test_a_decreasing_scan_carry_and_the_final_counter():
    # A carry that counts down from 5 by 2 over 3 steps lies in [1, 5] in the body and
    # is -1 after the loop: both comparisons below are decided.
    def fn(x):
        def step(carry, _):
            k, total = carry
            return (k - 2, total + numbax.numpy.where(k > 0, x, -x)), None

        (k, total), _ = scan(step, (np.int64(5), np.zeros(3)), None, length=3)
        return numbax.numpy.where(k < 0, total, -total)

    x = np.array([1.0, -2.0, 0.5])
    out = cleaned(fn, x)
    assert not {"gt", "lt", "select"} & set(prims(out.jaxpr))
    np.testing.assert_array_equal(numbax.jit(fn)(x), 3.0 * x)


@pytest.mark.parametrize("start", [0, 2, 7])
def test_a_while_loop_that_may_not_run(start):
    def fn(x):
        def body(carry):
            i, c = carry
            return i + 1, c + numbax.numpy.where(i >= 2, x, 2.0 * x)

        return while_loop(lambda carry: carry[0] < 5, body, (np.int64(start), np.zeros(2)))[1]

    x = np.array([1.0, 3.0])
    want = sum((x if i >= 2 else 2.0 * x) for i in range(start, 5)) + np.zeros(2)
    np.testing.assert_array_equal(numbax.jit(fn)(x), want)
    cleaned(fn, x)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    start=st.integers(-6, 6),
    stop=st.integers(-6, 9),
    read=st.integers(-4, 4),
    write=st.integers(-4, 4),
    traced_stop=st.booleans(),
)
def test_random_counter_indexing_keeps_its_meaning(start, stop, read, write, traced_stop):
    """Reads and writes at counter offsets, in range, negative (counted from the end) or
    past the end (clamped reads, dropped writes): the cleaned program computes what the
    traced one does on the interpreter (``cleaned``), whatever the ranges decided."""

    def fn(a, n):
        def body(i, a):
            value = a[i + read] * 0.5 + numbax.numpy.where(i - read >= 0, 1.0, -1.0)
            return a.at[i + write].set(value)

        return fori_loop(start, n if traced_stop else stop, body, a)

    cleaned(fn, np.arange(20.0).reshape(5, 4), np.int64(stop))


def test_a_while_counter_whose_step_past_the_bound_wraps_has_no_range():
    # int8 from 120 by 3 under i < 127: 126 + 3 wraps to -127, and the loop runs on with
    # negative counters (until the sequence meets 127): "i >= 0" is not decidable.
    def fn(x):
        def body(carry):
            i, total = carry
            return i + np.int8(3), total + numbax.numpy.where(i >= 0, x, 100.0 * x)

        init = (np.int8(120), np.zeros(2))
        return while_loop(lambda carry: carry[0] < np.int8(127), body, init)[1]

    x = np.array([1.0, 2.0])
    out = cleaned(fn, x)
    body = next(e for e in out.jaxpr.eqns if e.prim.name == "while").params["body_jaxpr"]
    assert prims(body)["ge"] == 1
