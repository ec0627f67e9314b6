"""``numbax.optim``: gradient-based optimisers and learning-rate schedules, in optax's shape.

An optimiser is a pair of pure functions over pytrees, ``init(params) -> state`` and
``update(grads, state, params) -> (updates, state)``; the state is a pytree of arrays
(the step count a rank-0 int32 array), so a whole training step can go under ``jit``.
A learning rate is a float or a schedule, a function of the step count.

>>> import numpy as np, numbax
>>> opt = numbax.optim.sgd(learning_rate=0.5)
>>> params = {"w": np.array([1.0, 2.0])}
>>> state = opt.init(params)
>>> updates, state = opt.update({"w": np.array([1.0, 1.0])}, state, params)
>>> numbax.optim.apply_updates(params, updates)
{'w': array([0.5, 1.5])}
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from .ir.errors import NumbaxError, NumbaxTypeError, at_line
from .numpy_lib import numpy_api as xnp
from .tracer.lax import convert_element_type
from .tracer.pytree import tree_map
from .tracer.source_info import user_frame_info

__all__ = [
    "EmptyState",
    "GradientTransformation",
    "ScalarOrSchedule",
    "ScaleByAdamState",
    "ScaleByScheduleState",
    "Schedule",
    "TraceState",
    "adam",
    "adamw",
    "add_decayed_weights",
    "apply_updates",
    "chain",
    "constant_schedule",
    "cosine_decay_schedule",
    "exponential_decay",
    "identity",
    "linear_schedule",
    "scale",
    "scale_by_adam",
    "scale_by_learning_rate",
    "scale_by_schedule",
    "sgd",
    "trace",
    "warmup_cosine_decay_schedule",
]

Schedule = Callable[[Any], Any]
ScalarOrSchedule = float | Schedule

_INT32_MAX = np.iinfo(np.int32).max


class GradientTransformation(NamedTuple):
    """``init(params) -> state`` and ``update(updates, state, params=None) -> (updates,
    state)``; an optimiser is one of these, usually a ``chain`` of smaller ones."""

    init: Callable
    update: Callable


class EmptyState(NamedTuple):
    """The state of a transformation that keeps none."""


class TraceState(NamedTuple):
    trace: Any


class ScaleByAdamState(NamedTuple):
    count: Any
    mu: Any
    nu: Any


class ScaleByScheduleState(NamedTuple):
    count: Any


def _zero_count():
    return np.zeros((), np.int32)


def _increment(count):
    # Saturate instead of wrapping to a negative count, which would poison Adam's bias
    # correction and every schedule after 2**31 steps.
    return xnp.where(count < _INT32_MAX, xnp.add(count, 1), count)


def _as_dtype_of(value, array):
    """``value`` (a Python scalar, or an array a schedule computed in float64) in the
    dtype of ``array``, so that a float32 model stays float32."""
    return convert_element_type(value, array.dtype)


# ---------------------------------------------------------------------------------------
# Building blocks
# ---------------------------------------------------------------------------------------


def identity() -> GradientTransformation:
    """Pass the updates through unchanged."""
    return GradientTransformation(lambda params: EmptyState(), lambda u, s, p=None: (u, s))


def chain(*transformations: GradientTransformation) -> GradientTransformation:
    """Apply ``transformations`` one after another; the state is the tuple of theirs."""

    def init(params):
        return tuple(t.init(params) for t in transformations)

    def update(updates, state, params=None):
        new_state = []
        for t, s in zip(transformations, state, strict=True):
            updates, s = t.update(updates, s, params)
            new_state.append(s)
        return updates, tuple(new_state)

    return GradientTransformation(init, update)


def trace(decay: float, nesterov: bool = False) -> GradientTransformation:
    """Momentum: ``t = g + decay * t``; the update is ``t``, or ``g + decay * t`` with
    Nesterov's look-ahead."""

    def init(params):
        return TraceState(tree_map(xnp.zeros_like, params))

    def update(updates, state, params=None):
        new_trace = tree_map(lambda g, t: g + decay * t, updates, state.trace)
        if nesterov:
            updates = tree_map(lambda g, t: g + decay * t, updates, new_trace)
        else:
            updates = new_trace
        return updates, TraceState(new_trace)

    return GradientTransformation(init, update)


def scale_by_adam(
    b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8, eps_root: float = 0.0
) -> GradientTransformation:
    """Adam's direction (Kingma & Ba): bias-corrected first moment over the square root of
    the bias-corrected second moment."""

    def init(params):
        zeros = tree_map(xnp.zeros_like, params)
        return ScaleByAdamState(_zero_count(), zeros, tree_map(xnp.zeros_like, params))

    def update(updates, state, params=None):
        mu = tree_map(lambda g, m: b1 * m + (1 - b1) * g, updates, state.mu)
        nu = tree_map(lambda g, v: b2 * v + (1 - b2) * (g * g), updates, state.nu)
        count = _increment(state.count)
        correction1 = 1 - xnp.power(b1, count)
        correction2 = 1 - xnp.power(b2, count)

        def direction(m, v):
            m_hat = m / _as_dtype_of(correction1, m)
            v_hat = v / _as_dtype_of(correction2, v)
            return m_hat / (xnp.sqrt(v_hat + eps_root) + eps)

        return tree_map(direction, mu, nu), ScaleByAdamState(count, mu, nu)

    return GradientTransformation(init, update)


def add_decayed_weights(weight_decay: float) -> GradientTransformation:
    """Add ``weight_decay * params`` to the updates (decoupled weight decay, as AdamW)."""

    def update(updates, state, params=None):
        if params is None:
            raise NumbaxTypeError(
                at_line(
                    "weight decay needs the parameters: call opt.update(grads, state, params)",
                    user_frame_info(),
                )
            )
        return tree_map(lambda u, p: u + weight_decay * p, updates, params), state

    return GradientTransformation(lambda params: EmptyState(), update)


def scale(step_size: float) -> GradientTransformation:
    """Multiply the updates by a constant."""

    def update(updates, state, params=None):
        return tree_map(lambda u: u * _as_dtype_of(step_size, u), updates), state

    return GradientTransformation(lambda params: EmptyState(), update)


def scale_by_schedule(step_size_fn: Schedule) -> GradientTransformation:
    """Multiply the updates by ``step_size_fn(count)``, the count of earlier updates."""

    def init(params):
        return ScaleByScheduleState(_zero_count())

    def update(updates, state, params=None):
        step_size = step_size_fn(state.count)
        updates = tree_map(lambda u: u * _as_dtype_of(step_size, u), updates)
        return updates, ScaleByScheduleState(_increment(state.count))

    return GradientTransformation(init, update)


def scale_by_learning_rate(learning_rate: ScalarOrSchedule) -> GradientTransformation:
    """Multiply by ``-learning_rate`` (a descent step), a constant or a schedule."""
    if callable(learning_rate):
        return scale_by_schedule(lambda count: -learning_rate(count))
    if isinstance(learning_rate, bool) or not isinstance(learning_rate, (int, float, np.number)):
        raise NumbaxTypeError(
            at_line(
                f"learning_rate must be a float or a schedule (a function of the step "
                f"count), not {type(learning_rate).__name__}",
                user_frame_info(),
            )
        )
    return scale(-learning_rate)


# ---------------------------------------------------------------------------------------
# Optimisers
# ---------------------------------------------------------------------------------------


def sgd(
    learning_rate: ScalarOrSchedule, momentum: float | None = None, nesterov: bool = False
) -> GradientTransformation:
    """Stochastic gradient descent, with heavy-ball or Nesterov momentum.

    >>> import numpy as np, numbax
    >>> opt = numbax.optim.sgd(0.1, momentum=0.9, nesterov=True)
    >>> state = opt.init(np.zeros(2))
    """
    if nesterov and not momentum:
        raise NumbaxError(
            at_line("sgd(nesterov=True) needs a momentum, e.g. momentum=0.9", user_frame_info())
        )
    accumulate = trace(momentum, nesterov) if momentum else identity()
    return chain(accumulate, scale_by_learning_rate(learning_rate))


def adam(
    learning_rate: ScalarOrSchedule,
    b1: float = 0.9,
    b2: float = 0.999,
    eps: float = 1e-8,
    eps_root: float = 0.0,
) -> GradientTransformation:
    """Adam.

    >>> import numpy as np, numbax
    >>> opt = numbax.optim.adam(learning_rate=1e-3)
    >>> updates, state = opt.update(np.ones(2), opt.init(np.zeros(2)))
    >>> updates
    array([-0.001, -0.001])
    """
    return chain(scale_by_adam(b1, b2, eps, eps_root), scale_by_learning_rate(learning_rate))


def adamw(
    learning_rate: ScalarOrSchedule,
    b1: float = 0.9,
    b2: float = 0.999,
    eps: float = 1e-8,
    eps_root: float = 0.0,
    weight_decay: float = 1e-4,
) -> GradientTransformation:
    """Adam with decoupled weight decay (Loshchilov & Hutter): the decay is added to Adam's
    direction, so it is scaled by the learning rate but not by the second moment.

    >>> import numpy as np, numbax
    >>> opt = numbax.optim.adamw(learning_rate=1e-3, weight_decay=1e-2)
    >>> params = np.ones(2)
    >>> updates, state = opt.update(np.ones(2), opt.init(params), params)
    """
    return chain(
        scale_by_adam(b1, b2, eps, eps_root),
        add_decayed_weights(weight_decay),
        scale_by_learning_rate(learning_rate),
    )


def apply_updates(params, updates):
    """``params + updates``, leaf by leaf, each result in its parameter's dtype."""
    return tree_map(lambda p, u: _as_dtype_of(xnp.add(p, u), p), params, updates)


# ---------------------------------------------------------------------------------------
# Schedules: functions of the step count (a Python int or an int32 array, traced or not)
# ---------------------------------------------------------------------------------------


def constant_schedule(value: float) -> Schedule:
    """``value`` at every step."""
    return lambda count: value


def linear_schedule(
    init_value: float, end_value: float, transition_steps: int, transition_begin: int = 0
) -> Schedule:
    """From ``init_value`` at ``transition_begin`` to ``end_value`` ``transition_steps``
    later, constant before and after."""

    def schedule(count):
        done = xnp.clip(xnp.subtract(count, transition_begin), 0, transition_steps)
        return init_value + (end_value - init_value) * (done / max(transition_steps, 1))

    return schedule


def exponential_decay(
    init_value: float,
    transition_steps: int,
    decay_rate: float,
    transition_begin: int = 0,
    staircase: bool = False,
    end_value: float | None = None,
) -> Schedule:
    """``init_value * decay_rate ** ((count - transition_begin) / transition_steps)``,
    held at ``init_value`` before ``transition_begin`` and clipped at ``end_value``.

    >>> import numbax
    >>> float(numbax.optim.exponential_decay(1.0, transition_steps=10, decay_rate=0.5)(20))
    0.25
    """

    def schedule(count):
        progress = xnp.maximum(xnp.subtract(count, transition_begin), 0) / transition_steps
        if staircase:
            progress = xnp.floor(progress)
        decayed = init_value * xnp.power(decay_rate, progress)
        if end_value is None:
            return decayed
        clip = xnp.maximum if decay_rate < 1 else xnp.minimum
        return clip(decayed, end_value)

    return schedule


def cosine_decay_schedule(
    init_value: float, decay_steps: int, alpha: float = 0.0, exponent: float = 1.0
) -> Schedule:
    """Half a cosine from ``init_value`` down to ``alpha * init_value`` over
    ``decay_steps``, constant after (Loshchilov & Hutter's SGDR without restarts)."""

    def schedule(count):
        done = xnp.minimum(count, decay_steps) / decay_steps
        cosine = 0.5 * (1 + xnp.cos(math.pi * done))
        return init_value * ((1 - alpha) * xnp.power(cosine, exponent) + alpha)

    return schedule


def warmup_cosine_decay_schedule(
    init_value: float,
    peak_value: float,
    warmup_steps: int,
    decay_steps: int,
    end_value: float = 0.0,
    exponent: float = 1.0,
) -> Schedule:
    """Linear warmup from ``init_value`` to ``peak_value`` over ``warmup_steps``, then a
    cosine decay to ``end_value`` at ``decay_steps`` (counted from step 0, warmup
    included), as ``optax.warmup_cosine_decay_schedule``.

    >>> import numbax
    >>> lr = numbax.optim.warmup_cosine_decay_schedule(0.0, 1.0, 10, 110)
    >>> float(lr(5)), float(lr(10)), float(lr(60)), float(lr(110))
    (0.5, 1.0, 0.5, 0.0)
    """
    warmup = linear_schedule(init_value, peak_value, warmup_steps)
    alpha = end_value / peak_value if peak_value else 0.0
    decay = cosine_decay_schedule(peak_value, max(decay_steps - warmup_steps, 1), alpha, exponent)

    def schedule(count):
        return xnp.where(
            count < warmup_steps, warmup(count), decay(xnp.subtract(count, warmup_steps))
        )

    return schedule
