"""The workloads: a program with inputs of the size the backend calls for, the bytes and
FLOPs that define its throughput, and the check its answer must pass against NumPy's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .kernels import EAGER_NUMPY
from .programs import (
    LEARNING_RATE,
    add_one,
    chain,
    layer_norm,
    make_twenty_op_program,
    matmul,
    matmul_bias_relu,
    mlp_sgd_step,
    mlp_sgd_step_by_hand,
    python_scan,
    rnn_loss,
    rnn_loss_grad_by_hand,
    sin_x_squared_sum,
    sin_x_squared_sum_grad_by_hand,
    softmax,
)

# The constant of the one 20-op program instance the cold-start processes all share, so that
# every process after the first finds it in its library's disk cache.
COLD_START_CONSTANT = 1.5


def compile_constant(instance: int) -> float:
    """The constant of the `instance`-th new program; instance 0 is the one checked."""
    return 0.5 + instance / 64


def compile_input() -> np.ndarray:
    """The small input of the compile-latency programs: compile time dominates, not the run."""
    return np.linspace(-2.0, 2.0, 1024, dtype=np.float32)


# --- checking -----------------------------------------------------------------------------


def leaves(tree) -> list:
    """The arrays of a result: a tuple or list of arrays, or one array."""
    if isinstance(tree, tuple | list):
        return [leaf for item in tree for leaf in leaves(item)]
    return [tree]


def _assert_same_type(got: np.ndarray, want: np.ndarray, where: str) -> None:
    assert got.shape == want.shape, f"{where}shape {got.shape}, expected {want.shape}"
    assert got.dtype == want.dtype, f"{where}dtype {got.dtype}, expected {want.dtype}"


def assert_matches(actual, expected, rtol: float, atol: float) -> None:
    """Shape, dtype and values of every leaf; NumPy's promotion rules are part of the answer."""
    actual_leaves, expected_leaves = leaves(actual), leaves(expected)
    assert len(actual_leaves) == len(expected_leaves), (
        f"{len(actual_leaves)} outputs, expected {len(expected_leaves)}"
    )
    for index, (got, want) in enumerate(zip(actual_leaves, expected_leaves, strict=True)):
        got, want = np.asarray(got), np.asarray(want)
        where = f"output {index}: " if len(expected_leaves) > 1 else ""
        _assert_same_type(got, want, where)
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=where)


def assert_same_sgd_gradients(params) -> Callable[[Any, Any], None]:
    """Compare the gradients implied by two SGD steps, not the new params themselves.

    An update is small beside the params it changes, so a wrong gradient can hide inside the
    tolerance of the params; (old - new) / learning_rate is the gradient, checked relative to
    its own scale.
    """

    def check(actual, expected) -> None:
        actual = leaves(actual)
        assert len(actual) == len(params), f"{len(actual)} outputs, expected {len(params)}"
        for index, (param, got, want) in enumerate(zip(params, actual, expected, strict=True)):
            got = np.asarray(got)
            _assert_same_type(got, want, f"param {index}: ")
            implied, reference = (param - got) / LEARNING_RATE, (param - want) / LEARNING_RATE
            scale = float(np.abs(reference).max())
            np.testing.assert_allclose(
                implied,
                reference,
                rtol=1e-3,
                atol=1e-3 * scale,
                err_msg=f"gradient of param {index}",
            )

    return check


# --- the workloads ------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)  # eq=False: the inputs are arrays, never compared
class Workload:
    """One benchmark: a program, its inputs, and what its throughput is measured in.

    `style` says how a library turns `program` into a callable:
      forward     jit(program(xp, *inputs))
      grad        jit(grad(program)) of a scalar program; `by_hand` is the derivative
      train_step  jit(program(xp, grad, *inputs)); `by_hand` has the backward written out
      scan        jit(program(xp, scan, *inputs)) with the library's `scan` (a Python loop
                  where it has none)
      scan_grad   jit(grad(program(xp, scan, ...))) with respect to the first input;
                  `by_hand` is the derivative (backpropagation through time)
      compile     each call compiles and runs a new `program(xp, constant)` (a factory)
      cold_start  each call is a new Python process that compiles `program` with a warm cache
      copy        the memory-bandwidth ceiling: copy inputs[0] into inputs[1]
      kernel      jit(program(xp, loops, *inputs)) with the library's `kernels.Loops`;
                  `by_hand` is the hand-written Numba loop
      first_call  each call jits a new instance of a `kernel` program and runs it once
      value_and_grad    jit(value_and_grad(program(xp, loops, ...))) (the models group)
      per_example_grad  jit(vmap(grad(program(xp, loops, ...)), in_axes=(None, 0)))

    `reference_program`, where set, is the oracle instead of the style's: the models group's
    float64 references (model_workloads.py).
    """

    name: str
    title: str
    size: str
    style: str
    program: Callable | None
    inputs: tuple
    by_hand: Callable | None = None
    # Bytes read + written by an ideal implementation; set only where memory traffic, not
    # arithmetic, bounds the speed, so these rows are also read against the copy ceiling.
    bytes_moved: int | None = None
    flops: int | None = None
    rtol: float = 1e-5
    atol: float = 1e-6
    custom_check: Callable[[Any, Any], None] | None = None
    reference_program: Callable[[], Any] | None = None

    def reference(self):
        """NumPy's answer, the oracle every implementation must match."""
        if self.reference_program is not None:
            return self.reference_program()
        if self.style in ("grad", "train_step", "scan_grad"):
            return self.by_hand(np, *self.inputs)
        if self.style == "scan":
            return self.program(np, python_scan, *self.inputs)
        if self.style == "compile":
            return self.program(np, compile_constant(0))(*self.inputs)
        if self.style == "cold_start":
            return self.program(np, COLD_START_CONSTANT)(*self.inputs)
        if self.style == "copy":
            return self.inputs[0].copy()
        if self.style in ("kernel", "first_call"):
            return self.program(np, EAGER_NUMPY, *self.inputs)
        return self.program(np, *self.inputs)

    def check(self, actual, expected) -> None:
        if self.custom_check is not None:
            self.custom_check(actual, expected)
        else:
            assert_matches(actual, expected, self.rtol, self.atol)


# Sizes per scale: quick (a smoke test in seconds), cpu, cpu_smaller (`--smaller`: smaller
# cpu sizes, where fixed costs weigh more; a quarter of the work, the rows' half, as issue
# #15 names them), gpu. The interpret backend
# uses cpu.
SIZES = {
    "bandwidth": {"quick": 2**22, "cpu": 2**25, "cpu_smaller": 2**23, "gpu": 2**28},
    "chain": {"quick": 2**16, "cpu": 2**24, "cpu_smaller": 2**22, "gpu": 2**26},
    "rows": {
        "quick": (256, 256),
        "cpu": (4096, 1024),
        "cpu_smaller": (2048, 1024),
        "gpu": (8192, 8192),
    },
    "matmul_bias_relu": {"quick": 128, "cpu": 1024, "cpu_smaller": 640, "gpu": 4096},
    "matmul": {"quick": 128, "gpu": 4096},
    "mlp": {
        "quick": (64, 784, 128, 10),
        "cpu": (256, 784, 512, 10),
        "cpu_smaller": (64, 784, 512, 10),
        "gpu": (256, 784, 512, 10),
    },
    "grad": {"quick": 10_000, "cpu": 1_000_000, "cpu_smaller": 250_000, "gpu": 1_000_000},
    # batch, inputs, hidden units, time steps
    "rnn": {
        "quick": (8, 16, 32, 10),
        "cpu": (32, 64, 128, 100),
        "cpu_smaller": (8, 64, 128, 100),
        "gpu": (256, 256, 512, 100),
    },
}

FLOAT32_BYTES = 4


def _power_of_two(n: int) -> str:
    return f"2^{n.bit_length() - 1}" if n & (n - 1) == 0 else str(n)


def bandwidth_workload(scale: str, rng) -> Workload:
    n = SIZES["bandwidth"][scale]
    src = rng.standard_normal(n, dtype=np.float32)
    return Workload(
        "bandwidth",
        "memory-bandwidth ceiling: large copy",
        f"{_power_of_two(n)} float32 ({n * FLOAT32_BYTES >> 20} MiB)",
        "copy",
        program=None,
        inputs=(src, np.empty_like(src)),
        bytes_moved=2 * src.nbytes,
        rtol=0,
        atol=0,
    )


def chain_workload(scale: str, rng) -> Workload:
    n = SIZES["chain"][scale]
    x = rng.standard_normal(n, dtype=np.float32)
    return Workload(
        "chain",
        "elementwise chain tanh(x*1.5+0.5)*0.5 + x*x",
        f"{_power_of_two(n)} float32",
        "forward",
        chain,
        (x,),
        bytes_moved=2 * x.nbytes,
    )


def chain_float16_workload(scale: str, rng) -> Workload:
    """The float32 chain in float16: computed in float32, stored in 2 bytes an element, so
    an implementation bound by memory moves half the bytes (read it as GB/s)."""
    n = SIZES["chain"][scale]
    x = rng.standard_normal(n, dtype=np.float32).astype(np.float16)
    return Workload(
        "chain_float16",
        "elementwise chain tanh(x*1.5+0.5)*0.5 + x*x in float16",
        f"{_power_of_two(n)} float16",
        "forward",
        chain,
        (x,),
        bytes_moved=2 * x.nbytes,
        rtol=2e-3,  # a float16 ulp: libm and NumPy may round tanh differently
        atol=2e-3,
    )


# The narrow dtypes (``--group narrow``), next to their float32 rows.
NARROW_WORKLOAD_BUILDERS = {"chain": chain_workload, "chain_float16": chain_float16_workload}


def softmax_workload(scale: str, rng) -> Workload:
    rows, cols = SIZES["rows"][scale]
    x = rng.standard_normal((rows, cols), dtype=np.float32)
    return Workload(
        "softmax",
        "row softmax (max-subtracted)",
        f"{rows}x{cols} float32",
        "forward",
        softmax,
        (x,),
        bytes_moved=2 * x.nbytes,
        rtol=1e-4,
    )


def layer_norm_workload(scale: str, rng) -> Workload:
    rows, cols = SIZES["rows"][scale]
    x = rng.standard_normal((rows, cols), dtype=np.float32)
    gamma = rng.uniform(0.5, 1.5, cols).astype(np.float32)
    beta = rng.uniform(-0.5, 0.5, cols).astype(np.float32)
    return Workload(
        "layer_norm",
        "layer norm over the last axis, with scale and shift",
        f"{rows}x{cols} float32",
        "forward",
        layer_norm,
        (x, gamma, beta),
        bytes_moved=2 * x.nbytes + gamma.nbytes + beta.nbytes,
        rtol=1e-4,
        atol=1e-5,
    )


def matmul_bias_relu_workload(scale: str, rng) -> Workload:
    n = SIZES["matmul_bias_relu"][scale]
    x = rng.standard_normal((n, n), dtype=np.float32)
    # Scaled so the outputs are O(1) and the tolerance means the same at every size.
    w = rng.standard_normal((n, n), dtype=np.float32) / np.float32(np.sqrt(n))
    b = rng.standard_normal(n, dtype=np.float32)
    return Workload(
        "matmul_bias_relu",
        "relu(x @ w + b)",
        f"{n}x{n} @ {n}x{n} float32",
        "forward",
        matmul_bias_relu,
        (x, w, b),
        flops=2 * n**3 + 2 * n * n,
        rtol=1e-4,
        atol=1e-4,
    )


def matmul_workload(scale: str, rng) -> Workload:
    n = SIZES["matmul"][scale]
    a = rng.standard_normal((n, n), dtype=np.float32)
    b = rng.standard_normal((n, n), dtype=np.float32) / np.float32(np.sqrt(n))
    return Workload(
        "matmul",
        "pure float32 matmul (no TF32)",
        f"{n}^3 float32",
        "forward",
        matmul,
        (a, b),
        flops=2 * n**3,
        rtol=1e-4,
        atol=1e-4,
    )


def mlp_workload(scale: str, rng) -> Workload:
    batch, n_in, n_hidden, n_out = SIZES["mlp"][scale]
    params = (
        rng.standard_normal((n_in, n_hidden), dtype=np.float32) * np.float32(np.sqrt(2 / n_in)),
        rng.standard_normal(n_hidden, dtype=np.float32) * np.float32(0.01),
        rng.standard_normal((n_hidden, n_out), dtype=np.float32)
        * np.float32(np.sqrt(1 / n_hidden)),
        rng.standard_normal(n_out, dtype=np.float32) * np.float32(0.01),
    )
    x = rng.uniform(0.0, 1.0, (batch, n_in)).astype(np.float32)
    labels = rng.integers(0, n_out, batch, dtype=np.int32)
    forward_flops = 2 * batch * (n_in * n_hidden + n_hidden * n_out)
    # Backward: d_w2, d_hidden and d_w1 are three more matmuls (no gradient for x).
    backward_flops = 2 * batch * (n_in * n_hidden + 2 * n_hidden * n_out)
    return Workload(
        "mlp_step",
        "MLP training step: relu MLP, softmax cross-entropy, grad, SGD",
        f"batch {batch}x{n_in}, W1 {n_in}x{n_hidden}, W2 {n_hidden}x{n_out} float32",
        "train_step",
        mlp_sgd_step,
        (params, x, labels),
        by_hand=mlp_sgd_step_by_hand,
        flops=forward_flops + backward_flops,
        custom_check=assert_same_sgd_gradients(params),
    )


def grad_workload(scale: str, rng) -> Workload:
    n = SIZES["grad"][scale]
    x = rng.uniform(-3.0, 3.0, n)
    return Workload(
        "grad",
        "grad of sum(sin(x) * x**2)",
        f"{n:.0e} float64".replace("e+0", "e"),
        "grad",
        sin_x_squared_sum,
        (x,),
        by_hand=sin_x_squared_sum_grad_by_hand,
        bytes_moved=2 * x.nbytes,
        rtol=1e-9,
        atol=1e-9,
    )


def _rnn_inputs(scale: str, rng):
    batch, n_in, n_hidden, steps = SIZES["rnn"][scale]
    # Recurrent weights of spectral radius ~0.9 keep the states and gradients in range.
    w = rng.standard_normal((n_hidden, n_hidden), dtype=np.float32)
    w *= np.float32(0.9 / np.sqrt(n_hidden))
    u = rng.standard_normal((n_in, n_hidden), dtype=np.float32) * np.float32(1 / np.sqrt(n_in))
    b = rng.standard_normal(n_hidden, dtype=np.float32) * np.float32(0.1)
    h0 = np.zeros((batch, n_hidden), np.float32)
    xs = rng.standard_normal((steps, batch, n_in), dtype=np.float32)
    size = f"{steps} steps, batch {batch}, {n_in} in, {n_hidden} hidden, float32"
    flops = 2 * steps * batch * (n_hidden * n_hidden + n_in * n_hidden)
    return (w, u, b), h0, xs, size, flops


def rnn_workload(scale: str, rng) -> Workload:
    params, h0, xs, size, flops = _rnn_inputs(scale, rng)
    return Workload(
        "rnn",
        "RNN forward with scan: h = tanh(h W + x U + b) per step, loss = sum(h^2)",
        size,
        "scan",
        rnn_loss,
        (params, h0, xs),
        flops=flops,
        rtol=1e-4,
        atol=1e-4,
    )


def rnn_grad_workload(scale: str, rng) -> Workload:
    params, h0, xs, size, flops = _rnn_inputs(scale, rng)
    return Workload(
        "rnn_grad",
        "grad of the RNN loss through scan (backpropagation through time)",
        size,
        "scan_grad",
        rnn_loss,
        (params, h0, xs),
        by_hand=rnn_loss_grad_by_hand,
        flops=3 * flops,  # the forward pass, and two products per step backward
        rtol=1e-3,
        atol=1e-3,
    )


def dispatch_workload(scale: str, rng) -> Workload:
    return Workload(
        "dispatch",
        "dispatch overhead: jitted x + 1",
        "1 float32",
        "forward",
        add_one,
        (np.ones(1, dtype=np.float32),),
    )


def compile_workload(scale: str, rng) -> Workload:
    return Workload(
        "compile",
        "compile latency: first call of a new 20-op program, warm process, no disk cache",
        "1024 float32",
        "compile",
        make_twenty_op_program,
        (compile_input(),),
        rtol=1e-5,
        atol=1e-5,
    )


def cold_start_workload(scale: str, rng) -> Workload:
    return Workload(
        "cold_start",
        "new process: import, jit, call once, with a warm disk cache",
        "1024 float32",
        "cold_start",
        make_twenty_op_program,
        (compile_input(),),
        rtol=1e-5,
        atol=1e-5,
    )


# In run order: the ceiling first, so the rest can be read against it.
WORKLOAD_BUILDERS = {
    "bandwidth": bandwidth_workload,
    "chain": chain_workload,
    "softmax": softmax_workload,
    "layer_norm": layer_norm_workload,
    "matmul_bias_relu": matmul_bias_relu_workload,
    "matmul": matmul_workload,
    "mlp_step": mlp_workload,
    "grad": grad_workload,
    "rnn": rnn_workload,
    "rnn_grad": rnn_grad_workload,
    "dispatch": dispatch_workload,
    "compile": compile_workload,
    "cold_start": cold_start_workload,
}

GPU_ONLY = {"matmul"}

# Styles whose every call is a new compilation or a new process: each call is its own sample.
SINGLE_CALL_STYLES = ("compile", "cold_start", "first_call")


def workload_names(on_gpu: bool, builders: dict = WORKLOAD_BUILDERS) -> list[str]:
    return [name for name in builders if on_gpu or name not in GPU_ONLY]


def make_workloads(
    names: list[str],
    on_gpu: bool,
    quick: bool,
    builders: dict = WORKLOAD_BUILDERS,
    smaller: bool = False,
) -> list[Workload]:
    """The `names` workloads of `builders`, in the order of `builders`; `smaller` takes the
    smaller CPU sizes (workloads without such a size keep their own)."""
    scale = "quick" if quick else ("gpu" if on_gpu else "cpu")
    if smaller and scale == "cpu":
        scale = "cpu_smaller"
    # One generator per workload, so a workload's inputs do not depend on which others run.
    return [
        builders[name](scale, np.random.default_rng(index))
        for index, name in enumerate(builders)
        if name in names
    ]
