"""Small models: every way of taking a derivative gives the same answer, and it matches
finite differences. Jacobians and Hessians of vector functions."""

from __future__ import annotations

import numpy as np
import pytest
from finite_differences import check_derivatives, relative_error

from numbax import grad, hessian, jacfwd, jacrev, jit, nn


def softmax_cross_entropy(logits, labels):
    log_probs = nn.log_softmax(logits)
    return -np.mean(np.sum(log_probs * nn.one_hot(labels, logits.shape[-1]), axis=-1))


def mlp_loss(w1, b1, w2, b2, x, y):
    hidden = np.tanh(x @ w1 + b1)
    prediction = hidden @ w2 + b2
    return np.mean((prediction - y) ** 2)


def layer_norm_loss(x, gamma, beta):
    mu = np.mean(x, axis=-1, keepdims=True)
    var = np.var(x, axis=-1, keepdims=True)
    normed = (x - mu) / np.sqrt(var + 1e-5) * gamma + beta
    return np.sum(normed * np.sin(normed))


def logsumexp_loss(x):
    return np.sum(nn.logsumexp(x, axis=-1) ** 2)


def _models(rng):
    return {
        "softmax_cross_entropy": (
            softmax_cross_entropy,
            (rng.standard_normal((4, 5)), rng.integers(0, 5, 4)),
            (0,),
        ),
        "mlp": (
            mlp_loss,
            (
                rng.standard_normal((3, 4)),
                rng.standard_normal(4),
                rng.standard_normal((4, 2)),
                rng.standard_normal(2),
                rng.standard_normal((5, 3)),
                rng.standard_normal((5, 2)),
            ),
            (0, 1, 2, 3),
        ),
        "layer_norm": (
            layer_norm_loss,
            (rng.standard_normal((2, 5)), rng.standard_normal(5), rng.standard_normal(5)),
            (0, 1, 2),
        ),
        "logsumexp": (logsumexp_loss, (rng.standard_normal((3, 4)) * 3,), (0,)),
    }


MODELS = ["softmax_cross_entropy", "mlp", "layer_norm", "logsumexp"]


@pytest.mark.parametrize("name", MODELS)
def test_every_derivative_agrees(name, rng):
    f, args, argnums = _models(rng)[name]
    expected = grad(f, argnums=argnums)(*args)
    variants = {
        "grad(jit)": grad(jit(f), argnums=argnums)(*args),
        "jit(grad)": jit(grad(f, argnums=argnums))(*args),
        "jacrev": jacrev(f, argnums=argnums)(*args),
        "jacfwd": jacfwd(f, argnums=argnums)(*args),
    }
    for label, got in variants.items():
        for g, e in zip(got, expected, strict=True):
            assert g.shape == e.shape and g.dtype == e.dtype, label
            assert relative_error(g, e) < 1e-10, label


@pytest.mark.parametrize("name", MODELS)
def test_model_gradients_match_finite_differences(name, rng):
    f, args, _ = _models(rng)[name]
    check_derivatives(f, args, rng)


def test_jacobians_of_a_vector_function():
    def f(x, y):
        return {"a": np.sin(x) * y[0], "b": np.outer(x, y)}

    x, y = np.array([0.3, -0.4, 1.1]), np.array([2.0, -1.0])
    rev = jacrev(f, argnums=(0, 1))(x, y)
    fwd = jacfwd(f, argnums=(0, 1))(x, y)
    expected_a_x = np.diag(np.cos(x) * y[0])
    expected_a_y = np.stack([np.sin(x), np.zeros(3)], axis=1)
    for jac in (rev, fwd):
        np.testing.assert_allclose(jac["a"][0], expected_a_x, rtol=1e-15)
        np.testing.assert_allclose(jac["a"][1], expected_a_y, rtol=1e-15)
        assert jac["b"][0].shape == (3, 2, 3) and jac["b"][1].shape == (3, 2, 2)
        np.testing.assert_allclose(jac["b"][0], np.einsum("ik,j->ijk", np.eye(3), y))
        np.testing.assert_allclose(jac["b"][1], np.einsum("i,jk->ijk", x, np.eye(2)))


def test_hessian_of_quadratic_and_logsumexp():
    a = np.array([[2.0, 1.0], [1.0, 3.0]])
    np.testing.assert_allclose(hessian(lambda x: x @ a @ x)(np.array([0.5, -1.0])), a + a.T)
    x = np.array([0.1, 0.7, -0.3])
    p = np.exp(x) / np.sum(np.exp(x))
    np.testing.assert_allclose(
        hessian(nn.logsumexp)(x), np.diag(p) - np.outer(p, p), rtol=1e-12, atol=1e-15
    )
    np.testing.assert_allclose(
        jit(hessian(nn.logsumexp))(x), np.diag(p) - np.outer(p, p), rtol=1e-12, atol=1e-15
    )


def test_jacobian_with_integer_output_is_zero():
    jac = jacrev(lambda x: (x * 2.0, np.argmax(x)))(np.array([1.0, 3.0]))
    np.testing.assert_array_equal(jac[0], 2 * np.eye(2))
    assert jac[1].shape == (2,) and not np.any(jac[1])


def test_jacobian_has_aux():
    jac, aux = jacfwd(lambda x: (x * x, np.sum(x)), has_aux=True)(np.array([1.0, 2.0]))
    np.testing.assert_array_equal(jac, np.diag([2.0, 4.0]))
    assert float(aux) == 3.0
