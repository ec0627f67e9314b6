"""CSE and DCE: before/after on printed IR, sub-jaxprs included."""

from __future__ import annotations

import numpy as np
from passes_util import assert_same_values, optimize, run_pass, trace

import numbax
from numbax.ir.core import ClosedJaxpr, Jaxpr
from numbax.passes import cse, dce
from numbax.tracer.control_flow import cond, fori_loop

x3 = np.arange(3.0, dtype=np.float32)


def test_cse_merges_repeated_computations():
    fn = lambda v: np.sin(v) * 2.0 + np.sin(v) * 2.0  # noqa: E731
    after, changes = run_pass(cse, trace(fn, x3))
    after, _ = run_pass(dce, after)
    assert changes == {"merged": 2}
    assert str(after) == (
        "{ lambda ; a:f32[3]. let "
        "b:f32[3] = sin a; c:f32[3] = mul b 2.0:f32[]; d:f32[3] = add c c in (d,) }"
    )


def test_cse_tells_literals_apart_by_their_bits():
    """0.0 and -0.0 compare equal but are different constants (x + 0.0 differs from
    x + -0.0 at x = -0.0)."""
    fn = lambda v: (v + 0.0, v + -0.0, v * 1.0, v * np.float32(1.0))  # noqa: E731
    after, changes = run_pass(cse, trace(fn, x3))
    assert changes == {"merged": 1}
    assert [e.inputs[1].val.item() for e in after.eqns] == [0.0, -0.0, 1.0]
    assert np.signbit(after.eqns[1].inputs[1].val)


def test_cse_keeps_different_params_apart():
    fn = lambda v: (v.sum(axis=0), v.sum(axis=1))  # noqa: E731
    _, changes = run_pass(cse, trace(fn, np.ones((2, 3))))
    assert changes == {}


def test_cse_inside_sub_jaxprs():
    fn = lambda p, v: cond(p, lambda u: np.exp(u) + np.exp(u), lambda u: u, v)  # noqa: E731
    after, changes = run_pass(cse, trace(fn, True, x3))
    assert changes == {"merged": 1}
    branch = after.eqns[-1].params["branches"][1]
    assert [e.prim.name for e in branch.eqns] == ["exp", "add"]


def test_identical_kernels_merge_after_fusion():
    """The same function of the same input, fused twice, computes once."""

    @numbax.jit(backend="interpret")  # tracing compiles it: keep that cheap
    def f(v):
        return np.tanh(v) * 3.0

    fused, log = optimize(lambda v: (f(v) @ f(v).T, f(v)), np.ones((3, 3), np.float32))
    assert [e.params["kind"] for e in fused.eqns] == ["elementwise", "contraction"]


def test_dce_removes_dead_equations_and_constants():
    table = np.arange(3.0)
    fn = lambda v: (np.exp(v + table), v * 2.0)[1]  # noqa: E731
    before = trace(fn, np.ones(3))
    after, changes = run_pass(dce, before)
    assert changes == {"eqns_removed": 2, "constvars_removed": 1}
    assert str(after) == "{ lambda ; a:f64[3]. let b:f64[3] = mul a 2.0:f64[] in (b,) }"
    assert after.consts == []


def test_dce_prunes_unused_outputs_of_calls_and_conds():
    @numbax.jit(backend="interpret")  # tracing compiles it: keep that cheap
    def pair(v):
        return np.exp(v), np.sin(v) + v

    def fn(p, v):
        a, _ = pair(v)
        b, _ = cond(p, lambda u: (u * 2.0, np.cos(u)), lambda u: (u, u), v)
        return a + b

    before = trace(fn, True, x3)
    after, changes = run_pass(dce, before)
    assert changes == {"outputs_pruned": 2, "eqns_removed": 3}
    call, branch_eqn = after.eqns[0], after.eqns[2]
    assert [e.prim.name for e in call.params["jaxpr"].eqns] == ["exp"]
    assert len(branch_eqn.outputs) == 1
    assert [[e.prim.name for e in b.eqns] for b in branch_eqn.params["branches"]] == [[], ["mul"]]
    assert_same_values(before, after, [True, x3])


def test_dce_prunes_operands_no_branch_reads():
    def fn(p, v, w):
        return cond(p, lambda u, _: u * 2.0, lambda u, _: u, v, w * 3.0)

    before = trace(fn, True, x3, x3)
    after, changes = run_pass(dce, before)
    assert changes == {"inputs_pruned": 1, "eqns_removed": 1}
    assert [e.prim.name for e in after.eqns] == ["convert_element_type", "cond"]
    assert_same_values(before, after, [False, x3, x3])


def test_dce_keeps_loop_carries():
    """A carry the caller ignores still feeds the next iteration."""

    def fn(v):
        total, _ = fori_loop(0, 3, lambda i, c: (c[0] + c[1], c[1] * 2.0), (v, v))
        return total

    before = trace(fn, x3)
    after, changes = run_pass(dce, before)
    assert changes == {}
    assert_same_values(before, after, [x3])


def test_dce_prunes_kernel_outputs_only_when_the_kind_still_holds():
    def fn(v):
        return v.sum(axis=1), v * 2.0

    fused, _ = optimize(fn, np.ones((2, 3), np.float32))
    (kernel,) = fused.eqns
    assert kernel.params["kind"] == "reduction" and len(kernel.outputs) == 2
    # Without the doubled values, the sum alone is still a reduction kernel.
    only_sum = ClosedJaxpr(Jaxpr([], fused.jaxpr.invars, fused.eqns, [kernel.outputs[0]]))
    pruned, changes = run_pass(dce, only_sum)
    assert changes == {"outputs_pruned": 1, "eqns_removed": 1}
    assert [e.prim.name for e in pruned.eqns[0].params["jaxpr"].eqns] == ["reduce_sum"]
    # Without the sum, a lone multiplication is no reduction: the kernel stays whole.
    only_doubled = ClosedJaxpr(Jaxpr([], fused.jaxpr.invars, fused.eqns, [kernel.outputs[1]]))
    kept, changes = run_pass(dce, only_doubled)
    assert changes == {}
    assert len(kept.eqns[0].outputs) == 2


def test_cse_and_dce_give_back_what_they_leave_unchanged():
    """A jaxpr with nothing to merge or drop comes back as the same object, its kernels'
    bodies included, so the cleanup after fusion rebuilds nothing; a result is a fixed
    point (one pass leaves nothing to do)."""

    def fn(v):
        unused = np.cos(v)  # noqa: F841 - dead
        return np.tanh(np.sin(v) * 2.0 + np.sin(v) * 2.0) + 1.0

    traced = trace(fn, x3)
    once = cse.eliminate_common_subexpressions(traced.jaxpr)
    assert once is not traced.jaxpr  # sin and mul were merged: a new jaxpr
    assert cse.eliminate_common_subexpressions(once) is once
    pruned = dce.eliminate_dead_code(once)
    assert pruned is not once  # cos was dead
    assert [e.prim.name for e in pruned.eqns] == ["sin", "mul", "add", "tanh", "add"]
    assert dce.eliminate_dead_code(pruned) is pruned
    assert cse.eliminate_common_subexpressions(pruned) is pruned
    fused, _ = optimize(fn, x3)
    assert [e.prim.name for e in fused.eqns] == ["kernel"]
    for module in (cse, dce):
        again, changes = run_pass(module, fused)
        assert changes == {}
        assert all(a is b for a, b in zip(again.eqns, fused.eqns, strict=True))
    assert_same_values(traced, fused, [x3])
