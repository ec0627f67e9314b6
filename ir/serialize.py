"""JSON (de)serialisation of jaxprs: plain data, exact round trip, strict loading.

Variables become integer ids, literals and params become tagged JSON values, constant
arrays become dtype + shape + the little-endian bytes in hex (exact for every float,
NaN payloads included). Loading never evaluates anything: every field is checked, every
primitive must be registered, and the result is typechecked, so a malformed or hostile
file raises ``SerializationError`` instead of building a broken program.
"""

from __future__ import annotations

import json
import math

import numpy as np

from . import dtypes
from .core import ClosedJaxpr, Eqn, Jaxpr, Literal, ShapedArray, Var
from .errors import SerializationError, TypecheckError
from .primitive import PRIMITIVES
from .typecheck import typecheck

FORMAT = "numbax.jaxpr"
VERSION = 1
MAX_DEPTH = 64
MAX_ELEMENTS = 1 << 40


def dumps(closed: ClosedJaxpr) -> str:
    return json.dumps(
        {
            "format": FORMAT,
            "version": VERSION,
            "jaxpr": _dump_jaxpr(closed.jaxpr),
            "consts": [_dump_array(np.asarray(c)) for c in closed.consts],
        }
    )


def _dump_jaxpr(jaxpr: Jaxpr) -> dict:
    ids: dict[Var, int] = {}

    def binder(var):
        ids[var] = len(ids)
        return [ids[var], dtypes.short_name(var.aval.dtype), list(var.aval.shape)]

    def atom(a):
        if isinstance(a, Literal):
            return {"lit": _dump_scalar(a.val), "dtype": dtypes.short_name(a.aval.dtype)}
        return {"var": ids[a]}

    constvars = [binder(v) for v in jaxpr.constvars]
    invars = [binder(v) for v in jaxpr.invars]
    eqns = []
    for eqn in jaxpr.eqns:
        inputs = [atom(a) for a in eqn.inputs]
        eqns.append(
            {
                "prim": eqn.prim.name,
                "inputs": inputs,
                "outputs": [binder(v) for v in eqn.outputs],
                "params": {k: _dump_param(k, v) for k, v in eqn.params.items()},
                "source_info": eqn.source_info,
            }
        )
    return {
        "constvars": constvars,
        "invars": invars,
        "eqns": eqns,
        "outvars": [atom(a) for a in jaxpr.outvars],
    }


def _dump_scalar(value):
    value = np.asarray(value).item()
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)  # 'nan', 'inf', '-inf': JSON has no literal for them
    return value


def _dump_array(array: np.ndarray) -> dict:
    array = np.ascontiguousarray(array, dtype=dtypes.canonicalize(array.dtype))
    return {
        "dtype": dtypes.short_name(array.dtype),
        "shape": list(array.shape),
        "hex": array.astype(array.dtype.newbyteorder("<")).tobytes().hex(),
    }


def _dump_param(key, value):
    if isinstance(value, bool) or value is None or isinstance(value, (int, str)):
        return value
    if isinstance(value, float):
        return {"float": _dump_scalar(value)}
    if isinstance(value, np.dtype):
        return {"dtype": dtypes.short_name(value)}
    if isinstance(value, tuple):
        return {"tuple": [_dump_param(key, v) for v in value]}
    if isinstance(value, Jaxpr):
        return {"jaxpr": _dump_jaxpr(value)}
    if isinstance(value, ClosedJaxpr):
        return {"closed_jaxpr": json.loads(dumps(value))}
    raise SerializationError(
        f"param {key}={value!r} of type {type(value).__name__} cannot be serialised as JSON"
    )


def loads(text: str) -> ClosedJaxpr:
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, TypeError, RecursionError) as err:
        raise SerializationError(f"not a serialised jaxpr: {err}") from None
    closed = _load_closed(data, depth=0)
    try:
        typecheck(closed)
    except TypecheckError as err:
        raise SerializationError(f"serialised jaxpr does not typecheck: {err}") from None
    except (TypeError, ValueError, KeyError, IndexError) as err:
        # A shape rule handed params it was never written for (missing, extra or of the
        # wrong type): the file is malformed, whatever the rule tripped on.
        raise SerializationError(
            f"serialised jaxpr has invalid params: {type(err).__name__}: {err}"
        ) from None
    return closed


def _fail(message: str):
    raise SerializationError(f"malformed serialised jaxpr: {message}")


def _expect(condition: bool, message: str) -> None:
    if not condition:
        _fail(message)


def _load_closed(data, depth: int) -> ClosedJaxpr:
    _expect(isinstance(data, dict), "top level must be an object")
    _expect(data.get("format") == FORMAT, f"format must be {FORMAT!r}")
    _expect(data.get("version") == VERSION, f"unsupported version {data.get('version')!r}")
    jaxpr = _load_jaxpr(data.get("jaxpr"), depth)
    consts = data.get("consts")
    _expect(isinstance(consts, list), "consts must be a list")
    return ClosedJaxpr(jaxpr, [_load_array(c) for c in consts])


def _load_dtype(name) -> np.dtype:
    _expect(isinstance(name, str) and name in dtypes.FROM_SHORT_NAME, f"bad dtype {name!r}")
    return dtypes.FROM_SHORT_NAME[name]


def _load_shape(shape) -> tuple[int, ...]:
    _expect(isinstance(shape, list) and len(shape) <= 32, f"bad shape {shape!r}")
    _expect(all(type(d) is int and d >= 0 for d in shape), f"bad shape {shape!r}")
    _expect(math.prod(shape) <= MAX_ELEMENTS, f"shape {shape} is too large")
    return tuple(shape)


def _load_array(data) -> np.ndarray:
    _expect(isinstance(data, dict) and isinstance(data.get("hex"), str), "bad constant")
    dtype, shape = _load_dtype(data.get("dtype")), _load_shape(data.get("shape"))
    try:
        raw = bytes.fromhex(data["hex"])
    except ValueError:
        _fail("constant data is not hex")
    _expect(len(raw) == math.prod(shape) * dtype.itemsize, "constant data has the wrong size")
    return np.frombuffer(raw, dtype=dtype.newbyteorder("<")).astype(dtype).reshape(shape)


def _load_scalar(value, dtype: np.dtype):
    if isinstance(value, str):
        _expect(value in ("nan", "inf", "-inf"), f"bad scalar {value!r}")
        value = float(value)
    _expect(isinstance(value, (int, float)), f"bad scalar {value!r}")
    try:
        return np.array(value, dtype=dtype)  # an int out of the dtype's range raises
    except (OverflowError, ValueError):
        _fail(f"scalar {value!r} does not fit {dtype}")


def _load_jaxpr(data, depth: int) -> Jaxpr:
    _expect(depth <= MAX_DEPTH, "sub-jaxprs nested too deeply")
    _expect(isinstance(data, dict), "a jaxpr must be an object")
    env: dict[int, Var] = {}

    def binder(item):
        _expect(isinstance(item, list) and len(item) == 3, f"bad binder {item!r}")
        ident, dtype, shape = item
        _expect(type(ident) is int and ident not in env, f"bad or repeated var id {ident!r}")
        env[ident] = Var(ShapedArray(_load_shape(shape), _load_dtype(dtype)))
        return env[ident]

    def atom(item):
        _expect(isinstance(item, dict), f"bad atom {item!r}")
        if "var" in item:
            _expect(
                type(item["var"]) is int and item["var"] in env,
                f"use of undefined var {item['var']!r}",
            )
            return env[item["var"]]
        dtype = _load_dtype(item.get("dtype"))
        return Literal(_load_scalar(item.get("lit"), dtype), dtype)

    def binders(key, source):
        items = source.get(key)
        _expect(isinstance(items, list), f"{key} must be a list")
        return [binder(i) for i in items]

    constvars = binders("constvars", data)
    invars = binders("invars", data)
    eqns_data = data.get("eqns")
    _expect(isinstance(eqns_data, list), "eqns must be a list")
    eqns = []
    for item in eqns_data:
        _expect(isinstance(item, dict), "an eqn must be an object")
        name = item.get("prim")
        _expect(isinstance(name, str) and name in PRIMITIVES, f"unknown primitive {name!r}")
        inputs = item.get("inputs")
        _expect(isinstance(inputs, list), "eqn inputs must be a list")
        inputs = [atom(a) for a in inputs]
        params = item.get("params")
        _expect(isinstance(params, dict), "eqn params must be an object")
        params = {k: _load_param(v, depth) for k, v in params.items()}
        source_info = item.get("source_info")
        _expect(source_info is None or isinstance(source_info, str), "bad source_info")
        outputs = binders("outputs", item)
        eqns.append(Eqn(PRIMITIVES[name], inputs, outputs, params, source_info))
    outvars = data.get("outvars")
    _expect(isinstance(outvars, list), "outvars must be a list")
    return Jaxpr(constvars, invars, eqns, [atom(a) for a in outvars])


def _load_param(value, depth: int):
    if value is None or isinstance(value, (bool, int, str)):
        return value
    _expect(isinstance(value, dict) and len(value) == 1, f"bad param {value!r}")
    ((tag, body),) = value.items()
    if tag == "float":
        return float(_load_scalar(body, dtypes.float64))
    if tag == "dtype":
        return _load_dtype(body)
    if tag == "tuple":
        _expect(isinstance(body, list), "bad tuple param")
        return tuple(_load_param(v, depth + 1) for v in body)
    if tag == "jaxpr":
        return _load_jaxpr(body, depth + 1)
    if tag == "closed_jaxpr":
        return _load_closed(body, depth + 1)
    _fail(f"unknown param tag {tag!r}")
