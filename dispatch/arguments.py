"""A jitted call's arguments: the fast path's key, static arguments as cache keys, and
each leaf as the executable takes it."""

from __future__ import annotations

import inspect
import math

import numpy as np

from ..ir.core import ShapedArray
from ..tracer.promote import is_device_array


def fast_signature(args) -> tuple | None:
    """The fast path's key of positional ``args``: per argument, a NumPy array's shape and
    dtype, or a tuple of those for a tuple of arrays; None for anything else. (Loops,
    not generators: this runs on every call.)"""
    signature = []
    for a in args:
        kind = type(a)
        if kind is np.ndarray:
            signature.append((a.shape, a.dtype))
        elif kind is tuple:
            part = ["tuple"]
            for x in a:
                if type(x) is not np.ndarray:
                    return None
                part.append((x.shape, x.dtype))
            signature.append(tuple(part))
        else:
            return None
    return tuple(signature)


def fast_leaves(args) -> list:
    """The arrays of arguments ``fast_signature`` accepts, in pytree order."""
    return [x for a in args for x in (a if type(a) is tuple else (a,))]


def as_executable_argument(leaf, aval: ShapedArray, keep_device: bool = False):
    """The argument as the executable takes it: a NumPy array, or the device array
    itself when the executable runs on the device (``accepts_device_arrays``). An accepted
    ndarray subclass is passed as its base array: the executable computes NumPy's meaning."""
    if type(leaf) is np.ndarray and leaf.dtype == aval.dtype:
        return leaf
    if is_device_array(leaf):
        if keep_device:
            return leaf
        try:
            return np.asarray(leaf, dtype=aval.dtype)
        except TypeError:  # CuPy refuses implicit copies to the host
            from numba import cuda

            return cuda.as_cuda_array(leaf).copy_to_host().astype(aval.dtype, copy=False)
    return np.asarray(leaf, dtype=aval.dtype)


def as_tuple(x) -> tuple:
    if x is None:
        return ()
    return (x,) if isinstance(x, int) else tuple(x)


def complete_statics(fun, argnums: tuple, argnames: tuple) -> tuple[tuple, tuple]:
    """A static parameter may be passed by position or by name, as in JAX: complete
    ``static_argnums`` and ``static_argnames`` from each other through the signature."""
    try:
        parameters = inspect.signature(fun).parameters.values()
    except (TypeError, ValueError):  # builtins and some callables have no signature
        return argnums, argnames
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    positional = [p for p in parameters if p.kind in kinds]
    count = len(positional)
    nums = [i + count if i < 0 and -count <= i else i for i in argnums]
    names = list(argnames)
    for i in nums:
        if 0 <= i < count and positional[i].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD:
            names.append(positional[i].name)
    nums += [k for k, p in enumerate(positional) if p.name in argnames]
    return tuple(dict.fromkeys(nums)), tuple(dict.fromkeys(names))


class Static:
    """A static argument in a cache key: equal exactly when the traces would be. The type
    counts (2 == 2.0 and they hash alike, but an int static times an int array stays
    int), NaN equals itself (else every call with NaN retraces), -0.0 differs from 0.0
    (``1 / s`` tells them apart), recursively through tuples. A bound method's receiver
    counts by identity: the trace reads its attributes."""

    __slots__ = ("value", "_key")

    def __init__(self, value, by_identity: bool = False):
        self.value = value
        self._key = (type(value), id(value)) if by_identity else static_key(value)

    def __eq__(self, other):
        return isinstance(other, Static) and self._key == other._key

    def __hash__(self):
        return hash(self._key)

    def __repr__(self):
        return repr(self.value)


def static_key(value):
    if isinstance(value, tuple):
        return (type(value), tuple(static_key(v) for v in value))
    if isinstance(value, (float, np.floating)):
        return (type(value), "nan" if value != value else (value, math.copysign(1.0, value)))
    if isinstance(value, (complex, np.complexfloating)):
        return (type(value), static_key(value.real), static_key(value.imag))
    return (type(value), value)
