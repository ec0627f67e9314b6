"""Bitwise operators and ufuncs (``&``, ``|``, ``^``, ``~``, ``<<``, ``>>``, their
reflected and in-place forms, ``np.bitwise_*``, ``np.invert``, shifts, ``np.logical_xor``)
against NumPy on every backend: bitwise on integers, logical on bools, NEP 50 promotion
with Python ints, NumPy's results for shift counts outside the bit width, under vmap and
under grad (a zero derivative through the integer path). Floats are a numbax TypeError
naming the ufunc and the dtype, as NumPy's own TypeError does."""

from __future__ import annotations

import numpy as np
import pytest

import numbax
from numbax import numpy as xnp
from numbax.ir.dtypes import canonicalize

# A NumPy constant on the left makes the tracer's reflected operators and
# __array_ufunc__ run (closed over by the programs below, so it is not an argument).
LEFT = np.array([3, -7, 12, 1], np.int64)


def binary_program(x, y):
    """Every binary form, with array, Python-int and NumPy-constant operands."""
    z = (x ^ y) | 0  # the in-place forms, on an integer array of the result's shape
    z ^= x
    z &= y
    z |= 5
    z <<= 2
    z >>= 1
    return [
        x & y, x | y, x ^ y, x << y, x >> y, z,
        np.bitwise_and(x, y), np.bitwise_or(x, y), np.bitwise_xor(x, y),
        np.left_shift(x, y), np.right_shift(x, y), np.logical_xor(x, y),
        xnp.bitwise_xor(x, y), xnp.left_shift(x, y), xnp.right_shift(x, y),
        np.bitwise_left_shift(x, y), np.bitwise_right_shift(x, y),
        x ^ 3, 6 ^ x, x & 5, 5 | x, x << 2, 1 << x, x >> 1, 100 >> x, x ^ True,
        LEFT ^ x, LEFT << x, LEFT >> x, np.bitwise_and(LEFT, x),
    ]  # fmt: skip


def unary_program(x):
    return [~x, np.invert(x), np.bitwise_not(x), xnp.invert(x), xnp.bitwise_not(x), ~~x]


def extremes(dtype, shape, rng):
    """Values with every bit pattern that matters to a shift: the dtype's limits, -1, 0, 1
    and random ones."""
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    info = np.iinfo(dtype)
    special = np.array([info.min, info.max, -1, 0, 1, info.min + 1, 2**20 + 3, -5], dtype)
    values = rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)
    flat = values.reshape(-1)
    flat[: min(flat.size, special.size)] = special[: flat.size]
    return values


def counts(dtype, shape, rng):
    """Shift counts from -70 to 69: negative, inside and beyond 32 and 64 bits."""
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    wanted = np.array([0, 1, 31, 32, 33, 63, 64, 65, -1, -32, -64, -70, 7], dtype)
    values = rng.integers(-70, 70, shape).astype(dtype)
    flat = values.reshape(-1)
    flat[: min(flat.size, wanted.size)] = wanted[: flat.size]
    return values


def assert_same(actual, expected, where=""):
    """Same values and dtype (NumPy's int8 for a bool shifted included)."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.dtype == canonicalize(expected.dtype), (where, actual.dtype, expected.dtype)
    np.testing.assert_array_equal(actual, expected, err_msg=str(where))


def assert_all_same(actual, expected):
    assert len(actual) == len(expected)
    for k, (got, want) in enumerate(zip(actual, expected, strict=True)):
        assert_same(got, want, f"output {k}")


def test_xor_of_integer_arrays_is_bitwise(backend):
    """Regression: ``^`` on integers used to compute a logical xor ([False False False])."""
    f = numbax.jit(lambda a, b: a ^ b, backend=backend)
    out = backend.to_host(f(np.array([6, 5, 12]), np.array([3, 1, 10])))
    assert_same(out, np.array([5, 4, 6]))


# (x dtype, y dtype): equal, mixed (NumPy promotes), bools (logical; shifts in int8).
DTYPE_PAIRS = [
    (np.int32, np.int32),
    (np.int64, np.int64),
    (np.int32, np.int64),
    (np.bool_, np.bool_),
    (np.bool_, np.int32),
]


@pytest.mark.parametrize(("x_dtype", "y_dtype"), DTYPE_PAIRS, ids=lambda d: np.dtype(d).name)
def test_binary_operators_and_ufuncs_match_numpy(x_dtype, y_dtype, backend, rng):
    # y broadcasts against x: (2, 1, 4) with (3, 4).
    x = extremes(x_dtype, (2, 1, 4), rng)
    y = counts(y_dtype, (3, 4), rng)
    with np.errstate(all="ignore"):
        expected = binary_program(x, y)
    actual = backend.to_host(numbax.jit(binary_program, backend=backend)(x, y))
    assert_all_same(actual, expected)


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.bool_], ids=lambda d: np.dtype(d).name)
def test_unary_invert_matches_numpy(dtype, backend, rng):
    x = extremes(dtype, (3, 4), rng)
    actual = backend.to_host(numbax.jit(unary_program, backend=backend)(x))
    assert_all_same(actual, unary_program(x))


@pytest.mark.parametrize("dtype", [np.int32, np.int64], ids=lambda d: np.dtype(d).name)
def test_shift_by_every_count_around_the_bit_width(dtype, backend):
    """Every count from -130 to 129 for the limits and small values: NumPy gives 0 (left)
    or the sign (right) outside [0, bits), where LLVM and C leave the shift undefined."""
    info = np.iinfo(dtype)
    x = np.array([info.min, info.max, -1, 1, 5, -6], dtype)[:, None]
    s = np.arange(-130, 130, dtype=dtype)[None, :]

    def shifts(x, s):
        return x << s, x >> s, x << 64, x >> 64, x << -1, x >> -1, x >> 31, x << 33

    actual = backend.to_host(numbax.jit(shifts, backend=backend)(x, s))
    assert_all_same(actual, shifts(x, s))


def test_python_int_operands_follow_nep50(backend):
    """A Python int takes the array's dtype; a Python int with a bool array is int64."""
    i32 = np.array([1, -2, 7], np.int32)
    mask = np.array([True, False, True])

    def f(i, m):
        return i ^ 3, 40 >> i, i << 40, m ^ 3, 3 << m, m & 1, m | True, m ^ True, ~m

    actual = backend.to_host(numbax.jit(f, backend=backend)(i32, mask))
    assert_all_same(actual, f(i32, mask))


def test_operations_on_constants_fold_to_numpy_results(backend):
    """Constant operands are folded with the primitives' NumPy references."""
    base = np.array([1, -8, 3], np.int64)
    count = np.array([3, 64, -1], np.int64)

    def f(x):
        return x + xnp.left_shift(base, count), x + xnp.right_shift(base, count), x ^ (base ^ 6)

    x = np.arange(3, dtype=np.int64)
    actual = backend.to_host(numbax.jit(f, backend=backend)(x))
    assert_all_same(actual, [x + (base << count), x + (base >> count), x ^ (base ^ 6)])


def test_logical_xor_is_truthiness_of_any_dtype(backend):
    a = np.array([1.5, 0.0, -2.0, 0.0])
    b = np.array([0, 0, 3, 1], np.int32)

    def f(a, b):
        return np.logical_xor(a, b), np.logical_xor(b, 2), np.logical_xor(a > 0, True)

    actual = backend.to_host(numbax.jit(f, backend=backend)(a, b))
    assert_all_same(actual, f(a, b))


FLOAT_CASES = {
    "xor": ("bitwise_xor", lambda x: x ^ x),
    "and_python_int": ("bitwise_and", lambda x: x & 1),
    "reflected_or": ("bitwise_or", lambda x: 1 | x),
    "invert": ("invert", lambda x: ~x),
    "lshift": ("left_shift", lambda x: x << 1),
    "reflected_rshift": ("right_shift", lambda x: 2 >> x),
    "np_bitwise_xor": ("bitwise_xor", lambda x: np.bitwise_xor(x, 3)),
    "np_bitwise_not": ("invert", lambda x: np.bitwise_not(x)),
    "np_left_shift": ("left_shift", lambda x: np.left_shift(x, 1)),
    "mixed_int_and_float": ("bitwise_and", lambda x: np.bitwise_and(np.arange(3), x)),
}


@pytest.mark.parametrize(("ufunc", "op"), FLOAT_CASES.values(), ids=FLOAT_CASES)
def test_floats_are_a_type_error_naming_the_ufunc_and_dtype(ufunc, op):
    with pytest.raises(TypeError):
        op(np.ones(3))  # NumPy refuses floats too
    with pytest.raises(numbax.NumbaxTypeError, match=rf"numpy\.{ufunc} .*float64") as info:
        numbax.jit(op, backend="interpret")(np.ones(3))
    assert f"{__file__}:" in str(info.value)  # the user's line


def test_vmap_of_bitwise_program_matches_a_loop(backend, rng):
    x = extremes(np.int64, (3, 4), rng)
    s = counts(np.int64, (4, 3), rng)

    def f(x, s):
        return (x ^ s) >> 2, x << s, ~x & s, s >> x[0]

    batched = numbax.jit(numbax.vmap(f, in_axes=(0, 1)), backend=backend)
    actual = backend.to_host(batched(x, s))
    per_example = [f(x[k], s[:, k]) for k in range(3)]
    expected = [np.stack([outs[j] for outs in per_example]) for j in range(4)]
    assert_all_same(actual, expected)


def bitwise_and_float_loss(x, i):
    """Float math mixed with bitwise ops on integer data, some of it made from ``x``."""
    weights = (((i ^ 3) << 2) >> 1 | (i & 5)).astype(np.float64)
    truncated = x.astype(np.int64)  # piecewise constant: no derivative flows through it
    mixed = (truncated ^ i) << 1
    return np.sum(np.sin(x) * weights + x * mixed + (~i >> 1))


def test_grad_through_integer_bitwise_path_is_zero(backend, rng):
    x = rng.integers(-3, 4, 6) + rng.uniform(0.2, 0.8, 6)  # away from integer jumps
    i = rng.integers(-9, 9, 6)
    grad = numbax.jit(numbax.grad(bitwise_and_float_loss), backend=backend)
    actual = backend.to_host(grad(x, i))
    step = 1e-6
    expected = np.array(
        [
            (bitwise_and_float_loss(x + step * e, i) - bitwise_and_float_loss(x - step * e, i))
            / (2 * step)
            for e in np.eye(x.size)
        ]
    )
    assert actual.dtype == np.float64
    np.testing.assert_allclose(actual, expected, rtol=1e-6, atol=1e-6)
