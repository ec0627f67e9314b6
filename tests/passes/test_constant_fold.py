"""Constant folding: before/after on printed IR, and what it must leave alone."""

from __future__ import annotations

import numpy as np
from passes_util import assert_same_values, run_pass, trace

from numbax import numpy as xnp
from numbax.ir.core import ClosedJaxpr, Eqn, Jaxpr, ShapedArray, Var
from numbax.ir.primitive import PRIMITIVES
from numbax.passes import constant_fold, dce
from numbax.tracer import lax

x3 = np.ones(3, np.float32)
TABLE = np.arange(6.0).reshape(2, 3)


def folded(fn, *args) -> tuple[ClosedJaxpr, dict]:
    closed, changes = run_pass(constant_fold, trace(fn, *args))
    return run_pass(dce, closed)[0], changes


def test_scalar_results_become_literals():
    fn = lambda v: v + lax.mul(np.float32(2.0), np.float32(3.0))  # noqa: E731
    after, changes = folded(fn, x3)
    assert changes == {"folded": 1}
    assert str(after) == "{ lambda ; a:f32[3]. let b:f32[3] = add a 6.0:f32[] in (b,) }"


def test_array_results_become_constvars():
    fn = lambda v: v + xnp.sum(xnp.asarray(TABLE), 0)  # noqa: E731
    before = trace(fn, np.ones(3))
    after, changes = folded(fn, np.ones(3))
    assert changes == {"folded": 1}
    assert str(after) == "{ lambda a:f64[3]; b:f64[3]. let c:f64[3] = add b a in (c,) }"
    np.testing.assert_array_equal(after.consts[0], TABLE.sum(0))
    assert_same_values(before, after, [np.ones(3)])


def test_chains_fold_in_one_sweep():
    fn = lambda v: v * xnp.exp(xnp.asarray(TABLE[0]) + 1.0).sum()  # noqa: E731
    after, changes = folded(fn, np.ones(3))
    assert changes == {"folded": 2}
    assert [e.prim.name for e in after.eqns] == ["mul"]
    assert after.eqns[0].inputs[1].val == np.exp(TABLE[0] + 1.0).sum()


def test_scalar_constvars_become_literals():
    scale, v = Var(ShapedArray((), np.float64)), Var(ShapedArray((3,), np.float64))
    out = Var(ShapedArray((3,), np.float64))
    jaxpr = Jaxpr([scale], [v], [Eqn(PRIMITIVES["mul"], [v, scale], [out], {})], [out])
    after, changes = run_pass(constant_fold, ClosedJaxpr(jaxpr, [np.float64(4.0)]))
    assert changes == {"scalar_consts_inlined": 1}
    assert str(after) == "{ lambda ; a:f64[3]. let b:f64[3] = mul a 4.0:f64[] in (b,) }"


def test_broadcast_of_a_scalar_and_iota_stay():
    """Their results are bigger than their inputs: recomputing them in a kernel costs
    nothing, storing them costs memory traffic."""
    fn = lambda v: v * xnp.full(3, 2.0, np.float32) + xnp.arange(3, dtype=np.float32)  # noqa: E731
    before = trace(fn, x3)
    after, changes = folded(fn, x3)
    assert changes == {}
    assert str(after) == str(before)


def test_equations_reading_a_variable_stay():
    fn = lambda v: v * 2.0 + 1.0  # noqa: E731
    after, changes = folded(fn, x3)
    assert changes == {}


def test_folding_matches_what_running_gives_for_nan_and_inf():
    fn = lambda v: v + xnp.log(xnp.asarray(np.array([0.0, -1.0, 1.0])))  # noqa: E731
    before = trace(fn, np.ones(3))
    after, changes = folded(fn, np.ones(3))
    assert changes == {"folded": 1}
    assert_same_values(before, after, [np.ones(3)])
    assert np.isneginf(after.consts[0][0]) and np.isnan(after.consts[0][1])


def test_uniform_constant_arrays_become_broadcast_literals():
    """``np.ones(3) * 3.0`` closed over is a stored array; as a broadcast of 3.0 it is
    an operand that costs nothing (the simplifier then makes it the literal itself)."""
    threes = np.ones(3) * 3.0
    after, changes = folded(lambda v: v * threes, np.ones(3))
    assert changes == {"uniform_consts_broadcast": 1}
    assert after.consts == []
    assert "broadcast_in_dim[shape=(3,) broadcast_dimensions=()] 3.0:f64[]" in str(after)
    # Bits, not values: a constant mixing 0.0 and -0.0 is not uniform.
    zeros = np.array([0.0, -0.0, 0.0])
    after, changes = folded(lambda v: v + zeros, np.ones(3))
    assert changes == {} and len(after.consts) == 1
