"""The cuda backend's library operations, linear algebra and sorting: under the simulator
they run as opaque host steps (the reference implementations), so programs that use them
are tested here; on a GPU without CuPy they stop with an error that names the ``cupy``
extra (``backends/cuda/linalg.py``, ``sort.py``).

    NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/backends/test_cuda_library_ops.py
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
import switches

import numbax
from numbax.config import cuda_simulator

SIMULATED = cuda_simulator()
pytestmark = pytest.mark.skipif(
    not (SIMULATED or switches.flag("NUMBAX_TEST_GPU")),
    reason="needs NUMBA_ENABLE_CUDASIM=1 (or NUMBAX_TEST_GPU=1 on a GPU machine)",
)


def _on_cuda(fn, *args):
    result = numbax.jit(fn, backend="cuda")(*args)
    return numbax.tree_map(lambda x: x.copy_to_host() if hasattr(x, "copy_to_host") else x, result)


def _spd(rng, *shape):
    m = rng.standard_normal((*shape, shape[-1]))
    return m @ np.swapaxes(m, -1, -2) / shape[-1] + np.eye(shape[-1])


def test_a_program_mixing_kernels_and_factorizations(rng):
    a, b = _spd(rng, 2, 6), rng.standard_normal((2, 6, 3))

    def program(a, b):
        x = np.linalg.solve(a * 2.0, b)  # kernel, LU, triangular solves
        lower = np.linalg.cholesky(a)
        s = np.linalg.svd(a, compute_uv=False)
        return x + 1.0, lower, np.sort(s, axis=-1), np.linalg.slogdet(a).logabsdet

    got = _on_cuda(program, a, b)
    want = program(a, b)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)


def test_sorts_and_their_derivatives(rng):
    x = rng.standard_normal((3, 9))
    x[0, 2] = np.nan
    np.testing.assert_array_equal(_on_cuda(np.sort, x), np.sort(x))
    np.testing.assert_array_equal(_on_cuda(lambda x: np.argsort(x, axis=0), x), np.argsort(x, 0))
    y = x[1:]
    grad = numbax.jit(numbax.grad(lambda y: np.sum(np.sort(y) * np.arange(9.0))), backend="cuda")
    expected = np.empty_like(y)
    np.put_along_axis(expected, np.argsort(y), np.arange(9.0), axis=-1)
    np.testing.assert_array_equal(grad(y).copy_to_host(), expected)


@pytest.mark.parametrize(
    "module, program",
    [
        ("linalg", lambda a: np.linalg.cholesky(a)),
        ("sort", lambda a: np.sort(a)),
    ],
)
def test_without_cupy_a_gpu_program_names_the_cupy_extra(module, program, monkeypatch):
    from numbax.backends.cuda import linalg, sort

    target = {"linalg": linalg, "sort": sort}[module]
    monkeypatch.setattr(target, "simulating", lambda: False)  # as on a GPU
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *rest: None if name == "cupy" else real_find_spec(name, *rest),
    )
    with pytest.raises(numbax.MissingDependencyError, match=r"pip install 'numbax\[cupy\]'"):
        numbax.jit(program, backend="cuda")(np.eye(3))
