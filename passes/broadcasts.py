"""Fusion's preparation: cheap producers are recomputed where they are consumed.

Four rewrites, all of cheap equations only (never of an expensive one: exp, log,
division, reductions, dot_general):

- ``sink_windows``: a window ``f(a, b)[w]`` of a cheap elementwise ``f`` becomes
  ``f(a[w], b[w])`` (a window of a window is one window) when only a few windows read
  ``f``'s result and nothing else does. A chain of stencils (``y = g(x[1:], x[:-1])``,
  then ``z = h(y[1:], y[:-1])``) then reads only windows of ``x`` and fuses into one
  kernel that recomputes each window's share of ``y``, as XLA's loop fusion does, instead
  of storing ``y`` and reading it back: hdiff's Laplacian and fluxes are one loop.

- ``hoist_broadcasts``: ``broadcast(f(a, b))`` becomes ``f(broadcast(a), broadcast(b))``
  for a cheap elementwise ``f`` (and a broadcast of a broadcast or of an iota becomes
  one broadcast or iota). ``f`` then runs inside its consumer's loop nest, reading its
  operands at projected indices, instead of in a kernel of its own whose result is
  stored and broadcast back: ``x + b * 2`` with a bias ``b`` is one kernel.
- ``copy_cheap_producers``: a broadcast, iota or dtype conversion read by several
  equations is copied for each of them, so each consumer's kernel can take its own copy
  (reading the small source, not the broadcast array). Copies that end up as kernels
  of their own (their consumer could not take them in) are merged by CSE after fusion.
- ``copy_views``: a view (a window, pad or concatenate) read by several equations is
  taken again for each reader after the first, as a cheap producer is copied.
"""

from __future__ import annotations

from collections import defaultdict

from ..ir.core import Atom, Jaxpr, Var
from ..ir.primitive import PRIMITIVES, Pattern
from .kernels import is_view
from .rewrite import Rebuilder, atom_key

COPIED = ("broadcast_in_dim", "iota", "convert_element_type")
# A value is recomputed per window when at most this many windows read it (and nothing
# else does): each window recomputes it, so more windows would cost more than storing it
# (a 5- or 7-point stencil of a stencil stays two kernels), ...
MAX_WINDOWS = 4
# ... and when each window recomputes at most this many equations.
MAX_WINDOW_OPS = 32
# How many cheap ops one broadcast may be hoisted through (a chain, not a tree: the
# hoisted ops are shared through the memo).
MAX_HOIST_DEPTH = 16


def sink_windows(jaxpr: Jaxpr) -> Jaxpr:
    producers = {v: e for e in jaxpr.eqns for v in e.outputs}
    readers: dict[Var, list] = defaultdict(list)
    for eqn in jaxpr.eqns:
        for var in dict.fromkeys(a for a in eqn.inputs if isinstance(a, Var)):
            readers[var].append(eqn)
    outputs = {v for v in jaxpr.outvars if isinstance(v, Var)}

    def recomputed(var: Atom) -> bool:
        producer = producers.get(var) if isinstance(var, Var) else None
        users = readers.get(var, [])
        return (
            producer is not None
            and _cheap_elementwise(producer)
            and var not in outputs
            and len(users) <= MAX_WINDOWS
            and all(user.prim.name == "slice" for user in users)
        )

    out = Rebuilder()
    memo: dict = {}
    for eqn in jaxpr.eqns:
        sunk = eqn.prim.name == "slice" and recomputed(eqn.inputs[0])
        eqn = out.substituted(eqn)
        window = _window_of(eqn.params) if sunk else None
        if window is None or _recomputed_ops(out, eqn.inputs[0]) > MAX_WINDOW_OPS:
            out.add(eqn)
            continue
        out.alias(eqn.outputs[0], _window(out, eqn.inputs[0], window, memo, eqn.source_info))
    return out.finish(jaxpr)


def _window_of(params) -> tuple | None:
    """A slice's (starts, limits, strides); None for an empty one (nothing to compute)."""
    window = (params["start_indices"], params["limit_indices"], params["strides"])
    if any(limit <= start for start, limit, _ in zip(*window, strict=True)):
        return None
    return tuple(tuple(int(i) for i in part) for part in window)


def _recomputed_ops(out: Rebuilder, x: Atom) -> int:
    """How many equations a window of ``x`` recomputes: its cheap elementwise producers,
    up to any other equation (counted up to one past ``MAX_WINDOW_OPS``)."""
    seen: set[int] = set()
    stack = [x]
    while stack and len(seen) <= MAX_WINDOW_OPS:
        producer = out.producer_of(stack.pop())
        if producer is not None and _cheap_elementwise(producer) and id(producer) not in seen:
            seen.add(id(producer))
            stack.extend(a for a in producer.inputs if isinstance(a, Var))
    return len(seen)


def _window(out: Rebuilder, x: Atom, window, memo, source) -> Var:
    key = (atom_key(x), window)
    if key not in memo:
        memo[key] = _windowed(out, x, window, memo, source)
    return memo[key]


def _windowed(out: Rebuilder, x: Atom, window, memo, source) -> Var:
    producer = out.producer_of(x)
    shape = x.aval.shape
    if producer is not None and producer.prim.name == "slice":
        inner = _window_of(producer.params)
        if inner is not None:
            return _slice(out, producer.inputs[0], _composed(inner, window), source)
    elif (
        producer is not None
        and _cheap_elementwise(producer)
        and all(a.aval.shape in ((), shape) for a in producer.inputs)
    ):
        inputs = [
            a if a.aval.shape == () else _window(out, a, window, memo, source)
            for a in producer.inputs
        ]
        return out.emit1(producer.prim, inputs, producer.source_info, **producer.params)
    return _slice(out, x, window, source)


def _composed(inner, outer) -> tuple:
    """The window of ``x`` that ``x[inner][outer]`` reads (both non-empty)."""
    starts, limits, strides = [], [], []
    for start, stride, (o_start, o_limit, o_stride) in zip(
        inner[0], inner[2], zip(*outer, strict=True), strict=True
    ):
        count = -(-(o_limit - o_start) // o_stride)
        first = start + o_start * stride
        starts.append(first)
        strides.append(stride * o_stride)
        limits.append(first + (count - 1) * stride * o_stride + 1)
    return tuple(starts), tuple(limits), tuple(strides)


def _slice(out: Rebuilder, x: Atom, window, source) -> Var:
    starts, limits, strides = window
    params = {"start_indices": starts, "limit_indices": limits, "strides": strides}
    return out.emit1(PRIMITIVES["slice"], [x], source, **params)


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


def copy_views(jaxpr: Jaxpr) -> Jaxpr:
    """A view (a window, pad or concatenate, or a unit reshape of one) read by several
    equations is taken again for each reader after the first, with the views it reads,
    so each reader's kernel may read it in place: taking a view costs nothing there.
    Copies that end up as kernels of their own are merged again by CSE after fusion."""
    producers = {v: e for e in jaxpr.eqns for v in e.outputs}
    seen: set = set()
    out = Rebuilder()

    def copy(atom):
        producer = producers.get(atom) if isinstance(atom, Var) else None
        if producer is None or not is_view(producer):
            return atom
        if atom not in seen:  # the first reader takes the original
            seen.add(atom)
            return atom
        inputs = [copy(a) for a in producer.inputs]
        return out.emit1(producer.prim, inputs, producer.source_info, **producer.params)

    for eqn in jaxpr.eqns:
        inputs = [copy(a) for a in dict.fromkeys(eqn.inputs)]
        renamed = dict(zip(dict.fromkeys(eqn.inputs), inputs, strict=True))
        new_inputs = [renamed[a] for a in eqn.inputs]
        out.add(eqn.replace(inputs=new_inputs) if new_inputs != eqn.inputs else eqn)
    return out.finish(jaxpr)
