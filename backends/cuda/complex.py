"""The complex cases of the scalar rules (``scalar.SCALAR_RULES``) and the rules of the
complex primitives (``ir/complex.py``), which ``add_complex_cases`` adds to that table.

A rule whose operand is complex is taken from here; a real operand keeps the real rule.
Arithmetic and comparisons are Numba's operators. libdevice has no complex functions
and Numba's ``cmath`` needs a GPU driver to compile, so exp, log, sqrt, sin, cos and
tanh are written out from libdevice's real functions of the parts (in the parts'
precision: float32 for complex64), and division is NumPy's (Smith's algorithm; a zero
divisor gives inf and nan parts, where Numba's raises). Powers are ``complex_power``
(``devicelib``), the cpu backend's NumPy power in complex128: Numba's polar form gives
NaN where NumPy gives 0 or inf.
"""

from __future__ import annotations

from ...ir import dtypes
from .typed_expressions import cast, constant, libdevice


def _dtype(eqn, position=0):
    return eqn.inputs[position].aval.dtype


class _Parts:
    """The real and imaginary parts of a complex operand, and real math on them."""

    def __init__(self, x: str, dtype):
        self.re, self.im = f"{x}.real", f"{x}.imag"
        self.dtype, self.part = dtype, dtypes.real_dtype(dtype)

    def fn(self, name: str, *args: str) -> str:
        return libdevice(name, self.part, *args)

    def const(self, value) -> str:
        return constant(value, self.part)

    def make(self, re: str, im: str) -> str:
        return cast(f"complex({re}, {im})", self.dtype)


def _exp(z: _Parts) -> str:
    # C99's cexp at the edges, as NumPy's: on the real axis the imaginary zero stays
    # (exp(inf + 0i) is inf + 0i, not inf * sin 0 = NaN), and exp(-inf + iy) is 0 for
    # every y (not 0 * cos(inf) = NaN).
    magnitude = z.fn("exp", z.re)
    regular = z.make(f"{magnitude} * {z.fn('cos', z.im)}", f"{magnitude} * {z.fn('sin', z.im)}")
    zero = z.const(0)
    real_axis = z.make(magnitude, z.im)
    vanished = z.make(zero, z.fn("copysign", zero, z.im))
    return (
        f"({real_axis} if {z.im} == {zero} else "
        f"({vanished} if {z.re} == {z.const(-float('inf'))} else {regular}))"
    )


def _log(z: _Parts) -> str:
    return z.make(z.fn("log", z.fn("hypot", z.re, z.im)), z.fn("atan2", z.im, z.re))


def _sqrt(z: _Parts) -> str:
    # t = sqrt((|re| + |z|) / 2); the root is (t, im / 2t) for re >= 0, else
    # (|im| / 2t, copysign(t, im)); t = 0 only at z = 0, whose root is (0, im).
    half = z.const(0.5)
    t = z.fn("sqrt", f"(abs({z.re}) + {z.fn('hypot', z.re, z.im)}) * {half}")
    two_t = f"({z.const(2)} * {t})"
    right = z.make(t, f"{z.im} / {two_t}")
    left = z.make(f"abs({z.im}) / {two_t}", z.fn("copysign", t, z.im))
    zero = z.make(z.const(0), z.im)
    return f"({zero} if {t} == {z.const(0)} else ({right} if {z.re} >= {z.const(0)} else {left}))"


def _sin(z: _Parts) -> str:
    re = f"{z.fn('sin', z.re)} * {z.fn('cosh', z.im)}"
    im = f"{z.fn('cos', z.re)} * {z.fn('sinh', z.im)}"
    return z.make(re, im)


def _cos(z: _Parts) -> str:
    re = f"{z.fn('cos', z.re)} * {z.fn('cosh', z.im)}"
    im = f"-{z.fn('sin', z.re)} * {z.fn('sinh', z.im)}"
    return z.make(re, im)


def _tanh(z: _Parts) -> str:
    # (sinh 2a + i sin 2b) / (cosh 2a + cos 2b); beyond |a| = 20 that is +-1 (+0i) to
    # the dtype's precision, where the quotient would be inf / inf.
    two_a, two_b = f"({z.const(2)} * {z.re})", f"({z.const(2)} * {z.im})"
    denominator = f"({z.fn('cosh', two_a)} + {z.fn('cos', two_b)})"
    near = z.make(f"{z.fn('sinh', two_a)} / {denominator}", f"{z.fn('sin', two_b)} / {denominator}")
    far = z.make(z.fn("copysign", z.const(1), z.re), f"{z.const(0)} * {z.fn('sin', two_b)}")
    return f"({far} if abs({z.re}) > {z.const(20)} else {near})"


def _divide(a: _Parts, b: _Parts) -> str:
    ar, ai, br, bi = a.re, a.im, b.re, b.im
    by_zero = a.make(f"{ar} / abs({br})", f"{ai} / abs({bi})")
    ratio, scale = f"({bi} / {br})", f"({br} + {bi} * ({bi} / {br}))"
    wide = a.make(f"({ar} + {ai} * {ratio}) / {scale}", f"({ai} - {ar} * {ratio}) / {scale}")
    ratio, scale = f"({br} / {bi})", f"({bi} + {br} * ({br} / {bi}))"
    tall = a.make(f"({ar} * {ratio} + {ai}) / {scale}", f"({ai} * {ratio} - {ar}) / {scale}")
    zero = a.const(0)
    return (
        f"({by_zero} if ({br} == {zero} and {bi} == {zero}) else "
        f"({wide} if abs({br}) >= abs({bi}) else {tall}))"
    )


def _function(write):
    def rule(args, eqn):
        return write(_Parts(args[0], _dtype(eqn)))

    return rule


def _div(args, eqn):
    dtype = _dtype(eqn)
    return _divide(_Parts(args[0], dtype), _Parts(args[1], dtype))


def _rsqrt(args, eqn):
    dtype = _dtype(eqn)
    root = _sqrt(_Parts(args[0], dtype))
    return _divide(_Parts(constant(1, dtype), dtype), _Parts(f"({root})", dtype))


def _operator(op: str):
    def rule(args, eqn):
        return cast(f"{args[0]} {op} {args[1]}", _dtype(eqn))

    return rule


def _pow(args, eqn):
    return cast(f"complex_power({args[0]}, {args[1]})", _dtype(eqn))


def _integer_pow(args, eqn):
    # NumPy's products, and its zero and infinite cases: the exponent as a complex number.
    dtype = _dtype(eqn)
    return cast(f"complex_power({args[0]}, {constant(complex(eqn.params['y']), dtype)})", dtype)


COMPLEX_RULES = {
    "exp": _function(_exp),
    "log": _function(_log),
    "sqrt": _function(_sqrt),
    "sin": _function(_sin),
    "cos": _function(_cos),
    "tanh": _function(_tanh),
    "rsqrt": _rsqrt,
    "div": _div,
    "pow": _pow,
    "neg": lambda args, eqn: cast(f"-{args[0]}", _dtype(eqn)),
    "abs": lambda args, eqn: libdevice(
        "hypot", dtypes.real_dtype(_dtype(eqn)), f"{args[0]}.real", f"{args[0]}.imag"
    ),  # fmt: skip
    "add": _operator("+"),
    "sub": _operator("-"),
    "mul": _operator("*"),
    "eq": lambda args, eqn: f"({args[0]} == {args[1]})",
    "ne": lambda args, eqn: f"({args[0]} != {args[1]})",
    "integer_pow": _integer_pow,
}


def _complex_or_real(complex_rule, real_rule):
    def rule(args, eqn):
        if dtypes.is_complex(_dtype(eqn)):
            return complex_rule(args, eqn)
        return real_rule(args, eqn)

    return rule


def _convert(real_convert):
    """To a complex dtype, from any dtype, a conversion is a cast."""

    def rule(args, eqn):
        if dtypes.is_complex(eqn.params["new_dtype"]):
            return cast(args[0], eqn.params["new_dtype"])
        return real_convert(args, eqn)

    return rule


def _part(name: str):
    def rule(args, eqn):
        if dtypes.is_complex(_dtype(eqn)):
            return f"{args[0]}.{name}"
        return args[0] if name == "real" else constant(0, _dtype(eqn))

    return rule


def _conj(args, eqn):
    return f"{args[0]}.conjugate()" if dtypes.is_complex(_dtype(eqn)) else args[0]


def _complex(args, eqn):
    return cast(f"complex({args[0]}, {args[1]})", eqn.outputs[0].aval.dtype)


def add_complex_cases(rules) -> None:
    """Give each real rule of ``rules`` (the scalar rule table) its complex case, and add
    the rules of the complex primitives."""
    for name, complex_rule in COMPLEX_RULES.items():
        rules.rule(name, replace=True)(_complex_or_real(complex_rule, rules[name]))
    rules.rule("convert_element_type", replace=True)(_convert(rules["convert_element_type"]))
    rules.rule("real")(_part("real"))
    rules.rule("imag")(_part("imag"))
    rules.rule("conj")(_conj)
    rules.rule("complex")(_complex)
