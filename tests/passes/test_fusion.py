"""Fusion: kernel counts and kinds on the programs users write, the rules (no expensive
producer duplicated, no cycle, most bytes saved first, multi-output siblings), and
values: the fused program evaluates to the traced program's answer."""

from __future__ import annotations

import numpy as np
import pytest
from passes_util import (
    assert_same_values,
    joinable_neighbours,
    kernels,
    kinds,
    optimize,
    prim_names,
    trace,
)

import numbax
from numbax import nn
from numbax import numpy as xnp
from numbax.passes import fusion
from numbax.passes.kernels import classify
from numbax.tracer.control_flow import cond

F32 = np.float32
rng = np.random.default_rng(0)
X = rng.standard_normal((8, 16)).astype(F32)
W = rng.standard_normal((16, 5)).astype(F32)
B = rng.standard_normal(5).astype(F32)

requires_grad = pytest.mark.skipif(
    not hasattr(numbax, "grad"), reason="numbax.grad (transforms/) is not written yet"
)


def fused_and_checked(fn, *args, rtol=1e-6):
    """Optimise (typecheck and kernel contract after every pass), and compare values."""
    fused, log = optimize(fn, *args)
    assert_same_values(trace(fn, *args), fused, args, rtol=rtol, atol=rtol)
    return fused


# ------------------------------------------------------------------ kernel counts


def test_elementwise_chain_is_one_kernel():
    fused = fused_and_checked(lambda x: np.tanh(x * 1.5 + 0.5) * 0.5 + x * x, X)
    assert kinds(fused) == ["elementwise"]
    assert kernels(fused)[0].params["name"] == "fused_mul_add_tanh"


def hand_softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


@pytest.mark.parametrize("softmax", [nn.softmax, hand_softmax], ids=["nn", "numpy"])
def test_softmax_is_at_most_two_kernels(softmax):
    fused = fused_and_checked(softmax, X)
    assert len(kernels(fused)) <= 2
    assert set(kinds(fused)) == {"reduction"}


def layer_norm(x):
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + 1e-5)


def test_layer_norm_is_at_most_two_kernels():
    fused = fused_and_checked(layer_norm, X, rtol=1e-5)
    assert len(kernels(fused)) <= 2


def test_dense_relu_is_one_contraction_with_its_epilogue():
    fused = fused_and_checked(lambda x, w, b: nn.relu(x @ w + b), X, W, B, rtol=1e-5)
    assert kinds(fused) == ["contraction"]
    body = kernels(fused)[0].params["jaxpr"]
    assert [e.prim.name for e in body.eqns] == ["dot_general", "broadcast_in_dim", "add", "max"]


@requires_grad
def test_grad_of_sin_times_square_is_at_most_two_kernels():
    grad_fn = numbax.jit(numbax.grad(lambda x: np.sum(np.sin(x) * x**2)), backend="interpret")
    fused = fused_and_checked(grad_fn, X.astype(np.float64))
    assert len(kernels(fused)) <= 2


# -------------------------------------------------------- the MLP training step

MLP_SHAPES = dict(x=(256, 784), w1=(784, 512), b1=(512,), w2=(512, 10), b2=(10,))


def mlp_step(w1, b1, w2, b2, x, labels):
    """Forward, softmax cross-entropy, backward by hand, SGD update."""
    n = x.shape[0]
    z1 = x @ w1 + b1
    h = np.maximum(z1, 0.0)
    logits = h @ w2 + b2
    logp = nn.log_softmax(logits)
    onehot = nn.one_hot(labels, 10, dtype=np.float32)
    loss = -np.sum(onehot * logp) / n
    dlogits = (np.exp(logp) - onehot) / n
    dh = dlogits @ w2.T
    dz1 = np.where(z1 > 0, dh, 0.0)
    lr = 0.1
    return (w1 - lr * (x.T @ dz1), b1 - lr * dz1.sum(0), w2 - lr * (h.T @ dlogits),
            b2 - lr * dlogits.sum(0), loss)  # fmt: skip


def mlp_arguments():
    params = [rng.standard_normal(MLP_SHAPES[k]).astype(F32) * 0.05 for k in ("w1", "b1")]
    params += [rng.standard_normal(MLP_SHAPES[k]).astype(F32) * 0.05 for k in ("w2", "b2")]
    x = rng.standard_normal(MLP_SHAPES["x"]).astype(F32)
    return (*params, x, rng.integers(0, 10, 256).astype(np.int32))


def test_mlp_training_step_has_no_missed_elementwise_fusion():
    args = mlp_arguments()
    fused = fused_and_checked(mlp_step, *args, rtol=1e-4)
    assert joinable_neighbours(fused) == []
    # Five matmuls, each with its epilogue; the softmax/loss and the bias gradients.
    assert kinds(fused).count("contraction") == 5
    assert "elementwise" not in kinds(fused)


@requires_grad
def test_mlp_training_step_with_grad_has_no_missed_elementwise_fusion():
    def loss(params, x, labels):
        w1, b1, w2, b2 = params
        logits = np.maximum(x @ w1 + b1, 0.0) @ w2 + b2
        return -np.sum(nn.one_hot(labels, 10, dtype=np.float32) * nn.log_softmax(logits)) / 256

    def step(w1, b1, w2, b2, x, labels):
        grads = numbax.grad(loss)((w1, b1, w2, b2), x, labels)
        return tuple(p - 0.1 * g for p, g in zip((w1, b1, w2, b2), grads, strict=True))

    fused = fused_and_checked(step, *mlp_arguments(), rtol=1e-4)
    assert joinable_neighbours(fused) == []


# -------------------------------------------------------------------------- rules


def test_expensive_producer_is_never_duplicated():
    """exp(x) feeds a sum over rows and one over columns: two kernels, one exp."""

    def fn(x):
        e = np.exp(x)
        return e.sum(axis=0), e.sum(axis=1)

    traced = trace(fn, X)
    fused = fused_and_checked(fn, X)
    assert prim_names(fused.jaxpr).count("exp") == prim_names(traced.jaxpr).count("exp") == 1
    assert len(kernels(fused)) == 2


def test_cheap_producers_are_recomputed_in_each_consumer():
    """A broadcast of a scalar costs nothing, a bias scaled on the way is read once."""
    fused = fused_and_checked(lambda x: x * xnp.full(X.shape, 2.0, F32) + 1.0, X)
    assert kinds(fused) == ["elementwise"]
    fused = fused_and_checked(lambda x, b: x + b * 2.0, X, X[0])
    assert kinds(fused) == ["elementwise"]
    assert set(kernels(fused)[0].inputs) == set(fused.jaxpr.invars)


def test_no_cycle_between_kernels():
    """y feeds a matmul and, directly, the matmul's consumer: merging y's kernel with
    the consumer would need the matmul both before and after it."""

    def fn(x, w):
        y = x * 2.0
        return y @ w + y

    x, w = X[:, :8].copy(), X[:, 8:].T.copy()
    traced = trace(fn, x, w)
    assert [e.prim.name for e in traced.eqns] == ["mul", "dot_general", "add"]
    assert classify([traced.eqns[0], traced.eqns[2]]) is not None  # legal as a kernel...
    assert fusion.Partition(traced.jaxpr).merged_spec(0, 2) is None  # ...but not as a merge
    fused = fused_and_checked(fn, x, w, rtol=1e-5)
    assert kinds(fused) == ["elementwise", "contraction"]


def test_the_merge_saving_most_bytes_wins():
    """exp(x) * w can join the column sum or the row sum, not both. Joining the column
    sum, which reads w too, saves reading w once more: that one wins."""

    def fn(x, w):
        p = np.exp(x) * w
        return (p * w).sum(axis=0), p.sum(axis=1)

    fused = fused_and_checked(fn, X, X + 1.0)
    assert len(kernels(fused)) == 2
    (with_exp,) = [k for k in kernels(fused) if "exp" in prim_names(k.params["jaxpr"])]
    reduction = next(e for e in with_exp.params["jaxpr"].eqns if e.prim.name == "reduce_sum")
    assert reduction.params["axes"] == (0,)


def test_siblings_share_a_multi_output_kernel():
    fused = fused_and_checked(lambda x: (x.sum(axis=1), x.max(axis=1)), X)
    assert kinds(fused) == ["reduction"] and len(kernels(fused)[0].outputs) == 2
    fused = fused_and_checked(lambda x: (np.sin(x), np.cos(x)), X)
    assert kinds(fused) == ["elementwise"] and len(kernels(fused)[0].outputs) == 2


def test_reduction_with_prologue_and_epilogue():
    fused = fused_and_checked(lambda x: np.sqrt((x * x).sum(axis=1)) * 2.0, X, rtol=1e-5)
    assert kinds(fused) == ["reduction"]
    assert kernels(fused)[0].params["name"] == "fused_mul_reduce_sum_sqrt"


def test_matmul_operands_come_from_memory():
    fused = fused_and_checked(lambda x, w: (x * 2.0) @ w, X, W, rtol=1e-5)
    assert kinds(fused) == ["elementwise", "contraction"]


def test_other_ops_are_opaque_kernels_of_one_equation():
    def fn(x, idx):
        return np.cumsum(x, axis=1)[:, 2:5] + np.take(x, idx, axis=1)

    idx = np.array([0, 3, 1])
    fused = fused_and_checked(fn, X, idx)
    opaque = [k.params["name"] for k in kernels(fused) if k.params["kind"] == "opaque"]
    assert sorted(opaque) == ["cumsum", "gather"]
    assert all(
        len(k.params["jaxpr"].eqns) == 1 for k in kernels(fused) if k.params["kind"] == "opaque"
    )
    # The slice of cumsum's result is read in place by the add, not copied out first.
    (add,) = [k for k in kernels(fused) if k.params["name"] == "fused_add"]
    assert [e.prim.name for e in add.params["jaxpr"].eqns] == ["slice", "add"]


def test_control_flow_stays_with_its_bodies_fused():
    def fn(p, x):
        return cond(p, lambda v: np.tanh(v * 2.0) + 1.0, lambda v: v * 3.0, x) * 2.0

    fused, _ = optimize(fn, True, X)
    assert [e.prim.name for e in fused.eqns] == ["kernel", "cond", "kernel"]
    branches = fused.eqns[1].params["branches"]
    assert [[e.params["kind"] for e in b.eqns] for b in branches] == [["elementwise"]] * 2
    for p in (True, False):
        assert_same_values(trace(fn, p, X), fused, [p, X])
