"""Which generator writes a kernel eqn, and the kernel's source from it.

Fusion decides each kernel's kind (``passes.kernels.decide``), and a kernel of a loop
kind gets its kind's generator (``WRITERS``); an opaque kernel, one op, gets the
generator of that op (a reduction over no axes, a scatter, an update's window, a cumsum,
or a data-movement op). Each becomes one ``cuda.jit`` function. A kernel beyond the
generators (fusion made something new) is split into kernels of one op each
(``passes.kernels.split_into_ops``), which run through memory; a plain eqn becomes a
kernel of one op (``passes.kernels.as_kernel``), of the kind fusion gives it.
"""

from __future__ import annotations

from ...ir.core import Eqn, Jaxpr, Literal, Var
from ...ir.higher_order import kernel_p
from ...passes.inline import inline_calls
from ...passes.memory import updated_operand
from .contraction import contraction_kernel
from .cumsum import cumsum_kernel
from .elementwise import map_kernel
from .indexing import INDEX_RULES
from .options import CudaOptions
from .reducers import REDUCERS
from .reduction import reduction_kernel
from .scalar import SCALAR_RULES
from .scatter import scatter_kernel, window_kernel
from .writer import KernelSource, KernelWriter

# Calls whose ``jaxpr`` param computes the outputs from all the operands: spliced in.
CALLS = ("jit_call", "checkpoint", "custom_vjp_call", "custom_jvp_call")
# The generator of each loop kind of kernel; an opaque kernel's is its op's.
WRITERS = {
    "elementwise": map_kernel,
    "reduction": reduction_kernel,
    "contraction": contraction_kernel,
}


def generate(
    eqn: Eqn, kernel_name: str, options: CudaOptions, windows: dict | None = None
) -> KernelSource:
    """The kernel's source, from the generator its contents call for; a map kernel
    stores the outputs of ``windows`` ({position: UpdateWindow}) into those windows."""
    body = kernel_body(eqn)
    literals = {
        v: a for v, a in zip(body.invars, eqn.inputs, strict=True) if isinstance(a, Literal)
    }
    w = KernelWriter(kernel_name, body, literals)
    header = f"kernel {eqn.params['name']} ({eqn.params['kind']}):\n{body}"
    if windows:  # ``block_memory.window_stores`` chose a map kernel
        return map_kernel(w, options, header, windows)
    return generator_of(eqn, body)(w, options, header)


def kernel_body(eqn: Eqn) -> Jaxpr:
    """A kernel eqn's jaxpr, its calls spliced in: what the generators read."""
    return inline_calls(eqn.params["jaxpr"], calls=CALLS)


def is_map(eqn: Eqn) -> bool:
    """Whether ``eqn`` is a kernel that ``map_kernel`` generates."""
    return eqn.prim is kernel_p and generator_of(eqn, kernel_body(eqn)) is map_kernel


def generator_of(eqn: Eqn, body: Jaxpr):
    """The generator a kernel eqn (``body`` its jaxpr, calls spliced in) calls for: its
    kind's, or for an opaque kernel its op's."""
    writer = WRITERS.get(eqn.params["kind"])
    if writer is not None:
        return writer
    names = {e.prim.name for e in body.eqns}
    if "dot_general" in names:
        return contraction_kernel
    if names & set(REDUCERS):
        return reduction_kernel
    if "scatter" in names:
        return scatter_kernel
    if updated_operand(eqn) is not None:  # a dynamic_update_slice alone: its window
        return window_kernel
    if "cumsum" in names:
        return cumsum_kernel
    return map_kernel


def map_refusal(body: Jaxpr) -> str | None:
    """Why ``map_kernel`` cannot write ``body``: an op on the way to an output with
    elements that has no per-element rule (``SCALAR_RULES``, ``INDEX_RULES``); None when
    it can (the writer raises ``CodegenError`` on that op). Known before any source is
    written, so a block decides which kernels split before it proves the window stores
    that its map kernels are then generated with (``program``)."""
    producer = {v: e for e in body.eqns for v in e.outputs}
    stack = [v for v in body.outvars if isinstance(v, Var) and v.aval.size > 0]
    seen: set = set()
    while stack:
        var = stack.pop()
        eqn = producer.get(var)
        if var in seen or eqn is None:
            continue
        seen.add(var)
        if eqn.prim.name not in SCALAR_RULES and eqn.prim.name not in INDEX_RULES:
            return f"cuda codegen: {eqn.prim.name} cannot be computed per element in a map kernel"
        stack.extend(a for a in eqn.inputs if isinstance(a, Var))
    return None
