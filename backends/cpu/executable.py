"""The compiled program as a callable, with its generated source and machine code on show."""

from __future__ import annotations

import functools
import sys
import threading
import weakref

import numpy as np

from ...ir import dtypes
from ...ir.core import ClosedJaxpr
from ..results import ResultCopies, compiled_storage
from .scalar import storage_dtype
from .threads import on_chosen_threads


class CpuExecutable:
    """Calls the compiled program: ``executable(*arrays) -> tuple of arrays``.

    The call is one call of the Numba dispatcher, whose signature was fixed at compile
    time (C-contiguous, writeable, aligned arrays of the traced dtypes). Any other array
    (a strided or Fortran-order view, a read-only or unaligned array) fails that match
    with a ``TypeError`` and is copied to a matching one, so the common call pays
    nothing for the uncommon one. float16 and bfloat16 arrays cross as views of their
    bits (``uint16``), which is how the generated code holds them. The program writes
    its largest outputs into arrays an ``OutputPool`` passes it. A result that may share
    memory with an argument, a constant or another result is copied (``ResultCopies``;
    the last results, which the caller copies into its arguments ``writes``, only where
    an earlier write-back would overwrite them). A program with parallel loops or BLAS
    calls runs on the threads chosen as each call starts (``threads.on_chosen_threads``).
    """

    def __init__(
        self,
        function,
        consts,
        program,
        jaxpr: ClosedJaxpr,
        pass_log=None,
        compile_stats=None,
        writes: tuple[int, ...] = (),
        addresses=None,
    ):
        self.function = function
        self.program = program
        self.jaxpr = jaxpr
        self.pass_log = pass_log
        self.compile_stats = compile_stats  # what compiling it cost (``CompileStats``)
        self._dtypes = [v.aval.dtype for v in jaxpr.jaxpr.invars]
        constvars = jaxpr.jaxpr.constvars
        consts = [_matching(c, v.aval.dtype) for c, v in zip(consts, constvars, strict=True)]
        # A launcher of kernels takes their addresses first (``units``).
        leading = [] if addresses is None else [addresses]
        self._call = (
            functools.partial(function, *leading, *consts) if consts or leading else function
        )
        if program.parallel or program.calls_blas:
            self._call = on_chosen_threads(self._call, program.calls_blas)
        if program.pooled:
            avals = [jaxpr.jaxpr.outvars[k].aval for k in program.pooled]
            self._call = OutputPool(self._call, program.pooled, avals)
        outputs = [v.aval.dtype for v in jaxpr.jaxpr.outvars]
        if any(map(dtypes.is_narrow_float, self._dtypes + outputs)):
            self._call = _narrow_float_views(self._call, self._dtypes, outputs)
        copies = ResultCopies(jaxpr.jaxpr, compiled_storage(program.liveness), writes)
        self._consts = consts
        self._copies = copies if copies else None  # None: every result is new memory

    def __call__(self, *args):
        try:
            results = self._call(*args)
        except TypeError:
            if len(args) != len(self._dtypes):
                raise
            results = None
        if results is None:
            # Outside the handler: the failed call's frames (and the arrays an OutputPool
            # lent it) are freed with its traceback.
            results = self._call(*map(_matching, args, self._dtypes))
        if self._copies is None:
            return results
        return self._copies.apply(results, self._consts, args)

    @property
    def source(self) -> str:
        """The generated Python module."""
        return self.program.source

    @property
    def kernels(self) -> list:
        """The kernels, in order (``kind``, ``name``, ``jaxpr``, ``inputs``, ``outputs``)."""
        return self.program.kernels

    def llvm_ir(self) -> str:
        """Numba's optimised LLVM IR of the program function, then of each kernel it
        calls by address (``units``)."""
        return self._code(assembly=False)

    def asm(self) -> str:
        """The machine code of the program function, then of each kernel."""
        return self._code(assembly=True)

    def _code(self, assembly: bool) -> str:
        """The program function's code, if it has one (a program of steps has none:
        ``step_machine.StepLauncher``), then each kernel's."""
        from .units import llvm_ir

        kernels = [llvm_ir(unit, assembly) for unit in self.program.units]
        if not hasattr(self.function, "py_func"):
            return "\n".join(kernels)
        inspect = self._inspectable.inspect_asm if assembly else self._inspectable.inspect_llvm
        return "\n".join([*inspect().values(), *kernels])

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


class OutputPool:
    """Calls a program that writes its large outputs into arrays passed after its
    arguments (``program.pooled_outputs``), with arrays it returned before wherever
    nothing else holds them any more.

    A new array of 32 MiB or more is memory the kernel maps and zeroes page by page as
    the program first writes it: for a 64 MiB output, more time than the loop that fills
    it. An array the pool made and the program returned is kept, ``KEPT`` per output;
    the next call reuses one whose only reference is the pool's own (no variable,
    container, view or buffer export holds it, and no weak reference points at it), so
    no caller can see it change. ``y = f(x)`` in a loop keeps the last result alive
    during the next call, so the pool alternates between two arrays. What this costs:
    up to ``KEPT`` arrays of each such output stay allocated while the executable lives.
    The lock makes concurrent calls take distinct arrays.
    """

    KEPT = 2

    def __init__(self, call, positions: list[int], avals):
        self._call = call
        self._positions = positions
        self._types = [(aval.shape, storage_dtype(aval.dtype)) for aval in avals]
        self._kept: list[list[np.ndarray]] = [[] for _ in positions]
        self._lock = threading.Lock()
        self.made = 0  # arrays allocated, over all outputs: a reused one is not counted

    def __call__(self, *args):
        with self._lock:
            arrays = [self._take(kept, *t) for kept, t in zip(self._kept, self._types, strict=True)]
        results = None
        try:
            results = self._call(*args, *arrays)
        finally:
            # A call that failed (a dispatcher's TypeError, which the executable answers
            # by copying the arguments) gave no one the arrays: they stay in the pool.
            with self._lock:
                for kept, position, array in zip(self._kept, self._positions, arrays, strict=True):
                    if results is None or results[position] is array:
                        kept.append(array)
                        del kept[: -self.KEPT]
        return results

    def _take(self, kept: list, shape, dtype) -> np.ndarray:
        index = _unheld(kept, _UNHELD)
        if index is not None:
            return kept.pop(index)
        self.made += 1
        return np.empty(shape, dtype)


def _unheld(kept: list, unheld: int) -> int | None:
    """The index of an array of ``kept`` that ``kept`` alone holds (its reference count
    seen here is ``unheld``) and no weak reference points at, or None."""
    for index in range(len(kept)):
        if sys.getrefcount(kept[index]) == unheld and not weakref.getweakrefcount(kept[index]):
            return index
    return None


def _unheld_count() -> int:
    """The reference count ``_unheld`` sees for an array only its list holds, which
    depends on the interpreter: measured, with ``_unheld`` itself."""
    kept = [np.empty(0)]
    return next(count for count in range(1, 16) if _unheld(kept, count) == 0)


_UNHELD = _unheld_count()


def _matching(value, dtype):
    array = np.require(np.asarray(value, dtype=dtype), requirements=("C", "A", "W"))
    return array.view(dtypes.uint16) if dtypes.is_narrow_float(dtype) else array


def _narrow_float_views(call, in_dtypes, out_dtypes):
    """``call`` taking and giving narrow float arrays, which the program holds as bits."""

    def bits(value, dtype):
        if dtypes.is_narrow_float(dtype) and getattr(value, "dtype", None) == dtype:
            return value.view(dtypes.uint16)
        return value

    def narrow_float_call(*args):
        results = call(*[bits(x, d) for x, d in zip(args, in_dtypes, strict=False)])
        return tuple(
            r.view(d) if dtypes.is_narrow_float(d) else r
            for r, d in zip(results, out_dtypes, strict=True)
        )

    return narrow_float_call
