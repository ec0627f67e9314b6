"""The tracer machinery: abstract and concrete traces, nesting (outer tracers lifted
as constants), replaying a jaxpr through bind, and eager execution outside any trace."""

from __future__ import annotations

import numpy as np
import pytest

import numbax
from numbax import ir
from numbax import numpy as xnp
from numbax.ir import ShapedArray
from numbax.tracer import Tracer, bind, current_trace, lax, replay, trace_flat


def test_abstract_trace_records_without_values():
    seen = []

    def fn(x):
        y = np.sin(x) * 2.0
        seen.append(y)
        return [y]  # trace_flat works on flat lists of outputs

    closed, outs = trace_flat(fn, [ShapedArray((3,), np.float32)])
    assert isinstance(seen[0], Tracer) and seen[0]._value is None
    assert [e.prim.name for e in closed.eqns] == ["sin", "mul"]
    assert outs[0].aval == ShapedArray((3,), np.float32)


def test_concrete_trace_runs_python_control_flow_define_by_run():
    def fn(x):
        total = x
        while float(total.sum()) < 10.0:  # concrete: the value is known
            total = total * 2.0
        return [total if total[0] > 0 else -total]

    x = np.array([1.0, 0.5])
    closed, outs = trace_flat(fn, [ir.aval_of(x)], [x])
    assert [e.prim.name for e in closed.eqns].count("mul") == 3  # the path taken: 1.5 -> 12
    np.testing.assert_array_equal(outs[0]._value, x * 8)
    (replayed,) = ir.eval_jaxpr(closed.jaxpr, closed.consts, x)
    np.testing.assert_array_equal(replayed, x * 8)
    assert current_trace() is None


def test_inner_trace_lifts_outer_tracers_as_constants():
    inner_jaxprs = []

    def outer(x):
        def inner(y):
            return y * x  # x belongs to the outer trace

        inner_jaxprs.append(numbax.make_jaxpr(inner)(np.ones(3)))
        return x + 1.0

    numbax.make_jaxpr(outer)(np.ones(3))
    (closed,) = inner_jaxprs
    assert len(closed.jaxpr.constvars) == 1
    assert isinstance(closed.consts[0], Tracer)  # the value of the const is the outer tracer
    assert "mul b a" in str(closed)


def test_same_outer_value_is_lifted_once():
    weights = np.arange(3.0)
    closed = numbax.make_jaxpr(lambda x: x * weights + weights)(np.ones(3))
    assert len(closed.jaxpr.constvars) == 1 and len(closed.consts) == 1
    np.testing.assert_array_equal(closed.consts[0], weights)


def test_replay_reevaluates_and_rerecords():
    closed = numbax.make_jaxpr(lambda x, w: np.tanh(x @ w).sum(axis=0))(
        np.ones((2, 3)), np.ones((3, 4))
    )
    x, w = np.random.default_rng(0).standard_normal((2, 3)), np.ones((3, 4))
    (eager,) = replay(closed.jaxpr, closed.consts, [x, w])
    np.testing.assert_allclose(eager, np.tanh(x @ w).sum(axis=0), rtol=1e-14)
    again = numbax.make_jaxpr(lambda a, b: replay(closed.jaxpr, closed.consts, [a, b]))(x, w)
    assert str(again) == str(closed)


def test_replay_into_an_abstract_trace_copies_equations_and_keeps_their_lines():
    """An equation whose operands have the jaxpr's types is copied, not bound: its line is
    the one it was traced at (bound, it would be the replaying caller's), its params its
    own; operands of other types, and equations whose operands are all known, are bound."""

    def fn(x, w):
        return np.tanh(x @ w).sum(axis=0)  # the traced line

    closed = numbax.make_jaxpr(fn)(np.ones((2, 3), np.float32), np.ones((3, 4), np.float32))
    line = f"{__file__}:{fn.__code__.co_firstlineno + 1}"
    again = numbax.make_jaxpr(lambda a, b: replay(closed.jaxpr, closed.consts, [a, b]))(
        np.ones((2, 3), np.float32), np.ones((3, 4), np.float32)
    )
    assert str(again) == str(closed)
    assert {e.source_info for e in again.eqns} == {line}
    for copied, original in zip(again.eqns, closed.eqns, strict=True):
        assert copied.params == original.params and copied.params is not original.params
    # float64 operands: the shape rules run again, and the types follow the operands.
    wider = numbax.make_jaxpr(lambda a, b: replay(closed.jaxpr, closed.consts, [a, b]))(
        np.ones((2, 3)), np.ones((3, 4))
    )
    assert [e.outputs[0].aval.dtype for e in wider.eqns] == [np.float64] * len(wider.eqns)
    # Known operands are bound, which computes their values while tracing (Python code may
    # branch on them), as it records the equations.
    x, w = np.ones((2, 3), np.float32), np.ones((3, 4), np.float32)
    seen = []

    def on_known(a):
        (out,) = replay(closed.jaxpr, closed.consts, [x, w])
        seen.append(out._value)
        return a + out

    folded = numbax.make_jaxpr(on_known)(np.ones(4, np.float32))
    assert [e.prim.name for e in folded.eqns] == [e.prim.name for e in closed.eqns] + ["add"]
    np.testing.assert_allclose(seen[0], np.tanh(np.full((2, 4), 3.0)).sum(axis=0), rtol=1e-6)


def test_bind_outside_a_trace_runs_the_reference_eagerly():
    out = bind(ir.PRIMITIVES["add"], np.ones(2, np.float32), np.float32(2))
    assert isinstance(out, np.ndarray) and out.dtype == np.float32
    np.testing.assert_array_equal(out, np.full(2, 3.0, np.float32))
    np.testing.assert_array_equal(lax.reduce_sum(np.ones((2, 3)), (1,)), np.full(2, 3.0))


def test_numbax_numpy_runs_eagerly_on_arrays():
    x = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(xnp.sum(xnp.exp(x), axis=1), np.exp(x).sum(axis=1))
    assert isinstance(xnp.zeros(3), np.ndarray)
    np.testing.assert_array_equal(xnp.where(x > 2, x, 0.0), np.where(x > 2, x, 0.0))


def test_source_info_is_the_users_line_even_through_numpy_dispatch():
    def fn(x):
        return np.sum(np.exp(x), axis=0)  # user line

    closed = numbax.make_jaxpr(fn)(np.ones((2, 2)))
    line = f"{__file__}:{fn.__code__.co_firstlineno + 1}"
    assert {e.source_info for e in closed.eqns} == {line}


def test_tracers_are_not_hashable_and_iterate_like_arrays():
    def fn(x):
        rows = [row * 2.0 for row in x]
        assert len(x) == 2
        try:
            hash(x)
        except TypeError:
            pass
        else:
            raise AssertionError("a tracer must not be hashable")
        return rows

    out = numbax.jit(fn, backend="interpret")(np.ones((2, 3)))
    assert len(out) == 2 and out[1].shape == (3,)


counter = 0
saved = None


def _count_and_save(x):
    global counter, saved
    counter += 1
    saved = x
    return x * counter


def test_a_global_assignment_happens_in_the_module_once_per_trace():
    """Python's meaning of ``global``: the module's global is assigned (once, when the
    function is traced, as in JAX), and a tracer stored that way leaks."""
    global counter, saved
    counter, saved = 0, None
    want = _count_and_save(np.ones(2))  # NumPy: counter 1, saved the argument
    for tiered in (False, True):
        counter, saved = 0, None
        jitted = numbax.jit(_count_and_save, tiered=tiered)
        np.testing.assert_array_equal(jitted(np.ones(2)), want)
        assert counter == 1
        jitted(np.ones(2))  # the cached program: the trace's assignment does not run again
        assert counter == 1
        with pytest.raises(numbax.LeakedTracerError, match="escaped through a global"):
            saved + 1
        counter = 10  # the module's value now, read by the next trace
        np.testing.assert_array_equal(jitted(np.ones(3)), np.full(3, 11.0))
        assert counter == 11
