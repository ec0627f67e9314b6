"""The mistakes users make under jit, and numbax's answer to each: a numbax error class
(exported from ``numbax``) whose message names the operation, the user's file:line and
the fix. Never a bare AttributeError, never a wrong answer."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import numbax
from numbax.ir.errors import UnsupportedAttributeError


def line_of(fn, snippet: str) -> str:
    """``file:line`` of the first line of ``fn``'s source containing ``snippet``."""
    lines, first = inspect.getsourcelines(fn)
    offset = next(k for k, line in enumerate(lines) if snippet in line)
    return f"{inspect.getsourcefile(fn)}:{first + offset}"


def jit(fn, **kwargs):
    return numbax.jit(fn, backend="interpret", **kwargs)


def raises_at(error, fn, snippet, *args, match_all=()):
    """Call ``fn(*args)``; it must raise ``error`` pointing at the line with ``snippet``."""
    with pytest.raises(error) as info:
        fn(*args)
    message = str(info.value)
    assert line_of(getattr(fn, "fun", fn), snippet) in message, message
    for text in match_all:
        assert text in message, f"{text!r} not in {message!r}"
    return message


X = np.arange(6.0).reshape(2, 3)


def branch_on_data(x):
    if x.sum() > 0:  # the mistake
        return x
    return -x


def convert_int(x):
    return np.zeros(int(x[0, 0]))  # the mistake


def convert_float(x):
    return float(x.max()) * x  # the mistake


def convert_item(x):
    return x * x.sum().item()  # the mistake


@pytest.mark.parametrize(
    "fn, snippet, operation",
    [
        (branch_on_data, "if x.sum()", "bool()"),
        (convert_int, "int(x[0, 0])", "int()"),
        (convert_float, "float(x.max())", "float()"),
        (convert_item, ".item()", ".item()"),
    ],
    ids=["bool", "int", "float", "item"],
)
def test_concretization_error(fn, snippet, operation):
    raises_at(
        numbax.ConcretizationError,
        jit(fn),
        snippet,
        X,
        match_all=[operation, "numpy.where", "static_argnums", "inside jit"],
    )


def test_concretization_error_is_a_type_error():
    assert issubclass(numbax.ConcretizationError, TypeError)


def test_conversion_works_on_concrete_static_values():
    # The fix the message suggests: mark the configuration value static.
    @jit
    def scale(x, n):
        return x * float(n) if n > 1 else x

    assert np.array_equal(jit(scale.fun, static_argnums=1)(X, 3), X * 3.0)


def test_asarray_of_tracer():
    def fn(x):
        return np.asarray(x) + 1  # the mistake

    raises_at(
        numbax.TracerArrayConversionError,
        jit(fn),
        "np.asarray(x)",
        X,
        match_all=["numpy.asarray", "outside the jitted function"],
    )


def test_array_conversion_of_a_tracer():
    # np.array([x[0, 0], 2.0]) is a traced array now (tests/tracer/test_inplace.py);
    # asking NumPy itself for an ndarray of a traced value is still the mistake.
    def fn(x):
        return np.asarray(x) * x[0]  # the mistake: a NumPy array of a traced value

    message = raises_at(numbax.TracerArrayConversionError, jit(fn), "np.asarray(", X)
    assert "numpy.asarray" in message


def test_leaked_tracer_used_after_its_trace():
    leaked = []

    def keep(x):
        leaked.append(x)  # the mistake
        return x * 2

    jit(keep)(X)

    def use_later():
        return leaked[0] + 1  # the use

    raises_at(
        numbax.LeakedTracerError,
        use_later,
        "leaked[0] + 1",
        match_all=["add", "escaped", "Return it"],
    )

    def use_in_another_trace(y):
        return y * leaked[0]  # the use, inside a new trace

    raises_at(
        numbax.LeakedTracerError, jit(use_in_another_trace), "y * leaked[0]", X, match_all=["mul"]
    )


def test_leaked_tracer_converted_later():
    leaked = []
    jit(lambda x: leaked.append(x) or x)(X)

    def convert():
        return float(leaked[0])

    raises_at(numbax.LeakedTracerError, convert, "float(leaked", match_all=["float()"])


CAPTURED = np.zeros((3, 4))


def test_in_place_assignment_into_a_captured_numpy_array():
    # x[0] = 1 on a traced array is functionalized (tests/tracer/test_inplace.py); a
    # NumPy array from outside the function cannot hold a traced value.
    def fn(x):
        CAPTURED[0, 0] = x[0, 0]  # the mistake
        return x

    raises_at(
        numbax.InPlaceUpdateError,
        jit(fn),
        "CAPTURED[0, 0] = x",
        X,
        match_all=["NumPy array", "inside the traced function", "argument"],
    )


def test_ufunc_out_argument_that_is_a_captured_numpy_array():
    def fn(x):
        return np.exp(x, out=CAPTURED)  # the mistake

    raises_at(
        numbax.InPlaceUpdateError,
        jit(fn),
        "np.exp(x, out=",
        X,
        match_all=["numpy.exp", "out=", "np.empty"],
    )


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda x: np.array_str(x), "numpy.array_str"),
        (lambda x: np.linalg.eigvals(x[:, :2]), "numpy.linalg.eigvals"),  # named with its module
        (lambda x: np.linalg.eig(x[:, :2]), "numpy.linalg.eig"),
        (lambda x: np.savez("never-written", x), "numpy.savez"),
        (lambda x: np.isnat(x), "numpy.isnat"),  # a ufunc
        (lambda x: np.var(x, mean=np.mean(x)), "mean"),
        (lambda x: numbax.numpy.einsum("ij", x, out=x), "einsum"),
        (lambda x: np.where(x > 0), "three-argument form"),
        (lambda x: x[x > 0], "numpy.where(mask, x, fill)"),
        (lambda x: np.pad(x, 1, mode="mean"), "mode='mean'"),
        (lambda x: x.astype(int) ** x.astype(int), "Python int exponent"),
    ],
    ids=[
        "array_str",
        "submodule",
        "linalg",
        "savez",
        "isnat",
        "reduction-kwarg",
        "einsum-out",
        "where-1-arg",
        "traced-mask",
        "pad-mode",
        "int-power",
    ],
)
def test_unsupported_function(call, name):
    with pytest.raises(numbax.UnsupportedFunctionError) as info:
        jit(call)(X)
    message = str(info.value)
    assert name in message
    assert f"{__file__}:" in message  # the lambda's line, inside this file


def test_unsupported_ndarray_method_is_named_not_a_bare_attribute_error():
    def fn(x):
        return x.tobytes()  # the mistake

    raises_at(
        numbax.UnsupportedFunctionError, jit(fn), "x.tobytes()", X, match_all=["ndarray.tobytes"]
    )
    # Still an AttributeError, so hasattr/getattr-with-default keep working on tracers.
    assert issubclass(UnsupportedAttributeError, AttributeError)
    got = jit(lambda x: x * (0 if hasattr(x, "tobytes") else 1) + getattr(x, "strides", 2))(X)
    np.testing.assert_array_equal(got, X + 2)


def test_broadcast_shape_mismatch():
    def fn(x, y):
        return x + y  # the mistake

    raises_at(
        numbax.ShapeError,
        jit(fn),
        "x + y",
        np.ones((2, 3)),
        np.ones(4),
        match_all=["(2, 3)", "(4,)", "broadcast"],
    )


def test_matmul_shape_mismatch():
    def fn(x, y):
        return x @ y  # the mistake

    raises_at(
        numbax.ShapeError,
        jit(fn),
        "x @ y",
        np.ones((2, 3)),
        np.ones((4, 5)),
        match_all=["matmul", "(2, 3)", "(4, 5)"],
    )


@pytest.mark.parametrize(
    "call, text",
    [
        (lambda x: x.reshape(5, 5), "reshape"),
        (lambda x: np.dot(x, x), "dot"),
        (lambda x: np.concatenate([x, x.T]), "concatenate"),
        (lambda x: np.squeeze(x, 0), "squeeze"),
        (lambda x: np.sum(x, axis=2), "axis 2 is out of bounds"),
        (lambda x: np.max(x[:0], axis=0), "max of an empty axis"),
        (lambda x: np.tensordot(x, x, axes=1), "tensordot"),
        (lambda x: np.einsum("ij,ij->i", x, x.T), "einsum"),
        (lambda x: x.at[0].set(np.ones(4)), ".at[].set"),
    ],
    ids=[
        "reshape",
        "dot",
        "concatenate",
        "squeeze",
        "axis",
        "empty-max",
        "tensordot",
        "einsum",
        "at-set",
    ],
)
def test_other_shape_errors(call, text):
    with pytest.raises(numbax.ShapeError) as info:
        jit(call)(X)
    assert text in str(info.value)
    assert f"{__file__}:" in str(info.value)


def test_shape_error_is_a_value_error():
    # Existing `except ValueError` clauses around NumPy code keep working.
    assert issubclass(numbax.ShapeError, ValueError)


def test_unhashable_static_argument():
    def fn(x, sizes):
        return x * len(sizes)

    with pytest.raises(numbax.StaticArgumentError) as info:
        jit(fn, static_argnums=1)(X, [1, 2])
    message = str(info.value)
    assert "list" in message and "tuple" in message
    assert f"{__file__}:" in message


def test_unsupported_dtype():
    with pytest.raises(numbax.NumbaxTypeError) as info:
        jit(lambda x: x * 2)(np.arange(3).astype("timedelta64[s]"))
    assert "timedelta64" in str(info.value) and ".astype" in str(info.value)


def test_non_array_argument():
    with pytest.raises(numbax.NumbaxTypeError) as info:
        jit(lambda x: x)(object())
    assert "object" in str(info.value)


def test_every_error_class_is_exported():
    for name in ["NumbaxError", "NumbaxTypeError", "ShapeError", "ConcretizationError",
                 "TracerArrayConversionError", "LeakedTracerError", "InPlaceUpdateError",
                 "UnsupportedFunctionError", "StaticArgumentError", "GradientError",
                 "SerializationError", "TypecheckError", "ScalarOverflowError",
                 "AxisError"]:  # fmt: skip
        cls = getattr(numbax, name)
        assert issubclass(cls, numbax.NumbaxError) and name in numbax.__all__


def add_huge(a):
    return a + 2**40  # the mistake


def subtract_huge(a):
    return a - 2**31  # the mistake


def set_huge(a):
    return a.at[0].set(2**40)  # the mistake


def set_infinity(a):
    return a.at[1].set(float("inf"))  # the mistake


def full_huge(a):
    return a + numbax.numpy.full(3, 2**40, np.int32)  # the mistake


def maximum_huge(a):
    return np.maximum(a, 2**40)  # the mistake


def numpy_set(a, value):
    a = a.copy()
    a[0] = value
    return a


@pytest.mark.parametrize(
    "fn, snippet, value, numpy_equivalent",
    [
        (add_huge, "2**40", 2**40, lambda a: a + 2**40),
        (subtract_huge, "2**31", 2**31, lambda a: a - 2**31),
        (set_huge, "set(2**40)", 2**40, lambda a: numpy_set(a, 2**40)),
        (set_infinity, "float(", "inf", lambda a: numpy_set(a, float("inf"))),
        (full_huge, "full(3", 2**40, lambda a: np.full(3, 2**40, np.int32)),
        (maximum_huge, "np.maximum(a", 2**40, lambda a: np.maximum(a, 2**40)),
    ],
    ids=["add", "subtract", "at_set", "at_set_inf", "full", "maximum"],
)
def test_python_scalar_out_of_the_dtypes_range(fn, snippet, value, numpy_equivalent):
    a = np.ones(3, np.int32)
    with pytest.raises(OverflowError):  # the oracle: NumPy 2 raises too
        numpy_equivalent(a)
    message = raises_at(
        numbax.ScalarOverflowError, jit(fn), snippet, a, match_all=[str(value), "int32"]
    )
    assert "NEP 50" in message


def test_scalar_overflow_is_an_overflow_error():
    assert issubclass(numbax.ScalarOverflowError, OverflowError)


@pytest.mark.parametrize("value", [2**70, 2**63, -(2**63) - 1])
def test_python_int_argument_beyond_int64(value):
    def fn(x):
        return x + 1

    with pytest.raises(numbax.ScalarOverflowError) as info:
        jit(fn)(value)  # the call
    message = str(info.value)
    assert str(value) in message and "int64" in message
    assert line_of(test_python_int_argument_beyond_int64, "jit(fn)(value)") in message


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")  # np.matrix's own
def test_matrix_argument_is_refused():
    m = np.matrix([[1.0, 2.0], [3.0, 4.0]])
    for transform in (jit, numbax.grad, numbax.vmap):
        with pytest.raises(numbax.NumbaxError) as info:
            transform(lambda x: (x * x).sum())(m)
        assert "numpy.matrix" in str(info.value) and "np.asarray(x)" in str(info.value)


def test_masked_array_is_refused_on_every_call():
    masked = np.ma.array([1.0, 2.0, 3.0], mask=[False, True, False])

    class Tagged(np.ndarray):
        pass

    f = jit(lambda x: x.sum())
    # Other arguments seen first (a plain array, an accepted subclass) change nothing.
    assert f(np.ones(3)) == 3.0
    assert f(np.ones(3).view(Tagged)) == 3.0
    for _ in range(2):
        with pytest.raises(numbax.NumbaxTypeError) as info:
            f(masked)
        assert "MaskedArray" in str(info.value) and "filled" in str(info.value)


def test_subclass_that_redefines_numpy_functions_is_refused():
    class WithUnits(np.ndarray):
        def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
            return NotImplemented

    with pytest.raises(numbax.NumbaxTypeError) as info:
        jit(lambda x: x * 2)(np.ones(2).view(WithUnits))
    assert "WithUnits" in str(info.value) and "__array_ufunc__" in str(info.value)


def test_string_argument_is_told_to_be_static():
    def fn(x, mode):
        return x

    with pytest.raises(numbax.NumbaxTypeError) as info:
        jit(fn)(X, "relu")
    message = str(info.value)
    assert "'relu'" in message and "static_argnums" in message and "static_argnames" in message
    assert ".astype" not in message
    np.testing.assert_array_equal(jit(fn, static_argnames="mode")(X, "relu"), X)


def test_object_array_argument_names_the_object_dtype():
    with pytest.raises(numbax.NumbaxTypeError) as info:
        jit(lambda x: x)(np.array([1, None], dtype=object))
    assert "dtype object" in str(info.value)


def zeros_of_traced(n):
    return np.zeros(n)  # the mistake


def full_of_traced(n):
    return np.full(n, 2.0)  # the mistake


def numbax_zeros_of_traced(n):
    return numbax.numpy.zeros(n)  # the mistake


def reshape_to_traced(n):
    return np.ones(3).reshape(n)  # the mistake


@pytest.mark.parametrize(
    "fn, snippet",
    [
        (zeros_of_traced, "np.zeros(n)"),
        (full_of_traced, "np.full(n"),
        (numbax_zeros_of_traced, "numpy.zeros(n)"),
        (reshape_to_traced, "reshape(n)"),
    ],
    ids=["np.zeros", "np.full", "numbax.numpy.zeros", "ndarray.reshape"],
)
def test_traced_shape_is_a_concretization_error(fn, snippet):
    raises_at(numbax.ConcretizationError, jit(fn), snippet, 3, match_all=["static_argnums"])


def test_a_type_error_of_the_users_own_is_left_alone():
    def fn(x):
        try:
            int(x)
        except TypeError:
            pass  # a probe for concreteness, as libraries do
        raise TypeError(f"unrelated to {x!r}")

    with pytest.raises(TypeError) as info:
        jit(fn)(1.0)
    assert not isinstance(info.value, numbax.NumbaxError)
    assert "unrelated" in str(info.value)


# A 0-d array and axis=: NumPy lets ufunc reductions take an int axis of 0 or -1 (they
# reduce nothing) and sees a 0-d array as shape (1,) in argmax/argmin/cumsum/take; every
# other out-of-range axis is NumPy's AxisError, named with the axis and ndim.
ZERO_D_ACCEPTED = {
    "max": lambda x: np.max(x, axis=0),
    "min": lambda x: np.min(x, axis=-1),
    "sum": lambda x: np.sum(x, axis=0),
    "prod": lambda x: np.prod(x, axis=-1, keepdims=True),
    "argmax": lambda x: np.argmax(x, axis=0),
    "argmin": lambda x: np.argmin(x, axis=-1),
    "cumsum": lambda x: np.cumsum(x, axis=0),
    "take": lambda x: np.take(x, np.array([0, 0]), axis=0),
    "squeeze": lambda x: np.squeeze(x, axis=0),
}
OUT_OF_RANGE_AXES = {
    "max of 0-d, tuple axis": (lambda x: np.max(x, axis=(0,)), (), 0),
    "mean of 0-d": (lambda x: np.mean(x, axis=0), (), 0),
    "std of 0-d": (lambda x: np.std(x, axis=-1), (), -1),
    "flip of 0-d": (lambda x: np.flip(x, axis=0), (), 0),
    "moveaxis of 0-d": (lambda x: np.moveaxis(x, 0, 0), (), 0),
    "sum": (lambda x: np.sum(x, axis=2), (3, 2), 2),
    "max": (lambda x: np.max(x, axis=-3), (3, 2), -3),
    "argmax": (lambda x: np.argmax(x, axis=1), (3,), 1),
    "cumsum": (lambda x: np.cumsum(x, axis=1), (3,), 1),
    "take_along_axis": (lambda x: np.take_along_axis(x, np.zeros((3,), int), axis=1), (3,), 1),
    "concatenate": (lambda x: np.concatenate([x, x], axis=1), (3,), 1),
    "stack": (lambda x: np.stack([x, x], axis=2), (3,), 2),
    "squeeze": (lambda x: np.squeeze(x, axis=1), (3,), 1),
    "swapaxes": (lambda x: np.swapaxes(x, 0, 2), (3, 2), 2),
}


@pytest.mark.parametrize("name", ZERO_D_ACCEPTED)
def test_zero_d_axis_zero_where_numpy_accepts_it(name):
    fn, x = ZERO_D_ACCEPTED[name], np.array(2.5)
    expected = fn(x)
    got = jit(fn)(x)
    assert np.shape(got) == np.shape(expected)
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("name", OUT_OF_RANGE_AXES)
def test_out_of_range_axis_is_numpys_axis_error(name):
    fn, shape, axis = OUT_OF_RANGE_AXES[name]
    x = np.ones(shape)
    with pytest.raises(np.exceptions.AxisError):
        fn(x)  # the oracle refuses too
    with pytest.raises(numbax.AxisError) as info:
        jit(fn)(x)
    assert isinstance(info.value, np.exceptions.AxisError) and isinstance(info.value, IndexError)
    message = str(info.value)
    assert f"axis {axis}" in message and "dimension" in message
    assert f"{__file__}:" in message
    assert info.value.axis == axis


def test_an_error_after_the_function_returned_names_the_users_call():
    """``grad``'s wrapper is numbax's own frame: the line named is the user's call."""

    def doubled(x):
        return x * 2.0

    with pytest.raises(numbax.GradientError) as info:
        numbax.grad(doubled)(X)  # the call
    test = test_an_error_after_the_function_returned_names_the_users_call
    assert line_of(test, "# the call") in str(info.value), str(info.value)


@pytest.mark.parametrize(
    ("call", "says"),
    [
        (lambda x: np.array2string(x), "numbax.debug.print"),
        (lambda x: np.array_repr(x), "numbax.debug.print"),
        (lambda x: np.savetxt("never-written.txt", x), "numbax.debug.callback"),
        (lambda x: np.isnat(x), "datetime64"),
        (lambda x: np.is_busday(x), "datetime64"),
    ],
    ids=["array2string", "array_repr", "savetxt", "isnat", "is_busday"],
)
def test_functions_refused_for_a_reason_say_it(call, says):
    with pytest.raises(numbax.UnsupportedFunctionError) as info:
        numbax.jit(call, backend="interpret")(np.ones(3))
    message = str(info.value)
    assert says in message and f"{__file__}:" in message, message


def _size(x):
    return x.shape[1] + (x.sum() > 1e9).astype(int)  # 3, but traced


@pytest.mark.parametrize(
    ("fn", "snippet", "operation"),
    [
        (lambda x: np.zeros(_size(x)), "np.zeros(", "numpy.zeros"),
        (lambda x: np.ones((2, _size(x))), "np.ones(", "numpy.ones"),
        (lambda x: np.empty(_size(x)), "np.empty(", "numpy.empty"),
        (lambda x: np.full(_size(x), 1.0), "np.full(", "numpy.full"),
        (lambda x: np.eye(_size(x)), "np.eye(", "numpy.eye"),
        (lambda x: np.identity(_size(x)), "np.identity(", "numpy.identity"),
        (lambda x: x.reshape(_size(x), -1), "x.reshape(", "reshape"),
        (lambda x: np.broadcast_to(x[0], (_size(x), 3)), "np.broadcast_to(", "broadcast_to"),
        (lambda x: np.linspace(0.0, 1.0, _size(x)), "np.linspace(", "linspace"),
    ],
    ids="zeros ones empty full eye identity reshape broadcast_to linspace".split(),
)
def test_a_traced_size_is_refused_as_a_shape_that_must_be_static(fn, snippet, operation):
    message = raises_at(
        numbax.ConcretizationError,
        jit(fn),
        snippet,
        X,
        match_all=[operation, "shape must be static", "static_argnums"],
    )
    assert "Python index" not in message and "numpy.where" not in message


def test_round_of_a_traced_value_is_numpys_round_or_a_numbax_error():
    def to_int(x):
        return x * round(x.sum())  # the mistake: a Python int of a traced value

    def of_an_array(x):
        return round(x, 1)  # NumPy's TypeError too: ndarray has no __round__

    raises_at(numbax.ConcretizationError, jit(to_int), "round(x.sum())", X, match_all=["round()"])
    raises_at(numbax.NumbaxTypeError, jit(of_an_array), "round(x, 1)", X, match_all=["numpy.round"])

    def with_digits(x):  # a NumPy scalar's round(s, n) is numpy.round(s, n)
        return x * round(x.sum() / 7, 2) + np.round(x / 3, 1) + round(x[0, 1].astype(int), -1)

    want = with_digits(X)
    got = jit(with_digits)(X)
    np.testing.assert_array_equal(got, want)
    assert got.dtype == want.dtype
    # In an eager transform the value is known: round(x) is the Python int NumPy gives.
    np.testing.assert_array_equal(numbax.grad(lambda x: x.sum() * round(x.sum()))(X), X * 0 + 15)


def test_nditer_over_a_traced_array_is_refused_by_name():
    def fn(x):
        total = 0.0
        for value in np.nditer(x):  # the mistake
            total = total + value
        return total

    raises_at(
        numbax.UnsupportedFunctionError, jit(fn), "np.nditer(x)", X, match_all=["numpy.nditer"]
    )


def test_a_scipy_ufunc_is_named_by_its_module():
    special = pytest.importorskip("scipy.special")

    def fn(x):
        return special.j0(x)  # the mistake: a SciPy ufunc numbax.scipy.special does not have

    message = raises_at(
        numbax.UnsupportedFunctionError,
        jit(fn),
        "special.j0(x)",
        X,
        match_all=["scipy.special.j0"],
    )
    assert "numpy.j0" not in message
