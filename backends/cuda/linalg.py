"""The linear-algebra primitives (``ir/linalg.py``) on the host's orders, between the
kernels: library factorizations, not kernels of numbax's own.

On a GPU, CuPy factorizes the device buffers where they are (cuSOLVER: ``cupy.linalg``
and ``cupyx.scipy.linalg``; the LU and triangular solves one matrix of the stack at a
time). Without CuPy a GPU program with linear algebra cannot run, and says which package
to install. Under the simulator the step copies its operands to the host and runs the
reference implementation, so the tests cover a program's factorizations there too.
"""

from __future__ import annotations

import importlib.util

import numpy as np

from ...ir.errors import MissingDependencyError
from . import device
from .host_runners import RUNNERS
from .options import simulating


def run_linalg(executable, step, operands: list, stream) -> list:
    eqn = step.eqn
    if simulating():
        arrays = [
            array.copy_to_host(stream=stream).reshape(atom.aval.shape)
            for array, atom in zip(operands, step.inputs, strict=True)
        ]
        stream.synchronize()
        results = eqn.prim.impl(*arrays, **eqn.params)
        return [
            device.device_input(np.ascontiguousarray(result), var.aval, stream)
            for result, var in zip(results, step.outputs, strict=True)
        ]
    require_cupy(f"runs numpy.linalg's factorizations ({eqn.prim.name} here) with CuPy's cuSOLVER")
    return _cupy_linalg(eqn, operands, stream)


def require_cupy(what: str) -> None:
    """Raise the error that names the ``cupy`` extra, where CuPy is not installed."""
    if importlib.util.find_spec("cupy") is None:
        raise MissingDependencyError(
            f"the cuda backend {what}: install numbax's cupy extra "
            "(pip install 'numbax[cupy]', which is cupy-cuda13x), or run this program on the "
            "cpu backend"
        )


def _cupy_linalg(eqn, operands: list, stream) -> list:
    import cupy
    from numba import cuda

    stream.synchronize()  # CuPy runs on its own stream: the kernels before must be done
    arrays = [
        cupy.asarray(operand).reshape(atom.aval.shape)
        for operand, atom in zip(operands, eqn.inputs, strict=True)
    ]
    if any(array.size == 0 for array in arrays):  # nothing to factorize: the reference's shapes
        results = eqn.prim.impl(*[cupy.asnumpy(array) for array in arrays], **eqn.params)
    else:
        results = _CUPY[eqn.prim.name](*arrays, **eqn.params)
    flat = [
        cupy.ascontiguousarray(cupy.asarray(result), dtype=var.aval.dtype).ravel()
        for result, var in zip(results, eqn.outputs, strict=True)
    ]
    cupy.cuda.get_current_stream().synchronize()
    return [cuda.as_cuda_array(result) for result in flat]


def _cholesky(a):
    import cupy

    lower = cupy.linalg.cholesky(a)
    # A failed factorization stops at a pivot that is not positive, left on the diagonal.
    diagonal = cupy.diagonal(lower, axis1=-2, axis2=-1)
    failed = ~cupy.all(diagonal > 0, axis=-1)
    return [cupy.where(failed[..., None, None], cupy.nan, lower)]


def _per_matrix(a, factorize):
    """``factorize(index, matrix)`` of each matrix of the stack; its results stacked."""
    import cupy

    flat = a.reshape((-1, *a.shape[-2:]))
    parts = [factorize(index, flat[index]) for index in range(flat.shape[0])]
    return [
        cupy.stack([part[k] for part in parts]).reshape((*a.shape[:-2], *parts[0][k].shape))
        for k in range(len(parts[0]))
    ]


def _triangular_solve(a, b, *, lower, transpose_a, unit_diagonal):
    from cupyx.scipy.linalg import solve_triangular

    flat_b = b.reshape((-1, *b.shape[-2:]))
    return _per_matrix(
        a,
        lambda i, matrix: [
            solve_triangular(
                matrix, flat_b[i], trans=int(transpose_a), lower=lower, unit_diagonal=unit_diagonal
            )
        ],
    )


def _lu(a):
    import cupy
    from cupyx.scipy.linalg import lu_factor

    def factorize(_, matrix):
        packed, pivots = lu_factor(matrix)
        permutation = np.arange(matrix.shape[0], dtype=np.int32)
        for k, p in enumerate(cupy.asnumpy(pivots)):  # the row swaps, in order
            permutation[[k, p]] = permutation[[p, k]]
        return [packed, pivots.astype(np.int32), cupy.asarray(permutation)]

    return _per_matrix(a, factorize)


def _qr(a, *, full_matrices):
    import cupy

    return list(cupy.linalg.qr(a, mode="complete" if full_matrices else "reduced"))


def _eigh(a):
    import cupy

    return list(cupy.linalg.eigh(a, UPLO="L"))


def _svd(a, *, full_matrices, compute_uv):
    import cupy

    if not compute_uv:
        return [cupy.linalg.svd(a, compute_uv=False)]
    return list(cupy.linalg.svd(a, full_matrices=full_matrices))


_CUPY = {
    "cholesky": _cholesky,
    "triangular_solve": _triangular_solve,
    "lu": _lu,
    "qr": _qr,
    "eigh": _eigh,
    "svd": _svd,
}
NAMES = tuple(_CUPY)
RUNNERS.rule(*NAMES)(run_linalg)
