"""Shifts, pads and concatenations fused as index arithmetic: ``np.roll``, ``np.pad`` in
each mode and ``concatenate`` of slices are read by the loop that consumes them, with no
kernel of their own (no copy, no zero-filled buffer). Values against NumPy on every
backend (the CUDA simulator too, with ``NUMBA_ENABLE_CUDASIM=1``), the fused program
against the traced one, and gradients against central finite differences."""

from __future__ import annotations

import numpy as np
import pytest
from passes_util import assert_same_values, optimize, trace

import numbax
from numbax.passes.rewrite import subjaxprs
from numbax.tracer.control_flow import fori_loop

rng = np.random.default_rng(36)
A = rng.standard_normal((5, 6))
B = rng.standard_normal((5, 6))
CUBE = rng.standard_normal((3, 4, 5))


def rolls(a):
    return np.roll(a, 2, axis=0) * np.roll(a, -3, axis=1) + np.roll(a, (1, -7), axis=(0, 1))


def rolls_of_a_cube(c):
    return np.roll(c, -1, axis=2) - np.roll(c, 4, axis=1) * np.roll(c, (-2, 1), axis=(0, 2))


def many_rolls(a):
    # More seams than the innermost loop is split at: the rest are tests in the loop.
    return sum(np.roll(a, k, axis=1) * k for k in range(1, 11))


def heat_step(u):
    neighbours = (
        np.roll(u, 1, axis=0)
        + np.roll(u, -1, axis=0)
        + np.roll(u, 1, axis=1)
        + np.roll(u, -1, axis=1)
    )
    return u + 0.2 * (neighbours - 4.0 * u)


def heat_steps(u):
    return fori_loop(0, 3, lambda t, u: heat_step(u), u)


def wave_step(u, previous):
    padded = np.pad(u, 1)
    laplacian = (
        padded[:-2, 1:-1] + padded[2:, 1:-1] + padded[1:-1, :-2] + padded[1:-1, 2:] - 4.0 * u
    )
    return 2.0 * u - previous + 0.25 * laplacian


def padded_with_a_traced_value(a, c):
    return np.pad(a, ((2, 0), (0, 3)), constant_values=c) * 2.0


def pad_of_a_computed_value(a):
    return np.pad(np.sin(a), 1) * 2.0


def pad_then_row_sums(a):
    return np.pad(a, ((1, 2), (0, 1))).sum(axis=1)


def pad_of_pad(a):
    return np.pad(np.pad(a, 1)[1:, :-1], 2, constant_values=5.0) * 3.0


def concatenated_slices(a, b):
    return np.concatenate([a[:, 3:], b[:, :2], a[:, 1:2]], axis=1) * b


def concatenated_rows(a, b):
    return np.concatenate([a[2:], b[:2]]) - a


def concatenated_with_an_empty_piece(a, b):
    return np.concatenate([a[:, :0], b[:, 1:], a[:, :1]], axis=1) * a


def stacked(a, b):
    return np.stack([a, b[::-1]]) * 2.0


def mode(name, width):
    def padded(a):
        return np.pad(a, width, mode=name) * 1.5 + 1.0

    padded.__name__ = f"pad_{name}"
    return padded


MODES = {
    "edge": ((1, 2), (3, 1)),
    "wrap": ((1, 2), (3, 7)),  # wider than the axis: the copies repeat
    "reflect": ((2, 1), (1, 3)),
    "symmetric": 2,
}

CASES = {
    "rolls": (rolls, (A,)),
    "rolls_of_a_cube": (rolls_of_a_cube, (CUBE,)),
    "many_rolls": (many_rolls, (rng.standard_normal((3, 23)),)),
    "heat_steps": (heat_steps, (A,)),
    "wave_step": (wave_step, (A, B)),
    "padded_with_a_traced_value": (padded_with_a_traced_value, (A, np.float64(3.5))),
    "pad_of_a_computed_value": (pad_of_a_computed_value, (A,)),
    "pad_then_row_sums": (pad_then_row_sums, (A,)),
    "pad_of_pad": (pad_of_pad, (A,)),
    "concatenated_slices": (concatenated_slices, (A, B)),
    "concatenated_rows": (concatenated_rows, (A, B)),
    "concatenated_with_an_empty_piece": (concatenated_with_an_empty_piece, (A, B)),
    **{f"pad_{name}": (mode(name, width), (A,)) for name, width in MODES.items()},
}


def numpy_reference(name, args):
    fn, _ = CASES[name]
    if name == "heat_steps":
        u = args[0]
        for _ in range(3):
            u = heat_step(u)
        return u
    return fn(*args)


def all_kernels(jaxpr) -> list:
    """The kernels of ``jaxpr`` and of its loop bodies."""
    found = []
    for eqn in jaxpr.eqns:
        if eqn.prim.name == "kernel":
            found.append(eqn)
        else:
            for body in subjaxprs(eqn):
                found += all_kernels(body)
    return found


def materialised(closed) -> list[str]:
    """The kernels of the fused program that make a pad or a concatenate in memory."""
    return [
        k.params["name"]
        for k in all_kernels(closed.jaxpr)
        if k.params["kind"] == "opaque"
        and any(e.prim.name in ("pad", "concatenate") for e in k.params["jaxpr"].eqns)
    ]


@pytest.mark.parametrize("name", CASES)
def test_no_pad_or_concatenate_is_materialised(name):
    fn, args = CASES[name]
    fused, _ = optimize(fn, *args)
    assert_same_values(trace(fn, *args), fused, args, rtol=1e-12, atol=1e-12)
    assert materialised(fused) == []
    reads = [e.prim.name for k in all_kernels(fused.jaxpr) for e in k.params["jaxpr"].eqns]
    assert {"pad", "concatenate"} & set(reads), "the case no longer pads or concatenates"


@pytest.mark.parametrize("name", ["rolls", "wave_step", "pad_reflect", "concatenated_slices"])
def test_the_cpu_program_has_no_pad_or_concatenate_kernel(name):
    fn, args = CASES[name]
    source = numbax.jit(fn, backend="cpu").lower(*args).source()
    assert "opaque pad" not in source and "opaque concatenate" not in source, source
    headings = [line.strip() for line in source.splitlines() if line.strip().startswith("# kernel")]
    assert len(headings) == 1 and "elementwise" in headings[0], headings


def test_loops_run_in_pieces_free_of_index_tests():
    """A roll along the last axis: the loop over it runs to the seam, then from it, and
    each piece reads one slice, with no test of the index (so it vectorises). A wave
    step's loops run in pieces over the border and the inside, on both axes."""
    source = numbax.jit(lambda a: np.roll(a, 2, axis=1) * 2.0, backend="cpu").lower(A).source()
    kernel = source[source.index("# --- kernel") :]
    assert "range(0, 2)" in kernel and "range(2, 6)" in kernel, kernel
    assert " if " not in kernel, kernel
    source = numbax.jit(wave_step, backend="cpu").lower(A, B).source()
    kernel = source[source.index("# --- kernel") :]
    assert "range(1, 4)" in kernel and "range(1, 5)" in kernel, kernel
    assert " if " not in kernel, kernel


@pytest.mark.parametrize("name", CASES)
def test_values_match_numpy(backend, name):
    fn, args = CASES[name]
    got = backend.to_host(numbax.jit(fn, backend=backend)(*args))
    np.testing.assert_allclose(got, numpy_reference(name, args), rtol=1e-12, atol=1e-12)


def test_a_stack_of_a_reversed_array_matches_numpy(backend):
    got = backend.to_host(numbax.jit(stacked, backend=backend)(A, B))
    np.testing.assert_allclose(got, stacked(A, B), rtol=1e-12, atol=1e-12)


def im2col_product(x, w):
    rows, columns = x.shape[1] - 2, x.shape[2] - 2
    patches = [x[:, i : i + rows, j : j + columns] for i in range(3) for j in range(3)]
    return np.tanh(np.concatenate(patches, axis=-1) @ w)


def test_a_concatenate_a_product_reads_is_one_loop_that_reads_its_pieces_in_place():
    """The im2col matrix is the product's operand, so it is in memory: one loop writes
    it, reading the nine windows in place, instead of nine copies and a concatenate."""
    args = (rng.standard_normal((2, 6, 5, 3)), rng.standard_normal((27, 4)))
    fused, _ = optimize(im2col_product, *args)
    assert_same_values(trace(im2col_product, *args), fused, args, rtol=1e-12, atol=1e-12)
    loops = [k for k in all_kernels(fused.jaxpr) if k.params["kind"] == "elementwise"]
    assert materialised(fused) == [] and len(loops) == 1
    assert [e.prim.name for e in loops[0].params["jaxpr"].eqns].count("slice") == 9
    got = numbax.jit(im2col_product, backend="cpu")(*args)
    np.testing.assert_allclose(got, im2col_product(*args), rtol=1e-12, atol=1e-12)


def test_a_heat_step_is_one_loop_kernel():
    fused, _ = optimize(heat_step, A)
    (kernel,) = all_kernels(fused.jaxpr)
    assert kernel.params["kind"] == "elementwise"
    assert [v.aval.shape for v in kernel.inputs] == [A.shape]


def test_a_pad_wider_than_the_axis_in_each_mode_matches_numpy():
    a = A[:2, :3]
    for name in (*MODES, "constant"):
        for width in (((0, 9), (7, 2)), 5):
            got = numbax.jit(lambda a, name=name, width=width: np.pad(a, width, mode=name))(a)
            np.testing.assert_array_equal(got, np.pad(a, width, mode=name), err_msg=name)


def test_a_pad_of_many_pieces_is_one_gather():
    """Wrapping a row of 3 around 40 times would be a concatenate of 27 slices: it is one
    gather of the row, read from memory, with NumPy's values."""
    a = A[:2, :3]
    fn = numbax.jit(lambda a: np.pad(a, ((0, 0), (40, 41)), mode="wrap") * 2.0)
    closed = trace(lambda a: np.pad(a, ((0, 0), (40, 41)), mode="wrap") * 2.0, a)
    assert [e.prim.name for e in closed.jaxpr.eqns][:1] == ["gather"]
    np.testing.assert_array_equal(fn(a), np.pad(a, ((0, 0), (40, 41)), mode="wrap") * 2.0)


def test_pad_modes_numbax_does_not_have_are_refused_by_name():
    with pytest.raises(numbax.UnsupportedFunctionError, match="mode='mean'"):
        numbax.jit(lambda a: np.pad(a, 1, mode="mean"))(A)
    with pytest.raises(numbax.ShapeError, match="empty axis 0"):
        numbax.jit(lambda a: np.pad(a, 1, mode="edge"))(np.ones((0, 3)))


# ------------------------------------------------------------------------ gradients

GRADIENT_CASES = [
    "rolls",
    "wave_step",
    "padded_with_a_traced_value",
    "pad_then_row_sums",
    "concatenated_slices",
    *(f"pad_{name}" for name in MODES),
]


def central_differences(loss, args, step=1e-6) -> list[np.ndarray]:
    grads = []
    for k, arg in enumerate(args):
        arg = np.asarray(arg, dtype=np.float64)
        grad = np.zeros_like(arg)
        for i in np.ndindex(arg.shape):
            up, down = arg.copy(), arg.copy()
            up[i] += step
            down[i] -= step
            args_up = list(args[:k]) + [up] + list(args[k + 1 :])
            args_down = list(args[:k]) + [down] + list(args[k + 1 :])
            grad[i] = (loss(*args_up) - loss(*args_down)) / (2 * step)
        grads.append(grad)
    return grads


@pytest.mark.parametrize("name", GRADIENT_CASES)
def test_gradients_match_central_differences(compiled_backend, name):
    fn, args = CASES[name]
    weights = np.random.default_rng(7).standard_normal(np.shape(fn(*args)))

    def loss(*xs):
        return np.sum(fn(*xs) * weights)

    argnums = tuple(range(len(args)))
    got = numbax.jit(numbax.grad(loss, argnums=argnums), backend=compiled_backend)(*args)
    want = central_differences(loss, args)
    for g, w in zip(compiled_backend.to_host(got), want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name", ["rolls", "wave_step", "pad_edge", "concatenated_slices"])
def test_gradients_need_no_pad_or_concatenate_in_memory(name):
    fn, args = CASES[name]

    def loss(a):
        return np.sum(fn(a, *args[1:]) ** 2)

    fused, _ = optimize(numbax.grad(loss), args[0])
    assert materialised(fused) == []


@pytest.mark.parametrize("name", ["rolls", "wave_step", "pad_reflect", "concatenated_slices"])
def test_a_cuda_program_reads_them_in_its_one_kernel(backend, name):
    if backend != "cuda":
        pytest.skip("needs the CUDA backend (NUMBA_ENABLE_CUDASIM=1)")
    from numbax.backends.cuda import CudaBackend

    fn, args = CASES[name]
    executable = CudaBackend().compile(trace(fn, *args), name)
    assert len(executable.program.steps) == 1, executable.source
    got = backend.to_host(executable(*args))
    np.testing.assert_allclose(got[0], fn(*args), rtol=1e-12, atol=1e-12)
