"""Python called from inside a traced program: ``debug_print``, ``debug_callback`` and
``pure_callback``, spelled as ``jax.debug.print``, ``jax.debug.callback`` and
``jax.pure_callback``.

Each front end flattens its arguments, wraps the user's function into one over the flat
arrays (rebuilding the pytrees it was called with) and registers the wrapper
(``ir/callbacks.py``); the eqn carries the wrapper's id. Arguments that are not arrays
(a string, None) are static: the wrapper passes them as they are.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..ir import dtypes
from ..ir.callbacks import debug_callback_p, pure_callback_p, register_callback
from ..ir.core import ShapedArray
from ..ir.errors import NumbaxTypeError, ShapeError, at_line
from .core import Tracer, bind
from .pytree import tree_flatten, tree_unflatten
from .source_info import user_frame_info


class ShapeDtypeStruct:
    """The shape and dtype of an array, without the array (``jax.ShapeDtypeStruct``).

    >>> ShapeDtypeStruct((2, 3), "float32")
    ShapeDtypeStruct(shape=(2, 3), dtype=float32)
    """

    __slots__ = ("shape", "dtype")

    def __init__(self, shape, dtype):
        self.shape = tuple(int(d) for d in shape)
        self.dtype = np.dtype(dtype)

    def __repr__(self):
        return f"ShapeDtypeStruct(shape={self.shape}, dtype={self.dtype.name})"


def _is_array(leaf) -> bool:
    return isinstance(leaf, (Tracer, np.ndarray, np.generic, bool, int, float, complex))


def _flat_arguments(args, kwargs):
    """The array operands of ``(args, kwargs)`` and ``rebuild(arrays) -> (args, kwargs)``,
    which puts the static leaves back in their places."""
    leaves, tree = tree_flatten((args, kwargs))
    is_array = [_is_array(leaf) for leaf in leaves]
    operands = [leaf for leaf, array in zip(leaves, is_array, strict=True) if array]

    def rebuild(arrays):
        values = iter(arrays)
        filled = [next(values) if a else leaf for leaf, a in zip(leaves, is_array, strict=True)]
        return tree_unflatten(tree, filled)

    return operands, rebuild


def debug_callback(callback: Callable, *args, **kwargs) -> None:
    """Call ``callback(*args, **kwargs)`` on the arrays' values each time the program
    runs, in program order (``jax.debug.callback``). Under ``vmap`` it is called once per
    example; under ``grad`` with the primal values.

    >>> import numpy as np, numbax
    >>> numbax.jit(lambda x: numbax.debug.callback(print, x.sum()) or x)(np.ones(2))
    2.0
    array([1., 1.])
    """
    operands, rebuild = _flat_arguments(args, kwargs)

    def flat_callback(*arrays):
        # Copies: the function may keep them, and compiled code reuses its buffers.
        call_args, call_kwargs = rebuild([np.array(a) for a in arrays])
        callback(*call_args, **call_kwargs)

    bind(debug_callback_p, *operands, callback=register_callback(flat_callback))


def debug_print(fmt: str, *args, **kwargs) -> None:
    """Print ``fmt.format(*args, **kwargs)`` with the arrays' values each time the
    program runs (``jax.debug.print``): inside ``jit``, loops, branches, ``vmap`` (once
    per example) and ``grad`` (the primal values).

    >>> import numpy as np, numbax
    >>> numbax.jit(lambda x: numbax.debug.print("x = {x}", x=x * 2) or x)(np.ones(2))
    x = [2. 2.]
    array([1., 1.])
    """
    debug_callback(lambda *a, **k: print(fmt.format(*a, **k)), *args, **kwargs)


def pure_callback(callback: Callable, result_shape_dtypes, *args, **kwargs):
    """Call ``callback(*args, **kwargs)`` on NumPy arrays from inside a compiled program;
    it must return arrays of the shapes and dtypes of ``result_shape_dtypes`` (a pytree of
    objects with ``.shape`` and ``.dtype``: ``ShapeDtypeStruct``, NumPy arrays), in the
    same structure (``jax.pure_callback``). The function must be pure: an unused result
    may never be computed, and a repeated call may be computed once. Under ``vmap`` it is
    called once per example; it has no derivative (wrap it in ``numbax.custom_vjp``).

    >>> import numpy as np, numbax
    >>> out = ShapeDtypeStruct((3,), np.float64)
    >>> numbax.jit(lambda x: numbax.pure_callback(np.cumsum, out, x))(np.ones(3))
    array([1., 2., 3.])
    """
    source_info = user_frame_info()
    result_leaves, result_tree = tree_flatten(result_shape_dtypes)
    result_avals = tuple(_declared_aval(leaf, source_info) for leaf in result_leaves)
    operands, rebuild = _flat_arguments(args, kwargs)

    def flat_callback(*arrays):
        call_args, call_kwargs = rebuild(arrays)
        results, tree = tree_flatten(callback(*call_args, **call_kwargs))
        if tree != result_tree:
            raise NumbaxTypeError(
                at_line(
                    f"pure_callback: {_name(callback)} returned {tree}, but "
                    f"result_shape_dtypes declares {result_tree}",
                    source_info,
                )
            )
        return tuple(
            _declared_result(callback, k, value, aval, source_info)
            for k, (value, aval) in enumerate(zip(results, result_avals, strict=True))
        )

    outs = bind(
        pure_callback_p,
        *operands,
        callback=register_callback(flat_callback),
        result_avals=result_avals,
    )
    return tree_unflatten(result_tree, outs)


def _declared_aval(leaf, source_info) -> ShapedArray:
    if not (hasattr(leaf, "shape") and hasattr(leaf, "dtype")):
        raise NumbaxTypeError(
            at_line(
                f"pure_callback: result_shape_dtypes holds {type(leaf).__name__}, not an "
                "object with .shape and .dtype; use numbax.ShapeDtypeStruct(shape, dtype)",
                source_info,
            )
        )
    return ShapedArray(leaf.shape, dtypes.canonicalize(leaf.dtype))


def _declared_result(callback, k: int, value, aval: ShapedArray, source_info) -> np.ndarray:
    """``value`` as an array of exactly ``aval`` (C-contiguous and writeable, as compiled
    code reads it), or an error naming the mismatch."""
    array = np.asarray(value)
    if array.shape != aval.shape:
        raise ShapeError(
            at_line(
                f"pure_callback: result {k} of {_name(callback)} has shape {array.shape}, but "
                f"result_shape_dtypes declares {aval.shape}",
                source_info,
            )
        )
    if array.dtype != aval.dtype:
        raise NumbaxTypeError(
            at_line(
                f"pure_callback: result {k} of {_name(callback)} has dtype {array.dtype}, but "
                f"result_shape_dtypes declares {aval.dtype}; convert it in the callback "
                f"(.astype(np.{aval.dtype.name}))",
                source_info,
            )
        )
    return np.require(array, requirements=("C", "W", "O"))


def _name(callback) -> str:
    return getattr(callback, "__qualname__", None) or repr(callback)
