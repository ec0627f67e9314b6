"""NumPy 2 semantics of the binary ufuncs on random programs (Hypothesis): every pair of
broadcastable shapes (size-1 and empty axes included), every pair of dtypes, Python
scalars (weakly typed, NEP 50). Shapes that NumPy refuses raise ShapeError; dtypes
NumPy has no loop for raise a TypeError; otherwise jit equals NumPy."""

from __future__ import annotations

import warnings

import hypothesis.extra.numpy as hnp
import numpy as np
import pytest
from corpus import BINARY_UFUNCS, DTYPES, NONZERO, POSITIVE, _draw, assert_array_matches
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import numbax
from numbax.ir import dtypes

SETTINGS = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
UFUNC_NAMES = sorted(BINARY_UFUNCS)


def _numpy(fn, *args):
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args)


def _operands(name, shapes, dtype_names, seed):
    rng = np.random.default_rng(seed)
    first = POSITIVE if name == "power" else "normal"
    kinds = (first, BINARY_UFUNCS[name])
    return [
        _draw(rng, s, d, k)
        for s, d, k in zip(shapes, dtype_names, kinds[: len(shapes)], strict=True)
    ]


def _check(name, args):
    ufunc = getattr(np, name)
    try:
        expected = _numpy(ufunc, *args)
    except TypeError:  # NumPy has no loop for these dtypes: numbax must refuse too
        with pytest.raises(TypeError):
            numbax.jit(ufunc, backend="interpret")(*args)
        return
    except ValueError:  # an integer to a negative integer power
        with pytest.raises(numbax.NumbaxError):
            numbax.jit(ufunc, backend="interpret")(*args)
        return
    result = np.result_type(expected)
    if name == "power" and result.kind in "iub":
        # Documented limitation: an integer power needs an exponent known while tracing
        # (``x ** 3``); every operand here is a jit argument, so traced.
        with pytest.raises(numbax.UnsupportedFunctionError):
            numbax.jit(ufunc, backend="interpret")(*args)
        return
    actual = numbax.jit(ufunc, backend="interpret")(*args)
    assert_array_matches(actual, expected, 1.0, f"{name}{tuple(np.shape(a) for a in args)}")


@SETTINGS
@given(
    name=st.sampled_from(UFUNC_NAMES),
    shapes=hnp.mutually_broadcastable_shapes(
        num_shapes=2, min_dims=0, max_dims=4, min_side=0, max_side=3
    ),
    dtype_names=st.tuples(st.sampled_from(DTYPES), st.sampled_from(DTYPES)),
    seed=st.integers(0, 2**32 - 1),
)
def test_binary_ufunc_broadcasting_and_promotion(name, shapes, dtype_names, seed):
    _check(name, _operands(name, shapes.input_shapes, dtype_names, seed))


@SETTINGS
@given(
    name=st.sampled_from(UFUNC_NAMES),
    shape=hnp.array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=3),
    dtype=st.sampled_from(DTYPES),
    scalar=st.sampled_from([2, -3, 0.5, 2.0, True, False]),
    scalar_first=st.booleans(),
)
def test_python_scalar_operands_are_weakly_typed(name, shape, dtype, scalar, scalar_first):
    (array,) = _operands(name, [shape], [dtype], 0)[:1]
    if BINARY_UFUNCS[name] == NONZERO and not scalar:
        scalar = 3
    args = [scalar, array] if scalar_first else [array, scalar]
    if name == "power" and scalar_first:
        args = [abs(scalar) + 1, array]
    _check(name, args)


@SETTINGS
@given(
    name=st.sampled_from(["add", "multiply", "maximum", "equal", "arctan2", "logaddexp"]),
    shapes=st.tuples(
        hnp.array_shapes(min_dims=1, max_dims=3, min_side=2, max_side=4),
        hnp.array_shapes(min_dims=1, max_dims=3, min_side=2, max_side=4),
    ),
)
def test_shapes_numpy_refuses_raise_shape_error(name, shapes):
    args = [np.ones(s) for s in shapes]
    try:
        np.broadcast_shapes(*shapes)
    except ValueError:
        with pytest.raises(numbax.ShapeError) as info:
            numbax.jit(getattr(np, name), backend="interpret")(*args)
        assert str(shapes[0]) in str(info.value) and str(shapes[1]) in str(info.value)
    else:
        _check(name, args)


@pytest.mark.parametrize("a", DTYPES)
@pytest.mark.parametrize("b", DTYPES + ("py_bool", "py_int", "py_float"))
def test_result_type_is_numpy_2(a, b):
    scalars = {"py_bool": True, "py_int": 1, "py_float": 1.0}
    operand = scalars.get(b, np.dtype(b) if b in DTYPES else None)
    expected = dtypes.canonicalize(np.result_type(np.dtype(a), operand))
    assert dtypes.result_type(np.dtype(a), operand) == expected
    x = np.ones(2, a)
    y = scalars[b] if b in scalars else np.ones(2, b)
    out = numbax.jit(lambda x, y: np.maximum(x, y), backend="interpret")(x, y)
    assert out.dtype == expected


def test_narrow_dtypes_are_kept_and_exotic_dtypes_are_refused():
    for narrow in (np.int8, np.int16, np.uint8, np.uint16, np.uint32, np.uint64, np.float16):
        assert dtypes.canonicalize(narrow) == narrow
    for bad in (np.longdouble, np.dtype("U3"), np.dtype("m8[s]"), object):
        with pytest.raises(numbax.NumbaxTypeError) as info:
            dtypes.canonicalize(bad)
        assert "supported dtypes are" in str(info.value)
    out = numbax.jit(lambda x: x + 1, backend="interpret")(np.ones(2, np.int8))
    assert out.dtype == np.int8
