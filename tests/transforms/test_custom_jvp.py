"""``custom_jvp``: the user's forward-mode rule, used by jvp and (transposed) by grad and
vjp, composed with jit and vmap, checked against central finite differences in float64;
and programs where the rule differs from the automatic derivative, which prove that the
rule is what runs."""

from __future__ import annotations

import numpy as np
import pytest
from finite_differences import check_derivatives

import numbax
from numbax.ir.core import Jaxpr


@numbax.custom_jvp
def sin_times(x, y):
    return np.sin(x) * y


@sin_times.defjvp
def _sin_times_jvp(primals, tangents):
    (x, y), (tx, ty) = primals, tangents
    return sin_times(x, y), np.cos(x) * y * tx + np.sin(x) * ty


@numbax.custom_jvp
def log1pexp(x):
    return np.log1p(np.exp(x))


@log1pexp.defjvp
def _log1pexp_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    # Automatic differentiation gives exp(x) / (1 + exp(x)): inf / inf = nan for large x.
    return log1pexp(x), t / (1.0 + np.exp(-x))


@numbax.custom_jvp
def straight_through_round(x):
    return np.round(x)


@straight_through_round.defjvp
def _straight_through_jvp(primals, tangents):
    # The straight-through estimator: round's derivative (zero) replaced by identity's.
    return straight_through_round(primals[0]), tangents[0]


def sigmoid(x):
    with np.errstate(over="ignore"):
        return 1.0 / (1.0 + np.exp(-x))


def _program(x, y):
    """A custom_jvp call among other operations, with a pytree output."""
    z = sin_times(x * x, y)
    return {"sum": np.sum(z * y), "z": np.tanh(z)}


def _primitives(jaxpr: Jaxpr) -> set[str]:
    names = set()
    for eqn in jaxpr.eqns:
        names.add(eqn.prim.name)
        for value in eqn.params.values():
            if isinstance(value, Jaxpr):
                names |= _primitives(value)
    return names


# --- against finite differences ----------------------------------------------------------


def test_forward_and_reverse_match_finite_differences(rng):
    x, y = rng.standard_normal(3), rng.standard_normal(3)
    check_derivatives(_program, [x, y], rng)


def test_under_jit_matches_finite_differences(rng):
    x, y = rng.standard_normal(3), rng.standard_normal(3)
    check_derivatives(numbax.jit(_program, backend="interpret"), [x, y], rng)


def test_under_vmap_matches_finite_differences(rng):
    x, y = rng.standard_normal((2, 3)), rng.standard_normal((2, 3))
    check_derivatives(numbax.vmap(_program), [x, y], rng)
    check_derivatives(numbax.vmap(_program, in_axes=(0, None)), [x, y[0]], rng)


def test_second_order_differentiates_the_rule():
    for x in (-2.0, 0.0, 0.7):
        second = numbax.grad(numbax.grad(log1pexp))(x)
        np.testing.assert_allclose(second, sigmoid(x) * (1 - sigmoid(x)), rtol=1e-13)
        hessian = numbax.jacfwd(numbax.grad(log1pexp))(x)
        np.testing.assert_allclose(hessian, second, rtol=1e-13)


# --- the rule is what runs ---------------------------------------------------------------

LARGE = np.array([1000.0, -1000.0, 0.0, 3.0])


def _grad_of_sum(f):
    return numbax.grad(lambda x: np.sum(f(x)))


@pytest.mark.parametrize(
    "transform",
    [
        lambda: _grad_of_sum(log1pexp),
        lambda: numbax.jit(_grad_of_sum(log1pexp)),
        lambda: numbax.vmap(numbax.grad(log1pexp)),
        lambda: numbax.jit(numbax.vmap(numbax.grad(log1pexp))),
        lambda: _grad_of_sum(numbax.vmap(log1pexp)),
        lambda: _grad_of_sum(numbax.jit(numbax.vmap(log1pexp))),
        lambda: numbax.jit(_grad_of_sum(numbax.jit(log1pexp))),
        lambda: lambda x: numbax.vjp(log1pexp, x)[1](np.ones_like(x))[0],
        lambda: lambda x: numbax.jvp(log1pexp, (x,), (np.ones_like(x),))[1],
        lambda: numbax.jacrev(log1pexp),
    ],
    ids=[
        "grad",
        "jit-grad",
        "vmap-grad",
        "jit-vmap-grad",
        "grad-vmap",
        "grad-jit-vmap",
        "jit-grad-jit",
        "vjp",
        "jvp",
        "jacrev",
    ],
)
def test_the_rule_gives_the_derivative_where_the_automatic_one_is_nan(transform):
    with np.errstate(over="ignore", invalid="ignore"):
        automatic = numbax.vmap(numbax.grad(log1pexp.fun))(LARGE)
        assert np.isnan(automatic[0])  # what the rule is there to avoid
        derivative = transform()(LARGE)
    if derivative.ndim == 2:  # the Jacobian of an elementwise function
        derivative = np.diagonal(derivative)
    np.testing.assert_allclose(derivative, sigmoid(LARGE), rtol=1e-15)


def test_a_compiled_program_uses_the_rule(compiled_backend):
    with np.errstate(over="ignore"):
        derivative = numbax.jit(_grad_of_sum(log1pexp), backend=compiled_backend)(LARGE)
        value = numbax.jit(log1pexp, backend=compiled_backend)(LARGE)
    np.testing.assert_allclose(compiled_backend.to_host(derivative), sigmoid(LARGE), rtol=1e-15)
    np.testing.assert_allclose(compiled_backend.to_host(value)[2:], np.log1p(np.exp(LARGE[2:])))


def test_straight_through_estimator_replaces_a_zero_derivative():
    x = np.array([0.2, 1.7, -2.4])
    assert np.all(numbax.grad(lambda x: np.sum(np.round(x) * x))(x) == np.round(x))
    grad = numbax.grad(lambda x: np.sum(straight_through_round(x) * x))(x)
    np.testing.assert_array_equal(grad, np.round(x) + x)
    np.testing.assert_array_equal(numbax.jit(straight_through_round)(x), np.round(x))


def test_the_call_is_gone_after_differentiation_and_inlined_when_compiled():
    x = np.ones(3)
    traced = numbax.make_jaxpr(log1pexp)(x).jaxpr
    assert "custom_jvp_call" in _primitives(traced)
    assert "custom_jvp_call" not in _primitives(numbax.make_jaxpr(_grad_of_sum(log1pexp))(x).jaxpr)
    jvp_program = numbax.make_jaxpr(lambda x, t: numbax.jvp(log1pexp, (x,), (t,)))(x, x)
    assert "custom_jvp_call" not in _primitives(jvp_program.jaxpr)
    lowered = numbax.jit(log1pexp, backend="interpret").lower(x)
    assert "custom_jvp_call" not in _primitives(lowered.fused.jaxpr)
    assert lowered.pass_log.totals("inline") == {"custom_jvp_call": 1}


# --- the API around the rule -------------------------------------------------------------


def test_defjvps_sums_one_rule_per_argument():
    @numbax.custom_jvp
    def f(x, y):
        return np.sin(x) * y

    f.defjvps(lambda t, out, x, y: np.cos(x) * y * t, lambda t, out, x, y: np.sin(x) * t)
    x, y = 0.3, 1.7
    gx, gy = numbax.grad(f, argnums=(0, 1))(x, y)
    np.testing.assert_allclose([gx, gy], [np.cos(x) * y, np.sin(x)], rtol=1e-15)
    _, tangent = numbax.jvp(f, (x, y), (1.0, 0.0))
    np.testing.assert_allclose(tangent, np.cos(x) * y, rtol=1e-15)


def test_nondiff_argnums_pass_a_function_to_the_rule():
    def apply(g, x):
        return g(x)

    clip = numbax.custom_jvp(apply, nondiff_argnums=(0,))

    @clip.defjvp
    def _clip_jvp(g, primals, tangents):
        (x,), (t,) = primals, tangents
        return g(x), 2.0 * t  # deliberately not g's derivative

    x = np.array([0.5, -1.0])
    np.testing.assert_array_equal(clip(np.sin, x), np.sin(x))
    grad = numbax.grad(lambda x: np.sum(clip(np.sin, x)))(x)
    np.testing.assert_array_equal(grad, [2.0, 2.0])


def test_a_rule_may_return_a_python_zero_tangent():
    @numbax.custom_jvp
    def f(x):
        return np.floor(x) * 2.0

    f.defjvp(lambda primals, tangents: (f(primals[0]), 0.0))
    np.testing.assert_array_equal(numbax.grad(lambda x: np.sum(f(x)))(np.ones(3)), np.zeros(3))


def test_without_a_rule_or_with_a_wrong_one_the_error_names_the_fix():
    @numbax.custom_jvp
    def f(x):
        return x * 2.0

    with pytest.raises(numbax.GradientError, match=r"f.defjvp\(rule\)"):
        numbax.grad(f)(1.0)
    f.defjvp(lambda primals, tangents: primals[0] * 2.0)
    with pytest.raises(numbax.GradientError, match="must return a pair"):
        numbax.grad(f)(1.0)
    f.defjvp(lambda primals, tangents: ((primals[0] * 2.0,), tangents[0]))
    with pytest.raises(numbax.GradientError, match="differs from the function's"):
        numbax.grad(f)(1.0)


def test_closing_over_a_differentiated_value_is_an_error_naming_the_fix():
    def loss(w):
        @numbax.custom_jvp
        def scale(x):
            return x * w

        scale.defjvp(lambda primals, tangents: (scale(primals[0]), tangents[0] * w))
        return scale(2.0)

    with pytest.raises(numbax.GradientError, match="pass that value to the function"):
        numbax.grad(loss)(3.0)
