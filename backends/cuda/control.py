"""Control flow on the host, over device kernels, for branches and for the loops that do
not fit one kernel of their own (``loop``): ``cond`` reads its branch index back and
runs that branch's block; ``while`` reads its condition back before every iteration;
``scan`` runs its body once per row of its ``xs``.

Each body is a block of the one compiled program (``program.build_block``): its kernels
were generated and compiled once, whatever the trip count. A carry may be the very
array it started as, and a scan step reads its row of ``xs`` as a view of the stacked
array (no copy): only updates the memory plan proves safe write in place. The stacked
``ys`` are written row by row, device to device, from each step's results, before the
carries move on.

A loop body writes its carries in place where the loop owns them (its updates then take
a carry's array instead of copying it): each initial value the body may write, unless it
dies at the loop, is copied once, here, before the first iteration.

Reading a branch index or a loop condition waits for the kernels before it: that is the
price of a data-dependent branch or trip count run by the host. A ``scan`` (and so a
``fori_loop`` with static bounds) never waits.

A loop body's results are new arrays every iteration, which would be a device
allocation each (and Numba frees device memory in batches that wait for the GPU). So a
loop keeps a ``Pool``: once an iteration has run, the arrays the body made in the
iteration before (now dead: no result passes them through) are handed to the next one.
Every launch is on one stream, so a kernel that writes a recycled array runs after the
kernels that read it.
"""

from __future__ import annotations

from . import callbacks, device, fft, linalg, sort  # noqa: F401  (they register runners)
from .collectives import RUNNERS as COLLECTIVE_RUNNERS
from .host_runners import RUNNERS
from .narrow_floats import storage_dtype


class Pool:
    """Device arrays a loop's body made and no longer needs, by (size, dtype)."""

    def __init__(self, stream):
        self.stream = stream
        self.free: dict[tuple, list] = {}
        self.made: set[int] = set()  # ids of the arrays this pool handed out

    def take(self, size: int, dtype):
        spare = self.free.get((size, storage_dtype(dtype)))
        array = spare.pop() if spare else device.device_empty(size, dtype, self.stream)
        self.made.add(id(array))
        return array

    def recycle(self, dead: list, alive: list) -> None:
        """Take back the arrays of ``dead`` this pool made, except those in ``alive``."""
        keep = {id(array) for array in alive}
        for array in dead:
            if id(array) in self.made and id(array) not in keep:
                self.made.discard(id(array))
                self.free.setdefault((array.size, array.dtype), []).append(array)


def host_scalar(array):
    """The one element of a device array, on the host (waits for the kernels before)."""
    return array.copy_to_host()[0]


def _initial_carries(step, operands: list, stream) -> list:
    """The first carries: a copy of each initial value whose memory the body may write
    while something else still reads it (``passes.memory.loop_ownership``), once."""
    copied = step.ownership.copied if step.ownership is not None else ()
    return [
        device.device_copy(array, stream) if k in copied else array
        for k, array in enumerate(operands)
    ]


@RUNNERS.rule("cond")
def run_cond(executable, step, operands: list, stream) -> list:
    index, *operands = operands
    last = len(step.bodies) - 1
    chosen = min(max(int(host_scalar(index)), 0), last)  # clamps, as lax.switch does
    return executable.run_block(step.bodies[chosen], operands, stream)


@RUNNERS.rule("while")
def run_while(executable, step, operands: list, stream) -> list:
    p = step.eqn.params
    split = p["cond_nconsts"] + p["body_nconsts"]
    cond_consts = operands[: p["cond_nconsts"]]
    body_consts = operands[p["cond_nconsts"] : split]
    carry = _initial_carries(step, operands[split:], stream)
    cond_block, body_block = step.bodies
    pool = Pool(stream)
    while True:
        (going,) = executable.run_block(cond_block, cond_consts + carry, stream, pool=pool)
        if not host_scalar(going):
            return carry
        pool.recycle([going], carry)
        results = executable.run_block(body_block, body_consts + carry, stream, pool=pool)
        pool.recycle(carry, results)
        carry = results


@RUNNERS.rule("scan")
def run_scan(executable, step, operands: list, stream) -> list:
    p = step.eqn.params
    n_consts, n_carry, length = p["num_consts"], p["num_carry"], p["length"]
    consts = operands[:n_consts]
    carry = _initial_carries(step, operands[n_consts : n_consts + n_carry], stream)
    xs = operands[n_consts + n_carry :]
    (body,) = step.bodies
    x_sizes = [var.aval.size for var in body.jaxpr.invars[n_consts + n_carry :]]
    ys_vars = step.outputs[n_carry:]
    ys = [device.device_empty(var.aval.size, var.aval.dtype, stream) for var in ys_vars]
    y_sizes = [var.aval.size // length if length else 0 for var in ys_vars]
    order = range(length - 1, -1, -1) if p["reverse"] else range(length)
    pool = Pool(stream)
    for i in order:
        rows = [x[i * n : (i + 1) * n] for x, n in zip(xs, x_sizes, strict=True)]
        results = executable.run_block(body, consts + carry + rows, stream, pool=pool)
        for stacked, result, n in zip(ys, results[n_carry:], y_sizes, strict=True):
            if n:
                stacked[i * n : (i + 1) * n].copy_to_device(result, stream=stream)
        pool.recycle(carry + results[n_carry:], results[:n_carry])
        carry = results[:n_carry]
    return carry + ys


# The collectives' primitives are registered once ``numbax.distributed`` or a collective
# is used, not by importing this backend.
for _name, _runner in COLLECTIVE_RUNNERS.items():
    RUNNERS.rule(_name, registered_later=True)(_runner)
