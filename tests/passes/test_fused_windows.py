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


def laplacian_then_five_points(a):
    inner = 4.0 * a[1:-1, 1:-1] - (a[2:, 1:-1] + a[:-2, 1:-1] + a[1:-1, 2:] + a[1:-1, :-2])
    neighbours = inner[2:, 1:-1] + inner[:-2, 1:-1] + inner[1:-1, 2:] + inner[1:-1, :-2]
    return inner[1:-1, 1:-1] + neighbours


def strided_windows_of_windows(a):
    # Strided windows of a value computed from strided windows: y[1::2, ::2] reads rows 2
    # and 6 of a[:8:2] (a[2:7:4]) and columns 1, 3 and 5 of a[:, 1:] (a[:, 1:6:2]).
    y = a[:8:2, 1:] * 2.0 - a[1::2, :-1] ** 2
    return y[1::2, ::2] - y[:-1:2, 1::2]


def hdiff_like(a):
    """Three levels: a Laplacian, limited differences of it, their differences."""
    lap = 4.0 * a[1:-1, 1:-1] - (a[2:, 1:-1] + a[:-2, 1:-1] + a[1:-1, 2:] + a[1:-1, :-2])
    flux = lap[1:, 1:-1] - lap[:-1, 1:-1]
    flux = np.where(flux * (a[2:-1, 2:-2] - a[1:-2, 2:-2]) > 0, 0.0, flux)
    return a[2:-2, 2:-2] - 0.1 * (flux[1:] - flux[:-1])


def window_of_an_output(a):
    y = a * 2.0 + 1.0
    return y, y[1:] - y[:-1]


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
    "laplacian_then_five_points": (laplacian_then_five_points, (A,), laplacian_then_five_points),
    "strided_windows_of_windows": (strided_windows_of_windows, (A,), strided_windows_of_windows),
    "hdiff_like": (hdiff_like, (A,), hdiff_like),
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


@pytest.mark.parametrize(
    "fn", [laplacian_of_laplacian, strided_windows_of_windows, hdiff_like], ids=lambda f: f.__name__
)
def test_a_few_windows_of_a_cheap_value_recompute_it(fn):
    """Each window of the Laplacian is computed from windows of ``a``: one loop kernel that
    reads only ``a``, no copy, and no Laplacian stored."""
    fused = fused_and_checked(fn, A)
    loops = [k for k in kernels(fused) if k.params["kind"] != "opaque"]
    assert len(loops) == 1 and loops[0].params["kind"] == "elementwise"
    assert copies(fused) == []
    assert [v.aval.shape for v in loops[0].inputs] == [A.shape]


def test_many_windows_of_a_computed_value_read_it_from_memory():
    """Five windows of the Laplacian would recompute it five times: it is stored by one
    loop kernel and its windows are read in place by the next, with no copy."""
    fused = fused_and_checked(laplacian_then_five_points, A)
    loops = [k for k in kernels(fused) if k.params["kind"] == "elementwise"]
    assert len(loops) == 2 and copies(fused) == []


def test_a_value_the_program_returns_is_not_recomputed_for_its_windows():
    fused = fused_and_checked(window_of_an_output, A)
    loops = [k for k in kernels(fused) if k.params["kind"] != "opaque"]
    multiplies = [e for k in loops for e in k.params["jaxpr"].eqns if e.prim.name == "mul"]
    assert len(multiplies) == 1 and copies(fused) == []


def test_broadcast_windows_make_one_kernel_per_relaxation():
    fused = fused_and_checked(relax, np.abs(A[:7]))
    loops = [k for k in all_kernels(fused.jaxpr) if k.outputs[0].aval.shape == (7, 7)]
    assert len(loops) == 1
    assert {e.prim.name for e in loops[0].params["jaxpr"].eqns} >= {"dynamic_slice", "min"}


def test_cpu_source_indexes_the_window():
    source = numbax.jit(jacobi, backend="cpu").lower(A, A).source()
    assert "a[2 + i0, 1 + i1]" in source and ".copy()" not in source.split("kernel 1")[0]
