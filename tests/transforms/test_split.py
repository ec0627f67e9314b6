"""The forward/backward split: grad(jit(f)) runs the forward once, eager grad reuses
the values its trace computed, checkpoint saves fewer residuals, custom_vjp."""

from __future__ import annotations

import numpy as np
import pytest
from finite_differences import check_derivatives

import numbax
from numbax import checkpoint, custom_vjp, grad, jit
from numbax.ir import PRIMITIVES, typecheck
from numbax.ir.higher_order import jit_call_p
from numbax.tracer.closure import closure_convert
from numbax.transforms.vjp import vjp_split


@pytest.fixture
def jit_calls(monkeypatch):
    """The names of the jit_call programs run eagerly, in order."""
    calls = []
    impl = jit_call_p.impl_rule

    def counting(*args, jaxpr, name="jit_call"):
        calls.append(name)
        return impl(*args, jaxpr=jaxpr, name=name)

    monkeypatch.setattr(jit_call_p, "impl_rule", counting)
    return calls


@pytest.fixture
def sin_evaluations(monkeypatch):
    """How often the NumPy implementation of ``sin`` ran (eagerly or interpreted)."""
    count = [0]
    sin = PRIMITIVES["sin"]
    impl = sin.impl_rule

    def counting(x):
        count[0] += 1
        return impl(x)

    monkeypatch.setattr(sin, "impl_rule", counting)
    return count


def loss(x, w):
    return np.sum(np.sin(x @ w) ** 2)


def test_grad_of_jit_runs_forward_once_then_backward(jit_calls):
    x, w = np.array([[0.5, -1.0]]), np.array([[1.0, 2.0], [0.3, -0.7]])
    jitted = jit(loss)
    gx, gw = grad(jitted, argnums=(0, 1))(x, w)
    assert jit_calls == ["loss_fwd", "loss_bwd"]
    expected = grad(loss, argnums=(0, 1))(x, w)
    np.testing.assert_allclose(gx, expected[0], rtol=1e-12)
    np.testing.assert_allclose(gw, expected[1], rtol=1e-12)
    # Called again: the same two programs, nothing retraced into new ones.
    grad(jitted, argnums=(0, 1))(x, w)
    assert jit_calls == ["loss_fwd", "loss_bwd"] * 2


def test_grad_of_jit_emits_one_call_per_half():
    x, w = np.ones((1, 2)), np.ones((2, 2))
    program = numbax.make_jaxpr(grad(jit(loss)))(x, w)
    typecheck(program)
    calls = [e for e in program.eqns if e.prim is jit_call_p]
    assert [e.params["name"] for e in calls] == ["loss_fwd", "loss_bwd"]
    forward, backward = (e.params["jaxpr"] for e in calls)
    assert sum(e.prim.name == "sin" for e in forward.eqns) == 1
    assert not any(e.prim.name == "sin" for e in backward.eqns)  # nothing recomputed


def test_eager_grad_evaluates_the_forward_once(sin_evaluations):
    x = np.linspace(0.0, 1.0, 5)
    g = grad(lambda x: np.sum(np.sin(x) * x**2))(x)
    np.testing.assert_allclose(g, np.cos(x) * x**2 + 2 * x * np.sin(x), rtol=1e-14)
    assert sin_evaluations[0] == 1  # in the trace; the backward only needs cos


def _tanh_mlp(params, x):
    for w, b in params:
        x = np.tanh(x @ w + b)
    return x


def _blocks(layers_per_block):
    def forward(params, x):
        for start in range(0, len(params), layers_per_block):
            x = checkpoint(_tanh_mlp)(params[start : start + layers_per_block], x)
        return x

    return forward


@pytest.fixture
def mlp(rng):
    params = [(rng.standard_normal((4, 4)) * 0.5, rng.standard_normal(4) * 0.1) for _ in range(10)]
    return params, rng.standard_normal((3, 4))


def _residuals(forward, params, x):
    def loss(params, x):
        return np.sum(forward(params, x) ** 2)

    jaxpr, consts = closure_convert(numbax.make_jaxpr(loss)(params, x))
    num_args = len(numbax.tree_leaves((params, x)))
    split = vjp_split(jaxpr, (False,) * len(consts) + (True,) * num_args)
    saved = split.residual_avals[: len(split.residual_avals) - len(split.forwarded)]
    return saved, grad(loss)(params, x)


def test_checkpoint_keeps_fewer_residuals_with_equal_gradients(mlp):
    params, x = mlp
    plain_saved, plain_grads = _residuals(_tanh_mlp, params, x)
    assert len(plain_saved) >= 10  # an activation per layer at least
    # Saved: the network's output (the loss squares it) and the inner blocks' inputs,
    # nothing from inside a block.
    for layers_per_block, expected_saved in [(10, 1), (5, 2)]:
        saved, grads = _residuals(_blocks(layers_per_block), params, x)
        assert len(saved) == expected_saved
        assert sum(a.nbytes for a in saved) < sum(a.nbytes for a in plain_saved)
        for (gw, gb), (pw, pb) in zip(grads, plain_grads, strict=True):
            np.testing.assert_allclose(gw, pw, rtol=1e-12, atol=1e-15)
            np.testing.assert_allclose(gb, pb, rtol=1e-12, atol=1e-15)


def test_checkpoint_backward_recomputes_the_forward(mlp):
    params, x = mlp
    program = numbax.make_jaxpr(grad(lambda p, x: np.sum(_blocks(10)(p, x))))(params, x)
    checkpoints = [e for e in program.eqns if e.prim.name == "checkpoint"]
    assert [e.params["name"] for e in checkpoints] == ["_tanh_mlp", "_tanh_mlp_bwd"]
    recomputed = checkpoints[1].params["jaxpr"]
    assert sum(e.prim.name == "tanh" for e in recomputed.eqns) == 10


def test_checkpoint_under_jit_higher_order_and_forward_mode(rng):
    f = checkpoint(lambda x: np.sin(x) * x)
    second = 2 * np.cos(0.5) - 0.5 * np.sin(0.5)
    assert float(grad(grad(f))(0.5)) == pytest.approx(second, rel=1e-14)
    assert float(jit(grad(grad(f)))(0.5)) == pytest.approx(second, rel=1e-14)
    check_derivatives(lambda x: np.sum(f(x) * f(x * 2)), [rng.standard_normal(3)], rng)


@custom_vjp
def clip_gradient(x):
    return x


clip_gradient.defvjp(lambda x: (x, None), lambda _, ct: (np.clip(ct, -1.0, 1.0),))


@custom_vjp
def safe_log(x, floor):
    return np.log(np.maximum(x, floor))


def _safe_log_fwd(x, floor):
    return safe_log(x, floor), (x, floor)


def _safe_log_bwd(residuals, ct):
    x, floor = residuals
    return ct / np.maximum(x, floor), None


safe_log.defvjp(_safe_log_fwd, _safe_log_bwd)


def test_custom_vjp_replaces_the_backward():
    assert float(grad(lambda x: 3.0 * clip_gradient(x))(2.0)) == 1.0
    assert float(grad(lambda x: 0.5 * clip_gradient(x))(2.0)) == 0.5
    assert float(jit(grad(lambda x: 3.0 * clip_gradient(x)))(2.0)) == 1.0
    assert float(grad(jit(lambda x: 3.0 * clip_gradient(x)))(2.0)) == 1.0
    g = grad(lambda x: np.sum(safe_log(x, 1e-3)), argnums=0)(np.array([0.0, 2.0]))
    np.testing.assert_array_equal(g, [1e3, 0.5])


def test_custom_vjp_values_forward_mode_and_nesting():
    assert float(clip_gradient(4.0)) == 4.0
    assert float(jit(lambda x: safe_log(x, 1.0))(np.e)) == pytest.approx(1.0)
    # Forward mode differentiates the primal function.
    assert float(numbax.jvp(lambda x: 3.0 * clip_gradient(x), (2.0,), (1.0,))[1]) == 3.0
    # Second order: the custom backward is itself differentiated.
    assert float(grad(grad(lambda x: safe_log(x, 1e-3) * x))(2.0)) == pytest.approx(0.5)


def _scaled_by(w):
    """A custom_vjp function closing over ``w``, with a correct rule for ``x`` only."""

    @custom_vjp
    def scale(x):
        return np.sin(x) * w

    scale.defvjp(lambda x: (scale(x), x), lambda x, ct: (ct * np.cos(x) * w,))
    return scale


_X0 = np.array([0.3, -1.2, 2.0])


def _closing_loss(w):
    return np.sum(_scaled_by(w)(_X0))


@pytest.mark.parametrize(
    "transform",
    [
        grad,
        lambda f: jit(grad(f)),
        lambda f: grad(jit(f)),
        lambda f: lambda w: numbax.vmap(grad(f))(np.stack([w, 2 * w])),
        lambda f: grad(
            lambda w: np.sum(numbax.vmap(lambda x: _scaled_by(w)(x))(np.stack([_X0, _X0])))
        ),
    ],
    ids=["grad", "jit(grad)", "grad(jit)", "vmap(grad)", "grad(vmap)"],
)
def test_custom_vjp_closing_over_a_differentiated_value_is_an_error_naming_the_fix(transform):
    # The rule cannot see the derivative through w: it was silently zero.
    with pytest.raises(numbax.GradientError, match="custom_vjp.*pass that value to the function"):
        transform(_closing_loss)(np.array([0.5, -1.0, 2.0]))


def test_custom_vjp_may_close_over_constants_and_values_it_does_not_differentiate(rng):
    w = rng.standard_normal(3)
    check_derivatives(lambda x: np.sum(_scaled_by(w)(x) ** 2), [rng.standard_normal(3)], rng)
    check_derivatives(jit(lambda x: _scaled_by(w)(x) * x), [rng.standard_normal(3)], rng)
    # Forward mode differentiates the primal function, closure included.
    check_derivatives(_closing_loss, [w], rng, reverse=False)
    # Traced by jit or vmap, but not differentiated: nothing is lost.
    expected = np.cos(_X0) * w
    np.testing.assert_allclose(
        jit(lambda w, x: grad(lambda x: np.sum(_scaled_by(w)(x)))(x))(w, _X0), expected
    )
    batched = numbax.vmap(lambda w: grad(lambda x: np.sum(_scaled_by(w)(x)))(_X0))(
        np.stack([w, 2 * w])
    )
    np.testing.assert_allclose(batched, [expected, 2 * expected])


def test_custom_vjp_bwd_must_return_one_cotangent_per_argument():
    @custom_vjp
    def f(x, y):
        return x * y

    f.defvjp(lambda x, y: (x * y, (x, y)), lambda res, ct: ct * res[1])
    with pytest.raises(numbax.GradientError, match="one cotangent per argument"):
        grad(f)(1.0, 2.0)
