"""The machine that runs a program's steps (``steps.py``): a ``numba.cfunc`` compiled once
per installation; and its launcher, ``StepLauncher``, which needs no code of the
program's own.

A compiled launcher took every argument and returned every output through Numba's
unboxing and boxing of each array, which is what LLVM then optimised: 0.9 s for a
two-layer transformer's training step and 4.4 s for eight layers (about 100 arrays in
and 100 out), growing with the program while its kernels did not. ``StepLauncher``
checks the arguments in Python, makes the outputs and the arena with NumPy, and calls
the machine through one entry compiled per process (``_entry``) that reads each array's
data pointer from the tuple of arrays itself. Measured (quiet, best of 7 x 2000 calls,
4x4 float64): a program of one kernel 3.45-3.52 us a call against 2.09 us compiled, one
of 40 kernel calls 6.8-7.0 against 6.1 us (checking the arguments in the entry instead
was slower: ctypes converts each extra argument); time to compiled code, 8 layers 4.96
-> 2.8 s, lstm_scan 1.08 -> 0.70 s, cnn_im2col 1.85 -> 1.45 s. ``run`` remains the call
of the machine from a compiled launcher (``NUMBAX_STEPS=0`` shows it; a Python or NumPy
that keeps tuples or arrays elsewhere falls back to it, ``launcher``).

Imported by generated launchers (as ``nbx_steps``) and when a program of steps is
compiled, so the program writer imports no Numba.
"""

from __future__ import annotations

import functools
import operator

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

from . import heap
from .steps import CALL, COPY, LOOP, NEXT, POINT, SET, SWAP, VIEW


@intrinsic
def _int64_pointer(typingctx, address):
    def codegen(context, builder, signature, values):
        return builder.inttoptr(values[0], ir.IntType(64).as_pointer())

    return types.CPointer(types.int64)(address), codegen


@intrinsic
def _call_kernel(typingctx, address, table):
    """Call the kernel at ``address`` with the pointer table at ``table`` (an int64)."""

    def codegen(context, builder, signature, values):
        pointer = ir.IntType(8).as_pointer()
        kernel = ir.FunctionType(ir.VoidType(), [pointer.as_pointer()])
        table = builder.inttoptr(values[1], pointer.as_pointer())
        builder.call(builder.inttoptr(values[0], kernel.as_pointer()), [table])
        return context.get_dummy_value()

    return types.void(address, table), codegen


@intrinsic
def _copy_bytes(typingctx, destination, source, nbytes):
    def codegen(context, builder, signature, values):
        pointer = ir.IntType(8).as_pointer()
        to, from_ = (builder.inttoptr(v, pointer) for v in values[:2])
        cgutils.raw_memcpy(builder, to, from_, values[2], 1)
        return context.get_dummy_value()

    return types.void(destination, source, nbytes), codegen


@njit(inline="always")
def _address(codes, at, pointers, arena):
    """The address an operand (two codes at ``at``: where, offset) stands for."""
    where = codes[at]
    if where >= 0:
        return pointers[where] + codes[at + 1]
    if where == -1:
        return arena + codes[at + 1]
    return _int64_pointer(arena - 2 - where)[0] + codes[at + 1]  # a row's pointer


def _machine(codes, pointers, arena, addresses):
    """Run the steps ``codes`` (module doc) over the arrays whose data ``pointers`` lists
    and the arena at ``arena``, calling the kernels at ``addresses``."""
    length, table_at = codes[0], arena + codes[1]
    table = _int64_pointer(table_at)
    step = 2
    while step < length:
        op = codes[step]
        if op == CALL:
            count = codes[step + 2]
            for k in range(count):
                table[k] = _address(codes, step + 3 + 2 * k, pointers, arena)
            _call_kernel(addresses[codes[step + 1]], table_at)
            step += 3 + 2 * count
        elif op == SET:
            value = _int64_pointer(table_at)
            value[0] = codes[step + 4]
            _copy_bytes(_address(codes, step + 1, pointers, arena), table_at, codes[step + 3])
            step += 5
        elif op == COPY:
            to = _address(codes, step + 1, pointers, arena)
            from_ = _address(codes, step + 3, pointers, arena)
            _copy_bytes(to, from_, codes[step + 5])
            step += 6
        elif op == VIEW:
            counter = _int64_pointer(arena + codes[step + 4])
            row = _address(codes, step + 2, pointers, arena) + counter[0] * codes[step + 5]
            _int64_pointer(arena + codes[step + 1])[0] = row
            step += 6
        elif op == LOOP:
            if codes[step + 1] > 0:
                _int64_pointer(arena + codes[step + 2])[0] = 0
                step += 4
            else:
                step += 4 + codes[step + 3]
        elif op == NEXT:
            loop = step - codes[step + 1]
            counter = _int64_pointer(arena + codes[loop + 2])
            counter[0] += 1
            step = loop + 4 if counter[0] < codes[loop + 1] else step + 2
        elif op == POINT:
            _int64_pointer(arena + codes[step + 1])[0] = _address(codes, step + 2, pointers, arena)
            step += 4
        elif op == SWAP:
            first = _int64_pointer(arena + codes[step + 1])
            second = _int64_pointer(arena + codes[step + 2])
            first[0], second[0] = second[0], first[0]
            step += 3


@functools.cache
def machine_address() -> int:
    """The address of ``_machine`` compiled as a C function (once per installation: Numba
    caches it on disk beside this module, loaded with the lean cache the kernels use)."""
    from numba.core import sigutils
    from numba.core.ccallback import CFunc

    from .cache import lean_cache

    int64s = types.CPointer(types.int64)
    signature = sigutils.normalize_signature(types.void(int64s, int64s, types.int64, int64s))
    machine = CFunc(_machine, signature, locals={}, options={"error_model": "numpy"})
    machine._cache = lean_cache(_machine)
    machine.compile()
    return machine.address


def with_machine(addresses: np.ndarray) -> np.ndarray:
    """The kernels' ``addresses`` and then the machine's, as a stepped launcher takes them."""
    return np.append(addresses, np.int64(machine_address()))


@intrinsic
def run(typingctx, machine, addresses, codes, arrays, arena):
    """Run the steps ``codes`` on the data of the tuple ``arrays`` and ``arena`` by the
    machine at ``machine`` (``machine_address``), with the kernels at ``addresses``."""

    def codegen(context, builder, signature, values):
        i64 = ir.IntType(64)
        table = cgutils.alloca_once(builder, i64, size=max(len(signature.args[3]), 1))
        for k, array_type in enumerate(signature.args[3].types):
            array = context.make_array(array_type)(
                context, builder, builder.extract_value(values[3], k)
            )
            builder.store(builder.ptrtoint(array.data, i64), builder.gep(table, [i64(k)]))

        def data(index):
            return context.make_array(signature.args[index])(context, builder, values[index]).data

        int64s = i64.as_pointer()
        function_type = ir.FunctionType(ir.VoidType(), [int64s, int64s, i64, int64s])
        function = builder.inttoptr(values[0], function_type.as_pointer())
        arena = builder.ptrtoint(data(4), i64)
        codes, kernels = (builder.bitcast(data(k), int64s) for k in (2, 1))
        builder.call(function, [codes, table, arena, kernels])
        return context.get_dummy_value()

    return types.void(machine, addresses, codes, arrays, arena), codegen


# --- the launcher of steps, compiled once per process ------------------------------------------

# Where CPython (3.11+, a release build) and NumPy keep what the entry reads: a tuple's
# items from byte 24 (after the reference count, the type and the size), an array's data
# pointer at byte 16 (after the reference count and the type). ``_entry`` checks them
# against ``ndarray.ctypes.data`` once per process before any program uses it.
_TUPLE_ITEMS = 24
_ARRAY_DATA = 16


class StepLauncher:
    """A program of steps run with no launcher code of its own: the arguments checked
    (an array of the program's dtype, C-contiguous, aligned, writeable: else
    ``TypeError``, which the executable answers by converting them, as it does a compiled
    launcher's), the outputs and the arena made here, and the machine called by an entry
    compiled once per process that reads each array's data pointer from the tuple
    itself (``_entry``).

    An arena of 32 MiB or more (``heap.MMAP_THRESHOLD_BYTES``) is kept for the next call:
    glibc maps a block that large anew for each allocation and the kernel zeroes it page
    by page as the steps first write it, which took 7% of an 8-layer transformer step's
    time (a 35 MB arena; ``clear_page_erms`` in perf). The arena holds only what the
    program computes and reads again within a call, never a result; a call takes the
    spare or, where another call holds it (a thread, a callback calling back), a new one.
    What this costs: one arena stays allocated while the launcher lives."""

    def __init__(self, plan):
        self.plan = plan
        self._dtypes = [np.dtype(d) for d in plan.dtypes]
        self._codes = plan.codes.ctypes.data
        self._entries = plan.arguments + len(plan.made) + 1  # the arena last
        self._arena = (plan.arena_nbytes, np.uint8)
        # A large arena is kept for the next call (``_spare``); the results never include it.
        self._keeps_arena = plan.arena_nbytes >= heap.MMAP_THRESHOLD_BYTES
        self._spare: list[np.ndarray] = []
        assert self._entries - 1 not in plan.results
        self._run = _entry()
        results = operator.itemgetter(*plan.results) if plan.results else lambda table: ()
        self._results = results if len(plan.results) != 1 else lambda table: (results(table),)
        self._addresses = None

    def __call__(self, addresses, *arrays):
        plan = self.plan
        for array, dtype in zip(arrays, self._dtypes, strict=True):
            if type(array) is not np.ndarray or array.dtype != dtype or not array.flags.carray:
                raise TypeError("an argument the steps cannot read where it lies")
        arena = self._spare.pop() if self._spare else np.empty(*self._arena)
        table = (*arrays, *[np.empty(*made) for made in plan.made], arena)
        if self._addresses is None or self._addresses[0] is not addresses:
            self._addresses = (addresses, addresses.ctypes.data)
        self._run(table, self._entries, self._codes, self._addresses[1])
        if self._keeps_arena:
            self._spare.append(arena)
        return self._results(table)


@functools.cache
def _entry():
    """``run(tuple, count, codes, addresses)``: the data pointers of the ``count`` arrays
    of ``tuple`` into a table, then the machine over them, the last array the arena."""
    import ctypes

    import llvmlite.binding as llvm

    from .llvm_kernels import _load, _machine

    i64, i8p = ir.IntType(64), ir.IntType(8).as_pointer()
    module = ir.Module("numbax_steps_entry")
    module.triple = llvm.get_process_triple()
    function = ir.Function(
        module,
        ir.FunctionType(ir.VoidType(), [i8p, i64, i64.as_pointer(), i64.as_pointer()]),
        "numbax_run_steps",
    )
    builder = ir.IRBuilder(function.append_basic_block("entry"))
    items, count, codes, kernels = function.args
    table = builder.alloca(i64, size=count)
    with cgutils.for_range(builder, count) as loop:
        slot = builder.gep(items, [builder.add(i64(_TUPLE_ITEMS), builder.mul(loop.index, i64(8)))])
        array = builder.load(builder.bitcast(slot, i8p.as_pointer()))
        data = builder.load(
            builder.bitcast(builder.gep(array, [i64(_ARRAY_DATA)]), i64.as_pointer())
        )
        builder.store(data, builder.gep(table, [loop.index]))
    arena = builder.load(builder.gep(table, [builder.sub(count, i64(1))]))
    machine_type = ir.FunctionType(
        ir.VoidType(), [i64.as_pointer(), i64.as_pointer(), i64, i64.as_pointer()]
    )
    machine = builder.inttoptr(i64(machine_address()), machine_type.as_pointer())
    builder.call(machine, [codes, table, arena, kernels])
    builder.ret_void()
    _, target, _ = _machine()
    code = target.emit_object(llvm.parse_assembly(str(module)))
    entry = ctypes.CFUNCTYPE(
        None, ctypes.py_object, ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p
    )(_load(code, "numbax_run_steps"))
    _check_layout()
    return entry


def _check_layout() -> None:
    """The entry's reading of tuples and arrays, checked against NumPy's own answer."""
    import ctypes

    arrays = (np.zeros(3), np.zeros((2, 2), np.float32)[:, :1].copy())
    items = ctypes.cast(id(arrays) + _TUPLE_ITEMS, ctypes.POINTER(ctypes.c_void_p))
    for k, array in enumerate(arrays):
        data = ctypes.cast(items[k] + _ARRAY_DATA, ctypes.POINTER(ctypes.c_void_p))[0]
        if items[k] != id(array) or data != array.ctypes.data:
            raise RuntimeError("numbax: this Python or NumPy keeps tuples or arrays elsewhere")


def launcher(plan) -> StepLauncher | None:
    """The launcher of the program of steps ``plan``, or None where this Python or NumPy
    keeps tuples or arrays where the entry does not read them (the program's launcher
    is then compiled, as one with control flow is)."""
    try:
        _entry()
    except RuntimeError:
        return None
    return StepLauncher(plan)
