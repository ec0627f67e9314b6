"""Forward, reverse and batching rules of the complex primitives (``ir/complex.py``), and
the complex cases of ``abs`` and ``convert_element_type``.

The convention is JAX's: a reverse rule is the transpose of the forward rule under the
pairing ``<ct, t> = Re(ct * t)`` (no conjugation), so a holomorphic function's rules are
its real ones unchanged (``mul``, ``exp``, ``dot_general``, ... need no complex case) and
``grad`` of a real function of ``z = x + iy`` is ``df/dx - i df/dy``. Under that pairing
``real``'s transpose is ``ct + 0i``, ``imag``'s is ``-i ct``, ``conj``'s is ``conj`` and
``complex``'s splits ``ct`` into ``(re ct, -im ct)``.

Batching: the complex primitives are elementwise, so they take the elementwise rule.
"""

from __future__ import annotations

import numpy as np

from ..ir import dtypes
from ..ir.primitive import PRIMITIVES
from ..tracer import lax
from ..tracer import lax_complex as cx
from . import derivatives as d
from .batching import BATCH_RULES
from .batching_rules import elementwise_rule
from .jvp import JVP_RULES, unary
from .vjp_rules import VJP_RULES, deflinear, single_output

P = PRIMITIVES


def _is_complex(x) -> bool:
    return dtypes.is_complex(d.aval(x).dtype)


def _zeros(like):
    return lax.zeros_like_aval(d.aval(like))


def _as_complex(ct, like):
    """A real cotangent as the complex one of ``like``'s dtype: ``ct + 0i``."""
    return cx.make_complex(ct, _zeros(ct)) if _is_complex(like) else ct


# --- real, imag, conj, complex ---------------------------------------------------------------


@deflinear("real")
def _real_transpose(ct, x, out):
    return [_as_complex(ct, x)]


@deflinear("imag")
def _imag_transpose(ct, x, out):
    if not _is_complex(x):  # the imaginary part of a real number is 0 whatever it is
        return [None]
    return [cx.make_complex(_zeros(ct), lax.neg(ct))]


@deflinear("conj")
def _conj_transpose(ct, x, out):
    return [cx.conj(ct) if _is_complex(x) else ct]


@deflinear("complex")
def _complex_transpose(ct, x, y, out):
    return [
        d.unbroadcast(cx.real_part(ct), x),
        d.unbroadcast(lax.neg(cx.imag_part(ct)), y),
    ]


for _name in ("real", "imag", "conj", "complex"):
    BATCH_RULES.rule(_name)(elementwise_rule(_name))


# --- abs of a complex number: real-valued, so not holomorphic --------------------------------


def _unit(z):
    """``conj(z) / |z|``, 0 at ``z = 0`` (the subgradient JAX takes there)."""
    magnitude = lax.abs(z)
    zero = np.zeros((), d.aval(magnitude).dtype)
    safe = lax.select(lax.eq(magnitude, zero), np.ones((), d.aval(magnitude).dtype), magnitude)
    unit = lax.div(cx.conj(z), cx.make_complex(safe, lax.zeros_like_aval(d.aval(safe))))
    return lax.select(lax.eq(magnitude, zero), lax.zeros_like_aval(d.aval(z)), unit)


def _complex_abs_tangent(t, z, out):
    """``d|z| = Re(conj(z) / |z| * dz)``."""
    return cx.real_part(lax.mul(_unit(z), t))


def _complex_abs_transpose(ct, z, out):
    return [lax.mul(_as_complex(ct, z), _unit(z))]


def _dispatch_on_complex(complex_rule, real_rule):
    def rule(primals, *args, **params):
        chosen = complex_rule if _is_complex(primals[0]) else real_rule
        return chosen(primals, *args, **params)

    return rule


JVP_RULES.rule("abs", replace=True)(
    _dispatch_on_complex(
        unary(P["abs"], lambda t, z, out: _complex_abs_tangent(t, z, out)), JVP_RULES["abs"]
    )
)
VJP_RULES.rule("abs", replace=True)(
    _dispatch_on_complex(single_output(P["abs"], _complex_abs_transpose), VJP_RULES["abs"])
)


# --- convert_element_type from real to complex: the cotangent's real part goes back ----------


def _convert_transpose(ct, x, out, *, new_dtype):
    if not d.has_tangent(d.aval(x)):
        return [None]
    if _is_complex(ct) and not _is_complex(x):
        ct = cx.real_part(ct)
    return [lax.convert_element_type(ct, d.aval(x).dtype)]


VJP_RULES.rule("convert_element_type", build=single_output, replace=True)(_convert_transpose)
