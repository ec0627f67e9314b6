"""Shape and construction functions (tile, repeat, roll, rot90, diag, tril/triu,
append/insert/delete, the stacks and splits, kron, cross, select, piecewise, meshgrid,
indices), written as compositions of primitives; the counting and comparison functions
(histogram, bincount, digitize, isclose, ...) are in ``numpy_counting``, the
differences (diff, gradient) in ``numpy_differences``.

Each name in ``FUNCTIONS`` (and ``UFUNCS``) joins ``numbax.numpy`` and NumPy's dispatch
tables (``numpy_lib/numpy_api.py``).

Arguments that set a result's shape (``repeats``, ``insert``/``delete`` positions, split
points) are static: Python values, NumPy arrays, or traced arrays whose value is known
while tracing; a traced one raises ``ConcretizationError`` naming ``static_argnums``.

The index tricks ``np.mgrid``, ``np.ogrid`` and ``np.ix_`` of Python numbers build NumPy
arrays, constants of the traced program. ``np.r_`` and ``np.c_`` convert each operand
with ``np.array``, which no protocol hands to numbax, so a traced operand is refused
(``TracerArrayConversionError``); ``np.concatenate`` (or ``hstack``/``column_stack``)
says the same thing and traces.
"""

from __future__ import annotations

import builtins
import operator
import warnings

import numpy as np

from ..ir import dtypes
from ..ir.errors import ConcretizationError, ShapeError, UnsupportedFunctionError
from ..tracer import lax
from ..tracer.core import Tracer
from ..tracer.indexing import getitem, take
from ..tracer.promote import (
    asarray,
    convert,
    normalize_axes,
    normalize_axis,
    operand,
    result_type,
    static_size,
)
from ..tracer.source_info import error_at_user_line as _error
from . import reductions, shapes, ufuncs


def static_value(value, operation: str, what: str):
    """``value`` as a NumPy value: it sets the shape of ``operation``'s result, so a
    traced one must have a value known while tracing (eager transforms, constants)."""
    if isinstance(value, (list, tuple)):
        return np.asarray([static_value(v, operation, what) for v in value])
    if not isinstance(value, Tracer):
        return value if isinstance(value, (int, np.integer)) else np.asarray(value)
    try:
        return np.asarray(value.concrete_value(operation))
    except ConcretizationError:
        pass
    raise _error(
        ConcretizationError,
        f"{operation}: {what} sets the shape of the result, so it must be static: a Python "
        f"value or a NumPy array, not a traced array ({value.aval.str_short()}). Pass it "
        "with jit(f, static_argnums=...) / static_argnames=..., or compute it outside the "
        "traced function",
    )


def slice_axis(x, axis: int, start: int, stop: int, step: int = 1):
    """``x[..., start:stop:step, ...]`` along ``axis`` (start and stop already in range)."""
    starts, limits, strides = [0] * x.ndim, list(x.shape), [1] * x.ndim
    starts[axis], limits[axis], strides[axis] = start, builtins.max(start, stop), step
    return lax.slice(x, starts, limits, strides)


def static_ints(values, operation: str, what: str) -> tuple[int, ...]:
    values = static_value(values, operation, what)
    return tuple(operator.index(v) for v in np.atleast_1d(values).tolist())


# --------------------------------------------------------------------------------------
# Tiling, repeating, rolling, rotating


def tile(A, reps):
    x = asarray(A)
    reps = static_ints(reps, "tile", "reps")
    if builtins.min(reps, default=0) < 0:
        raise _error(ShapeError, f"tile: negative dimensions are not allowed (reps {reps})")
    rank = builtins.max(len(reps), x.ndim)
    reps = (1,) * (rank - len(reps)) + reps
    sizes = (1,) * (rank - x.ndim) + x.shape
    # Each axis d becomes a pair (r, d) of a broadcast, then one axis of r * d.
    pairs = [n for pair in zip(reps, sizes, strict=True) for n in pair]
    spread = lax.broadcast_in_dim(lax.reshape(x, sizes), pairs, range(1, 2 * rank, 2))
    return lax.reshape(spread, [r * d for r, d in zip(reps, sizes, strict=True)])


def repeat(a, repeats, axis=None):
    x = asarray(a)
    if axis is None:
        x, axis = lax.reshape(x, (x.size,)), 0
    axis = normalize_axis(axis, x.ndim, "repeat")
    counts = static_ints(repeats, "repeat", "repeats")
    size = x.shape[axis]
    if builtins.min(counts, default=0) < 0:
        raise _error(ShapeError, "repeat: repeats may not contain negative values")
    if len(counts) == 1:
        # One count for every entry: a broadcast along a new axis after ``axis``.
        shape = list(x.shape)
        shape.insert(axis + 1, counts[0])
        dims = [d for d in range(x.ndim + 1) if d != axis + 1]
        spread = lax.broadcast_in_dim(x, shape, dims)
        return lax.reshape(spread, x.shape[:axis] + (size * counts[0],) + x.shape[axis + 1 :])
    if len(counts) != size:
        raise _error(
            ShapeError,
            f"repeat: {len(counts)} repeats for an axis of length {size}: give one count, "
            "or one per entry",
        )
    return take(x, np.repeat(np.arange(size), counts), axis=axis)


def roll(a, shift, axis=None):
    x = asarray(a)
    if axis is None:
        return lax.reshape(roll(lax.reshape(x, (x.size,)), shift, 0), x.shape)
    if isinstance(shift, Tracer) and shift.ndim == 0 and np.ndim(axis) == 0:
        return _roll_traced(x, shift, normalize_axis(axis, x.ndim, "roll"))
    shifts = static_value(shift, "roll", "shift (with several axes)")
    by_axis = dict.fromkeys(range(x.ndim), 0)
    for s, ax in np.broadcast(shifts, axis):
        by_axis[normalize_axis(ax, x.ndim, "roll")] += int(s)
    for ax, s in by_axis.items():
        size = x.shape[ax]
        if size and s % size:
            cut = size - s % size
            x = lax.concatenate([slice_axis(x, ax, cut, size), slice_axis(x, ax, 0, cut)], ax)
    return x


def _roll_traced(x, shift, axis):
    """A traced shift: entry i comes from (i - shift) mod n, one gather."""
    if not dtypes.is_integer(shift.dtype):
        raise _error(UnsupportedFunctionError, f"roll: shift must be an integer, not {shift.dtype}")
    size = x.shape[axis]
    if size == 0:
        return x
    source = ufuncs.remainder(ufuncs.subtract(np.arange(size), shift), size)
    return take(x, source, axis=axis)


def rot90(m, k=1, axes=(0, 1)):
    x = asarray(m)
    axes = tuple(axes)
    if len(axes) != 2:
        raise _error(ShapeError, "rot90: len(axes) must be 2")
    first, second = normalize_axes(axes, x.ndim, "rot90")
    k = operator.index(k) % 4
    if k == 0:
        return x
    if k == 2:
        return shapes.flip(shapes.flip(x, first), second)
    order = list(range(x.ndim))
    order[first], order[second] = second, first
    if k == 1:
        return lax.transpose(shapes.flip(x, second), order)
    return shapes.flip(lax.transpose(x, order), second)


def fliplr(m):
    x = asarray(m)
    if x.ndim < 2:
        raise _error(ShapeError, f"fliplr: the input must be >= 2-d (got shape {x.shape})")
    return shapes.flip(x, 1)


def flipud(m):
    x = asarray(m)
    if x.ndim < 1:
        raise _error(ShapeError, "flipud: the input must be >= 1-d")
    return shapes.flip(x, 0)


# --------------------------------------------------------------------------------------
# Diagonals and triangles


def diagonal(a, offset=0, axis1=0, axis2=1):
    x = asarray(a)
    if x.ndim < 2:
        raise _error(ShapeError, "diagonal: the array must be at least 2-d")
    first = normalize_axis(axis1, x.ndim, "diagonal")
    second = normalize_axis(axis2, x.ndim, "diagonal")
    if first == second:
        raise _error(ShapeError, "diagonal: axis1 and axis2 cannot be the same")
    rest = [d for d in range(x.ndim) if d not in (first, second)]
    x = lax.transpose(x, rest + [first, second])
    rows, cols = x.shape[-2:]
    offset = operator.index(offset)
    row0, col0 = builtins.max(-offset, 0), builtins.max(offset, 0)
    length = builtins.max(0, builtins.min(rows - row0, cols - col0))
    if not length:
        row0 = col0 = 0  # an offset past the edge: the empty diagonal, at the origin
    square = slice_axis(
        slice_axis(x, x.ndim - 2, row0, row0 + length), x.ndim - 1, col0, col0 + length
    )
    flat = lax.reshape(square, x.shape[:-2] + (length * length,))
    # In a flattened L x L block the diagonal is every (L + 1)-th entry.
    return slice_axis(flat, flat.ndim - 1, 0, length * length, length + 1) if length else flat


def diag(v, k=0):
    x = asarray(v)
    k = operator.index(k)
    if x.ndim == 2:
        return diagonal(x, k)
    if x.ndim != 1:
        raise _error(ShapeError, f"diag: input must be 1- or 2-d (got shape {x.shape})")
    # Row i of the result holds v at column i + k: pad v to the width, spread it over
    # the rows, and keep the entries on the k-th diagonal.
    size = x.shape[0] + builtins.abs(k)
    zero = np.zeros((), x.dtype)
    row = lax.pad(x, zero, [(builtins.max(k, 0), builtins.max(-k, 0))])
    spread = lax.broadcast_in_dim(row, (size, size), (1,))
    return lax.select(
        _band(size, size, k, lax.eq), spread, lax.broadcast_in_dim(zero, (size, size), ())
    )


def _band(rows: int, cols: int, k: int, compare):
    """``compare(j - i, k)`` over an (rows, cols) grid of positions (i, j)."""
    i = lax.iota(dtypes.int64, (rows, cols), 0)
    j = lax.iota(dtypes.int64, (rows, cols), 1)
    return compare(lax.sub(j, i), np.int64(k))


def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    shapes.refuse_out("trace", out)
    return reductions.sum(diagonal(a, offset, axis1, axis2), axis=-1, dtype=dtype)


def _triangle(name, compare):
    def fn(m, k=0):
        x = asarray(m)
        if x.ndim == 0:
            raise _error(ShapeError, f"{name}: the input must be at least 1-d")
        rows, cols = (x.shape[0], x.shape[0]) if x.ndim == 1 else x.shape[-2:]
        mask = _band(rows, cols, operator.index(k), compare)
        return ufuncs.where(mask, x, np.zeros((), x.dtype))

    fn.__name__ = name
    return fn


tril = _triangle("tril", lax.le)
triu = _triangle("triu", lax.ge)


def tri(N, M=None, k=0, dtype=float, *, like=None):
    if like is not None:
        raise _error(UnsupportedFunctionError, "tri: like= is not supported; drop it")
    N = static_size(N, "tri")
    M = N if M is None else static_size(M, "tri")
    mask = _band(N, M, operator.index(k), lax.le)
    return lax.convert_element_type(mask, dtypes.canonicalize(dtype))


def indices(dimensions, dtype=int, sparse=False):
    dimensions = tuple(operator.index(d) for d in dimensions)
    dtype = dtypes.canonicalize(dtype)
    rank = len(dimensions)
    if sparse:
        return tuple(
            lax.iota(dtype, tuple(d if a == b else 1 for b, d in enumerate(dimensions)), a)
            for a in range(rank)
        )
    grids = [lax.expand_dims(lax.iota(dtype, dimensions, a), (0,)) for a in range(rank)]
    return lax.concatenate(grids, 0) if grids else np.zeros((0,), dtype)


# --------------------------------------------------------------------------------------
# Appending, inserting, deleting: a gather with positions NumPy computes on an iota


def append(arr, values, axis=None):
    x, values = asarray(arr), asarray(values)
    if axis is None:
        x, values, axis = shapes.ravel(x), shapes.ravel(values), 0
    return shapes.concatenate([x, values], axis)


def insert(arr, obj, values, axis=None):
    """NumPy's ``insert`` run on the positions of ``arr`` and ``values`` tells, for every
    entry of the result, which entry it comes from: one gather, with every index form and
    broadcast of ``values`` exactly as NumPy's."""
    x = asarray(arr)
    obj = obj if isinstance(obj, slice) else static_value(obj, "insert", "obj (the positions)")
    values = asarray(convert(operand(values), x.dtype))
    positions = np.arange(x.size).reshape(x.shape)
    value_positions = x.size + np.arange(values.size).reshape(values.shape)
    source = np.insert(positions, obj, value_positions, axis=axis)
    return take(shapes.concatenate([shapes.ravel(x), shapes.ravel(values)], 0), source)


def delete(arr, obj, axis=None):
    x = asarray(arr)
    obj = obj if isinstance(obj, slice) else static_value(obj, "delete", "obj (the positions)")
    kept = np.delete(np.arange(x.size).reshape(x.shape), obj, axis=axis)
    return take(shapes.ravel(x), kept)


# --------------------------------------------------------------------------------------
# Stacks and splits


def atleast_2d(*arys):
    outs = [_at_least(asarray(a), 2) for a in arys]
    return outs[0] if len(outs) == 1 else tuple(outs)


def atleast_3d(*arys):
    outs = [_at_least(asarray(a), 3) for a in arys]
    return outs[0] if len(outs) == 1 else tuple(outs)


def _at_least(x, rank):
    if x.ndim >= rank:
        return x
    if rank == 2:
        return lax.reshape(x, (1,) * (2 - x.ndim) + x.shape)
    # NumPy's atleast_3d: a vector (n,) becomes (1, n, 1), a matrix (m, n) (m, n, 1).
    shape = {0: (1, 1, 1), 1: (1, *x.shape, 1), 2: (*x.shape, 1)}[x.ndim]
    return lax.reshape(x, shape)


def column_stack(tup):
    columns = []
    for v in tup:
        x = asarray(v)
        columns.append(x if x.ndim >= 2 else lax.reshape(x, (x.size, 1)))
    return shapes.concatenate(columns, 1)


def dstack(tup):
    return shapes.concatenate([_at_least(asarray(v), 3) for v in tup], 2)


def _directional_split(name, axis, min_rank):
    def fn(ary, indices_or_sections):
        x = asarray(ary)
        if x.ndim < min_rank:
            raise _error(
                ShapeError, f"{name} only works on arrays of {min_rank} or more dimensions"
            )
        along = 0 if name == "hsplit" and x.ndim == 1 else axis
        return shapes.split(x, indices_or_sections, along)

    fn.__name__ = name
    return fn


hsplit = _directional_split("hsplit", 1, 1)
vsplit = _directional_split("vsplit", 0, 2)
dsplit = _directional_split("dsplit", 2, 3)


# --------------------------------------------------------------------------------------
# Products, choices, grids


def kron(a, b):
    x, y = asarray(a), asarray(b)
    rank = builtins.max(x.ndim, y.ndim)
    if rank == 0:
        return ufuncs.multiply(x, y)
    xs, ys = (1,) * (rank - x.ndim) + x.shape, (1,) * (rank - y.ndim) + y.shape
    # a[i] * b[j] at (i0, j0, i1, j1, ...), merged pairwise into i_k * len_k(b) + j_k.
    x_spread = lax.reshape(x, [n for d in xs for n in (d, 1)])
    y_spread = lax.reshape(y, [n for d in ys for n in (1, d)])
    product = ufuncs.multiply(x_spread, y_spread)
    return lax.reshape(product, [p * q for p, q in zip(xs, ys, strict=True)])


def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    if axis is not None:
        axisa = axisb = axisc = axis
    x, y = asarray(a), asarray(b)
    if x.ndim < 1 or y.ndim < 1:
        raise _error(ShapeError, "cross: at least one array has zero dimension")
    x = shapes.moveaxis(x, normalize_axis(axisa, x.ndim, "cross (axisa)"), -1)
    y = shapes.moveaxis(y, normalize_axis(axisb, y.ndim, "cross (axisb)"), -1)
    n, m = x.shape[-1], y.shape[-1]
    if n not in (2, 3) or m not in (2, 3):
        raise _error(
            ShapeError,
            f"cross: incompatible dimensions for cross product (dimension must be 2 or 3, got "
            f"{n} and {m})",
        )
    if n == 2 or m == 2:
        warnings.warn(
            "Arrays of 2-dimensional vectors are deprecated. Use arrays of 3-dimensional "
            "vectors instead. (deprecated in NumPy 2.0)",
            DeprecationWarning,
            stacklevel=2,
        )
    dtype = result_type(x, y)
    x, y = convert(x, dtype), convert(y, dtype)
    a0, a1, b0, b1 = (getitem(v, (Ellipsis, i)) for v, i in ((x, 0), (x, 1), (y, 0), (y, 1)))
    mul, sub = ufuncs.multiply, ufuncs.subtract
    z = sub(mul(a0, b1), mul(a1, b0))
    if n == 2 and m == 2:
        return z
    a2 = getitem(x, (Ellipsis, 2)) if n == 3 else None
    b2 = getitem(y, (Ellipsis, 2)) if m == 3 else None
    if n == 3 and m == 3:
        first, second = sub(mul(a1, b2), mul(a2, b1)), sub(mul(a2, b0), mul(a0, b2))
    elif n == 3:
        first, second = ufuncs.negative(mul(a2, b1)), mul(a2, b0)
    else:
        first, second = mul(a1, b2), ufuncs.negative(mul(a0, b2))
    first, second, z = shapes.broadcast_arrays(first, second, z)
    out = shapes.stack([first, second, z], axis=-1)
    return shapes.moveaxis(out, -1, normalize_axis(axisc, out.ndim, "cross (axisc)"))


def select(condlist, choicelist, default=0):
    condlist, choicelist = list(condlist), list(choicelist)
    if len(condlist) != len(choicelist):
        raise _error(ShapeError, "select: list of cases must be same length as list of conditions")
    if not condlist:
        raise _error(ShapeError, "select with an empty condition list is not possible")
    # Python numbers among the choices stay weakly typed (NEP 50), as in NumPy.
    choices = [operand(c) for c in choicelist] + [operand(default)]
    dtype = result_type(*choices)
    for k, condition in enumerate(condlist):
        if result_type(operand(condition)) != dtypes.bool_:
            raise _error(
                UnsupportedFunctionError,
                f"select: invalid entry {k} in condlist: should be boolean ndarray",
            )
    out = convert(choices[-1], dtype)
    for condition, choice in reversed(list(zip(condlist, choices, strict=False))):
        out = ufuncs.where(condition, convert(choice, dtype), out)
    return out


def piecewise(x, condlist, funclist, *args, **kw):
    """Each function is evaluated on the whole of ``x`` and its values kept where its
    condition holds (NumPy calls it on ``x[cond]`` only): the same for elementwise
    functions. A function that is NaN or infinite where its condition is false gives a
    NaN derivative there (the select's zero cotangent times an infinite one)."""
    x = asarray(x)
    if _one_condition(condlist, x):
        condlist = [condlist]
    conditions = [ufuncs.not_equal(operand(c), False) for c in condlist]
    if len(conditions) == len(funclist) - 1:
        otherwise = conditions[0]
        for c in conditions[1:]:
            otherwise = ufuncs.logical_or(otherwise, c)
        conditions.append(ufuncs.logical_not(otherwise))
    elif len(conditions) != len(funclist):
        raise _error(
            ShapeError,
            f"piecewise: with {len(conditions)} condition(s), {len(conditions)} or "
            f"{len(conditions) + 1} functions are expected (got {len(funclist)})",
        )
    out = lax.full(x.shape, 0, x.dtype)
    for condition, fn in zip(conditions, funclist, strict=True):
        values = fn(x, *args, **kw) if callable(fn) else fn
        out = ufuncs.where(condition, convert(operand(values), x.dtype), out)
    return out


def _one_condition(condlist, x) -> bool:
    """NumPy's test, a traced array counting as an ndarray: an array whose first entry is
    an array is a list of conditions (``x > 0`` of a 2-d ``x`` is one per row)."""
    if np.isscalar(condlist) or (isinstance(condlist, Tracer) and condlist.ndim == 0):
        return True
    first = condlist[0]
    first_is_array = isinstance(first, (list, np.ndarray)) or (
        isinstance(first, Tracer) and first.ndim > 0  # a 0-d one is NumPy's scalar entry
    )
    return not first_is_array and x.ndim != 0


def meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
    if indexing not in ("xy", "ij"):
        raise _error(ShapeError, "meshgrid: valid values for `indexing` are 'xy' and 'ij'")
    rank = len(xi)
    grids = []
    for k, v in enumerate(xi):
        shape = [1] * rank
        shape[k] = -1
        if indexing == "xy" and rank > 1 and k < 2:
            shape[0], shape[1] = shape[1], shape[0]
        v = shapes.ravel(asarray(v))
        grids.append(lax.reshape(v, [v.size if d == -1 else 1 for d in shape]))
    if not sparse:
        grids = shapes.broadcast_arrays(*grids)
    return tuple(grids)


FUNCTIONS: dict = {
    "append": append, "atleast_2d": atleast_2d, "atleast_3d": atleast_3d,
    "column_stack": column_stack, "cross": cross, "delete": delete, "diag": diag,
    "diagonal": diagonal, "dsplit": dsplit, "dstack": dstack, "fliplr": fliplr,
    "flipud": flipud, "hsplit": hsplit, "indices": indices,
    "insert": insert, "kron": kron, "meshgrid": meshgrid, "piecewise": piecewise,
    "repeat": repeat, "roll": roll, "rot90": rot90, "row_stack": shapes.vstack,
    "select": select, "tile": tile, "trace": trace, "tri": tri, "tril": tril, "triu": triu,
    "vsplit": vsplit,
}  # fmt: skip
UFUNCS: dict = {}

from . import numpy_counting  # noqa: E402

FUNCTIONS.update(numpy_counting.FUNCTIONS)
