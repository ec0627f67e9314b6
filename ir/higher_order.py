"""Higher-order primitives: they carry sub-jaxprs in their params.

``jit_call`` calls a closure-converted jaxpr (no constvars: captured values are
passed as leading operands). ``checkpoint`` has the same form; only its VJP differs.
Their reference implementation interprets the sub-jaxpr; the public API replaces the
implementation of ``jit_call`` with one that compiles (see ``set_impl``).
"""

from __future__ import annotations

from .core import Jaxpr, ShapedArray
from .interpret import eval_jaxpr
from .primitive import Pattern, check, register


def _call_rule(name):
    def rule(*avals: ShapedArray, jaxpr: Jaxpr, **_):
        check(not jaxpr.constvars, name, "sub-jaxpr must be closure-converted")
        check(list(avals) == jaxpr.in_avals, name,
              f"operands {[a.str_short() for a in avals]} do not match the sub-jaxpr's inputs")
        return jaxpr.out_avals

    return rule


def _call_impl(*args, jaxpr: Jaxpr, **_):
    return eval_jaxpr(jaxpr, [], *args)


jit_call_p = register(
    "jit_call", Pattern.CONTROL, _call_rule("jit_call"), _call_impl, multiple_results=True
)
checkpoint_p = register(
    "checkpoint", Pattern.CONTROL, _call_rule("checkpoint"), _call_impl, multiple_results=True
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
kernel_p = register("kernel", Pattern.CONTROL, _kernel_rule, _call_impl, multiple_results=True)
