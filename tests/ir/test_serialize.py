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


INTEGERS = json.loads(ir.dumps(numbax.make_jaxpr(
    lambda i, b, x: (i * 3, b & True, x * np.float32(2))
)(np.ones(3, np.int32), np.ones(3, bool), np.ones(3, np.float32))))  # fmt: skip
# eqns: 0 mul i32 by 3:i32, 1 and bool with True:bool, 2 mul f32 by 2.0:f32
assert [e["prim"] for e in INTEGERS["jaxpr"]["eqns"]] == ["mul", "and", "mul"]
_I32_LIT, _BOOL_LIT, _F32_LIT = ((*EQN, k, "inputs", 1) for k in range(3))


def _on_integers(mutation):
    """A mutation of INTEGERS instead of GOOD."""

    def mutate(data):
        data.clear()
        data.update(copy.deepcopy(INTEGERS))
        mutation(data)

    return mutate


STRICT = {
    "bool literal for an int": _on_integers(_set(_I32_LIT, {"lit": True, "dtype": "i32"})),
    "float literal for an i32": _on_integers(_set(_I32_LIT, {"lit": 3.0, "dtype": "i32"})),
    "int literal for a bool": _on_integers(_set(_BOOL_LIT, {"lit": 1, "dtype": "bool"})),
    "bool literal for a float": _on_integers(_set(_F32_LIT, {"lit": True, "dtype": "f32"})),
    "int literal for a float": _on_integers(_set(_F32_LIT, {"lit": 2, "dtype": "f32"})),
    "float literal overflows f32": _on_integers(_set(_F32_LIT, {"lit": 1e39, "dtype": "f32"})),
    "literal with extra field": _set(
        EQN + (2, "inputs", 1), {"lit": 2.0, "dtype": "f64", "code": "x"}
    ),
    "bool as an axis": _set(EQN + (3, "params", "axes"), {"tuple": [True]}),
    "negative axis": _set(EQN + (3, "params", "axes"), {"tuple": [-1]}),
    "float as an axis": _set(EQN + (3, "params", "axes"), {"tuple": [{"float": 0.0}]}),
    "string as an axis": _set(EQN + (3, "params", "axes"), {"tuple": ["0"]}),
    "sub-jaxpr as an axis": _set(EQN + (3, "params", "axes"), {"jaxpr": GOOD["jaxpr"]}),
    "dimension numbers out of range": _set(
        EQN + (0, "params", "dimension_numbers"),
        {"tuple": [{"tuple": [{"tuple": [7]}, {"tuple": [0]}]}, {"tuple": [{"tuple": []}] * 2}]},
    ),
    "too many operands": _set(EQN + (1, "inputs"), [{"var": 2}, {"var": 2}]),
    "no operands": _set(EQN + (1, "inputs"), []),
    "eqn without source_info": _set(EQN + (1, "source_info"), _DELETE),
    "eqn with an unknown field": _set(EQN + (1, "exec"), "print(1)"),
    "version as a bool": _set(("version",), True),
    "var id as a bool": _set(EQN + (1, "inputs", 0), {"var": True}),
}


@pytest.mark.parametrize("mutation", STRICT.values(), ids=STRICT.keys())
def test_fields_of_the_wrong_type_or_range_raise_serialization_error(mutation):
    data = copy.deepcopy(GOOD)
    mutation(data)
    with pytest.raises(numbax.SerializationError):
        ir.loads(json.dumps(data))


def _control_flow(x):
    y = numbax.cond(x[0] > 0, lambda v: v * 2.0, lambda v: v - 1.0, x)
    return numbax.fori_loop(0, 2, lambda i, acc: acc + np.sin(acc), y) * 3.0


def _injected(marker) -> list[str]:
    """Texts that run code (creating ``marker``) if they escape a comment or a docstring."""
    code = f"__import__('pathlib').Path({str(marker)!r}).touch()"
    return [
        f"x.py:1\n{code}\ndef _rest():  #",
        f'x.py:1"""\n{code}\n"""',
        f"x.py:1\r{code}\u2028{code}\x0c",
    ]


def _with_text(closed, text: str) -> ir.ClosedJaxpr:
    """``closed`` through a file whose every source_info and name holds ``text``."""

    def visit(node):
        if isinstance(node, dict):
            for key, value in node.items():
                if key in ("source_info", "name") and isinstance(value, (str, type(None))):
                    node[key] = text
                else:
                    visit(value)
        elif isinstance(node, list):
            for value in node:
                visit(value)

    data = json.loads(ir.dumps(closed))
    visit(data)
    return ir.loads(json.dumps(data))


@pytest.mark.parametrize("fused", [False, True], ids=["traced", "fused"])
def test_text_from_a_loaded_file_never_runs_when_compiled(compiled_backend, tmp_path, fused):
    """A newline in source_info used to end the comment it was written into, so the cpu
    module ran the rest at import; a name could close the module docstring the same way."""
    from numbax import passes
    from numbax.backends import get_backend

    marker = tmp_path / "injected-code-ran"
    x = np.arange(1.0, 4.0 if not compiled_backend.simulated else 3.0)
    closed = numbax.make_jaxpr(_control_flow)(x)
    if fused:
        closed, _ = passes.optimize(closed)
    expected = ir.eval_jaxpr(closed.jaxpr, closed.consts, x)
    for text in _injected(marker):
        loaded = _with_text(closed, text)
        assert {e.source_info for e in loaded.eqns} == {text}
        executable = get_backend(compiled_backend).compile(loaded, text)
        got = compiled_backend.to_host(executable(x))
        assert not marker.exists(), f"{text!r} ran as code"
        np.testing.assert_allclose(got[0], expected[0], rtol=1e-12)
