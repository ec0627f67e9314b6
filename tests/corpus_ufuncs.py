"""Corpus cases for NumPy coverage: ufuncs (registered into ``corpus.CASES``).

Each ufunc runs on every dtype NumPy has a loop for (asked of NumPy), at the shapes of
the shared corpus, with values drawn inside its domain; the smooth ones are
differentiated. The accuracy sweep over the whole float range and the special values
(NaN, inf, -0.0, the edges of each domain) are in ``tracer/test_ufuncs_more.py``.
"""

from __future__ import annotations

import numpy as np
from corpus import (
    BINARY_SHAPES,
    BOOL,
    CASES,
    DTYPES,
    F32,
    F64,
    I32,
    I64,
    NONZERO,
    NORMAL,
    POSITIVE,
    UNIT,
    Arg,
    Case,
    boolean,
    case,
    dual_case,
    f32,
    f64,
    i32,
    i64,
    numpy_accepts,
    py_float,
)

# name -> (how its argument is drawn, smooth there)
UNARY = {
    "arcsin": (UNIT, True), "arccos": (UNIT, True), "arctan": (NORMAL, True),
    "arcsinh": (NORMAL, True), "arctanh": (UNIT, True), "cbrt": (NONZERO, True),
    "deg2rad": (NORMAL, True), "rad2deg": (NORMAL, True), "radians": (NORMAL, True),
    "degrees": (NORMAL, True), "trunc": (NORMAL, False), "signbit": (NORMAL, False),
    "conjugate": (NORMAL, True), "spacing": (NORMAL, False), "frexp": (NORMAL, False),
}  # fmt: skip
BINARY = {
    "hypot": (NORMAL, True), "fmax": (NORMAL, True), "fmin": (NORMAL, True),
    "copysign": (NORMAL, True), "heaviside": (NORMAL, True), "logaddexp2": (NORMAL, True),
    "float_power": (POSITIVE, True), "nextafter": (NORMAL, True), "gcd": (NORMAL, False),
    "lcm": (NORMAL, False),
}  # fmt: skip
_MIXED = [(F32, I32), (I32, I64), (F32, F64), (BOOL, I32), (I64, F32)]


def _ufunc_case(name, values, smooth, nin):
    ufunc = getattr(np, name)
    dtypes = [d for d in DTYPES if numpy_accepts(ufunc, d)]
    # A negative base to a fractional power is NaN: float_power's base is drawn positive.
    first = POSITIVE if name == "float_power" else NORMAL
    if nin == 1:
        signatures = [(Arg((3, 4), d, values),) for d in dtypes]
        signatures += [(Arg(s, dtypes[0], values),) for s in [(), (0, 3), (1, 5)]]
    else:
        signatures = [(Arg((3, 4), d, first), Arg((4,), d, values)) for d in dtypes]
        signatures += [
            (Arg(a, dtypes[0], first), Arg(b, dtypes[0], values)) for a, b in BINARY_SHAPES[1:]
        ]
        signatures += [
            (Arg((3, 1), a, first), Arg((4,), b, values))
            for a, b in _MIXED
            if a in dtypes and b in dtypes
        ]
    tags = {"ufunc"} | ({"grad"} if smooth else set())
    CASES.append(Case(f"ufunc_{name}", ufunc, tuple(signatures), None, frozenset(tags)))


for _name, (_values, _smooth) in UNARY.items():
    _ufunc_case(_name, _values, _smooth, 1)
for _name, (_values, _smooth) in BINARY.items():
    _ufunc_case(_name, _values, _smooth, 2)


@case(
    "ufunc_arccosh",
    [(f64(3, 4, values=POSITIVE),), (f32(5, values=POSITIVE),), (i64(4, values=POSITIVE),),
     (f64(0, 3, values=POSITIVE),), (f32(),)],
    tags=["ufunc", "grad"],
)  # fmt: skip
def ufunc_arccosh(x):
    return np.arccosh(1 + np.abs(x))


@case(
    "ufunc_array_api_names",
    [(f32(3, 4, values=UNIT),), (f64(5, values=UNIT),), (f64(2, 0, values=UNIT),)],
    tags=["ufunc", "grad"],
)
def ufunc_array_api_names(x):
    return np.asin(x), np.acos(x), np.atan(x), np.asinh(x), np.atanh(x), np.acosh(2 - x)


@case(
    "ufunc_ldexp",
    [(f64(3, 4), i32(4)), (f32(5), i64(5)), (i32(3), i32(3)), (f64(0, 3), i32(3)), (f32(), i32())],
    tags=["ufunc"],
)  # fmt: skip
def ufunc_ldexp(x, n):
    return np.ldexp(x, n), np.ldexp(x, n * 400), np.ldexp(x, -n * 400 - 1000)


@case(
    "exponents_grad",
    [(f64(3, 4, values=NONZERO),), (f32(5, values=NONZERO),), (f64(2, 0),)],
    tags=["grad"],
)
def exponents_grad(x):
    # Slopes: the mantissa's 2**-e, ldexp's 2**n, nextafter's 1 in x and 0 in y.
    mantissa, exponent = np.frexp(x)
    return mantissa * 3.0, np.ldexp(x, 3), np.ldexp(mantissa, exponent), np.nextafter(x, 2 * x)


@case(
    "exponents_special_values",
    [(f64(3, 4), f64(4)), (f32(5), f32(5)), (f64(1, 3), f64(3))],
)
def exponents_special_values(x, y):
    x, y = _specials(x), _specials(-y)
    tiny = np.finfo(x.dtype).smallest_subnormal
    return (
        *np.frexp(x),
        *np.frexp(x * tiny),
        np.spacing(x),
        np.spacing(x * tiny),
        np.nextafter(x, y),
        np.nextafter(x * tiny, y),
        np.ldexp(x, 3),
        np.ldexp(x * tiny, 1100),
    )


@case(
    "ufunc_multiple_outputs",
    [(f64(3, 4, values=NONZERO), f64(4, values=NONZERO)), (f32(5), f32(5, values=NONZERO)),
     (i32(3, 4), i32(4, values=NONZERO)), (i64(2, 3), f32(3, values=NONZERO))],
)  # fmt: skip
def ufunc_multiple_outputs(x, y):
    fraction, whole = np.modf(x * 3.5)
    quotient, remainder = np.divmod(x, y)
    return fraction, whole, quotient, remainder


@case(
    "ufunc_modf_grad",
    [(f64(3, 4),), (f32(5),)],
    tags=["ufunc", "grad"],
)
def ufunc_modf_grad(x):
    fraction, whole = np.modf(x * 3.5)
    return fraction * 2 + whole


@case(
    "elementwise_functions",
    [(f64(3, 4),), (f32(5),), (i32(2, 3),), (i64(4),), (boolean(3),),
     (f64(0, 2),), (f64(),)],
)  # fmt: skip
def elementwise_functions(x):
    return (
        np.fix(x * 1.5),
        np.fix(x),
        np.sinc(x),
        np.angle(x),
        np.angle(x, deg=True),
        np.real(x),
        np.imag(x),
        np.conj(x),
        np.isreal(x),
        np.iscomplex(x),
        np.real_if_close(x),
        np.isposinf(x),
        np.isneginf(x),
    )


@case(
    "sinc_fix_angle_grad",
    [(f64(3, 4),), (f32(5),), (f64(2, 0),)],
    tags=["grad"],
)
def sinc_fix_angle_grad(x):
    return np.sinc(x) + np.fix(x) + np.angle(x) + np.real(x) * 2 + np.imag(x) + np.conj(x)


def _specials(x):
    """``x`` with infinities and NaNs put in (where ``|x|`` is largest)."""
    return np.where(x > 1.5, np.inf, np.where(x < -1.5, -np.inf, np.where(x > 1, np.nan, x)))


@case(
    "nan_to_num",
    [(f64(3, 4),), (f32(6),), (i32(5),), (f64(0, 3),), (f32(),)],
    tags=["grad"],
)
def nan_to_num(x):
    x = _specials(x) if x.dtype.kind == "f" else x
    written = x.copy()
    returned = np.nan_to_num(written, copy=False)  # writes into ``written``, as NumPy
    return (
        np.nan_to_num(x),
        np.nan_to_num(x, nan=-1.0, posinf=7.0),
        np.nan_to_num(x, neginf=-3, copy=True),
        written,
        returned / 2,
    )


@case(
    "special_values",
    [(f64(3, 4), f64(4)), (f32(5), f32(5)), (f64(1, 3), f64(3))],
)
def special_values(x, y):
    x, y = _specials(x), _specials(-y)
    return (
        np.fmax(x, y),
        np.fmin(x, y),
        np.hypot(x, y),
        np.copysign(x, y),
        np.heaviside(x, y),
        np.logaddexp2(x, y),
        np.signbit(x),
        np.trunc(x),
        np.cbrt(x),
        np.arcsinh(x),
        np.arctan(x),
        np.arccosh(x),
        np.arctanh(x),
        np.arcsin(x),
        np.arccos(y),
    )


@case(
    "ufuncs_python_scalars",
    [(f32(3, 4), py_float()), (f64(4), py_float()), (i32(3), py_float())],
)
def ufuncs_python_scalars(x, s):
    # NEP 50: a Python float takes a float array's dtype; an int array computes in float64.
    return (
        np.hypot(x, s),
        np.hypot(3, x),
        np.copysign(x, -1.0),
        np.fmax(x, s),
        np.fmin(s, x),
        np.heaviside(x, 0.5),
        np.logaddexp2(x, 1),
        np.arctan(s) + x,
    )


@dual_case(
    "ufuncs_numbax_numpy",
    [(f32(3, 4, values=UNIT),), (f64(5, values=UNIT),)],
    tags=["ufunc", "grad"],
)
def ufuncs_numbax_numpy(m):
    def fn(x):
        return (
            m.arcsin(x) + m.arccos(x) + m.arctan(x) + m.arcsinh(x) + m.arctanh(x),
            m.hypot(x, 2 * x),
            m.cbrt(x + 2) + m.deg2rad(x) + m.rad2deg(x),
            m.sinc(x) + m.fix(x * 3),
            m.logaddexp2(x, 0.5),
        )

    return fn
