"""Basic indices read and write windows: ``dynamic_slice`` / ``dynamic_update_slice``,
a strided box through one scatter per strided axis, never an index array per element.

Values against NumPy (an out-of-range integer drops the update, as JAX does); the
traced programs against what they must not contain.
"""

from __future__ import annotations

import numpy as np
import pytest

import numbax
from numbax.ir.errors import ShapeError

RNG = np.random.default_rng(15)
X = RNG.standard_normal((5, 6, 4))

# Basic indices of X: ints (negative too), slices of every static step, None, Ellipsis.
BASIC = [
    1,
    -1,
    (slice(1, -1), slice(2, 5)),
    (Ellipsis, 2),
    (0, Ellipsis, slice(None, None, -1)),
    (slice(None, None, 2), None, slice(1, None, 3)),
    (slice(4, 0, -2), 3, slice(None)),
    (None, slice(1, 4), Ellipsis, -2),
    (slice(3, 3),),
    (slice(-2, None, -1), slice(5, 0, -3), slice(None, None, -2)),
]
MODES = {"set": None, "add": np.add, "multiply": np.multiply, "min": np.minimum, "max": np.maximum}


def numpy_update(x, idx, values, mode):
    out = x.copy()
    out[idx] = values if MODES[mode] is None else MODES[mode](out[idx], values)
    return out


def prims(jaxpr) -> list[str]:
    """Every primitive's name in ``jaxpr`` and its sub-jaxprs."""
    from numbax.passes.rewrite import subjaxprs

    names = []
    for eqn in jaxpr.eqns:
        names.append(eqn.prim.name)
        for body in subjaxprs(eqn):
            names += prims(body)
    return names


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("idx", BASIC, ids=repr)
def test_basic_updates_match_numpy(backend, idx, mode):
    values = RNG.standard_normal(X[idx].shape)
    fn = numbax.jit(lambda x, v: getattr(x.at[idx], mode)(v), backend=backend)
    out = backend.to_host(fn(X, values))
    np.testing.assert_allclose(out, numpy_update(X, idx, values, mode), rtol=1e-12)


@pytest.mark.parametrize("idx", BASIC, ids=repr)
def test_basic_updates_make_no_index_arrays_of_the_window(idx):
    jaxpr = numbax.make_jaxpr(lambda x, v: x.at[idx].set(v))(X, X[idx]).jaxpr
    names = prims(jaxpr)
    assert "iota" not in names
    steps = idx if isinstance(idx, tuple) else (idx,)
    if all(not isinstance(i, slice) or i.step in (None, 1) for i in steps):
        assert "scatter" not in names and "gather" not in names
    for eqn in jaxpr.eqns:
        if eqn.prim.name in ("scatter", "gather"):  # one per strided axis, as long as it
            assert eqn.inputs[1].aval.ndim == 1
            assert eqn.inputs[1].aval.size <= max(X.shape)


def test_traced_int_update_is_a_window_one_wide():
    def f(x, i, v):
        return x.at[:, i].set(v)

    jaxpr = numbax.make_jaxpr(f)(X, 2, X[:, 2]).jaxpr
    names = prims(jaxpr)
    assert "dynamic_update_slice" in names
    assert not {"iota", "scatter", "gather"} & set(names)


@pytest.mark.parametrize("i", [0, 3, -1, -6, 6, -7, 10**6])
@pytest.mark.parametrize("mode", ["set", "add"])
def test_traced_int_updates_drop_out_of_range(backend, i, mode):
    fn = numbax.jit(lambda x, i, v: getattr(x.at[1:4, i, ::-2], mode)(v), backend=backend)
    values = RNG.standard_normal((3, 2))
    out = backend.to_host(fn(X, np.int64(i), values))
    if not -6 <= i < 6:
        np.testing.assert_array_equal(out, X)
        return
    expected = numpy_update(X, (slice(1, 4), i, slice(None, None, -2)), values, mode)
    np.testing.assert_allclose(out, expected, rtol=1e-12)


@pytest.mark.parametrize("i", [0, 2, -1, -4, 5, -9])
def test_traced_int_reads_are_dynamic_slices_clamped(backend, i):
    fn = numbax.jit(lambda x, i: (x[:, i], x[i, 1:, ::2], x[..., i]), backend=backend)
    got = backend.to_host(fn(X, np.int32(i)))
    wrapped = [min(max(i + n if i < 0 else i, 0), n - 1) for n in (6, 5, 4)]
    expected = (X[:, wrapped[0]], X[wrapped[1], 1:, ::2], X[..., wrapped[2]])
    for a, b in zip(got, expected, strict=True):
        np.testing.assert_array_equal(a, b)
    names = prims(numbax.make_jaxpr(fn)(X, np.int32(i)).jaxpr)
    assert "dynamic_slice" in names and "gather" not in names


def test_column_update_in_fori_loop_matches_numpy(backend):
    """``y.at[:, j].set(col)`` with the loop's j: a window one wide per iteration."""

    def f(y, c):
        return numbax.lax.fori_loop(
            0, y.shape[1], lambda j, y: y.at[:, j].set(y[:, j] * 2.0 + c[j]), y
        )

    y, c = RNG.standard_normal((4, 7)), RNG.standard_normal(7)
    out = backend.to_host(numbax.jit(f, backend=backend)(y, c))
    np.testing.assert_allclose(out, y * 2.0 + c, rtol=1e-12)
    names = prims(numbax.make_jaxpr(f)(y, c).jaxpr)
    assert not {"iota", "scatter", "gather"} & set(names)


def test_boolean_and_complex_combine_as_numpy():
    b = np.array([True, False, False, True])
    add = numbax.jit(lambda x, v: x.at[1:3].add(v), backend="interpret")(b, np.array([True, False]))
    np.testing.assert_array_equal(add, np.array([True, True, False, True]))
    z = RNG.standard_normal(5) + 1j * RNG.standard_normal(5)
    w = RNG.standard_normal(2) + 1j * RNG.standard_normal(2)
    got = numbax.jit(lambda x, v: x.at[::3].min(v), backend="interpret")(z, w)
    np.testing.assert_array_equal(got, numpy_update(z, slice(None, None, 3), w, "min"))


def test_values_that_do_not_broadcast_raise_a_shape_error():
    with pytest.raises(ShapeError, match="do not broadcast"):
        numbax.jit(lambda x: x.at[1:3, 0].set(np.ones(3)), backend="interpret")(X)
