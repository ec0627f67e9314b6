"""``jacfwd``, ``jacrev`` and ``hessian`` as one batched program each (``vmap`` of the
JVP over the inputs' basis, of the backward over the outputs' basis): they agree with
each other and with central finite differences in float64, eagerly and under ``jit``,
through pytrees, ``argnums``, ``has_aux`` and control flow."""

from __future__ import annotations

import numpy as np
import pytest
from finite_differences import finite_difference_jacobian

import numbax
from numbax import grad, hessian, jacfwd, jacrev, jit
from numbax.ir import typecheck


def _vector_fn(x, y):
    return np.tanh(x[:, None] * y) @ np.cos(y) + np.sum(x**2) * x


def _scan_fn(x, y):
    def step(carry, row):
        carry = np.sin(carry) * row + y[:1]
        return carry, carry * carry

    final, ys = numbax.scan(step, x, np.stack([x, 2.0 * x, x * y[0]]))
    return np.concatenate([final, ys.reshape(-1)])


def _fori_fn(x, y):
    return numbax.fori_loop(0, 3, lambda i, v: np.tanh(v * y[0]) + x, x)


def _cond_fn(x, y):
    return numbax.cond(np.sum(x) > 0, lambda v: np.exp(v) * y[1], lambda v: v**3, x)


FUNCTIONS = {"vector": _vector_fn, "scan": _scan_fn, "fori_loop": _fori_fn, "cond": _cond_fn}


@pytest.fixture
def inputs(rng):
    return rng.standard_normal(3), rng.standard_normal(3)


@pytest.mark.parametrize("name", FUNCTIONS)
def test_jacrev_equals_jacfwd_equals_finite_differences(name, inputs):
    f = FUNCTIONS[name]
    expected = finite_difference_jacobian(f, list(inputs), [0, 1], 1e-6)[0]
    fwd = jacfwd(f, argnums=(0, 1))(*inputs)
    rev = jacrev(f, argnums=(0, 1))(*inputs)
    for k in range(2):
        assert fwd[k].shape == rev[k].shape == expected[k].shape
        np.testing.assert_allclose(rev[k], fwd[k], rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(fwd[k], expected[k], rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("name", FUNCTIONS)
@pytest.mark.parametrize("transform", [jacfwd, jacrev], ids=["jacfwd", "jacrev"])
def test_jacobians_under_jit(transform, name, backend, inputs):
    f = FUNCTIONS[name]
    eager = transform(f, argnums=(0, 1))(*inputs)
    staged = backend.to_host(jit(transform(f, argnums=(0, 1)), backend=backend)(*inputs))
    for e, s in zip(eager, staged, strict=True):
        np.testing.assert_allclose(s, e, rtol=1e-12, atol=1e-14)


def test_jacobian_of_a_jitted_function(inputs):
    jitted = jit(_vector_fn)
    np.testing.assert_allclose(
        jacfwd(jitted)(*inputs), jacrev(_vector_fn)(*inputs), rtol=1e-12, atol=1e-14
    )


def _scalar_fn(x):
    return np.sum(np.sin(x) * x[::-1]) + np.log1p(x @ x) * x[0]


def _scalar_scan_fn(x):
    final, _ = numbax.scan(lambda c, v: (c * np.cos(v) + v * v, None), x[0], x)
    return final * np.sum(x)


@pytest.mark.parametrize("f", [_scalar_fn, _scalar_scan_fn], ids=["plain", "scan"])
def test_hessian_equals_finite_differences_of_the_gradient(f, backend, rng):
    x = rng.standard_normal(4)

    def gradient(v):
        return grad(f)(v)

    expected = finite_difference_jacobian(gradient, [x], [0], 1e-6)[0][0]
    staged = backend.to_host(jit(hessian(f), backend=backend)(x))
    for label, h in {"eager": hessian(f)(x), "jit": staged}.items():
        assert h.shape == (4, 4), label
        np.testing.assert_allclose(h, expected, rtol=1e-6, atol=1e-8, err_msg=label)
        np.testing.assert_allclose(h, h.T, rtol=1e-12, atol=1e-14, err_msg=label)


def test_one_batched_program_whatever_the_input_size():
    # One basis vector per input element would grow the program with the input: a
    # batched JVP (VJP) is the same program for 2 elements and for 9.
    def f(x):
        return np.tanh(x) * np.sum(x)

    def scalar(x):
        return np.sum(f(x))

    for transform in (jacfwd, jacrev, hessian):
        sizes = set()
        for n in (2, 9):
            closed = numbax.make_jaxpr(transform(scalar if transform is hessian else f))(np.ones(n))
            typecheck(closed)
            sizes.add(len(closed.eqns))
        assert len(sizes) == 1, transform.__name__


def test_pytrees_argnums_and_aux(rng):
    params = {"w": rng.standard_normal((2, 3)), "b": rng.standard_normal(2)}
    x = rng.standard_normal(3)

    def f(params, x):
        out = np.tanh(params["w"] @ x + params["b"])
        return out, {"norm": np.sum(out**2)}

    for transform in (jacfwd, jacrev):
        jac, aux = transform(f, argnums=0, has_aux=True)(params, x)
        assert jac["w"].shape == (2, 2, 3) and jac["b"].shape == (2, 2)
        out = np.tanh(params["w"] @ x + params["b"])
        np.testing.assert_allclose(jac["b"], np.diag(1 - out**2), rtol=1e-12)
        np.testing.assert_allclose(
            jac["w"], np.einsum("ij,k->ijk", np.diag(1 - out**2), x), rtol=1e-12
        )
        np.testing.assert_allclose(aux["norm"], np.sum(out**2), rtol=1e-12)


def test_float32_stays_float32_and_empty_inputs():
    x = np.array([0.5, -1.0, 2.0], np.float32)
    for transform in (jacfwd, jacrev):
        jac = transform(lambda v: v * v)(x)
        assert jac.dtype == np.float32
        np.testing.assert_allclose(jac, np.diag(2 * x), rtol=1e-6)
        empty = transform(lambda v, w: np.sum(v) * w, argnums=(0, 1))(np.zeros(0), np.ones(2))
        assert empty[0].shape == (2, 0) and empty[1].shape == (2, 2)
        np.testing.assert_array_equal(empty[1], np.zeros((2, 2)))


def test_jacfwd_through_a_while_loop(inputs):
    # while_loop is differentiable in forward mode only: jacfwd works, batched.
    def f(x, y):
        _, v = numbax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, np.sin(c[1]) * y), (0, x))
        return v

    expected = finite_difference_jacobian(f, list(inputs), [0, 1], 1e-6)[0]
    got = jacfwd(f, argnums=(0, 1))(*inputs)
    for k in range(2):
        np.testing.assert_allclose(got[k], expected[k], rtol=1e-6, atol=1e-8)


def _rnn_loss(w, u, xs):
    def cell(h, x):
        h = np.tanh(h @ w + x @ u)
        return h, h.sum()

    h, sums = numbax.scan(cell, np.zeros(w.shape[0]), xs)
    return np.sum(h * h) + np.sum(sums * sums)


def test_grad_of_an_rnn_loss_through_scan_equals_finite_differences(backend, rng):
    w, u = 0.5 * rng.standard_normal((3, 3)), rng.standard_normal((2, 3))
    xs = rng.standard_normal((5, 2))
    expected = finite_difference_jacobian(_rnn_loss, [w, u, xs], [0, 1], 1e-6)[0]
    staged = backend.to_host(jit(grad(_rnn_loss, argnums=(0, 1)), backend=backend)(w, u, xs))
    for got, want in zip(staged, expected, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)
