"""NumPy's complex division and power, written once for the backends that compile through
Numba.

Numba's complex division raises ZeroDivisionError on a zero divisor, and its complex power
goes through polar form, which gives NaN where NumPy gives 0 or inf (an infinite exponent,
a base on the unit circle). These are NumPy's complex loops instead, in complex128:

- ``divide``: Smith's algorithm; a zero divisor gives inf and NaN parts.
- ``power`` (``npy_cpow``): 1 for a zero exponent; 0 ** b as 0 when b's real part is
  positive and NaN otherwise; a real integer exponent under 100 in magnitude by repeated
  products (binary powering: exact, and infinities handled as products handle them);
  else ``exp(b * log(a))`` with C99 Annex G's multiply and exp, the C library's ``cpow``.

``complex_functions(compile, libm)`` defines them for one target: ``compile(signature)``
is the decorator that compiles each function (and those it calls) there, and ``libm``
the real math library they call, by ``math``'s names. The cpu backend compiles them with
``numba.njit`` (``cpu/intrinsics.py``); the cuda backend into the kernels that call them,
or runs them as Python under the simulator (``cuda/devicelib.py``). Arithmetic that may
divide by zero is on ``complex128(...)`` values: in Python those are NumPy scalars, whose
division by zero gives inf or NaN (with a warning the simulator silences), as compiled
code does, where Python's floats raise.
"""

from __future__ import annotations

from typing import NamedTuple

from numba import complex128, float64


class ComplexFunctions(NamedTuple):
    divide: object
    power: object


def complex_functions(compile, libm) -> ComplexFunctions:
    """NumPy's complex division and power, compiled by ``compile`` and calling ``libm``."""
    complex_complex = complex128(complex128, complex128)

    @compile(complex_complex)
    def divide(a, b):
        """``a / b`` as NumPy's complex loops compute it."""
        a, b = complex128(a), complex128(b)
        ar, ai, br, bi = a.real, a.imag, b.real, b.imag
        abs_br, abs_bi = abs(br), abs(bi)
        if abs_br >= abs_bi:
            if abs_br == 0.0 and abs_bi == 0.0:
                return complex(ar / abs_br, ai / abs_bi)
            ratio = bi / br
            scale = 1.0 / (br + bi * ratio)
            return complex((ar + ai * ratio) * scale, (ai - ar * ratio) * scale)
        ratio = br / bi
        scale = 1.0 / (bi + br * ratio)
        return complex((ar * ratio + ai) * scale, (ai * ratio - ar) * scale)

    @compile(complex_complex)
    def product(a, b):
        """The schoolbook complex product, as NumPy's complex loops multiply."""
        return complex(a.real * b.real - a.imag * b.imag, a.real * b.imag + a.imag * b.real)

    @compile(float64(float64))
    def unit(x):
        """C99 Annex G's "box" of an infinite part: +-1 for an infinity, +-0 otherwise."""
        return libm.copysign(1.0 if libm.isinf(x) else 0.0, x)

    @compile(float64(float64))
    def zero_if_nan(x):
        return libm.copysign(0.0, x) if libm.isnan(x) else x

    @compile(complex_complex)
    def c99_product(a, b):
        """``a * b`` as C's complex multiply (C99 Annex G, ``__muldc3``): the schoolbook
        product, and where both of its parts are NaN but an operand is infinite, the
        infinity it should be. ``cpow``'s ``b * log(a)`` is this product."""
        ar, ai, br, bi = a.real, a.imag, b.real, b.imag
        real, imag = ar * br - ai * bi, ar * bi + ai * br
        if not (libm.isnan(real) and libm.isnan(imag)):
            return complex(real, imag)
        recompute = False
        if libm.isinf(ar) or libm.isinf(ai):
            ar, ai, br, bi = unit(ar), unit(ai), zero_if_nan(br), zero_if_nan(bi)
            recompute = True
        if libm.isinf(br) or libm.isinf(bi):
            ar, ai, br, bi = zero_if_nan(ar), zero_if_nan(ai), unit(br), unit(bi)
            recompute = True
        if not recompute and (
            libm.isinf(ar * br) or libm.isinf(ai * bi) or libm.isinf(ar * bi) or libm.isinf(ai * br)
        ):
            ar, ai = zero_if_nan(ar), zero_if_nan(ai)
            br, bi = zero_if_nan(br), zero_if_nan(bi)
            recompute = True
        if not recompute:
            return complex(real, imag)
        return complex(libm.inf * (ar * br - ai * bi), libm.inf * (ar * bi + ai * br))

    @compile(complex128(complex128))
    def log(z):
        """The principal logarithm: log |z| + i arg z."""
        return complex(libm.log(libm.hypot(z.real, z.imag)), libm.atan2(z.imag, z.real))

    @compile(complex128(complex128))
    def c99_exp(z):
        """``exp(z)`` with C99's special values: the imaginary zero of a real argument
        stays (exp(inf + 0i) is inf + 0i, not inf * sin 0 = NaN), exp(-inf + iy) is 0."""
        x, y = z.real, z.imag
        if y == 0.0 and not libm.isnan(x):
            return complex(libm.exp(x), y)
        if libm.isinf(x) and not libm.isfinite(y):
            if x < 0.0:
                return complex(0.0, 0.0)
            return complex(libm.inf, libm.nan)
        if libm.isinf(x) and x < 0.0:
            return complex(0.0 * libm.cos(y), 0.0 * libm.sin(y))
        magnitude = libm.exp(x)
        return complex(magnitude * libm.cos(y), magnitude * libm.sin(y))

    @compile(complex_complex)
    def power(a, b):
        """``a ** b`` as NumPy's complex loops compute it (``npy_cpow``)."""
        a, b = complex128(a), complex128(b)
        br, bi = b.real, b.imag
        if br == 0.0 and bi == 0.0:
            return complex(1.0, 0.0)
        if a.real == 0.0 and a.imag == 0.0:
            if br > 0.0:
                return complex(0.0, 0.0)
            return complex(libm.nan, libm.nan)
        if bi == 0.0 and -100.0 < br < 100.0 and br == int(br):
            n = int(br)
            if n == 1:
                return a
            if n == 2:
                return product(a, a)
            if n == 3:
                return product(a, product(a, a))
            n = abs(n)
            result, factor = complex(1.0, 0.0), a
            while True:
                if n & 1:
                    result = product(result, factor)
                n >>= 1
                if n == 0:
                    break
                factor = product(factor, factor)
            return divide(complex(1.0, 0.0), result) if br < 0.0 else result
        return c99_exp(c99_product(b, log(a)))

    return ComplexFunctions(divide, power)
