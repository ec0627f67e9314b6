"""The kernels the backends make outside fusion (``passes.kernels``): a plain eqn as the
kernel of one op fusion builds of it (``as_kernel``), and a kernel a backend cannot
write taken apart into such kernels (``split_into_ops``). The interpreter is the oracle:
the split program computes what the kernel does."""

from __future__ import annotations

import numpy as np
from kernel_programs import SQUARE, across_rows
from passes_util import trace

from numbax import ir
from numbax.ir.core import ClosedJaxpr, Eqn, Jaxpr, Literal, Var
from numbax.ir.higher_order import kernel_p
from numbax.ir.interpret import eval_jaxpr
from numbax.ir.primitive import PRIMITIVES
from numbax.passes import optimize
from numbax.passes.kernels import as_kernel, classify, split_into_ops

rng = np.random.default_rng(3)


def split_program(closed: ClosedJaxpr) -> Jaxpr:
    jaxpr = closed.jaxpr
    (kernel,) = jaxpr.eqns
    return Jaxpr(jaxpr.constvars, jaxpr.invars, split_into_ops(kernel), jaxpr.outvars)


def test_a_plain_eqn_is_the_kernel_of_one_op_fusion_builds():
    a = Var(SQUARE)
    eqn = Eqn(PRIMITIVES["mul"], [a, a], [Var(SQUARE)], {}, "user.py:3")
    kernel = as_kernel(eqn)
    assert kernel.prim is kernel_p and kernel.params["kind"] == classify([eqn]).kind
    assert kernel.params["name"] == "mul" and kernel.source_info == "user.py:3"
    assert kernel.inputs == [a] and kernel.outputs == eqn.outputs  # each operand once
    assert as_kernel(kernel) is kernel
    scale = Eqn(PRIMITIVES["mul"], [a, Literal(2.0, np.float32)], [Var(SQUARE)], {})
    (inner,) = as_kernel(scale).params["jaxpr"].eqns
    assert as_kernel(scale).inputs == [a] and isinstance(inner.inputs[1], Literal)


def test_a_split_kernel_computes_what_the_kernel_does():
    closed = across_rows(lambda x, out: [out])
    split = split_program(closed)
    ir.typecheck(ClosedJaxpr(split, []))
    assert [e.params["name"] for e in split.eqns] == ["reduce_sum", "broadcast_in_dim", "mul"]
    assert split.eqns[-1].outputs == closed.jaxpr.outvars  # the op makes the output itself
    data = rng.standard_normal((3, 3)).astype(np.float32)
    (want,) = eval_jaxpr(closed.jaxpr, [], data)
    np.testing.assert_allclose(eval_jaxpr(split, [], data)[0], want, rtol=1e-6)


def test_an_output_no_op_makes_is_a_copy_kernel():
    """The body returns its input, a value at a second position, and a literal: each is
    copied into its output by an elementwise kernel of no op."""
    closed = across_rows(lambda x, out: [out, x, out, Literal(2.5, np.float32)])
    split = split_program(closed)
    ir.typecheck(ClosedJaxpr(split, []))
    copies = [e for e in split.eqns if e.params["name"] == "copy"]
    assert [e.params["kind"] for e in copies] == ["elementwise"] * 3
    assert all(not e.params["jaxpr"].eqns for e in copies)
    assert [e.outputs for e in copies] == [[v] for v in closed.jaxpr.outvars[1:]]
    data = rng.standard_normal((3, 3)).astype(np.float32)
    for got, want in zip(
        eval_jaxpr(split, [], data), eval_jaxpr(closed.jaxpr, [], data), strict=True
    ):
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_a_fused_kernel_splits_into_the_kernels_fusion_would_make_of_its_ops():
    x = rng.standard_normal((4, 5))
    fused, _ = optimize(trace(lambda v: np.exp(v) / np.exp(v).sum(axis=1, keepdims=True), x))
    for kernel in fused.jaxpr.eqns:
        parts = split_into_ops(kernel)
        assert len(parts) == len(kernel.params["jaxpr"].eqns)
        for part in parts:
            (op,) = part.params["jaxpr"].eqns
            assert part.params["kind"] == classify([op]).kind
    split = Jaxpr(
        fused.jaxpr.constvars,
        fused.jaxpr.invars,
        [part for kernel in fused.jaxpr.eqns for part in split_into_ops(kernel)],
        fused.jaxpr.outvars,
    )
    np.testing.assert_allclose(
        eval_jaxpr(split, fused.consts, x)[0], eval_jaxpr(fused.jaxpr, fused.consts, x)[0]
    )
