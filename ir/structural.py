"""Primitives that move data without arithmetic: broadcasts, reshapes, transposes,
slices, indexing (gather/scatter), concatenation, padding and ``iota``."""

from __future__ import annotations

import numpy as np

from . import dtypes
from .core import ShapedArray
from .primitive import Pattern, check, register


def _broadcast_in_dim_rule(x: ShapedArray, *, shape, broadcast_dimensions):
    check(len(broadcast_dimensions) == x.ndim, "broadcast_in_dim", "one output dim per input dim")
    check(
        list(broadcast_dimensions) == sorted(set(broadcast_dimensions)),
        "broadcast_in_dim",
        "broadcast_dimensions must be strictly increasing",
    )
    for in_dim, out_dim in enumerate(broadcast_dimensions):
        check(0 <= out_dim < len(shape), "broadcast_in_dim", "dimension out of range")
        if x.shape[in_dim] not in (1, shape[out_dim]):
            message = f"cannot broadcast {x.str_short()} to {shape} along {broadcast_dimensions}"
            check(False, "broadcast_in_dim", message)
    return ShapedArray(shape, x.dtype)


def _broadcast_in_dim(x, *, shape, broadcast_dimensions):
    expanded = [1] * len(shape)
    for in_dim, out_dim in enumerate(broadcast_dimensions):
        expanded[out_dim] = x.shape[in_dim]
    return np.broadcast_to(np.reshape(x, expanded), shape).copy()


register("broadcast_in_dim", Pattern.BROADCAST, _broadcast_in_dim_rule, _broadcast_in_dim)


def _reshape_rule(x: ShapedArray, *, new_sizes):
    check(
        int(np.prod(new_sizes, dtype=np.int64)) == x.size,
        "reshape",
        lambda: f"cannot reshape {x.str_short()} to {new_sizes}",
    )
    return ShapedArray(new_sizes, x.dtype)


register("reshape", Pattern.INJECTIVE, _reshape_rule, lambda x, *, new_sizes: x.reshape(new_sizes))


def _transpose_rule(x: ShapedArray, *, permutation):
    check(sorted(permutation) == list(range(x.ndim)), "transpose", f"bad permutation {permutation}")
    return ShapedArray([x.shape[p] for p in permutation], x.dtype)


register(
    "transpose",
    Pattern.INJECTIVE,
    _transpose_rule,
    lambda x, *, permutation: np.transpose(x, permutation),
)


def _squeeze_rule(x: ShapedArray, *, dimensions):
    check(len(set(dimensions)) == len(dimensions), "squeeze", f"repeated dims {dimensions}")
    for d in dimensions:
        check(0 <= d < x.ndim and x.shape[d] == 1, "squeeze", f"cannot squeeze dim {d}")
    return ShapedArray([s for i, s in enumerate(x.shape) if i not in dimensions], x.dtype)


register(
    "squeeze",
    Pattern.INJECTIVE,
    _squeeze_rule,
    lambda x, *, dimensions: np.squeeze(x, tuple(dimensions)),
)


def _expand_dims_rule(x: ShapedArray, *, dimensions):
    ndim = x.ndim + len(dimensions)
    check(all(0 <= d < ndim for d in dimensions), "expand_dims", "dimension out of range")
    check(len(set(dimensions)) == len(dimensions), "expand_dims", f"repeated dims {dimensions}")
    shape = list(x.shape)
    for d in sorted(dimensions):
        shape.insert(d, 1)
    return ShapedArray(shape, x.dtype)


register(
    "expand_dims",
    Pattern.INJECTIVE,
    _expand_dims_rule,
    lambda x, *, dimensions: np.expand_dims(x, tuple(dimensions)),
)


def _slice_rule(x: ShapedArray, *, start_indices, limit_indices, strides):
    check(
        len(start_indices) == len(limit_indices) == len(strides) == x.ndim,
        "slice",
        "one start, limit and stride per dimension",
    )
    shape = []
    for size, start, limit, stride in zip(
        x.shape, start_indices, limit_indices, strides, strict=False
    ):
        check(0 <= start <= limit <= size and stride >= 1, "slice", "indices out of range")
        shape.append(max(0, -(-(limit - start) // stride)))
    return ShapedArray(shape, x.dtype)


def _slice(x, *, start_indices, limit_indices, strides):
    return x[
        tuple(slice(*bounds) for bounds in zip(start_indices, limit_indices, strides, strict=False))
    ]


register("slice", Pattern.INJECTIVE, _slice_rule, _slice)


def _dynamic_slice_rule(x: ShapedArray, *starts: ShapedArray, slice_sizes):
    check(len(starts) == x.ndim == len(slice_sizes), "dynamic_slice", "one start per dimension")
    check(
        all(s.shape == () and dtypes.is_integer(s.dtype) for s in starts),
        "dynamic_slice",
        "starts must be integer scalars",
    )
    check(
        all(0 <= n <= d for n, d in zip(slice_sizes, x.shape, strict=False)),
        "dynamic_slice",
        "slice too big",
    )
    return ShapedArray(slice_sizes, x.dtype)


def _clamped_starts(shape, sizes, starts):
    """Each start clamped into ``[0, size - window]`` so the window stays inside, as in
    XLA: ``dynamic_slice`` and ``dynamic_update_slice`` never read or write outside the
    array, and a negative start means 0 (numbax does not wrap negative starts)."""
    return [int(min(max(int(s), 0), d - n)) for s, d, n in zip(starts, shape, sizes, strict=False)]


def _dynamic_slice(x, *starts, slice_sizes):
    """The window of ``slice_sizes`` at ``starts``, each start clamped so the window fits."""
    starts = _clamped_starts(x.shape, slice_sizes, starts)
    return x[tuple(slice(s, s + n) for s, n in zip(starts, slice_sizes, strict=False))]


register("dynamic_slice", Pattern.OPAQUE, _dynamic_slice_rule, _dynamic_slice)


def _dynamic_update_slice_rule(x: ShapedArray, update: ShapedArray, *starts: ShapedArray):
    check(len(starts) == x.ndim == update.ndim, "dynamic_update_slice", "rank mismatch")
    check(x.dtype == update.dtype, "dynamic_update_slice", "dtype mismatch")
    check(
        all(s.shape == () and dtypes.is_integer(s.dtype) for s in starts),
        "dynamic_update_slice",
        "starts must be integer scalars",
    )
    check(
        all(u <= d for u, d in zip(update.shape, x.shape, strict=False)),
        "dynamic_update_slice",
        "too big",
    )
    return x


def _dynamic_update_slice(x, update, *starts):
    """``x`` with ``update`` written at ``starts``, each start clamped so the update fits:
    unlike a scatter nothing is dropped (XLA's rule; JAX's too)."""
    starts = _clamped_starts(x.shape, update.shape, starts)
    out = np.array(x, copy=True)
    out[tuple(slice(s, s + n) for s, n in zip(starts, update.shape, strict=False))] = update
    return out


register("dynamic_update_slice", Pattern.OPAQUE, _dynamic_update_slice_rule, _dynamic_update_slice)


def _gather_rule(x: ShapedArray, indices: ShapedArray, *, axis):
    check(0 <= axis < x.ndim, "gather", f"axis {axis} out of range for {x.str_short()}")
    check(dtypes.is_integer(indices.dtype), "gather", "indices must be integers")
    return ShapedArray(x.shape[:axis] + indices.shape + x.shape[axis + 1 :], x.dtype)


def _gather(x, indices, *, axis):
    """``x`` indexed by ``indices`` along ``axis``. An index outside ``[0, size)`` is
    clamped into it (negative reads entry 0), as JAX's gathers: a compiled program cannot
    raise IndexError. The front end wraps NumPy's negative indices before this."""
    return np.take(x, indices, axis=axis, mode="clip")


register("gather", Pattern.OPAQUE, _gather_rule, _gather)

SCATTER_MODES = ("add", "set", "mul", "min", "max")


def _scatter_rule(x: ShapedArray, indices: ShapedArray, updates: ShapedArray, *, axis, mode):
    check(mode in SCATTER_MODES, "scatter", f"unknown mode {mode!r}")
    check(0 <= axis < x.ndim, "scatter", f"axis {axis} out of range for {x.str_short()}")
    check(dtypes.is_integer(indices.dtype), "scatter", "indices must be integers")
    check(x.dtype == updates.dtype, "scatter", "dtype mismatch")
    expected = x.shape[:axis] + indices.shape + x.shape[axis + 1 :]
    check(updates.shape == expected, "scatter", f"updates must have shape {expected}")
    return x


_SCATTER_UFUNCS = {"add": np.add, "mul": np.multiply, "min": np.minimum, "max": np.maximum}


def _scatter(x, indices, updates, *, axis, mode):
    """``x`` with each update combined in at its index along ``axis``. An update whose
    index lies outside ``[0, size)`` (negative included) is dropped, as JAX's scatters:
    writing it to a clamped position would overwrite an entry the program never named."""
    out = np.array(x, copy=True)
    moved = np.moveaxis(out, axis, 0)
    moved_updates = np.moveaxis(
        updates, list(range(axis, axis + indices.ndim)), list(range(indices.ndim))
    )
    kept = (indices >= 0) & (indices < x.shape[axis])
    indices, moved_updates = indices[kept], moved_updates[kept]
    if mode == "set":
        moved[indices] = moved_updates
    else:
        _SCATTER_UFUNCS[mode].at(moved, indices, moved_updates)
    return out


register("scatter", Pattern.OPAQUE, _scatter_rule, _scatter)


def _concatenate_rule(*xs: ShapedArray, dimension):
    check(len(xs) >= 1, "concatenate", "needs at least one operand")
    first = xs[0]
    check(0 <= dimension < first.ndim, "concatenate", f"dimension {dimension} out of range")
    for x in xs:
        check(x.dtype == first.dtype and x.ndim == first.ndim, "concatenate", "operands differ")
        check(
            all(
                a == b
                for i, (a, b) in enumerate(zip(x.shape, first.shape, strict=False))
                if i != dimension
            ),
            "concatenate",
            "shapes differ outside the concatenated dimension",
        )
    shape = list(first.shape)
    shape[dimension] = sum(x.shape[dimension] for x in xs)
    return ShapedArray(shape, first.dtype)


register(
    "concatenate",
    Pattern.INJECTIVE,
    _concatenate_rule,
    lambda *xs, dimension: np.concatenate(xs, axis=dimension),
)


def _pad_rule(x: ShapedArray, padding_value: ShapedArray, *, padding_config):
    check(len(padding_config) == x.ndim, "pad", "one (low, high) pair per dimension")
    check(padding_value.shape == () and padding_value.dtype == x.dtype, "pad", "bad pad value")
    check(all(lo >= 0 and hi >= 0 for lo, hi in padding_config), "pad", "negative padding")
    return ShapedArray(
        [d + lo + hi for d, (lo, hi) in zip(x.shape, padding_config, strict=False)], x.dtype
    )


def _pad(x, padding_value, *, padding_config):
    return np.pad(x, padding_config, mode="constant", constant_values=padding_value)


register("pad", Pattern.INJECTIVE, _pad_rule, _pad)


def _iota_rule(*, dtype, shape, dimension):
    check(0 <= dimension < len(shape), "iota", "dimension out of range")
    check(dtypes.kind(dtype) in "iuf", "iota", f"unsupported dtype {dtype}")
    return ShapedArray(shape, dtype)


def _iota(*, dtype, shape, dimension):
    ramp = np.arange(shape[dimension], dtype=dtype)
    return _broadcast_in_dim(ramp, shape=shape, broadcast_dimensions=(dimension,))


register("iota", Pattern.BROADCAST, _iota_rule, _iota, differentiable=False)
