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
    assert len(closed.jaxpr.constvars) == 1 and closed.consts[0] is weights
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
    (out,) = executable(np.full(3, 2, np.float32), np.full(3, 3, np.float32))
    np.testing.assert_array_equal(out, np.full(3, 7, np.float32))
    assert f.cache_info().traces == 0  # lowering does not fill the dispatch cache


def test_jit_agrees_with_numpy_on_the_default_backend():
    # No backend argument: whatever NUMBAX_BACKEND or the machine selects.
    x = np.linspace(-1, 1, 7)
    np.testing.assert_allclose(numbax.jit(lambda x: np.exp(x) / 2)(x), np.exp(x) / 2, rtol=1e-12)
