"""Scalar code for elementwise primitives: one rule per primitive, keyed by its name.

A rule receives the operands as Python expressions (already loaded, already typed) and
the equation, and returns the expression of the result, in the result's dtype. Types are
explicit because Numba's are not NumPy's: a Python float literal is float64 (so float32
code uses ``float32(1.5)``), int32 arithmetic widens to int64 (so int32 results are
wrapped back with ``int32(...)``, which also gives NumPy's wrap-around), and float math
goes through libdevice's float32 or float64 variant by name (``expf``/``exp``).
"""

from __future__ import annotations

import numpy as np

from ...ir import dtypes
from ...ir.primitive import Pattern
from ...ir.rules import RuleTable
from .. import source as escape
from ..conversions import float_to_integer
from .complex import add_complex_cases
from .narrow_floats import is_held_as_bits
from .typed_expressions import cast, constant, libdevice, wrap


def _dtype(eqn, position=0):
    return eqn.inputs[position].aval.dtype


def _is_float(eqn) -> bool:
    return _dtype(eqn).kind == "f"


# --- the rule table ---------------------------------------------------------------------

# Every elementwise primitive has one (the other primitives are index maps, kernels of
# their own or host steps).
SCALAR_RULES = RuleTable(
    "cuda scalar rules", not_applicable=lambda prim: prim.pattern is not Pattern.ELEMENTWISE
)


for _name in ("exp", "log", "log1p", "expm1", "sin", "cos", "tanh", "sqrt", "rsqrt", "floor",
              "ceil", "erf"):  # fmt: skip
    SCALAR_RULES.rule(_name)(lambda args, eqn, _n=_name: libdevice(_n, _dtype(eqn), args[0]))

# half-even
SCALAR_RULES.rule("round")(lambda args, eqn: libdevice("rint", _dtype(eqn), args[0]))
SCALAR_RULES.rule("pow")(lambda args, eqn: libdevice("pow", _dtype(eqn), *args))
SCALAR_RULES.rule("atan2")(lambda args, eqn: libdevice("atan2", _dtype(eqn), *args))
SCALAR_RULES.rule("stop_gradient")(lambda args, eqn: args[0])


@SCALAR_RULES.rule("logistic")
def _logistic(args, eqn):
    one = constant(1, _dtype(eqn))
    return f"({one} / ({one} + {libdevice('exp', _dtype(eqn), f'-{args[0]}')}))"


@SCALAR_RULES.rule("neg")
def _neg(args, eqn):
    return f"(-{args[0]})" if _is_float(eqn) else wrap(f"-{args[0]}", _dtype(eqn))


@SCALAR_RULES.rule("abs")
def _abs(args, eqn):
    return f"abs({args[0]})" if _is_float(eqn) else wrap(f"abs({args[0]})", _dtype(eqn))


@SCALAR_RULES.rule("sign")
def _sign(args, eqn):
    (x,), dtype = args, _dtype(eqn)
    one, minus_one = constant(1, dtype), constant(-1, dtype)
    # Zero (and NaN, for floats) is its own sign.
    rest = x if _is_float(eqn) else constant(0, dtype)
    return f"({one} if {x} > 0 else ({minus_one} if {x} < 0 else {rest}))"


@SCALAR_RULES.rule("not")
def _not(args, eqn):
    if _dtype(eqn) == dtypes.bool_:
        return f"(not {args[0]})"
    return wrap(f"~{args[0]}", _dtype(eqn))


def _arithmetic(op):
    def rule(args, eqn):
        expr = f"{args[0]} {op} {args[1]}"
        return f"({expr})" if _is_float(eqn) else wrap(expr, _dtype(eqn))

    return rule


SCALAR_RULES.rule("add")(_arithmetic("+"))
SCALAR_RULES.rule("sub")(_arithmetic("-"))
SCALAR_RULES.rule("mul")(_arithmetic("*"))


def truncated_division(a: str, b: str, dtype) -> str:
    """C's integer division (toward zero); NumPy's ``x // 0`` is 0."""
    floor = f"({a} // {b})"
    inexact = f"({a} % {b} != 0 and (({a} < 0) != ({b} < 0)))"
    return wrap(f"0 if {b} == 0 else ({floor} + 1 if {inexact} else {floor})", dtype)


@SCALAR_RULES.rule("div")
def _div(args, eqn):
    a, b = args
    return f"({a} / {b})" if _is_float(eqn) else truncated_division(a, b, _dtype(eqn))


@SCALAR_RULES.rule("rem")
def _rem(args, eqn):
    a, b = args
    if _is_float(eqn):
        return libdevice("fmod", _dtype(eqn), a, b)
    quotient = truncated_division(a, b, _dtype(eqn))
    return wrap(f"0 if {b} == 0 else {a} - {b} * {quotient}", _dtype(eqn))


def maximum(a: str, b: str, dtype) -> str:
    """NumPy's maximum: a NaN on either side wins."""
    if np.dtype(dtype).kind == "f":
        return f"({a} if ({a} > {b} or {a} != {a}) else {b})"
    return f"({a} if {a} > {b} else {b})"


def minimum(a: str, b: str, dtype) -> str:
    if np.dtype(dtype).kind == "f":
        return f"({a} if ({a} < {b} or {a} != {a}) else {b})"
    return f"({a} if {a} < {b} else {b})"


SCALAR_RULES.rule("max")(lambda args, eqn: maximum(*args, _dtype(eqn)))
SCALAR_RULES.rule("min")(lambda args, eqn: minimum(*args, _dtype(eqn)))


_BITWISE = {"and": "&", "or": "|", "xor": "^"}


@SCALAR_RULES.rule(*_BITWISE)
def _bitwise(args, eqn):
    expr = f"{args[0]} {_BITWISE[eqn.prim.name]} {args[1]}"
    return f"({expr})" if _dtype(eqn) == dtypes.bool_ else wrap(expr, _dtype(eqn))


@SCALAR_RULES.rule("shift_left", "shift_right_arithmetic")
def _shift(args, eqn):
    # LLVM's shifts are undefined for a count outside [0, bits), where NumPy's are not: the
    # count is masked so the shift is always defined (LLVM may evaluate both arms of the
    # conditional), and NumPy's result is taken where the count was out of range.
    (x, y), dtype = args, _dtype(eqn)
    bits = dtype.itemsize * 8
    in_range = f"{y} >= {constant(0, dtype)} and {y} < {constant(bits, dtype)}"
    count = f"({y} & {constant(bits - 1, dtype)})"
    if eqn.prim.name == "shift_left":
        shifted, out_of_range = wrap(f"{x} << {count}", dtype), constant(0, dtype)
    else:
        shifted, out_of_range = wrap(f"{x} >> {count}", dtype), _sign_fill(x, dtype, bits)
    return f"({shifted} if {in_range} else {out_of_range})"


def _sign_fill(x: str, dtype, bits: int) -> str:
    """Every bit the sign bit: what shifting a signed ``x`` right by ``bits`` leaves."""
    if dtype.kind == "u":
        return constant(0, dtype)
    return wrap(f"{x} >> {constant(bits - 1, dtype)}", dtype)


_COMPARISONS = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
for _name, _op in _COMPARISONS.items():
    SCALAR_RULES.rule(_name)(lambda args, eqn, _op=_op: f"({args[0]} {_op} {args[1]})")

SCALAR_RULES.rule("select")(lambda args, eqn: f"({args[1]} if {args[0]} else {args[2]})")


@SCALAR_RULES.rule("convert_element_type")
def _convert(args, eqn):
    new, old, (x,) = np.dtype(eqn.params["new_dtype"]), _dtype(eqn), args
    if new == old:
        return x
    if dtypes.is_narrow_float(old):  # widened exactly first: then as from float32
        widened = f"bfloat16_to_float32({x})" if is_held_as_bits(old) else cast(x, dtypes.float32)
        x, old = widened, dtypes.float32
        if new == old:
            return x
    if is_held_as_bits(new):  # rounded once from float32 (through it from anything else)
        return f"bfloat16_from_float({x if old.kind == 'f' else cast(x, dtypes.float32)})"
    if old.kind == "f" and new.kind in "iu":  # NumPy's cast on x86-64, as on the CPU
        return float_to_integer(
            x,
            old,
            new,
            select=lambda predicate, a, b: f"({a} if {predicate} else {b})",
            both=lambda a, b: f"{a} and {b}",
            constant=constant,
            cast=lambda dtype, expr: cast(expr, dtype),
        )
    return cast(x, new)


# Powers up to this exponent are multiplications; above, pow (floats) or Numba's
# exponentiation by squaring (integers, which wraps like NumPy's).
_MULTIPLY_UP_TO = 4


@SCALAR_RULES.rule("integer_pow")
def _integer_pow(args, eqn):
    (x,), y, dtype = args, eqn.params["y"], _dtype(eqn)
    one = constant(1, dtype)
    if y == 0:
        return one
    if abs(y) <= _MULTIPLY_UP_TO:
        product = " * ".join([x] * abs(y))
        power = f"({product})" if _is_float(eqn) else wrap(product, dtype)
    elif _is_float(eqn):
        power = libdevice("pow", dtype, x, constant(abs(y), dtype))
    else:
        power = wrap(f"{x} ** {escape.number(abs(y), dtypes.int64, 'math')}", dtype)
    return power if y > 0 else f"({one} / {power})"


@SCALAR_RULES.rule("threefry2x32")
def _threefry2x32(args, eqn):
    # The helper compiled into the kernel (devicelib.threefry), not the cipher written out.
    return f"threefry2x32_{eqn.params['output']}({', '.join(args)})"


add_complex_cases(SCALAR_RULES)
