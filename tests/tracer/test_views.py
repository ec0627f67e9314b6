"""Views of traced arrays alias their base exactly as NumPy's do.

Each program runs with plain NumPy and jitted, on copies of the same inputs: the results
and every argument afterwards must agree. The programs write through each kind of view
NumPy returns (and read views after writes into their base), and through results NumPy
copies, where the write must not reach the base.
"""

from __future__ import annotations

import numpy as np
import pytest

import numbax
from numbax.ir.errors import InPlaceUpdateError

RNG = np.random.default_rng(3)


def row_view(A):
    row = A[1]
    row += 1.0
    return A.sum()


def slice_of_slice(A):
    s = A[1:, 1:]
    t = s[0]
    t[:] = 7.0
    return s * 1


def strided_and_reversed(A):
    v = A[:, ::-2]
    v *= 2.0
    A[::2, 1::2] = -1.0


def through_transpose(A):
    A.T[0] = -1.0
    np.transpose(A)[1, 2] = 9.0
    np.swapaxes(A, 0, 1)[2] += 3.0
    np.moveaxis(A, 0, 1)[-1, 0] = 4.0


def through_reshape(A):
    B = A.reshape(12)
    B[3] = 5.0
    A.ravel()[7] = 6.0
    np.reshape(A, (2, 6))[1, 1] = 8.0
    return A * 1


def reshape_of_a_strided_view_copies(A):
    B = A[:, :2].reshape(-1)  # NumPy copies: the write stays in B
    B[0] = 100.0
    E = A[:, ::2].reshape(-1)  # evenly strided: NumPy's reshape is a view
    E[1] = 400.0
    C = A.T.ravel()  # a copy too
    C[1] = 200.0
    D = A.flatten()  # always a copy
    D[2] = 300.0
    return B.sum() + C.sum() + D.sum() + E.sum()


def advanced_index_copies(A):
    B = A[[0, 2]]
    B[0, 0] = 99.0
    C = A[np.array([True, False, True])]
    C += 1.0
    return B.sum() + C.sum()


def view_reads_see_base_writes(A):
    r, c, d = A[0], A[:, 1], np.diagonal(A)
    A[0, 1] = 100.0
    A[:, :] *= 2.0
    return r + 0, c + 0, d + 0


def views_see_each_other(A):
    top, left = A[:2], A[:, :2]
    top[:, :] = 1.0  # writes the shared corner too
    left[0, 0] = -5.0
    return top * 1, left * 1


def squeeze_expand_flip(A):
    A[None][0, 0, 0] = 11.0
    np.expand_dims(A, 0)[0, 1] = 12.0
    A[1:2].squeeze()[0] = 13.0
    np.flip(A, 0)[0, 0] = 14.0
    np.fliplr(A)[0, 0] = 15.0
    np.rot90(A)[0, 0] = 16.0
    np.atleast_2d(A[2])[0, 1] = 17.0


def split_pieces(A):
    top, bottom = np.split(A, 2)
    top[0] = 1.0
    left, right = np.hsplit(A, [1])
    right *= 3.0
    first, *_ = np.array_split(A[:, 0], 3)
    first += 10.0
    return bottom * 1


def traced_index_row(A, k):
    row = A[k]
    row -= A[0] * 0.5
    return row * 1


def elimination(A):
    # Gaussian elimination without pivoting, written with row views as public kernels do.
    n = A.shape[0]
    for k in range(n - 1):
        pivot = A[k]
        for i in range(k + 1, n):
            row = A[i]
            row -= pivot * (row[k] / pivot[k])
    return A


def zero_d_views(A):
    s = A[0, 0]  # a NumPy scalar: a copy
    s += 1.0
    v = A[0, 0, ...]  # a 0-d view
    v += 10.0
    return s


def _well_conditioned():
    return RNG.standard_normal((4, 4)) + 4 * np.eye(4)


CASES = {
    "row_view": (row_view, lambda: (RNG.standard_normal((3, 4)),), ()),
    "slice_of_slice": (slice_of_slice, lambda: (RNG.standard_normal((3, 4)),), ()),
    "strided_and_reversed": (strided_and_reversed, lambda: (RNG.standard_normal((4, 5)),), ()),
    "through_transpose": (through_transpose, lambda: (RNG.standard_normal((3, 4)),), ()),
    "through_reshape": (through_reshape, lambda: (RNG.standard_normal((3, 4)),), ()),
    "reshape_copies": (
        reshape_of_a_strided_view_copies,
        lambda: (RNG.standard_normal((3, 4)),),
        (),
    ),
    "advanced_index_copies": (advanced_index_copies, lambda: (RNG.standard_normal((3, 4)),), ()),
    "view_reads": (view_reads_see_base_writes, lambda: (RNG.standard_normal((3, 3)),), ()),
    "views_see_each_other": (views_see_each_other, lambda: (RNG.standard_normal((3, 3)),), ()),
    "squeeze_expand_flip": (squeeze_expand_flip, lambda: (RNG.standard_normal((3, 3)),), ()),
    "split_pieces": (split_pieces, lambda: (RNG.standard_normal((4, 3)),), ()),
    "traced_index_row": (traced_index_row, lambda: (RNG.standard_normal((3, 4)), np.int64(2)), ()),
    "elimination": (elimination, lambda: (_well_conditioned(),), ()),
    "zero_d_views": (zero_d_views, lambda: (RNG.standard_normal((2, 2)),), ()),
}


def _copies(args):
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


@pytest.mark.parametrize("name", list(CASES))
def test_views_alias_as_numpy(name, backend):
    fn, make_args, static = CASES[name]
    args = make_args()
    expected_args = _copies(args)
    expected = fn(*expected_args)
    got_args = _copies(args)
    got = numbax.jit(fn, static_argnums=static, backend=backend.name)(*got_args)
    got_leaves = numbax.tree_leaves(backend.to_host(got))
    want_leaves = numbax.tree_leaves(expected)
    assert len(got_leaves) == len(want_leaves)
    for g, w in zip(got_leaves, want_leaves, strict=True):
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-12, atol=1e-12)
    for got_arg, want_arg in zip(got_args, expected_args, strict=True):
        if isinstance(want_arg, np.ndarray):
            np.testing.assert_allclose(got_arg, want_arg, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(
    "write",
    [
        lambda A: np.diagonal(A).__iadd__(1.0),
        lambda A: np.broadcast_to(A[0], (2, 3)).__setitem__(0, 1.0),
        lambda A: np.diagonal(A)[None].__setitem__(0, 1.0),
        lambda A: np.diag(A).__imul__(2.0),
    ],
    ids=["diagonal", "broadcast_to", "view_of_diagonal", "diag"],
)
def test_read_only_views_refuse_writes_as_numpy(write):
    A = np.zeros((3, 3))
    with pytest.raises(ValueError, match="read-only"):
        write(A.copy())
    with pytest.raises(InPlaceUpdateError, match="read-only"):
        numbax.jit(write, backend="interpret")(A.copy())


def test_a_view_written_inside_a_loop_body_is_refused_by_name():
    def body_writes_outer_view(A):
        row = A[0]

        def body(i, carry):
            row[i] = 1.0
            return carry

        return numbax.fori_loop(0, 2, body, 0.0)

    with pytest.raises(InPlaceUpdateError, match="enclosing traced function"):
        numbax.jit(body_writes_outer_view, backend="interpret")(np.zeros((2, 3)))


def _row_updates(x):
    A = np.outer(x, x) + np.eye(x.size)
    row = A[1]
    row *= x[0]
    A.T[2] += x
    return (A**2).sum()


def test_grad_through_writes_into_views():
    x = RNG.standard_normal(3)
    step = 1e-6
    expected = np.array(
        [(_row_updates(x + step * e) - _row_updates(x - step * e)) / (2 * step) for e in np.eye(3)]
    )
    np.testing.assert_allclose(numbax.grad(_row_updates)(x), expected, rtol=1e-6)
    np.testing.assert_allclose(numbax.jit(numbax.grad(_row_updates))(x), expected, rtol=1e-6)


def test_vmap_through_writes_into_views():
    xs = RNG.standard_normal((4, 3))
    got = numbax.vmap(_row_updates)(xs)
    np.testing.assert_allclose(got, [_row_updates(x) for x in xs], rtol=1e-12)
