"""JSON (de)serialisation: exact round trips, and malformed or hostile input always
raises SerializationError (never another exception, never a broken program)."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest

import numbax
from numbax import ir


def _program():
    weights = np.array([[1.5, -0.0], [np.inf, 2.0], [-np.inf, 1e-300]])
    inner = numbax.jit(lambda x: np.tanh(x) * 2.0, backend="interpret")

    def fn(x, w):
        y = inner(x @ w) + weights[:2].sum()
        return np.sum(y * np.float32(np.nan), axis=0), np.where(x > 0, x, -1.0)

    return numbax.make_jaxpr(fn)(np.ones((2, 3), np.float32), np.ones((3, 4), np.float32))


def test_round_trip_is_exact_for_special_values_and_sub_jaxprs():
    closed = _program()
    assert any(e.prim.name == "jit_call" for e in closed.eqns)
    text = ir.dumps(closed)
    loaded = ir.loads(text)
    assert str(loaded) == str(closed)
    assert ir.dumps(loaded) == text
    for a, b in zip(loaded.consts, closed.consts, strict=True):
        assert a.dtype == b.dtype and a.tobytes() == np.asarray(b).tobytes()
    assert [e.source_info for e in loaded.eqns] == [e.source_info for e in closed.eqns]


def test_round_trip_keeps_nan_payloads_and_negative_zero():
    payload = np.array([0x7FF8000000000123, 0x8000000000000000], np.uint64).view(np.float64)
    closed = numbax.make_jaxpr(lambda x: x + payload)(np.ones(2))
    (loaded,) = ir.loads(ir.dumps(closed)).consts
    assert loaded.view(np.uint64).tolist() == payload.view(np.uint64).tolist()


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64", "bool"])
def test_round_trip_of_extreme_constants(dtype):
    info = np.finfo(dtype) if dtype.startswith("float") else None
    if info is not None:
        values = np.array([info.max, info.tiny, -info.max, np.nan, np.inf], dtype)
    elif dtype == "bool":
        values = np.array([True, False])
    else:
        values = np.array([np.iinfo(dtype).min, np.iinfo(dtype).max, 0], dtype)
    closed = numbax.make_jaxpr(lambda x: (x, values, values[0]))(np.ones(1))
    loaded = ir.loads(ir.dumps(closed))
    out = ir.eval_jaxpr(loaded.jaxpr, loaded.consts, np.ones(1))
    np.testing.assert_array_equal(out[1], values)
    np.testing.assert_array_equal(out[2], values[0])
    assert str(loaded) == str(closed)


GOOD = json.loads(ir.dumps(numbax.make_jaxpr(
    lambda x, w: np.sum(np.tanh(x @ w) * 2.0, axis=0))(np.ones((2, 3)), np.ones((3, 4)))
))  # fmt: skip
# eqns: 0 dot_general, 1 tanh, 2 mul (literal operand), 3 reduce_sum
assert [e["prim"] for e in GOOD["jaxpr"]["eqns"]] == ["dot_general", "tanh", "mul", "reduce_sum"]


def _nested(depth: int) -> str:
    """A jaxpr whose single eqn calls a jaxpr whose single eqn calls ... ``depth`` deep
    (built as text: json.dumps itself would hit the recursion limit)."""
    jaxpr = '{"constvars": [], "invars": [], "eqns": [], "outvars": []}'
    for _ in range(depth):
        eqn = (
            '{"prim": "jit_call", "inputs": [], "outputs": [], "source_info": null, '
            f'"params": {{"jaxpr": {{"jaxpr": {jaxpr}}}, "name": "f"}}}}'
        )
        jaxpr = f'{{"constvars": [], "invars": [], "eqns": [{eqn}], "outvars": []}}'
    return f'{{"format": "numbax.jaxpr", "version": 1, "jaxpr": {jaxpr}, "consts": []}}'


def _set(path, value):
    """A mutation of GOOD: set the item at ``path`` (keys and indices) to ``value``."""

    def mutate(data):
        target = data
        for key in path[:-1]:
            target = target[key]
        if value is _DELETE:
            del target[path[-1]]
        else:
            target[path[-1]] = value

    return mutate


_DELETE = object()
EQN = ("jaxpr", "eqns")
HOSTILE = {
    "format": _set(("format",), "other"),
    "version": _set(("version",), 99),
    "unknown primitive": _set(EQN + (1, "prim"), "os.system"),
    "undefined var": _set(EQN + (1, "inputs", 0), {"var": 999}),
    "var id not an int": _set(EQN + (1, "inputs", 0), {"var": [1]}),
    "repeated var": _set(EQN + (1, "outputs", 0, 0), 0),
    "bad dtype": _set(("jaxpr", "invars", 0, 1), "c128"),
    "negative dim": _set(("jaxpr", "invars", 0, 2), [-1, 3]),
    "float dim": _set(("jaxpr", "invars", 0, 2), [2.0, 3]),
    "huge shape": _set(("jaxpr", "invars", 0, 2), [10**9] * 5),
    "wrong output type": _set(EQN + (0, "outputs", 0, 2), [7, 7]),
    "missing param": _set(EQN + (0, "params"), {}),
    "extra param": _set(EQN + (3, "params", "bogus"), 1),
    "param of wrong type": _set(EQN + (0, "params", "dimension_numbers"), 5),
    "param of wrong arity": _set(EQN + (0, "params", "dimension_numbers"), {"tuple": [1, 2, 3]}),
    "unknown param tag": _set(EQN + (0, "params", "dimension_numbers"), {"pickle": "..."}),
    "axis out of range": _set(EQN + (3, "params", "axes"), {"tuple": [99]}),
    "axes not a tuple": _set(EQN + (3, "params", "axes"), 0),
    "literal too big": _set(EQN + (2, "inputs", 1), {"lit": 10**30, "dtype": "i32"}),
    "literal not a number": _set(EQN + (2, "inputs", 1), {"lit": "__import__", "dtype": "f64"}),
    "literal missing": _set(EQN + (2, "inputs", 1), {"dtype": "f64"}),
    "literal of wrong dtype": _set(EQN + (2, "inputs", 1), {"lit": 2, "dtype": "i64"}),
    "const of wrong size": lambda d: (
        d["jaxpr"]["constvars"].append([50, "f64", [2]]),
        d["consts"].append({"dtype": "f64", "shape": [2], "hex": "00"}),
    ),
    "const not hex": lambda d: (
        d["jaxpr"]["constvars"].append([50, "f64", [1]]),
        d["consts"].append({"dtype": "f64", "shape": [1], "hex": "zz" * 8}),
    ),
    "const without binder": lambda d: d["consts"].append(
        {"dtype": "f64", "shape": [1], "hex": "00" * 8}
    ),
    "const of wrong shape": lambda d: (
        d["jaxpr"]["constvars"].append([50, "f64", [3]]),
        d["consts"].append({"dtype": "f64", "shape": [1], "hex": "00" * 8}),
    ),
    "eqn not an object": _set(EQN + (0,), ["dot_general"]),
    "outvars missing": _set(("jaxpr", "outvars"), _DELETE),
    "outvar undefined": _set(("jaxpr", "outvars"), [{"var": 1234}]),
    "source_info not text": _set(EQN + (0, "source_info"), 5),
    "sub-jaxpr not an object": _set(
        EQN + (0,),
        {
            "prim": "jit_call",
            "inputs": [],
            "outputs": [],
            "params": {"jaxpr": {"jaxpr": 5}, "name": "f"},
        },
    ),
    "deeply nested tuple param": _set(
        EQN + (0, "params", "dimension_numbers"), json.loads('{"tuple": [' * 400 + "]}" * 400)
    ),
}


@pytest.mark.parametrize("mutation", HOSTILE.values(), ids=HOSTILE.keys())
def test_hostile_structure_raises_serialization_error(mutation):
    data = copy.deepcopy(GOOD)
    mutation(data)
    with pytest.raises(numbax.SerializationError):
        ir.loads(json.dumps(data))


@pytest.mark.parametrize(
    "text",
    [
        "{",
        "",
        "null",
        "[]",
        "3",
        '"numbax.jaxpr"',
        "[" * 100_000 + "]" * 100_000,
        _nested(70),
        _nested(400),
    ],
    ids=[
        "truncated",
        "empty",
        "null",
        "list",
        "number",
        "string",
        "deep-json",
        "deep-jaxprs",
        "very-deep-jaxprs",
    ],
)
def test_not_a_jaxpr_raises_serialization_error(text):
    with pytest.raises(numbax.SerializationError):
        ir.loads(text)


def test_non_text_input_raises_serialization_error():
    with pytest.raises(numbax.SerializationError):
        ir.loads(None)


def test_moderate_nesting_loads():
    loaded = ir.loads(_nested(3))
    assert loaded.eqns[0].prim.name == "jit_call"


def test_error_is_a_value_error():
    assert issubclass(numbax.SerializationError, ValueError)
