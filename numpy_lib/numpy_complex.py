"""Complex numbers in the NumPy front end: NumPy's functions of complex parts (``real``,
``imag``, ``conj``, ``angle``, ``iscomplex``, ...), which join ``numbax.numpy`` and
NumPy's dispatch tables through ``FUNCTIONS`` and ``UFUNCS`` (``numpy_lib/numpy_api.py``).

Everything else about complex numbers is promotion (``x + 1j * y`` is complex128,
``float32 array * 1j`` complex64 by NEP 50) and the elementwise functions, which accept
complex operands as NumPy's do.
"""

from __future__ import annotations

import math

import numpy as np

from ..ir import dtypes
from ..tracer import lax
from ..tracer.core import Tracer
from ..tracer.lax_complex import conj, imag_part, make_complex, real_part  # noqa: F401 - cx.* names
from ..tracer.promote import asarray, operand, promote_and_broadcast, result_type, shape_of
from . import ufuncs
from .registry import implements

FUNCTIONS: dict = {}
UFUNCS: dict = {}


# --- NumPy's functions -------------------------------------------------------------------


@implements(FUNCTIONS, "real")
def real(val):
    x = asarray(val)
    return real_part(x) if dtypes.is_complex(x.dtype) else x


@implements(FUNCTIONS, "imag")
def imag(val):
    x = asarray(val)
    if dtypes.is_complex(x.dtype):
        return imag_part(x)
    return lax.full(shape_of(x), 0, x.dtype)


@implements(UFUNCS, "conjugate", "conj")
def conjugate(x):
    x = operand(x)
    (x,), _ = promote_and_broadcast(x, dtype=ufuncs.arithmetic_dtype(x), operation="conj")
    return conj(x) if dtypes.is_complex(x.dtype) else x


@implements(FUNCTIONS, "angle")
def angle(z, deg=False):
    """``atan2(imag, real)``: of a real number 0 or pi, as NumPy's."""
    z = asarray(z)
    if dtypes.is_complex(z.dtype):
        result = lax.atan2(imag_part(z), real_part(z))
    else:
        result = ufuncs.arctan2(0, z)
    return ufuncs.multiply(result, 180 / math.pi) if deg else result


@implements(FUNCTIONS, "real_if_close")
def real_if_close(a, tol=100):
    """Real when every imaginary part is within ``tol`` machine epsilons of 0; that is a
    data-dependent dtype, so only a real operand (returned as it is) is traced."""
    x = asarray(a)
    if dtypes.is_complex(x.dtype) and isinstance(x, Tracer):
        from ..ir.errors import UnsupportedFunctionError, at_line
        from ..tracer.source_info import user_frame_info

        raise UnsupportedFunctionError(
            at_line(
                "numpy.real_if_close of a traced complex array: whether the result is real "
                "depends on the data; take numpy.real(x) when you know it is",
                user_frame_info(),
            )
        )
    return np.real_if_close(x, tol) if dtypes.is_complex(x.dtype) else x


def _imaginary_part_test(x, compare, of_a_real: bool):
    """``compare`` (``lax.eq``, ``lax.ne``) of each imaginary part of ``x`` with 0; for a
    real ``x``, whose imaginary parts are all 0, ``of_a_real`` everywhere."""
    x = asarray(x)
    if dtypes.is_complex(x.dtype):
        return compare(imag_part(x), np.zeros((), dtypes.real_dtype(x.dtype)))
    return lax.full(shape_of(x), of_a_real, dtypes.bool_)


@implements(FUNCTIONS, "isreal")
def isreal(x):
    return _imaginary_part_test(x, lax.eq, of_a_real=True)


@implements(FUNCTIONS, "iscomplex")
def iscomplex(x):
    return _imaginary_part_test(x, lax.ne, of_a_real=False)


@implements(FUNCTIONS, "iscomplexobj")
def iscomplexobj(x):
    return dtypes.is_complex(result_type(operand(x)))


@implements(FUNCTIONS, "isrealobj")
def isrealobj(x):
    return not iscomplexobj(x)
