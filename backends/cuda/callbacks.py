"""Callbacks into Python (``ir/callbacks.py``) on the host, between the kernels.

A callback is a step the host runs (``program.ControlStep``, without bodies): it waits
for the kernels before it, copies its operands to the host, calls the function, and
copies a ``pure_callback``'s results to the device for the kernels after it. A
``debug_callback`` in a loop body runs once per iteration, so that loop is run by the
host too (a callback is no scalar rule: ``loop.element_shape`` refuses it).
"""

from __future__ import annotations

from ...ir.callbacks import call
from ...ir.core import Eqn
from ...ir.higher_order import kernel_p
from . import device
from .host_runners import RUNNERS

NAMES = ("debug_callback", "pure_callback")


def sole_op(eqn: Eqn, names) -> Eqn | None:
    """The one eqn of a kernel made of one op of ``names``, over the kernel body's
    variables; None for any other eqn."""
    if eqn.prim is not kernel_p:
        return None
    body = eqn.params["jaxpr"]
    if len(body.eqns) != 1 or body.eqns[0].prim.name not in names:
        return None
    return body.eqns[0]


def host_call(eqn: Eqn, names=NAMES) -> Eqn | None:
    """The callback (or other op of ``names`` the host runs) ``eqn`` runs, over the
    block's variables: ``eqn`` itself, or the one op of a kernel made of one; None for
    anything else."""
    if eqn.prim.name in names:
        return eqn
    inner = sole_op(eqn, names)
    if inner is None:
        return None
    body = eqn.params["jaxpr"]
    env = dict(zip(body.invars, eqn.inputs, strict=True))
    env.update(zip(body.outvars, eqn.outputs, strict=True))
    return inner.replace(
        inputs=[env.get(a, a) for a in inner.inputs],
        outputs=[env.get(v, v) for v in inner.outputs],  # unread results keep their vars
    )


def _on_host(step, operands: list, stream) -> list:
    """The operands as NumPy arrays of their shapes, once the kernels before are done."""
    arrays = [
        device.to_host(array, atom.aval, stream)
        for array, atom in zip(operands, step.inputs, strict=True)
    ]
    stream.synchronize()
    return arrays


def run_debug_callback(executable, step, operands: list, stream) -> list:
    call(step.eqn.params["callback"], *_on_host(step, operands, stream))
    return []


def run_pure_callback(executable, step, operands: list, stream) -> list:
    results = call(step.eqn.params["callback"], *_on_host(step, operands, stream))
    return [
        device.device_input(result, var.aval, stream)
        for result, var in zip(results, step.outputs, strict=True)
    ]


RUNNERS.rule("debug_callback")(run_debug_callback)
RUNNERS.rule("pure_callback")(run_pure_callback)
