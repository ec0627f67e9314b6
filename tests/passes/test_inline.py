"""Inlining: nested jit calls (and checkpoint, and already fused kernels) are spliced
into their caller with fresh variables."""

from __future__ import annotations

import numpy as np
from passes_util import assert_same_values, optimize, run_pass, trace

import numbax
from numbax import ir
from numbax.ir.higher_order import checkpoint_p, custom_vjp_call_p
from numbax.passes import inline
from numbax.tracer.control_flow import cond
from numbax.tracer.core import bind

x3 = np.arange(3.0, dtype=np.float32)


@numbax.jit(backend="interpret")  # tracing compiles it: keep that cheap
def scale(v):
    return v * 2.0


@numbax.jit(backend="interpret")  # tracing compiles it: keep that cheap
def twice(v):
    return scale(v) + scale(v + 1.0)


def test_nested_jit_calls_are_inlined():
    before = trace(lambda v: twice(v) - 1.0, x3)
    assert [e.prim.name for e in before.eqns] == ["jit_call", "sub"]
    after, changes = run_pass(inline, before)
    assert changes == {"jit_call": 3}
    assert str(after) == (
        "{ lambda ; a:f32[3]. let\n"
        "    b:f32[3] = mul a 2.0:f32[]\n"
        "    c:f32[3] = add a 1.0:f32[]\n"
        "    d:f32[3] = mul c 2.0:f32[]\n"
        "    e:f32[3] = add b d\n"
        "    f:f32[3] = sub e 1.0:f32[]\n"
        "  in (f,) }"
    )
    assert_same_values(before, after, [x3])


def test_the_same_body_inlined_twice_gets_fresh_variables():
    after, _ = run_pass(inline, trace(lambda v: scale(v) + scale(v), x3))
    defined = [v for e in after.eqns for v in e.outputs]
    assert len(set(defined)) == len(defined) == 3


def test_checkpoint_is_inlined():
    body = trace(lambda v: np.sin(v) * v, x3).jaxpr

    def fn(v):
        (out,) = bind(checkpoint_p, v, jaxpr=body, policy=None)
        return out

    before = trace(fn, x3)
    after, changes = run_pass(inline, before)
    assert changes == {"checkpoint": 1}
    assert [e.prim.name for e in after.eqns] == ["sin", "mul"]
    assert_same_values(before, after, [x3])


def test_custom_vjp_call_is_inlined_as_its_primal():
    primal = trace(np.sin, x3).jaxpr
    forward = trace(lambda v: (np.sin(v), np.cos(v)), x3).jaxpr
    backward = trace(lambda c, g: c * g, x3, x3).jaxpr

    def fn(v):
        (out,) = bind(
            custom_vjp_call_p,
            v,
            jaxpr=primal,
            fwd_jaxpr=forward,
            bwd_jaxpr=backward,
            const_counts=(0, 0, 0),
        )
        return out * 2.0

    before = trace(fn, x3)
    after, changes = run_pass(inline, before)
    assert changes == {"custom_vjp_call": 1}
    assert [e.prim.name for e in after.eqns] == ["sin", "mul"]
    assert_same_values(before, after, [x3])


def test_calls_inside_control_flow_bodies_are_inlined():
    before = trace(lambda p, v: cond(p, scale, lambda u: u, v), True, x3)
    after, changes = run_pass(inline, before)
    assert changes == {"jit_call": 1}
    true_branch = after.eqns[-1].params["branches"][1]
    assert [e.prim.name for e in true_branch.eqns] == ["mul"]
    assert_same_values(before, after, [True, x3])


def test_optimize_is_idempotent():
    """Optimising a fused program inlines its kernels and fuses them again."""
    fused, _ = optimize(lambda v: np.tanh(v * 2.0) + twice(v), x3)
    again, log = numbax.passes.optimize(fused, debug_checks=True)
    assert log.totals("inline") == {"kernel": 1}
    assert str(again) == str(fused)
    ir.typecheck(again)
