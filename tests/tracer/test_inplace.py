"""In-place NumPy under jit: writes into traced arrays are functionalized, arrays the
function creates can be filled, and mutated arguments are written back.

Every program runs twice on copies of the same inputs, with plain NumPy and jitted on
each backend; the results and every argument array afterwards must agree.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import numbax
from numbax.tracer import functionalize

RNG = np.random.default_rng(0)


def heat_1d(u, steps):
    for _ in range(steps):
        u[1:-1] = u[1:-1] + 0.25 * (u[2:] - 2 * u[1:-1] + u[:-2])
    return u.sum()


def jacobi_2d(u):
    for _ in range(3):
        un = u.copy()
        u[1:-1, 1:-1] = 0.25 * (un[2:, 1:-1] + un[:-2, 1:-1] + un[1:-1, 2:] + un[1:-1, :-2])
    return u


def lu_without_pivoting(A):
    n = A.shape[0]
    L = np.eye(n)
    for k in range(n - 1):
        for i in range(k + 1, n):
            f = A[i, k] / A[k, k]
            L[i, k] = f
            A[i, :] -= A[k, :] * f
    return L


def heat_3d(u):
    for _ in range(2):
        un = u.copy()
        u[1:-1, 1:-1, 1:-1] += 0.125 * (
            un[2:, 1:-1, 1:-1] - 2 * un[1:-1, 1:-1, 1:-1] + un[:-2, 1:-1, 1:-1]
            + un[1:-1, 2:, 1:-1] - 2 * un[1:-1, 1:-1, 1:-1] + un[1:-1, :-2, 1:-1]
            + un[1:-1, 1:-1, 2:] - 2 * un[1:-1, 1:-1, 1:-1] + un[1:-1, 1:-1, :-2]
        )  # fmt: skip


def gauss_seidel_2d(u):
    # Each point uses the values already updated above and to its left in this sweep.
    n, m = u.shape
    for i in range(1, n - 1):
        for j in range(1, m - 1):
            u[i, j] = 0.25 * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1])


def cholesky_rows(A):
    n = A.shape[0]
    L = np.zeros_like(A)
    for j in range(n):
        L[j, j] = np.sqrt(A[j, j] - np.dot(L[j, :j], L[j, :j]))
        for i in range(j + 1, n):
            L[i, j] = (A[i, j] - np.dot(L[i, :j], L[j, :j])) / L[j, j]
    return L


def tridiagonal(a, b, c, d):
    # Thomas's algorithm: a forward sweep rewriting c and d in place, then back substitution.
    n = d.size
    c[0] /= b[0]
    d[0] /= b[0]
    for i in range(1, n):
        denominator = b[i] - a[i] * c[i - 1]
        if i < n - 1:
            c[i] /= denominator
        d[i] = (d[i] - a[i] * d[i - 1]) / denominator
    x = np.empty_like(d)
    x[-1] = d[-1]
    for i in range(n - 2, -1, -1):
        x[i] = d[i] - c[i] * x[i + 1]
    return x


def particles(x, v, dt):
    x += dt * v
    v *= 0.5
    return None


def add_out(a, b, c):
    np.add(a, b, out=c)
    np.multiply(c, 2.0, out=c)


def sum_out(x, s):
    np.sum(x, axis=0, out=s)
    return s * 1


def scale_in_place(x):
    x *= 3.0
    x -= 1.0


def filled_by_element(x):
    n = x.shape[0]
    R = np.zeros((n, n))
    R[0, 0] = np.sqrt(x[0])
    for i in range(1, n):
        R[i, i - 1] = x[i] * x[i - 1]
        R[i, i] = np.sqrt(x[i])
    return R


def filled_by_row(a):
    out = np.empty_like(a)
    for i in range(a.shape[0]):
        out[i] = a[i] * (i + 1)
    total = np.zeros(a.shape[1])
    for i in range(a.shape[0]):
        total += out[i]
    return out, total


def integer_array_writes(x):
    x[[0, 2]] = x[[1, 3]] * 10
    x[[0, 0]] += 1.0  # NumPy adds once: the repeated index reads and writes the same value
    x[np.array([-1])] -= 5.0
    return x


def boolean_mask_writes(x):
    x[x < 0] = 0.0  # a traced mask: a select
    keep = np.zeros(x.shape, dtype=bool)  # a mask the function builds: concrete
    keep[::2] = True
    x[keep] *= 2.0
    return x


def basic_index_forms(x):
    x[..., 0] = -1.0
    x[::-1, 1] += np.arange(x.shape[0])
    x[None, 1] = 7.0
    x[:, ::2] *= 2
    x[-1] = x[0]
    return x


def aliases_see_writes(x):
    y = x
    x += 1.0
    z = x.copy()
    z += 100.0  # a copy is a new array: x does not change
    return y * 2, z


def integer_dtype_updates(k):
    k += 3
    k //= 2
    k <<= 1
    k[1] = 2.9  # item assignment casts unsafely, as NumPy does
    return k


def scalars_are_immutable(x):
    s = x.sum()
    t = s
    s += 1.0  # a NumPy scalar: rebinds s, t keeps its value
    total = 0.0
    for i in range(x.shape[0]):
        total += x[i]
    return s, t, total


def zero_dimensional_argument(c, x):
    c += x.sum()


def methods_in_place(x, v):
    """The ndarray methods that rewrite the array: sort and partition (the rows of a view
    too, written through to ``x``), fill and put."""
    x.sort(axis=0)
    x[1:].partition(1, axis=1)
    v.fill(0.5)
    v.put([0, -1], [x[0, 0], 9.0])
    return x.trace() + v.sum()


def _spd(n):
    m = RNG.standard_normal((n, n))
    return m @ m.T + n * np.eye(n)


CASES = {
    "heat_1d": (heat_1d, lambda: [RNG.standard_normal(12), 4], [1]),
    "jacobi_2d": (jacobi_2d, lambda: [RNG.standard_normal((6, 5))], []),
    "lu_without_pivoting": (
        lu_without_pivoting,
        lambda: [RNG.standard_normal((4, 4)) + 4 * np.eye(4)],
        [],
    ),
    "heat_3d": (heat_3d, lambda: [RNG.standard_normal((4, 5, 4))], []),
    "gauss_seidel_2d": (gauss_seidel_2d, lambda: [RNG.standard_normal((4, 5))], []),
    "cholesky_rows": (cholesky_rows, lambda: [_spd(4)], []),
    "tridiagonal": (
        tridiagonal,
        lambda: [
            RNG.standard_normal(5),
            RNG.uniform(4, 5, 5),
            RNG.standard_normal(5),
            RNG.standard_normal(5),
        ],
        [],
    ),  # fmt: skip
    "particles": (particles, lambda: [RNG.standard_normal(5), RNG.standard_normal(5), 0.1], [2]),
    "add_out": (add_out, lambda: [RNG.standard_normal(4), RNG.standard_normal(4), np.zeros(4)], []),
    "sum_out": (sum_out, lambda: [RNG.standard_normal((3, 4)), np.zeros(4)], []),
    "scale_in_place": (scale_in_place, lambda: [RNG.standard_normal((2, 3))], []),
    "filled_by_element": (filled_by_element, lambda: [RNG.uniform(1, 2, 4)], []),
    "filled_by_row": (filled_by_row, lambda: [RNG.standard_normal((3, 4))], []),
    "integer_array_writes": (integer_array_writes, lambda: [RNG.standard_normal(5)], []),
    "boolean_mask_writes": (boolean_mask_writes, lambda: [RNG.standard_normal(6)], []),
    "basic_index_forms": (basic_index_forms, lambda: [RNG.standard_normal((4, 3))], []),
    "aliases_see_writes": (aliases_see_writes, lambda: [RNG.standard_normal(3)], []),
    "integer_dtype_updates": (integer_dtype_updates, lambda: [np.arange(5) * 7 - 9], []),
    "scalars_are_immutable": (scalars_are_immutable, lambda: [RNG.standard_normal(4)], []),
    "methods_in_place": (
        methods_in_place,
        lambda: [RNG.standard_normal((4, 3)), RNG.standard_normal(5)],
        [],
    ),
    "zero_dimensional_argument": (
        zero_dimensional_argument,
        lambda: [np.array(1.5), RNG.standard_normal(3)],
        [],
    ),
}


def _copies(args):
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


def _assert_same(got, want):
    got_leaves, want_leaves = numbax.tree_leaves(got), numbax.tree_leaves(want)
    assert len(got_leaves) == len(want_leaves)
    for g, w in zip(got_leaves, want_leaves, strict=True):
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-12, atol=1e-12)
        assert np.asarray(g).dtype == np.asarray(w).dtype


@pytest.mark.parametrize("name", list(CASES))
def test_jit_matches_numpy_results_and_arguments(name, backend):
    fn, make_args, static = CASES[name]
    args = make_args()
    expected_args = _copies(args)
    expected = fn(*expected_args)
    got_args = _copies(args)
    got = numbax.jit(fn, static_argnums=static, backend=backend.name)(*got_args)
    _assert_same(backend.to_host(got), expected)
    for got_arg, want_arg in zip(got_args, expected_args, strict=True):
        if isinstance(want_arg, np.ndarray):
            np.testing.assert_allclose(got_arg, want_arg, rtol=1e-12, atol=1e-12)


def test_a_second_call_writes_back_again():
    fn = numbax.jit(scale_in_place, backend="interpret")
    x = np.ones(3)
    fn(x)
    fn(x)
    np.testing.assert_array_equal(x, np.full(3, 5.0))


def test_jit_inside_jit_writes_into_the_callers_array():
    inner = numbax.jit(scale_in_place)

    @numbax.jit
    def outer(x):
        inner(x)
        return x + 0

    x = np.ones(3)
    np.testing.assert_array_equal(outer(x), np.full(3, 2.0))
    np.testing.assert_array_equal(x, np.full(3, 2.0))


def test_created_arrays_fold_to_constants_and_keep_their_values():
    @numbax.jit
    def fn(x):
        w = np.zeros(3)
        w[1] = 2.0
        if w[1] > 1:  # a created array's value is known while tracing
            w[2] = len(np.arange(4))
        return x * w

    np.testing.assert_array_equal(fn(np.ones(3)), [0.0, 2.0, 4.0])
    text = numbax.jit(fn.fun).lower(np.ones(3)).as_text()
    assert "dynamic_update_slice" not in text  # folded: nothing traced was written


def test_same_kind_casting_is_refused_as_numpy_refuses_it():
    def fn(k):
        k += 1.5  # the mistake

    with pytest.raises(TypeError, match="same_kind"):
        fn(np.arange(3))
    with pytest.raises(numbax.InPlaceUpdateError, match=r"same_kind(.|\n)*test_inplace.py:"):
        numbax.jit(fn)(np.arange(3))


def test_in_place_op_cannot_grow_its_array():
    def fn(x):
        x += np.ones((2, 3))  # the mistake

    with pytest.raises(ValueError, match="non-broadcastable output"):
        numbax.jit(fn)(np.ones(3))


def test_assigning_a_value_of_the_wrong_shape():
    def fn(x):
        x[0:2] = np.ones(3)  # the mistake

    with pytest.raises(ValueError, match=r"could not broadcast input array from shape \(3,\)"):
        numbax.jit(fn)(np.ones(4))


def test_a_read_only_argument_gets_numpys_error():
    x = np.ones(3)
    x.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        numbax.jit(scale_in_place)(x)


def _write_then_read(a, b):
    a[0] = 100.0
    return b * 2


@pytest.mark.parametrize(
    "second",
    [lambda x: x, lambda x: x[:], lambda x: x[::-1], lambda x: x.reshape(2, 2)[:, 0]],
    ids=["same", "view", "reversed", "column"],
)
def test_a_written_argument_that_shares_memory_with_another_is_refused(second, backend):
    x = np.arange(4.0)
    with pytest.raises(
        numbax.InPlaceUpdateError,
        match=r"_write_then_read writes in place into an argument \(float64\[4\]\) that "
        r"shares memory with another(.|\n)*test_inplace.py:",
    ):
        numbax.jit(_write_then_read, backend=backend)(x, second(x))
    np.testing.assert_array_equal(x, np.arange(4.0))  # nothing ran


def test_arguments_of_one_memory_that_do_not_overlap_or_are_only_read_are_accepted(backend):
    x = np.arange(4.0)
    got = numbax.jit(_write_then_read, backend=backend)(x[:2], x[2:])
    np.testing.assert_array_equal(got, [4.0, 6.0])
    np.testing.assert_array_equal(x, [100.0, 1.0, 2.0, 3.0])
    y = np.arange(4.0)
    np.testing.assert_array_equal(numbax.jit(np.add, backend=backend)(y, y), 2 * y)


def test_a_traced_array_passed_twice_to_a_writing_jit_is_refused():
    inner = numbax.jit(_write_then_read)

    @numbax.jit
    def outer(x):
        return inner(x, x)

    with pytest.raises(numbax.InPlaceUpdateError, match="shares memory with another"):
        outer(np.arange(4.0))


def _write_then_multiply(a, b):
    a[0] = 100.0
    return (a * b).sum()


@pytest.mark.parametrize(
    "transform, x",
    [
        (lambda f: numbax.grad(f), np.arange(1.0, 5.0)),
        (lambda f: numbax.grad(f, argnums=(0, 1)), np.arange(1.0, 5.0)),
        (lambda f: numbax.vmap(f), np.arange(1.0, 9.0).reshape(2, 4)),
    ],
    ids=["grad", "grad-both", "vmap"],
)
def test_transforms_refuse_a_written_argument_that_shares_memory_with_another(transform, x):
    """NumPy's f(x, x) reads the write through b; numbax would read b's entry value."""
    before = x.copy()
    with pytest.raises(numbax.InPlaceUpdateError, match="_write_then_multiply writes in place"):
        transform(_write_then_multiply)(x, x)
    np.testing.assert_array_equal(x, before)
    y = before.copy()
    got = transform(_write_then_multiply)(y, y.copy())
    assert y.ravel()[0] == 100.0 and np.all(np.isfinite(got))


@pytest.mark.parametrize(
    "capture",
    [lambda table: table, lambda table: np.broadcast_to(table, (4,))],
    ids=["array", "read-only view"],
)
def test_a_captured_array_is_read_when_the_function_is_traced(capture, backend):
    """A global array is a constant taken when tracing (as in JAX and Numba): what is
    folded from it and what the program reads agree after the caller writes into it,
    also through a read-only view of a writeable array."""
    table = np.arange(4.0)
    captured = capture(table)
    fn = numbax.jit(lambda x: (x + captured, x + captured * 2), backend=backend)
    fn(np.zeros(4))
    table[0] = 50.0
    read, folded = fn(np.zeros(4))
    np.testing.assert_array_equal(read, np.arange(4.0))
    np.testing.assert_array_equal(folded, 2 * np.arange(4.0))


def _mutates_both(x, y):
    x *= 2.0
    y[0] += x.sum()
    return (x * np.sin(y)).sum()


def test_eager_grad_writes_arguments_back_and_differentiates_their_entry_values():
    x, y = RNG.standard_normal(3), RNG.standard_normal(3)
    want_x, want_y = x.copy(), y.copy()
    _mutates_both(want_x, want_y)
    got_x, got_y = x.copy(), y.copy()
    gx, gy = numbax.grad(_mutates_both, argnums=(0, 1))(got_x, got_y)
    np.testing.assert_allclose(got_x, want_x, rtol=1e-12)
    np.testing.assert_allclose(got_y, want_y, rtol=1e-12)
    step = 1e-6
    for got, which in ((gx, 0), (gy, 1)):
        want = np.zeros(3)
        for k in range(3):
            up, down = [x.copy(), y.copy()], [x.copy(), y.copy()]
            up[which][k] += step
            down[which][k] -= step
            want[k] = (_mutates_both(*up) - _mutates_both(*down)) / (2 * step)
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_vmap_writes_mapped_arguments_back():
    def prefix_step(x):
        x[1:] += x[:-1]
        return x.sum()

    xs = RNG.standard_normal((4, 3))
    want = xs.copy()
    want_out = [prefix_step(row) for row in want]
    got = xs.copy()
    np.testing.assert_allclose(numbax.vmap(prefix_step)(got), want_out, rtol=1e-12)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    cols = xs.copy()
    numbax.vmap(prefix_step, in_axes=1)(cols)
    want_cols = xs.copy()
    for j in range(want_cols.shape[1]):
        prefix_step(want_cols[:, j])
    np.testing.assert_allclose(cols, want_cols, rtol=1e-12)


def test_vmap_refuses_a_write_into_an_unmapped_argument():
    def write_shared(x, table):
        table[0] = x.sum()
        return x * 1

    with pytest.raises(numbax.BatchingError, match="not mapped"):
        numbax.vmap(write_shared, in_axes=(0, None))(np.ones((2, 3)), np.zeros(3))


def test_writing_an_argument_under_an_abstract_grad_names_the_line():
    def fn(x):
        x *= 2.0  # under jit(grad(...)) the argument is a traced value: no write-back
        return x.sum()

    with pytest.raises(numbax.InPlaceUpdateError, match=r"argument 0(.|\n)*test_inplace.py:"):
        numbax.jit(numbax.grad(fn))(np.ones(3))


def test_a_large_unrolled_loop_warns_once_naming_fori_loop():
    def unrolled(x):
        for _ in range(numbax.api.LARGE_PROGRAM_EQNS // 2 + 1):
            x = x * 1.0001 + 0.5
        return x

    fn = numbax.jit(unrolled, backend="interpret")
    with pytest.warns(numbax.ProgramSizeWarning, match=r"fori_loop(.|\n)*test_inplace.py:"):
        fn(np.ones(2))


def test_writing_a_loop_body_capture_names_the_fix():
    @numbax.jit
    def fn(x):
        def body(i, carry):
            x[i] = carry  # the mistake: x belongs to the enclosing trace
            return carry

        return numbax.fori_loop(0, 2, body, 1.0)

    with pytest.raises(numbax.InPlaceUpdateError, match="argument"):
        fn(np.zeros(3))


def local_updates(x):
    """Internal writes into arrays the function creates or copies."""
    y = x.copy()
    y[1:] *= x[:-1]
    R = np.zeros((3, 3))
    R[0] = y
    R[1, :] = np.sin(x)
    R[2, 1:] += x[0] * x[1:]
    y += R.sum(axis=0)
    return (y * y).sum()


def _central_differences(fn, x, step=1e-6):
    grad = np.zeros_like(x)
    for i in range(x.size):
        up, down = x.copy(), x.copy()
        up[i] += step
        down[i] -= step
        grad[i] = (fn(up) - fn(down)) / (2 * step)
    return grad


@pytest.mark.parametrize("mode", ["eager", "jit"])
def test_grad_through_internal_in_place_updates(mode, backend):
    x = RNG.standard_normal(3)
    fn = local_updates if mode == "eager" else numbax.jit(local_updates, backend=backend.name)
    got = numbax.grad(fn)(x)
    np.testing.assert_allclose(got, _central_differences(local_updates, x), rtol=1e-6)


def test_vmap_through_internal_in_place_updates():
    xs = RNG.standard_normal((4, 3))
    got = numbax.vmap(local_updates)(xs)
    np.testing.assert_allclose(got, [local_updates(x.copy()) for x in xs], rtol=1e-12)


def test_methods_in_place_return_none_and_sizes_are_numpys():
    def f(x):
        assert x.copy().sort() is None and x.copy().fill(1) is None
        return np.array([x.itemsize, x.nbytes]), x.mT

    for x in (np.ones((2, 3, 4), np.float32), np.ones((0, 5), np.int64)):
        sizes, transposed = numbax.jit(f, backend="interpret")(x)
        np.testing.assert_array_equal(sizes, [x.itemsize, x.nbytes])
        np.testing.assert_array_equal(transposed, x.mT)


class _DeviceArray:
    """The CUDA array interface of a device array at byte ``address`` (nothing is read)."""

    def __init__(self, address, shape, strides=None, typestr="<f8"):
        self.shape, self.dtype = shape, np.dtype(typestr)
        self.__cuda_array_interface__ = {
            "data": (address, False),
            "shape": shape,
            "strides": strides,
            "typestr": typestr,
            "version": 3,
        }


@pytest.mark.parametrize(
    "second, shared",
    [
        (_DeviceArray(1000, (4,)), True),  # the same memory
        (_DeviceArray(1024, (2,)), True),  # its last two elements
        (_DeviceArray(1024, (2,), strides=(-8,)), True),  # reversed: 1024 and 1016
        (_DeviceArray(1032, (4,)), False),  # just past its end
        (_DeviceArray(968, (4,)), False),  # just before it
        (_DeviceArray(1000, (0,)), False),  # empty
    ],
)
def test_device_arguments_are_compared_by_the_bytes_they_span(second, shared):
    first = _DeviceArray(1000, (4,))
    refuse = functionalize.refuse_aliased_writes
    if shared:
        with pytest.raises(numbax.InPlaceUpdateError, match=r"float64\[4\]"):
            refuse([first, second], [0], "f")
    else:
        refuse([first, second], [0], "f")


def _slice_view(base, spec):
    """A view of ``base`` (12 elements): a strided slice of it, flat or of its 3x4 form."""
    flat, (start, stop, step), (row_step, column_step) = spec
    if flat:
        return base[start:stop:step]
    return base.reshape(3, 4)[::row_step, ::column_step]


def _double_then_read(a, b):
    a *= 2.0
    a += 1.0
    return b * 3.0


_VIEWS = st.tuples(
    st.booleans(),
    st.tuples(st.integers(0, 11), st.integers(1, 12), st.sampled_from([1, 2, 3, -1, -2])),
    st.tuples(st.sampled_from([1, 2, -1]), st.sampled_from([1, 3, -1, -2])),
)


@settings(max_examples=80, deadline=None)
@given(first=_VIEWS, second=_VIEWS)
def test_two_views_of_one_array_give_numpys_answer_or_are_refused_when_they_overlap(first, second):
    """The oracle is NumPy on a copy: a call whose written argument overlaps the other is
    refused and writes nothing; every other call gives NumPy's result and leaves NumPy's
    values in the caller's array."""
    base = np.arange(12.0)
    a, b = _slice_view(base, first), _slice_view(base, second)
    numpy_base = base.copy()
    want = _double_then_read(_slice_view(numpy_base, first), _slice_view(numpy_base, second))
    jitted = numbax.jit(_double_then_read, backend="interpret")
    if np.shares_memory(a, b) and a.size:
        with pytest.raises(numbax.InPlaceUpdateError, match="shares memory"):
            jitted(a, b)
        np.testing.assert_array_equal(base, np.arange(12.0))
    else:
        np.testing.assert_array_equal(jitted(a, b), want)
        np.testing.assert_array_equal(base, numpy_base)


def _read_write_read(w, x):
    first = (w * x).sum()
    x[0] = 100.0
    return first + (w * x).sum()


def _write_then_read_constant(w, x):
    x[0] = 100.0
    return (w * x).sum()


def test_grad_refuses_a_constant_argument_written_after_it_was_read():
    """NumPy's derivative is x's value before plus after the write; numbax reads x, not
    among argnums, once: it would have given twice the value before."""
    w, x = np.ones(3), np.arange(3.0)
    with pytest.raises(
        numbax.InPlaceUpdateError, match=r"f64\[3\](.|\n)*argnums(.|\n)*test_inplace"
    ):
        numbax.grad(_read_write_read)(w, x)
    x = np.arange(3.0)
    np.testing.assert_array_equal(
        numbax.grad(_read_write_read, argnums=(0, 1))(w, x)[0], [100.0, 2.0, 4.0]
    )


def test_a_constant_written_before_it_is_read_is_read_with_the_write():
    w, x = np.ones(3), np.arange(3.0)
    np.testing.assert_array_equal(numbax.grad(_write_then_read_constant)(w, x), [100.0, 1.0, 2.0])
    np.testing.assert_array_equal(x, [100.0, 1.0, 2.0])


def test_jit_refuses_a_global_written_after_the_function_read_it(backend):
    table = np.arange(3.0)

    def fn(x):
        first = x * table
        table[0] = 7.0
        return first + table

    with pytest.raises(numbax.InPlaceUpdateError, match="written into after the function read"):
        numbax.jit(fn, backend=backend)(np.ones(3))


def _copyto_reversed_then_scale(b):
    np.copyto(b, b[::-1])
    b[1:3] *= 3
    return b.sum()


def _copyto_flipped(b):
    np.copyto(b, np.flip(b))
    return b * 1


def _out_from_reversed_view(b):
    np.positive(b[::-1], out=b)
    b[1:3] *= 3
    return b[::2] + 0


def _out_from_transpose(a):
    np.add(a, a.T, out=a)
    a[0] += 1
    return a.T.copy()


def _copyto_shifted_through_an_older_view(b):
    older = b[1:5]
    np.copyto(b[:4], b[1:5])
    older *= 2
    return b.sum()


@pytest.mark.parametrize(
    "fn",
    [
        _copyto_reversed_then_scale,
        _copyto_flipped,
        _out_from_reversed_view,
        _out_from_transpose,
        _copyto_shifted_through_an_older_view,
    ],
)
def test_a_write_from_a_view_of_the_destination_is_numpys(fn, backend):
    """The source is a view of the memory being written: the write must land, and every
    handle on that memory must see it (it was lost, and later writes mixed old values)."""
    base = np.arange(9.0).reshape(3, 3) if fn is _out_from_transpose else np.arange(6.0)
    want_arg = base.copy()
    want = fn(want_arg)
    got_arg = base.copy()
    got = numbax.jit(fn, backend=backend.name)(got_arg)
    np.testing.assert_array_equal(backend.to_host(got), want)
    np.testing.assert_array_equal(got_arg, want_arg)
