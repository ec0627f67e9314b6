"""NumPy's ufunc methods over tracers: ``outer``, ``reduce``, ``accumulate``, ``at`` and
``reduceat``, each a composition of primitives.

``Ufunc`` pairs one of numbax's elementwise functions with the NumPy ufunc it stands for:
``numbax.numpy.add`` is one (``numbax.numpy.add.outer(a, b)``), and ``__array_ufunc__``
sends ``numpy.add.outer(tracer, b)`` to the same methods. A reduction takes the cheapest
composition there is:

- a reduction primitive (add, multiply, maximum, minimum, logical_and, logical_or);
- for any other ufunc NumPy may reorder (commutative and associative: the bitwise ops,
  logaddexp, fmax, hypot, ...): a pairwise tree over halves, log2(n) elementwise steps,
  and for ``accumulate`` log2(n) rounds of combining with a shifted copy (Hillis-Steele);
- for the rest (subtract, divide, power, arctan2, ...): NumPy's left fold, a ``scan``.

Which ufuncs NumPy may reorder and the dtype each method loops in are asked of NumPy on
a one-element array, so they cannot disagree with it.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from ..ir import dtypes
from ..ir.errors import (
    InPlaceUpdateError,
    NumbaxTypeError,
    ShapeError,
    UnsupportedFunctionError,
)
from ..tracer import functionalize, lax
from ..tracer.control_flow import scan
from ..tracer.core import Tracer
from ..tracer.indexing import getitem, known_index, update
from ..tracer.promote import (
    asarray,
    broadcast_shapes,
    convert,
    normalize_axis,
    operand,
    python_scalar_as,
    result_type,
    shape_of,
)
from ..tracer.source_info import error_at_user_line as _error
from . import ufuncs
from .numpy_construction import slice_axis, static_value
from .reductions import is_unmasked, keep_dims, ufunc_reduce_axes, where_mask

_NOT_GIVEN = object()  # ``initial=`` left out (NumPy's own marker is private)

_REDUCTION_PRIMITIVES = {
    "add": lax.reduce_sum,
    "multiply": lax.reduce_prod,
    "maximum": lax.reduce_max,
    "minimum": lax.reduce_min,
    # On bools (the loop dtype of the logical ufuncs) min is "all" and max is "any".
    "logical_and": lax.reduce_min,
    "logical_or": lax.reduce_max,
}
# ``ufunc.at`` as one scatter, when the values already have the array's dtype. Not
# multiply: the scatter's "mul" mode has no derivative, so multiply.at runs in sequence.
_SCATTER_MODES = {"add": "add", "maximum": "max", "minimum": "min"}


@functools.cache
def _reorderable(numpy_ufunc: np.ufunc) -> bool:
    """Whether NumPy may reduce ``numpy_ufunc`` over several axes at once: it refuses
    exactly the ufuncs it may not reorder."""
    probe = np.ones((1, 1), numpy_ufunc.types[0][0])
    try:
        numpy_ufunc.reduce(probe, axis=(0, 1))
    except ValueError:
        return False
    return True


def _moved_to_front(x, axis):
    return lax.transpose(x, [axis] + [d for d in range(x.ndim) if d != axis])


def _moved_back(x, axis):
    order = [d for d in range(1, x.ndim)]
    order.insert(axis, 0)
    return lax.transpose(x, order)


class Ufunc:
    """A numbax elementwise function with NumPy's ufunc methods and attributes.

    >>> import numpy as np, numbax.numpy as xnp
    >>> xnp.add.outer(np.arange(2.0), np.arange(3.0))
    array([[0., 1., 2.],
           [1., 2., 3.]])
    """

    def __init__(self, numpy_ufunc: np.ufunc, implementation):
        self.numpy_ufunc = numpy_ufunc
        self.implementation = implementation
        self.__name__ = self.__qualname__ = numpy_ufunc.__name__
        self.__doc__ = numpy_ufunc.__doc__
        self.nin, self.nout, self.nargs = numpy_ufunc.nin, numpy_ufunc.nout, numpy_ufunc.nargs
        self.identity, self.signature = numpy_ufunc.identity, numpy_ufunc.signature
        self.types, self.ntypes = numpy_ufunc.types, numpy_ufunc.ntypes

    def __call__(self, *args, **kwargs):
        return self.implementation(*args, **kwargs)

    def __repr__(self):
        return f"<numbax ufunc '{self.__name__}'>"

    # ------------------------------------------------------------------ outer

    def outer(self, A, B, **unsupported):
        self._check(unsupported, "outer")
        a, b = operand(A), operand(B)
        if shape_of(a) and shape_of(b):
            a = lax.reshape(a, shape_of(a) + (1,) * len(shape_of(b)))
        return self(a, b)

    # ------------------------------------------------------------------ reduce

    def reduce(
        self,
        array,
        axis=0,
        dtype=None,
        out=None,
        keepdims=False,
        initial=_NOT_GIVEN,
        where=True,
        **unsupported,
    ):
        name = self._check(dict(unsupported, out=out), "reduce")
        x = asarray(array)
        axes = ufunc_reduce_axes(axis, x.ndim, name)
        reorderable = _reorderable(self.numpy_ufunc)
        if len(axes) > 1 and not reorderable:
            raise _error(
                ShapeError,
                f"reduction operation '{self.__name__}' is not reorderable, so at most one "
                "axis may be specified (NumPy refuses it too); reduce one axis at a time",
            )
        x = convert(x, self._loop_dtype("reduce", x.dtype, dtype))
        given = initial is not _NOT_GIVEN
        if given and type(initial) is int:  # NumPy 2 refuses one outside the dtype's range
            python_scalar_as(initial, x.dtype)
        start = self._as_scalar(initial if given else self.identity, x.dtype, name)
        if start is None and not is_unmasked(where):
            raise _error(
                ShapeError,
                f"reduction operation '{self.__name__}' does not have an identity, so to use a "
                "where mask one has to specify 'initial' (NumPy raises this too)",
            )
        if start is None and any(x.shape[a] == 0 for a in axes):
            raise _error(
                ShapeError,
                f"zero-size array to reduction operation {self.__name__} which has no identity "
                "(NumPy raises this too); pass initial= (the value of an empty reduction)",
            )
        if not axes:
            out = self._combine(start, x) if given else x
        elif any(x.shape[a] == 0 for a in axes):
            out = lax.broadcast_to_rank(start, [d for i, d in enumerate(x.shape) if i not in axes])
        elif not reorderable:
            out = self._fold(x, axes[0], start, where)
        else:
            # Masked entries take the identity, or for max-like ufuncs without one the
            # initial value, which they leave unchanged.
            fill = self._as_scalar(self.identity, x.dtype, name)
            x_masked = self._masked(x, where, start if fill is None else fill)
            out = self._reduce_axes(x_masked, axes)
            # NumPy starts a reduction from ``initial``, which defaults to the identity
            # (hypot.reduce([-2.0]) is 2.0); a reduction primitive starts there already.
            if given or self.__name__ not in _REDUCTION_PRIMITIVES:
                out = self._combine(start, out) if start is not None else out
        return keep_dims(out, x.shape, axes, keepdims)

    def _reduce_axes(self, x, axes):
        primitive = _REDUCTION_PRIMITIVES.get(self.__name__)
        if primitive is not None:
            return primitive(x, axes)
        for axis in sorted(axes, reverse=True):
            x = self._tree(x, axis)
        return x

    def _tree(self, x, axis):
        """Reduce ``axis`` as a tree of halves (NumPy may reorder this ufunc)."""
        while x.shape[axis] > 1:
            n, half = x.shape[axis], x.shape[axis] // 2
            pairs = self._combine(slice_axis(x, axis, 0, half), slice_axis(x, axis, half, 2 * half))
            odd = [slice_axis(x, axis, 2 * half, n)] if n % 2 else []
            x = lax.concatenate([pairs, *odd], axis)
        return lax.reshape(x, x.shape[:axis] + x.shape[axis + 1 :])

    def _fold(self, x, axis, initial, where):
        """NumPy's left fold along ``axis``: ``((x0 op x1) op x2) ...``, from ``initial``
        when given; a masked-out entry leaves the running value as it is."""
        items = _moved_to_front(x, axis)
        if initial is None:
            carry = lax.reshape(slice_axis(items, 0, 0, 1), items.shape[1:])
            items = slice_axis(items, 0, 1, items.shape[0])
        else:
            carry = lax.broadcast_to_rank(initial, items.shape[1:])
        if not items.shape[0]:
            return carry
        if is_unmasked(where):
            carry, _ = scan(
                lambda running, value: (self._combine(running, value), None), carry, items
            )
            return carry
        keeps = _moved_to_front(where_mask(where, x.shape, f"{self.__name__}.reduce"), axis)

        def step(running, item):
            value, keep = item
            return lax.select(keep, self._combine(running, value), running), None

        carry, _ = scan(step, carry, (items, keeps))
        return carry

    def _masked(self, x, where, fill):
        if is_unmasked(where):
            return x
        keep = where_mask(where, x.shape, f"{self.__name__}.reduce")
        return lax.select(keep, x, lax.broadcast_to_rank(fill, x.shape))

    # ------------------------------------------------------------------ accumulate

    def accumulate(self, array, axis=0, dtype=None, out=None, **unsupported):
        name = self._check(dict(unsupported, out=out), "accumulate")
        x = asarray(array)
        if x.ndim == 0:
            raise _error(
                NumbaxTypeError, f"{name}: cannot accumulate on a scalar (NumPy refuses it too)"
            )
        axis = normalize_axis(axis, x.ndim, name)
        x = convert(x, self._loop_dtype("accumulate", x.dtype, dtype))
        if x.shape[axis] <= 1:
            return x
        if self.__name__ == "add":
            return lax.cumsum(x, axis)
        if _reorderable(self.numpy_ufunc):
            return self._shifted_rounds(x, axis)
        return self._running_fold(x, axis)

    def _shifted_rounds(self, x, axis):
        """Hillis-Steele: after the round with shift s, entry i combines entries
        i - 2s + 1 .. i; log2(n) rounds, no identity needed."""
        n, shift = x.shape[axis], 1
        while shift < n:
            combined = self._combine(
                slice_axis(x, axis, 0, n - shift), slice_axis(x, axis, shift, n)
            )
            x = lax.concatenate([slice_axis(x, axis, 0, shift), combined], axis)
            shift *= 2
        return x

    def _running_fold(self, x, axis):
        items = _moved_to_front(x, axis)
        first = slice_axis(items, 0, 0, 1)

        def step(running, value):
            combined = self._combine(running, value)
            return combined, combined

        _, rest = scan(
            step, lax.reshape(first, items.shape[1:]), slice_axis(items, 0, 1, items.shape[0])
        )
        return _moved_back(lax.concatenate([first, rest], 0), axis)

    # ------------------------------------------------------------------ reduceat

    def reduceat(self, array, indices, axis=0, dtype=None, out=None, **unsupported):
        name = self._check(dict(unsupported, out=out), "reduceat")
        x = asarray(array)
        axis = normalize_axis(axis, x.ndim, name)
        starts = np.asarray(static_value(indices, name, "indices")).astype(np.int64).reshape(-1)
        n = x.shape[axis]
        for start in starts:
            if not 0 <= start < n:
                raise _error(
                    IndexError, f"index {start} out-of-bounds in {name} [0, {n}) (NumPy raises too)"
                )
        x = convert(x, self._loop_dtype("reduceat", x.dtype, dtype))
        if not len(starts):
            return slice_axis(x, axis, 0, 0)
        stops = [*starts[1:], n]
        # NumPy's rule: a segment whose next index is not past its start is one entry,
        # taken as it is (not combined with the identity, as a reduce would).
        pieces = [
            self.reduce(slice_axis(x, axis, start, stop), axis=axis, keepdims=True)
            if stop - start > 1
            else slice_axis(x, axis, start, start + 1)
            for start, stop in zip(starts, stops, strict=True)
        ]
        return lax.concatenate(pieces, axis)

    # ------------------------------------------------------------------ at

    def at(self, a, indices, b=None, /):
        """``a[indices] = ufunc(a[indices], b)`` in place, unbuffered: an index that
        repeats applies the ufunc once per occurrence, as NumPy does."""
        name = self._check({}, "at")
        if self.nout != 1:
            raise _error(UnsupportedFunctionError, f"{name} of a ufunc with two outputs")
        if (b is None) != (self.nin == 1):
            raise _error(
                NumbaxTypeError,
                f"{name} takes {'no' if self.nin == 1 else 'a'} second operand "
                f"({self.__name__} has {self.nin} input(s))",
            )
        operands = () if b is None else (b,)
        if not isinstance(a, Tracer):
            if _any_tracer(indices, b):
                raise _error(
                    InPlaceUpdateError,
                    f"numpy.{name} writes traced values into a NumPy array {np.shape(a)} from "
                    "outside the traced function, which cannot hold them. Create the array "
                    "inside the traced function, or pass it in as an argument",
                )
            self.numpy_ufunc.at(a, indices, *operands)
            return None
        if not functionalize.is_mutable(a):
            raise _error(
                InPlaceUpdateError,
                f"numpy.{name} writes into a 0-d value that is a NumPy scalar (the result of "
                "an operation), which is immutable as in NumPy; use the functional form "
                f"x.at[indices].{_SCATTER_MODES.get(self.__name__, 'set')}(...)",
            )
        new = self._updated(a, known_index(indices), *operands)
        functionalize.write(a, new, f"numpy.{name}(x, indices, ...)")
        return None

    def _updated(self, x, indices, *operands):
        positions = _positions(x.shape, indices, f"{self.__name__}.at")
        target = shape_of(positions)
        value = operand(operands[0]) if operands else None
        if value is not None and broadcast_shapes(
            shape_of(value), target, operation=f"{self.__name__}.at"
        ) != tuple(target):
            raise _error(
                ShapeError,
                f"{self.__name__}.at: values of shape {shape_of(value)} do not broadcast to "
                f"the indexed shape {target}",
            )
        if value is not None and result_type(x, value) == x.dtype:
            if self.__name__ in _SCATTER_MODES:
                return update(x, indices, value, _SCATTER_MODES[self.__name__])
            if self.__name__ == "subtract":  # x - v is x + (-v), exactly
                return update(x, indices, ufuncs.negative(value), "add")
        return self._sequential_at(x, positions, value)

    def _sequential_at(self, x, positions, value):
        """One entry at a time, in index order: the ufunc's result cast back into
        ``x``'s dtype at each step, as NumPy's unbuffered loop does. A scalar value is
        closed over (a Python scalar stays weakly typed); an array is scanned along."""
        count = math.prod(shape_of(positions))
        if not count:
            return x
        items = [lax.reshape(asarray(positions), (count,))]
        scanned = value is not None and shape_of(value) != ()
        if scanned:
            items.append(lax.reshape(lax.broadcast_to_rank(value, shape_of(positions)), (count,)))
        operands = () if value is None else (value,)

        def step(current, item):
            position = item[0]
            entry = lax.dynamic_slice(current, [position], [1])
            new = self(entry, item[1]) if scanned else self(entry, *operands)
            new = asarray(convert(new, current.dtype))
            return lax.dynamic_update_slice(current, new, [position]), None

        flat, _ = scan(step, lax.reshape(x, (x.size,)), tuple(items))
        return lax.reshape(flat, x.shape)

    # ------------------------------------------------------------------ shared

    def _check(self, unsupported, method) -> str:
        """The method's name, after NumPy's refusals and numbax's (``out=``) by name."""
        name = f"{self.__name__}.{method}"
        if method != "at" and self.nin != 2:
            raise _error(
                ShapeError,
                f"{name}: {method} is only supported for binary functions ({self.__name__} "
                "takes one argument; NumPy refuses it too)",
            )
        if unsupported.get("out") is not None:
            raise _error(
                UnsupportedFunctionError,
                f"numbax.numpy.{name}(..., out=...) is not supported: use the returned value, "
                f"or call numpy.{name}(..., out=...), which numbax traces by writing the "
                "result into out",
            )
        given = sorted(k for k, v in unsupported.items() if k != "out")
        if given:
            raise _error(
                UnsupportedFunctionError, f"{name}() does not support the argument(s) {given}"
            )
        return name

    def _loop_dtype(self, method, x_dtype, dtype):
        """The dtype NumPy runs ``method`` in for an array of ``x_dtype``, asked of NumPy."""
        probe = np.ones((1,), x_dtype)
        extra = ([0],) if method == "reduceat" else ()
        try:
            with np.errstate(all="ignore"):
                result = getattr(self.numpy_ufunc, method)(probe, *extra, dtype=dtype)
        except TypeError as err:
            raise _error(
                NumbaxTypeError,
                f"numpy.{self.__name__}.{method} of a {x_dtype} array"
                + (f" with dtype={dtype}" if dtype is not None else "")
                + f": {err} (NumPy refuses it too); pass dtype= or convert the array first",
            ) from None
        return dtypes.canonicalize(result.dtype)

    @staticmethod
    def _as_scalar(value, dtype, name):
        """``initial=`` or an identity as a 0-d value of ``dtype`` (cast unsafely, as
        NumPy does: bitwise_and's identity -1 is all ones); None stays None."""
        if value is None:
            return None
        value = operand(value)
        if shape_of(value) != ():
            raise _error(ShapeError, f"{name}(initial=...) must be a scalar, got {shape_of(value)}")
        if isinstance(value, Tracer):
            return lax.convert_element_type(value, dtype)
        return np.array(value).astype(dtype)

    def _combine(self, a, b):
        """One step of the loop: the ufunc, its result kept in the loop's dtype."""
        return asarray(convert(self(a, b), result_type(a)))


def _any_tracer(*values) -> bool:
    for value in values:
        if isinstance(value, Tracer):
            return True
        if isinstance(value, (tuple, list)) and _any_tracer(*value):
            return True
    return False


def _positions(shape, indices, name):
    """The flat position of each entry ``x[indices]`` names, in NumPy's order; an index
    known while tracing is checked as NumPy checks it (out of range raises)."""
    size = math.prod(shape)
    if _any_tracer(indices):
        return getitem(lax.reshape(lax.iota(dtypes.int64, (size,)), shape), indices)
    try:
        return np.arange(size, dtype=np.int64).reshape(shape)[indices]
    except IndexError as err:
        raise _error(IndexError, f"{name}: {err} (NumPy raises this too)") from None


def wrap_ufuncs(handled_ufuncs: dict, namespace: dict) -> dict:
    """Replace, in ``namespace``, every implementation of a ufunc in ``handled_ufuncs``
    by a ``Ufunc`` with NumPy's methods; return {NumPy ufunc: Ufunc}. Generalized ufuncs
    (``matmul``) have no such methods and stay functions."""
    wrapped, by_implementation = {}, {}
    for numpy_ufunc, implementation in handled_ufuncs.items():
        if not isinstance(numpy_ufunc, np.ufunc) or numpy_ufunc.signature is not None:
            continue
        ufunc = by_implementation.setdefault(id(implementation), Ufunc(numpy_ufunc, implementation))
        wrapped[numpy_ufunc] = ufunc
    for name, value in list(namespace.items()):
        if id(value) in by_implementation:
            namespace[name] = by_implementation[id(value)]
    return wrapped
