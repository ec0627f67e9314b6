"""Control-flow primitives: ``cond`` (an n-way switch), ``while`` and ``scan``.

Each carries closure-converted sub-jaxprs in its params (no constvars: values a branch
or body captures are explicit leading operands), so every stage can read a loop body
as an ordinary jaxpr. Operand layouts, as in JAX:

  cond    (index, *operands)                   [branches]           index clamps to range
  while   (*cond_consts, *body_consts, *init)  [cond_jaxpr, body_jaxpr,
                                                cond_nconsts, body_nconsts]
  scan    (*consts, *init, *xs)                [jaxpr, length, reverse, num_consts, num_carry]

``scan``'s body maps ``(*consts, *carry, *x_slices)`` to ``(*carry, *y_slices)``; its
outputs are the final carry and the ``y`` slices stacked along a new leading axis.
"""

from __future__ import annotations

import numpy as np

from . import dtypes, interpret
from .core import Jaxpr, ShapedArray
from .primitive import Pattern, check, register


def _types(avals) -> str:
    return "(" + ", ".join(a.str_short() for a in avals) + ")"


def _check_closed(name: str, what: str, jaxpr) -> None:
    check(isinstance(jaxpr, Jaxpr), name, f"{what} must be a Jaxpr")
    check(not jaxpr.constvars, name, f"{what} must be closure-converted (no constvars)")


def _cond_rule(index: ShapedArray, *operands: ShapedArray, branches):
    check(isinstance(branches, tuple) and len(branches) >= 1, "cond", "needs a tuple of branches")
    check(
        index.shape == () and dtypes.is_integer(index.dtype),
        "cond",
        f"the branch index must be an integer scalar, got {index.str_short()}",
    )
    for i, branch in enumerate(branches):
        _check_closed("cond", f"branch {i}", branch)
    out_avals = branches[0].out_avals
    for i, branch in enumerate(branches):
        check(
            branch.in_avals == list(operands),
            "cond",
            f"branch {i} takes {_types(branch.in_avals)} but the operands are {_types(operands)}",
        )
        check(
            branch.out_avals == out_avals,
            "cond",
            f"branch {i} returns {_types(branch.out_avals)} but branch 0 returns "
            f"{_types(out_avals)}",
        )
    return out_avals


def _cond_body(run, operands, *, branches):
    index, *operands = operands
    # Out-of-range indices clamp, as lax.switch does: compiled code cannot raise.
    return run(branches[int(np.clip(index, 0, len(branches) - 1))], [], *operands)


_cond_impl = interpret.body_rule("cond", _cond_body)
cond_p = register("cond", Pattern.CONTROL, _cond_rule, _cond_impl, multiple_results=True)


def _split_while(args, cond_nconsts, body_nconsts):
    return (
        list(args[:cond_nconsts]),
        list(args[cond_nconsts : cond_nconsts + body_nconsts]),
        list(args[cond_nconsts + body_nconsts :]),
    )


def _while_rule(*avals: ShapedArray, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    _check_closed("while", "cond_jaxpr", cond_jaxpr)
    _check_closed("while", "body_jaxpr", body_jaxpr)
    check(cond_nconsts + body_nconsts <= len(avals), "while", "more consts than operands")
    cond_consts, body_consts, carry = _split_while(avals, cond_nconsts, body_nconsts)
    check(
        cond_jaxpr.in_avals == cond_consts + carry,
        "while",
        f"cond_jaxpr takes {_types(cond_jaxpr.in_avals)} but gets {_types(cond_consts + carry)}",
    )
    check(
        cond_jaxpr.out_avals == [ShapedArray((), dtypes.bool_)],
        "while",
        f"cond_jaxpr must return one bool scalar, not {_types(cond_jaxpr.out_avals)}",
    )
    check(
        body_jaxpr.in_avals == body_consts + carry,
        "while",
        f"body_jaxpr takes {_types(body_jaxpr.in_avals)} but gets {_types(body_consts + carry)}",
    )
    check(
        body_jaxpr.out_avals == carry,
        "while",
        f"body_jaxpr returns {_types(body_jaxpr.out_avals)} but the carry is {_types(carry)}",
    )
    return carry


def _while_body(run, operands, *, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    cond_consts, body_consts, carry = _split_while(operands, cond_nconsts, body_nconsts)
    while run(cond_jaxpr, [], *cond_consts, *carry)[0]:
        carry = run(body_jaxpr, [], *body_consts, *carry)
    return carry


_while_impl = interpret.body_rule("while", _while_body)
while_p = register("while", Pattern.CONTROL, _while_rule, _while_impl, multiple_results=True)


def _scan_rule(*avals: ShapedArray, jaxpr, length, reverse, num_consts, num_carry):
    _check_closed("scan", "jaxpr", jaxpr)
    check(isinstance(length, int) and length >= 0, "scan", f"bad length {length!r}")
    check(isinstance(reverse, bool), "scan", "reverse must be a bool")
    check(num_consts + num_carry <= len(avals), "scan", "more consts and carries than operands")
    consts = list(avals[:num_consts])
    carry = list(avals[num_consts : num_consts + num_carry])
    xs = avals[num_consts + num_carry :]
    for x in xs:
        check(
            x.ndim >= 1 and x.shape[0] == length,
            "scan",
            f"scanned operand {x.str_short()} must have leading dimension {length}",
        )
    x_slices = [x.update(shape=x.shape[1:]) for x in xs]
    check(
        jaxpr.in_avals == consts + carry + x_slices,
        "scan",
        f"body takes {_types(jaxpr.in_avals)} but gets {_types(consts + carry + x_slices)}",
    )
    carry_out = jaxpr.out_avals[:num_carry]
    check(
        carry_out == carry,
        "scan",
        f"body returns carry {_types(carry_out)} but the carry is {_types(carry)}",
    )
    ys = jaxpr.out_avals[num_carry:]
    return carry + [y.update(shape=(length,) + y.shape) for y in ys]


def _scan_body(run, operands, *, jaxpr, length, reverse, num_consts, num_carry):
    consts = operands[:num_consts]
    carry = operands[num_consts : num_consts + num_carry]
    xs = operands[num_consts + num_carry :]
    ys = [np.empty((length,) + y.shape, y.dtype) for y in jaxpr.out_avals[num_carry:]]
    for i in reversed(range(length)) if reverse else range(length):
        outs = run(jaxpr, [], *consts, *carry, *[x[i] for x in xs])
        carry = outs[:num_carry]
        for stacked, y in zip(ys, outs[num_carry:], strict=True):
            stacked[i] = y
    return carry + ys


_scan_impl = interpret.body_rule("scan", _scan_body)
scan_p = register("scan", Pattern.CONTROL, _scan_rule, _scan_impl, multiple_results=True)
