"""Memory planning: buffers reused by liveness, never while their value is live, never
for the program's inputs and outputs; checked by running the fused program with every
intermediate stored in its planned buffer."""

from __future__ import annotations

import numpy as np
from passes_util import evaluate, optimize

from numbax import ir
from numbax.ir.core import Var
from numbax.passes import plan_memory

rng = np.random.default_rng(1)


def chain(x):
    """20 layers, each a reduction kernel over the other axis than its neighbours."""
    for layer in range(20):
        x = np.tanh(x - x.mean(axis=layer % 2, keepdims=True) * 0.5)
    return x


def run_in_planned_buffers(fused, plan, *args):
    """Interpret the fused program writing each intermediate into its planned buffer
    (a view, so a buffer reused too early corrupts a later read)."""
    buffers = [np.empty(b.size, b.dtype) for b in plan.buffers]
    jaxpr = fused.jaxpr
    env = dict(zip(jaxpr.constvars, fused.consts, strict=True))
    env.update(zip(jaxpr.invars, args, strict=True))
    read = lambda a: a.val if isinstance(a, ir.Literal) else env[a]  # noqa: E731
    for eqn in jaxpr.eqns:
        outs = eqn.prim.impl(*map(read, eqn.inputs), **eqn.params)
        for var, value in zip(eqn.outputs, outs, strict=True):
            if var in plan.buffer_of:
                buffer = buffers[plan.buffer_of[var]]
                buffer[:] = np.asarray(value, var.aval.dtype).reshape(-1)
                value = buffer.reshape(var.aval.shape)
            env[var] = value
    return [np.asarray(read(v)) for v in jaxpr.outvars]


def test_twenty_layer_chain_reuses_buffers():
    x = rng.standard_normal((16, 24)).astype(np.float32)
    fused, log = optimize(chain, x)
    plan = log.memory_plan
    assert len(fused.eqns) >= 20
    outvars = set(fused.jaxpr.outvars)
    intermediates = [v for e in fused.eqns for v in e.outputs if v not in outvars]
    assert plan.total_intermediate_bytes == sum(v.aval.nbytes for v in intermediates)
    assert plan.peak_bytes < plan.total_intermediate_bytes / 4
    # Each layer hands on an array and a row or column of means: two buffers of each.
    assert plan.num_buffers <= 4
    for got, want in zip(run_in_planned_buffers(fused, plan, x), evaluate(fused, x), strict=True):
        np.testing.assert_array_equal(got, want)


def test_inputs_and_outputs_are_never_planned():
    x = rng.standard_normal((4, 6))
    fused, log = optimize(lambda v: (chain(v), v.sum(0)), x)
    planned = set(log.memory_plan.buffer_of)
    assert not planned & set(fused.jaxpr.invars)
    assert not planned & {v for v in fused.jaxpr.outvars if isinstance(v, Var)}


def test_a_buffer_is_shared_only_by_values_of_one_size_and_dtype():
    def fn(x, w):
        a = (x @ w).astype(np.float64)  # f32 [4,4] -> f64 [4,4]
        b = a @ a.T  # f64 [4,4]
        c = (b @ b).sum(axis=1)  # f64 [4]
        return np.tanh(c).astype(np.float32) @ w  # f32 [4] then [4]

    x, w = rng.standard_normal((4, 4)).astype(np.float32), np.eye(4, dtype=np.float32)
    fused, log = optimize(fn, x, w)
    plan = plan_memory(fused)
    for var, buffer in plan.buffer_of.items():
        assert (plan.buffers[buffer].size, plan.buffers[buffer].dtype) == (
            var.aval.size,
            var.aval.dtype,
        )
    got = run_in_planned_buffers(fused, plan, x, w)
    np.testing.assert_allclose(got[0], evaluate(fused, x, w)[0])


def test_no_two_live_values_share_a_buffer():
    x = rng.standard_normal((8, 8))
    fused, log = optimize(lambda v: np.tanh(v @ v) @ np.sin(v @ v.T) + v.sum(), x)
    plan = log.memory_plan
    eqns = fused.jaxpr.eqns
    defined = {v: i for i, e in enumerate(eqns) for v in e.outputs}
    last = {a: i for i, e in enumerate(eqns) for a in e.inputs if isinstance(a, Var)}
    for a, buffer in plan.buffer_of.items():
        for b, other in plan.buffer_of.items():
            if a is not b and buffer == other:
                # One's life [defined, last read] ends before the other's begins.
                a_span = (defined[a], last.get(a, defined[a]))
                b_span = (defined[b], last.get(b, defined[b]))
                assert a_span[1] < b_span[0] or b_span[1] < a_span[0]
