"""The kernel contract as code: which sets of equations make one kernel, of which kind,
and how a set becomes a ``kernel`` equation (see ``kernel_p`` in ir/higher_order.py).

``decide`` is the single place that says yes or no to a kernel: fusion asks it (or its
constant-time form ``merged_spec``) before every merge, the verifier asks it of every
kernel fusion produced, and each no is a named ``Refusal`` (passes/refusals.py) from one
rule below. ``classify`` is its yes-or-no form, for callers that need no reason.

``build_kernel`` is the single place that makes a ``kernel`` equation, for fusion and
for the backends: ``as_kernel`` makes a plain equation the kernel of one op fusion would
make of it, and ``split_into_ops`` takes apart a kernel whose body a backend cannot
write into such kernels of one op each, which run through memory.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..ir.core import Eqn, Jaxpr, Literal, Var, first_source_info
from ..ir.higher_order import kernel_p
from ..ir.primitive import Pattern
from .cse import eliminate_common_subexpressions
from .refusals import Refusal


@dataclass(frozen=True)
class KernelSpec:
    kind: str  # elementwise | reduction | contraction | opaque | view (fusion's, see below)
    shape: tuple[int, ...] = ()  # the iteration shape: S, or the contraction's output
    axes: tuple[int, ...] = ()  # the axes of S a reduction kernel reduces

    @property
    def reduced_shape(self) -> tuple[int, ...]:
        return tuple(d for i, d in enumerate(self.shape) if i not in self.axes)

    @property
    def kept_axes(self) -> tuple[int, ...]:
        return tuple(i for i in range(len(self.shape)) if i not in self.axes)


def reduction_axes(eqn: Eqn) -> tuple[int, ...] | None:
    if eqn.prim.pattern is not Pattern.REDUCTION:
        return None
    if "axes" in eqn.params:
        return tuple(sorted(eqn.params["axes"]))
    return (eqn.params["axis"],)


# Reads of a window of an array, which a loop kernel makes in place, through an index
# map (start + stride * loop index), instead of a kernel of their own copying it out.
WINDOWS = ("slice", "dynamic_slice")
# Reads that choose, by comparing the index, between pieces of arrays or a constant: a
# loop kernel reads element i of ``pad(x)`` as ``x[i - low]`` or the padding value, of
# ``concatenate(xs)`` as the piece i falls in, shifted. ``np.roll`` (a concatenate of two
# slices) and ``np.pad`` then cost no buffer and no copy in the loop that reads them.
INDEX_MAPS = ("pad", "concatenate")
# Every read by index arithmetic: each reads arrays (``indexed_arrays``) that are kernel
# inputs or such reads in the same kernel, never values the kernel computes.
INDEXED = WINDOWS + INDEX_MAPS
# Reshapes that only drop or insert size-1 dims: a window's read then carries over.
UNIT_RESHAPES = ("reshape", "squeeze", "expand_dims")


def is_view(eqn: Eqn) -> bool:
    """A window read, or a reshape that only moves size-1 dims (a view of a window when
    it shares a kernel: ``views_read_memory`` says where it may)."""
    name = eqn.prim.name
    if name in INDEXED:
        return True
    if name not in UNIT_RESHAPES:
        return False
    before, after = eqn.inputs[0].aval.shape, eqn.outputs[0].aval.shape
    return [d for d in before if d != 1] == [d for d in after if d != 1]


def indexed_arrays(eqn: Eqn) -> list:
    """The arrays a read by index arithmetic (``INDEXED``) reads elements of; not its
    scalars (a dynamic window's starts, the padding value)."""
    name = eqn.prim.name
    if name == "concatenate":
        return list(eqn.inputs)
    return [eqn.inputs[0]] if name in INDEXED else []


def fusible(eqn: Eqn) -> bool:
    """Whether ``eqn`` may share a kernel with others (else it is an opaque kernel)."""
    pattern = eqn.prim.pattern
    if eqn.prim.multiple_results:
        return False
    if is_view(eqn):
        return True
    if pattern in (Pattern.ELEMENTWISE, Pattern.BROADCAST, Pattern.CONTRACTION):
        return True
    return pattern is Pattern.REDUCTION and bool(reduction_axes(eqn))


def classify(eqns: Sequence[Eqn]) -> KernelSpec | None:
    """The kernel these equations (in program order) form, or None if they form none
    (``decide`` says why)."""
    spec = decide(eqns)
    return spec if isinstance(spec, KernelSpec) else None


def decide(eqns: Sequence[Eqn]) -> KernelSpec | Refusal:
    """The kernel these equations (in program order) form, or why they form none."""
    if len(eqns) == 1 and (not fusible(eqns[0]) or is_view(eqns[0])):
        return KernelSpec("opaque")
    if not eqns:
        return Refusal.EMPTY
    if not all(fusible(e) for e in eqns):
        return Refusal.OPAQUE
    produced = {v for e in eqns for v in e.outputs}
    viewed = {v for e in eqns if is_view(e) for v in e.outputs}
    computed = [e for e in eqns if not is_view(e)]
    if not computed and not any(e.prim.name in INDEX_MAPS for e in eqns):
        return Refusal.VIEW_COPY  # windows alone are copies: opaque kernels, one each
    if not computed:  # a pad or concatenate with the views it reads: one loop writes it
        spec = KernelSpec("elementwise", _shape(eqns[-1]))
    else:
        contractions = [e for e in eqns if e.prim.pattern is Pattern.CONTRACTION]
        reductions = [e for e in eqns if e.prim.pattern is Pattern.REDUCTION]
        if contractions:
            spec = _contraction(computed, contractions, reductions, produced, viewed)
        elif reductions:
            spec = _reduction(computed, reductions, produced, viewed)
        else:
            spec = _elementwise(computed, produced, viewed)
    if isinstance(spec, Refusal):
        return spec
    return views_read_memory(eqns, produced, viewed, _spec_shapes(spec)) or spec


def _spec_shapes(spec: KernelSpec) -> set:
    """The shapes a value of a kernel of ``spec`` may have where it is read per point."""
    return {spec.shape, spec.reduced_shape} if spec.kind == "reduction" else {spec.shape}


def views_read_memory(eqns, produced, viewed, shapes) -> Refusal | None:
    """The rule for views in a kernel: a window, pad or concatenate reads kernel inputs
    or other such reads of the kernel (never an array the kernel computes; its rank-0
    starts and padding value may be), a unit reshape reads a view's value, and each view
    has one of the kernel's shapes ``shapes`` unless only broadcasts and other views of
    the kernel read it. None when the views keep it, else the rule they break."""
    views = [eqn for eqn in eqns if is_view(eqn)]
    if not views:
        return None
    readers: dict = {}
    indexed = set()
    for eqn in eqns:
        for atom in eqn.inputs:
            readers.setdefault(atom, []).append(eqn)
        if eqn.prim.name in INDEXED:
            indexed.update(eqn.outputs)
    for eqn in views:
        operand = eqn.inputs[0]
        if eqn.prim.name in INDEXED:
            if any(a in produced and a not in indexed for a in indexed_arrays(eqn)):
                return Refusal.VIEW_OF_COMPUTED
        elif operand not in viewed:
            return Refusal.VIEW_OF_COMPUTED
        out = eqn.outputs[0]
        if out.aval.shape not in shapes:
            inside = readers.get(out, [])
            if not inside or not all(
                e.prim.name == "broadcast_in_dim" or is_view(e) for e in inside
            ):
                return Refusal.VIEW_SHAPE
    return None


def _shape(eqn: Eqn) -> tuple[int, ...]:
    return eqn.outputs[0].aval.shape


def _broadcasts_an_input(eqn: Eqn, produced: set, viewed: set) -> bool:
    """A broadcast inside a loop nest reads a kernel input (or a literal, or a window of
    an input) at projected indices; it cannot broadcast a value computed in the same
    loop nest."""
    if eqn.prim.name != "broadcast_in_dim":
        return True
    return eqn.inputs[0] not in produced or eqn.inputs[0] in viewed


def _elementwise(eqns, produced, viewed) -> KernelSpec | Refusal:
    shape = _shape(eqns[0])
    for eqn in eqns:
        if _shape(eqn) != shape:
            return Refusal.SHAPE
        if not _broadcasts_an_input(eqn, produced, viewed):
            return Refusal.BROADCAST_OF_COMPUTED
    return KernelSpec("elementwise", shape)


def _contraction(eqns, contractions, reductions, produced, viewed) -> KernelSpec | Refusal:
    if len(contractions) > 1:
        return Refusal.TWO_CONTRACTIONS
    if reductions:
        return Refusal.CONTRACTION_AND_REDUCTION
    dot = contractions[0]
    if any(a in produced for a in dot.inputs):
        return Refusal.CONTRACTION_PROLOGUE
    shape = _shape(dot)
    for eqn in eqns:
        if _shape(eqn) != shape:
            return Refusal.SHAPE
        if not _broadcasts_an_input(eqn, produced, viewed):
            return Refusal.BROADCAST_OF_COMPUTED
    return KernelSpec("contraction", shape)


def _reduction(eqns, reductions, produced, viewed) -> KernelSpec | Refusal:
    first = reductions[0]
    spec = KernelSpec("reduction", first.inputs[0].aval.shape, reduction_axes(first))
    for eqn in reductions:
        if eqn.inputs[0].aval.shape != spec.shape or reduction_axes(eqn) != spec.axes:
            return Refusal.REDUCTION_SPACES  # one iteration space, one set of reduced axes
    reduced = spec.reduced_shape
    for eqn in eqns:
        if eqn.prim.pattern is Pattern.REDUCTION:
            continue
        if _shape(eqn) not in (spec.shape, reduced):
            return Refusal.SHAPE
        if not _broadcasts_an_input(eqn, produced, viewed) and not _broadcasts_back(eqn, spec):
            return Refusal.BROADCAST_OF_COMPUTED
    return spec


def _broadcasts_back(eqn: Eqn, spec: KernelSpec) -> bool:
    """A reduced value broadcast back over the iteration space, as softmax divides by
    its row sums: the broadcast keeps exactly the axes that were not reduced."""
    return (
        eqn.inputs[0].aval.shape == spec.reduced_shape
        and eqn.params["shape"] == spec.shape
        and tuple(eqn.params["broadcast_dimensions"]) == spec.kept_axes
    )


def merged_spec(a: KernelSpec, b: KernelSpec) -> KernelSpec | Refusal:
    """The kernel two kernels of specs ``a`` and ``b`` make together, or why none: what
    ``decide`` says of their union, leaving aside the equations of one that read a
    value the other computes (``read_across_refusal``). Fusion merges with this, in time
    independent of the kernels' sizes, instead of deciding every union anew."""
    if "opaque" in (a.kind, b.kind):
        return Refusal.OPAQUE
    if a.kind == "elementwise" and b.kind != "elementwise":
        a, b = b, a
    if b.kind != "elementwise":  # one dot_general, or one reduction space
        if a.kind == b.kind == "reduction":
            return a if a == b else Refusal.REDUCTION_SPACES
        if a.kind == b.kind == "contraction":
            return Refusal.TWO_CONTRACTIONS
        return Refusal.CONTRACTION_AND_REDUCTION
    if a.kind == "reduction":
        return a if b.shape in (a.shape, a.reduced_shape) else Refusal.SHAPE
    return a if b.shape == a.shape else Refusal.SHAPE


def merged_with_view(
    view: KernelSpec, other: KernelSpec, read_by_broadcasts: bool
) -> KernelSpec | Refusal:
    """The kernel a chain of views (a window of a kernel input, then unit reshapes; spec
    kind "view", shape its result's) makes with a kernel ``other`` that reads it, or why
    none: ``other`` as it was, when the view has one of its shapes or only broadcasts
    there read it (``views_read_memory``)."""
    if other.kind == "opaque":
        return Refusal.OPAQUE
    if other.kind == "view":
        return Refusal.VIEW_COPY
    return other if view.shape in _spec_shapes(other) or read_by_broadcasts else Refusal.VIEW_SHAPE


def read_across_refusal(eqn: Eqn, spec: KernelSpec) -> Refusal | None:
    """Why ``eqn`` may not read a value computed in the same kernel of ``spec``, or None
    when it may (a read by index arithmetic of another may, though:
    ``fusion.Partition._read_across_refusal``)."""
    if eqn.prim.pattern is Pattern.CONTRACTION:
        return Refusal.CONTRACTION_PROLOGUE  # no prologue: the operands come from memory
    if eqn.prim.name in INDEXED:
        return Refusal.VIEW_OF_COMPUTED  # a window's array comes from memory
    if eqn.prim.name == "broadcast_in_dim":
        if spec.kind == "reduction" and _broadcasts_back(eqn, spec):
            return None
        return Refusal.BROADCAST_OF_COMPUTED
    return None


# ----------------------------------------------------------------------------- build

# Bookkeeping ops left out of kernel names unless they are all a kernel does.
_UNNAMED = ("broadcast_in_dim", "convert_element_type", "iota", *INDEXED, *UNIT_RESHAPES)
_MAX_NAMED_OPS = 4


def kernel_name(eqns: Sequence[Eqn]) -> str:
    """A readable name from the ops a kernel runs, as in ``fused_mul_add_tanh``."""
    names = list(dict.fromkeys(e.prim.name for e in eqns))
    if len(eqns) == 1:
        return names[0]
    named = [n for n in names if n not in _UNNAMED] or names
    return "fused_" + "_".join(named[:_MAX_NAMED_OPS])


def build_kernel(eqns: Sequence[Eqn], outputs: Sequence[Var], spec: KernelSpec) -> Eqn:
    """The ``kernel`` equation computing ``outputs`` with ``eqns``: its operands are
    the variables the equations read and do not define, its body a fresh copy."""
    produced = {v for e in eqns for v in e.outputs}
    inputs = list(
        dict.fromkeys(a for e in eqns for a in e.inputs if isinstance(a, Var) and a not in produced)
    )
    env = {v: Var(v.aval) for v in inputs}
    body_eqns = []
    for eqn in eqns:
        new_outputs = [Var(v.aval) for v in eqn.outputs]
        new_inputs = [env.get(a, a) if isinstance(a, Var) else a for a in eqn.inputs]
        env.update(zip(eqn.outputs, new_outputs, strict=True))
        body_eqns.append(eqn.replace(inputs=new_inputs, outputs=new_outputs))
    body = Jaxpr([], [env[v] for v in inputs], body_eqns, [env[v] for v in outputs])
    # Broadcasts copied into each consumer meet again here: keep one of each.
    body = eliminate_common_subexpressions(body)
    params = {"name": kernel_name(eqns), "kind": spec.kind, "jaxpr": body}
    source = first_source_info(eqns)
    return Eqn(kernel_p, inputs, list(outputs), params, source)


def as_kernel(eqn: Eqn) -> Eqn:
    """A ``kernel`` eqn as it is; any other eqn as the kernel of one op that fusion
    builds of it (``build_kernel``), of the kind fusion gives it (``classify``; opaque
    where it gives none): fusion alone decides a kernel's kind."""
    if eqn.prim is kernel_p:
        return eqn
    return build_kernel([eqn], eqn.outputs, classify([eqn]) or KernelSpec("opaque"))


def split_into_ops(kernel: Eqn) -> list[Eqn]:
    """The ``kernel`` eqn's body as kernels of one op each over the program's values
    (``as_kernel``), in the body's order: for a kernel a backend cannot write as one.
    Its intermediates become new variables of the program, each op that makes one of
    its outputs makes that output itself, and an output that is no op's (the body
    returns an input, a literal, or a value it returns at an earlier position too) is
    a copy: an elementwise kernel of no op, which returns its input."""
    body = kernel.params["jaxpr"]
    program: dict = dict(zip(body.invars, kernel.inputs, strict=True))
    for inner, top in zip(body.outvars, kernel.outputs, strict=True):
        if isinstance(inner, Var) and inner not in program:
            program[inner] = top
    parts = []
    for eqn in body.eqns:
        outputs = [program.setdefault(v, Var(v.aval)) for v in eqn.outputs]
        inputs = [program.get(a, a) if isinstance(a, Var) else a for a in eqn.inputs]
        parts.append(as_kernel(eqn.replace(inputs=inputs, outputs=outputs)))
    for inner, top in zip(body.outvars, kernel.outputs, strict=True):
        value = program[inner] if isinstance(inner, Var) else inner
        if value is not top:
            parts.append(_copy_kernel(value, top, kernel.source_info))
    return parts


def _copy_kernel(value: Var | Literal, output: Var, source_info: str | None) -> Eqn:
    """The elementwise kernel of no op that makes ``output`` a copy of ``value``."""
    inner = Var(output.aval)
    params = {"name": "copy", "kind": "elementwise", "jaxpr": Jaxpr([], [inner], [], [inner])}
    return Eqn(kernel_p, [value], [output], params, source_info)
