"""Integer ranges: comparisons that the ranges of integer scalars decide, folded.

A loop counter's range is known at compile time: ``fori_loop(1, n - 1, body, a)`` is a
scan whose counter carry starts at 1 and adds 1 on each of its n - 2 steps, so in the
body it lies in [1, n - 2]. NumPy-style indexing normalises an index with
``select(i < 0, i + n, i)`` and ``.at[i].set`` drops a write unless ``0 <= i < n``; with
the counter's range those comparisons are known, fold to literals here, and
simplification drops the selects they fed: less code to compile and to run in every
iteration of the loop.

A range is a closed interval of a rank-0 integer value, propagated forward through
``add``, ``sub``, ``neg``, ``mul``, ``max``, ``min``, ``select``, ``rem`` by a positive
constant and integer conversions. A result whose interval leaves its dtype has no range
(it may wrap). What starts a range:

  literal        [v, v]
  scan carry     an induction variable, whose body result is ``carry + k`` (k a literal)
                 or the carry itself (k = 0), starting in [lo, hi]: in the body
                 [lo, hi + k (length - 1)] (mirrored for k < 0); after the loop
                 [lo + k length, hi + k length]
  while carry    a counter whose body result is ``carry + k`` (k > 0 a literal) under the
                 predicate ``carry < bound`` (a constant of the predicate, in [bl, bh]):
                 the body runs only while the counter is below the bound, so in the body
                 it lies in [lo, bh - 1] (``fori_loop`` with traced bounds), unless the
                 step past the bound may wrap (bh - 1 + k beyond the dtype)

A body is analysed with the ranges of the operands it reads as constants; ``cond``
branches with the ranges of their operands.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from ..ir import dtypes
from ..ir.core import Atom, ClosedJaxpr, Eqn, Jaxpr, Literal, Var
from .rewrite import Rebuilder, map_subjaxprs

Range = tuple[int, int]


def run(closed: ClosedJaxpr) -> tuple[ClosedJaxpr, Counter]:
    counts: Counter = Counter()
    return ClosedJaxpr(fold_ranges(closed.jaxpr, {}, counts), closed.consts), counts


def fold_ranges(jaxpr: Jaxpr, known: dict[Var, Range], counts: Counter) -> Jaxpr:
    """``jaxpr`` with the comparisons its ranges decide replaced by literals; ``known``
    holds the ranges of its invars (and is extended with those of its variables)."""
    decided_before = sum(counts.values())
    out = Rebuilder()
    for eqn in jaxpr.eqns:
        eqn = out.substituted(eqn)
        name = eqn.prim.name
        if name in COMPARE and (decided := _decide(name, eqn, known)) is not None:
            counts[f"{name}_decided"] += 1
            out.alias(eqn.outputs[0], Literal(decided, dtypes.bool_))
            continue
        if name in LOOPS:
            eqn = LOOPS[name](eqn, known, counts)
        elif name == "cond":
            eqn = _cond(eqn, known, counts)
        else:
            eqn = map_subjaxprs(eqn, lambda sub: fold_ranges(sub, {}, counts))
            if name in TRANSFER and (found := _transfer(name, eqn, known)) is not None:
                known[eqn.outputs[0]] = found
        out.add(eqn)
    return jaxpr if sum(counts.values()) == decided_before else out.finish(jaxpr)


# ------------------------------------------------------------------ ranges of atoms


def _tracked(atom: Atom) -> bool:
    return atom.aval.shape == () and dtypes.is_integer(atom.aval.dtype)


def _range(atom: Atom, known: dict[Var, Range]) -> Range | None:
    if not _tracked(atom):
        return None
    if isinstance(atom, Literal):
        value = int(atom.val)
        return (value, value)
    return known.get(atom)


def _fits(found: Range, dtype) -> Range | None:
    info = np.iinfo(dtype)
    return found if info.min <= found[0] and found[1] <= info.max else None


def _literal_int(atom: Atom) -> int | None:
    return int(atom.val) if isinstance(atom, Literal) and _tracked(atom) else None


# --------------------------------------------------------------- transfer functions


def _add(a: Range, b: Range) -> Range:
    return (a[0] + b[0], a[1] + b[1])


def _sub(a: Range, b: Range) -> Range:
    return (a[0] - b[1], a[1] - b[0])


def _mul(a: Range, b: Range) -> Range:
    corners = [x * y for x in a for y in b]
    return (min(corners), max(corners))


def _max(a: Range, b: Range) -> Range:
    return (max(a[0], b[0]), max(a[1], b[1]))


def _min(a: Range, b: Range) -> Range:
    return (min(a[0], b[0]), min(a[1], b[1]))


def _rem(a: Range, b: Range) -> Range | None:
    # fmod's result has the dividend's sign and is smaller than the divisor in size.
    if a[0] >= 0 and b[0] == b[1] and b[0] > 0:
        return (0, min(a[1], b[0] - 1))
    return None


BINARY = {"add": _add, "sub": _sub, "mul": _mul, "max": _max, "min": _min, "rem": _rem}
TRANSFER = {*BINARY, "neg", "select", "convert_element_type"}


def _transfer(name: str, eqn: Eqn, known: dict[Var, Range]) -> Range | None:
    (var,) = eqn.outputs
    if not _tracked(var):
        return None
    if name == "select":
        ranges = [_range(a, known) for a in eqn.inputs[1:]]
        found = None if None in ranges else (min(r[0] for r in ranges), max(r[1] for r in ranges))
    elif name == "convert_element_type":
        found = _range(eqn.inputs[0], known)
    elif name == "neg":
        a = _range(eqn.inputs[0], known)
        found = None if a is None else (-a[1], -a[0])
    else:
        a, b = (_range(x, known) for x in eqn.inputs)
        found = None if a is None or b is None else BINARY[name](a, b)
    return None if found is None else _fits(found, var.aval.dtype)


# ----------------------------------------------------------------------- decisions


def _lt(a: Range, b: Range) -> bool | None:
    if a[1] < b[0]:
        return True
    if a[0] >= b[1]:
        return False
    return None


def _le(a: Range, b: Range) -> bool | None:
    if a[1] <= b[0]:
        return True
    if a[0] > b[1]:
        return False
    return None


def _eq(a: Range, b: Range) -> bool | None:
    if a[0] == a[1] == b[0] == b[1]:
        return True
    if a[1] < b[0] or b[1] < a[0]:
        return False
    return None


def _negated(decision: bool | None) -> bool | None:
    return None if decision is None else not decision


COMPARE = {
    "lt": _lt,
    "le": _le,
    "gt": lambda a, b: _lt(b, a),
    "ge": lambda a, b: _le(b, a),
    "eq": _eq,
    "ne": lambda a, b: _negated(_eq(a, b)),
}


def _decide(name: str, eqn: Eqn, known: dict[Var, Range]) -> bool | None:
    a, b = (_range(x, known) for x in eqn.inputs)
    if a is None or b is None:
        return None
    return COMPARE[name](a, b)


# -------------------------------------------------------------------- control flow


def _producers(jaxpr: Jaxpr) -> dict[Var, Eqn]:
    return {var: eqn for eqn in jaxpr.eqns for var in eqn.outputs}


def _operand_ranges(invars, operands, known: dict[Var, Range]) -> dict[Var, Range]:
    """The ranges of a body's ``invars`` that read ``operands`` unchanged (consts)."""
    return {
        var: found
        for var, atom in zip(invars, operands, strict=True)
        if (found := _range(atom, known)) is not None
    }


def _step(producers: dict[Var, Eqn], carry: Var, result: Atom) -> int | None:
    """k when ``result`` is ``carry + k`` (or ``carry - (-k)``, or ``carry`` itself) for a
    literal k, else None."""
    if result is carry:
        return 0
    eqn = producers.get(result) if isinstance(result, Var) else None
    if eqn is None or eqn.prim.name not in ("add", "sub"):
        return None
    x, y = eqn.inputs
    if x is carry and (k := _literal_int(y)) is not None:
        return k if eqn.prim.name == "add" else -k
    if eqn.prim.name == "add" and y is carry and (k := _literal_int(x)) is not None:
        return k
    return None


def _scan(eqn: Eqn, known: dict[Var, Range], counts: Counter) -> Eqn:
    params = eqn.params
    body, length = params["jaxpr"], params["length"]
    num_consts, num_carry = params["num_consts"], params["num_carry"]
    inner = _operand_ranges(body.invars[:num_consts], eqn.inputs[:num_consts], known)
    producers = _producers(body)
    at = slice(num_consts, num_consts + num_carry)  # the carries (then the rows of xs)
    for carry, (var, atom) in enumerate(zip(body.invars[at], eqn.inputs[at], strict=True)):
        start = _range(atom, known)
        k = _step(producers, var, body.outvars[carry]) if length > 0 else None
        if start is None or k is None:
            continue
        span = k * (length - 1)
        inside = _fits((start[0] + min(span, 0), start[1] + max(span, 0)), var.aval.dtype)
        final = _fits((start[0] + k * length, start[1] + k * length), var.aval.dtype)
        if inside is None or final is None:
            continue
        inner[var] = inside
        known[eqn.outputs[carry]] = final
    new_body = fold_ranges(body, inner, counts)
    return eqn if new_body is body else eqn.replace(params={**params, "jaxpr": new_body})


def _while(eqn: Eqn, known: dict[Var, Range], counts: Counter) -> Eqn:
    params = eqn.params
    cond_jaxpr, body = params["cond_jaxpr"], params["body_jaxpr"]
    cond_n, body_n = params["cond_nconsts"], params["body_nconsts"]
    cond_consts = eqn.inputs[:cond_n]
    inits = eqn.inputs[cond_n + body_n :]
    inner = _operand_ranges(body.invars[:body_n], eqn.inputs[cond_n : cond_n + body_n], known)
    counter = _counter(cond_jaxpr, cond_n)
    if counter is not None:
        carry, bound = counter
        var = body.invars[body_n + carry]
        start = _range(inits[carry], known)
        k = _step(_producers(body), var, body.outvars[carry])
        limit = _range(bound if isinstance(bound, Literal) else cond_consts[bound], known)
        top = (limit[1] if limit is not None else np.iinfo(var.aval.dtype).max) - 1
        # Unless the step past the bound could wrap, and the loop run on from there.
        if start is not None and k is not None and 0 < k <= np.iinfo(var.aval.dtype).max - top:
            inner[var] = (start[0], max(start[0], top))
    cond_inner = _operand_ranges(cond_jaxpr.invars[:cond_n], cond_consts, known)
    new_cond = fold_ranges(cond_jaxpr, cond_inner, counts)
    new_body = fold_ranges(body, inner, counts)
    if new_cond is cond_jaxpr and new_body is body:
        return eqn
    return eqn.replace(params={**params, "cond_jaxpr": new_cond, "body_jaxpr": new_body})


def _counter(cond_jaxpr: Jaxpr, cond_n: int) -> tuple[int, Atom | int] | None:
    """(carry index, bound) for a predicate ``carry < bound``: the bound a literal, or the
    index of the predicate's constant that holds it; None for any other predicate."""
    (result,) = cond_jaxpr.outvars
    eqn = _producers(cond_jaxpr).get(result) if isinstance(result, Var) else None
    if eqn is None or eqn.prim.name != "lt":
        return None
    counter, bound = eqn.inputs
    carries = cond_jaxpr.invars[cond_n:]
    if counter not in carries or not _tracked(counter):
        return None
    if isinstance(bound, Literal):
        return carries.index(counter), bound
    if bound in cond_jaxpr.invars[:cond_n]:
        return carries.index(counter), cond_jaxpr.invars.index(bound)
    return None


def _cond(eqn: Eqn, known: dict[Var, Range], counts: Counter) -> Eqn:
    operands = eqn.inputs[1:]
    branches = tuple(
        fold_ranges(branch, _operand_ranges(branch.invars, operands, known), counts)
        for branch in eqn.params["branches"]
    )
    if all(new is old for new, old in zip(branches, eqn.params["branches"], strict=True)):
        return eqn
    return eqn.replace(params={**eqn.params, "branches": branches})


LOOPS = {"scan": _scan, "while": _while}
