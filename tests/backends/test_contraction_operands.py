"""Contractions and opaque ops whose operands are literals, scalars, constants, broadcasts
and reversed or strided views, on every backend.

A ``dot_general`` of a literal (``grad`` of ``np.dot(x, x[::-1]) * 2.0`` contracts the
cotangent ``2.0`` with an array) once failed to compile on the cpu backend, which
expected every operand of a contraction to be an array. Values are checked against
NumPy and derivatives against float64 central finite differences; one compiled program
holds every case and mode of a test.
"""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import numbax
from numbax.backends import cpu
from numbax.ir import eval_jaxpr
from numbax.ir.core import ClosedJaxpr, Eqn, Jaxpr, Literal, ShapedArray, Var
from numbax.ir.primitive import PRIMITIVES

F64, I64 = np.dtype("float64"), np.dtype("int64")
X = np.arange(1.0, 5.0) / 3.0
A = np.arange(12.0).reshape(3, 4) / 7.0 - 0.5
SQUARE = np.arange(16.0).reshape(4, 4) / 5.0

# name -> (function of one float64 array, its argument): NumPy programs, so NumPy runs
# them as they are, and numbax traces them.
CASES = {
    "dot_reversed": (lambda x: np.dot(x, x[::-1]) * 2.0, X),
    "dot_constant": (lambda x: np.dot(x, np.arange(4.0)) * 3.0, X),
    "dot_scalar_left": (lambda x: np.dot(2.0, x).sum(), X),
    "dot_scalar_right": (lambda x: (np.dot(x, 3.0) * x).sum(), X),
    "matmul_constant": (lambda x: (np.eye(4)[::-1] @ x * x).sum() * 2.0, X),
    "matmul_strided": (lambda a: (a[:, ::2] @ a[:, 1::2].T).sum(), A),
    "tensordot_scalar": (lambda a: (np.tensordot(a, 2.0, axes=0) * a).sum(), A),
    "tensordot_constant": (lambda a: np.tensordot(a, np.ones((4, 2)), axes=1).sum() * 2.0, A),
    "einsum_scale": (lambda a: (np.einsum("ij,->ij", a, 2.0) * a).sum(), A),
    "einsum_outer": (lambda x: (np.einsum("i,j->ij", x, x[::-1]) ** 2).sum(), X),
    "einsum_trace": (lambda s: np.einsum("ii->", s @ s) * 2.0, SQUARE),
    "outer_view": (lambda x: np.outer(x, x[::-1])[1:, ::2].sum() * 2.0, X),
    "inner_broadcast": (lambda a: (np.inner(a, np.ones(4)) ** 2).sum(), A),
    "vdot_strided": (lambda x: np.vdot(x[::-2], x[1::2]) * 2.0, X),
    "matmul_broadcast": (lambda a: (np.broadcast_to(a, (2, 3, 4)) @ a.T).sum() * 0.5, A),
    "column_row": (lambda x: (np.dot(x[:, None], x[None, ::-1]) ** 2).sum(), X),
}
# Compiled backends run the cases with a literal or scalar operand in the derivative
# (the kind that failed), all four modes in one program: each case adds kernels to
# compile, and LLVM's time grows with them.
COMPILED_CASES = ["dot_reversed", "tensordot_scalar", "einsum_scale", "vdot_strided"]


def finite_difference(fn, x: np.ndarray, step: float = 1e-6) -> np.ndarray:
    """The float64 central finite difference of a scalar ``fn`` at ``x``."""
    gradient = np.zeros_like(x)
    for index in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[index] += step
        down[index] -= step
        gradient[index] = (fn(up) - fn(down)) / (2 * step)
    return gradient


def _every_mode(f):
    """f's value, gradient, tangent along ones, and vmap(grad) over two points."""

    def modes(x, xs):
        tangent = numbax.jvp(f, (x,), (np.ones_like(x),))[1]
        return f(x), numbax.grad(f)(x), tangent, numbax.vmap(numbax.grad(f))(xs)

    return modes


def _expected(f, x, xs):
    gradient = finite_difference(f, x)
    return f(x), gradient, gradient.sum(), np.stack([finite_difference(f, row) for row in xs])


def test_every_mode_matches_numpy_and_finite_differences(backend):
    """Values against NumPy; gradients, tangents and batched gradients against float64
    central finite differences; one compiled program for all the cases."""
    names = COMPILED_CASES if backend.compiled else list(CASES)
    points = [CASES[name][1] for name in names]
    batches = [np.stack([x, 1.5 * x + 0.25]) for x in points]

    def program(points, batches):
        cases = zip(names, points, batches, strict=True)
        return [_every_mode(CASES[name][0])(x, xs) for name, x, xs in cases]

    results = backend.to_host(numbax.jit(program, backend=backend)(points, batches))
    for name, got, x, xs in zip(names, results, points, batches, strict=True):
        want = _expected(CASES[name][0], x, xs)
        for mode, g, w in zip(("value", "grad", "jvp", "vmap"), got, want, strict=True):
            rtol = 1e-12 if mode == "value" else 1e-6
            np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol, err_msg=f"{name} {mode}")


# --- literal operands of contractions and opaque ops, without the passes ----------------


def _program(steps, internal=()) -> ClosedJaxpr:
    """A program of one input ``x: f64[4]`` and one eqn per step; each step is
    (primitive name, operands (``"x"``, an earlier step's index, or a Literal), params),
    and the output of every step but the ``internal`` ones is a result."""
    x = Var(ShapedArray((4,), F64))
    values, eqns = [], []
    for name, operands, params in steps:
        inputs = [x if a == "x" else values[a] if isinstance(a, int) else a for a in operands]
        prim = PRIMITIVES[name]
        (aval,) = prim.abstract_eval(*(a.aval for a in inputs), **params)
        values.append(Var(aval))
        eqns.append(Eqn(prim, inputs, [values[-1]], params, f"test.py:{len(eqns)}"))
    results = [v for k, v in enumerate(values) if k not in internal]
    return ClosedJaxpr(Jaxpr([], [x], eqns, results), [])


NO_CONTRACTION = {"dimension_numbers": (((), ()), ((), ()))}
LITERAL_STEPS = [
    ("dot_general", [Literal(2.0, F64), "x"], NO_CONTRACTION),
    ("dot_general", ["x", Literal(-3.0, F64)], NO_CONTRACTION),
    ("dot_general", [Literal(2, I64), Literal(5, I64)], NO_CONTRACTION),
    ("gather", ["x", Literal(2, I64)], {"axis": 0}),
    ("scatter", ["x", Literal(1, I64), Literal(5.0, F64)], {"axis": 0, "mode": "add"}),
    ("expand_dims", [Literal(7.0, F64)], {"dimensions": (0,)}),
    ("slice", ["x"], {"start_indices": (1,), "limit_indices": (2,), "strides": (1,)}),
    # Written into step 5, a view of a literal: new memory of its own (never the
    # literal's, read-only on the cpu), and a result, so not written in place.
    ("dynamic_update_slice", [5, 6, Literal(0, I64)], {}),
    ("expand_dims", [Literal(-1.0, F64)], {"dimensions": (0,)}),
    ("dynamic_update_slice", [8, 6, Literal(0, I64)], {}),  # in place: 8 is read no more
]


def test_literal_operands_compile_without_the_passes():
    """Each eqn its own kernel (``optimize=False``), as the passes would leave a literal
    that folding cannot remove; the interpreter is the oracle."""
    closed = _program(LITERAL_STEPS, internal={8})
    x = np.array([0.5, -1.0, 2.0, 4.0])
    want = eval_jaxpr(closed.jaxpr, closed.consts, x)
    for optimize in (False, True):
        got = cpu.backend.compile(closed, "literals", optimize=optimize)(x)
        for k, (g, w) in enumerate(zip(got, want, strict=True)):
            assert np.asarray(g).dtype == np.asarray(w).dtype, k
            np.testing.assert_array_equal(g, w, err_msg=f"result {k}, optimize={optimize}")


# --- random einsums over views, constants and scalars ------------------------------------


@st.composite
def _einsums(draw):
    """(subscripts, operand makers): two operands over the letters ``ijk`` (sizes 2-4),
    each made from the parameter by a view, a broadcast, a constant or a scalar."""
    letters = draw(st.lists(st.sampled_from("ijk"), min_size=0, max_size=3, unique=True))
    sizes = {c: draw(st.integers(2, 4)) for c in "ijk"}
    operands = []
    for _ in range(2):
        sub = "".join(draw(st.permutations(letters))[: draw(st.integers(0, len(letters)))])
        how = draw(st.sampled_from(["plain", "reversed", "strided", "broadcast", "constant"]))
        operands.append((sub, how))
    kept = sorted({c for sub, _ in operands for c in sub})
    out = "".join(draw(st.permutations(kept))[: draw(st.integers(0, len(kept)))])
    return operands, out, sizes


def _operand(p: np.ndarray, sub: str, how: str, sizes) -> np.ndarray | float:
    """An operand of shape ``sizes[sub]`` read from the parameter ``p`` (of 128 elements: a
    strided operand of up to 4 * 4 * 4 elements reads every other one of 128)."""
    shape = tuple(sizes[c] for c in sub)
    n = int(np.prod(shape))
    if not sub:
        return 1.5 if how == "constant" else p[3]
    if how == "reversed":
        return p[::-1][:n].reshape(shape)
    if how == "strided":
        return p[: 2 * n : 2].reshape(shape)
    if how == "broadcast":
        return np.broadcast_to(p[: shape[-1]], shape)
    if how == "constant":
        return np.linspace(-1.0, 1.0, n).reshape(shape)
    return p[:n].reshape(shape)


@settings(
    max_examples=3,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(st.lists(_einsums(), min_size=3, max_size=3))
# A strided operand of 36 elements read 72 of a parameter then 64 long (CI, 2026-12-02).
@example([([("ijk", "strided"), ("", "plain")], "", {"i": 3, "j": 3, "k": 4})] * 3)
def test_random_einsums_match_numpy(compiled_backend, specs):
    """Three random einsums in one program: its value and gradient against NumPy and
    finite differences."""

    def total(p):
        result = 0.0
        for k, (operands, out, sizes) in enumerate(specs):
            subscripts = ",".join(sub for sub, _ in operands) + "->" + out
            arrays = [_operand(p, sub, how, sizes) for sub, how in operands]
            result = result + np.sum(np.einsum(subscripts, *arrays) * (k + 1.0))
        return result

    p = np.linspace(-2.0, 3.0, 128)
    value, gradient = numbax.jit(numbax.value_and_grad(total), backend=compiled_backend)(p)
    np.testing.assert_allclose(compiled_backend.to_host(value), total(p), rtol=1e-12)
    np.testing.assert_allclose(
        compiled_backend.to_host(gradient), finite_difference(total, p), rtol=1e-6, atol=1e-6
    )
