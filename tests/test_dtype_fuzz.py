"""Differential fuzzing against NumPy in the narrow and unsigned dtypes: uint8..uint64,
int8, int16, float16 and bfloat16, on the interpreter and the cpu backend.

Hypothesis draws one small random program per dtype (elementwise arithmetic with
wrap-around, bitwise ops, shifts, integer division by zero, comparisons and selects,
casts between the dtypes, reductions with NumPy's accumulator dtypes, and for the floats
transcendental functions, NaN, infinities and float16 overflow), and an example bundles
all of them into one ``jit`` function, so each example compiles once. NumPy is the
oracle for values and dtypes; bfloat16, which NumPy does not promote by NEP 50, is
checked against NumPy's float32 program rounded to bfloat16 after every operation, which
is what NumPy's float16 loops do and what numbax does for both narrow floats (with
sums, products and contractions accumulated in float32 and rounded once).

Integers must match exactly. Floats match within 2 ulps of the narrow dtype after a
transcendental function (computed in float32 by both, then rounded: a float32 ulp apart
can round to neighbouring narrow values) or a sum or product (float32 accumulators, in
other orders: reassociation), exactly otherwise; a value that went through a transcendental
function is never fed to a discontinuous operation (a comparison, a cast to an integer,
floor), where one ulp could change the answer entirely.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import numbax
from numbax.ir import dtypes

BFLOAT16 = dtypes.bfloat16
INTS = ["uint8", "uint16", "uint32", "uint64", "int8", "int16"]
FLOATS = ["float16"] + (["bfloat16"] if BFLOAT16 is not None else [])
SHAPE = (3, 4)


def _dtype(name: str) -> np.dtype:
    return dtypes.canonicalize(name)


def _small_constant(dtype: np.dtype):
    """A Python scalar in ``dtype``'s range (NEP 50 keeps the array's dtype)."""
    if dtype.kind == "u":
        return st.integers(0, 200 if dtype.itemsize == 1 else 1000)
    if dtype.kind == "i":
        return st.integers(-100, 100)
    return st.sampled_from([0.5, -2.0, 3.0, 1e-3, 100.0, 0.0])


# op name -> (how many array operands, whether it takes a Python scalar, for which kinds)
INT_OPS = {
    "add": 2, "subtract": 2, "multiply": 2, "maximum": 2, "minimum": 2,
    "floor_divide": 2, "remainder": 2, "bitwise_and": 2, "bitwise_or": 2, "bitwise_xor": 2,
    "negative": 1, "absolute": 1, "square": 1, "invert": 1,
    "add_scalar": 1, "multiply_scalar": 1, "floor_divide_scalar": 1, "subtract_scalar": 1,
    "left_shift": 1, "right_shift": 1, "where_less": 2,
}  # fmt: skip
FLOAT_OPS = {
    "add": 2, "subtract": 2, "multiply": 2, "divide": 2, "maximum": 2, "minimum": 2,
    "negative": 1, "absolute": 1, "square": 1, "sqrt": 1, "floor": 1,
    "add_scalar": 1, "multiply_scalar": 1, "where_less": 2,
    "exp": 1, "log": 1, "tanh": 1, "sin": 1, "expm1": 1,
}  # fmt: skip
TRANSCENDENTAL = {"exp", "log", "tanh", "sin", "expm1"}
DISCONTINUOUS = {"floor", "where_less", "floor_divide", "remainder"}
REDUCTIONS = ["sum", "max", "min", "prod", "mean", "cumsum", "argmax"]
# Float sums and products, accumulated in float32 in any order (narrow floats too: the
# oracle rounds a narrow float's float32 accumulation once, as numbax does).
REASSOCIATED = {"sum", "mean", "cumsum", "prod"}
ACCUMULATED = ("sum", "cumsum", "prod")


@st.composite
def programs(draw, dtype_name: str):
    """A list of steps ``(op, operand indices, constant)`` over one input of the dtype;
    value 0 is the input, step k makes value k + 1. Ends with a reduction or a cast."""
    dtype = _dtype(dtype_name)
    ops = INT_OPS if dtype.kind in "iu" else FLOAT_OPS
    inexact = [False]  # per value: it went through a transcendental function
    steps = []
    for _ in range(draw(st.integers(2, 5))):
        names = [n for n in ops if not (n in DISCONTINUOUS and all(inexact))]
        op = draw(st.sampled_from(names))
        exact_values = [k for k, bad in enumerate(inexact) if not bad]
        pool = exact_values if op in DISCONTINUOUS else list(range(len(inexact)))
        operands = [draw(st.sampled_from(pool)) for _ in range(ops[op])]
        constant = None
        if op.endswith("_scalar"):
            constant = draw(_small_constant(dtype))
            if op == "floor_divide_scalar" and constant == 0:
                constant = 3
        if op in ("left_shift", "right_shift"):
            constant = draw(st.integers(0, 8 * dtype.itemsize - 1))
        steps.append((op, operands, constant))
        inexact.append(op in TRANSCENDENTAL or any(inexact[k] for k in operands))
    last = len(inexact) - 1
    if draw(st.booleans()):
        ending = draw(st.sampled_from(REDUCTIONS if not inexact[last] else REDUCTIONS[:-1]))
        steps.append((ending, [last], draw(st.sampled_from([None, 0, 1]))))
    elif not inexact[last]:  # a float holding NaN or inf has no integer to become
        targets = INTS + FLOATS if dtype.kind in "iu" else FLOATS
        steps.append(("astype", [last], draw(st.sampled_from(targets))))
    return steps


def _step(op, args, constant, oracle=None):
    """One step, on NumPy arrays or numbax tracers alike (NumPy's functions dispatch).
    For the oracle, an ``Oracle``: how it rounds, and how it treats narrow floats."""
    x = args[0]
    narrow_round = oracle.round if oracle else (lambda v: v)
    if op.endswith("_scalar"):
        if oracle:
            constant = oracle.constant(constant)
        return narrow_round(getattr(np, op[: -len("_scalar")])(x, constant))
    if op in ("left_shift", "right_shift"):
        return getattr(np, op)(x, x.dtype.type(constant))
    if op == "where_less":
        return np.where(x < args[1], x, args[1])
    if op == "astype":
        return x.astype(_dtype(constant))
    if op in REDUCTIONS:
        axis = constant if op != "cumsum" or constant is not None else 0
        if oracle and op in ACCUMULATED and x.dtype == np.float16:
            # In float32, rounded once: what numbax documents (NumPy's float16 loops
            # round the running value after every step along a non-innermost axis, and
            # a running sum can overflow to inf where the float32 one does not).
            return getattr(np, op)(x.astype(np.float32), axis=axis).astype(np.float16)
        return narrow_round(getattr(np, op)(x, axis=axis))
    return narrow_round(getattr(np, op)(*args))


class Oracle:
    """NumPy's program, as the oracle runs it: ``round`` each float result (bfloat16:
    the float32 result to bfloat16), and ``constant``: a Python scalar as NumPy and JAX
    take it, in the array's dtype (a weak type: bfloat16's program computes in float32,
    so its scalars are rounded to bfloat16 first)."""

    def __init__(self, bfloat16: bool = False):
        self.bfloat16 = bfloat16

    def round(self, v):
        v = np.asarray(v)
        if self.bfloat16 and v.dtype == np.float32:
            return v.astype(BFLOAT16).astype(np.float32)
        return v

    def constant(self, c):
        return float(np.asarray(c).astype(BFLOAT16)) if self.bfloat16 else c


def run(steps, x, oracle=None):
    values = [x]
    for op, operands, constant in steps:
        values.append(_step(op, [values[k] for k in operands], constant, oracle))
    return values[-1]


def _bfloat16_oracle(steps, x):
    """NumPy's float32 program, each float32 result rounded to bfloat16 (NumPy's float16
    loops, for bfloat16), and the result dtype float32's with bfloat16 for float32."""
    narrow = Oracle(bfloat16=True)
    if steps and steps[-1][0] == "astype":  # a cast of the bfloat16 value itself
        before = np.asarray(run(steps[:-1], x.astype(np.float32), narrow))
        return before.astype(BFLOAT16).astype(_dtype(steps[-1][2]))
    result = np.asarray(run(steps, x.astype(np.float32), narrow))
    return result.astype(BFLOAT16) if result.dtype == np.float32 else result


def make_input(dtype_name: str, rng) -> np.ndarray:
    dtype = _dtype(dtype_name)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, SHAPE, dtype=dtype, endpoint=True)
    x = rng.standard_normal(SHAPE) * rng.choice([0.5, 4.0, 300.0])
    x.flat[rng.integers(0, x.size, 3)] = rng.choice([np.nan, np.inf, -np.inf, -0.0, 0.0], 3)
    return x.astype(dtype)


def oracle(steps, dtype_name: str, x):
    with np.errstate(all="ignore"):
        if dtype_name == "bfloat16":
            return np.asarray(_bfloat16_oracle(steps, x))
        return np.asarray(run(steps, x, Oracle()))


def _ulp(want: np.ndarray) -> np.ndarray:
    """The spacing of the dtype of ``want`` at each value, in float64."""
    wide = want.astype(np.float64)
    eps = 2.0**-7 if want.dtype == BFLOAT16 else float(np.finfo(want.dtype).eps)
    tiny = 2.0**-14 if want.dtype == np.float16 else 2.0**-126
    return np.maximum(np.abs(wide), tiny) * eps


def assert_same(got, want, inexact: bool, where: str, atol: float = 0.0):
    got = np.asarray(got)
    assert got.dtype == want.dtype, f"{where}: dtype {got.dtype}, NumPy {want.dtype}"
    assert got.shape == want.shape, where
    if want.dtype.kind in "biu":
        np.testing.assert_array_equal(got, want, err_msg=where)
        return
    g, w = got.astype(np.float64), want.astype(np.float64)
    np.testing.assert_array_equal(np.isnan(g), np.isnan(w), err_msg=f"{where}: NaNs")
    finite = np.isfinite(w)
    np.testing.assert_array_equal(g[~finite & ~np.isnan(w)], w[~finite & ~np.isnan(w)], where)
    tolerance = (2.0 if inexact else 0.0) * _ulp(want)[finite] + atol
    if want.dtype.itemsize > 2:  # a float32 or float64 result (mean, a cast): rounding only
        tolerance = np.maximum(tolerance, 1e-6 * np.abs(w[finite]))
    assert np.all(np.abs(g[finite] - w[finite]) <= tolerance), (
        f"{where}: got {g[finite]}, NumPy {w[finite]}"
    )


def _inexact(steps) -> bool:
    return any(op in TRANSCENDENTAL or op in REASSOCIATED for op, _, _ in steps)


def _reassociation_tolerance(steps, name, x) -> float:
    """A float sum's error bound in float32 (both accumulate in float32, in orders that
    differ): n eps32 times the sum of the magnitudes summed. (A product's reassociation
    is within the 2 narrow ulps an inexact result is allowed.)"""
    if not dtypes.is_float(_dtype(name)) or not steps or steps[-1][0] not in REASSOCIATED:
        return 0.0
    if steps[-1][0] == "prod":
        return 0.0
    operand = oracle(steps[:-1], name, x).astype(np.float64)
    magnitudes = np.abs(operand[np.isfinite(operand)])
    return operand.size * 2.0**-23 * float(magnitudes.sum())


DTYPE_NAMES = INTS + FLOATS


@st.composite
def bundles(draw):
    return {name: draw(programs(name)) for name in DTYPE_NAMES}


def check_bundle(bundle, backend, seed):
    rng = np.random.default_rng(seed)
    inputs = [make_input(name, rng) for name in DTYPE_NAMES]
    steps = [bundle[name] for name in DTYPE_NAMES]

    def program(*xs):
        return tuple(run(s, x) for s, x in zip(steps, xs, strict=True))

    results = numbax.jit(program, backend=backend)(*inputs)
    for name, s, x, got in zip(DTYPE_NAMES, steps, inputs, results, strict=True):
        atol = _reassociation_tolerance(s, name, x)
        assert_same(got, oracle(s, name, x), _inexact(s), f"{name} {s}", atol)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(bundles(), st.integers(0, 2**32 - 1))
def test_interpreter_matches_numpy(bundle, seed):
    check_bundle(bundle, "interpret", seed)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(bundles(), st.integers(0, 2**32 - 1))
def test_cpu_matches_numpy(bundle, seed):
    check_bundle(bundle, "cpu", seed)


# --- Python scalars out of a narrow dtype's range: refused as NumPy refuses ------------


def _unique_padded(x):
    return numbax.numpy.unique(x, size=7, fill_value=-9)


OUT_OF_RANGE = [
    # (program, NumPy's own expression for the same thing, the value, the dtype)
    (lambda x: x + 300, None, "300", "uint8"),
    (lambda x: x * -1, None, "-1", "uint16"),
    (lambda x: np.maximum(x, 200), None, "200", "int8"),
    (_unique_padded, lambda x: np.full(2, -9, x.dtype), "-9", "uint8"),
]


@pytest.mark.parametrize(
    ("program", "in_numpy", "value", "dtype"),
    OUT_OF_RANGE,
    ids=["add", "multiply", "maximum", "unique_fill_value"],
)
def test_out_of_range_python_scalars_are_refused(program, in_numpy, value, dtype):
    """NumPy raises OverflowError for each; numbax raises its error naming the value,
    the dtype and the user's line."""
    x = np.arange(5).astype(dtype)
    with pytest.raises(OverflowError):
        (in_numpy or program)(x)
    with pytest.raises(numbax.ScalarOverflowError) as raised:
        numbax.jit(program, backend="interpret")(x)
    message = str(raised.value)
    line = program.__code__.co_firstlineno + (1 if program is _unique_padded else 0)
    assert value in message and dtype in message and f":{line}" in message, message
