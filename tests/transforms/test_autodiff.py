"""grad, value_and_grad, vjp and jvp: exact small derivatives through every composition
with jit, higher orders, errors, zeros, and define-by-run control flow."""

from __future__ import annotations

import numpy as np
import pytest
from finite_differences import check_derivatives

import numbax
from numbax import grad, jit, jvp, value_and_grad, vjp
from numbax.ir import typecheck

# (function, arguments, value, gradient with respect to every argument)
EXACT = [
    (lambda x, y: (x + y) * y, (2.0, 3.0), 15.0, (3.0, 8.0)),
    (lambda x, y, z: x * y * z, (2.0, 3.0, 4.0), 24.0, (12.0, 8.0, 6.0)),
    (lambda x: (lambda y: y + 1.0)((lambda x: x**2)(x)), (2.0,), 5.0, (4.0,)),
    (lambda a, b, c: (a + b) * c, (2.0, 3.0, 4.0), 20.0, (4.0, 4.0, 5.0)),
    (lambda x: (x**2 + 1.0) * x, (2.0,), 10.0, (13.0,)),
]


def _all(n):
    return tuple(range(n))


def _jvp_gradient(f, args):
    """Each partial derivative by forward mode, one basis tangent at a time."""
    partials = []
    for i in range(len(args)):
        tangents = tuple(1.0 if j == i else 0.0 for j in range(len(args)))
        partials.append(float(jvp(f, args, tangents)[1]))
    return tuple(partials)


GRADIENTS = {
    "grad": lambda f, n: grad(f, argnums=_all(n)),
    "grad_jit": lambda f, n: grad(jit(f), argnums=_all(n)),
    "jit_grad": lambda f, n: jit(grad(f, argnums=_all(n))),
}


@pytest.mark.parametrize("mode", list(GRADIENTS))
@pytest.mark.parametrize("case", range(len(EXACT)))
def test_exact_gradients(case, mode):
    f, args, value, expected = EXACT[case]
    got = GRADIENTS[mode](f, len(args))(*args)
    assert tuple(float(g) for g in got) == expected
    assert all(isinstance(g, np.ndarray) and g.dtype == np.float64 for g in got)
    if mode == "grad":
        got_value, _ = value_and_grad(f, argnums=_all(len(args)))(*args)
        assert float(got_value) == value


@pytest.mark.parametrize("case", range(len(EXACT)))
def test_exact_gradients_forward_mode(case):
    f, args, value, expected = EXACT[case]
    assert _jvp_gradient(f, args) == expected
    assert float(jvp(f, args, tuple(0.0 for _ in args))[0]) == value


def cubic(x):
    return (x**2 + 1.0) * x


HIGHER_ORDER = {
    "grad_grad": lambda: (grad(grad(cubic))(2.0), grad(grad(grad(cubic)))(2.0)),
    "grad_jit_grad": lambda: (grad(jit(grad(cubic)))(2.0), grad(jit(grad(jit(grad(cubic)))))(2.0)),
    "jit_grad_grad": lambda: (jit(grad(grad(cubic)))(2.0), jit(grad(grad(grad(cubic))))(2.0)),
    "jvp_grad": lambda: (
        jvp(grad(cubic), (2.0,), (1.0,))[1],
        jvp(grad(grad(cubic)), (2.0,), (1.0,))[1],
    ),
    "grad_jvp": lambda: (
        grad(lambda x: jvp(cubic, (x,), (1.0,))[1])(2.0),
        grad(grad(lambda x: jvp(cubic, (x,), (1.0,))[1]))(2.0),
    ),
}


@pytest.mark.parametrize("mode", list(HIGHER_ORDER))
def test_higher_order_derivatives_of_cubic(mode):
    second, third = HIGHER_ORDER[mode]()
    assert (float(second), float(third)) == (12.0, 6.0)


def test_nested_grad_keeps_levels_apart():
    # d/dx [d/dy x*y*y at y=x] = d/dx 2x^2 = 4x (no perturbation confusion)
    def outer(x):
        return grad(lambda y: x * y * y)(x)

    assert float(grad(outer)(3.0)) == 12.0
    assert float(jit(grad(outer))(3.0)) == 12.0


def test_value_used_on_several_paths_sums_cotangents():
    x = np.array([0.5, -1.0, 2.0])
    got = grad(lambda x: np.sum(x * x + np.sin(x) * x + x))(x)
    np.testing.assert_allclose(got, 2 * x + np.cos(x) * x + np.sin(x) + 1, rtol=1e-15)


def test_gradient_of_unused_argument_is_explicit_zero():
    x, y = np.ones(3), np.arange(6.0).reshape(2, 3).astype(np.float32)
    gx, gy = grad(lambda x, y: np.sum(x * 2.0), argnums=(0, 1))(x, y)
    np.testing.assert_array_equal(gx, 2.0 * np.ones(3))
    assert isinstance(gy, np.ndarray) and gy.shape == (2, 3) and gy.dtype == np.float32
    np.testing.assert_array_equal(gy, 0.0)
    assert float(grad(lambda x: 3.0)(1.0)) == 0.0


def test_stop_gradient_and_non_differentiable_ops_give_zero():
    assert float(grad(lambda x: numbax.stop_gradient(x) * x)(3.0)) == 3.0
    x = np.array([0.2, 1.7])
    np.testing.assert_array_equal(grad(lambda x: np.sum(np.floor(x) * x + (x > 1)))(x), np.floor(x))


def test_pytree_arguments_argnums_and_aux():
    params = {"w": np.array([1.0, 2.0]), "b": np.float64(0.5)}
    x = np.array([3.0, -1.0])

    def loss(params, x, scale):
        out = np.sum(params["w"] * x) + params["b"]
        return out * scale, {"out": out}

    grads, aux = grad(loss, has_aux=True)(params, x, 2)
    np.testing.assert_array_equal(grads["w"], 2 * x)
    assert float(grads["b"]) == 2.0
    assert float(aux["out"]) == 1.5
    (value, aux), (gp, gx) = value_and_grad(loss, argnums=(0, 1), has_aux=True)(params, x, 2)
    assert float(value) == 3.0
    np.testing.assert_array_equal(gx, 2 * params["w"])


def test_vjp_and_jvp_over_pytrees():
    def f(x, pair):
        a, b = pair
        return {"p": x * a, "q": np.sin(b)}

    x, pair = np.array([1.0, 2.0]), (np.array([3.0, 4.0]), np.float64(0.25))
    out, vjp_fn = vjp(f, x, pair)
    gx, (ga, gb) = vjp_fn({"p": np.ones(2), "q": np.float64(2.0)})
    np.testing.assert_array_equal(gx, pair[0])
    np.testing.assert_array_equal(ga, x)
    assert float(gb) == 2 * np.cos(0.25)
    _, tangent = jvp(f, (x, pair), (np.ones(2), (np.zeros(2), np.float64(1.0))))
    np.testing.assert_array_equal(tangent["p"], pair[0])
    assert float(tangent["q"]) == np.cos(0.25)


def test_data_dependent_python_loop_differentiates_eagerly():
    def doubling(x):
        while x < 10.0:  # a Python loop on the value: define-by-run
            x = x * 2.0
        return x * x

    # 3 -> 6 -> 12: f = (4x)^2, f' = 32x
    assert float(grad(doubling)(3.0)) == 96.0
    # 0.7 -> ... -> 11.2 (four doublings): f = (16x)^2, f' = 512x
    assert float(grad(doubling)(0.7)) == pytest.approx(358.4, rel=1e-15)
    with pytest.raises(numbax.ConcretizationError):
        jit(grad(doubling))(3.0)
    with pytest.raises(numbax.ConcretizationError):
        grad(jit(doubling))(3.0)


def test_python_branch_on_value_under_grad():
    def relu_like(x):
        return x * 3.0 if x > 0 else x * x

    assert float(grad(relu_like)(2.0)) == 3.0
    assert float(grad(relu_like)(-2.0)) == -4.0


def test_grad_of_non_scalar_output_names_the_shape():
    with pytest.raises(numbax.GradientError, match=r"shape \(3,\)"):
        grad(lambda x: x * 2.0)(np.ones(3))
    with pytest.raises(numbax.GradientError, match="one scalar"):
        grad(lambda x: (x, x))(1.0)


def test_grad_with_respect_to_integer_names_the_argument():
    def scaled(x, n):
        return x * n

    with pytest.raises(numbax.GradientError, match=r"argument 1 \('n'\).*int64"):
        grad(scaled, argnums=1)(2.0, 3)
    with pytest.raises(numbax.GradientError, match="argument 0"):
        grad(lambda x: x * 1.0)(np.arange(3))
    # Non-differentiated integer arguments are fine.
    assert float(grad(scaled)(2.0, 3)) == 3.0


def test_error_points_at_the_callers_line():
    with pytest.raises(numbax.GradientError, match="test_autodiff.py"):
        grad(lambda x: x)(np.ones(2))


def test_transformed_programs_typecheck_and_compose():
    x = np.array([0.5, 1.5])
    f = lambda x: np.sum(np.tanh(x) * x)  # noqa: E731
    for program in (
        numbax.make_jaxpr(grad(f))(x),
        numbax.make_jaxpr(grad(grad(lambda x: f(x))))(1.0),
        numbax.make_jaxpr(grad(jit(f)))(x),
        numbax.make_jaxpr(jit(grad(f)))(x),
    ):
        typecheck(program)


def test_vjp_split_of_a_jaxpr():
    from numbax.transforms.vjp import vjp_split

    closed = numbax.make_jaxpr(lambda x, y: np.sin(x) * y)(np.ones(3), np.ones(3))
    split = vjp_split(closed.jaxpr, (True, True))
    typecheck(split.forward)
    typecheck(split.backward)
    x, y = np.array([0.1, 0.2, 0.3]), np.array([1.0, 2.0, 3.0])
    outs, residuals = split.run_forward([x, y])
    np.testing.assert_allclose(outs[0], np.sin(x) * y)
    gx, gy = split.run_backward(residuals, [np.ones(3)])
    np.testing.assert_allclose(gx, np.cos(x) * y)
    np.testing.assert_allclose(gy, np.sin(x))


@pytest.mark.parametrize("point", [0.3, -1.2])
def test_grad_of_composite_matches_finite_differences(point, rng):
    def f(x, w):
        return np.sum(np.tanh(x @ w) * np.exp(-(x[:, None] ** 2)))

    check_derivatives(f, [rng.standard_normal(3) * point, rng.standard_normal((3, 2))], rng)
