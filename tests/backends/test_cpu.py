"""The cpu backend against the interpreter, program by program.

Every test compiles a program on the cpu backend and on the interpreter (the oracle) and
compares the results: same tree, dtypes and shapes, values within floating-point
reassociation (NaN where NaN). Each compile costs Numba ~0.3-1 s here, so a test checks
many things with one program. ``parallel`` lowers the size from which kernels use all
cores, so the ``prange`` code paths run on small arrays too.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
import switches
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import numbax
from numbax import backends
from numbax.backends import cpu
from numbax.backends.cpu import calibration, contraction
from numbax.backends.cpu.executable import CpuExecutable
from numbax.tracer import lax

F32, F64, I32, I64, BOOL = (np.dtype(t) for t in ("float32", "float64", "int32", "int64", "bool"))


def _tolerance(dtype) -> float:
    return 2e-5 if dtype == F32 else 1e-12


def assert_matches(actual, expected, rtol=None):
    actual_leaves, _ = numbax.tree_flatten(actual)
    expected_leaves, _ = numbax.tree_flatten(expected)
    assert len(actual_leaves) == len(expected_leaves)
    for k, (got, want) in enumerate(zip(actual_leaves, expected_leaves, strict=True)):
        got, want = np.asarray(got), np.asarray(want)
        assert got.dtype == want.dtype and got.shape == want.shape, (k, got, want)
        if want.dtype.kind == "f":
            tolerance = rtol if rtol is not None else _tolerance(want.dtype)
            np.testing.assert_allclose(got, want, rtol=tolerance, atol=tolerance, err_msg=str(k))
        else:
            np.testing.assert_array_equal(got, want, err_msg=str(k))


def check(fn, *args, rtol=None, **jit_options):
    """Run ``fn`` on the cpu backend and on the interpreter; return the cpu executable."""
    expected = numbax.jit(fn, backend="interpret", **jit_options)(*args)
    jitted = numbax.jit(fn, backend="cpu", **jit_options)
    assert_matches(jitted(*args), expected, rtol)
    executable = jitted.lower(*args).compile().executable
    assert isinstance(executable, CpuExecutable)
    return executable


@pytest.fixture
def parallel(monkeypatch):
    """Kernels of 16 elements and more use prange (the chunked and parallel paths), and
    matrix products are split into blocks of rows however small."""
    monkeypatch.setattr(cpu, "PARALLEL_MIN_WORK", 16)
    monkeypatch.setattr(contraction, "PARALLEL_FLOPS", 0)
    monkeypatch.setattr(contraction, "SPLITTABLE_FLOPS", 0)
    monkeypatch.setattr(calibration.CELL, "value", 0)  # split at run time too
    monkeypatch.setattr(contraction, "MIN_ROWS", 1)


# --- coverage: every cpu rule table covers its primitives (tests/test_rule_tables.py) -----------


def test_cpu_is_the_default_backend(monkeypatch):
    monkeypatch.setattr(numbax.config.config, "backend", None)
    assert backends.default_backend_name() == "cpu"
    assert backends.get_backend("cpu") is cpu.backend


# --- elementwise ------------------------------------------------------------------------------


def _float_program(x, y, positive):
    unary = [
        lax.neg, lax.exp, lax.tanh, lax.logistic, lax.sin, lax.cos, lax.expm1, lax.abs,
        lax.sign, lax.floor, lax.ceil, lax.round, lax.stop_gradient,
    ]  # fmt: skip
    on_positive = [lax.log, lax.log1p, lax.sqrt, lax.rsqrt]
    binary = [lax.add, lax.sub, lax.mul, lax.div, lax.max, lax.min, lax.atan2, lax.rem]
    compare = [lax.eq, lax.ne, lax.lt, lax.le, lax.gt, lax.ge]
    out = [f(x) for f in unary] + [f(positive) for f in on_positive]
    out += [f(x, y) for f in binary] + [f(x, y) for f in compare]
    out += [lax.pow(positive, y), lax.select(lax.gt(x, y), x, y)]
    out += [lax.integer_pow(x, n) for n in (0, 1, 2, 3, 7, -2)]
    out += [lax.convert_element_type(x, d) for d in (F32, F64, I32, I64, BOOL)]
    return out


@pytest.mark.parametrize("dtype", [F32, F64], ids=str)
def test_float_primitives(dtype, rng):
    x = (rng.standard_normal(37) * 3).astype(dtype)
    y = (rng.standard_normal(37) * 3).astype(dtype)
    x[:4] = [2.5, 3.5, -2.5, 0.5]  # round half to even
    positive = rng.uniform(0.1, 5.0, 37).astype(dtype)
    check(_float_program, x, y, positive)


def test_float_special_values():
    specials = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 1e300, 5e-324])
    x, y = np.meshgrid(specials, specials)

    def program(x, y):
        outs = [lax.max(x, y), lax.min(x, y), lax.div(x, y), lax.rem(x, y), lax.sign(x)]
        outs += [lax.reduce_max(x, (1,)), lax.reduce_min(x, (0,)), lax.argmax(x, 1)]
        return outs + [lax.argmin(y, 0), lax.select(lax.lt(x, y), x, y), lax.eq(x, y)]

    check(program, x, y)


@pytest.mark.parametrize("dtype", [I32, I64], ids=str)
def test_integer_primitives(dtype, rng):
    x = rng.integers(-50, 50, 41).astype(dtype)
    y = rng.integers(-7, 7, 41).astype(dtype)
    y[:3] = [0, -1, 0]  # division by zero gives 0; INT_MIN / -1 wraps
    x[:3] = [7, np.iinfo(dtype).min, -7]

    def program(x, y):
        binary = [lax.add, lax.sub, lax.mul, lax.div, lax.rem, lax.max, lax.min]
        binary += [lax.bitwise_and, lax.bitwise_or, lax.eq, lax.lt, lax.ge]
        out = [f(x, y) for f in binary] + [lax.neg(x), lax.abs(x), lax.sign(x)]
        out += [lax.logical_not(x), lax.integer_pow(y, 3), lax.integer_pow(y, 9)]
        out += [lax.select(lax.gt(x, y), x, y), lax.mul(x, np.asarray(1 << 20, dtype))]
        return out + [lax.convert_element_type(x, d) for d in (F32, F64, I32, I64, BOOL)]

    check(program, x, y)


def test_bool_primitives(rng):
    x, y = rng.random(23) > 0.5, rng.random(23) > 0.5

    def program(x, y):
        out = [lax.bitwise_and(x, y), lax.bitwise_or(x, y), lax.logical_not(x)]
        out += [lax.max(x, y), lax.min(x, y), lax.eq(x, y), lax.lt(x, y), lax.select(x, y, x)]
        out += [lax.reduce_sum(x, (0,)), lax.reduce_prod(x, (0,)), lax.reduce_max(y, (0,))]
        return out + [lax.convert_element_type(x, d) for d in (F32, F64, I32, I64)]

    check(program, x, y)


def test_broadcasting_and_degenerate_shapes(rng):
    def program(a, b, empty, unit, scalar):
        return (
            np.tanh(a * b) + scalar,  # (3,1,4) x (1,5,1) -> (3,5,4)
            np.exp(empty) * 2.0,  # (0,3)
            empty.sum(axis=0),  # sum over an empty axis: zeros
            empty.sum(axis=1),  # an empty result
            unit * scalar + unit.max(),  # (1,1)
            a.sum() * scalar,  # rank 0
            np.broadcast_to(scalar, (2, 3)),  # a broadcast scalar as an output
            a[:, 0, :, None] * b[0, :, 0],  # (3,4,1) x (5,) -> (3,4,5)
            np.float32(2.0) * scalar,  # a literal folded with a rank-0 input
        )

    args = (
        rng.standard_normal((3, 1, 4)).astype(F32),
        rng.standard_normal((1, 5, 1)).astype(F32),
        np.zeros((0, 3), F32),
        np.full((1, 1), 1.5, F32),
        np.float32(0.75),
    )
    check(program, *args)


def test_inputs_of_every_kind_use_one_compiled_program(rng):
    x = rng.standard_normal((6, 8))
    jitted = numbax.jit(lambda x: np.sin(x) * 2.0 + x, backend="cpu")
    expected = np.sin(x) * 2.0 + x
    np.testing.assert_allclose(jitted(x), expected, rtol=1e-12)
    read_only = x.copy()
    read_only.flags.writeable = False
    strided = np.zeros((6, 16))
    strided[:, ::2] = x
    for variant in (
        strided[:, ::2],  # strided
        np.asfortranarray(x),  # column-major
        read_only,
    ):
        np.testing.assert_allclose(jitted(variant), expected, rtol=1e-12)
    assert jitted.cache_info().traces == 1


# --- reductions -------------------------------------------------------------------------------


# Three programs of these axes, not one: the 28 parallel reductions compiled ~20% slower
# as one program.
_AXES_GROUPS = [[(0,), (1,)], [(2,), (0, 2)], [(1, 2), (0, 1, 2)]]


def _reductions(axes_group, with_arg_reductions: bool):
    def program(x):
        outs = []
        for axes in axes_group:
            outs += [lax.reduce_sum(x, axes), lax.reduce_max(x, axes), lax.reduce_min(x, axes)]
            outs.append(lax.reduce_prod(x, axes))
        if with_arg_reductions:
            outs += [lax.argmax(x, a, I32) for a in range(3)] + [lax.argmin(x, 1)]
        return outs

    return program


@pytest.mark.parametrize("dtype", [F32, I32], ids=str)
def test_reductions_over_every_axis(dtype, rng, parallel):
    x = rng.uniform(0.5, 1.5, (3, 5, 7)) if dtype.kind == "f" else rng.integers(-3, 4, (3, 5, 7))
    x = x.astype(dtype)
    if dtype.kind == "f":
        x[1, 2, 3] = np.nan  # NaN propagates through max/min; argmax picks the first NaN
    for k, axes_group in enumerate(_AXES_GROUPS):
        check(_reductions(axes_group, with_arg_reductions=k == len(_AXES_GROUPS) - 1), x)


def test_large_reductions_run_in_parallel(rng):
    """Above the parallel threshold: rows in parallel, a full sum split into chunks."""
    x = rng.standard_normal((512, 130)).astype(F32)

    def program(x):
        total = np.sum(np.sin(x) * x)
        return total, x.max(), np.argmax(x.ravel()), x.sum(axis=1), x.sum(axis=0), x / total

    executable = check(program, x, rtol=1e-4)
    assert "prange" in executable.source
    assert "nbx.add_reassoc" in executable.source  # vectorisable accumulation


def _softmax(x, axis):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def _layer_norm(x, gamma, beta):
    mean = np.mean(x, axis=-1, keepdims=True)
    centered = x - mean
    variance = np.mean(centered * centered, axis=-1, keepdims=True)
    return centered / np.sqrt(variance + 1e-5) * gamma + beta


@pytest.mark.parametrize("threshold", ["serial", "parallel"])
def test_softmax_and_layer_norm(threshold, rng, request):
    if threshold == "parallel":
        request.getfixturevalue("parallel")
    x = rng.standard_normal((6, 9)).astype(F32)
    gamma, beta = rng.standard_normal(9).astype(F32), rng.standard_normal(9).astype(F32)

    def program(x, gamma, beta):
        rows, columns, whole = _softmax(x, -1), _softmax(x, 0), _softmax(x, None)
        norms = _layer_norm(x, gamma, beta), _layer_norm(x.T, beta[:6], gamma[:6])
        return rows, columns, whole, *norms

    executable = check(program, x, gamma, beta)
    reductions = [k for k in executable.kernels if k.kind == "reduction"]
    assert len(reductions) == 5  # each softmax and layer norm is one kernel


# --- contractions -----------------------------------------------------------------------------


@pytest.mark.parametrize("threshold", ["serial", "parallel"])
def test_contractions(threshold, rng, request):
    if threshold == "parallel":
        request.getfixturevalue("parallel")

    def program(x, w, b, batch, v):
        return (
            np.maximum(x @ w + b, 0.0),  # matmul + bias + relu: one kernel
            x.T @ x,  # a transposed operand, read without a copy
            x @ w[:, :2] @ w[:, :2].T,  # the contraction result itself
            batch @ batch.transpose(0, 2, 1),  # batched
            np.einsum("bij,jk->bki", batch, w),  # permuted output
            np.tensordot(batch, batch, axes=([0, 2], [0, 2])),
            v @ v,  # a rank-0 result
            w @ v,  # matrix-vector
        )

    args = (
        rng.standard_normal((4, 6)),
        rng.standard_normal((6, 5)),
        rng.standard_normal(5),
        rng.standard_normal((3, 4, 6)),
        rng.standard_normal(5),
    )
    if threshold == "serial":
        check(program, *args)
    check(program, *[a.astype(F32) for a in args], rtol=1e-4)


def test_integer_and_bool_contractions(rng):
    a, b = rng.integers(-5, 5, (3, 4)), rng.integers(-5, 5, (4, 2))
    check(lambda a, b: (a @ b, a.astype(np.int32) @ b.astype(np.int32)), a, b)
    check(lambda a, b: lax.dot_general(a, b, (((1,), (0,)), ((), ()))), a > 0, b > 0)


def test_mlp_training_step(rng):
    params = (
        rng.standard_normal((12, 16)).astype(F32) * 0.3,
        np.zeros(16, F32),
        rng.standard_normal((16, 5)).astype(F32) * 0.3,
        np.zeros(5, F32),
    )
    x = rng.standard_normal((8, 12)).astype(F32)
    labels = rng.integers(0, 5, 8)

    def loss(params, x, labels):
        w1, b1, w2, b2 = params
        logits = np.maximum(x @ w1 + b1, 0.0) @ w2 + b2
        log_probs = logits - numbax.nn.logsumexp(logits, axis=-1, keepdims=True)
        return -np.mean(np.take_along_axis(log_probs, labels[:, None], axis=1))

    def step(params, x, labels):
        grads = numbax.grad(loss)(params, x, labels)
        return tuple(p - 0.1 * g for p, g in zip(params, grads, strict=True))

    check(step, params, x, labels, rtol=1e-4)


# --- data movement ----------------------------------------------------------------------------


def test_indexing_and_data_movement(rng):
    def program(x, i, v, start):
        return (
            np.take(x, i, axis=1),  # gather; negative indices wrap in the front end
            lax.gather(x, i[:, None], 0),  # out-of-range indices clamp
            x.at[:, 1].add(v),  # scatter
            lax.scatter(x, np.array([2, 0, 2]), np.ones((3, 5)), 0, "add"),  # repeats add up
            lax.scatter(x, np.array([1, 1]), np.ones((2, 5)), 0, "set"),
            lax.scatter(x, np.array([0, 3]), x[:2] * 2.0, 0, "mul"),
            lax.scatter(x, np.array([0, 0]), x[2:4], 0, "max"),
            lax.scatter(x, np.array([3, 1]), x[:2], 0, "min"),
            lax.cumsum(x, 1), lax.cumsum(x, 0, reverse=True),
            np.concatenate([x, x[:2] * 2.0], axis=0),
            np.pad(x, ((1, 2), (0, 3)), constant_values=1.5),
            x[1:4:2, ::-2], x.T, x.reshape(5, 4), x[0, 0], x[None, :, None],
            lax.dynamic_slice(x, (start, start), (2, 3)),  # starts clamp to fit
            lax.dynamic_update_slice(x, v[:2, None] * np.ones((2, 2)), (start, start)),
        )  # fmt: skip

    x = rng.standard_normal((4, 5))
    check(program, x, np.array([0, -1, 7, 2]), rng.standard_normal(4), np.int64(3))
    check(program, x, np.array([1, 2, -9, 0]), rng.standard_normal(4), np.int64(-2))


def test_iota_and_cumsum_dtypes(rng):
    def program(x, n):
        ramp = lax.iota(I32, (3, 4), 1) * n + lax.iota(I64, (3, 4), 0).astype(np.int32)
        return ramp, lax.cumsum(ramp, 1), np.arange(4.0) * x, lax.cumsum(x, 0)

    check(program, rng.standard_normal(4).astype(F32), np.int32(3))


# --- control flow and calls ---------------------------------------------------------------------


def test_control_flow(rng):
    def program(x, n, k):
        y = numbax.fori_loop(0, n, lambda i, c: c * 0.9 + np.sin(c), x)
        z = numbax.switch(k, [lambda a: a * 2.0, lambda a: a - 1.0, lambda a: -a], y)
        total, partial = numbax.scan(lambda c, v: (c + v, c * v), z[0], z)
        _, backwards = numbax.scan(lambda c, v: (c, v * 2.0), 0.0, z, reverse=True)
        w = numbax.while_loop(lambda v: v[0] < 50.0, lambda v: v * 2.0 + 1.0, np.abs(z))
        swapped = numbax.fori_loop(0, n, lambda i, ab: (ab[1], ab[0] + 1.0), (x, -x))
        return total, partial, backwards, w, swapped

    x = rng.uniform(0.5, 1.0, 5)
    for n, k in ((3, 1), (0, 7), (2, -4)):  # switch indices clamp into range
        check(program, x, np.int64(n), np.int64(k))


def test_nested_jit_and_custom_vjp(rng):
    inner = numbax.jit(lambda v: np.tanh(v) * 2.0)

    @numbax.custom_vjp
    def clipped(v):
        return np.clip(v, -1.0, 1.0)

    clipped.defvjp(lambda v: (clipped(v), None), lambda _, g: (g,))

    def program(x):
        return inner(inner(x) + 1.0), clipped(x * 3.0), numbax.grad(lambda v: clipped(v).sum())(x)

    check(program, rng.standard_normal(6))


# --- the generated code ------------------------------------------------------------------------


def test_fused_chain_calls_vectorisable_math_only():
    def chain(x):
        return np.tanh(x * 1.5 + 0.5) * 0.5 + x * x

    executable = check(chain, np.linspace(-3, 3, 4096, dtype=F32))
    source = executable.source
    assert "math." not in source
    assert "fm.tanh_f32(" in source
    assert len(executable.kernels) == 1
    assert len(re.findall(r"^ +for ", source, re.M)) == 1  # one loop over the whole array
    llvm = executable.llvm_ir()
    assert "@tanhf" not in llvm and "x float>" in llvm  # no libm call; SIMD code
    assert executable.asm()


def test_generated_source_is_named_and_commented():
    def layer(x, w):
        return np.maximum(x @ w, 0.0)

    executable = numbax.jit(layer).lower(np.ones((2, 3)), np.ones((3, 4))).compile()
    source = executable.source
    # The launcher takes its kernels' addresses first (``units``), then the arguments.
    assert "def layer(kernel_addresses, a, b):" in source
    assert "def elementwise_" in source  # the epilogue, a function of its own
    assert "max" in source and "test_cpu.py" in source  # each statement names its eqn
    assert "{ lambda ; a:f64[2,3] b:f64[3,4]." in source  # the program, in the docstring
    assert [k.kind for k in executable.kernels] == ["contraction"]


def test_unfused_programs_compile_eqn_by_eqn(rng):
    """Without the passes every eqn is a kernel of its natural kind, and calls (here one
    body called three times, once inside a branch) are written where they are called."""
    inner = numbax.jit(lambda v: np.sin(v) * 2.0)

    def program(x):
        y = inner(inner(x)) @ x.T
        return _softmax(y, -1), numbax.cond(y.sum() > 0, inner, lambda v: v, y)

    x = rng.standard_normal((3, 4))
    closed = numbax.make_jaxpr(program)(x)
    executable = cpu.backend.compile(closed, "plain", optimize=False)
    assert "jit_call" in executable.source  # the calls, commented where they are written
    expected = numbax.ir.eval_jaxpr(closed.jaxpr, closed.consts, x)
    assert_matches(list(executable(x)), expected)


def test_a_value_each_branch_assigns_is_read_by_parallel_kernels(parallel, rng):
    """Both branches of a ``cond`` assign its result, so Numba renames the second
    assignment (``d.1``) and the merged value (``d.2``), and its parallel lowering spells
    them ``d_1`` and ``d_2``. The loops reading ``d`` in three kernels once had locals of
    those names too, and Numba's lowering failed (``key already in dictionary``)."""

    def program(flag, x):
        y = numbax.cond(flag > 0, lambda v: v * 2.0, np.tanh, x)
        return (
            np.sum(np.sin(y), axis=0),
            np.max(np.cos(y), axis=1),
            np.sum(np.exp(y)),
            np.min(y * 3.0, axis=0),
        )

    x = rng.standard_normal((64, 64))
    for flag in (1, 0):
        check(program, np.int32(flag), x)


def test_memory_plan_buffers_are_reused(rng):
    def program(x):
        for _ in range(4):
            x = np.cumsum(np.sin(x), axis=0) * 0.5  # cumsum breaks fusion: intermediates
        return x

    executable = check(program, rng.standard_normal((5, 3)))
    assert "buffer_0" in executable.source


# --- random programs ----------------------------------------------------------------------------

_SHAPES = [(3, 4), (4,), (2, 3, 4), (1, 4), (3, 1), ()]


def _random_step(data, values):
    """One operation on values computed so far, drawn while the program is traced."""
    x = data.draw(st.sampled_from(values))
    kind = data.draw(st.sampled_from(["unary", "binary", "reduce", "layout", "matmul", "other"]))
    if kind == "unary":
        name = data.draw(st.sampled_from(["exp", "tanh", "sin", "cos", "log1p", "logistic"]))
        if name == "log1p":
            return np.log1p(np.abs(x))
        return numbax.nn.sigmoid(x) if name == "logistic" else getattr(np, name)(x)
    if kind == "binary":
        partners = [v for v in values if _broadcasts(x.shape, v.shape)]
        y = data.draw(st.sampled_from(partners))
        op = data.draw(st.sampled_from(["add", "multiply", "maximum", "divide", "where"]))
        if op == "divide":
            return x / (1.0 + y * y)
        return np.where(x > y, x, y * 0.5) if op == "where" else getattr(np, op)(x, y)
    if kind == "reduce" and x.ndim:
        axis = data.draw(st.integers(0, x.ndim - 1))
        op = data.draw(st.sampled_from(["sum", "max", "min", "mean", "argmax", "softmax"]))
        if op == "softmax":
            return numbax.nn.softmax(x, axis=axis)
        if op == "argmax":
            return np.argmax(x, axis=axis).astype(x.dtype)
        return getattr(np, op)(x, axis=axis, keepdims=data.draw(st.booleans()))
    if kind == "layout" and x.ndim:
        op = data.draw(st.sampled_from(["transpose", "flatten", "slice", "cumsum", "concat"]))
        if op == "transpose":
            return x.transpose(data.draw(st.permutations(range(x.ndim))))
        if op == "slice":
            return x[..., ::2]
        if op == "cumsum":
            return np.cumsum(x, axis=-1)
        return np.concatenate([x, -x], axis=-1) if op == "concat" else x.reshape(-1)
    if kind == "matmul" and x.ndim:
        weights = np.linspace(-1.0, 1.0, x.shape[-1] * 3).reshape(x.shape[-1], 3)
        return x @ weights.astype(x.dtype)
    return np.sqrt(np.abs(x)) - 1.0


def _broadcasts(s, t) -> bool:
    try:
        np.broadcast_shapes(s, t)
        return True
    except ValueError:
        return False


# NUMBAX_TEST_EXAMPLES=300 runs a longer search (each example is a compile, ~0.3 s).
EXAMPLES = switches.count("NUMBAX_TEST_EXAMPLES", 20)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_random_programs_match_the_interpreter(data):
    dtype = data.draw(st.sampled_from([F32, F64]))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    shapes = data.draw(st.lists(st.sampled_from(_SHAPES), min_size=1, max_size=3))
    inputs = [np.asarray(rng.standard_normal(shape), dtype) for shape in shapes]
    if data.draw(st.booleans()) and inputs[0].size:
        inputs[0].reshape(-1)[0] = data.draw(st.sampled_from([np.nan, np.inf, -np.inf, -0.0]))
    steps = data.draw(st.integers(1, 6))

    def program(*values):
        values = list(values)
        for _ in range(steps):
            values.append(_random_step(data, values))
        return values[-1], data.draw(st.sampled_from(values))

    closed = numbax.make_jaxpr(program)(*inputs)
    with np.errstate(all="ignore"):  # NaN and inf inputs are part of the test
        expected = numbax.ir.eval_jaxpr(closed.jaxpr, closed.consts, *inputs)
    actual = cpu.backend.compile(closed, "random")(*inputs)
    assert_matches(list(actual), expected, rtol=1e-3 if dtype == F32 else 1e-9)


def test_scan_output_that_is_the_incoming_carry_is_stored_before_the_update():
    # The backward pass of a scan emits exactly this: ys[t] = carry entering step t.
    def f(x):
        return numbax.scan(lambda c, r: (c * 2.0 + r, c), x[0], x)

    x = np.array([0.3, -0.7, 1.2])
    expected = numbax.jit(f, backend="interpret")(x)
    for got, want in zip(numbax.jit(f, backend="cpu")(x), expected, strict=True):
        np.testing.assert_array_equal(got, want)


# --- outputs written over other values' buffers, on every backend -------------------------------


def _on(backend, fn, *args):
    return backend.to_host(numbax.jit(fn, backend=backend)(*args))


def test_an_epilogue_output_that_does_not_read_the_product_leaves_it_intact(backend):
    a = np.arange(9.0).reshape(3, 3)
    b, d = a.T + 1.0, np.full((3, 3), 2.0)

    def fn(a, b, d):
        return d * 2.0, (a @ b) * d

    for got, want in zip(_on(backend, fn, a, b, d), fn(a, b, d), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-12)


def test_grad_through_a_product_scaled_by_a_row_max(backend, rng):
    # Its backward pass has a contraction kernel whose first epilogue output does not
    # read the product: the case that used to overwrite the product before it was read.
    def loss(x, y, w):
        return np.sum(((y @ x) * x.max(axis=1, keepdims=True)) @ w)

    x, y, w = rng.standard_normal((3, 3)), rng.standard_normal((3, 3)), rng.standard_normal((3, 2))
    got = _on(backend, numbax.grad(loss), x, y, w)
    step, want = 1e-6, np.zeros_like(x)
    for index in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[index] += step
        down[index] -= step
        want[index] = (loss(up, y, w) - loss(down, y, w)) / (2 * step)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    interpreted = numbax.jit(numbax.grad(loss), backend="interpret")(x, y, w)
    np.testing.assert_allclose(got, interpreted, rtol=1e-12, atol=1e-12)


# Epilogues of one product (p) and another operand (d) with several consumers: outputs
# that read the product, that do not, the product itself, in different orders.
_EPILOGUES = {
    "other first": lambda p, d: (d * 2.0, p * d),
    "product reader first": lambda p, d: (p * d, d * 2.0),
    "two readers": lambda p, d: (p * d, p + 1.0),
    "three, reader last": lambda p, d: (np.sin(d), d - 1.0, np.tanh(p) * d),
    "three, readers apart": lambda p, d: (p - d, d * d, np.exp(-p * p)),
    "product and a reader": lambda p, d: (p, p * d, d + 3.0),
    "reader and product": lambda p, d: (d + 3.0, p * d, p),
    "other dtype": lambda p, d: ((p > d).astype(np.float32), d * 0.5, p + d),
    "chained": lambda p, d: (d * 2.0, (p * d) * 2.0 + p),
}


@pytest.mark.parametrize("order", [0, 1])
@pytest.mark.parametrize("name", list(_EPILOGUES))
def test_matmul_epilogues_with_several_consumers_match_the_interpreter(
    compiled_backend, name, order, rng
):
    epilogue = _EPILOGUES[name]

    def fn(a, b, d):
        outputs = epilogue(a @ b, d)
        return outputs if order == 0 else outputs[::-1]

    size = compiled_backend.size(4, simulated=3)
    a, b = rng.standard_normal((size, 5)), rng.standard_normal((5, size + 1))
    d = rng.standard_normal((size, size + 1))
    expected = numbax.jit(fn, backend="interpret")(a, b, d)
    for got, want in zip(_on(compiled_backend, fn, a, b, d), expected, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_the_only_reader_of_a_product_takes_its_array(rng):
    # In place when provably safe: no second array for (a @ b) * d.
    a, b, d = rng.standard_normal((3, 4)), rng.standard_normal((4, 5)), rng.standard_normal((3, 5))
    source = check(lambda a, b, d: (a @ b) * d, a, b, d).source
    assert re.search(r"^\s+\w+ = \w+_dot_\d+$", source, re.MULTILINE), source


def test_an_epilogue_inside_a_loop_body_leaves_the_product_intact(compiled_backend, rng):
    def fn(a, b, d):
        step = lambda i, carry: (carry[1] * 0.5, (carry[0] @ b) * carry[1])  # noqa: E731
        return numbax.fori_loop(0, 3, step, (a, d))

    a, b, d = (rng.standard_normal((3, 3)) for _ in range(3))
    expected = numbax.jit(fn, backend="interpret")(a, b, d)
    for got, want in zip(_on(compiled_backend, fn, a, b, d), expected, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
