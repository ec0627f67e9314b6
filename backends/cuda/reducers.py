"""Accumulators of the reductions, and the block-level reduction that combines them.

An accumulator lives in a register per thread; each thread folds its share of the
reduced elements into it, then the threads that share an output (the "lanes" of a
"slot") combine their accumulators:

- through shared memory, a tree of log2(lanes) steps with a barrier between steps
  (works everywhere, including the simulator);
- with warp shuffles when the lanes of a slot are consecutive threads (rows): inside
  each warp with ``shfl_down_sync``, then across the warps of a slot through shared
  memory, one value per warp, reduced again with shuffles by every warp.

NumPy's semantics are kept: max/min propagate NaN; argmax/argmin return the first
occurrence (a NaN counts as the largest, as in NumPy); bool reductions count in int64 and
compare with zero at the end; int32 sums wrap around. Float32 sums accumulate in float64
(the per-thread serial part and the tree alike) and round once at the end: more accurate
than NumPy's pairwise sum however long each thread's share is. A sum of float16 or
bfloat16 values (which the ``narrow_floats`` pass widens to float32 in the kernel's
prologue) accumulates in float32, as NumPy's float16 sum and GPU libraries' bfloat16 sums
do: a float32 accumulator is far finer than the narrow result it rounds to, and the
kernel stays free of float64 arithmetic. The arithmetic is strict IEEE: kernels compile
without fastmath, so nothing assumes finite values.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...ir import dtypes
from .scalar import maximum, minimum
from .typed_expressions import cast, constant, type_name, wrap

# The position of an accumulator that has seen nothing: after every real position.
MISSING_INDEX = 1 << 62
REDUCERS = ("reduce_sum", "reduce_prod", "reduce_max", "reduce_min", "argmax", "argmin")
FULL_MASK = "0xFFFFFFFF"


@dataclass
class Accumulator:
    """The running value (and index, for argmax/argmin) of one reduction eqn."""

    eqn: object
    value: str  # register name
    dtype: np.dtype
    index: str | None = None  # argmax/argmin: position of the running value
    shared: str = ""  # shared-memory array names, declared by the kernel
    shared_index: str = ""

    @property
    def kind(self) -> str:
        return self.eqn.prim.name

    @property
    def is_arg(self) -> bool:
        return self.kind in ("argmax", "argmin")

    def identity(self) -> str:
        kind, dtype = self.kind, self.dtype
        if kind == "reduce_sum":
            return constant(0, dtype)
        if kind == "reduce_prod":
            return constant(1, dtype)
        largest = kind in ("reduce_max", "argmax")
        if dtype.kind == "f":
            return constant(-np.inf if largest else np.inf, dtype)
        info = np.iinfo(dtype)
        return constant(info.min if largest else info.max, dtype)

    def combine(self, a: str, b: str) -> str:
        """reduce_*: the combination of two partial values."""
        kind, dtype = self.kind, self.dtype
        if kind == "reduce_sum":
            return f"({a} + {b})" if dtype.kind == "f" else wrap(f"{a} + {b}", dtype)
        if kind == "reduce_prod":
            return f"({a} * {b})" if dtype.kind == "f" else wrap(f"{a} * {b}", dtype)
        return (maximum if kind == "reduce_max" else minimum)(a, b, dtype)

    def better(self, a: str, a_index: str, b: str, b_index: str) -> str:
        """argmax/argmin: whether (b, b_index) replaces (a, a_index): the larger (smaller)
        value, a NaN over any number, the smaller index among equals."""
        op = ">" if self.kind == "argmax" else "<"
        tie = f"({b} == {a} and {b_index} < {a_index})"
        if self.dtype.kind != "f":
            return f"({b} {op} {a} or {tie})"
        nan = f"({b} != {b} and ({a} == {a} or {b_index} < {a_index}))"
        return f"({nan} or {b} {op} {a} or {tie})"


def make_accumulators(w, eqns) -> list[Accumulator]:
    accumulators = []
    for eqn in eqns:
        dtype = eqn.inputs[0].aval.dtype
        if dtype == dtypes.bool_:
            dtype = dtypes.int64
        elif eqn.prim.name == "reduce_sum" and dtype.kind == "f" and dtype.itemsize < 8:
            dtype = dtypes.float32 if _sums_narrow_floats(w, eqn) else dtypes.float64
        name = f"acc_{w.letter(eqn.outputs[0])}"
        index = f"{name}_at" if eqn.prim.name in ("argmax", "argmin") else None
        accumulators.append(Accumulator(eqn, name, dtype, index))
    return accumulators


def _sums_narrow_floats(w, eqn) -> bool:
    """Whether ``eqn`` sums float16 or bfloat16 values widened to float32."""
    producer = w.producer.get(eqn.inputs[0])
    return (
        producer is not None
        and producer.prim.name == "convert_element_type"
        and dtypes.is_narrow_float(producer.inputs[0].aval.dtype)
    )


# Of the 48 KiB of static shared memory a block may declare, what the reductions may use.
SHARED_BUDGET = 40 * 1024


def shared_entries(lanes: int, slots: int, shuffle: bool) -> int:
    """Shared-memory entries per accumulator for a block reduction: one per thread for the
    tree; with shuffles one per warp, or none when a slot fits in a warp."""
    if not shuffle:
        return lanes * slots
    return slots * (lanes // 32) if lanes > 32 else 1


def entry_bytes(accumulators) -> int:
    return sum(acc.dtype.itemsize + (8 if acc.is_arg else 0) for acc in accumulators)


def declare_shared(w, accumulators, size: int) -> None:
    for acc in accumulators:
        acc.shared = f"sm_{acc.value}"
        w.line(f"{acc.shared} = cuda.shared.array({size}, {type_name(acc.dtype)})")
        if acc.is_arg:
            acc.shared_index = f"sm_{acc.index}"
            w.line(f"{acc.shared_index} = cuda.shared.array({size}, int64)")


def initialise(w, accumulators) -> None:
    for acc in accumulators:
        w.line(f"{acc.value} = {acc.identity()}")
        if acc.is_arg:
            w.line(f"{acc.index} = int64({MISSING_INDEX})")


def fold(w, acc: Accumulator, value: str, index: str | None = None) -> None:
    """acc <- combine(acc, value); ``value`` is a name or constant, ``index`` its position."""
    if value_dtype(acc.eqn) != acc.dtype:
        value = cast(value, acc.dtype)
    if not acc.is_arg:
        w.line(f"{acc.value} = {acc.combine(acc.value, value)}", w.eqn_text(acc.eqn))
        return
    with w.block(f"if {acc.better(acc.value, acc.index, value, index)}:"):
        w.line(f"{acc.value} = {value}", w.eqn_text(acc.eqn))
        w.line(f"{acc.index} = {index}")


def value_dtype(eqn):
    return eqn.inputs[0].aval.dtype


def fold_from(w, accumulators, load) -> None:
    """Fold in a partner's values: ``load(array_name) -> expression`` reads them."""
    for acc in accumulators:
        other = w.temp("u")
        w.line(f"{other} = {load(acc.shared)}")
        other_index = None
        if acc.is_arg:
            other_index = w.temp("u")
            w.line(f"{other_index} = {load(acc.shared_index)}")
        fold_partial(w, acc, other, other_index)


def fold_partial(w, acc, other: str, other_index: str | None) -> None:
    """acc <- combine(acc, other): another accumulator's value (and position)."""
    if not acc.is_arg:
        w.line(f"{acc.value} = {acc.combine(acc.value, other)}")
        return
    with w.block(f"if {acc.better(acc.value, acc.index, other, other_index)}:"):
        w.line(f"{acc.value} = {other}")
        w.line(f"{acc.index} = {other_index}")


def store_shared(w, accumulators, position: str) -> None:
    for acc in accumulators:
        w.line(f"{acc.shared}[{position}] = {acc.value}")
        if acc.is_arg:
            w.line(f"{acc.shared_index}[{position}] = {acc.index}")


def load_shared(w, accumulators, position: str) -> None:
    for acc in accumulators:
        w.line(f"{acc.value} = {acc.shared}[{position}]")
        if acc.is_arg:
            w.line(f"{acc.index} = {acc.shared_index}[{position}]")


def block_reduce(w, accumulators, lanes: int, lane_stride: int, shuffle: bool) -> None:
    """Combine the accumulators of each slot's ``lanes`` threads; every lane ends with the
    slot's result. All threads of the block must reach this code (it has barriers)."""
    if lanes == 1:
        return
    if shuffle:
        _shuffle_reduce(w, accumulators, lanes)
        return
    w.line("cuda.syncthreads()  # the previous reduction's results have been read")
    store_shared(w, accumulators, "tid")
    w.line("cuda.syncthreads()")
    step = w.temp("step")
    w.line(f"{step} = {lanes // 2}")
    with w.block(f"while {step} >= 1:"):
        partner = f"tid + {step}" if lane_stride == 1 else f"tid + {step} * {lane_stride}"
        with w.block(f"if lane < {step}:"):
            fold_from(w, accumulators, lambda array: f"{array}[{partner}]")
            store_shared(w, accumulators, "tid")
        w.line("cuda.syncthreads()")
        w.line(f"{step} //= 2")
    first_lane = "tid - lane" if lane_stride == 1 else f"tid - lane * {lane_stride}"
    load_shared(w, accumulators, first_lane)


def _shuffle(intrinsic: str, value: str, lane: str, dtype) -> str:
    """A warp shuffle of ``value``. The hardware shuffles 32- and 64-bit words: a complex
    value moves as its two parts, one narrower than 32 bits (bool, int8, float16, ...)
    widened to a 32-bit word and cast back."""
    dtype = np.dtype(dtype)
    if dtype.kind == "c":
        parts = [f"cuda.{intrinsic}({FULL_MASK}, {value}.{p}, {lane})" for p in ("real", "imag")]
        return cast(f"complex({parts[0]}, {parts[1]})", dtype)
    if dtype.itemsize < 4:
        word = cast(value, dtypes.float32 if dtype.kind == "f" else dtypes.int32)
        return cast(f"cuda.{intrinsic}({FULL_MASK}, {word}, {lane})", dtype)
    return f"cuda.{intrinsic}({FULL_MASK}, {value}, {lane})"


def _shuffle_steps(w, accumulators, width: int) -> None:
    if width == 1:
        return
    step = w.temp("step")
    w.line(f"{step} = {width // 2}")
    with w.block(f"while {step} >= 1:"):
        for acc in accumulators:
            other = w.temp("u")
            w.line(f"{other} = {_shuffle('shfl_down_sync', acc.value, step, acc.dtype)}")
            other_index = None
            if acc.is_arg:
                other_index = w.temp("u")
                w.line(f"{other_index} = cuda.shfl_down_sync({FULL_MASK}, {acc.index}, {step})")
            fold_partial(w, acc, other, other_index)
        w.line(f"{step} //= 2")


def _broadcast_from(w, accumulators, source_lane: str) -> None:
    for acc in accumulators:
        w.line(f"{acc.value} = {_shuffle('shfl_sync', acc.value, source_lane, acc.dtype)}")
        if acc.is_arg:
            w.line(f"{acc.index} = cuda.shfl_sync({FULL_MASK}, {acc.index}, {source_lane})")


def _shuffle_reduce(w, accumulators, lanes: int) -> None:
    """Rows: lanes are consecutive threads. Segments of up to 32 lanes reduce inside
    their warp; longer rows go through shared memory once, one value per warp."""
    _shuffle_steps(w, accumulators, min(lanes, 32))
    if lanes <= 32:
        _broadcast_from(w, accumulators, "tid % 32 - lane" if lanes < 32 else "0")
        return
    warps = lanes // 32
    w.line("cuda.syncthreads()  # the previous reduction's results have been read")
    with w.block("if tid % 32 == 0:"):
        store_shared(w, accumulators, "tid // 32")
    w.line("cuda.syncthreads()")
    if warps == 32:
        load_shared(w, accumulators, "slot * 32 + tid % 32")
    else:
        initialise(w, accumulators)
        with w.block(f"if tid % 32 < {warps}:"):
            load_shared(w, accumulators, f"slot * {warps} + tid % 32")
    _shuffle_steps(w, accumulators, warps)
    _broadcast_from(w, accumulators, "0")


def result(w, acc: Accumulator) -> str:
    """The reduction's output value, in its dtype, from the reduced accumulator."""
    out = acc.eqn.outputs[0].aval.dtype
    if acc.is_arg:
        return cast(acc.index, out)
    if out == dtypes.bool_:
        return f"({acc.value} != 0)"
    if out != acc.dtype:
        return cast(acc.value, out)
    return acc.value
