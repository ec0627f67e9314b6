"""The models group's programs (`--group models`): what ML users bring first, written once.

A training program is a loss `loss(xp, loops, params, batch)` of plain NumPy calls on the
array module `xp` (`numbax.numpy`, `jax.numpy`, `numpy`); `loops` is the library's control
flow (kernels.py's `Loops`: `loops.scan`, `loops.fori_loop`). The workload says which
transform a library wraps around it (`value_and_grad`, or `vmap(grad)` of a one-example
loss). A scientific program is `program(xp, loops, *arrays)`, as in the kernels group.

Every program keeps the dtype of its inputs: constants are Python scalars (NEP 50: they
take the array's dtype) and new arrays take their dtype from an input, so float32 inputs
give a float32 program in every library, and float64 inputs the reference.

Params and batches are tuples, never dicts: the runner walks tuples and lists only.
"""

from __future__ import annotations

import math

import numpy as np

LAYER_NORM_EPSILON = 1e-5
GELU_SCALE = 0.7978845608028654  # sqrt(2 / pi): the tanh approximation of GELU


# --- building blocks ----------------------------------------------------------------------


def log_softmax(xp, logits):
    shifted = logits - xp.max(logits, axis=-1, keepdims=True)
    return shifted - xp.log(xp.sum(xp.exp(shifted), axis=-1, keepdims=True))


def cross_entropy(xp, logits, labels):
    """Mean softmax cross-entropy; each label picked by a mask, which every library has."""
    is_label = labels[..., None] == xp.arange(logits.shape[-1])
    picked = xp.sum(xp.where(is_label, log_softmax(xp, logits), 0.0), axis=-1)
    return -xp.mean(picked)


def logistic(xp, x):
    return 1.0 / (1.0 + xp.exp(-x))


def gelu(xp, x):
    return 0.5 * x * (1.0 + xp.tanh(GELU_SCALE * (x + 0.044715 * x * x * x)))


def layer_norm(xp, x, gain, bias):
    mean = xp.mean(x, axis=-1, keepdims=True)
    centered = x - mean
    variance = xp.mean(centered * centered, axis=-1, keepdims=True)
    return centered / xp.sqrt(variance + LAYER_NORM_EPSILON) * gain + bias


# --- training losses ----------------------------------------------------------------------


def mlp_loss(xp, loops, params, batch):
    """A relu MLP of any depth, softmax cross-entropy. params: ((w, b), ...)."""
    x, labels = batch
    *hidden_layers, (w_out, b_out) = params
    for w, b in hidden_layers:
        x = xp.maximum(x @ w + b, 0.0)
    return cross_entropy(xp, x @ w_out + b_out, labels)


def mlp_example_loss(xp, loops, params, example):
    """The MLP's loss on one example (x of shape (inputs,), an integer label): the program
    whose gradient `vmap` takes per example."""
    x, label = example
    return mlp_loss(xp, loops, params, (xp.reshape(x, (1, -1)), xp.reshape(label, (1,))))


def attention(xp, h, w_qkv, w_out, heads: int):
    """Causal multi-head self-attention of (batch, time, width) activations."""
    batch, time, width = h.shape
    head_width = width // heads
    qkv = (h @ w_qkv).reshape(batch, time, 3, heads, head_width)
    q = xp.transpose(qkv[:, :, 0], (0, 2, 1, 3))  # (batch, heads, time, head_width)
    k = xp.transpose(qkv[:, :, 1], (0, 2, 3, 1))  # (batch, heads, head_width, time)
    v = xp.transpose(qkv[:, :, 2], (0, 2, 1, 3))
    scores = (q @ k) * head_width**-0.5  # a Python float: NEP 50 keeps float32
    causal = np.tril(np.ones((time, time), dtype=bool))  # a constant of the program
    scores = xp.where(causal, scores, -1e9)
    weights = xp.exp(scores - xp.max(scores, axis=-1, keepdims=True))
    weights = weights / xp.sum(weights, axis=-1, keepdims=True)
    mixed = xp.transpose(weights @ v, (0, 2, 1, 3)).reshape(batch, time, width)
    return mixed @ w_out


def transformer_block(xp, x, layer, heads: int):
    """Pre-layer-norm block: x + attention(ln(x)), then x + mlp(ln(x))."""
    ln1_gain, ln1_bias, w_qkv, w_attn_out, ln2_gain, ln2_bias, w1, b1, w2, b2 = layer
    x = x + attention(xp, layer_norm(xp, x, ln1_gain, ln1_bias), w_qkv, w_attn_out, heads)
    hidden = gelu(xp, layer_norm(xp, x, ln2_gain, ln2_bias) @ w1 + b1)
    return x + hidden @ w2 + b2


def transformer_loss(xp, loops, params, batch, *, heads: int):
    """A decoder-only language model: token and position embeddings, a stack of blocks,
    a final layer norm and the tied embedding as output layer; next-token cross-entropy.
    params: (embedding, positions, (block, ...), (gain, bias))."""
    tokens, targets = batch
    embedding, positions, blocks, (gain, bias) = params
    x = embedding[tokens] + positions
    for layer in blocks:
        x = transformer_block(xp, x, layer, heads)
    logits = layer_norm(xp, x, gain, bias) @ embedding.T
    return cross_entropy(xp, logits, targets)


def im2col(xp, x, k: int):
    """The k x k patches of NHWC `x` (valid padding) as slices, in (row, column) order."""
    height, width = x.shape[1] - k + 1, x.shape[2] - k + 1
    return [x[:, i : i + height, j : j + width, :] for i in range(k) for j in range(k)]


def conv_by_im2col(xp, x, w):
    """A valid convolution as one product: patches concatenated along channels, times the
    (k*k*C_in, C_out) weights."""
    k, _, c_in, c_out = w.shape
    patches = xp.concatenate(im2col(xp, x, k), axis=-1)
    return patches @ w.reshape(k * k * c_in, c_out)


def conv_by_einsum(xp, x, w):
    """The same convolution with the patches stacked on an axis of their own and
    contracted with the weights by einsum."""
    k, _, c_in, c_out = w.shape
    patches = xp.stack(im2col(xp, x, k), axis=3)  # (batch, height, width, k*k, C_in)
    return xp.einsum("bhwpc,pco->bhwo", patches, w.reshape(k * k, c_in, c_out))


def cnn_loss(xp, loops, params, batch, *, conv):
    """Two 3x3 relu convolutions, global average pooling, a dense softmax layer."""
    images, labels = batch
    (w1, b1), (w2, b2), (w_out, b_out) = params
    x = xp.maximum(conv(xp, images, w1) + b1, 0.0)
    x = xp.maximum(conv(xp, x, w2) + b2, 0.0)
    pooled = xp.mean(x, axis=(1, 2))
    return cross_entropy(xp, pooled @ w_out + b_out, labels)


def cnn_im2col_loss(xp, loops, params, batch):
    return cnn_loss(xp, loops, params, batch, conv=conv_by_im2col)


def cnn_einsum_loss(xp, loops, params, batch):
    return cnn_loss(xp, loops, params, batch, conv=conv_by_einsum)


def lstm_loss(xp, loops, params, batch):
    """An LSTM over the time steps of `inputs` with the library's `scan`, a linear read-out
    of every step's state, mean squared error. params: (w_x, w_h, b, w_out, b_out)."""
    inputs, targets = batch
    w_x, w_h, b, w_out, b_out = params
    units = w_h.shape[0]

    def cell(carry, x):
        h, c = carry
        z = x @ w_x + h @ w_h + b
        gate_in = logistic(xp, z[:, :units])
        gate_forget = logistic(xp, z[:, units : 2 * units])
        candidate = xp.tanh(z[:, 2 * units : 3 * units])
        gate_out = logistic(xp, z[:, 3 * units :])
        c = gate_forget * c + gate_in * candidate
        h = gate_out * xp.tanh(c)
        return (h, c), h

    zeros = xp.zeros((inputs.shape[1], units), dtype=inputs.dtype)
    _, states = loops.scan(cell, (zeros, zeros), inputs)
    error = states @ w_out + b_out - targets
    return xp.mean(error * error)


# --- scientific programs ------------------------------------------------------------------


def rbf(xp, a, b, lengthscale: float):
    squared = xp.sum(a * a, axis=1)[:, None] + xp.sum(b * b, axis=1)[None, :] - 2.0 * (a @ b.T)
    return xp.exp(-0.5 / lengthscale**2 * xp.maximum(squared, 0.0))


def gaussian_process(xp, loops, x_train, y_train, x_test, *, lengthscale, noise):
    """GP regression with an RBF kernel through a Cholesky factor: the posterior mean and
    variance at `x_test` and the log marginal likelihood."""
    n = x_train.shape[0]
    covariance = rbf(xp, x_train, x_train, lengthscale) + noise * xp.eye(n, dtype=x_train.dtype)
    factor = xp.linalg.cholesky(covariance)
    whitened = xp.linalg.solve(factor, y_train)
    alpha = xp.linalg.solve(factor.T, whitened)
    cross = rbf(xp, x_test, x_train, lengthscale)
    mean = cross @ alpha
    v = xp.linalg.solve(factor, cross.T)
    variance = 1.0 - xp.sum(v * v, axis=0)
    log_likelihood = (
        -0.5 * xp.sum(whitened * whitened)
        - xp.sum(xp.log(xp.diagonal(factor)))
        - 0.5 * n * math.log(2 * math.pi)
    )
    return mean, variance, log_likelihood


def nbody(xp, loops, positions, velocities, masses, *, steps, dt, softening):
    """Gravitational n-body, all pairs, leapfrog (kick-drift-kick) steps in a `fori_loop`."""

    def accelerations(p):
        delta = p[None, :, :] - p[:, None, :]  # (i, j, 3): from body i to body j
        distance2 = xp.sum(delta * delta, axis=-1) + softening * softening
        inverse3 = distance2 ** (-1.5)
        return xp.sum(delta * (inverse3 * masses[None, :])[:, :, None], axis=1)

    def step(t, state):
        p, v = state
        v = v + 0.5 * dt * accelerations(p)
        p = p + dt * v
        return p, v + 0.5 * dt * accelerations(p)

    return loops.fori_loop(0, steps, step, (positions, velocities))


def heat_roll(xp, loops, u, *, steps, alpha):
    """Periodic 2-D heat equation, the neighbours by `np.roll`."""

    def step(t, u):
        neighbours = (
            xp.roll(u, 1, axis=0) + xp.roll(u, -1, axis=0)
            + xp.roll(u, 1, axis=1) + xp.roll(u, -1, axis=1)
        )  # fmt: skip
        return u + alpha * (neighbours - 4.0 * u)

    return loops.fori_loop(0, steps, step, u)


def wave_pad(xp, loops, u, u_previous, *, steps, courant2):
    """2-D wave equation with fixed zero edges, the neighbours read from `np.pad`."""

    def step(t, state):
        u, u_previous = state
        padded = xp.pad(u, 1)
        laplacian = (
            padded[:-2, 1:-1] + padded[2:, 1:-1] + padded[1:-1, :-2] + padded[1:-1, 2:] - 4.0 * u
        )
        return 2.0 * u - u_previous + courant2 * laplacian, u

    return loops.fori_loop(0, steps, step, (u, u_previous))
