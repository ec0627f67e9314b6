"""Matmuls of float16 and bfloat16 operands read them as they are stored.

The ``narrow_floats`` pass computes a narrow matmul in float32: each operand is widened
by a ``convert_element_type`` and the product rounded back. Fusion keeps a contraction's
operands in memory (no prologue: the CPU's BLAS reads them there), so each widened
operand is written to memory by another kernel (one of its own, or one that reads the
narrow array anyway, a reduction say, as an extra output): a float32 copy, twice the
bytes of the narrow array, for the matmul to read again.

On the device the matmul can do better, so ``fold_widened_operands`` moves each such
widening into the contraction kernel that reads it: the tiled kernel then converts as it
loads its shared-memory tiles (2 bytes an element from memory), and cuBLAS gets the
narrow operands themselves, which its tensor-core GEMMs take with float32 accumulation
(``cublas``). A widened output that nothing else reads any more is then dropped from its
kernel, and a kernel left without outputs with it.
"""

from __future__ import annotations

from collections import Counter

from ...ir import dtypes
from ...ir.core import Eqn, Jaxpr, ShapedArray, Var
from ...ir.higher_order import kernel_p
from ...ir.primitive import PRIMITIVES


def fold_widened_operands(jaxpr: Jaxpr, rewrites: Counter | None = None) -> Jaxpr:
    """``jaxpr`` (a block of kernel eqns) with every narrow-float widening that a
    contraction kernel reads as a matmul operand done inside that kernel instead;
    ``rewrites`` counts the operands folded and the kernels left with no output."""
    rewrites = Counter() if rewrites is None else rewrites
    narrow_source: dict = {}
    for eqn in jaxpr.eqns:
        narrow_source.update(widened_outputs(eqn))
    if not narrow_source:
        return jaxpr
    eqns = [_folded(eqn, narrow_source, rewrites) for eqn in jaxpr.eqns]
    read = {atom for eqn in eqns for atom in eqn.inputs if isinstance(atom, Var)}
    read.update(v for v in jaxpr.outvars if isinstance(v, Var))
    unread = {v for v in narrow_source if v not in read}
    kept = [pruned for eqn in eqns if (pruned := _without(eqn, unread)) is not None]
    rewrites["widening_kernels_dropped"] += len(eqns) - len(kept)
    return Jaxpr(jaxpr.constvars, jaxpr.invars, kept, jaxpr.outvars)


def widened_outputs(eqn: Eqn) -> dict:
    """{output: narrow input} for each output of kernel ``eqn`` that is only one of its
    float16/bfloat16 inputs widened to float32."""
    if eqn.prim is not kernel_p:
        return {}
    body = eqn.params["jaxpr"]
    producer = {v: e for e in body.eqns for v in e.outputs}
    found = {}
    for outer, inner in zip(eqn.outputs, body.outvars, strict=True):
        convert = producer.get(inner)
        if convert is None or convert.prim.name != "convert_element_type":
            continue
        operand = convert.inputs[0]
        if operand not in body.invars or inner.aval.dtype != dtypes.float32:
            continue
        source = eqn.inputs[body.invars.index(operand)]
        if isinstance(source, Var) and dtypes.is_narrow_float(source.aval.dtype):
            found[outer] = source
    return found


def _folded(eqn: Eqn, narrow_source: dict, rewrites: Counter) -> Eqn:
    """A contraction kernel reading its widened matmul operands' narrow sources instead,
    each widened by a ``convert_element_type`` at the top of its body."""
    if eqn.prim is not kernel_p or eqn.params["kind"] != "contraction":
        return eqn
    body = eqn.params["jaxpr"]
    (dot,) = [e for e in body.eqns if e.prim.name == "dot_general"]
    inputs, invars, widenings = list(eqn.inputs), list(body.invars), []
    for operand in dict.fromkeys(dot.inputs):
        if operand not in invars:
            continue
        position = invars.index(operand)
        source = narrow_source.get(inputs[position])
        if source is None:
            continue
        narrow = Var(ShapedArray(operand.aval.shape, source.aval.dtype))
        inputs[position], invars[position] = source, narrow
        convert = PRIMITIVES["convert_element_type"]
        params = {"new_dtype": dtypes.float32}
        widenings.append(Eqn(convert, [narrow], [operand], params, dot.source_info))
    if not widenings:
        return eqn
    rewrites["widened_operands_folded"] += len(widenings)
    body = Jaxpr(body.constvars, invars, widenings + body.eqns, body.outvars)
    return eqn.replace(inputs=inputs, params={**eqn.params, "jaxpr": body})


def _without(eqn: Eqn, unread: set) -> Eqn | None:
    """``eqn`` without its ``unread`` outputs; None when it has no output left."""
    kept = [k for k, v in enumerate(eqn.outputs) if v not in unread]
    if len(kept) == len(eqn.outputs):
        return eqn
    if not kept:
        return None
    body = eqn.params["jaxpr"]
    outvars = [body.outvars[k] for k in kept]
    body = Jaxpr(body.constvars, body.invars, body.eqns, outvars)
    outputs = [eqn.outputs[k] for k in kept]
    return eqn.replace(outputs=outputs, params={**eqn.params, "jaxpr": body})
