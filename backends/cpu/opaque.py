"""Emitters for the ops fusion leaves alone: data movement and indexing, one op per kernel,
registered in ``opaque_emitters.EMITTERS`` with those of ``callbacks.py``, ``linalg.py``,
``fft.py`` and ``collectives.py``, which this module imports so that the table is complete.

Each emitter returns the lines that bind the output name. A reshape and a slice of whole
rows (``x[s:s + k]``, a C-contiguous view: ``passes.memory.is_row_window``, which the
memory plan counts as sharing ``x``'s memory) are Numba's views (a single row ``x[s][None]``
and a reshape that only drops or adds leading axes of one an index: Numba compiles an
index in a fraction of a slice's or a reshape's time); every other result is a
new array (never ``ascontiguousarray``, which returns a contiguous slice itself and would
let the memory plan reuse a buffer that is still read). ``transpose``, ``slice``,
``dynamic_slice``, ``concatenate`` and ``pad`` fill it with loop nests rather than
Numba's ``.copy()``, ``np.concatenate``, ``np.full`` and slice assignment: Numba
compiles a loop nest in about half the time (``_window_copy``). The indexing ops
(``gather``, ``scatter``) and ``cumsum`` are explicit loops, whose semantics are the
IR's rather than NumPy's: a gather clamps an out-of-range index, a scatter drops an
out-of-range update, dynamic slices clamp their starts so the window fits (see
``ir/structural.py``). An update (``dynamic_update_slice``, ``scatter``) writes into its
operand's array when the memory plan proves the operand dies there
(``passes.memory.Liveness.in_place``), and into a copy otherwise.
"""

from __future__ import annotations

from ...ir.core import Eqn, Literal
from ...passes.memory import is_row_window
from . import callbacks, collectives, fft, linalg, scalar, sorting  # noqa: F401 - fill EMITTERS
from .loopnest import tuple_source
from .opaque_emitters import EMITTERS


def _dtype(aval) -> str:
    return scalar.dtype_source(aval.dtype)


def _slices(bounds) -> str:
    """``[a:b, c:d]`` from (start, stop[, step]) source strings; ``[()]`` for rank 0."""
    if not bounds:
        return "[()]"
    return "[" + ", ".join(":".join(map(str, b)) for b in bounds) + "]"


@EMITTERS.rule("reshape", "squeeze", "expand_dims")
def _reshape(program, eqn: Eqn, inputs, out) -> list[str]:
    shape = eqn.outputs[0].aval.shape
    if not shape:  # Numba cannot reshape to rank 0
        return [
            f"{out} = np.empty((), {_dtype(eqn.outputs[0].aval)})",
            f"{out}[()] = {inputs[0]}.reshape((1,))[0]",
        ]
    # A literal's array is a constant of the module, read-only: a view of it is copied,
    # since an update may write into the view in place.
    if isinstance(eqn.inputs[0], Literal):
        return [f"{out} = {inputs[0]}.reshape({tuple_source(shape)}).copy()"]
    # Leading axes of length one dropped or added (``x[i]`` of a traced index, a row
    # broadcast): an index, which Numba compiles in a fraction of a reshape's time.
    old = eqn.inputs[0].aval.shape
    ones = abs(len(old) - len(shape))
    for longer, shorter, index in ((old, shape, "0"), (shape, old, "None")):
        if ones and longer == (1,) * ones + shorter:
            return [f"{out} = {inputs[0]}[{', '.join([index] * ones)}]"]
    return [f"{out} = {inputs[0]}.reshape({tuple_source(shape)})"]


@EMITTERS.rule("transpose")
def _transpose(program, eqn, inputs, out) -> list[str]:
    """A loop nest over the result (see ``_window_copy`` for why not ``.copy()``)."""
    aval = eqn.outputs[0].aval
    nest = _Nest(program)
    indices = nest.loops(aval.shape, "t")
    source = [""] * len(indices)
    for index, axis in zip(indices, eqn.params["permutation"], strict=True):
        source[axis] = index
    nest.line(f"{out}[{', '.join(indices) or '()'}] = {inputs[0]}[{', '.join(source) or '()'}]")
    return program.new_array(out, aval.shape, aval.dtype) + nest.lines


@EMITTERS.rule("slice")
def _slice(program, eqn, inputs, out) -> list[str]:
    params = eqn.params
    bounds = [
        (start, stop) if step == 1 else (start, stop, step)
        for start, stop, step in zip(
            params["start_indices"], params["limit_indices"], params["strides"], strict=True
        )
    ]
    if not bounds:
        return [f"{out} = {inputs[0]}.copy()"]
    if is_row_window(eqn):
        return [_row_view(eqn, inputs[0], out, bounds[0][0])]
    return _window_copy(program, eqn, inputs[0], out, params["start_indices"], params["strides"])


def _row_view(eqn, x: str, out: str, start) -> str:
    """``out = x[start:start + k]``, a view of whole rows (``is_row_window``); a single
    row as ``x[start][None]``, which Numba compiles in a fraction of a slice's time."""
    rows = eqn.outputs[0].aval.shape[0]
    window = f"[{start}][None]" if rows == 1 else _slices([(start, f"{start} + {rows}")])
    return f"{out} = {x}{window}  # a view: whole rows"


def _window_copy(program, eqn, x: str, out: str, starts, steps) -> list[str]:
    """Lines binding ``out`` to a new array holding ``x``'s window from ``starts`` (ints
    or names) by ``steps``: a loop nest, which Numba compiles in about half the time of
    a slice's ``.copy()`` (or a slice assignment) and LLVM vectorises as well."""
    aval = eqn.outputs[0].aval
    nest = _Nest(program)
    indices = nest.loops(aval.shape, "s")
    source = ", ".join(map(_offset, indices, starts, steps))
    nest.line(f"{out}[{', '.join(indices)}] = {x}[{source}]")
    return program.new_array(out, aval.shape, aval.dtype) + nest.lines


@EMITTERS.rule("concatenate")
def _concatenate(program, eqn, inputs, out) -> list[str]:
    if len(inputs) == 1:
        return [f"{out} = {inputs[0]}.copy()"]
    # One loop nest per operand (see ``_window_copy`` for why not ``np.concatenate``).
    aval, axis = eqn.outputs[0].aval, eqn.params["dimension"]
    nest, at = _Nest(program), 0
    for x, atom in zip(inputs, eqn.inputs, strict=True):
        nest.close_all()
        indices = nest.loops(atom.aval.shape, "c")
        target = [_offset(index, at if k == axis else 0, 1) for k, index in enumerate(indices)]
        nest.line(f"{out}[{', '.join(target)}] = {x}[{', '.join(indices)}]")
        at += atom.aval.shape[axis]
    return program.new_array(out, aval.shape, aval.dtype) + nest.lines


@EMITTERS.rule("pad")
def _pad(program, eqn, inputs, out) -> list[str]:
    aval = eqn.outputs[0].aval
    x_aval = eqn.inputs[0].aval
    if not aval.shape:
        return [f"{out} = {inputs[0]}.copy()"]
    fill = program.scalar_of(eqn.inputs[1])
    nest = _Nest(program)
    nest.line(f"{out}[{', '.join(nest.loops(aval.shape, 'p'))}] = {fill}")
    nest.close_all()
    indices = nest.loops(x_aval.shape, "p")
    lows = [lo for lo, _ in eqn.params["padding_config"]]
    target = ", ".join(map(_offset, indices, lows, [1] * len(indices)))
    nest.line(f"{out}[{target}] = {inputs[0]}[{', '.join(indices)}]")
    return program.new_array(out, aval.shape, aval.dtype) + nest.lines


def _offset(index: str, start: int | str, step: int) -> str:
    """``start + step * index`` as short source."""
    scaled = index if step == 1 else f"{step} * {index}"
    return scaled if start == 0 else f"{start} + {scaled}"


def _clamped_starts(program, eqn, starts, window) -> tuple[list[str], list[int | str]]:
    """Lines computing each start clamped so the window fits (as XLA), and their names
    (or values, where they are known now)."""
    shape = eqn.inputs[0].aval.shape
    names, lines = [], []
    for atom, size, n in zip(starts, shape, window, strict=True):
        if size == n or isinstance(atom, Literal):  # known now: no line to compile
            names.append(0 if size == n else min(max(int(atom.val), 0), size - n))
            continue
        name = program.fresh("start")
        lines.append(f"{name} = min(max({program.scalar_of(atom)}, 0), {size - n})")
        names.append(name)
    return lines, names


@EMITTERS.rule("dynamic_slice")
def _dynamic_slice(program, eqn, inputs, out) -> list[str]:
    window = eqn.params["slice_sizes"]
    lines, starts = _clamped_starts(program, eqn, eqn.inputs[1:], window)
    if not window:
        return [f"{out} = {inputs[0]}.copy()"]
    if is_row_window(eqn):
        return lines + [_row_view(eqn, inputs[0], out, starts[0])]
    return lines + _window_copy(program, eqn, inputs[0], out, starts, [1] * len(starts))


def _updated(program, eqn, inputs, out) -> str:
    """The line that makes ``out`` the update's operand: the operand's own array when
    the memory plan lets the update write in place, else a copy (``updated_copy``)."""
    if program.in_place(eqn.outputs[0]):
        return program.updated_in_place(eqn.outputs[0], eqn.inputs[0], inputs[0])
    return program.updated_copy(eqn.outputs[0], inputs[0])


@EMITTERS.rule("dynamic_update_slice")
def _dynamic_update_slice(program, eqn, inputs, out) -> list[str]:
    """The operand (copied unless in place), then the window written element by element
    (a loop nest that LLVM vectorises, where Numba's slice assignment is generic); or
    nothing but the operand, when the kernel making the update stored it there itself
    (``KernelWriter.output_use``)."""
    if eqn.inputs[1] in program.windows_written:
        return [f"{out} = {inputs[0]}  # in place: the update's kernel stored the window"]
    window = eqn.inputs[1].aval.shape
    lines, starts = _clamped_starts(program, eqn, eqn.inputs[2:], window)
    update = program.array_of(eqn.inputs[1])
    nest = _Nest(program)
    at = nest.loops(window, "w")
    target = ", ".join(f"{s} + {i}" for s, i in zip(starts, at, strict=True)) or "()"
    nest.line(f"{out}[{target}] = {update}[{', '.join(at) or '()'}]")
    return lines + [_updated(program, eqn, inputs, out)] + nest.lines


class _Nest:
    """A few nested loops written line by line."""

    def __init__(self, program):
        self.program = program
        self.lines: list[str] = []
        self.depth = 0

    def loops(self, extents, prefix: str) -> list[str]:
        names = []
        for extent in extents:
            names.append(self.program.fresh(prefix))
            self.line(f"for {names[-1]} in range({extent}):")
            self.depth += 1
        return names

    def line(self, text: str) -> None:
        self.lines.append("    " * self.depth + text)

    def close_all(self) -> None:
        """Close every open loop: the next ``loops`` start a new nest after this one."""
        self.depth = 0


def _indexing_nest(program, x_aval, indices_name, indices_shape, axis, *, drop: bool):
    """Loops over (before axis, index dims, after axis) and both index lists. An index
    outside the axis is clamped into it, or (``drop``) skips the rest of the nest."""
    nest = _Nest(program)
    before = nest.loops(x_aval.shape[:axis], "p")
    positions = nest.loops(indices_shape, "j")
    k = program.fresh("k")
    index = f"{indices_name}[{', '.join(positions) if positions else '()'}]"
    size = x_aval.shape[axis]
    if drop:
        nest.line(f"{k} = {index}")
        nest.line(f"if 0 <= {k} < {size}:")
        nest.depth += 1
    else:
        nest.line(f"{k} = min(max({index}, 0), {size - 1})")
    after = nest.loops(x_aval.shape[axis + 1 :], "q")
    x_index = ", ".join(before + [k] + after)
    other_index = ", ".join(before + positions + after) or "()"
    return nest, x_index, other_index


@EMITTERS.rule("gather")
def _gather(program, eqn, inputs, out) -> list[str]:
    x_aval, indices_aval = eqn.inputs[0].aval, eqn.inputs[1].aval
    aval = eqn.outputs[0].aval
    # A literal index is a scalar constant, which cannot be indexed: a 0-d array then.
    indices = program.array_of(eqn.inputs[1])
    nest, x_index, out_index = _indexing_nest(
        program, x_aval, indices, indices_aval.shape, eqn.params["axis"], drop=False
    )
    nest.line(f"{out}[{out_index}] = {inputs[0]}[{x_index}]")
    return program.new_array(out, aval.shape, aval.dtype) + nest.lines


@EMITTERS.rule("scatter")
def _scatter(program, eqn, inputs, out) -> list[str]:
    x_aval, indices_aval = eqn.inputs[0].aval, eqn.inputs[1].aval
    axis, mode = eqn.params["axis"], eqn.params["mode"]
    lines = [_updated(program, eqn, inputs, out)]
    if x_aval.shape[axis] == 0:
        return lines
    nest, x_index, updates_index = _indexing_nest(
        program, x_aval, program.array_of(eqn.inputs[1]), indices_aval.shape, axis, drop=True
    )
    target, update = f"{out}[{x_index}]", f"{inputs[2]}[{updates_index}]"
    nest.line(f"{target} = {_scatter_combine(program, mode, x_aval.dtype, target, update)}")
    return lines + nest.lines


def _scatter_combine(program, mode, dtype, target, update) -> str:
    if mode == "set":
        return update
    prim = {"add": "add", "mul": "mul", "min": "min", "max": "max"}[mode]
    if dtype.kind == "b" and mode in ("add", "mul"):
        prim = "or" if mode == "add" else "and"
    return scalar.emit(program, prim, dtype, dtype, [target, update], {})


@EMITTERS.rule("cumsum")
def _cumsum(program, eqn, inputs, out) -> list[str]:
    aval = eqn.outputs[0].aval
    axis, reverse = eqn.params["axis"], eqn.params["reverse"]
    n = aval.shape[axis]
    lines = [f"{out} = np.empty({tuple_source(aval.shape)}, {_dtype(aval)})"]
    if aval.size == 0:
        return lines
    nest = _Nest(program)
    before = nest.loops(aval.shape[:axis], "p")
    k = program.fresh("k")
    nest.line(f"for {k} in range({n - 1}, -1, -1):" if reverse else f"for {k} in range({n}):")
    nest.depth += 1
    after = nest.loops(aval.shape[axis + 1 :], "q")
    here = ", ".join(before + [k] + after)
    previous = ", ".join(before + [f"{k} + 1" if reverse else f"{k} - 1"] + after)
    first = n - 1 if reverse else 0
    total = scalar.emit(
        program, "add", aval.dtype, aval.dtype, [f"{out}[{previous}]", f"{inputs[0]}[{here}]"], {}
    )
    nest.line(f"{out}[{here}] = {inputs[0]}[{here}] if {k} == {first} else {total}")
    return lines + nest.lines


def _radix_sort(program, aval, x: str, out: str) -> list[str]:
    rows = tuple_source((aval.size // aval.shape[-1], aval.shape[-1]))
    sign, floats = sorting.key_sign_source(aval.dtype), aval.dtype.kind == "f"
    call = program.function(sorting.MODULE, "sort_rows")
    return [
        f"{out} = np.empty({tuple_source(aval.shape)}, {_dtype(aval)})",
        f"{call}({x}.reshape({rows}), {out}.reshape({rows}), {sign}, {floats})",
    ]


@EMITTERS.rule("sort")
def _sort(program, eqn, inputs, out) -> list[str]:
    """One operand sorted along its last axis is a radix sort of each row
    (``sorting.py``) where its dtype has one, else one ``np.sort`` call (Numba's sorts
    put NaNs last, as NumPy's). Otherwise each row's order comes from stable argsorts
    (Numba's mergesort), least significant key first, and permutes every operand."""
    params, aval = eqn.params, eqn.inputs[0].aval
    dimension, num_keys = params["dimension"], params["num_keys"]
    outs = [program.name(var) for var in eqn.outputs]
    # Only a float's order shows stability when nothing rides along: -0.0 and 0.0 tie.
    stability_shows = params["is_stable"] and aval.dtype.kind in "fc"
    if len(inputs) == 1 and dimension == aval.ndim - 1 and not stability_shows:
        if aval.dtype in sorting.RADIX_DTYPES and aval.size > 0:
            return _radix_sort(program, aval, inputs[0], out)
        return [f"{out} = np.sort({inputs[0]})"]
    lines = [
        f"{name} = np.empty({tuple_source(var.aval.shape)}, {_dtype(var.aval)})"
        for name, var in zip(outs, eqn.outputs, strict=True)
    ]
    nest = _Nest(program)
    before = nest.loops(aval.shape[:dimension], "p")
    after = nest.loops(aval.shape[dimension + 1 :], "q")
    row = ", ".join(before + [":"] + after)
    order = program.fresh("order")
    keys = inputs[:num_keys]
    nest.line(f"{order} = np.argsort({keys[-1]}[{row}], kind='mergesort')")
    for key in reversed(keys[:-1]):
        nest.line(f"{order} = {order}[np.argsort({key}[{row}][{order}], kind='mergesort')]")
    for name, operand in zip(outs, inputs, strict=True):
        nest.line(f"{name}[{row}] = {operand}[{row}][{order}]")
    return lines + nest.lines
