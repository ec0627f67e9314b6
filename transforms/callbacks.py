"""The transform rules of the callback primitives (``ir/callbacks.py``).

- ``debug_callback`` is not differentiable (``jvp`` and ``vjp`` bind it on the primals
  and push nothing through it: the primal is printed, tangents are not). Batched, it
  calls its function once per example, in order, as ``jax.debug.print`` does.
- ``pure_callback`` is a Python function numbax cannot look into: its derivative rules
  refuse, naming ``custom_vjp``. Batched, it calls the function once per example and
  stacks the results (JAX's default ``vmap_method="sequential"``).

A batching rule registers a new function, which loops over the examples and calls the
one it batches, so the backends only ever call a function on whole arrays.
"""

from __future__ import annotations

import numpy as np

from ..ir.callbacks import call, debug_callback_p, pure_callback_p, register_callback
from ..ir.errors import GradientError, at_line
from ..tracer.core import bind
from ..tracer.source_info import user_frame_info
from .batching import BATCH_RULES, axis_size, batched_aval, moveaxis
from .jvp import JVP_RULES
from .vjp_rules import VJP_RULES


def _examples(arrays, batched, size: int):
    """Each example's operands: row ``i`` of the batched arrays (still an array when
    it is rank 0), the unbatched ones as they are."""
    for i in range(size):
        yield [a[i, ...] if b else a for a, b in zip(arrays, batched, strict=True)]


def _batch_front(args, dims):
    """The operands with their batch dimension first, and which ones are batched."""
    moved = [x if d is None else moveaxis(x, d, 0) for x, d in zip(args, dims, strict=True)]
    return moved, [d is not None for d in dims]


@BATCH_RULES.rule("debug_callback")
def _debug_callback_batched(args, dims, *, callback: int):
    size = axis_size(args, dims)
    moved, batched = _batch_front(args, dims)

    def per_example(*arrays):
        for example in _examples(arrays, batched, size):
            call(callback, *example)

    bind(debug_callback_p, *moved, callback=register_callback(per_example))
    return [], []


@BATCH_RULES.rule("pure_callback")
def _pure_callback_batched(args, dims, *, callback: int, result_avals: tuple):
    size = axis_size(args, dims)
    moved, batched = _batch_front(args, dims)

    def per_example(*arrays):
        rows = [call(callback, *example) for example in _examples(arrays, batched, size)]
        return tuple(
            np.stack([row[k] for row in rows]) if rows else np.empty((0, *a.shape), a.dtype)
            for k, a in enumerate(result_avals)
        )

    outs = bind(
        pure_callback_p,
        *moved,
        callback=register_callback(per_example),
        result_avals=tuple(batched_aval(a, size) for a in result_avals),
    )
    return outs, [0] * len(outs)


@JVP_RULES.rule(pure_callback_p)
@VJP_RULES.rule(pure_callback_p)
def _no_derivative(*_, **__):
    raise GradientError(
        at_line(
            "pure_callback has no derivative rule: numbax cannot differentiate a Python "
            "function it calls. Give the function its derivative with numbax.custom_vjp "
            "(the forward and the backward may each call pure_callback), or stop the "
            "gradient at its operands with numbax.stop_gradient.",
            user_frame_info(),
        )
    )
