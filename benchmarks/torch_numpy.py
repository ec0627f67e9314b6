"""The NumPy calls of the models group's programs (models.py), spelled for PyTorch.

The programs take an array namespace `xp`; JAX and numbax have NumPy's, PyTorch has its
own names and keywords (`dim=` for `axis=`, `torch.cat` for `concatenate`, `permute` for
`transpose` with axes). This module is that namespace for torch tensors: the functions the
programs call, each the torch operation a PyTorch user would write, so torch eager and
`torch.compile` run the same program text as every other library. A NumPy array the
program makes as a constant (the causal mask) becomes a tensor where it meets one.
Imported only where torch is installed.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional

from .kernels import Loops


def _tensor(x):
    return torch.from_numpy(x) if isinstance(x, np.ndarray) else x


def _dims(axis):
    return tuple(axis) if isinstance(axis, tuple | list) else axis


def maximum(x, y):
    if isinstance(y, int | float):
        return torch.clamp_min(x, y)
    return torch.maximum(_tensor(x), _tensor(y))


def where(condition, x, y):
    return torch.where(_tensor(condition), _tensor(x), _tensor(y))


def max(x, axis=None, keepdims=False):  # noqa: A001 - NumPy's name
    return torch.amax(x, dim=() if axis is None else _dims(axis), keepdim=keepdims)


def sum(x, axis=None, keepdims=False):  # noqa: A001 - NumPy's name
    if axis is None:
        return torch.sum(x)
    return torch.sum(x, dim=_dims(axis), keepdim=keepdims)


def mean(x, axis=None, keepdims=False):
    if axis is None:
        return torch.mean(x)
    return torch.mean(x, dim=_dims(axis), keepdim=keepdims)


def transpose(x, axes=None):
    return x.permute(*axes) if axes is not None else x.permute(*reversed(range(x.ndim)))


def reshape(x, shape):
    return torch.reshape(x, shape)


def concatenate(arrays, axis=0):
    return torch.cat(list(arrays), dim=axis)


def stack(arrays, axis=0):
    return torch.stack(list(arrays), dim=axis)


def arange(n):
    return torch.arange(n)


def zeros(shape, dtype=None):
    return torch.zeros(shape, dtype=dtype)


def eye(n, dtype=None):
    return torch.eye(n, dtype=dtype)


def diagonal(x):
    return torch.diagonal(x)


def roll(x, shift, axis):
    return torch.roll(x, shifts=shift, dims=axis)


def pad(x, width):
    """`np.pad(x, width)`: zeros, `width` on both sides of every axis."""
    return torch.nn.functional.pad(x, (width, width) * x.ndim)


exp, log, tanh, sqrt, einsum = torch.exp, torch.log, torch.tanh, torch.sqrt, torch.einsum
linalg = torch.linalg


def fori_loop(lower, upper, body, value):
    for i in range(lower, upper):
        value = body(i, value)
    return value


def scan(f, init, xs):
    carry, ys = init, []
    for x in xs:
        carry, y = f(carry, x)
        ys.append(y)
    return carry, torch.stack(ys)


def _at(x):
    raise NotImplementedError("the models group's programs do not update arrays in place")


LOOPS = Loops(fori_loop, scan, _at)
