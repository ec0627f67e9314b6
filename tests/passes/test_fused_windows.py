"""Windows fused: a ``slice`` or ``dynamic_slice`` read by a loop kernel is read in place
through an index map, not copied out by a kernel of its own. Kernel counts on stencils,
values against NumPy on every backend (and the fused program against the traced one)."""

from __future__ import annotations

import numpy as np
import pytest
from passes_util import assert_same_values, kernels, optimize, trace

import numbax
from numbax.tracer.control_flow import fori_loop

rng = np.random.default_rng(15)
A = rng.standard_normal((9, 7))
CUBE = rng.standard_normal((6, 5, 7))


def fused_and_checked(fn, *args):
    fused, _ = optimize(fn, *args)
    assert_same_values(trace(fn, *args), fused, args, rtol=1e-12, atol=1e-12)
    return fused


def all_kernels(jaxpr):
    """Kernels of ``jaxpr`` and of its loop bodies."""
    from numbax.passes.rewrite import subjaxprs

    found = []
    for eqn in jaxpr.eqns:
        if eqn.prim.name == "kernel":
            found.append(eqn)
        for body in subjaxprs(eqn):
            if eqn.prim.name != "kernel":
                found += all_kernels(body)
    return found


def copies(fused) -> list[str]:
    """The opaque kernels that copy a window of a non-scalar array out."""
    return [
        k.params["name"]
        for k in all_kernels(fused.jaxpr)
        if k.params["name"] in ("slice", "dynamic_slice") and k.outputs[0].aval.size > 1
    ]


def jacobi(a, b):
    average = 0.2 * (a[1:-1, 1:-1] + a[1:-1, :-2] + a[1:-1, 2:] + a[2:, 1:-1] + a[:-2, 1:-1])
    return b.at[1:-1, 1:-1].set(average)


def heat(src):
    c = src[1:-1, 1:-1, 1:-1]
    return (
        0.125 * (src[2:, 1:-1, 1:-1] - 2.0 * c + src[:-2, 1:-1, 1:-1])
        + 0.125 * (src[1:-1, 2:, 1:-1] - 2.0 * c + src[1:-1, :-2, 1:-1])
        + 0.125 * (src[1:-1, 1:-1, 2:] - 2.0 * c + src[1:-1, 1:-1, :-2])
        + c
    )


def strided_and_reduced(a):
    return (a[:8:2, 1:] * a[1::2, :-1]).sum(axis=1) + a[1:5, 0]


def laplacian_of_laplacian(a):
    inner = 4.0 * a[1:-1, 1:-1] - (a[2:, 1:-1] + a[:-2, 1:-1] + a[1:-1, 2:] + a[1:-1, :-2])
    return inner[1:] - inner[:-1]


def relax(path):
    def body(k, path):
        return np.minimum(path, path[:, k][:, None] + path[k][None, :])

    return fori_loop(0, path.shape[0], body, path)


def columns(y, c):
    def body(j, y):
        return y.at[:, j].set(y[:, j] * 2.0 + y[:, j - 1] + c[j])

    return fori_loop(1, y.shape[1], body, y)


def numpy_relax(path):
    path = path.copy()
    for k in range(path.shape[0]):
        path = np.minimum(path, path[:, k][:, None] + path[k][None, :])
    return path


def numpy_columns(y, c):
    y = y.copy()
    for j in range(1, y.shape[1]):
        y[:, j] = y[:, j] * 2.0 + y[:, j - 1] + c[j]
    return y


CASES = {
    "jacobi": (jacobi, (A, A + 1.0), lambda a, b: jacobi(a, b.copy())),
    "heat": (heat, (CUBE,), heat),
    "strided_and_reduced": (strided_and_reduced, (A,), strided_and_reduced),
    "laplacian_of_laplacian": (laplacian_of_laplacian, (A,), laplacian_of_laplacian),
    "relax": (relax, (np.abs(A[:7]),), numpy_relax),
    "columns": (columns, (A, A[0]), numpy_columns),
}


def numpy_jacobi(a, b):
    b = b.copy()
    b[1:-1, 1:-1] = 0.2 * (a[1:-1, 1:-1] + a[1:-1, :-2] + a[1:-1, 2:] + a[2:, 1:-1] + a[:-2, 1:-1])
    return b


CASES["jacobi"] = (jacobi, (A, A + 1.0), numpy_jacobi)


@pytest.mark.parametrize("name", CASES)
def test_windows_are_read_in_place(name):
    fn, args, _ = CASES[name]
    assert copies(fused_and_checked(fn, *args)) == []


@pytest.mark.parametrize("name", CASES)
def test_fused_windows_match_numpy(backend, name):
    fn, args, reference = CASES[name]
    if backend.simulated and name in ("relax", "columns"):
        args = tuple(a[:4] if a.ndim == 2 else a for a in args)
    got = backend.to_host(numbax.jit(fn, backend=backend)(*args))
    np.testing.assert_allclose(got, reference(*args), rtol=1e-12, atol=1e-12)


def test_a_stencil_is_one_loop_kernel():
    for fn, args in ((jacobi, (A, A)), (heat, (CUBE,))):
        fused = fused_and_checked(fn, *args)
        loops = [k for k in kernels(fused) if k.params["kind"] != "opaque"]
        assert len(loops) == 1 and loops[0].params["kind"] == "elementwise"


def test_a_window_of_a_computed_value_reads_it_from_memory():
    """The slice cannot read a value its own loop computes: two kernels, no copy."""
    fused = fused_and_checked(laplacian_of_laplacian, A)
    loops = [k for k in kernels(fused) if k.params["kind"] == "elementwise"]
    assert len(loops) == 2 and copies(fused) == []


def test_broadcast_windows_make_one_kernel_per_relaxation():
    fused = fused_and_checked(relax, np.abs(A[:7]))
    loops = [k for k in all_kernels(fused.jaxpr) if k.outputs[0].aval.shape == (7, 7)]
    assert len(loops) == 1
    assert {e.prim.name for e in loops[0].params["jaxpr"].eqns} >= {"dynamic_slice", "min"}


def test_cpu_source_indexes_the_window():
    source = numbax.jit(jacobi, backend="cpu").lower(A, A).source()
    assert "a[2 + i0, 1 + i1]" in source and ".copy()" not in source.split("kernel 1")[0]
