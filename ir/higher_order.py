"""Higher-order primitives: they carry sub-jaxprs in their params.

``jit_call`` calls a closure-converted jaxpr (no constvars: captured values are
passed as leading operands). ``checkpoint`` has the same form; only its VJP differs.
``custom_vjp_call`` is a call too, carrying the user's forward and backward jaxprs for
reverse mode (see its comment), and ``custom_jvp_call`` the user's forward-mode rule.
Their reference implementation interprets the sub-jaxpr (``interpret.body_rule``); the
public API replaces the eager implementation of ``jit_call`` with one that compiles (see
``set_impl``), the interpreter keeps its own.
"""

from __future__ import annotations

from . import interpret
from .core import Jaxpr, ShapedArray
from .primitive import Pattern, check, register


def _call_rule(name):
    def rule(*avals: ShapedArray, jaxpr: Jaxpr, **_):
        check(not jaxpr.constvars, name, "sub-jaxpr must be closure-converted")
        check(
            list(avals) == jaxpr.in_avals,
            name,
            f"operands {[a.str_short() for a in avals]} do not match the sub-jaxpr's inputs",
        )
        return jaxpr.out_avals

    return rule


def _call_body(run, operands, *, jaxpr: Jaxpr, **_):
    return run(jaxpr, [], *operands)


def _call_impl(name: str):
    """The interpreter's rule and reference implementation of the call ``name``: its body
    runs inline (a nested ``jit_call``'s too: ``set_impl`` replaces only the eager
    implementation)."""
    return interpret.body_rule(name, _call_body)


jit_call_p = register(
    "jit_call",
    Pattern.CONTROL,
    _call_rule("jit_call"),
    _call_impl("jit_call"),
    multiple_results=True,
)
checkpoint_p = register(
    "checkpoint",
    Pattern.CONTROL,
    _call_rule("checkpoint"),
    _call_impl("checkpoint"),
    multiple_results=True,
)


def _custom_vjp_call_rule(
    *avals: ShapedArray,
    jaxpr: Jaxpr,
    fwd_jaxpr: Jaxpr,
    bwd_jaxpr: Jaxpr,
    const_counts: tuple[int, int, int],
):
    out_avals = _call_rule("custom_vjp_call")(*avals, jaxpr=jaxpr)
    num_primal_consts, num_fwd_consts, num_bwd_consts = const_counts
    args = list(avals[sum(const_counts) :])
    fwd_consts = list(avals[num_primal_consts : num_primal_consts + num_fwd_consts])
    check(
        fwd_jaxpr.in_avals == fwd_consts + args,
        "custom_vjp_call",
        "fwd_jaxpr must take the forward's consts and the arguments",
    )
    check(
        fwd_jaxpr.out_avals[: len(out_avals)] == out_avals,
        "custom_vjp_call",
        "fwd_jaxpr must return the primal outputs first, then the residuals",
    )
    check(
        bwd_jaxpr.out_avals == args,
        "custom_vjp_call",
        "bwd_jaxpr must return one cotangent per argument",
    )
    check(
        len(bwd_jaxpr.invars) == num_bwd_consts + len(fwd_jaxpr.outvars),
        "custom_vjp_call",
        "bwd_jaxpr must take its consts, the residuals and one cotangent per output",
    )
    return out_avals


# A call whose reverse-mode derivative the user wrote (``numbax.custom_vjp``).
#
#   inputs:  (*primal_consts, *fwd_consts, *bwd_consts, *args), counts in ``const_counts``
#   params:  jaxpr      the primal function over all inputs (it ignores the forward's and
#                       backward's consts), so a pass may inline it as an ordinary call
#            fwd_jaxpr  (*fwd_consts, *args) -> (*outs, *residuals)
#            bwd_jaxpr  (*bwd_consts, *residuals, *out_cotangents) -> one cotangent per arg
custom_vjp_call_p = register(
    "custom_vjp_call",
    Pattern.CONTROL,
    _custom_vjp_call_rule,
    _call_impl("custom_vjp_call"),
    multiple_results=True,
)


def _custom_jvp_call_rule(
    *avals: ShapedArray, jaxpr: Jaxpr, jvp_jaxpr: Jaxpr, const_counts: tuple[int, int]
):
    out_avals = _call_rule("custom_jvp_call")(*avals, jaxpr=jaxpr)
    num_primal_consts, num_jvp_consts = const_counts
    args = list(avals[num_primal_consts + num_jvp_consts :])
    jvp_consts = list(avals[num_primal_consts : num_primal_consts + num_jvp_consts])
    check(
        jvp_jaxpr.in_avals == jvp_consts + args + args,
        "custom_jvp_call",
        "jvp_jaxpr must take its consts, the arguments and one tangent per argument",
    )
    check(
        jvp_jaxpr.out_avals == out_avals + out_avals,
        "custom_jvp_call",
        "jvp_jaxpr must return the primal outputs, then one tangent per output",
    )
    return out_avals


# A call whose forward-mode derivative the user wrote (``numbax.custom_jvp``); reverse
# mode transposes that rule, which is linear in the tangents (``transforms/custom_jvp.py``).
#
#   inputs:  (*primal_consts, *jvp_consts, *args), counts in ``const_counts``
#   params:  jaxpr      the primal function over all inputs (it ignores the rule's
#                       consts), so a pass may inline it as an ordinary call
#            jvp_jaxpr  (*jvp_consts, *args, *tangents) -> (*outs, *tangent_outs), a
#                       tangent of each argument's and each output's aval
custom_jvp_call_p = register(
    "custom_jvp_call",
    Pattern.CONTROL,
    _custom_jvp_call_rule,
    _call_impl("custom_jvp_call"),
    multiple_results=True,
)


def set_impl(prim, impl) -> None:
    """Let a higher layer (the public API) provide a primitive's eager implementation."""
    prim.impl_rule = impl


KERNEL_KINDS = ("elementwise", "reduction", "contraction", "opaque")


def _kernel_rule(*avals: ShapedArray, jaxpr: Jaxpr, kind: str, name: str):
    check(kind in KERNEL_KINDS, "kernel", f"unknown kernel kind {kind!r}")
    return _call_rule("kernel")(*avals, jaxpr=jaxpr)


# A fused kernel, produced by the fusion pass and consumed by the backends.
#
#   inputs:  atoms of the enclosing jaxpr; outputs: its result vars
#   params:  jaxpr  closure-converted sub-jaxpr (no constvars) of ordinary primitives
#            kind   how the backends generate code for it:
#              elementwise  every output has one shape S, the iteration space; the body is
#                           elementwise ops, broadcast_in_dim of inputs into S, iota,
#                           convert_element_type. One loop nest over S.
#              reduction    reductions (reduce_*/argmax/argmin) that all reduce the same
#                           trailing-or-not axes of one iteration shape S; an elementwise
#                           prologue over S feeds them; outputs have the reduced shape R
#                           or S (an epilogue that reads reduction results broadcast back
#                           over S, as in softmax and layer norm). Dependent reductions
#                           (max, then sum of exp(x - max)) become successive passes over
#                           the reduced axes inside the same loop over R.
#              contraction  one dot_general, then an elementwise epilogue over its output
#                           (bias, activation) before the store.
#              opaque       exactly one eqn that fusion does not fuse (gather, scatter,
#                           cumsum, concatenate, pad, dynamic_slice, ...).
#            name   readable name for generated code, from the ops it contains
#
#   What fusion guarantees besides (passes/kernels.py checks it, passes/verify.py
#   verifies every kernel in debug mode):
#   - body values: every eqn's output has shape S (elementwise), S or R = S without the
#     reduced axes (reduction), or the dot_general's output shape O (contraction).
#     Rank-0 values appear only where S, R or O is rank 0 (rank-0 kernel inputs and
#     literals may appear anywhere, as operands that broadcast).
#   - broadcast_in_dim reads a kernel input or a literal (read at projected indices),
#     except in a reduction kernel, where it may also broadcast a value of shape R
#     back over S with broadcast_dimensions = the axes that were not reduced. When R is
#     rank 0, S-shaped eqns may also read R values directly, as rank-0 operands.
#   - iota has the shape S, R or O of the values beside it.
#   - all reductions of one kernel reduce the same axes of the same S; an R value may
#     feed S values (through the broadcast above) and so a later reduction.
#   - dot_general's operands are kernel inputs (no prologue).
#   - outputs are values the body computes (never an input passed through), of shape
#     S or R (reduction), S (elementwise), O (contraction); several outputs are common.
#   - literals stay inline in the body; kernel inputs are variables only.
kernel_p = register(
    "kernel", Pattern.CONTROL, _kernel_rule, _call_impl("kernel"), multiple_results=True
)
