"""Narrow floats compute in float32: every equation that does arithmetic on float16 or
bfloat16 values reads them converted to float32 and converts its result back.

This is what NumPy's float16 loops do element by element (``npy_half_to_float``, the
float32 operation, ``npy_float_to_half``), so the rewrite keeps the program's meaning
exactly for the correctly rounded operations (+, -, *, /, sqrt: float32 holds the exact
float16 result to more than twice its precision, so rounding twice rounds once), and
reductions accumulate in float32 as NumPy's float16 ``sum`` does. Each result is rounded
to the narrow dtype before the next equation reads it, as NumPy rounds after every ufunc.

What stays narrow is what only moves bits: broadcasts, reshapes, slices, gathers,
``select`` and the operands and results of control flow, so a compiled backend stores and
moves 2 bytes per element and needs only the two conversions to compute. The rewrite
runs in the pipeline before fusion, which fuses the conversions into the kernels' loops.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from ..ir import dtypes
from ..ir.core import ClosedJaxpr, Eqn, Jaxpr, Literal, Var
from ..ir.primitive import PRIMITIVES
from .rewrite import Rebuilder, map_subjaxprs, subjaxprs

# Equations that move or choose bits without reading them as numbers.
BIT_MOVING = frozenset(
    {
        "broadcast_in_dim",
        "reshape",
        "transpose",
        "squeeze",
        "expand_dims",
        "slice",
        "concatenate",
        "pad",
        "dynamic_slice",
        "dynamic_update_slice",
        "gather",
        "select",
        "stop_gradient",
        "convert_element_type",  # the backends' one operation on narrow floats
        "debug_callback",  # the host function sees the narrow array, as NumPy would give it
        "pure_callback",
    }
)


def run(closed: ClosedJaxpr) -> tuple[ClosedJaxpr, Counter]:
    counts: Counter = Counter()
    return ClosedJaxpr(widen_narrow_floats(closed.jaxpr, counts), closed.consts), counts


def widen_narrow_floats(jaxpr: Jaxpr, counts: Counter | None = None) -> Jaxpr:
    """``jaxpr`` with every arithmetic equation on narrow floats computed in float32."""
    counts = Counter() if counts is None else counts
    out = Rebuilder()
    for eqn in jaxpr.eqns:
        eqn = out.substituted(eqn)
        if subjaxprs(eqn):
            out.add(map_subjaxprs(eqn, lambda sub: widen_narrow_floats(sub, counts)))
        elif eqn.prim.name in BIT_MOVING or not _reads_narrow_floats(eqn):
            out.add(eqn)
        else:
            counts[eqn.prim.name] += 1
            _widen(out, eqn)
    return out.finish(jaxpr)


def _reads_narrow_floats(eqn: Eqn) -> bool:
    atoms = list(eqn.inputs) + list(eqn.outputs)
    return any(dtypes.is_narrow_float(a.aval.dtype) for a in atoms) or any(
        _is_narrow_dtype(v) for v in eqn.params.values()
    )


def _is_narrow_dtype(value) -> bool:
    return isinstance(value, np.dtype) and dtypes.is_narrow_float(value)


def _widen(out: Rebuilder, eqn: Eqn) -> None:
    """Emit ``eqn`` over float32 operands and convert its narrow results back."""
    inputs = [_wide(out, atom, eqn.source_info) for atom in eqn.inputs]
    params = {k: dtypes.float32 if _is_narrow_dtype(v) else v for k, v in eqn.params.items()}
    results = out.emit(eqn.prim, inputs, eqn.source_info, **params)
    for var, result in zip(eqn.outputs, results, strict=True):
        if result.aval.dtype != var.aval.dtype:
            result = _convert(out, result, var.aval.dtype, eqn.source_info)
        out.alias(var, result)


def _wide(out: Rebuilder, atom, source_info):
    if not dtypes.is_narrow_float(atom.aval.dtype):
        return atom
    if isinstance(atom, Literal):
        return Literal(atom.val.astype(dtypes.float32), dtypes.float32)
    return _convert(out, atom, dtypes.float32, source_info)


def _convert(out: Rebuilder, atom, dtype, source_info) -> Var:
    convert = PRIMITIVES["convert_element_type"]
    return out.emit1(convert, [atom], source_info, new_dtype=dtype)
