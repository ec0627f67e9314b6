"""Fusion's preparation: cheap producers are recomputed where they are consumed.

Two rewrites, both of cheap equations only (never of an expensive one: exp, log,
division, reductions, dot_general):

- ``hoist_broadcasts``: ``broadcast(f(a, b))`` becomes ``f(broadcast(a), broadcast(b))``
  for a cheap elementwise ``f`` (and a broadcast of a broadcast or of an iota becomes
  one broadcast or iota). ``f`` then runs inside its consumer's loop nest, reading its
  operands at projected indices, instead of in a kernel of its own whose result is
  stored and broadcast back: ``x + b * 2`` with a bias ``b`` is one kernel.
- ``copy_cheap_producers``: a broadcast, iota or dtype conversion read by several
  equations is copied for each of them, so each consumer's kernel can take its own copy
  (reading the small source, not the broadcast array). Copies that end up as kernels
  of their own (their consumer could not take them in) are merged by CSE after fusion.
"""

from __future__ import annotations

from ..ir.core import Atom, Jaxpr, Var
from ..ir.primitive import PRIMITIVES, Pattern
from .rewrite import Rebuilder, atom_key

COPIED = ("broadcast_in_dim", "iota", "convert_element_type")
# How many cheap ops one broadcast may be hoisted through (a chain, not a tree: the
# hoisted ops are shared through the memo).
MAX_HOIST_DEPTH = 16


def hoist_broadcasts(jaxpr: Jaxpr) -> Jaxpr:
    out = Rebuilder()
    memo: dict = {}
    for eqn in jaxpr.eqns:
        eqn = out.substituted(eqn)
        if eqn.prim.name != "broadcast_in_dim":
            out.add(eqn)
            continue
        shape, dims = eqn.params["shape"], tuple(eqn.params["broadcast_dimensions"])
        result = _broadcast(out, eqn.inputs[0], shape, dims, memo, 0, eqn.source_info)
        out.alias(eqn.outputs[0], result)
    return out.finish(jaxpr)


def _broadcast(out: Rebuilder, x: Atom, shape, dims, memo, depth, source) -> Var:
    key = (atom_key(x), shape, dims)
    if key not in memo:
        memo[key] = _hoisted(out, x, shape, dims, memo, depth, source)
    return memo[key]


def _hoisted(out: Rebuilder, x: Atom, shape, dims, memo, depth, source) -> Var:
    producer = out.producer_of(x)
    if producer is not None and depth < MAX_HOIST_DEPTH:
        name = producer.prim.name
        if name == "broadcast_in_dim":
            inner = tuple(dims[d] for d in producer.params["broadcast_dimensions"])
            return _broadcast(out, producer.inputs[0], shape, inner, memo, depth, source)
        if name == "iota":
            axis = producer.params["dimension"]
            if producer.params["shape"][axis] == shape[dims[axis]]:
                return out.emit1(
                    producer.prim,
                    [],
                    source,
                    dtype=producer.params["dtype"],
                    shape=shape,
                    dimension=dims[axis],
                )
        elif _cheap_elementwise(producer):
            inputs = _spread(out, producer.inputs, shape, dims, memo, depth + 1, source)
            if inputs is not None:
                return out.emit1(producer.prim, inputs, producer.source_info, **producer.params)
    return out.emit1(
        PRIMITIVES["broadcast_in_dim"], [x], source, shape=shape, broadcast_dimensions=dims
    )


def _spread(out, inputs, shape, dims, memo, depth, source):
    """The operands of a hoisted op: non-scalars broadcast; rank-0 ones stay, as the op
    broadcasts them itself, unless all are rank-0 (then the first variable is
    broadcast, so the result still has the broadcast's shape)."""
    if all(a.aval.shape == () for a in inputs):
        index = next((i for i, a in enumerate(inputs) if isinstance(a, Var)), None)
        if index is None:
            return None
        widened = _broadcast(out, inputs[index], shape, (), memo, depth, source)
        return [widened if i == index else a for i, a in enumerate(inputs)]
    return [
        a if a.aval.shape == () else _broadcast(out, a, shape, dims, memo, depth, source)
        for a in inputs
    ]


def _cheap_elementwise(eqn) -> bool:
    return eqn.prim.pattern is Pattern.ELEMENTWISE and not eqn.prim.expensive


def copy_cheap_producers(jaxpr: Jaxpr) -> Jaxpr:
    readers: dict[Var, int] = {}
    for eqn in jaxpr.eqns:
        for var in dict.fromkeys(a for a in eqn.inputs if isinstance(a, Var)):
            readers[var] = readers.get(var, 0) + 1
    producers = {v: e for e in jaxpr.eqns for v in e.outputs}
    out = Rebuilder()

    def copied(atom: Atom) -> bool:
        producer = producers.get(atom) if isinstance(atom, Var) else None
        return producer is not None and producer.prim.name in COPIED and readers[atom] >= 2

    def copy(atom: Atom, copies: dict) -> Atom:
        # Post-order from an explicit stack: a chain of conversions may be long.
        stack = [atom]
        while stack:
            top = stack[-1]
            if not copied(top) or top in copies:
                stack.pop()
                continue
            producer = producers[top]
            pending = [a for a in producer.inputs if copied(a) and a not in copies]
            if pending:
                stack.extend(reversed(pending))
                continue
            stack.pop()
            inputs = [copies.get(a, a) if isinstance(a, Var) else a for a in producer.inputs]
            copies[top] = out.emit1(producer.prim, inputs, producer.source_info, **producer.params)
        return copies.get(atom, atom) if isinstance(atom, Var) else atom

    for eqn in jaxpr.eqns:
        copies: dict = {}
        inputs = [copy(a, copies) for a in eqn.inputs]
        out.add(eqn.replace(inputs=inputs) if inputs != eqn.inputs else eqn)
    return out.finish(jaxpr)
