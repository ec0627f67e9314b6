"""Export: a jitted program written as JSON runs anywhere with the original's results;
arguments that do not match the export are refused by path; a malformed or edited file
always raises SerializationError."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import numbax
from numbax import NumbaxTypeError, SerializationError, ShapeError


def _layer(params, x, extra=None):
    hidden = np.tanh(x @ params["w"] + params["b"])
    return {"y": hidden, "stats": (hidden.sum(), None), "rows": [hidden[0], hidden[-1]]}


def _control_flow(x, steps):
    positive = numbax.cond(x.sum() > 0, lambda v: v * 2.0, lambda v: -v, x)
    total, partial = numbax.scan(lambda c, row: (c + row, c.sum()), np.zeros(x.shape[1]), x)
    halved = numbax.while_loop(lambda v: v.max() > 1.0, lambda v: v / 2.0, np.abs(x) + steps)
    return positive, total, partial, halved


def _loss(params, x):
    return np.sum(_layer(params, x)["y"] ** 2)


def _row_norm(row):
    return np.sqrt(np.sum(row * row))


def _inputs():
    rng = np.random.default_rng(0)
    params = {"w": rng.standard_normal((3, 2)), "b": rng.standard_normal(2)}
    return params, rng.standard_normal((4, 3))


def _cases():
    params, x = _inputs()
    return {
        "pytree": (numbax.jit(_layer), (params, x), {"extra": None}, {}),
        "control_flow": (numbax.jit(_control_flow, static_argnums=1), (x, 3), {}, {1: 3}),
        "grad": (numbax.jit(numbax.grad(_loss)), (params, x), {}, {}),
        "vmap": (numbax.jit(numbax.vmap(_row_norm)), (x,), {}, {}),
    }


def _dynamic(args, static_args):
    return tuple(a for i, a in enumerate(args) if i not in static_args)


def _assert_trees_equal(got, expected):
    got_leaves, got_tree = numbax.tree_flatten(got)
    expected_leaves, expected_tree = numbax.tree_flatten(expected)
    assert got_tree == expected_tree
    for g, e in zip(got_leaves, expected_leaves, strict=True):
        assert np.asarray(g).dtype == np.asarray(e).dtype
        np.testing.assert_array_equal(g, e)


@pytest.mark.parametrize("case", sorted(_cases()))
def test_round_trip_gives_the_results_of_the_original_jit(case, backend):
    function, args, kwargs, static_args = _cases()[case]
    jitted = numbax.jit(function.fun, static_argnums=function.static_argnums, backend=backend)
    exported = numbax.export(jitted, *args, **kwargs)
    assert exported.static_args == static_args
    loaded = numbax.deserialize(exported.dumps())
    assert loaded.dumps() == exported.dumps()
    got = loaded.call(*_dynamic(args, static_args), backend=backend, **kwargs)
    _assert_trees_equal(backend.to_host(got), backend.to_host(jitted(*args, **kwargs)))


def test_round_trip_keeps_the_structures_and_matches_numpy():
    params, x = _inputs()
    exported = numbax.Exported.loads(numbax.export(numbax.jit(_layer), params, x).dumps())
    out = exported(params, x, backend="interpret")
    hidden = np.tanh(x @ params["w"] + params["b"])
    assert isinstance(out["stats"], tuple) and out["stats"][1] is None
    assert isinstance(out["rows"], list)
    np.testing.assert_allclose(out["y"], hidden, rtol=1e-12)
    np.testing.assert_allclose(out["stats"][0], hidden.sum(), rtol=1e-12)
    np.testing.assert_allclose(out["rows"][1], hidden[-1], rtol=1e-12)


def test_control_flow_matches_numpy():
    _, x = _inputs()
    exported = numbax.deserialize(
        numbax.export(numbax.jit(_control_flow, static_argnums=1), x, 3).dumps()
    )
    positive, total, partial, halved = exported.call(x, backend="interpret")
    np.testing.assert_allclose(positive, x * 2.0 if x.sum() > 0 else -x, rtol=1e-12)
    np.testing.assert_allclose(total, x.sum(axis=0), rtol=1e-12)
    np.testing.assert_allclose(
        partial, np.concatenate([[0.0], np.cumsum(x.sum(axis=1))[:-1]]), rtol=1e-12, atol=1e-12
    )
    expected = np.abs(x) + 3
    while expected.max() > 1.0:
        expected = expected / 2.0
    np.testing.assert_array_equal(halved, expected)


def test_weak_types_and_avals_are_recorded():
    exported = numbax.export(numbax.jit(lambda x, s: x * s), np.ones(2, np.float32), 2.0)
    loaded = numbax.deserialize(exported.dumps())
    assert loaded.in_weak_types == (False, True)
    assert [a.str_short() for a in loaded.in_avals] == ["f32[2]", "f64[]"]
    assert [a.str_short() for a in loaded.out_avals] == ["f32[2]"]
    assert loaded.numbax_version == numbax.__version__
    # The weak scalar kept x's dtype at export (NEP 50): the program computes in float32.
    out = loaded(np.ones(2, np.float32), 3.0, backend="interpret")
    assert out.dtype == np.float32 and out.tolist() == [3.0, 3.0]


_DEFINING_MODULE = """
import numpy as np
import numbax

OFFSET = np.arange(2.0)


@numbax.jit(static_argnames="mode")
def model(params, x, mode="tanh"):
    hidden = x @ params["w"] + OFFSET
    act = np.tanh(hidden) if mode == "tanh" else np.maximum(hidden, 0.0)
    total = numbax.fori_loop(0, 3, lambda i, acc: acc + act.sum() * i, 0.0)
    return {"act": act, "total": total, "nothing": None}
"""

_CHILD = """
import importlib.util, sys
import numpy as np
assert importlib.util.find_spec("exported_model_source") is None, "the source is reachable"
assert importlib.util.find_spec("test_export") is None, "the test folder is on sys.path"
import numbax
exported = numbax.load(sys.argv[1])
data = np.load(sys.argv[2])
for backend in ("interpret", "cpu"):
    out = exported.call({"w": data["w"]}, data["x"], backend=backend)
    assert sorted(out) == ["act", "nothing", "total"] and out["nothing"] is None
    np.testing.assert_array_equal(out["act"], data["act"])
    np.testing.assert_array_equal(out["total"], data["total"])
print(exported.static_args)
"""


def test_exported_program_runs_in_a_process_without_its_source(tmp_path):
    source_dir = tmp_path / "source"
    source_dir.mkdir()
    source_file = source_dir / "exported_model_source.py"
    source_file.write_text(_DEFINING_MODULE)
    spec = importlib.util.spec_from_file_location("exported_model_source", source_file)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    params, x = {"w": np.linspace(-1.0, 1.0, 6).reshape(3, 2)}, np.arange(12.0).reshape(4, 3)
    expected = module.model(params, x, mode="relu")
    numbax.export(module.model, params, x, mode="relu").save(tmp_path / "model.json")
    np.savez(
        tmp_path / "data.npz", w=params["w"], x=x, **{k: expected[k] for k in ("act", "total")}
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["NUMBAX_CACHE_DIR"] = str(tmp_path / "cache")
    result = subprocess.run(
        [sys.executable, "-c", _CHILD, str(tmp_path / "model.json"), str(tmp_path / "data.npz")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "{'mode': 'relu'}"


def test_save_and_load(tmp_path):
    exported = numbax.export(numbax.jit(lambda x: x + 1), np.zeros(2))
    exported.save(tmp_path / "f.json")
    loaded = numbax.load(tmp_path / "f.json")
    assert loaded.dumps() == exported.dumps()
    (tmp_path / "bad.json").write_bytes(b"\xff\xfe\x00")
    with pytest.raises(SerializationError, match="bad.json"):
        numbax.load(tmp_path / "bad.json")


def test_exported_program_composes_with_jit_and_grad():
    exported = numbax.deserialize(
        numbax.export(numbax.jit(lambda x: np.sin(x) * 2.0), np.zeros(3)).dumps()
    )
    x = np.array([0.1, 0.5, -2.0])
    outer = numbax.jit(lambda v: exported(v) + 1.0, backend="interpret")
    np.testing.assert_allclose(outer(x), np.sin(x) * 2.0 + 1.0, rtol=1e-12)
    gradient = numbax.grad(lambda v: exported(v).sum())(x)
    np.testing.assert_allclose(gradient, 2.0 * np.cos(x), rtol=1e-12)
    rows = np.stack([x, -x])
    np.testing.assert_allclose(numbax.vmap(exported)(rows), np.sin(rows) * 2.0, rtol=1e-12)


# --- refusals at export ---------------------------------------------------------------------


class _Pair:
    def __init__(self, a, b):
        self.a, self.b = a, b


numbax.register_pytree_node(_Pair, lambda p: ((p.a, p.b), None), lambda _, c: _Pair(*c))


def test_registered_pytree_classes_are_refused_by_name():
    with pytest.raises(SerializationError, match=r"the arguments contain a _Pair"):
        numbax.export(numbax.jit(lambda p: p.a + p.b), _Pair(np.ones(2), np.ones(2)))
    with pytest.raises(SerializationError, match=r"the results contain a _Pair"):
        numbax.export(numbax.jit(lambda x: _Pair(x, x)), np.ones(2))


@pytest.mark.parametrize(
    "value, type_name",
    [(np.float32(2.0), "float32"), (frozenset({1}), "frozenset"), (2j, "complex")],
)
def test_static_arguments_json_cannot_hold_are_refused_by_name(value, type_name):
    scale = numbax.jit(lambda x, k: x, static_argnums=1)
    with pytest.raises(
        SerializationError, match=rf"static argument 1 of <lambda> has type {type_name}"
    ):
        numbax.export(scale, np.ones(2), value)


def test_a_method_of_an_object_that_is_no_pytree_is_refused_by_name():
    class Model:
        @numbax.jit
        def predict(self, x):
            return x * 2.0

    with pytest.raises(SerializationError, match=r"static argument 0 of predict has type Model"):
        numbax.export(Model().predict, np.ones(2))


def test_static_arguments_keep_their_types():
    function = numbax.jit(lambda x, k, name: x, static_argnums=(1, 2))
    statics = (2.0, (1, float("nan"), float("-inf"), None, True, "a"))
    loaded = numbax.deserialize(numbax.export(function, np.ones(2), *statics).dumps())
    assert type(loaded.static_args[1]) is float
    k = loaded.static_args[2]
    assert (
        k[0] == 1 and type(k[0]) is int and np.isnan(k[1]) and k[2:] == (-np.inf, None, True, "a")
    )


# --- refusals at call time ------------------------------------------------------------------


@pytest.fixture(scope="module")
def layer():
    params, x = _inputs()
    return numbax.deserialize(numbax.export(numbax.jit(_layer), params, x, extra=None).dumps())


def _call(exported, *args, **kwargs):
    return exported.call(*args, backend="interpret", **kwargs)


def test_wrong_shape_is_refused_naming_the_path(layer):
    params, x = _inputs()
    params["w"] = np.ones((3, 5))
    with pytest.raises(
        ShapeError, match=r"argument args\[0\]\['w'\] must be f64\[3,2\], got f64\[3,5\]"
    ) as err:
        _call(layer, params, x, extra=None)
    assert __file__ in str(err.value)  # the user's line


def test_wrong_dtype_is_refused_naming_the_path(layer):
    params, x = _inputs()
    with pytest.raises(
        NumbaxTypeError, match=r"argument args\[1\] must be f64\[4,3\], got f32\[4,3\]"
    ):
        _call(layer, params, x.astype(np.float32), extra=None)


def test_python_scalar_for_an_array_of_another_dtype_is_refused():
    exported = numbax.export(numbax.jit(lambda x, s: x * s), np.ones(2, np.float32), np.float32(2))
    with pytest.raises(NumbaxTypeError, match=r"args\[1\] must be f32\[\], got f64\[\]"):
        exported(np.ones(2, np.float32), 2.0)


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda p, x, kw: ((p,), kw), r"takes 2 positional arguments, got 1"),
        (lambda p, x, kw: ((p, x), {}), r"takes the keyword arguments \['extra'\], got \[\]"),
        (
            lambda p, x, kw: (({"w": p["w"]}, x), kw),
            r"argument args\[0\] must be a dict with keys \['b', 'w'\], got a dict "
            r"with keys \['w'\]",
        ),
        (
            lambda p, x, kw: ((p, (x,)), kw),
            r"argument args\[1\] must be an array, got a tuple of 1",
        ),
        (
            lambda p, x, kw: ((p, x), {"extra": x}),
            r"argument kwargs\['extra'\] must be None, got an array",
        ),
    ],
)
def test_wrong_structure_is_refused_naming_the_path(layer, mutate, message):
    params, x = _inputs()
    args, kwargs = mutate(params, x, {"extra": None})
    with pytest.raises(NumbaxTypeError, match=message):
        _call(layer, *args, **kwargs)


def test_non_array_leaf_is_refused_naming_the_path(layer):
    params, x = _inputs()
    params["b"] = "zero"
    with pytest.raises(NumbaxTypeError, match=r"argument args\[0\]\['b'\]: .*str"):
        _call(layer, params, x, extra=None)


# --- malformed files ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def text():
    function = numbax.jit(lambda x, k: {"a": x * k[0], "b": (np.sin(x), None)}, static_argnums=1)
    return numbax.export(function, np.ones(3), (2, 2.5)).dumps()


def test_truncated_text_raises_serialization_error(text):
    for end in range(0, len(text), max(1, len(text) // 97)):
        with pytest.raises(SerializationError):
            numbax.deserialize(text[:end])


def _edited(text, edit) -> str:
    data = json.loads(text)
    edit(data)
    return json.dumps(data)


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda d: d.update(version=2), "unsupported format version 2"),
        (lambda d: d.update(version=True), "unsupported format version True"),
        (lambda d: d.update(format="numbax.jaxpr"), "format must be"),
        (lambda d: d.pop("in_tree"), r"lacks \['in_tree'\]"),
        (lambda d: d.update(surprise=1), r"unknown fields \['surprise'\]"),
        (lambda d: d.update(name=3), "name must be a string"),
        (lambda d: d.update(in_weak_types=[0]), "in_weak_types must be a list of 1 bools"),
        (
            lambda d: d.update(in_tree={"tuple": [{"tuple": ["*", "*"]}, {"dict": []}]}),
            "in_tree has 2 leaves",
        ),
        (
            lambda d: d.update(in_tree={"tuple": [{"list": ["*"]}, {"dict": []}]}),
            "in_tree must be a tuple",
        ),
        (lambda d: d.update(out_tree={"set": []}), "unknown tree node 'set'"),
        (
            lambda d: d.update(out_tree={"dict": [["b", "*"], ["a", "*"]]}),
            "not distinct and sorted",
        ),
        (lambda d: d.update(out_tree={"dict": [[1, "*"], ["a", "*"]]}), "not distinct and sorted"),
        (lambda d: d.update(static_args=[[1, {"float": 1}]]), "bad float 1"),
        (lambda d: d.update(static_args=[[1, {"complex": [1, 2]}]]), "bad value"),
        (lambda d: d.update(static_args=[[1, 2], [1, 3]]), "given twice"),
        (lambda d: d.update(static_args=[[-1, 2]]), "position or a name"),
        (lambda d: d["jaxpr"].update(version=9), "unsupported version 9"),
        (lambda d: d["jaxpr"]["jaxpr"]["eqns"][0].update(prim="launch"), "unknown primitive"),
    ],
)
def test_edited_fields_raise_serialization_error(text, edit, message):
    with pytest.raises(SerializationError, match=message):
        numbax.deserialize(_edited(text, edit))


_WRONG_VALUES = [None, True, 0, -1, 2.5, "x", "*", [], [None], {}, {"tuple": 1}]


def _positions(data, path=()):
    """Every place in the wrapper (the jaxpr has its own fuzz test in tests/ir)."""
    if path == ("jaxpr",):
        return
    yield path
    children = (
        data.items()
        if isinstance(data, dict)
        else enumerate(data)
        if isinstance(data, list)
        else ()
    )
    for key, child in children:
        yield from _positions(child, (*path, key))


def _replaced(data, path, value):
    if not path:
        return value
    copy = json.loads(json.dumps(data))
    node = copy
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return copy


def test_any_wrong_value_anywhere_raises_serialization_error_or_loads(text):
    data = json.loads(text)
    for path in _positions(data):
        for value in _WRONG_VALUES:
            try:
                numbax.deserialize(json.dumps(_replaced(data, path, value)))
            except SerializationError:
                pass
