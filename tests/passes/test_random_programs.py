"""Random well-typed programs through the whole pipeline give the interpreter's answer
on the program as traced, and typecheck after every pass.

Programs are drawn while they are traced: each step picks an operation and operands
among the values computed so far (elementwise maths, broadcasting, scalar and array
constants, NaN-sensitive identities, reductions over random axes, reshapes,
transposes, matmuls, selects, nested jit calls, integer and boolean detours, indexing,
``cond``). Inputs sometimes hold NaN, infinities
and signed zeros.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from passes_util import assert_same_values, trace

import numbax
from numbax import passes
from numbax.passes import fusion
from numbax.passes.manager import run_pipeline
from numbax.passes.rewrite import subjaxprs
from numbax.passes.verify import check_fused
from numbax.tracer.control_flow import cond

SHAPES = [(3, 4), (4,), (2, 3, 4), (1, 4), (3, 1), ()]
SCALARS = [0.0, -0.0, 1.0, -1.0, 2.0, 0.5, 3.0]
SPECIALS = [0.0, -0.0, np.nan, np.inf, -np.inf]


@numbax.jit(backend="interpret")  # tracing compiles it: keep that cheap
def _jitted_helper(v):
    return np.tanh(v) * 2.0 + v


def _pick(data, values, where="operand"):
    return values[data.draw(st.integers(0, len(values) - 1), label=where)]


def _pair(data, values):
    """Two values whose shapes broadcast together (the second may be the first)."""
    a = _pick(data, values)
    partners = [v for v in values if _broadcastable(a.shape, v.shape)]
    return a, _pick(data, partners)


def _broadcastable(s, t) -> bool:
    try:
        np.broadcast_shapes(s, t)
        return True
    except ValueError:
        return False


def _unary(data, values):
    x = _pick(data, values)
    op = data.draw(
        st.sampled_from(
            ["tanh", "sin", "exp_tanh", "abs", "neg", "sqrt_abs", "square", "cube", "relu", "jit"]
        )
    )
    return {
        "tanh": np.tanh, "sin": np.sin, "exp_tanh": lambda v: np.exp(np.tanh(v)),
        "abs": np.abs, "neg": lambda v: -v, "sqrt_abs": lambda v: np.sqrt(np.abs(v)),
        "square": lambda v: v**2, "cube": lambda v: v**3.0,
        "relu": lambda v: np.maximum(v, 0.0), "jit": _jitted_helper,
    }[op](x)  # fmt: skip


def _binary(data, values):
    a, b = _pair(data, values)
    op = data.draw(st.sampled_from(["add", "sub", "mul", "div", "max", "where"]))
    if op == "add":
        return a + b
    if op == "sub":
        return a - b
    if op == "mul":
        return a * b
    if op == "div":
        return a / (1.0 + b * b)
    if op == "max":
        return np.maximum(a, b)
    return np.where(a > b, a, b)


def _with_constant(data, values):
    """Scalar constants (identities the simplifier must and must not apply), arrays."""
    x = _pick(data, values)
    c = data.draw(st.sampled_from(SCALARS))
    op = data.draw(
        st.sampled_from(
            ["add", "radd", "sub", "rsub", "mul", "div", "self_sub", "self_div", "array", "where"]
        )
    )
    if op == "array" and x.ndim:
        return x * np.linspace(-1.0, 1.0, x.shape[-1]).astype(x.dtype)
    if op == "where":
        return np.where(c > 1.0, x, -x)
    return {
        "add": lambda: x + c, "radd": lambda: c + x, "sub": lambda: x - c,
        "rsub": lambda: c - x, "mul": lambda: x * c, "div": lambda: x / 2.0,
        "self_sub": lambda: x - x, "self_div": lambda: x / x, "array": lambda: x * c,
    }[op]()  # fmt: skip


def _reduction(data, values):
    x = _pick(data, values)
    if x.ndim == 0:
        return x + 1.0
    axes = data.draw(st.lists(st.integers(0, x.ndim - 1), min_size=1, max_size=x.ndim, unique=True))
    keepdims = data.draw(st.booleans())
    op = data.draw(st.sampled_from(["sum", "max", "mean", "softmax"]))
    if op == "softmax":
        return numbax.nn.softmax(x, axis=axes[0])
    return getattr(np, op)(x, axis=tuple(axes), keepdims=keepdims)


def _layout(data, values):
    x = _pick(data, values)
    op = data.draw(st.sampled_from(["flatten", "lead1", "inner1", "transpose", "broadcast"]))
    if op == "flatten":
        return x.reshape(-1)
    if op == "lead1":
        return x[None]
    if op == "inner1" and x.ndim:
        return x.reshape(x.shape[:-1] + (1, x.shape[-1]))
    if op == "transpose" and x.ndim:
        return x.transpose(data.draw(st.permutations(range(x.ndim))))
    return np.broadcast_to(x, (2,) + x.shape)


def _matmul(data, values):
    x = _pick(data, values)
    if x.ndim == 0:
        return x * x
    if x.ndim == 1:
        return x @ x
    op = data.draw(st.sampled_from(["weights", "gram"]))
    if op == "gram" and x.ndim == 2:
        return x.T @ x
    weights = np.linspace(-1.0, 1.0, x.shape[-1] * 3).reshape(x.shape[-1], 3).astype(x.dtype)
    return x @ weights


def _other(data, values):
    """Integer and boolean detours, iota, indexing, scans and control flow."""
    x = _pick(data, values)
    if x.ndim == 0:
        return cond(x > 0, lambda v: v * 2.0, lambda v: v - 1.0, x)
    op = data.draw(st.sampled_from(
        ["argmax", "arange", "take", "cumsum", "concat", "slice", "cond", "int", "compare"]
    ))  # fmt: skip
    if op == "argmax":
        return np.argmax(x, axis=-1).astype(x.dtype)
    if op == "arange":
        return x * np.arange(x.shape[-1]).astype(x.dtype)
    if op == "take":
        return np.take(x, np.array([0, x.shape[-1] - 1, 0]), axis=-1)
    if op == "cumsum":
        return np.cumsum(x, axis=-1)
    if op == "concat":
        return np.concatenate([x, -x], axis=-1)
    if op == "slice":
        return x[..., 1:] if x.shape[-1] > 1 else x[..., :1]
    if op == "cond":
        return cond(x.sum() > 0, lambda v: np.tanh(v), lambda v: v * 0.5, x)
    if op == "int":
        return (x * 3.0).astype(np.int32).astype(np.float64).astype(x.dtype)
    return np.where((x > 0.5) | (x < -0.5), x, 0.0).astype(x.dtype)


STEPS = [_unary, _binary, _with_constant, _reduction, _layout, _matmul, _other]


def _program(data, n_steps):
    def program(*inputs):
        values = list(inputs)
        for _ in range(n_steps):
            step = data.draw(st.sampled_from(STEPS), label="step")
            values.append(step(data, values))
        extra = _pick(data, values, "extra output")
        return values[-1], extra

    return program


def _inputs(data, dtype):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    shapes = data.draw(st.lists(st.sampled_from(SHAPES), min_size=1, max_size=3), label="shapes")
    specials = data.draw(st.booleans(), label="specials")
    arrays = []
    for shape in shapes:
        array = rng.standard_normal(shape) * 2.0
        if specials and array.size:
            flat = array.reshape(-1)
            flat[rng.integers(0, flat.size, 2)] = rng.choice(SPECIALS, 2)
        arrays.append(np.asarray(array, dtype))
    return arrays


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data())
def test_random_programs_keep_their_meaning(data):
    dtype = data.draw(st.sampled_from([np.float64, np.float32]), label="dtype")
    inputs = _inputs(data, dtype)
    traced = trace(_program(data, data.draw(st.integers(1, 8), label="steps")), *inputs)
    fused, log = passes.optimize(traced, debug_checks=True)  # typechecks after every pass
    check_fused(fused)
    # Merged sums of sums reassociate; everything else must agree to the last bit.
    tolerance = 1e-9 if dtype == np.float64 else 1e-4
    assert_same_values(traced, fused, inputs, rtol=tolerance, atol=tolerance)
    assert all(e.prim.name in ("kernel", "cond") for e in fused.eqns)
    # Fusion itself never duplicates an expensive producer.
    cleaned, _ = run_pipeline(passes.PIPELINE[:2], traced, dump_dir=None, debug_checks=False)
    assert _expensive_ops(fusion.run(cleaned)[0].jaxpr) <= _expensive_ops(cleaned.jaxpr)


def _expensive_ops(jaxpr) -> Counter:
    found = Counter(e.prim.name for e in jaxpr.eqns if e.prim.expensive)
    for eqn in jaxpr.eqns:
        for sub in subjaxprs(eqn):
            found += _expensive_ops(sub)
    return found
