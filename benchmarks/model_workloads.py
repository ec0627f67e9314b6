"""The models group's workloads: each program of models.py with float32 inputs, the
transform a library applies, and its float64 reference.

Styles (see workloads.Workload):
  value_and_grad    jit(value_and_grad(loss)) of `loss(xp, loops, params, batch)`
  per_example_grad  jit(vmap(grad(loss), in_axes=(None, 0))) of a one-example loss
  kernel            jit(program(xp, loops, *arrays)), as in the kernels group

The reference is float64. For a forward program it is NumPy running the program eagerly.
For a gradient it is numbax differentiating the same loss in float64 on the interpreter
(NumPy executing the derivative's jaxpr), after checking that the interpreter's loss is
NumPy's; the test checks those gradients against finite differences, so the oracle does
not rest on numbax alone. Per-example gradients are referenced one example at a time with
`grad`, which checks `vmap` too.

Sizes: (quick, full). Quick is a smoke test that runs in seconds; full is what a laptop
trains, the transformer at issue #34's size (D=64, 4 heads, T=32, batch 8).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from . import models
from .implementation import bind, tree_map
from .kernel_workloads import with_static
from .kernels import EAGER_NUMPY, library_loops
from .workloads import Workload, leaves

# float32 against float64: a few float32 ulps grown over the program's depth. `atol` is a
# fraction of each output's largest magnitude, so that small entries of a large gradient
# are read at the gradient's own scale.
TRAINING_TOLERANCE = {"rtol": 2e-3, "atol": 2e-3}
PROGRAM_TOLERANCE = {"rtol": 1e-3, "atol": 1e-3}


def assert_float32_close_to_float64(rtol: float, atol: float) -> Callable[[object, object], None]:
    """Every output float32 where the reference is float64 (no silent widening), of the
    reference's shape, and close to it at its own scale."""

    def check(actual, expected) -> None:
        actual, expected = leaves(actual), leaves(expected)
        assert len(actual) == len(expected), f"{len(actual)} outputs, expected {len(expected)}"
        for index, (got, want) in enumerate(zip(actual, expected, strict=True)):
            got, want = np.asarray(got), np.asarray(want)
            wanted_dtype = np.dtype(np.float32) if want.dtype == np.float64 else want.dtype
            where = f"output {index}: "
            assert got.shape == want.shape, f"{where}shape {got.shape}, expected {want.shape}"
            assert got.dtype == wanted_dtype, f"{where}dtype {got.dtype}, expected {wanted_dtype}"
            scale = float(np.abs(want).max()) if want.size else 0.0
            np.testing.assert_allclose(got, want, rtol=rtol, atol=atol * scale, err_msg=where)

    return check


def to_float64(tree):
    return tree_map(lambda a: a.astype(np.float64) if a.dtype == np.float32 else a, tree)


def _numbax_loss(loss: Callable) -> Callable:
    import numbax
    import numbax.numpy as xnp

    return bind(loss, xnp, library_loops(numbax.fori_loop, numbax.scan))


def value_and_grad_reference(loss: Callable, params, batch):
    """(loss, gradients) in float64: numbax's derivative run by the interpreter."""
    import numbax

    params, batch = to_float64(params), to_float64(batch)
    step = numbax.jit(numbax.value_and_grad(_numbax_loss(loss)), backend="interpret")
    value, grads = step(params, batch)
    numpy_value = loss(np, EAGER_NUMPY, params, batch)
    np.testing.assert_allclose(value, numpy_value, rtol=1e-10, err_msg="interpreted loss")
    return np.asarray(value), tree_map(np.asarray, grads)


def per_example_grad_reference(loss: Callable, params, batch):
    """Per-example gradients in float64, one `grad` call per example (no vmap)."""
    import numbax

    params, batch = to_float64(params), to_float64(batch)
    grad = numbax.jit(numbax.grad(_numbax_loss(loss)), backend="interpret")
    per_example = [grad(params, tuple(part[i] for part in batch)) for i in range(len(batch[0]))]
    stacked = [np.stack(group) for group in zip(*(leaves(g) for g in per_example), strict=True)]
    return stacked


def program_reference(program: Callable, arrays: tuple):
    return program(np, EAGER_NUMPY, *to_float64(arrays))


def _normal(rng, shape, scale: float) -> np.ndarray:
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def _dense(rng, n_in: int, n_out: int) -> tuple[np.ndarray, np.ndarray]:
    return _normal(rng, (n_in, n_out), np.sqrt(2.0 / n_in)), _normal(rng, n_out, 0.01)


def _training(name, title, size, loss, params, batch, style="value_and_grad") -> Workload:
    if style == "value_and_grad":
        reference = lambda: value_and_grad_reference(loss, params, batch)  # noqa: E731
    else:
        reference = lambda: per_example_grad_reference(loss, params, batch)  # noqa: E731
    return Workload(
        name,
        title,
        size,
        style,
        loss,
        (params, batch),
        custom_check=assert_float32_close_to_float64(**TRAINING_TOLERANCE),
        reference_program=reference,
    )


def _program(name, title, size, program, arrays) -> Workload:
    return Workload(
        name,
        title,
        size,
        "kernel",
        program,
        arrays,
        custom_check=assert_float32_close_to_float64(**PROGRAM_TOLERANCE),
        reference_program=lambda: program_reference(program, arrays),
    )


# --- training steps -----------------------------------------------------------------------

MLP_SIZES = {"quick": (4, (16, 8, 8, 4)), "full": (None, (784, 512, 256, 10))}


def mlp(batch_size: int) -> Callable[[str, object], Workload]:
    def build(scale: str, rng) -> Workload:
        batch, widths = MLP_SIZES[scale]
        batch = batch or batch_size
        params = tuple(_dense(rng, a, b) for a, b in zip(widths, widths[1:], strict=False))
        x = rng.uniform(0.0, 1.0, (batch, widths[0])).astype(np.float32)
        labels = rng.integers(0, widths[-1], batch, dtype=np.int32)
        shape = "-".join(map(str, widths))
        return _training(
            f"mlp_{batch_size}",
            "MLP training step: jit(value_and_grad(loss)), 3 relu layers, cross-entropy",
            f"batch {batch}, {shape}, float32",
            models.mlp_loss,
            params,
            (x, labels),
        )

    return build


# (batch, time, width, heads, vocabulary)
TRANSFORMER_SIZES = {"quick": (2, 4, 8, 2, 11), "full": (8, 32, 64, 4, 128)}


def transformer_params(rng, layers: int, time: int, width: int, vocabulary: int):
    def block():
        ones, zeros = np.ones(width, np.float32), np.zeros(width, np.float32)
        w1, b1 = _dense(rng, width, 4 * width)
        w2, b2 = _dense(rng, 4 * width, width)
        w_qkv = _normal(rng, (width, 3 * width), 1 / np.sqrt(width))
        w_attention_out = _normal(rng, (width, width), 1 / np.sqrt(width))
        return (ones, zeros, w_qkv, w_attention_out, ones.copy(), zeros.copy(), w1, b1, w2, b2)

    embedding = _normal(rng, (vocabulary, width), 0.5)
    positions = _normal(rng, (time, width), 0.1)
    final_norm = (np.ones(width, np.float32), np.zeros(width, np.float32))
    return (embedding, positions, tuple(block() for _ in range(layers)), final_norm)


def transformer(layers: int) -> Callable[[str, object], Workload]:
    def build(scale: str, rng) -> Workload:
        batch, time, width, heads, vocabulary = TRANSFORMER_SIZES[scale]
        params = transformer_params(rng, layers, time, width, vocabulary)
        tokens = rng.integers(0, vocabulary, (batch, time + 1), dtype=np.int32)
        return _training(
            f"transformer_{layers}",
            f"transformer training step: jit(value_and_grad(loss)), {layers} pre-LN "
            "block(s), causal attention, GELU MLP, tied embedding",
            f"{layers} layer(s), D={width}, {heads} heads, T={time}, batch {batch}, "
            f"vocabulary {vocabulary}, float32",
            with_static(models.transformer_loss, heads=heads),
            params,
            (tokens[:, :-1], tokens[:, 1:]),
        )

    return build


# (batch, height and width, input channels, two conv widths, classes); kernels 3x3
CNN_SIZES = {"quick": (2, 8, 1, (2, 4), 3), "full": (32, 28, 1, (8, 16), 10)}


def cnn(method: str) -> Callable[[str, object], Workload]:
    loss = {"im2col": models.cnn_im2col_loss, "einsum": models.cnn_einsum_loss}[method]

    def build(scale: str, rng) -> Workload:
        batch, side, c_in, (c1, c2), classes = CNN_SIZES[scale]
        params = (
            (_normal(rng, (3, 3, c_in, c1), np.sqrt(2 / (9 * c_in))), _normal(rng, c1, 0.01)),
            (_normal(rng, (3, 3, c1, c2), np.sqrt(2 / (9 * c1))), _normal(rng, c2, 0.01)),
            _dense(rng, c2, classes),
        )
        images = rng.uniform(0.0, 1.0, (batch, side, side, c_in)).astype(np.float32)
        labels = rng.integers(0, classes, batch, dtype=np.int32)
        return _training(
            f"cnn_{method}",
            f"CNN training step: two 3x3 convolutions by {method}, mean pool, dense",
            f"batch {batch}, {side}x{side}x{c_in}, channels {c1}, {c2}, float32",
            loss,
            params,
            (images, labels),
        )

    return build


# (time steps, batch, inputs, units, outputs)
LSTM_SIZES = {"quick": (4, 2, 3, 4, 2), "full": (32, 16, 32, 128, 8)}


def lstm(scale: str, rng) -> Workload:
    steps, batch, n_in, units, n_out = LSTM_SIZES[scale]
    params = (
        _normal(rng, (n_in, 4 * units), 1 / np.sqrt(n_in)),
        _normal(rng, (units, 4 * units), 1 / np.sqrt(units)),
        _normal(rng, 4 * units, 0.1),
        _normal(rng, (units, n_out), 1 / np.sqrt(units)),
        _normal(rng, n_out, 0.01),
    )
    inputs = _normal(rng, (steps, batch, n_in), 1.0)
    targets = _normal(rng, (steps, batch, n_out), 0.5)
    return _training(
        "lstm_scan",
        "LSTM training step: jit(value_and_grad(loss)) through scan, read-out of every step",
        f"{steps} steps, batch {batch}, {n_in} in, {units} units, {n_out} out, float32",
        models.lstm_loss,
        params,
        (inputs, targets),
    )


# (batch, widths)
PER_EXAMPLE_SIZES = {"quick": (3, (6, 5, 3)), "full": (64, (256, 128, 10))}


def per_example_grads(scale: str, rng) -> Workload:
    batch, widths = PER_EXAMPLE_SIZES[scale]
    params = tuple(_dense(rng, a, b) for a, b in zip(widths, widths[1:], strict=False))
    x = rng.uniform(0.0, 1.0, (batch, widths[0])).astype(np.float32)
    labels = rng.integers(0, widths[-1], batch, dtype=np.int32)
    return _training(
        "per_example_grads",
        "per-example gradients: jit(vmap(grad(loss), in_axes=(None, 0))) of a relu MLP",
        f"batch {batch}, {'-'.join(map(str, widths))}, float32",
        models.mlp_example_loss,
        params,
        (x, labels),
        style="per_example_grad",
    )


# --- scientific programs ------------------------------------------------------------------

# (training points, test points, dimensions)
GP_SIZES = {"quick": (12, 5, 2), "full": (512, 256, 4)}


def gaussian_process(scale: str, rng) -> Workload:
    n, m, d = GP_SIZES[scale]
    x_train = rng.uniform(-2.0, 2.0, (n, d)).astype(np.float32)
    y_train = (np.sin(x_train).sum(axis=1) + 0.1 * rng.standard_normal(n)).astype(np.float32)
    x_test = rng.uniform(-2.0, 2.0, (m, d)).astype(np.float32)
    program = with_static(models.gaussian_process, lengthscale=1.0, noise=0.1)
    return _program(
        "gaussian_process",
        "Gaussian process regression: RBF kernel, Cholesky, posterior mean and variance",
        f"{n} training points, {m} test points, {d} dimensions, float32",
        program,
        (x_train, y_train, x_test),
    )


# (bodies, steps)
NBODY_SIZES = {"quick": (8, 2), "full": (256, 10)}


def nbody(scale: str, rng) -> Workload:
    bodies, steps = NBODY_SIZES[scale]
    positions = rng.uniform(-1.0, 1.0, (bodies, 3)).astype(np.float32)
    velocities = _normal(rng, (bodies, 3), 0.1)
    masses = rng.uniform(0.5, 1.5, bodies).astype(np.float32) / np.float32(bodies)
    program = with_static(models.nbody, steps=steps, dt=0.01, softening=0.1)
    return _program(
        "nbody",
        "n-body: all-pairs gravity, leapfrog steps in a fori_loop",
        f"{bodies} bodies, {steps} steps, float32",
        program,
        (positions, velocities, masses),
    )


# (side, steps)
STENCIL_SIZES = {"quick": (12, 3), "full": (256, 100)}


def heat_roll(scale: str, rng) -> Workload:
    side, steps = STENCIL_SIZES[scale]
    u = rng.uniform(0.0, 1.0, (side, side)).astype(np.float32)
    return _program(
        "heat_roll",
        "periodic heat stencil with np.roll, in a fori_loop",
        f"{side}x{side}, {steps} steps, float32",
        with_static(models.heat_roll, steps=steps, alpha=0.2),
        (u,),
    )


def wave_pad(scale: str, rng) -> Workload:
    side, steps = STENCIL_SIZES[scale]
    u = rng.uniform(-1.0, 1.0, (side, side)).astype(np.float32)
    return _program(
        "wave_pad",
        "wave stencil with np.pad (zero edges), in a fori_loop",
        f"{side}x{side}, {steps} steps, float32",
        with_static(models.wave_pad, steps=steps, courant2=0.25),
        (u, u.copy()),
    )


# In run order. transformer_1/4/8 are the layer-scaling rows of issue #34.
MODEL_WORKLOAD_BUILDERS = {
    "mlp_64": mlp(64),
    "mlp_256": mlp(256),
    "transformer_2": transformer(2),
    "cnn_im2col": cnn("im2col"),
    "cnn_einsum": cnn("einsum"),
    "lstm_scan": lstm,
    "per_example_grads": per_example_grads,
    "gaussian_process": gaussian_process,
    "nbody": nbody,
    "heat_roll": heat_roll,
    "wave_pad": wave_pad,
    "transformer_1": transformer(1),
    "transformer_4": transformer(4),
    "transformer_8": transformer(8),
}

# The rows of issue #34's layer-scaling figure, by layer count.
TRANSFORMER_LAYER_ROWS = {
    1: "transformer_1",
    2: "transformer_2",
    4: "transformer_4",
    8: "transformer_8",
}


def model_workload(name: str, scale: str) -> Workload:
    """One workload at `scale` ("quick" or "full"), with the same inputs in every process:
    its generator is seeded by its place in the run order."""
    index = list(MODEL_WORKLOAD_BUILDERS).index(name)
    return MODEL_WORKLOAD_BUILDERS[name](scale, np.random.default_rng(index))
