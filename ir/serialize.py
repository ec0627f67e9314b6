"""JSON (de)serialisation of jaxprs: plain data, exact round trip, strict loading.

Variables become integer ids, literals and params become tagged JSON values, constant
arrays become dtype + shape + the little-endian bytes in hex (exact for every float,
NaN payloads included). Loading never evaluates anything: every field is checked (its
JSON type exactly: a bool is not an int, a float literal is not an i32; counts and sizes
are not negative), every primitive must be registered and its operand count and params
match its row of ``SIGNATURES``, and the result is typechecked, so a malformed or hostile
file raises ``SerializationError`` instead of building a broken program. Text fields
(``source_info``, names) may hold anything: the backends escape them (backends/source.py).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from . import dtypes, elementwise, fft, higher_order, reductions, structural, threefry
from .core import ClosedJaxpr, Eqn, Jaxpr, Literal, ShapedArray, Var
from .errors import SerializationError, TypecheckError
from .primitive import PRIMITIVES
from .typecheck import typecheck

FORMAT = "numbax.jaxpr"
VERSION = 1
MAX_DEPTH = 64
MAX_ELEMENTS = 1 << 40
MAX_RANK = 32


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
        _refuse_unserialisable(eqn.prim.name)
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
    if isinstance(value, complex):  # [re, im], each written as a float literal is
        return [_dump_scalar(value.real), _dump_scalar(value.imag)]
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
    """The jaxpr ``dumps`` wrote. Anything else raises ``SerializationError``.

    >>> import numpy as np, numbax
    >>> closed = numbax.make_jaxpr(lambda x: np.sin(x) * 2.0)(np.ones(3))
    >>> str(loads(dumps(closed))) == str(closed)
    True
    """
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, TypeError, RecursionError) as err:
        raise SerializationError(f"not a serialised jaxpr: {err}") from None
    closed = _load_closed(data, depth=0)
    try:
        typecheck(closed)
    except TypecheckError as err:
        raise SerializationError(f"serialised jaxpr does not typecheck: {err}") from None
    return closed


def fail(message: str, subject: str = "serialised jaxpr"):
    """Raise the one error every malformed file gets (``export`` reuses it)."""
    raise SerializationError(f"malformed {subject}: {message}")


def expect(condition: bool, message: str, subject: str = "serialised jaxpr") -> None:
    if not condition:
        fail(message, subject)


def brief(value) -> str:
    """A value quoted in an error, cut to 80 characters."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _expect_keys(data, keys: set, what: str, optional: frozenset = frozenset()) -> None:
    expect(isinstance(data, dict), f"{what} must be an object, not {brief(data)}")
    missing, extra = keys - optional - data.keys(), data.keys() - keys
    expect(not missing, f"{what} lacks {sorted(missing)}")
    expect(not extra, f"{what} has unknown fields {sorted(extra)}")


def _load_closed(data, depth: int) -> ClosedJaxpr:
    _expect_keys(data, {"format", "version", "jaxpr", "consts"}, "the top level")
    expect(data["format"] == FORMAT, f"format must be {FORMAT!r}")
    version = data["version"]
    expect(type(version) is int and version == VERSION, f"unsupported version {brief(version)}")
    jaxpr = _load_jaxpr(data["jaxpr"], depth)
    consts = data["consts"]
    expect(isinstance(consts, list), "consts must be a list")
    return ClosedJaxpr(jaxpr, [_load_array(c) for c in consts])


def _load_dtype(name) -> np.dtype:
    expect(isinstance(name, str) and name in dtypes.FROM_SHORT_NAME, f"bad dtype {brief(name)}")
    return dtypes.FROM_SHORT_NAME[name]


def _count(value) -> bool:
    return type(value) is int and 0 <= value <= MAX_ELEMENTS


def _load_shape(shape) -> tuple[int, ...]:
    expect(isinstance(shape, list) and len(shape) <= MAX_RANK, f"bad shape {brief(shape)}")
    expect(all(map(_count, shape)), f"bad shape {brief(shape)}")
    expect(math.prod(shape) <= MAX_ELEMENTS, f"shape {shape} is too large")
    return tuple(shape)


def _load_array(data) -> np.ndarray:
    _expect_keys(data, {"dtype", "shape", "hex"}, "a constant")
    dtype, shape = _load_dtype(data["dtype"]), _load_shape(data["shape"])
    expect(isinstance(data["hex"], str), "constant data must be a hex string")
    try:
        raw = bytes.fromhex(data["hex"])
    except ValueError:
        fail("constant data is not hex")
    expect(len(raw) == math.prod(shape) * dtype.itemsize, "constant data has the wrong size")
    return np.frombuffer(raw, dtype=dtype.newbyteorder("<")).astype(dtype).reshape(shape)


def _load_scalar(value, dtype: np.dtype):
    """A literal's value, of exactly the JSON type ``dumps`` writes for ``dtype``: a bool
    for bool, an int in range for an integer dtype, a float (or 'nan', 'inf', '-inf') for
    a float dtype, finite unless written as one of those names."""
    if dtype == dtypes.bool_:
        expect(type(value) is bool, f"a bool literal must be true or false, not {brief(value)}")
        return np.array(value, dtype)
    if dtypes.is_integer(dtype):
        info = np.iinfo(dtype)
        expect(
            type(value) is int and info.min <= value <= info.max,
            f"an {dtype} literal must be an integer in [{info.min}, {info.max}], not "
            f"{brief(value)}",
        )
        return np.array(value, dtype)
    if dtypes.is_complex(dtype):
        expect(
            isinstance(value, list) and len(value) == 2,
            f"a {dtype} literal must be a list [re, im], not {brief(value)}",
        )
        parts = [_load_scalar(part, dtypes.real_dtype(dtype)) for part in value]
        return np.array(complex(parts[0], parts[1]), dtype)
    if isinstance(value, str):
        expect(value in _NON_FINITE, f"bad float literal {brief(value)}")
        return np.array(float(value), dtype)
    expect(type(value) is float, f"a {dtype} literal must be a float, not {brief(value)}")
    with np.errstate(over="ignore"):
        scalar = np.array(value, dtype)
    expect(bool(np.isfinite(scalar)), f"literal {value!r} overflows {dtype}")
    return scalar


_NON_FINITE = ("nan", "inf", "-inf")
_EQN_KEYS = {"prim", "inputs", "outputs", "params", "source_info"}


def _load_jaxpr(data, depth: int) -> Jaxpr:
    expect(depth <= MAX_DEPTH, "sub-jaxprs nested too deeply")
    _expect_keys(data, {"constvars", "invars", "eqns", "outvars"}, "a jaxpr")
    env: dict[int, Var] = {}

    def binder(item):
        expect(isinstance(item, list) and len(item) == 3, f"bad binder {brief(item)}")
        ident, dtype, shape = item
        expect(type(ident) is int, f"var id {brief(ident)} is not an int")
        expect(ident not in env, f"var id {ident} is defined twice")
        env[ident] = Var(ShapedArray(_load_shape(shape), _load_dtype(dtype)))
        return env[ident]

    def atom(item):
        if isinstance(item, dict) and "var" in item:
            _expect_keys(item, {"var"}, "a var")
            ident = item["var"]
            expect(type(ident) is int and ident in env, f"use of undefined var {brief(ident)}")
            return env[ident]
        _expect_keys(item, {"lit", "dtype"}, "a literal")
        dtype = _load_dtype(item["dtype"])
        return Literal(_load_scalar(item["lit"], dtype), dtype)

    def items(source, key):
        found = source[key]
        expect(isinstance(found, list), f"{key} must be a list")
        return found

    constvars = [binder(i) for i in items(data, "constvars")]
    invars = [binder(i) for i in items(data, "invars")]
    eqns = []
    for item in items(data, "eqns"):
        _expect_keys(item, _EQN_KEYS, "an eqn")
        name = item["prim"]
        expect(isinstance(name, str) and name in PRIMITIVES, f"unknown primitive {brief(name)}")
        inputs = [atom(a) for a in items(item, "inputs")]
        expect(isinstance(item["params"], dict), f"the params of {name} must be an object")
        params = {k: _load_param(v, depth) for k, v in item["params"].items()}
        check_params(name, len(inputs), params)
        source_info = item["source_info"]
        expect(source_info is None or isinstance(source_info, str), "bad source_info")
        outputs = [binder(i) for i in items(item, "outputs")]
        eqns.append(Eqn(PRIMITIVES[name], inputs, outputs, params, source_info))
    outvars = [atom(a) for a in items(data, "outvars")]
    return Jaxpr(constvars, invars, eqns, outvars)


def _load_param(value, depth: int):
    expect(depth <= MAX_DEPTH, "params nested too deeply")
    if value is None or isinstance(value, (bool, int, str)):
        return value
    expect(isinstance(value, dict) and len(value) == 1, f"bad param {brief(value)}")
    ((tag, body),) = value.items()
    if tag == "float":
        return float(_load_scalar(body, dtypes.float64))
    if tag == "dtype":
        return _load_dtype(body)
    if tag == "tuple":
        expect(isinstance(body, list), "bad tuple param")
        return tuple(_load_param(v, depth + 1) for v in body)
    if tag == "jaxpr":
        return _load_jaxpr(body, depth + 1)
    if tag == "closed_jaxpr":
        return _load_closed(body, depth + 1)
    fail(f"unknown param tag {brief(tag)}")


# --- what each primitive's params must be ---------------------------------------------------
#
# The shape rules are written for the params the front end makes; a file may hold
# anything, so every param is checked against this table first (a rule then sees only
# values of the types it was written for, and checks their ranges against the operands).


@dataclass(frozen=True)
class Param:
    """What one param must be: a description for the error, and the test."""

    description: str
    accepts: Callable[[object], bool]


def _tuple_of(item: Param, length: int | None = None) -> Param:
    size = "" if length is None else f"{length} "
    return Param(
        f"a tuple of {size}{item.description}",
        lambda v: (
            isinstance(v, tuple)
            and (length is None or len(v) == length)
            and all(map(item.accepts, v))
        ),
    )


def _one_of(*choices: str) -> Param:
    return Param(f"one of {choices}", lambda v: isinstance(v, str) and v in choices)


COUNT = Param("a non-negative int", _count)
BOOL = Param("a bool", lambda v: type(v) is bool)
TEXT = Param("a string", lambda v: isinstance(v, str))
DTYPE = Param("a dtype", lambda v: isinstance(v, np.dtype) and v in dtypes.SUPPORTED)
INDEX_DTYPE = Param("an integer dtype", lambda v: DTYPE.accepts(v) and dtypes.is_integer(v))
EXPONENT = Param("an int in the int32 range", lambda v: type(v) is int and -(2**31) <= v < 2**31)
JAXPR = Param("a jaxpr", lambda v: isinstance(v, Jaxpr))
COUNTS = _tuple_of(COUNT)
DIMENSION_NUMBERS = _tuple_of(_tuple_of(COUNTS, 2), 2)


@dataclass(frozen=True)
class Signature:
    """A primitive's operand count (``variadic``: at least that many) and params."""

    operands: int
    params: dict[str, Param] = field(default_factory=dict)
    variadic: bool = False
    refused: str = ""  # why the primitive cannot be written to a file at all


# A callback's id names a Python function of this process only.
_CALLBACK = (
    "it calls a Python function, which a file cannot hold; serialise the program without "
    "numbax.debug and numbax.pure_callback calls"
)


def _elementwise_signatures() -> dict[str, Signature]:
    unary = {name: Signature(1) for name in elementwise.UNARY}
    binary = {name: Signature(2) for name in (*elementwise.BINARY, *elementwise.COMPARISONS)}
    return unary | binary


SIGNATURES: dict[str, Signature] = {
    **_elementwise_signatures(),
    "integer_pow": Signature(1, {"y": EXPONENT}),
    "select": Signature(3),
    "convert_element_type": Signature(1, {"new_dtype": DTYPE}),
    "stop_gradient": Signature(1),
    "threefry2x32": Signature(4, {"output": _one_of(*threefry.OUTPUTS)}),
    "broadcast_in_dim": Signature(1, {"shape": COUNTS, "broadcast_dimensions": COUNTS}),
    "reshape": Signature(1, {"new_sizes": COUNTS}),
    "transpose": Signature(1, {"permutation": COUNTS}),
    "squeeze": Signature(1, {"dimensions": COUNTS}),
    "expand_dims": Signature(1, {"dimensions": COUNTS}),
    "slice": Signature(1, {"start_indices": COUNTS, "limit_indices": COUNTS, "strides": COUNTS}),
    "dynamic_slice": Signature(1, {"slice_sizes": COUNTS}, variadic=True),
    "dynamic_update_slice": Signature(2, variadic=True),
    "gather": Signature(2, {"axis": COUNT}),
    "scatter": Signature(3, {"axis": COUNT, "mode": _one_of(*structural.SCATTER_MODES)}),
    "concatenate": Signature(1, {"dimension": COUNT}, variadic=True),
    "pad": Signature(2, {"padding_config": _tuple_of(_tuple_of(COUNT, 2))}),
    "iota": Signature(0, {"dtype": DTYPE, "shape": COUNTS, "dimension": COUNT}),
    **{name: Signature(1, {"axes": COUNTS}) for name in reductions.REDUCTIONS},
    "argmax": Signature(1, {"axis": COUNT, "index_dtype": INDEX_DTYPE}),
    "argmin": Signature(1, {"axis": COUNT, "index_dtype": INDEX_DTYPE}),
    "cumsum": Signature(1, {"axis": COUNT, "reverse": BOOL}),
    "sort": Signature(1, {"dimension": COUNT, "is_stable": BOOL, "num_keys": COUNT}, variadic=True),
    "dot_general": Signature(2, {"dimension_numbers": DIMENSION_NUMBERS}),
    "real": Signature(1),
    "imag": Signature(1),
    "conj": Signature(1),
    "complex": Signature(2),
    "fft": Signature(1, {"fft_type": _one_of(*fft.FFT_TYPES), "fft_lengths": COUNTS}),
    "cholesky": Signature(1),
    "triangular_solve": Signature(2, {"lower": BOOL, "transpose_a": BOOL, "unit_diagonal": BOOL}),
    "lu": Signature(1),
    "qr": Signature(1, {"full_matrices": BOOL}),
    "eigh": Signature(1),
    "svd": Signature(1, {"full_matrices": BOOL, "compute_uv": BOOL}),
    "jit_call": Signature(0, {"jaxpr": JAXPR, "name": TEXT}, variadic=True),
    "checkpoint": Signature(0, {"jaxpr": JAXPR, "name": TEXT}, variadic=True),
    "custom_vjp_call": Signature(
        0,
        {
            "jaxpr": JAXPR,
            "fwd_jaxpr": JAXPR,
            "bwd_jaxpr": JAXPR,
            "const_counts": _tuple_of(COUNT, 3),
        },
        variadic=True,
    ),
    "custom_jvp_call": Signature(
        0,
        {"jaxpr": JAXPR, "jvp_jaxpr": JAXPR, "const_counts": _tuple_of(COUNT, 2)},
        variadic=True,
    ),
    "kernel": Signature(
        0,
        {"jaxpr": JAXPR, "kind": _one_of(*higher_order.KERNEL_KINDS), "name": TEXT},
        variadic=True,
    ),
    "cond": Signature(1, {"branches": _tuple_of(JAXPR)}, variadic=True),
    "while": Signature(
        0,
        {"cond_jaxpr": JAXPR, "body_jaxpr": JAXPR, "cond_nconsts": COUNT, "body_nconsts": COUNT},
        variadic=True,
    ),
    "scan": Signature(
        0,
        {
            "jaxpr": JAXPR,
            "length": COUNT,
            "reverse": BOOL,
            "num_consts": COUNT,
            "num_carry": COUNT,
        },
        variadic=True,
    ),
    "debug_callback": Signature(0, variadic=True, refused=_CALLBACK),
    "pure_callback": Signature(0, variadic=True, refused=_CALLBACK),
}


def _refuse_unserialisable(name: str) -> None:
    signature = SIGNATURES.get(name)
    if signature is not None and signature.refused:
        raise SerializationError(f"primitive {name} cannot be serialised: {signature.refused}")


def check_params(name: str, operands: int, params: dict) -> None:
    """Raise ``SerializationError`` unless ``name`` may be applied to ``operands``
    operands with ``params`` (exactly its params, each of the right type)."""
    signature = SIGNATURES.get(name)
    expect(signature is not None, f"primitive {name} cannot be loaded from a file")
    _refuse_unserialisable(name)
    if signature.variadic:
        expect(
            operands >= signature.operands, f"{name} takes at least {signature.operands} operands"
        )
    else:
        expect(operands == signature.operands, f"{name} takes {signature.operands} operands")
    expect(
        params.keys() == signature.params.keys(),
        f"{name} takes the params {sorted(signature.params)}, not {sorted(params)}",
    )
    for key, rule in signature.params.items():
        expect(
            rule.accepts(params[key]),
            f"param {key} of {name} must be {rule.description}, not {brief(params[key])}",
        )
