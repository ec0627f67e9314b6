"""``jit`` and ``make_jaxpr``: decorator forms, static arguments, the dispatch cache
(one trace per signature), compile logging, pytrees in and out, nesting."""

from __future__ import annotations

import collections
import logging

import numpy as np
import pytest

import numbax
from numbax import backends
from numbax.config import config


def test_make_jaxpr_prints_add_then_mul():
    text = str(numbax.make_jaxpr(lambda x, y: (x + y) * y)(2.0, 3.0))
    assert text == "{ lambda ; a:f64[] b:f64[]. let c:f64[] = add a b; d:f64[] = mul c b in (d,) }"


def test_make_jaxpr_keeps_float32_and_literals():
    closed = numbax.make_jaxpr(lambda x: np.tanh(x * 1.5 + 0.5) * 0.5 + x * x)(
        np.ones(4, np.float32)
    )
    assert [e.prim.name for e in closed.eqns] == ["mul", "add", "tanh", "mul", "mul", "add"]
    assert "mul a 1.5:f32[]" in str(closed)
    assert all(v.aval.str_short() == "f32[4]" for e in closed.eqns for v in e.outputs)
    numbax.typecheck(closed)


def test_make_jaxpr_static_argnums():
    closed = numbax.make_jaxpr(lambda x, n: x * n, static_argnums=1)(np.ones(2), 3)
    assert len(closed.jaxpr.invars) == 1
    assert "mul a 3.0:f64[]" in str(closed)


def test_make_jaxpr_records_the_users_line():
    def fn(x):
        return np.sin(x)  # recorded

    closed = numbax.make_jaxpr(fn)(np.ones(2))
    assert closed.eqns[0].source_info == f"{__file__}:{fn.__code__.co_firstlineno + 1}"


def test_jit_decorator_forms():
    @numbax.jit
    def plain(x):
        return x * 2

    @numbax.jit(static_argnums=1, backend="interpret")
    def with_static(x, n):
        return x * n

    @numbax.jit(static_argnames="n", backend="interpret")
    def with_name(x, n=2):
        return x**n

    x = np.arange(3.0)
    np.testing.assert_array_equal(plain(x), x * 2)
    np.testing.assert_array_equal(with_static(x, 3), x * 3)
    np.testing.assert_array_equal(with_name(x, n=3), x**3)
    np.testing.assert_array_equal(with_name(x), x**2)
    assert plain.__name__ == "plain" and plain.__doc__ is None


def test_static_argument_by_position_or_by_name():
    def fn(x, n):
        return x * n if n > 1 else -x  # `n > 1` needs n concrete

    x = np.ones(2)
    by_num = numbax.jit(fn, static_argnums=1, backend="interpret")
    by_name = numbax.jit(fn, static_argnames="n", backend="interpret")
    negative = numbax.jit(fn, static_argnums=-1, backend="interpret")
    for f in (by_num, by_name, negative):
        np.testing.assert_array_equal(f(x, 3), x * 3)
        np.testing.assert_array_equal(f(x, n=3), x * 3)
        np.testing.assert_array_equal(f(x, n=0), -x)


def test_jit_of_partial_and_of_a_bound_method():
    import functools

    class Scaler:
        def __init__(self, k):
            self.k = k

        def apply(self, x):
            return x * self.k

    x = np.arange(3.0)
    np.testing.assert_array_equal(numbax.jit(functools.partial(np.multiply, 2.0))(x), 2 * x)
    np.testing.assert_array_equal(numbax.jit(Scaler(3.0).apply)(x), 3 * x)


def _counting(fn, **kwargs):
    return numbax.jit(fn, backend="interpret", **kwargs)


def test_traces_once_per_shape_and_dtype():
    f = _counting(lambda x: x + 1)
    for _ in range(3):
        f(np.ones(3))
    assert f.cache_info().traces == 1 and f.cache_info().hits == 2
    f(np.ones(4))
    f(np.ones(3, np.float32))
    f(np.ones(3, np.int32))
    f(np.ones(3))
    info = f.cache_info()
    assert (info.traces, info.misses, info.size) == (4, 4, 4)
    assert info.hits == 3


def test_traces_once_per_static_value():
    f = _counting(lambda x, n: x * n, static_argnums=1)
    f(np.ones(2), 2)
    f(np.ones(2), 2)
    f(np.ones(2), 3)
    assert f.cache_info().traces == 2
    # 2.0 == 2 with the same hash, but it traces differently: a new entry, not a wrong dtype.
    g = _counting(lambda x, n: x * n, static_argnums=1)
    assert g(np.ones(2, np.int32), 2).dtype == np.int32
    assert g(np.ones(2, np.int32), 2.0).dtype == np.float64


def test_traces_once_per_tree_structure():
    f = _counting(lambda tree: sum(np.sum(leaf) for leaf in numbax.tree_leaves(tree)))
    a = np.ones(2)
    f((a, a))
    f((a, a))
    f([a, a])
    f({"x": a, "y": a})
    f({"x": a, "z": a})
    f((a, (a,)))
    assert f.cache_info().traces == 5


def test_python_scalars_are_weakly_typed_and_share_a_trace():
    f = _counting(lambda x, s: x * s)
    x32 = np.ones(3, np.float32)
    assert f(x32, 2.0).dtype == np.float32  # NEP 50: a Python float takes the array's dtype
    assert f(x32, 3.5).dtype == np.float32
    assert f.cache_info().traces == 1
    assert f(x32, np.float64(2.0)).dtype == np.float64  # a NumPy scalar is strongly typed
    assert f(np.ones(3, np.int32), 2).dtype == np.int32
    assert f.cache_info().traces == 3


def test_traces_once_per_backend(monkeypatch):
    # A second backend under another name is a second cache entry.
    monkeypatch.setitem(backends._MODULES, "interpret_again", "numbax.backends.interpret")
    f = numbax.jit(lambda x: x + 1)
    monkeypatch.setattr(config, "backend", "interpret")
    f(np.ones(2))
    f(np.ones(2))
    monkeypatch.setattr(config, "backend", "interpret_again")
    f(np.ones(2))
    assert f.cache_info().traces == 2


def test_keyword_arguments_are_dynamic():
    f = _counting(lambda x, *, bias: x + bias)
    np.testing.assert_array_equal(f(np.ones(2), bias=np.full(2, 3.0)), np.full(2, 4.0))
    f(np.ones(2), bias=np.zeros(2))
    assert f.cache_info().traces == 1


def test_unhashable_static_argument_raises():
    f = _counting(lambda x, shape: x.reshape(shape), static_argnums=1)
    with pytest.raises(numbax.StaticArgumentError):
        f(np.ones(4), [2, 2])
    np.testing.assert_array_equal(f(np.ones(4), (2, 2)), np.ones((2, 2)))


def test_log_compiles_names_each_retrace_and_its_reason(monkeypatch, caplog):
    monkeypatch.setattr(config, "log_compiles", True)

    def scaled(x, n):
        return x * n

    f = numbax.jit(scaled, static_argnums=1, backend="interpret")
    with caplog.at_level(logging.WARNING, logger="numbax"):
        f(np.ones(2), 2)
        f(np.ones(2), 2)
        f(np.ones(3), 2)
        f(np.ones(3, np.float32), 2)
        f(np.ones(3, np.float32), 5)
    traces = [r.getMessage() for r in caplog.records if "tracing" in r.getMessage()]
    assert len(traces) == 4
    assert "scaled" in traces[0] and "first call" in traces[0]
    assert "f64[3]" in traces[1] and "f64[2]" in traces[1]
    assert "f32[3]" in traces[2]
    assert "static" in traces[3] and "5" in traces[3]


def test_no_log_without_the_flag(monkeypatch, caplog):
    monkeypatch.setattr(config, "log_compiles", False)
    with caplog.at_level(logging.DEBUG, logger="numbax"):
        numbax.jit(lambda x: x, backend="interpret")(np.ones(2))
    assert not [r for r in caplog.records if "tracing" in r.getMessage()]


class Point:
    """A user-registered pytree node."""

    def __init__(self, x, y):
        self.x, self.y = x, y


numbax.register_pytree_node(Point, lambda p: ((p.x, p.y), None), lambda _, c: Point(*c))
Pair = collections.namedtuple("Pair", ["first", "second"])


def test_pytree_arguments_and_results(backend):
    def fn(tup, lst, dct, nothing, point, pair):
        assert nothing is None
        out = {
            "tuple": (tup[0] + tup[1], None),
            "list": [lst[0] * 2],
            "dict": dct["b"] - dct["a"],
            "point": Point(point.x + point.y, point.y),
            "pair": Pair(pair.second, pair.first),
        }
        return out, None

    a, b = np.arange(3.0), np.ones(3)
    args = ((a, b), [a], {"a": a, "b": b}, None, Point(a, b), Pair(a, b))
    out, nothing = numbax.jit(fn, backend=backend)(*args)
    assert nothing is None
    np.testing.assert_array_equal(out["tuple"][0], a + b)
    assert out["tuple"][1] is None
    assert isinstance(out["list"], list)
    np.testing.assert_array_equal(out["list"][0], a * 2)
    np.testing.assert_array_equal(out["dict"], b - a)
    assert isinstance(out["point"], Point)
    np.testing.assert_array_equal(out["point"].x, a + b)
    assert isinstance(out["pair"], Pair)
    np.testing.assert_array_equal(out["pair"].first, b)


def test_results_are_arrays_even_for_constants_and_scalars():
    out = numbax.jit(lambda x: (x, 1.0, np.float32(2), x.sum()), backend="interpret")(np.ones(2))
    assert all(isinstance(o, np.ndarray) for o in out)
    assert out[1].dtype == np.float64 and out[2].dtype == np.float32 and out[3].shape == ()


def test_closure_captures_arrays_as_constants():
    weights = np.arange(6.0).reshape(2, 3)
    closed = numbax.make_jaxpr(lambda x: x @ weights)(np.ones((4, 2)))
    # The constant is the array's value at trace time: a copy of its own (see
    # test_inplace.py::test_a_captured_array_is_read_when_the_function_is_traced).
    assert len(closed.jaxpr.constvars) == 1
    np.testing.assert_array_equal(closed.consts[0], weights)
    assert not np.shares_memory(closed.consts[0], weights)
    np.testing.assert_array_equal(
        numbax.jit(lambda x: x @ weights, backend="interpret")(np.ones((4, 2))),
        np.ones((4, 2)) @ weights,
    )


def test_nested_jit_binds_jit_call():
    inner = numbax.jit(lambda x: np.sin(x) * 2.0, backend="interpret")

    def outer(x):
        return inner(x) + inner(x * 3.0)

    closed = numbax.make_jaxpr(outer)(np.ones(3))
    assert [e.prim.name for e in closed.eqns].count("jit_call") == 2
    numbax.typecheck(closed)
    x = np.linspace(0, 1, 3)
    expected = np.sin(x) * 2 + np.sin(3 * x) * 2
    np.testing.assert_allclose(numbax.jit(outer, backend="interpret")(x), expected, rtol=1e-15)
    np.testing.assert_allclose(inner(x), np.sin(x) * 2, rtol=1e-15)


def test_lower_and_compile():
    f = numbax.jit(lambda x, y: x * y + 1, backend="interpret")
    lowered = f.lower(np.ones(3, np.float32), np.ones(3, np.float32))
    assert "mul" in lowered.as_text() and "f32[3]" in lowered.as_text()
    executable = lowered.compile()
    out = executable(np.full(3, 2, np.float32), np.full(3, 3, np.float32))
    np.testing.assert_array_equal(out, np.full(3, 7, np.float32))
    assert f.cache_info().traces == 0  # lowering does not fill the dispatch cache


def test_jit_agrees_with_numpy_on_the_default_backend():
    # No backend argument: whatever NUMBAX_BACKEND or the machine selects.
    x = np.linspace(-1, 1, 7)
    np.testing.assert_allclose(numbax.jit(lambda x: np.exp(x) / 2)(x), np.exp(x) / 2, rtol=1e-12)


# ---------------------------------------------------------------- arguments and scalars


@pytest.mark.parametrize(
    "fn",
    [
        lambda a: a < 2**40,
        lambda a: a == 2**40,
        lambda a: a != -(2**40),
        lambda a: 2**40 > a,
        lambda a: np.greater_equal(a, -(2**33)),
    ],
    ids=["lt", "eq", "ne", "reflected_gt", "greater_equal"],
)
def test_comparison_with_an_int_outside_the_dtype_is_exact(backend, fn):
    # NumPy 2 answers these exactly (no OverflowError, no wrapped-around 2**40 == 0).
    x = np.array([0, -1, 2**31 - 1, -(2**31)], np.int32)
    out = backend.to_host(numbax.jit(fn, backend=backend)(x))
    np.testing.assert_array_equal(out, fn(x))


def test_python_int_arguments_are_int64_from_its_bounds():
    f = _counting(lambda x, n: x + n)
    x = np.zeros(2, np.int64)
    np.testing.assert_array_equal(f(x, -(2**63)), x + -(2**63))
    np.testing.assert_array_equal(f(x, 2**63 - 1), x + (2**63 - 1))
    assert f.cache_info().traces == 1


def test_nested_jit_keeps_the_weak_type_of_a_python_scalar(backend):
    inner = numbax.jit(lambda x: x * np.float32(2), backend=backend)
    expected = 1.0 * np.float32(2)  # NEP 50: float32
    assert inner(1.0).dtype == expected.dtype
    out = numbax.jit(lambda x: inner(x), backend=backend)(1.0)
    assert out.dtype == expected.dtype
    np.testing.assert_array_equal(backend.to_host(out), expected)


def test_transforms_keep_the_weak_type_through_a_nested_jit():
    scale = numbax.jit(lambda x, s: x * s, backend="interpret")
    x = np.arange(3, dtype=np.float32)
    batched = numbax.vmap(lambda x, s: scale(x, s), in_axes=(0, None))(x, 2.0)
    assert batched.dtype == (x * 2.0).dtype == np.float32
    np.testing.assert_array_equal(batched, x * 2.0)
    inner = numbax.jit(lambda x: x * np.float32(2), backend="interpret")
    primal, tangent = numbax.jvp(lambda x: inner(x), (1.0,), (1.0,))
    assert primal.dtype == tangent.dtype == np.float32
    assert (primal, tangent) == (2.0, 2.0)


class Tagged(np.ndarray):
    """An ndarray subclass that only adds an attribute: taken as its base array."""

    tag = "metres"


def test_a_subclass_that_keeps_ndarray_semantics_is_its_base_array(backend):
    x = np.arange(6.0).reshape(2, 3).view(Tagged)
    f = numbax.jit(lambda x: x * x + 1, backend=backend)
    out = backend.to_host(f(x))
    assert type(out) is np.ndarray
    np.testing.assert_array_equal(out, np.asarray(x) * np.asarray(x) + 1)


@pytest.mark.parametrize("name", ["f8", "f4", "i4", "c16"])
def test_byte_swapped_arguments_and_constants_hold_their_values(backend, name):
    """Arrays in the other byte order (data read from a file, a FITS image) compute as
    NumPy computes them, as arguments and as captured constants; results are native, as
    NumPy's and JAX's are."""
    swapped = np.dtype(name).newbyteorder("S")
    x = (np.arange(12.0).reshape(3, 4) - 5.0).astype(swapped)
    offsets = np.arange(4).astype(swapped)

    def f(x):
        return x * 3 + x.sum(axis=0) - offsets

    out = backend.to_host(numbax.jit(f, backend=backend)(x))
    want = f(x)
    assert out.dtype == want.dtype.newbyteorder("=") and out.dtype.isnative
    np.testing.assert_array_equal(out, want)
    if swapped.kind == "f":  # d/dx sum(f**2) = 6 f + 2 (f summed over the rows)
        gradient = numbax.jit(numbax.grad(lambda x: (f(x) ** 2).sum()), backend=backend)(x)
        expected = 6 * want + 2 * want.sum(axis=0, keepdims=True)
        np.testing.assert_allclose(backend.to_host(gradient), expected, rtol=1e-6)


def test_static_nan_and_signed_zero_are_their_own_cache_keys():
    g = _counting(lambda x, s: x * s, static_argnums=1)
    assert np.isnan(g(1.0, float("nan"))) and np.isnan(g(1.0, float("nan")))
    assert g.cache_info().traces == 1
    g(1.0, (float("nan"), 1.0))
    g(1.0, (float("nan"), 1.0))
    assert g.cache_info().traces == 2
    # 0.0 == -0.0 and they hash alike, but the products differ in sign.
    assert not np.signbit(g(1.0, 0.0)) and np.signbit(g(1.0, -0.0))
    assert g.cache_info().traces == 4


class Scaled:
    def __init__(self, k):
        self.k = k

    @numbax.jit(backend="interpret")
    def apply(self, x):
        return x * self.k

    @numbax.jit(static_argnums=2, backend="interpret")
    def power(self, x, n):
        return x**n * self.k


def test_jit_on_a_method_binds_self():
    x = np.arange(3.0)
    two, three = Scaled(2.0), Scaled(3.0)
    np.testing.assert_array_equal(two.apply(x), x * 2.0)
    np.testing.assert_array_equal(three.apply(x), x * 3.0)
    np.testing.assert_array_equal(two.apply(x + 1), (x + 1) * 2.0)
    # The receiver is static, by identity: one trace per instance, shared by the class.
    assert Scaled.apply.cache_info().traces == 2 and two.apply.cache_info().hits == 1
    # static_argnums counts self, as in the signature.
    np.testing.assert_array_equal(three.power(x, 2), x**2 * 3.0)
    assert "integer_pow" in str(three.power.lower(x, 2).jaxpr)


class Affine:
    """A pytree: a method on it takes its arrays as dynamic arguments."""

    def __init__(self, w, b):
        self.w, self.b = w, b

    @numbax.jit(backend="interpret")
    def __call__(self, x):
        return self.w * x + self.b


numbax.register_pytree_node(Affine, lambda a: ((a.w, a.b), None), lambda _, c: Affine(*c))


def test_a_method_on_a_pytree_takes_its_fields_as_arguments():
    x = np.arange(3.0)
    for w, b in [(2.0, 1.0), (np.ones(3), np.zeros(3)), (np.full(3, 5.0), np.ones(3))]:
        np.testing.assert_array_equal(Affine(w, b)(x), w * x + b)
    assert Affine.__call__.cache_info().traces == 2  # scalars, then arrays of shape (3,)


def test_static_shape_argument_works():
    f = _counting(lambda n: np.zeros(n) + numbax.numpy.ones((n, 2)).sum(), static_argnums=0)
    np.testing.assert_array_equal(f(3), np.zeros(3) + 6.0)
