"""``x.shape = s`` on a traced array: NumPy's in-place reshape (NPBench's mandelbrot uses
it). The handle becomes the reshape of its memory, so writes through it and through the
array's other views (which keep their shapes) reach each other as in NumPy; where NumPy
refuses (a view that cannot be read in the new shape without a copy, a NumPy scalar, a
size that does not fit), numbax refuses at the line, and it refuses to change the shape
of a caller's array (an argument), which NumPy would reshape."""

from __future__ import annotations

import numpy as np
import pytest
from tracer_util import assert_error

import numbax
from numbax.ir.errors import InPlaceUpdateError, ShapeError


def reshaped_then_written(a):
    x = a * 1.0
    x.shape = (2, 3)
    x[1] = 5.0
    return x


def views_keep_their_shapes(a):
    x = a + 0.0
    v = x[:3]
    x.shape = (2, 3)
    x[1] = 5.0  # not in v
    x[0, 1] = 7.0  # in v
    v[0] = -1.0  # in x
    return v.copy(), x.copy()


def a_strided_view_gains_an_axis(a):
    x = (a + 0.0).reshape(3, 4)
    v = x[:, :2]
    v.shape = (3, 2, 1)  # no copy needed: NumPy allows it
    v[1, 1, 0] = 9.0
    v += 1
    return x.copy(), v.copy()


def chained_with_an_unknown_dimension(a):
    x, y = a + 0.0, a * 2.0
    x.shape = y.shape = (3, -1)
    x[0] += y[1]
    return x.copy(), y.copy()


def a_view_of_the_argument(a):
    v = a.reshape(2, 3)
    v.shape = (3, 2)
    v[0] = 1.0  # written back to the caller's array
    return v.sum()


def there_and_back(a):
    x = np.zeros(6)
    x.shape = (2, 3)
    x.shape = 6
    x[:] = a
    return x


@pytest.mark.parametrize(
    "f",
    [
        reshaped_then_written,
        views_keep_their_shapes,
        a_strided_view_gains_an_axis,
        chained_with_an_unknown_dimension,
        a_view_of_the_argument,
        there_and_back,
    ],
)
@pytest.mark.parametrize("backend", ["interpret", "cpu"])
def test_in_place_reshape_is_numpy(f, backend):
    n = 12 if f is a_strided_view_gains_an_axis else 6
    want_arg, got_arg = np.arange(float(n)), np.arange(float(n))
    want = f(want_arg)
    got = numbax.jit(f, backend=backend)(got_arg)
    for g, w in zip(*(r if isinstance(r, tuple) else (r,) for r in (got, want)), strict=True):
        assert np.shape(g) == np.shape(w)
        np.testing.assert_array_equal(g, w)
    np.testing.assert_array_equal(got_arg, want_arg)


def a_view_that_would_need_a_copy(a):
    v = (a + 0.0).reshape(3, 4)[:, :2]
    v.shape = (6,)
    return v


def a_transposed_array(a):
    x = (a + 0.0).reshape(3, 4).T
    x.shape = 12
    return x


def a_numpy_scalar(a):
    s = a.sum()
    s.shape = (1,)
    return s


def a_size_that_does_not_fit(a):
    x = a + 0.0
    x.shape = (5,)
    return x


@pytest.mark.parametrize(
    ("f", "error", "says"),
    [
        (a_view_that_would_need_a_copy, ShapeError, "incompatible shape for in-place"),
        (a_transposed_array, ShapeError, "incompatible shape for in-place"),
        (a_numpy_scalar, InPlaceUpdateError, "is a scalar, not an array"),
        (a_size_that_does_not_fit, ShapeError, "cannot reshape array of size 12"),
    ],
)
def test_where_numpy_refuses_numbax_refuses_at_the_line(f, error, says):
    a = np.arange(12.0)
    with pytest.raises((AttributeError, ValueError)):
        f(a.copy())  # NumPy's refusal
    assert_error(error, numbax.jit(f, backend="interpret"), a, says=(says,))


def test_the_shape_of_an_argument_is_refused_at_the_line():
    def f(a):
        a.shape = (2, 3)
        return a.sum()

    for transform in (numbax.jit, numbax.grad, numbax.vmap):
        x = np.arange(6.0) if transform is not numbax.vmap else np.arange(12.0).reshape(2, 6)
        assert_error(
            InPlaceUpdateError, transform(f), x, says=("sets the shape of its argument 0",)
        )


def test_an_array_of_an_enclosing_trace_keeps_its_shape_in_a_loop_body():
    def f(a):
        x = a + 0.0

        def body(i, carry):
            x.shape = (2, 3)
            return carry

        return numbax.lax.fori_loop(0, 2, body, a)

    assert_error(
        InPlaceUpdateError, numbax.jit(f, backend="interpret"), np.arange(6.0),
        says=("nested trace",),
    )  # fmt: skip
