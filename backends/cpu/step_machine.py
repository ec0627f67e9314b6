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
4x4 float64): a program of one kernel 3.6 us a call against 2.0 us compiled, one of 40
kernel calls 7.1 against 5.3 us; time to compiled code, 8 layers 4.96 -> 2.8 s, lstm_scan
1.08 -> 0.70 s, cnn_im2col 1.85 -> 1.45 s. ``run`` remains the call of the machine from a
compiled launcher (``NUMBAX_STEPS=0`` shows it; a Python or NumPy that keeps tuples or
arrays elsewhere falls back to it, ``launcher``).

Imported by generated launchers (as ``nbx_steps``) and when a program of steps is
compiled, so the program writer imports no Numba.
"""

from __future__ import annotations

import functools

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

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
# items from byte 24 (after the reference count, the type and the size); an object's type
# at byte 8; an array's data pointer at byte 16, its dtype's descriptor at byte 56 and its
# flags (an int) at byte 64 (``PyArrayObject_fields``). ``_check_layout`` checks each
# against NumPy's own answer once per process before any program uses the entry.
_TUPLE_ITEMS = 24
_OBJECT_TYPE = 8
_ARRAY_DATA = 16
_ARRAY_DESCR = 56
_ARRAY_FLAGS = 64
# NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED | NPY_ARRAY_WRITEABLE: ``flags.carray``.
_CARRAY = 0x0001 | 0x0100 | 0x0400


class StepLauncher:
    """A program of steps run with no launcher code of its own: the arguments checked
    (an array of the program's dtype, C-contiguous, aligned, writeable: else
    ``TypeError``, which the executable answers by converting them, as it does a compiled
    launcher's), the outputs and the arena made here, and the machine called by an entry
    compiled once per process that reads each array's data pointer from the tuple
    itself (``_entry``)."""

    def __init__(self, plan):
        self.plan = plan
        self._dtypes = [np.dtype(d) for d in plan.dtypes]
        # What the entry compares each argument's descriptor with (the dtypes themselves
        # kept alive here, so their addresses stay theirs).
        self._descriptors = np.array([id(d) for d in self._dtypes] or [0], np.int64)
        self._codes = plan.codes.ctypes.data
        self._entries = plan.arguments + len(plan.made) + 1  # the arena last
        self._addresses = None

    def __call__(self, addresses, *arrays):
        plan = self.plan
        if len(arrays) != plan.arguments:
            raise TypeError(f"{plan.arguments} arguments expected, {len(arrays)} given")
        made = tuple(np.empty(shape, dtype) for shape, dtype in plan.made)
        table = (*arrays, *made, np.empty(plan.arena_nbytes, np.uint8))
        if self._addresses is None or self._addresses[0] is not addresses:
            self._addresses = (addresses, addresses.ctypes.data)
        call = (table, self._entries, self._codes, self._addresses[1])
        if _entry()(*call, plan.arguments, self._descriptors.ctypes.data):
            self._checked(arrays)  # the entry's quick checks failed: ask NumPy, then run
            _entry()(*call, 0, 0)
        return tuple(table[k] for k in plan.results)

    def _checked(self, arrays) -> None:
        """Each argument an array of the program's dtype, C-contiguous, aligned and
        writeable, else ``TypeError`` (which the executable answers by converting them,
        as it does a compiled launcher's): what the entry checks by the descriptor's
        identity, asked of NumPy where that failed (an equal dtype of another object)."""
        for array, dtype in zip(arrays, self._dtypes, strict=True):
            if type(array) is not np.ndarray or array.dtype != dtype or not array.flags.carray:
                raise TypeError("an argument the steps cannot read where it lies")


@functools.cache
def _entry():
    """``run(tuple, count, codes, addresses, checked, descriptors)``: 1, having run
    nothing, where one of the first ``checked`` items of ``tuple`` is not an ndarray
    whose dtype's descriptor is ``descriptors[k]`` and whose flags say C-contiguous,
    aligned and writeable; else the data pointers of its ``count`` arrays into a table,
    the machine over them (the last array the arena), and 0."""
    import ctypes

    import llvmlite.binding as llvm

    from .llvm_kernels import _load, _machine

    i32, i64, i8p = ir.IntType(32), ir.IntType(64), ir.IntType(8).as_pointer()
    module = ir.Module("numbax_steps_entry")
    module.triple = llvm.get_process_triple()
    signature = [i8p, i64, i64.as_pointer(), i64.as_pointer(), i64, i64.as_pointer()]
    function = ir.Function(module, ir.FunctionType(i64, signature), "numbax_run_steps")
    builder = ir.IRBuilder(function.append_basic_block("entry"))
    items, count, codes, kernels, checked, descriptors = function.args

    def item(index):
        slot = builder.gep(items, [builder.add(i64(_TUPLE_ITEMS), builder.mul(index, i64(8)))])
        return builder.load(builder.bitcast(slot, i8p.as_pointer()))

    def field(obj, offset: int, kind):
        return builder.load(builder.bitcast(builder.gep(obj, [i64(offset)]), kind.as_pointer()))

    ndarray = i64(id(np.ndarray))  # a static type: its address is fixed for the process
    with cgutils.for_range(builder, checked) as loop:
        array = item(loop.index)
        wrong = builder.or_(
            builder.icmp_unsigned("!=", field(array, _OBJECT_TYPE, i64), ndarray),
            builder.icmp_unsigned(
                "!=",
                field(array, _ARRAY_DESCR, i64),
                builder.load(builder.gep(descriptors, [loop.index])),
            ),
        )
        flags = builder.and_(field(array, _ARRAY_FLAGS, i32), i32(_CARRAY))
        wrong = builder.or_(wrong, builder.icmp_unsigned("!=", flags, i32(_CARRAY)))
        with builder.if_then(wrong, likely=False):
            builder.ret(i64(1))
    table = builder.alloca(i64, size=count)
    with cgutils.for_range(builder, count) as loop:
        builder.store(field(item(loop.index), _ARRAY_DATA, i64), builder.gep(table, [loop.index]))
    arena = builder.load(builder.gep(table, [builder.sub(count, i64(1))]))
    machine_type = ir.FunctionType(
        ir.VoidType(), [i64.as_pointer(), i64.as_pointer(), i64, i64.as_pointer()]
    )
    machine = builder.inttoptr(i64(machine_address()), machine_type.as_pointer())
    builder.call(machine, [codes, table, arena, kernels])
    builder.ret(i64(0))
    _, target, _ = _machine()
    code = target.emit_object(llvm.parse_assembly(str(module)))
    pointer, whole = ctypes.c_void_p, ctypes.c_int64
    entry = ctypes.CFUNCTYPE(whole, ctypes.py_object, whole, pointer, pointer, whole, pointer)(
        _load(code, "numbax_run_steps")
    )
    _check_layout()
    return entry


def _check_layout() -> None:
    """The entry's reading of tuples and arrays, checked against NumPy's own answer."""
    import ctypes

    def at(address: int, offset: int, kind=ctypes.c_void_p):
        return ctypes.cast(address + offset, ctypes.POINTER(kind))[0]

    strided = np.zeros((4, 4), np.float32)[:, :2]
    arrays = (np.zeros(3), np.zeros((2, 2), np.int32)[:, :1].copy(), strided)
    items = ctypes.cast(id(arrays) + _TUPLE_ITEMS, ctypes.POINTER(ctypes.c_void_p))
    for k, array in enumerate(arrays):
        found = (
            items[k],
            at(items[k], _OBJECT_TYPE),
            at(items[k], _ARRAY_DATA),
            at(items[k], _ARRAY_DESCR),
            at(items[k], _ARRAY_FLAGS, ctypes.c_int32) & _CARRAY == _CARRAY,
        )
        expected = (id(array), id(np.ndarray), array.ctypes.data, id(array.dtype))
        if found != (*expected, bool(array.flags.carray)):
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
