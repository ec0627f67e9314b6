"""The NumPy calls of the models group's programs (models.py), spelled for PyTorch.

The programs take an array namespace `xp`; JAX and numbax have NumPy's, PyTorch has its
own names and keywords (`dim=` for `axis=`, `torch.cat` for `concatenate`, `permute` for
`transpose` with axes). This module is that namespace for torch tensors: the functions the
programs call, each the torch operation a PyTorch user would write, so torch eager and
`torch.compile` run the same program text as every other library. A NumPy array the
program makes as a constant (the causal mask) becomes a tensor where it meets one.
torch is imported where a function first runs, so the module imports without it.
"""

from __future__ import annotations

import numpy as np

from .kernels import Loops, _eager_fori_loop

# NumPy's names that are torch's own functions (module ``__getattr__``).
SAME_NAMES = ("exp", "log", "tanh", "sqrt", "einsum", "linalg")


def _torch():
    import torch

    return torch


def __getattr__(name: str):
    if name in SAME_NAMES:
        return getattr(_torch(), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _tensor(x):
    return _torch().from_numpy(x) if isinstance(x, np.ndarray) else x


def _dims(axis):
    return tuple(axis) if isinstance(axis, tuple | list) else axis


def maximum(x, y):
    if isinstance(y, int | float):
        return x.clamp_min(y)
    return _torch().maximum(_tensor(x), _tensor(y))


def where(condition, x, y):
    return _torch().where(_tensor(condition), _tensor(x), _tensor(y))


def max(x, axis=None, keepdims=False):  # noqa: A001 - NumPy's name
    return x.amax(dim=() if axis is None else _dims(axis), keepdim=keepdims)


def sum(x, axis=None, keepdims=False):  # noqa: A001 - NumPy's name
    return x.sum() if axis is None else x.sum(dim=_dims(axis), keepdim=keepdims)


def mean(x, axis=None, keepdims=False):
    return x.mean() if axis is None else x.mean(dim=_dims(axis), keepdim=keepdims)


def transpose(x, axes=None):
    return x.permute(*axes) if axes is not None else x.permute(*reversed(range(x.ndim)))


def reshape(x, shape):
    return x.reshape(shape)


def concatenate(arrays, axis=0):
    return _torch().cat(list(arrays), dim=axis)


def stack(arrays, axis=0):
    return _torch().stack(list(arrays), dim=axis)


def arange(n):
    return _torch().arange(n)


def zeros(shape, dtype=None):
    return _torch().zeros(shape, dtype=dtype)


def eye(n, dtype=None):
    return _torch().eye(n, dtype=dtype)


def diagonal(x):
    return x.diagonal()


def roll(x, shift, axis):
    return x.roll(shifts=shift, dims=axis)


def pad(x, width):
    """`np.pad(x, width)`: zeros, `width` on both sides of every axis."""
    return _torch().nn.functional.pad(x, (width, width) * x.ndim)


def scan(f, init, xs):
    carry, ys = init, []
    for x in xs:
        carry, y = f(carry, x)
        ys.append(y)
    return carry, _torch().stack(ys)


def _at(x):
    raise NotImplementedError("the models group's programs do not update arrays in place")


LOOPS = Loops(_eager_fori_loop, scan, _at)  # a Python loop, as every eager library's
