"""The dtypes: NumPy 2 (NEP 50) promotion against ``np.result_type``, bfloat16 against
JAX's table, short names in the printer and the serializer, Python scalars weak and
checked, and NumPy's result dtypes for division, transcendental functions and sums."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import numbax
from numbax.ir import dtypes, serialize

NUMPY_DTYPES = [
    np.dtype(name)
    for name in (
        "bool",
        "int8",
        "int16",
        "int32",
        "int64",
        "uint8",
        "uint16",
        "uint32",
        "uint64",
        "float16",
        "float32",
        "float64",
    )
]
PYTHON_SCALARS = [True, 1, 1.0]
needs_bfloat16 = pytest.mark.skipif(dtypes.bfloat16 is None, reason="ml_dtypes is not installed")


@pytest.mark.parametrize(("a", "b"), itertools.product(NUMPY_DTYPES, NUMPY_DTYPES + PYTHON_SCALARS))
def test_promotion_is_numpys(a, b):
    assert dtypes.result_type(a, b) == np.result_type(a, b)


@pytest.mark.parametrize("dtype", NUMPY_DTYPES)
def test_python_scalars_are_weak_under_jit(dtype):
    x = np.ones(3, dtype)
    for scalar in PYTHON_SCALARS:
        if dtype.kind in "biu" and isinstance(scalar, float):
            continue
        got = numbax.jit(lambda x, s=scalar: x + s)(x)
        assert got.dtype == (x + scalar).dtype


def test_uint8_wraps_around_and_out_of_range_python_ints_raise():
    x = np.array([250, 3, 128], np.uint8)
    for backend in ("interpret", "cpu"):
        f = numbax.jit(lambda x: (x + 10, x * 2, x - 4), backend=backend)
        for got, want in zip(f(x), (x + 10, x * 2, x - 4), strict=True):
            assert got.dtype == np.uint8
            np.testing.assert_array_equal(got, want)
        with pytest.raises(numbax.ScalarOverflowError, match="out of range for uint8"):
            numbax.jit(lambda x: x + 300, backend=backend)(x)
        with pytest.raises(numbax.ScalarOverflowError, match="out of range for uint8"):
            numbax.jit(lambda x: x - (-1), backend=backend)(x)


@pytest.mark.parametrize("dtype", NUMPY_DTYPES)
def test_division_transcendentals_and_sums_have_numpys_dtypes(dtype):
    x = np.ones(4, dtype)
    programs = {
        "divide": lambda x: x / x,
        "sin": np.sin,
        "sqrt": np.sqrt,
        "exp": np.exp,
        "sum": np.sum,
        "prod": lambda x: np.prod(x, axis=0),
        "cumsum": np.cumsum,
        "mean": np.mean,
        "max": np.max,
    }
    for name, fn in programs.items():
        assert numbax.jit(fn, backend="interpret")(x).dtype == fn(x).dtype, name


@needs_bfloat16
def test_bfloat16_promotes_as_jaxs_table():
    bf16 = dtypes.bfloat16
    table = [
        (dtypes.float16, dtypes.float32),
        (dtypes.float32, dtypes.float32),
        (dtypes.float64, dtypes.float64),
        (dtypes.bool_, bf16),
        (dtypes.int8, bf16),
        (dtypes.int64, bf16),
        (dtypes.uint8, bf16),
        (dtypes.uint64, bf16),
        (bf16, bf16),
        (1, bf16),
        (2.5, bf16),
        (True, bf16),
    ]
    for other, want in table:
        assert dtypes.result_type(bf16, other) == want, other
        assert dtypes.result_type(other, bf16) == want, other
    x = np.ones(3, bf16)
    assert numbax.jit(lambda x: x * 2.5 + 1)(x).dtype == bf16
    assert numbax.jit(lambda x: np.sin(x))(x).dtype == bf16
    assert numbax.jit(lambda x, y: x + y)(x, np.ones(3, np.float16)).dtype == np.float32


def _narrow_dtypes():
    names = ["int8", "int16", "uint8", "uint16", "uint32", "uint64", "float16"]
    return [np.dtype(n) for n in names] + ([dtypes.bfloat16] if dtypes.bfloat16 else [])


SHORT = {"int8": "i8", "int16": "i16", "uint8": "u8", "uint16": "u16", "uint32": "u32"}
SHORT.update({"uint64": "u64", "float16": "f16", "bfloat16": "bf16"})


@pytest.mark.parametrize("dtype", _narrow_dtypes(), ids=str)
def test_short_names_print_and_serialize(dtype):
    short = SHORT[dtype.name]
    assert dtypes.short_name(dtype) == short and dtypes.FROM_SHORT_NAME[short] == dtype
    constant = np.arange(3).astype(dtype)
    closed = numbax.make_jaxpr(lambda x: x * 3 + constant)(np.ones(3, dtype))
    assert f"{short}[3]" in str(closed)
    loaded = serialize.loads(serialize.dumps(closed))
    assert str(loaded) == str(closed)
    for before, after in zip(closed.consts, loaded.consts, strict=True):
        assert after.dtype == before.dtype
        np.testing.assert_array_equal(after.astype(np.float64), before.astype(np.float64))


def test_unsupported_dtypes_name_the_supported_ones():
    for bad in (np.longdouble, np.dtype("U2"), np.dtype("M8[s]")):
        with pytest.raises(numbax.NumbaxTypeError, match="uint8-uint64, float16, bfloat16"):
            dtypes.canonicalize(bad)
        with pytest.raises(numbax.NumbaxTypeError):
            numbax.jit(lambda x: x)(np.zeros(2, bad))


@pytest.mark.parametrize("dtype", _narrow_dtypes(), ids=str)
def test_folding_and_simplification_keep_dtypes(dtype):
    """Constant folding and simplification never change a result's dtype (the
    pipeline's typecheck would fail); values equal the interpreter's."""
    from numbax import passes

    c = np.arange(1, 4).astype(dtype)
    closed = numbax.make_jaxpr(lambda x: (x * 1 + c * 2) - (c - c) + x.astype(dtype) * 2)(c)
    optimized, _ = passes.optimize(closed, debug_checks=True)
    out_dtypes = [v.aval.dtype for v in optimized.jaxpr.outvars]
    assert out_dtypes == [dtype]
    got = numbax.jit(lambda x: (x * 1 + c * 2) - (c - c) + x.astype(dtype) * 2)(c)
    want = numbax.jit(
        lambda x: (x * 1 + c * 2) - (c - c) + x.astype(dtype) * 2, backend="interpret"
    )(c)
    assert got.dtype == want.dtype == dtype
    np.testing.assert_array_equal(got.astype(np.float64), want.astype(np.float64))
