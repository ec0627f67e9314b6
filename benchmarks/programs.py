"""The programs, each written once in NumPy style, taking the array namespace `xp`.

numbax runs a program with `numbax.numpy`, JAX with `jax.numpy`, the NumPy peer with `numpy`,
CuPy with `cupy`; `numpy` is also the reference every implementation is checked against.
Programs use only the part of the NumPy API that all of these share (the array-API subset:
`xp.max(..., axis=, keepdims=)`, `xp.where`, `@`), so one definition serves every peer.

Where a library has no `grad`, a hand-written derivative stands beside the program, still in
NumPy style, so NumPy, CuPy and PyTorch run the same hand-written code.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

LEARNING_RATE = 0.1
LAYER_NORM_EPSILON = 1e-5


def chain(xp, x):
    return xp.tanh(x * 1.5 + 0.5) * 0.5 + x * x


def softmax(xp, x):
    exps = xp.exp(x - xp.max(x, axis=-1, keepdims=True))
    return exps / xp.sum(exps, axis=-1, keepdims=True)


def layer_norm(xp, x, gamma, beta):
    mean = xp.mean(x, axis=-1, keepdims=True)
    centered = x - mean
    variance = xp.mean(centered * centered, axis=-1, keepdims=True)
    return centered / xp.sqrt(variance + LAYER_NORM_EPSILON) * gamma + beta


def matmul_bias_relu(xp, x, w, b):
    return xp.maximum(x @ w + b, 0.0)


def matmul(xp, a, b):
    return a @ b


def mlp_loss(xp, params, x, labels):
    """Mean softmax cross-entropy of a one-hidden-layer relu MLP."""
    w1, b1, w2, b2 = params
    hidden = xp.maximum(x @ w1 + b1, 0.0)
    logits = hidden @ w2 + b2
    shifted = logits - xp.max(logits, axis=-1, keepdims=True)
    log_probs = shifted - xp.log(xp.sum(xp.exp(shifted), axis=-1, keepdims=True))
    # Picking each row's label with a mask, not a gather, keeps to the shared API subset.
    is_label = labels[:, None] == xp.arange(logits.shape[-1])
    return -xp.sum(xp.where(is_label, log_probs, 0.0)) / x.shape[0]


def mlp_sgd_step(xp, grad, params, x, labels):
    """One SGD step: the new params. `grad` is the library's transform (numbax.grad, jax.grad)."""
    grads = grad(lambda p: mlp_loss(xp, p, x, labels))(params)
    return tuple(p - LEARNING_RATE * g for p, g in zip(params, grads, strict=True))


def mlp_sgd_step_by_hand(xp, params, x, labels):
    """`mlp_sgd_step` with the backward pass written out, for libraries without `grad`."""
    w1, b1, w2, b2 = params
    pre_activation = x @ w1 + b1
    hidden = xp.maximum(pre_activation, 0.0)
    logits = hidden @ w2 + b2
    exps = xp.exp(logits - xp.max(logits, axis=-1, keepdims=True))
    probs = exps / xp.sum(exps, axis=-1, keepdims=True)
    is_label = labels[:, None] == xp.arange(logits.shape[-1])
    # d loss / d logits = (softmax - one_hot) / batch; `where` keeps float32 (no float64 one-hot).
    d_logits = xp.where(is_label, probs - 1.0, probs) / x.shape[0]
    d_hidden = xp.where(pre_activation > 0, d_logits @ w2.T, 0.0)
    grads = (
        x.T @ d_hidden,
        xp.sum(d_hidden, axis=0),
        hidden.T @ d_logits,
        xp.sum(d_logits, axis=0),
    )
    return tuple(p - LEARNING_RATE * g for p, g in zip(params, grads, strict=True))


def sin_x_squared_sum(xp, x):
    return xp.sum(xp.sin(x) * x**2)


def sin_x_squared_sum_grad_by_hand(xp, x):
    return xp.cos(x) * x**2 + 2 * x * xp.sin(x)


def python_scan(f, init, xs):
    """`scan` as a Python loop over the rows of `xs`, for libraries without one (NumPy,
    CuPy, PyTorch). The per-step outputs are dropped: the programs here return None."""
    carry = init
    for x in xs:
        carry, _ = f(carry, x)
    return carry, None


def rnn_loss(xp, scan, params, h0, xs):
    """A tanh RNN run over the time steps of `xs` with the library's `scan`; the squared
    norm of its final state."""
    w, u, b = params

    def cell(h, x):
        return xp.tanh(h @ w + x @ u + b), None

    h, _ = scan(cell, h0, xs)
    return xp.sum(h * h)


def rnn_loss_grad_by_hand(xp, params, h0, xs):
    """The gradient of `rnn_loss` with respect to `params`: backpropagation through time,
    the forward states kept, the backward loop written out."""
    w, u, b = params
    states = [h0]
    for x in xs:
        states.append(xp.tanh(states[-1] @ w + x @ u + b))
    d_h = 2.0 * states[-1]
    d_w, d_u, d_b = xp.zeros_like(w), xp.zeros_like(u), xp.zeros_like(b)
    for t in range(len(xs) - 1, -1, -1):
        h = states[t + 1]
        d_pre = d_h * (1.0 - h * h)
        d_w = d_w + states[t].T @ d_pre
        d_u = d_u + xs[t].T @ d_pre
        d_b = d_b + xp.sum(d_pre, axis=0)
        d_h = d_pre @ w.T
    return d_w, d_u, d_b


def add_one(xp, x):
    return x + 1


def make_twenty_op_program(xp, constant: float) -> Callable:
    """A new 20-op elementwise/reduction program; each `constant` gives a distinct function.

    A new closure defeats every in-memory cache keyed on the function, and a new constant
    changes the generated code, so a disk cache keyed on the code misses too. The constants
    are NumPy float32 scalars because Numba types a Python float as float64 and would widen
    the whole program; NumPy, JAX and numbax keep float32 either way.
    """
    c = np.float32(constant)
    one = np.float32(1.0)

    def twenty_ops(x):
        a = xp.sin(x) * c
        b = xp.cos(x) + c
        d = xp.exp(-(a * a))
        e = xp.tanh(b) - d
        f = xp.sqrt(xp.abs(e) + one)
        g = xp.log(f + one) * b
        h = xp.maximum(g, a) / (f + c)
        return h - xp.max(h) / xp.sum(f)

    return twenty_ops
