"""Control flow on the host, over device kernels: ``cond`` reads its branch index back
and runs that branch's block; ``while`` reads its condition back before every
iteration; ``scan`` runs its body once per row of its ``xs``.

Each body is a block of the one compiled program (``program.build_block``): its kernels
were generated and compiled once, whatever the trip count. Values never change in
place, so a carry may be the very array it started as, and a scan step reads its row of
``xs`` as a view of the stacked array (no copy). The stacked ``ys`` are written row by
row, device to device, from each step's results, before the carries move on.

Reading a branch index or a loop condition waits for the kernels before it: that is the
price of a data-dependent branch or trip count run by the host. A ``scan`` (and so a
``fori_loop`` with static bounds) never waits.
"""

from __future__ import annotations

from . import device


def host_scalar(array):
    """The one element of a device array, on the host (waits for the kernels before)."""
    return array.copy_to_host()[0]


def run_cond(executable, step, operands: list, stream) -> list:
    index, *operands = operands
    last = len(step.bodies) - 1
    chosen = min(max(int(host_scalar(index)), 0), last)  # clamps, as lax.switch does
    return executable.run_block(step.bodies[chosen], operands, stream)


def run_while(executable, step, operands: list, stream) -> list:
    p = step.eqn.params
    split = p["cond_nconsts"] + p["body_nconsts"]
    cond_consts = operands[: p["cond_nconsts"]]
    body_consts = operands[p["cond_nconsts"] : split]
    carry = operands[split:]
    cond_block, body_block = step.bodies
    while True:
        (going,) = executable.run_block(cond_block, cond_consts + carry, stream)
        if not host_scalar(going):
            return carry
        carry = executable.run_block(body_block, body_consts + carry, stream)


def run_scan(executable, step, operands: list, stream) -> list:
    p = step.eqn.params
    n_consts, n_carry, length = p["num_consts"], p["num_carry"], p["length"]
    consts = operands[:n_consts]
    carry = operands[n_consts : n_consts + n_carry]
    xs = operands[n_consts + n_carry :]
    (body,) = step.bodies
    x_sizes = [var.aval.size for var in body.jaxpr.invars[n_consts + n_carry :]]
    ys_vars = step.outputs[n_carry:]
    ys = [device.device_empty(var.aval.size, var.aval.dtype, stream) for var in ys_vars]
    y_sizes = [var.aval.size // length if length else 0 for var in ys_vars]
    order = range(length - 1, -1, -1) if p["reverse"] else range(length)
    for i in order:
        rows = [x[i * n : (i + 1) * n] for x, n in zip(xs, x_sizes, strict=True)]
        results = executable.run_block(body, consts + carry + rows, stream)
        for stacked, result, n in zip(ys, results[n_carry:], y_sizes, strict=True):
            if n:
                stacked[i * n : (i + 1) * n].copy_to_device(result, stream=stream)
        carry = results[:n_carry]
    return carry + ys


RUNNERS = {"cond": run_cond, "while": run_while, "scan": run_scan}
