"""The host side of a compiled program: buffers, launches, results.

A call moves NumPy arguments to the device (device arrays are used where they are),
then launches the kernels in order on one stream. Intermediates live in the buffers of
the memory plan (``passes.plan_memory``: a buffer is reused once every reader of its
previous value has run); they are allocated on the first call and kept, like the
kernels' scratch space and the program's constants. Outputs get fresh device arrays on
every call, so a result stays valid however often the function runs again. Results are
Numba device arrays: they implement ``__cuda_array_interface__`` (CuPy, PyTorch and
the next numbax call take them without a copy) and ``np.asarray`` copies them to the
host. Nothing waits for the GPU: reading a result on the host does.
"""

from __future__ import annotations

import contextlib
import warnings

import numpy as np

from ...ir.core import Literal
from . import cublas, device
from .loader import compile_kernel, load_module
from .options import simulating
from .program import CudaProgram

try:  # the memory planner is a pass; without it every intermediate gets its own buffer
    from ...passes import plan_memory
except ImportError:  # pragma: no cover - only while the passes are being written
    plan_memory = None

_COMPILED: dict = {}  # module name -> kernels, so equal programs compile once per process


class CudaExecutable:
    """``executable(*arrays) -> list of device arrays``; ``.source`` is the kernels' code."""

    accepts_device_arrays = True  # api.py passes device arguments through untouched

    def __init__(self, program: CudaProgram):
        self.program = program
        self.source = program.source
        self.executions = 0
        if program.module_name not in _COMPILED:
            module, in_file = load_module(program.module_name, program.source)
            kernels, epilogues = [], {}
            for index, step in enumerate(program.steps):
                kernels.append(
                    compile_kernel(getattr(module, step.kernel.name), step.kernel, in_file)
                )
                plan = step.kernel.cublas
                if plan is not None and plan.epilogue is not None:
                    function = getattr(module, plan.epilogue.name)
                    epilogues[index] = compile_kernel(function, plan.epilogue, in_file)
            _COMPILED[program.module_name] = kernels, epilogues
        self.kernels, self.epilogues = _COMPILED[program.module_name]
        self.buffer_of, self.buffers = _plan(program)
        self._workspace = None  # planned buffers, scratch and constants, on first call
        self._launchers = None

    def __call__(self, *args):
        from numba import cuda

        self.executions += 1
        stream = cuda.default_stream()
        if self._workspace is None:
            self._allocate(stream)
        jaxpr = self.program.jaxpr
        env = dict(self._constants)
        for var, arg in zip(jaxpr.invars, args, strict=True):
            env[var] = device.device_input(arg, var.aval, stream)
        outvars = {v for v in jaxpr.outvars if not isinstance(v, Literal)}
        with _quiet_simulator():
            for index, step in enumerate(self.program.steps):
                for var in step.outputs:
                    if var in outvars or var not in self.buffer_of:
                        env[var] = device.device_empty(var.aval.size, var.aval.dtype, stream)
                    else:
                        env[var] = self._workspace[self.buffer_of[var]]
                self._run(index, step, env, stream)
        return [
            self._result(atom, aval, env, stream)
            for atom, aval in zip(jaxpr.outvars, self.program.out_avals, strict=True)
        ]

    def _run(self, index, step, env, stream) -> None:
        kernel = step.kernel
        for source, target in kernel.copies:
            env[step.outputs[target]].copy_to_device(env[step.inputs[source]], stream=stream)
        if kernel.cublas is not None:
            inputs = [env.get(atom) for atom in step.inputs]
            outputs = [env[var] for var in step.outputs]
            cublas.run(kernel.cublas, inputs, outputs, self._epilogue_launchers.get(index))
            return
        if not kernel.launch:
            return
        arrays = []
        for param in kernel.params:
            if param.role == "in":
                arrays.append(env[step.inputs[param.position]])
            elif param.role == "out":
                arrays.append(env[step.outputs[param.position]])
            else:
                arrays.append(self._scratch[(index, param.name)])
        self._launchers[index](*arrays)

    def _result(self, atom, aval, env, stream):
        if isinstance(atom, Literal):
            return device.device_constant(atom.val, aval, stream)
        return env[atom].reshape(aval.shape)

    def _allocate(self, stream) -> None:
        from numba import cuda

        self._workspace = [device.device_empty(b.size, b.dtype, stream) for b in self.buffers]
        self._scratch = {}
        for index, step in enumerate(self.program.steps):
            for param in step.kernel.params:
                if param.role == "scratch":
                    host = np.zeros(param.size, param.dtype)
                    self._scratch[(index, param.name)] = cuda.to_device(host, stream=stream)
        jaxpr = self.program.jaxpr
        self._constants = {
            var: device.device_input(value, var.aval, stream)
            for var, value in zip(jaxpr.constvars, self.program.consts, strict=True)
        }
        self._launchers = [
            kernel[step.kernel.grid, step.kernel.block, stream]
            for kernel, step in zip(self.kernels, self.program.steps, strict=True)
        ]
        self._epilogue_launchers = {}
        for index, epilogue in self.epilogues.items():
            plan = self.program.steps[index].kernel.cublas.epilogue
            self._epilogue_launchers[index] = epilogue[plan.grid, plan.block, stream]


@contextlib.contextmanager
def _quiet_simulator():
    """The simulator computes with NumPy scalars, which warn on 1/0 and overflow; the GPU
    returns inf/nan silently, and so does the simulated run."""
    if not simulating():
        yield
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


def _plan(program: CudaProgram):
    """(var -> buffer index, buffers): the pass's plan, or one buffer per intermediate."""
    jaxpr = program.jaxpr
    if plan_memory is not None:
        plan = plan_memory(jaxpr)
        for var, buffer in plan.buffer_of.items():
            held = plan.buffers[buffer]
            if held.size != var.aval.size or held.dtype != var.aval.dtype:
                break  # not a plan of exact-type buffers: do without
        else:
            return plan.buffer_of, plan.buffers
    outvars = set(jaxpr.outvars)
    intermediates = [v for e in jaxpr.eqns for v in e.outputs if v not in outvars]
    return {v: k for k, v in enumerate(intermediates)}, [v.aval for v in intermediates]
