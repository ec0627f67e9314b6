"""The shared corpus: one list of programs that every backend and transform is run over.

Each ``Case`` is a function over arrays, written the way a user writes it (plain
``numpy`` mostly, ``numbax.numpy`` where the case says so), a list of argument
signatures (shapes with broadcasting, size-1 and empty axes; dtypes), and a plain NumPy
oracle. Tests parametrise over ``CASES`` (or a tagged subset); they never copy a case.

    for case in cases("grad"):
        for signature in case.signatures:
            args = case.arguments(signature, rng)
            assert_tree_matches(jit(case.fn)(*args), case.oracle(*args), case.tolerance)

Tags: ``ufunc``, ``reduction``, ``linalg``, ``shape``, ``index``, ``update``,
``creation``, ``nn``, ``model`` (what the case exercises); ``grad`` marks a case whose
float outputs are smooth in its float arguments at the generated points (transform tests
differentiate it over ``case.grad_signatures``, the all-float ones); ``numbax_numpy``
marks a case written against ``numbax.numpy`` (its oracle is the same program over
plain NumPy).

The signatures of a case are ordered most informative first: compiled backends, where
every new signature is a compile, run only the first few (see ``conftest.py``).
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

import numbax
from numbax import nn
from numbax import numpy as xnp
from numbax.ir.dtypes import canonicalize
from numbax.passes.rewrite import subjaxprs

F32, F64, I32, I64, BOOL = "float32", "float64", "int32", "int64", "bool"
FLOATS = (F32, F64)
INTS = (I32, I64)
DTYPES = FLOATS + INTS + (BOOL,)
SHORT = {F32: "f32", F64: "f64", I32: "i32", I64: "i64", BOOL: "bool"}
# The narrow dtypes test_corpus_dtypes.py runs the corpus in.
SHORT.update({"int8": "i8", "int16": "i16", "uint8": "u8", "uint16": "u16", "uint32": "u32"})
SHORT.update({"uint64": "u64", "float16": "f16", "bfloat16": "bf16"})
C64, C128 = "complex64", "complex128"
SHORT.update({C64: "c64", C128: "c128"})

# How the values of an argument are drawn, so every program is evaluated inside its
# domain (logs of positives, divisions by non-zeros) and away from ties.
NORMAL, POSITIVE, UNIT, NONZERO, LARGE, PYTHON = (
    "normal", "positive", "unit", "nonzero", "large", "python"
)  # fmt: skip


@dataclass(frozen=True)
class Arg:
    """One argument: shape, dtype and how its values are drawn.

    ``values`` is one of the kinds above, or ``("index", n)`` for integers in
    ``[-n, n)`` (valid indices of an axis of size n, negatives included), or
    ``("class", n)`` for integers in ``[0, n)``.
    """

    shape: tuple[int, ...]
    dtype: str = F64
    values: str | tuple = NORMAL

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    def make(self, rng: np.random.Generator):
        if self.values == PYTHON:
            value = _draw(rng, (), self.dtype, NORMAL)
            return value.item()
        return _draw(rng, self.shape, self.dtype, self.values)

    def __str__(self):
        text = f"{SHORT[self.dtype]}[{','.join(map(str, self.shape))}]"
        return f"py_{text}" if self.values == PYTHON else text


def _draw(rng, shape, dtype, values) -> np.ndarray:
    if isinstance(values, tuple):
        kind, n = values
        low = -n if kind == "index" else 0
        return rng.integers(low, n, shape).astype(dtype)
    if dtype == BOOL:
        return rng.random(shape) < 0.5
    if dtype in INTS:
        if values == POSITIVE:
            return rng.integers(1, 6, shape).astype(dtype)
        out = rng.integers(-5, 6, shape).astype(dtype)
        if values == NONZERO:
            out[out == 0] = 3
        return out
    if dtype in (C64, C128):  # both parts drawn; POSITIVE: the right half-plane
        imaginary = rng.standard_normal(shape) * (0.5 if values == POSITIVE else 1.5)
        return np.asarray(_draw(rng, shape, F64, values) + 1j * imaginary, dtype=dtype)
    if values == POSITIVE:
        out = rng.uniform(0.1, 3.0, shape)
    elif values == UNIT:
        out = rng.uniform(-0.9, 0.9, shape)
    elif values == NONZERO:
        out = rng.uniform(0.5, 2.0, shape) * rng.choice([-1.0, 1.0], shape)
    elif values == LARGE:
        out = rng.standard_normal(shape) * 1e4
    else:
        out = rng.standard_normal(shape) * 2.0
    return np.asarray(out, dtype=dtype)


def _arg_maker(dtype):
    def make(*shape, values=NORMAL):
        return Arg(tuple(shape), dtype, values)

    make.__name__ = SHORT[dtype]
    return make


f32, f64, i32, i64, boolean = map(_arg_maker, DTYPES)
c64, c128 = map(_arg_maker, (C64, C128))


def py_float() -> Arg:
    """A Python float argument: weakly typed under jit (NEP 50), as in NumPy."""
    return Arg((), F64, PYTHON)


def py_int() -> Arg:
    return Arg((), I64, PYTHON)


# Relative and absolute tolerance per result dtype: the interpreter runs NumPy itself;
# compiled code may use other libm routines and fused multiply-adds.
TOLERANCE = {np.dtype(F32): 1e-6, np.dtype(F64): 1e-12}
TOLERANCE.update({np.dtype(C64): 1e-6, np.dtype(C128): 1e-12})
NARROW_TOLERANCE = 1e-3  # float16
REDUCTION_SCALE = 100.0  # sums of many terms: rounding grows with the reduction length


@dataclass(frozen=True)
class Case:
    name: str
    fn: Callable
    signatures: tuple[tuple[Arg, ...], ...]
    reference: Callable | None = None  # the NumPy oracle; default: ``fn`` over NumPy
    tags: frozenset = frozenset()
    tolerance: float = 1.0  # multiplies TOLERANCE

    def arguments(self, signature, rng: np.random.Generator) -> tuple:
        return tuple(arg.make(rng) for arg in signature)

    @property
    def grad_signatures(self) -> list[tuple[Arg, ...]]:
        """The signatures whose arguments are all float arrays: those a transform test
        differentiates (``grad`` promises smoothness in float arguments only)."""
        return [
            s for s in self.signatures if all(a.dtype in FLOATS and a.values != PYTHON for a in s)
        ]

    @staticmethod
    def float_argnums(signature) -> tuple[int, ...]:
        """Positions of the float array arguments: what to differentiate when a
        signature also has integer arguments (indices, labels), as ``take`` does."""
        return tuple(k for k, a in enumerate(signature) if a.dtype in FLOATS and a.values != PYTHON)

    def oracle(self, *args):
        # NumPy warns on log(0), empty means and the like; numbax returns the same
        # inf/nan quietly, and the comparison is what the test is about.
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            return (self.reference or self.fn)(*args)

    def __str__(self):
        return self.name


def signature_id(signature) -> str:
    return ",".join(map(str, signature)) or "()"


def assert_tree_matches(actual, expected, tolerance: float = 1.0, where: str = "") -> None:
    """Same tree, and per leaf the same dtype, shape and values (NaNs match NaNs)."""
    actual_leaves, actual_tree = numbax.tree_flatten(actual)
    expected_leaves, expected_tree = numbax.tree_flatten(expected)
    assert actual_tree == expected_tree, f"{where}: tree {actual_tree} != {expected_tree}"
    for k, (got, want) in enumerate(zip(actual_leaves, expected_leaves, strict=True)):
        assert_array_matches(got, want, tolerance, f"{where} output {k}")


def assert_array_matches(actual, expected, tolerance: float = 1.0, where: str = "") -> None:
    """``expected`` comes from NumPy: the same dtype, and values within the tolerance of
    the result's dtype (float16 and bfloat16 by their epsilon)."""
    expected = np.asarray(expected)
    dtype = canonicalize(expected.dtype)
    assert isinstance(actual, np.ndarray), f"{where}: got {type(actual).__name__}, not ndarray"
    assert actual.dtype == dtype, f"{where}: dtype {actual.dtype} != {dtype}"
    assert actual.shape == expected.shape, f"{where}: shape {actual.shape} != {expected.shape}"
    if expected.dtype.kind in "fc":
        tol = TOLERANCE.get(expected.dtype, NARROW_TOLERANCE) * tolerance
        np.testing.assert_allclose(actual, expected, rtol=tol, atol=tol, err_msg=where)
    else:
        np.testing.assert_array_equal(actual, expected, err_msg=where)


# Numba's compile time grows faster than the program: a bundle of many small cases
# compiles in groups of at most this many traced eqns (see tests/tracer/test_corpus_numpy.py).
GROUP_EQNS = 24


def traced_eqns(fn, args) -> int:
    """The eqns of ``fn(*args)`` as traced, those of its sub-jaxprs included."""
    return _eqn_count(numbax.make_jaxpr(fn)(*args).jaxpr)


def _eqn_count(jaxpr) -> int:
    return sum(1 + sum(map(_eqn_count, subjaxprs(eqn))) for eqn in jaxpr.eqns)


def in_groups(items: list, sizes: list[int], limit: int = GROUP_EQNS) -> list[list]:
    """``items`` in order, cut into groups whose ``sizes`` add up to at most ``limit``
    (an item larger than that is a group of its own)."""
    groups, total = [[]], 0
    for item, size in zip(items, sizes, strict=True):
        if groups[-1] and total + size > limit:
            groups.append([])
            total = 0
        groups[-1].append(item)
        total += size
    return groups


CASES: list[Case] = []


def case(name, signatures, *, reference=None, tags=(), tolerance=1.0):
    """Decorator: register ``fn`` as a corpus case."""

    def register(fn):
        CASES.append(
            Case(name, fn, tuple(map(tuple, signatures)), reference, frozenset(tags), tolerance)
        )
        return fn

    return register


def dual_case(name, signatures, *, tags=(), tolerance=1.0):
    """A case written once over a NumPy-like namespace: traced through ``numbax.numpy``,
    checked against the same program over plain NumPy."""

    def register(make):
        CASES.append(
            Case(
                name,
                make(xnp),
                tuple(map(tuple, signatures)),
                make(np),
                frozenset(tags) | {"numbax_numpy"},
                tolerance,
            )
        )
        return make

    return register


def cases(*tags: str) -> list[Case]:
    """The cases that carry every tag in ``tags``."""
    return [c for c in CASES if c.tags.issuperset(tags)]


def by_name(name: str) -> Case:
    return next(c for c in CASES if c.name == name)


# --------------------------------------------------------------------------------------
# Elementwise chains, promotion and weak types

BINARY_SHAPES = [((3, 4), (4,)), ((2, 1, 4), (3, 1)), ((), (3,)), ((0, 4), (4,)),
                 ((1,), (5,)), ((3, 4), (3, 4))]  # fmt: skip


def _pairs(dtype_a, dtype_b=None, values_b=NORMAL, shapes=BINARY_SHAPES):
    dtype_b = dtype_b or dtype_a
    return [(Arg(a, dtype_a), Arg(b, dtype_b, values_b)) for a, b in shapes]


@case("chain_tanh", [(f32(3, 4),), (f64(5),), (f32(),), (f64(0, 3),), (f32(1, 1),)], tags=["grad"])
def chain_tanh(x):
    return np.tanh(x * 1.5 + 0.5) * 0.5 + x * x


@case("chain_broadcast", _pairs(F32) + _pairs(F64, shapes=BINARY_SHAPES[:3]), tags=["grad"])
def chain_broadcast(x, y):
    return np.exp(-x * x) * np.sin(y) + np.cos(x) / (1.0 + y * y)


@case(
    "chain_mixed_dtypes",
    [(f32(3, 4), i32(4)), (f64(3), i64(3)), (i32(2, 3), boolean(3)), (f32(2), boolean(2))],
)
def chain_mixed_dtypes(x, i):
    return x * i - i / 2 + np.maximum(x, i)


@case(
    "python_scalars",
    [(f32(3, 4), py_float()), (i32(3), py_int()), (f64(2), py_int()), (i64(3), py_float())],
)
def python_scalars(x, s):
    return x * s + s - 2 * x


@case(
    "chain_int",
    [
        (i32(3, 4), i32(4, values=NONZERO)),
        (i64(5), i64(5, values=NONZERO)),
        (i32(2, 3), i64(3, values=NONZERO)),
    ],
)
def chain_int(a, b):
    return (a * 3 - b) % b + np.maximum(a, b) * (a > b) - a // b + np.abs(a) ** 2


@case("chain_logic", _pairs(F32, shapes=BINARY_SHAPES[:4]) + _pairs(I32, shapes=[((5,), (5,))]))
def chain_logic(x, y):
    mask = ((x > y) & (x < 2 * y)) | ~(x == y) ^ (y >= 0.5)
    return np.where(mask, x, y), np.logical_and(mask, x != 0), np.logical_not(mask)


@case(
    "chain_where_clip",
    [(f32(3, 4), f32(4)), (f64(2, 1, 3), f64(4, 1)), (i32(5), i32(5))],
    tags=["grad"],
)
def chain_where_clip(x, y):
    return np.where(x > 0, x * y, -y) + np.clip(x, -1, 1) + np.clip(y, None, 0.5)


@case("clip_array_bounds", [(f32(3, 4), f32(4), f32(3, 1)), (i64(5), i64(5), i64(5))])
def clip_array_bounds(x, lo, hi):
    return np.clip(x, lo, lo + np.abs(hi)), np.minimum(np.maximum(x, lo), hi)


# --------------------------------------------------------------------------------------
# Every ufunc, for every dtype NumPy accepts it on

UNARY_UFUNCS = {
    "negative": NORMAL, "positive": NORMAL, "absolute": NORMAL, "fabs": NORMAL,
    "sign": NORMAL, "floor": NORMAL, "ceil": NORMAL, "rint": NORMAL, "exp": NORMAL,
    "exp2": NORMAL, "log": POSITIVE, "log2": POSITIVE, "log10": POSITIVE, "log1p": POSITIVE,
    "expm1": NORMAL, "sin": NORMAL, "cos": NORMAL, "tan": UNIT, "sinh": NORMAL,
    "cosh": NORMAL, "tanh": NORMAL, "sqrt": POSITIVE, "square": NORMAL, "reciprocal": NONZERO,
    "logical_not": NORMAL, "invert": NORMAL, "isnan": NORMAL, "isinf": NORMAL,
    "isfinite": NORMAL,
}  # fmt: skip
BINARY_UFUNCS = {
    "add": NORMAL, "subtract": NORMAL, "multiply": NORMAL, "divide": NONZERO,
    "true_divide": NONZERO, "floor_divide": NONZERO, "power": POSITIVE, "remainder": NONZERO,
    "mod": NONZERO, "fmod": NONZERO, "maximum": NORMAL, "minimum": NORMAL, "arctan2": NORMAL,
    "equal": NORMAL, "not_equal": NORMAL, "less": NORMAL, "less_equal": NORMAL,
    "greater": NORMAL, "greater_equal": NORMAL, "logical_and": NORMAL, "logical_or": NORMAL,
    "logical_xor": NORMAL, "bitwise_and": NORMAL, "bitwise_or": NORMAL, "logaddexp": NORMAL,
}  # fmt: skip
# Binary ufuncs whose first operand is drawn positive: a negative base to a fractional
# power is NaN.
_POSITIVE_FIRST = {"power"}
# NumPy accepts these on integers but numbax does not (documented in the README):
# an integer array raised to an integer *array* needs a data-dependent loop.
UNSUPPORTED = {("power", I32), ("power", I64), ("power", BOOL)}
_SMOOTH = {
    "negative", "positive", "exp", "exp2", "log", "log2", "log10", "log1p", "expm1", "sin",
    "cos", "tan", "sinh", "cosh", "tanh", "sqrt", "square", "reciprocal", "add", "subtract",
    "multiply", "divide", "true_divide", "power", "arctan2", "logaddexp",
}  # fmt: skip


def numpy_accepts(ufunc: np.ufunc, dtype: str) -> bool:
    """Whether NumPy has a loop for ``ufunc`` on ``dtype`` (asked of NumPy, not listed)."""
    try:
        ufunc.resolve_dtypes((np.dtype(dtype),) * ufunc.nin + (None,) * ufunc.nout)
    except TypeError:
        return False
    return True


def _ufunc_case(name, values, nin):
    ufunc = getattr(np, name)
    dtypes = [d for d in DTYPES if numpy_accepts(ufunc, d) and (name, d) not in UNSUPPORTED]
    first = POSITIVE if name in _POSITIVE_FIRST else NORMAL
    if nin == 1:
        signatures = [(Arg((3, 4), d, values),) for d in dtypes]
        signatures += [(Arg(s, dtypes[0], values),) for s in [(), (0, 3), (1, 5)]]
    else:
        signatures = [(Arg((3, 4), d, first), Arg((4,), d, values)) for d in dtypes]
        signatures += [
            (Arg(a, dtypes[0], first), Arg(b, dtypes[0], values)) for a, b in BINARY_SHAPES[1:]
        ]
        mixed = [(F32, I32), (I32, I64), (F32, F64), (BOOL, I32), (I64, F32)]
        signatures += [
            (Arg((3, 1), a, first), Arg((4,), b, values))
            for a, b in mixed
            if a in dtypes and b in dtypes
        ]
    tags = {"ufunc"} | ({"grad"} if name in _SMOOTH else set())
    CASES.append(Case(f"ufunc_{name}", ufunc, tuple(signatures), None, frozenset(tags)))


for _name, _values in UNARY_UFUNCS.items():
    _ufunc_case(_name, _values, 1)
for _name, _values in BINARY_UFUNCS.items():
    _ufunc_case(_name, _values, 2)


@case(
    "ufuncs_float_grad",
    [
        (f32(3, 4, values=POSITIVE), f32(4, values=NONZERO)),
        (f64(2, 3, values=POSITIVE), f64(3, values=NONZERO)),
    ],
    tags=["grad", "ufunc"],
)
def ufuncs_float_grad(x, y):
    return (
        np.exp(x)
        - np.log(x)
        + np.sin(y) * np.cos(x)
        + np.tanh(y)
        + np.sqrt(x)
        + x / y
        + x**y
        + np.arctan2(x, y)
        + np.logaddexp(x, y)
        + np.square(y)
        + np.log1p(x)
        - np.expm1(-x)
        + np.reciprocal(y)
        + np.power(x, 3)
    )


# --------------------------------------------------------------------------------------
# Reductions

_REDUCE_SHAPES = [(3, 4, 5), (2, 1, 3), (0, 4, 2)]
_REDUCTION_KWARGS = [{}, {"axis": 0}, {"axis": -1}, {"axis": (0, 2)}, {"axis": 1, "keepdims": True},
                     {"axis": None, "keepdims": True}]  # fmt: skip


def _reduction_case(fname, kwargs, dtypes, empty_ok=True):
    fn = functools.partial(getattr(np, fname), **kwargs)
    label = "_".join(f"{k}{v}" for k, v in kwargs.items()).replace(" ", "").replace(",", "_")
    shapes = _REDUCE_SHAPES if empty_ok else _REDUCE_SHAPES[:2]
    signatures = [(Arg(_REDUCE_SHAPES[0], d),) for d in dtypes]
    signatures += [(Arg(s, dtypes[0]),) for s in shapes[1:]]
    grad = fname in ("sum", "mean", "var", "std", "prod", "max", "min")
    tags = {"reduction"} | ({"grad"} if grad else set())
    CASES.append(
        Case(
            f"{fname}_{label or 'all'}",
            fn,
            tuple(signatures),
            None,
            frozenset(tags),
            REDUCTION_SCALE,
        )
    )


for _kwargs in _REDUCTION_KWARGS:
    for _fname in ("sum", "prod", "mean", "var", "std"):
        _reduction_case(_fname, _kwargs, FLOATS)
        if _fname in ("sum", "mean"):
            _reduction_case(_fname, _kwargs, INTS + (BOOL,))
    for _fname in ("max", "min"):
        _reduction_case(_fname, _kwargs, FLOATS, empty_ok=False)
        _reduction_case(_fname, _kwargs, INTS + (BOOL,), empty_ok=False)
for _kwargs in [{}, {"axis": 0}, {"axis": -1}, {"axis": 1, "keepdims": True}]:
    for _fname in ("argmax", "argmin"):
        _reduction_case(_fname, _kwargs, DTYPES, empty_ok=False)


@case(
    "reductions_methods",
    [(f32(3, 4),), (f64(2, 5),), (i32(4, 3),)],
    tags=["reduction"],
    tolerance=REDUCTION_SCALE,
)
def reductions_methods(x):
    return (
        x.sum(axis=1),
        x.mean(0),
        x.max(),
        x.min(axis=-1, keepdims=True),
        x.argmax(1),
        x.prod(axis=0),
        np.add.reduce(x, axis=0),
        np.maximum.reduce(x, axis=1),
        np.var(x, ddof=1),
        x.std(axis=0),
    )


@case(
    "reduction_dtype_argument",
    [(i32(3, 4),), (boolean(3, 4),), (f32(3, 4),)],
    tags=["reduction"],
    tolerance=REDUCTION_SCALE,
)
def reduction_dtype_argument(x):
    return np.sum(x, dtype=np.float64), np.mean(x, axis=0, dtype=np.float32)


@case(
    "cumsum",
    [(f32(3, 4),), (f64(5),), (i32(2, 3, 2),), (boolean(4, 3),), (f64(0, 3),)],
    tags=["reduction"],
    tolerance=REDUCTION_SCALE,
)
def cumsum(x):
    return np.cumsum(x), np.cumsum(x, axis=0), np.cumsum(x, axis=-1), x.cumsum(axis=0)


@case(
    "cumsum_float",
    [(f32(3, 4),), (f64(2, 5),)],
    tags=["reduction", "grad"],
    tolerance=REDUCTION_SCALE,
)
def cumsum_float(x):
    return np.cumsum(x, axis=-1) * 2.0 + np.cumsum(x)[-1]


# --------------------------------------------------------------------------------------
# Contractions


@case(
    "matmul",
    [
        (f32(3, 4), f32(4, 5)),
        (f64(2, 3, 4), f64(4, 2)),
        (f64(2, 1, 3, 4), f64(5, 4, 2)),
        (f32(4), f32(4, 3)),
        (f64(2, 3, 4), f64(4)),
        (f64(4), f64(4)),
        (i32(3, 4), i32(4, 2)),
        (i64(2, 3), i32(3, 2)),
        (f32(3, 4), i32(4, 2)),
        (f64(0, 3), f64(3, 2)),
        (f64(3, 0), f64(0, 2)),
        (boolean(2, 3), boolean(3, 2)),
    ],
    tags=["linalg", "grad"],
    tolerance=REDUCTION_SCALE,
)
def matmul(a, b):
    return a @ b


@case(
    "matmul_functions",
    [(f32(3, 4), f32(4, 5)), (f64(2, 3, 4), f64(2, 4, 5))],
    tags=["linalg", "grad"],
    tolerance=REDUCTION_SCALE,
)
def matmul_functions(a, b):
    return np.matmul(a, b), np.matmul(b.swapaxes(-1, -2), a.swapaxes(-1, -2))


@case(
    "dot",
    [
        (f32(3, 4), f32(4, 5)),
        (f64(4), f64(4)),
        (f64(2, 3, 4), f64(5, 4, 2)),
        (f64(3, 4), f64(4)),
        (f64(), f64(3)),
        (i32(3, 4), i32(4)),
        (i64(2, 3), f32(3, 2)),
    ],
    tags=["linalg", "grad"],
    tolerance=REDUCTION_SCALE,
)
def dot(a, b):
    return np.dot(a, b), a.dot(b)


@case(
    "tensordot",
    [(f32(2, 3, 4), f32(3, 4, 5)), (f64(3, 4, 2), f64(4, 3, 2))],
    tags=["linalg", "grad"],
    tolerance=REDUCTION_SCALE,
)
def tensordot(a, b):
    if a.shape[1:] == b.shape[:2]:
        return np.tensordot(a, b), np.tensordot(a, b, axes=([1], [0]))
    return np.tensordot(a, b, axes=([1, 0], [0, 1])), np.tensordot(a, b, axes=(2, 2))


@case(
    "einsum",
    [(f32(3, 4), f32(4, 5), f32(2, 3, 4)), (f64(2, 2), f64(2, 3), f64(3, 2, 2))],
    tags=["linalg", "grad"],
    tolerance=REDUCTION_SCALE,
)
def einsum(a, b, c):
    return (
        np.einsum("ij,jk->ik", a, b),
        np.einsum("ij->ji", a),
        np.einsum("ij->", a),
        np.einsum("ij,jk", a, b),
        np.einsum("bij,jk->bik", c, b),
        np.einsum("ij,ij->i", a, a),
        np.einsum("i,j->ij", a[0], b[0]),
        np.einsum("bij,bkj->bik", c, c),
        np.einsum("ij,jk,kl->il", a, b, b.T),
    )


@case(
    "outer_inner_vdot",
    [(f32(3), f32(4)), (f64(2, 2), f64(3)), (i32(3), i64(2))],
    tags=["linalg", "grad"],
    tolerance=REDUCTION_SCALE,
)
def outer_inner_vdot(a, b):
    return np.outer(a, b), np.inner(a.ravel(), a.ravel()), np.vdot(b, b)


# --------------------------------------------------------------------------------------
# Shape operations


@case(
    "reshape_family",
    [(f32(2, 3, 4),), (i32(2, 3, 4),), (boolean(2, 3, 4),), (f64(2, 0, 4),)],
    tags=["shape", "grad"],
)
def reshape_family(x):
    return (
        x.reshape(x.shape[0], -1),
        np.reshape(x, x.shape[::-1]),
        x.reshape(-1),
        np.ravel(x),
        x.flatten(),
        x.transpose(),
        np.transpose(x, (1, 0, 2)),
        x.T,
        np.swapaxes(x, 0, 2),
        np.moveaxis(x, 0, -1),
        np.moveaxis(x, [0, 1], [-1, 0]),
        x.transpose(2, 0, 1),
    )


@case("squeeze_expand", [(f32(1, 3, 1),), (i64(1, 3, 1),), (f64(1, 0, 1),)], tags=["shape", "grad"])
def squeeze_expand(x):
    return (
        np.squeeze(x),
        x.squeeze(axis=0),
        np.squeeze(x, axis=(0, 2)),
        np.expand_dims(x, 0),
        np.expand_dims(x, -1),
        np.expand_dims(x, (0, 2)),
    )


@case("broadcast_to", [(f32(3, 1),), (i32(1, 1),), (boolean(3, 1),)], tags=["shape", "grad"])
def broadcast_to(x):
    a, b = np.broadcast_arrays(x, np.ones((2, 1, 4), x.dtype))
    return np.broadcast_to(x, (2, 3, 4)), np.broadcast_to(x, (3, 0)), a, b


@case("concatenate_stack", [(f32(2, 3), f32(2, 3)), (i32(1, 4), i64(1, 4)), (f64(0, 2), f64(0, 2)),
                            (f32(2, 3), i32(2, 3))], tags=["shape", "grad"])  # fmt: skip
def concatenate_stack(a, b):
    return (
        np.concatenate([a, b]),
        np.concatenate((a, b, a), axis=1),
        np.concatenate([a, b], axis=None),
        np.stack([a, b]),
        np.stack([a, b], axis=-1),
        np.hstack([a, b]),
        np.vstack([a, b]),
        np.concatenate([a]),
    )


@case("split", [(f32(4, 6),), (i32(4, 6),), (f64(2, 6),)], tags=["shape", "grad"])
def split(x):
    a, b = np.split(x, 2)
    c, d, e = np.split(x, [1, 4], axis=1)
    f, g = np.split(x, [0, 10], axis=1)[:2]
    return a, b, c, d, e, f, g, np.array_split(x, 3, axis=1)


@case(
    "pad",
    [
        (f32(2, 3),),
        (
            i32(
                3,
            ),
        ),
        (f64(0, 2),),
        (boolean(2, 2),),
    ],
    tags=["shape", "grad"],
)
def pad(x):
    wide = [(1, 2)] * x.ndim
    return np.pad(x, wide), np.pad(x, 1, constant_values=7), np.pad(x, [(0, 0)] * x.ndim)


@case("flip", [(f32(3, 4),), (i32(2, 3, 2),)], tags=["shape", "grad"])
def flip(x):
    return np.flip(x), np.flip(x, axis=0), np.flip(x, axis=-1)


# --------------------------------------------------------------------------------------
# Indexing (reads) and functional updates (.at[])

_MASK = np.array([True, False, True, True])


@case(
    "basic_indexing",
    [(f32(4, 5, 3),), (i32(4, 5, 3),), (boolean(4, 5, 3),), (f64(4, 1, 3),)],
    tags=["index", "grad"],
)
def basic_indexing(x):
    return (
        x[1],
        x[-1],
        x[1:3],
        x[::2],
        x[::-1],
        x[None],
        x[..., 0],
        x[:, None, 1:],
        x[1, :, -2],
        x[..., None],
        x[2:0:-1, ::2],
        x[np.int64(1)],
        x[:, 0:0],
    )


@case(
    "integer_array_indexing",
    [(f32(4, 5, 3),), (i64(4, 5, 3),), (boolean(4, 5, 3),)],
    tags=["index", "grad"],
)
def integer_array_indexing(x):
    rows, cols = np.array([0, 2, -1]), np.array([[1], [4]])
    return (
        x[rows],
        x[[0, 0, 1]],
        x[:, cols],
        x[rows, 1:3],
        x[rows[:2], cols],
        x[rows, :, 1],
        x[1, rows[:2]],
        x[..., np.array([2, 0])],
        x[_MASK],
        x[:, _MASK[[0, 1, 2, 1, 0]]],
        x[np.array([], np.int64)],
    )


@case(
    "traced_index",
    [(f32(4, 3), i32(5, values=("index", 4))), (i64(4, 3), i64(2, 2, values=("index", 4)))],
    tags=["index", "grad"],
)
def traced_index(x, i):
    return x[i], x[i, 1:], x[:, 1][i], np.take(x, i, axis=0)


@case(
    "take",
    [(f32(3, 4), i32(5, values=("index", 4))), (i64(3, 4), i64(2, 3, values=("index", 3)))],
    tags=["index", "grad"],
)
def take(x, i):
    n = x.shape[1] if i.ndim == 1 else x.shape[0]
    return np.take(x, i % n), np.take(x, i % n, axis=1 if i.ndim == 1 else 0), x.take(i % n)


@case(
    "take_along_axis",
    [(f32(3, 4), i64(3, 2, values=("class", 4))), (i32(3, 4), i64(3, 4, values=("class", 4)))],
    tags=["index", "grad"],
)
def take_along_axis(x, i):
    return (
        np.take_along_axis(x, i, axis=1),
        np.take_along_axis(x, np.argmax(x, axis=0, keepdims=True), axis=0),
    )


@case(
    "clip_take_round",
    [(f64(3, 4), i64(5, values=("index", 20))), (i64(3, 4), i32(2, values=("index", 20)))],
    tags=["index"],
)
def clip_take_round(x, i):
    return (
        np.clip(x, min=-1),
        np.clip(x, max=1),
        np.take(x, i, mode="wrap"),
        np.take(x, i, mode="clip"),
        np.round(x * 7, -1),
        np.round(x, 1),
    )


def _at_reference(x, i, v):
    out = x.copy()
    out[1] = 5
    adds = x.copy()
    np.add.at(adds, i, v)
    muls = x.copy()
    np.multiply.at(muls, (slice(None), 0), 2)
    mins, maxs = x.copy(), x.copy()
    np.minimum.at(mins, i, v)
    np.maximum.at(maxs, i, v)
    sets = x.copy()
    sets[np.array([0, -1]), 1:] = v.sum(0)[1:]
    return out, adds, muls, mins, maxs, sets, x[i]


@case(
    "at_updates",
    [
        (f32(4, 3), i32(5, values=("index", 4)), f32(5, 3)),
        (i64(4, 3), i64(2, values=("index", 4)), i64(2, 3)),
        (f64(4, 3), i64(0, values=("index", 4)), f64(0, 3)),
    ],
    reference=_at_reference,
    tags=["update"],
)
def at_updates(x, i, v):
    return (
        x.at[1].set(5),
        x.at[i].add(v),
        x.at[:, 0].multiply(2),
        x.at[i].min(v),
        x.at[i].max(v),
        x.at[np.array([0, -1]), 1:].set(v.sum(0)[1:]),
        x.at[i].get(),
    )


@case(
    "at_updates_grad",
    [(f32(4, 3), f32(3)), (f64(4, 3), f64(3))],
    tags=["update", "grad"],
    reference=lambda x, v: _set_row(x, 2, v + x[0]),
)
def at_updates_grad(x, v):
    return x.at[2].set(v + x[0])


def _set_row(x, row, value):
    out = x.copy()
    out[row] = value
    return out


# --------------------------------------------------------------------------------------
# Creation (numbax.numpy, checked against the same program over NumPy)


@dual_case("creation", [(f32(2, 3),), (i32(2, 3),), (boolean(2, 3),)], tags=["creation"])
def creation(m):
    def fn(x):
        return (
            x + m.zeros((2, 3), x.dtype),
            m.ones(3, dtype=m.int32),
            m.full((2, 2), 7),
            m.zeros_like(x),
            m.ones_like(x, dtype=m.bool_),
            m.full_like(x, 3.5),
            m.arange(5),
            m.arange(2, 10, 3),
            m.arange(0.0, 1.0, 0.25),
            m.linspace(0, 1, 5),
            m.eye(3),
            m.eye(3, 4, k=1),
            m.identity(2, dtype=m.int64),
            m.linspace(0.0, 2.0, 4, endpoint=False),
            m.zeros((0, 2)),
        )

    return fn


@case("creation_from_traced", [(f32(2, 3),), (f64(4),)], tags=["creation", "grad"])
def creation_from_traced(x):
    return (
        np.zeros_like(x) + x,
        np.ones_like(x) * x,
        np.full_like(x, 2.0) - x,
        xnp.full(x.shape, x.sum()),
    )


# --------------------------------------------------------------------------------------
# numbax.nn against hand-written NumPy


def _softmax(x, axis=-1):
    z = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return z / np.sum(z, axis=axis, keepdims=True)


def _logsumexp(x, axis=None, keepdims=False):
    m = np.max(x, axis=axis, keepdims=True)
    out = np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m
    return out if keepdims else np.squeeze(out, axis=axis)


def _gelu(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))


def _one_hot(i, n, dtype=np.float64):
    return (i[..., None] == np.arange(n)).astype(dtype)


_NN_SIGS = [(f32(3, 5),), (f64(2, 3, 4),), (f64(3, 5, values=LARGE),), (f32(1, 1),)]


@case(
    "nn_activations",
    _NN_SIGS,
    tags=["nn", "grad"],
    reference=lambda x: (np.maximum(x, 0), _gelu(x), 1 / (1 + np.exp(-x))),
)
def nn_activations(x):
    return nn.relu(x), nn.gelu(x), nn.sigmoid(x)


@case(
    "nn_softmax",
    _NN_SIGS,
    tags=["nn", "grad"],
    tolerance=REDUCTION_SCALE,
    reference=lambda x: (
        _softmax(x),
        _softmax(x, axis=0),
        x - _logsumexp(x, -1, True),
        x - _logsumexp(x, axis=0, keepdims=True),
    ),
)
def nn_softmax(x):
    return nn.softmax(x), nn.softmax(x, axis=0), nn.log_softmax(x), nn.log_softmax(x, axis=0)


@case(
    "nn_logsumexp",
    _NN_SIGS,
    tags=["nn", "grad"],
    tolerance=REDUCTION_SCALE,
    reference=lambda x: (
        _logsumexp(x),
        _logsumexp(x, axis=1, keepdims=True),
        _logsumexp(x, axis=-1),
    ),
)
def nn_logsumexp(x):
    return nn.logsumexp(x), nn.logsumexp(x, axis=1, keepdims=True), nn.logsumexp(x, axis=-1)


@case(
    "nn_one_hot",
    [(i32(4, values=("class", 5)),), (i64(2, 3, values=("index", 5)),)],
    tags=["nn"],
    reference=lambda i: (_one_hot(i, 5, np.float32), _one_hot(i, 3, np.float64)),
)
def nn_one_hot(i):
    return nn.one_hot(i, 5), nn.one_hot(i, 3, dtype=np.float64)


# --------------------------------------------------------------------------------------
# Small models: the programs the benchmarks and users care about


@case(
    "softmax_numpy",
    [(f32(4, 6),), (f64(2, 3, 5),), (f32(3, 7, values=LARGE),)],
    tags=["model", "grad"],
    tolerance=REDUCTION_SCALE,
)
def softmax_numpy(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


@case(
    "logsumexp_numpy",
    [(f32(4, 6),), (f64(5),), (f64(3, 4, values=LARGE),)],
    tags=["model", "grad"],
    tolerance=REDUCTION_SCALE,
)
def logsumexp_numpy(x):
    m = np.max(x, axis=-1, keepdims=True)
    return np.squeeze(m, -1) + np.log(np.sum(np.exp(x - m), axis=-1))


@dual_case(
    "layer_norm",
    [(f32(4, 8), f32(8), f32(8)), (f64(2, 3, 5), f64(5), f64(5))],
    tags=["model", "grad"],
    tolerance=REDUCTION_SCALE,
)
def layer_norm(m):
    def fn(x, gamma, beta):
        mu = m.mean(x, axis=-1, keepdims=True)
        var = m.var(x, axis=-1, keepdims=True)
        return (x - mu) / m.sqrt(var + 1e-5) * gamma + beta

    return fn


@case(
    "mlp_forward",
    [
        (f32(8, 4), f32(4, 16), f32(16), f32(16, 3), f32(3)),
        (f64(2, 4), f64(4, 5), f64(5), f64(5, 1), f64(1)),
    ],
    tags=["model", "grad"],
    tolerance=REDUCTION_SCALE,
)
def mlp_forward(x, w1, b1, w2, b2):
    hidden = np.maximum(x @ w1 + b1, 0.0)
    return np.tanh(hidden @ w2 + b2)


@case("attention", [(f32(2, 4, 8), f32(2, 5, 8), f32(2, 5, 8)), (f64(3, 4), f64(6, 4), f64(6, 4))],
      tags=["model", "grad"], tolerance=REDUCTION_SCALE)  # fmt: skip
def attention(q, k, v):
    scores = q @ np.swapaxes(k, -1, -2) / q.shape[-1] ** 0.5  # a Python float: stays f32
    return softmax_numpy(scores) @ v


@case(
    "cross_entropy",
    [(f32(6, 5), i64(6, values=("class", 5))), (f64(3, 4), i32(3, values=("class", 4)))],
    tags=["model", "grad"],
    tolerance=REDUCTION_SCALE,
)
def cross_entropy(logits, labels):
    picked = np.take_along_axis(logits, labels[:, None], axis=1)[:, 0]
    return np.mean(logsumexp_numpy(logits) - picked)


@case("pytree_outputs", [(f32(3), f32(3)), (i32(2, 2), i32(2))])
def pytree_outputs(x, y):
    return {"sum": x + y, "parts": [x, (y, None)], "scalar": np.sum(x)}


# --------------------------------------------------------------------------------------
# Bitwise operations and shifts

for _name in ("bitwise_xor", "left_shift", "right_shift"):
    _ufunc_case(_name, NORMAL, 2)

# Shift counts from -70 to 69: negative, inside and beyond the bit width of int32 and int64.
_COUNTS = ("index", 70)


@case(
    "bitwise_operators",
    [
        (i32(3, 4), i32(4, values=_COUNTS)),
        (i64(2, 1, 5), i64(3, 1, values=_COUNTS)),
        (i64(5), i32(5, values=_COUNTS)),
        (boolean(3, 4), boolean(4)),
        (i32(3), py_int()),
    ],
)
def bitwise_operators(x, s):
    return (x ^ s, x & s, x | s, ~x, x << s, x >> s, 6 ^ x, (x << 3) >> s, x >> 1 ^ s, s << x)


@case("bitwise_with_float_math", [(f32(3, 5),), (f64(4),), (f64(2, 0),)], tags=["grad"])
def bitwise_with_float_math(x):
    k = np.arange(x.shape[-1])
    weights = ((k ^ 5) << 2 >> 1 | k & 3) - ~k
    return np.sin(x) * weights.astype(x.dtype) + x * (weights >> 2).astype(x.dtype)


# NumPy coverage, one module per family, each registering its cases into CASES.
import corpus_array_api  # noqa: E402, F401
import corpus_complex  # noqa: E402, F401
import corpus_construction  # noqa: E402, F401
import corpus_linalg  # noqa: E402, F401
import corpus_methods  # noqa: E402, F401
import corpus_placement  # noqa: E402, F401
import corpus_polynomial  # noqa: E402, F401
import corpus_selection  # noqa: E402, F401
import corpus_sorting  # noqa: E402, F401
import corpus_statistics  # noqa: E402, F401
import corpus_ufuncs  # noqa: E402, F401
