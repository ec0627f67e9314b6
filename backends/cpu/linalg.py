"""The linear-algebra primitives (``ir/linalg.py``) in the compiled program: one call per
eqn into a helper here that loops over the stack of matrices.

``qr``, ``eigh`` and ``svd`` call Numba's ``np.linalg``, which runs LAPACK through
SciPy (``svd`` is ``gesdd``, as NumPy's). Numba has no LU or triangular solve, so
``lu``, ``triangular_solve`` and ``cholesky`` call SciPy's ``getrf``, ``trsm`` and
``potrf`` directly (``lapack.py``), the routines NumPy's ``solve`` and ``cholesky`` run; a
Cholesky factorization that fails (the matrix is not positive definite) fills its matrix
with NaN, as the IR says.
The complete QR of a tall matrix (Numba's ``qr`` is reduced only) is a loop here:
Householder reflectors with LAPACK's signs, applied to the identity, which is NumPy's
``mode='complete'``. Each helper reads and
writes stacks of shape ``(batch, m, n)``: the emitters reshape the program's arrays
(C-contiguous, so a reshape is a view) to that.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from .loopnest import tuple_source
from .opaque_emitters import EMITTERS

MODULE = "numbax.backends.cpu.linalg"
LAPACK_MODULE = "numbax.backends.cpu.lapack"
IMPORTS = {
    MODULE: ("nbx_linalg", "from numbax.backends.cpu import linalg as nbx_linalg"),
    LAPACK_MODULE: ("nbx_lapack", "from numbax.backends.cpu import lapack as nbx_lapack"),
}

_JIT = {"error_model": "numpy", "no_cfunc_wrapper": True, "cache": True}


@njit(**_JIT)
def _complete_qr(a, q, r):
    """Householder QR of one tall matrix, ``q`` complete (LAPACK's ``geqr2``/``org2r``)."""
    m, n = a.shape
    work = a.copy()
    vectors = np.zeros((n, m), a.dtype)
    taus = np.zeros(n, a.dtype)
    for j in range(n):
        alpha = work[j, j]
        norm = 0.0
        for i in range(j + 1, m):
            norm = math.hypot(norm, work[i, j])
        if norm == 0.0:
            continue  # tau = 0: the reflector is the identity
        beta = -math.copysign(math.hypot(alpha, norm), alpha)
        taus[j] = (beta - alpha) / beta
        vectors[j, j] = 1.0
        for i in range(j + 1, m):
            vectors[j, i] = work[i, j] / (alpha - beta)
        for c in range(j, n):  # work = (I - tau v vᵀ) work
            dot = 0.0
            for i in range(j, m):
                dot += vectors[j, i] * work[i, c]
            for i in range(j, m):
                work[i, c] -= taus[j] * dot * vectors[j, i]
    q[:] = 0.0
    for i in range(m):
        q[i, i] = 1.0
    for j in range(n - 1, -1, -1):  # q = H_0 ... H_{n-1} I, applied from the last
        for c in range(j, m):
            dot = 0.0
            for i in range(j, m):
                dot += vectors[j, i] * q[i, c]
            for i in range(j, m):
                q[i, c] -= taus[j] * dot * vectors[j, i]
    for i in range(m):
        for c in range(n):
            r[i, c] = work[i, c] if i <= c else 0.0


@njit(**_JIT)
def qr(a, q, r, full_matrices):
    m, n = a.shape[1], a.shape[2]
    for p in range(a.shape[0]):
        if full_matrices and m > n:
            _complete_qr(a[p], q[p], r[p])
        elif min(m, n) > 0:
            q[p], r[p] = np.linalg.qr(a[p])


@njit(**_JIT)
def eigh(a, w, v):
    if a.shape[1] == 0:
        return
    for p in range(a.shape[0]):
        w[p], v[p] = np.linalg.eigh(a[p])


@njit(**_JIT)
def _identities(x):
    x[:] = 0.0
    for p in range(x.shape[0]):
        for i in range(min(x.shape[1], x.shape[2])):
            x[p, i, i] = 1.0


@njit(**_JIT)
def svd(a, u, s, vt, full_matrices):
    if min(a.shape[1], a.shape[2]) == 0:  # no singular values: identities, as NumPy's
        _identities(u)
        _identities(vt)
        return
    for p in range(a.shape[0]):
        u[p], s[p], vt[p] = np.linalg.svd(a[p], full_matrices=full_matrices)


@njit(**_JIT)
def singular_values(a, s):
    if min(a.shape[1], a.shape[2]) == 0:
        return
    for p in range(a.shape[0]):
        s[p] = np.linalg.svd(a[p], full_matrices=False)[1]


# --- emitters --------------------------------------------------------------------------------


def _stack(name: str, aval, rank: int = 2) -> str:
    """``name`` viewed as ``(batch, *matrix)``: the helpers' stacks."""
    matrix = aval.shape[len(aval.shape) - rank :]
    batch = math.prod(aval.shape[: len(aval.shape) - rank])
    return f"{name}.reshape({tuple_source((batch, *matrix))})"


def _call(program, eqn, helper: str, inputs, flags=(), module: str = MODULE) -> list[str]:
    """Allocate the outputs (``new_array``: the launcher's where the op is a unit of its
    own), then one helper call over the stacks."""
    program.calls_blas = True  # LAPACK, on the BLAS's threads
    outs = [program.name(var) for var in eqn.outputs]
    lines = [
        line
        for name, var in zip(outs, eqn.outputs, strict=True)
        for line in program.new_array(name, var.aval.shape, var.aval.dtype)
    ]
    stacks = [_stack(x, atom.aval) for x, atom in zip(inputs, eqn.inputs, strict=True)]
    vectors = {var for var in eqn.outputs if var.aval.ndim == eqn.inputs[0].aval.ndim - 1}
    stacks += [
        _stack(name, var.aval, 1 if var in vectors else 2)
        for name, var in zip(outs, eqn.outputs, strict=True)
    ]
    arguments = ", ".join([*stacks, *map(str, flags)])
    return lines + [f"{program.function(module, helper)}({arguments})"]


@EMITTERS.rule("cholesky")
def _cholesky(program, eqn, inputs, out) -> list[str]:
    return _call(program, eqn, "cholesky", inputs, module=LAPACK_MODULE)


@EMITTERS.rule("triangular_solve")
def _triangular_solve(program, eqn, inputs, out) -> list[str]:
    params = eqn.params
    flags = (params["lower"], params["transpose_a"], params["unit_diagonal"])
    return _call(program, eqn, "triangular_solve", inputs, flags, LAPACK_MODULE)


@EMITTERS.rule("lu")
def _lu(program, eqn, inputs, out) -> list[str]:
    return _call(program, eqn, "lu", inputs, module=LAPACK_MODULE)


@EMITTERS.rule("qr")
def _qr(program, eqn, inputs, out) -> list[str]:
    return _call(program, eqn, "qr", inputs, (eqn.params["full_matrices"],))


@EMITTERS.rule("eigh")
def _eigh(program, eqn, inputs, out) -> list[str]:
    return _call(program, eqn, "eigh", inputs)


@EMITTERS.rule("svd")
def _svd(program, eqn, inputs, out) -> list[str]:
    if not eqn.params["compute_uv"]:
        return _call(program, eqn, "singular_values", inputs)
    return _call(program, eqn, "svd", inputs, (eqn.params["full_matrices"],))
