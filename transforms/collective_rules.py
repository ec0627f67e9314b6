"""The transform rules of the collectives (``ir/collectives.py``), registered into the
``jvp``, ``vjp`` and ``vmap`` tables.

Derivatives have the meaning of JAX's collectives inside ``shard_map``/``pmap``: the
program on process ``r`` is one piece of a *global* function of every process's inputs,
and the cotangent every process seeds is that of its own output, so ``grad`` on process
``r`` is the derivative of the sum of all processes' outputs with respect to process
``r``'s input. Each data-moving collective is linear; its transpose is the collective
that moves the cotangents back:

  psum          y_s = sum_r x_r                   x_ct = psum(y_ct)
  all_gather    y_s = stack_r x_r                 x_ct = psum_scatter(y_ct)
  psum_scatter  y_s = sum_r chunk_s(x_r)          x_ct = all_gather(y_ct), tiled
  all_to_all    chunk_j(y_s) = chunk_s(x_j)       x_ct = all_to_all(y_ct)
  ppermute      y_d = x_s for (s, d) in perm      x_ct = ppermute(y_ct, inverse perm)
  broadcast     y_s = x_root                      x_ct = psum(y_ct) on root, 0 elsewhere

``pmax``/``pmin`` pass the tangent of the process holding the extreme (shared equally
between tied processes, as ``reduce_max`` shares between tied elements). Batched, a
collective moves every example at once: the batch axis stays put, behind the leading
axis for the collectives that split it.
"""

from __future__ import annotations

import numpy as np

from ..ir import collectives as c
from ..tracer import lax
from ..tracer.core import bind
from . import derivatives as d
from .batching import BATCH_RULES, moveaxis
from .jvp import JVP_RULES
from .vjp_rules import VJP_RULES, deflinear, single_output


def _if_cotangent(transpose):
    def rule(ct, x, out, **params):
        return [None] if ct is None else [transpose(ct, x, **params)]

    return rule


def _all_gather_transpose(ct, x, *, comm, size):
    summed = bind(c.psum_scatter_p, ct, comm=comm, size=size)
    return lax.reshape(summed, d.aval(x).shape)


def _psum_scatter_transpose(ct, x, *, comm, size):
    gathered = bind(c.all_gather_p, ct, comm=comm, size=size)
    return lax.reshape(gathered, d.aval(x).shape)


def _ppermute_transpose(ct, x, *, comm, perm):
    return bind(c.ppermute_p, ct, comm=comm, perm=tuple((b, a) for a, b in perm))


def _broadcast_transpose(ct, x, *, comm, root):
    summed = bind(c.psum_p, ct, comm=comm)
    on_root = lax.eq(bind(c.axis_index_p, comm=comm), np.int32(root))
    return lax.mul(summed, lax.convert_element_type(on_root, d.aval(ct).dtype))


deflinear("psum")(_if_cotangent(lambda ct, x, *, comm: bind(c.psum_p, ct, comm=comm)))
deflinear("all_gather")(_if_cotangent(_all_gather_transpose))
deflinear("psum_scatter")(_if_cotangent(_psum_scatter_transpose))
deflinear("all_to_all")(
    _if_cotangent(lambda ct, x, *, comm, size: bind(c.all_to_all_p, ct, comm=comm, size=size)),
)
deflinear("ppermute")(_if_cotangent(_ppermute_transpose))
deflinear("broadcast")(_if_cotangent(_broadcast_transpose))


def _extreme_weights(x, out, comm):
    """1/k on the k processes whose element is the extreme, 0 on the others."""
    dtype = d.aval(x).dtype
    chosen = lax.convert_element_type(lax.eq(x, out), dtype)
    return lax.div(chosen, bind(c.psum_p, chosen, comm=comm))


def _extreme_jvp(prim):
    def rule(primals, tangents, *, comm):
        (x,), (t,) = primals, tangents
        out = bind(prim, x, comm=comm)
        if t is None:
            return [out], [None]
        return [out], [bind(c.psum_p, lax.mul(t, _extreme_weights(x, out, comm)), comm=comm)]

    return rule


def _extreme_transpose(ct, x, out, *, comm):
    if ct is None:
        return [None]
    return [lax.mul(bind(c.psum_p, ct, comm=comm), _extreme_weights(x, out, comm))]


for _prim in (c.pmax_p, c.pmin_p):
    JVP_RULES.rule(_prim)(_extreme_jvp(_prim))
    VJP_RULES.rule(_prim, build=single_output)(_extreme_transpose)


_PRIMS = {p.name: p for p in c.COLLECTIVES}


def _same_axis(name):
    def rule(args, dims, **params):
        return [bind(_PRIMS[name], *args, **params)], list(dims)

    return rule


for _name in ("psum", "pmax", "pmin", "ppermute", "broadcast"):
    BATCH_RULES.rule(_name)(_same_axis(_name))


@BATCH_RULES.rule("all_gather")
def _all_gather_batched(args, dims, *, comm, size):
    (x,), (dim,) = args, dims
    return [bind(c.all_gather_p, x, comm=comm, size=size)], [dim + 1]


def _behind_leading(name):
    """The leading axis is the one split among processes: the batch axis goes second."""

    def rule(args, dims, **params):
        (x,), (dim,) = args, dims
        x = moveaxis(x, dim, 1)
        return [bind(_PRIMS[name], x, **params)], [1]

    return rule


BATCH_RULES.rule("psum_scatter")(_behind_leading("psum_scatter"))
BATCH_RULES.rule("all_to_all")(_behind_leading("all_to_all"))
