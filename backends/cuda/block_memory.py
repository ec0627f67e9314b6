"""A block's memory on the device: the buffer of each intermediate, the updates the
launcher runs in place, and the map kernels that store their values straight into the
windows of those updates.

Each is the memory plan's (``passes.memory``), narrowed where the device needs it:
values that flow into or out of host-run control flow, and the block's results, get
arrays of their own.
"""

from __future__ import annotations

from ...ir.core import Eqn, Jaxpr
from ...passes.memory import Liveness, MemoryPlan
from ...passes.window_stores import update_window
from .steps import ControlStep, LaidOutKernel


def plan_block(jaxpr: Jaxpr, steps: list, plan: MemoryPlan) -> tuple:
    """(var -> buffer index, buffers, update output -> operand written in place): the
    pass's ``plan`` of the block (``passes.plan_memory``), or one buffer per
    intermediate should the plan ever share a buffer between types.

    Values that flow into or out of control flow are left out (each gets an array of its
    own): a branch or loop may return its operand as it is, so its result would share
    the operand's buffer, which the plan hands on after the operand's last reader. For
    the same reason an update whose operand is in a planned buffer writes in place only
    when its output is planned too (it then holds that buffer): a block's result is a
    new array, never a buffer that the next call or iteration writes again."""
    unplanned = set(jaxpr.outvars)
    for step in steps:
        if isinstance(step, ControlStep):
            unplanned.update(step.inputs)
            unplanned.update(step.outputs)
    for var, buffer in plan.buffer_of.items():
        held = plan.buffers[buffer]
        if held.size != var.aval.size or held.dtype != var.aval.dtype:
            break  # not a plan of exact-type buffers: do without
    else:
        kept = {v: b for v, b in plan.buffer_of.items() if v not in unplanned}
        return kept, plan.buffers, _in_place(plan.in_place, kept)
    intermediates = [v for e in jaxpr.eqns for v in e.outputs if v not in unplanned]
    kept = {v: k for k, v in enumerate(intermediates)}
    return kept, [v.aval for v in intermediates], _in_place(plan.in_place, kept)


def _in_place(in_place: dict, buffer_of: dict) -> dict:
    return {
        out: operand
        for out, operand in in_place.items()
        if operand not in buffer_of or buffer_of.get(out) == buffer_of[operand]
    }


def window_stores(steps: list, liveness: Liveness, in_place: dict) -> dict:
    """Per step index of a map kernel, its outputs that it stores straight into the
    window of the update taking them: {output position: (update's index, window)}.

    The liveness proves each store (``Liveness.window_stores``); the device adds two
    conditions of its own, neither about whether the store is legal: only ``map_kernel``
    writes stores (``_can_store``), and the launcher must run the update in place
    (``_runs_in_place``)."""
    windows: dict[int, dict] = {}
    for value, index in liveness.window_stores.items():
        made = liveness.made_at[value]
        update = liveness.eqns[index]
        if not _can_store(steps[made]) or not _runs_in_place(update, in_place):
            continue
        position = steps[made].eqn.outputs.index(value)
        windows.setdefault(made, {})[position] = (index, update_window(update))
    return windows


def _can_store(step) -> bool:
    """Whether ``step`` is a map kernel, the one generator that writes an output into a
    window (``elementwise.map_kernel``): a loop kernel, a host step or a kernel of
    another generator writes its outputs into arrays of their own."""
    return isinstance(step, LaidOutKernel) and step.can_store


def _runs_in_place(update: Eqn, in_place: dict) -> bool:
    """Whether the launcher runs ``update`` in place (``plan_block``'s ``in_place``): the
    map kernel then writes the operand's own buffer, which the update hands on. One the
    plan makes a block's result (a new array on every call) copies, so it may not."""
    return update.outputs[0] in in_place
