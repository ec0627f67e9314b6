"""The compiled program as a callable, with its generated source and machine code on show."""

from __future__ import annotations

import functools

import numpy as np

from ...ir.core import ClosedJaxpr


class CpuExecutable:
    """Calls the compiled program: ``executable(*arrays) -> tuple of arrays``.

    The call is one call of the Numba dispatcher, whose signature was fixed at compile
    time (C-contiguous, writeable, aligned arrays of the traced dtypes). Any other array
    (a strided or Fortran-order view, a read-only or unaligned array) fails that match
    with a ``TypeError`` and is copied to a matching one, so the common call pays
    nothing for the uncommon one.
    """

    def __init__(
        self, function, consts, program, jaxpr: ClosedJaxpr, pass_log=None, compile_stats=None
    ):
        self.function = function
        self.program = program
        self.jaxpr = jaxpr
        self.pass_log = pass_log
        self.compile_stats = compile_stats  # what compiling it cost (``CompileStats``)
        self._dtypes = [v.aval.dtype for v in jaxpr.jaxpr.invars]
        constvars = jaxpr.jaxpr.constvars
        consts = [_matching(c, v.aval.dtype) for c, v in zip(consts, constvars, strict=True)]
        self._call = functools.partial(function, *consts) if consts else function

    def __call__(self, *args):
        try:
            return self._call(*args)
        except TypeError:
            if len(args) != len(self._dtypes):
                raise
            return self._call(*map(_matching, args, self._dtypes))

    @property
    def source(self) -> str:
        """The generated Python module."""
        return self.program.source

    @property
    def kernels(self) -> list:
        """The kernels, in order (``kind``, ``name``, ``jaxpr``, ``inputs``, ``outputs``)."""
        return self.program.kernels

    def llvm_ir(self) -> str:
        """Numba's optimised LLVM IR of the program function."""
        return "\n".join(self._inspectable.inspect_llvm().values())

    def asm(self) -> str:
        """The machine code of the program function."""
        return "\n".join(self._inspectable.inspect_asm().values())

    @functools.cached_property
    def _inspectable(self):
        # Code loaded from Numba's disk cache keeps only object code: compile the program
        # again, in memory, to show its IR.
        if not sum(self.function.stats.cache_hits.values()):
            return self.function
        from numba import njit

        options = {k: v for k, v in self.function.targetoptions.items() if k != "nopython"}
        return njit(self.function.signatures, **options)(self.function.py_func)

    def __repr__(self):
        return f"<CpuExecutable {self.program.function_name}: {len(self.kernels)} kernels>"


def _matching(value, dtype):
    return np.require(np.asarray(value, dtype=dtype), requirements=("C", "A", "W"))
