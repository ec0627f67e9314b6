"""The host side of a compiled program: buffers, launches, results.

A call moves NumPy arguments to the device (device arrays are used where they are),
then launches the kernels in order on one stream. Control flow runs on the host
(``control``): it reads a branch index or a loop condition back, and launches the
chosen body's kernels, once per iteration. Intermediates live in the buffers of
the memory plan (``program.plan_block``: a buffer is reused once every reader of its
previous value has run, as ``passes.memory.Liveness.overwrite_refusal`` proves; no
kernel writes over one of its own operands); they are allocated on the first call and
kept, like the kernels' scratch space and the program's constants. Outputs get fresh
device arrays on every call, so a result stays valid however often the function runs
again; a result that may be a constant, an argument or another result is copied
(``backends.results``). Results are Numba device arrays: they implement
``__cuda_array_interface__`` (CuPy, PyTorch and the next numbax call take them without a
copy) and ``np.asarray`` copies them to the host. Nothing waits for the GPU: reading a
result on the host does. An update whose value its kernel stored into the window already
(``program.StoredUpdate``) launches nothing: its output is its operand's buffer, handed
on.
"""

from __future__ import annotations

import contextlib
import threading
import warnings

import numpy as np

from ...ir.core import Literal
from ..results import ResultCopies
from . import control, cublas, device
from .loader import program_kernels
from .options import simulating
from .program import Block, ControlStep, CudaProgram, StoredUpdate

_SIMULATING = threading.Lock()  # see _quiet_simulator


class CudaExecutable:
    """``executable(*arrays) -> list of device arrays``; ``.source`` is the kernels' code."""

    accepts_device_arrays = True  # api.py passes device arguments through untouched

    def __init__(self, program: CudaProgram, writes: tuple[int, ...] = ()):
        self.program = program
        block = program.block
        # What the caller must not share: the program's constants, the arguments (a
        # device array passed in is the caller's), other results (``backends.results``).
        self._copies = ResultCopies(block.jaxpr, block.liveness.storage, writes)
        self.source = program.source
        self.executions = 0
        compiled = program_kernels(program)
        self.kernels, self.epilogues = compiled.kernels, compiled.epilogues
        self.kernel_counts = compiled.counts  # its distinct kernels by outcome (loader)
        self._plans = {id(block): block.plan for block in _blocks(program.block)}
        self._workspace = None  # planned buffers, scratch and constants, on first call
        self._launchers = None
        self._one_call = threading.Lock()

    def __call__(self, *args):
        # Calls share the workspace, and the first one allocates it: one call at a time
        # (its launches queue on the default stream, so the next call's writes to the
        # workspace run after this call's kernels have read it).
        with self._one_call:
            return self._run(*args)

    def _run(self, *args):
        from numba import cuda

        self.executions += 1
        stream = cuda.default_stream()
        if self._workspace is None:
            self._allocate(stream)
        block = self.program.block
        inputs = [
            device.device_input(arg, var.aval, stream)
            for var, arg in zip(block.jaxpr.invars, args, strict=True)
        ]
        with _quiet_simulator():
            results = self.run_block(block, inputs, stream, self._constants)
        consts = [self._constants[var] for var in block.jaxpr.constvars]
        results = self._copies.apply(
            results,
            consts,
            inputs,
            copy=lambda result: device.device_copy(result, stream),
            may_share=device.may_share,
        )
        return [
            device.as_result(result, aval)
            for result, aval in zip(results, self.program.out_avals, strict=True)
        ]

    def run_block(self, block, inputs: list, stream, env=None, pool=None) -> list:
        """Launch ``block``'s steps on flat device ``inputs``; its flat results. An output
        is a new array (from ``pool`` when given: a loop recycles its dead carries), or
        (when the block passes it through) one of the inputs."""
        env = dict(env or {})
        env.update(zip(block.jaxpr.invars, inputs, strict=True))
        buffer_of, _, in_place = self._plans[id(block)]
        workspace = self._workspace[id(block)]
        outvars = {v for v in block.jaxpr.outvars if not isinstance(v, Literal)}
        for step in block.steps:
            if isinstance(step, ControlStep):
                operands = [self.read(env, atom, stream) for atom in step.inputs]
                results = control.RUNNERS[step.eqn.prim.name](self, step, operands, stream)
                env.update(zip(step.outputs, results, strict=True))
                continue
            if isinstance(step, StoredUpdate):  # its value's kernel stored the window
                (var,) = step.outputs
                env[var] = env[in_place[var]]
                continue
            for var in step.outputs:
                if var in step.stored:  # in its update's window, which is another array
                    continue
                if var in in_place:  # the update writes into its dying operand's buffer
                    env[var] = env[in_place[var]]
                elif var in outvars and pool is not None:
                    env[var] = pool.take(var.aval.size, var.aval.dtype)
                elif var in outvars or var not in buffer_of:
                    env[var] = device.device_empty(var.aval.size, var.aval.dtype, stream)
                else:
                    env[var] = workspace[buffer_of[var]]
            self._launch(step, env, stream)
        return [self.read(env, atom, stream) for atom in block.jaxpr.outvars]

    def read(self, env, atom, stream):
        """The flat device array of a variable, or of a literal (a new constant)."""
        if isinstance(atom, Literal):
            return device.device_constant(atom.val, atom.aval, stream).reshape(atom.aval.size)
        return env[atom]

    def _launch(self, step, env, stream) -> None:
        kernel = step.kernel
        for source, target in kernel.copies:
            output, operand = env[step.outputs[target]], env[step.inputs[source]]
            if output is not operand:  # an update in place has nothing to copy
                output.copy_to_device(operand, stream=stream)
        if kernel.cublas is not None:
            inputs = [env.get(atom) for atom in step.inputs]
            outputs = [env[var] for var in step.outputs]
            cublas.run(kernel.cublas, inputs, outputs, self._epilogue_launchers.get(step.number))
            return
        if not kernel.launch:
            return
        arrays = []
        for param in kernel.params:
            if param.role == "in":
                arrays.append(env[step.inputs[param.position]])
            elif param.role == "out":
                arrays.append(env[step.outputs[param.position]])
            elif param.role == "var":
                arrays.append(self.read(env, param.var, stream))
            else:
                arrays.append(self._scratch[(step.number, param.name)])
        self._launchers[step.number](*arrays)

    def _allocate(self, stream) -> None:
        from numba import cuda

        self._workspace = {
            key: [device.device_empty(b.size, b.dtype, stream) for b in buffers]
            for key, (_, buffers, _) in self._plans.items()
        }
        self._scratch = {}
        for step in self.program.kernels:
            for param in step.kernel.params:
                if param.role == "scratch":
                    host = np.zeros(param.size, param.dtype)
                    self._scratch[(step.number, param.name)] = cuda.to_device(host, stream=stream)
        jaxpr = self.program.jaxpr
        self._constants = {
            var: device.device_input(value, var.aval, stream)
            for var, value in zip(jaxpr.constvars, self.program.consts, strict=True)
        }
        self._launchers = [
            kernel[step.kernel.grid, step.kernel.block, stream]
            for kernel, step in zip(self.kernels, self.program.kernels, strict=True)
        ]
        self._epilogue_launchers = {}
        for number, epilogue in self.epilogues.items():
            plan = self.program.kernels[number].kernel.cublas.epilogue
            self._epilogue_launchers[number] = epilogue[plan.grid, plan.block, stream]


@contextlib.contextmanager
def _quiet_simulator():
    """The simulator computes with NumPy scalars, which warn on 1/0 and overflow; the GPU
    returns inf/nan silently, and so does the simulated run. The simulator keeps the
    running kernel in a global, so simulated programs run one at a time."""
    if not simulating():
        yield
        return
    with _SIMULATING, warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


def _blocks(block: Block):
    """``block`` and every block of its control flow, nested ones included."""
    yield block
    for step in block.steps:
        if isinstance(step, ControlStep):
            for body in step.bodies:
                yield from _blocks(body)
