"""How each kind of kernel is written into the program: the writer of each kind
(``_opaque``, ``_elementwise``, ``_reduction``, ``_contraction``), a mixin of the program
writer, whose context (names, arrays, allocation, the memory plan's place) the writers
use. ``program._ProgramWriter._kernel`` dispatches on the kind fusion gave the kernel
through ``KIND_WRITERS`` (``write_kind``).

An opaque kernel is one op written by its emitter (``opaque_emitters.EMITTERS``) over
arrays, or as a scalar (``scalar_values.FORMS``); elementwise and reduction kernels are
loop nests (``kernels.KernelWriter``, ``reductions.ReductionWriter``); a contraction is
a product through BLAS or a unit of its own (``contraction.write_dot``,
``units.write_product``) with its elementwise epilogue fused into its row blocks or
written as a unit reading the product.
"""

from __future__ import annotations

import functools
import math

from ...ir.core import Eqn, Jaxpr, Literal, Var
from ...passes.memory import makes_view
from . import contraction, opaque, scalar, scalar_values
from .contraction import write_dot
from .kernels import (
    REDUCTIONS,
    Kernel,
    KernelWriter,
    identity_mapping,
    kept_mapping,
    reduced_axes,
)
from .loopnest import Scalar, Use
from .reductions import ReductionWriter
from .unfusable import Unfusable, WriterRefusal

# Ops whose result is a view of their operand: the operand must not share a buffer.
_VIEWS = ("reshape", "squeeze", "expand_dims")


class KindWriters:
    """The writers of each kind of kernel, mixed into ``program._ProgramWriter``."""

    def write_kind(self, kernel: Kernel) -> None:
        """Write ``kernel`` with the writer of its kind (``KIND_WRITERS``)."""
        writer = KIND_WRITERS.get(kernel.kind)
        if writer is None:
            raise NotImplementedError(
                f"the cpu backend has no writer for {kernel.name}, a kernel of kind "
                f"{kernel.kind!r} (it writes {', '.join(KIND_WRITERS)})"
            )
        writer(self, kernel)

    def _opaque(self, kernel: Kernel) -> None:
        (eqn,) = kernel.jaxpr.eqns
        if eqn.prim in REDUCTIONS:  # over no axes: a kernel of its own, written as a loop
            return self._reduction(kernel)
        env = dict(zip(kernel.jaxpr.invars, kernel.inputs, strict=True))
        # An output that nothing reads is not the kernel's: it keeps its (named) inner var,
        # so a many-output op (sort, pure_callback) still binds each result in order.
        env.update(zip(kernel.jaxpr.outvars, kernel.outputs, strict=True))
        top = eqn.replace(
            inputs=[_read(env, a) for a in eqn.inputs],
            outputs=[_read(env, v) for v in eqn.outputs],
        )
        form = scalar_values.FORMS.get(eqn.prim.name)
        lines = form(self, top) if form is not None else None
        if lines is None:
            top, read_back = self._over_arrays(top)
            inputs = [self.constant_array(a) for a in top.inputs]
            out = self.name(top.outputs[0]) if top.outputs else None  # a callback may return none
            lines = opaque.EMITTERS[eqn.prim.name](self, top, inputs, out) + read_back
            if len(lines) == 1 and isinstance(top.inputs[0], Var):
                offset = _view_offset(top)
                if offset is not None:  # a view: a step (``steps``)
                    return self.steps.alias(self, out, inputs[0], lines[0], offset)
        self.emit(*lines)

    def _over_arrays(self, eqn: Eqn) -> tuple[Eqn, list[str]]:
        """``eqn`` for an emitter that reads and writes arrays: each operand held as a
        scalar materialized here (but those the emitter reads with ``scalar_of``), each
        result of one element written into a new array, then read back by the lines
        returned."""
        scalars_from = scalar_values.SCALAR_OPERANDS.get(eqn.prim.name, len(eqn.inputs))
        inputs = []
        for k, atom in enumerate(eqn.inputs):
            if isinstance(atom, Var) and k < scalars_from and self.is_scalar(atom):
                atom = self._array_var(atom.aval, self.array_of(atom))
            inputs.append(atom)
        outputs, read_back = [], []
        for var in eqn.outputs:
            if self.is_scalar(var):
                array = self._array_var(var.aval, self.fresh(f"{self.name(var)}_array"))
                read_back.append(f"{self.name(var)} = {self.scalar_of(array)}")
                var = array
            outputs.append(var)
        return eqn.replace(inputs=inputs, outputs=outputs), read_back

    def _array_var(self, aval, name: str) -> Var:
        """A new value held in the array ``name``, for an emitter that wants arrays."""
        var = Var(aval)
        self.names[var] = name
        self.arrays.add(var)
        return var

    def _scalar_output(self, top: Var) -> bool:
        """Whether a kernel binds its output ``top`` to a scalar local (one element, not
        stored straight into an update's window, ``Liveness.window_stores``)."""
        liveness, _ = self.place
        return self.is_scalar(top) and top not in liveness.window_stores

    def _bind_scalars(self, writer: KernelWriter, outputs) -> None:
        """Each output held as a scalar bound to its value, after the kernel's loops."""
        for var, use in outputs:
            writer.builder.write(f"{use.array} = {writer.value(var, use.dims).name}")

    def _elementwise(self, kernel: Kernel, writer: KernelWriter | None = None):
        shapes = {v.aval.shape for v in kernel.outputs}
        if len(shapes) != 1:
            raise Unfusable(
                WriterRefusal.OUTPUT_SHAPES, "outputs of different shapes in an elementwise kernel"
            )
        writer = writer or KernelWriter(self, kernel)
        shape = kernel.outputs[0].aval.shape
        if all(self._scalar_output(top) for top in kernel.outputs):  # one element each
            outputs = [
                (var, Use(self.name(top), shape, identity_mapping(shape)))
                for top, var in zip(kernel.outputs, kernel.jaxpr.outvars, strict=True)
            ]
            writer.plan(shape, outputs=outputs)
            self._bind_scalars(writer, outputs)
            self.emit(*writer.builder.render(""))
            return
        outputs = self._output_uses(kernel, writer, {})
        self.emit(*self._elementwise_loops(kernel, writer, outputs))

    def _output_uses(self, kernel: Kernel, writer: KernelWriter, reuse: dict) -> list[tuple]:
        """(body var, Use) of each output of a loop kernel, allocating those that need it;
        ``reuse`` names the arrays some outputs are stored into."""
        tops = zip(kernel.outputs, kernel.jaxpr.outvars, strict=True)
        return [(var, writer.output_use(top, reuse.get(top))) for top, var in tops]

    def _elementwise_loops(self, kernel: Kernel, writer: KernelWriter, outputs) -> list[str]:
        """The lines of an elementwise kernel's loops, storing ``outputs``."""
        shape = kernel.outputs[0].aval.shape
        groups = writer.plan(shape, outputs=outputs)
        parallel = work(kernel, shape) >= self.parallel_work
        parallel = parallel and bool(groups) and groups[0].extent >= 2
        writer.write_elementwise(outputs, parallel)
        self.parallel |= parallel
        return writer.builder.render("")

    def _reduction(self, kernel: Kernel) -> None:
        writer = ReductionWriter(self, kernel)
        first = writer.reductions[0]
        shape = first.inputs[0].aval.shape
        reduced = frozenset(reduced_axes(first))
        r_outputs, s_outputs, scalars = [], [], []  # scalars: bound after the loops
        for top, var in zip(kernel.outputs, kernel.jaxpr.outvars, strict=True):
            scalar_output = self._scalar_output(top)
            if top.aval.shape == shape:
                dims, outputs = identity_mapping(shape), s_outputs
            else:
                dims, outputs = kept_mapping(top.aval.shape, shape, reduced), r_outputs
            if dims is None:
                raise Unfusable(
                    WriterRefusal.REDUCTION_OUTPUT,
                    f"output {top.aval.str_short()} of a reduction over {shape}",
                )
            name = self.name(top) if scalar_output else self.allocate(top)
            (scalars if scalar_output else outputs).append((var, Use(name, top.aval.shape, dims)))
        writer.plan(shape, reduced, outputs=r_outputs + s_outputs + scalars)
        self.parallel |= writer.write(
            r_outputs, s_outputs, work(kernel, shape) >= self.parallel_work
        )
        self._bind_scalars(writer, scalars)
        self.emit(*writer.builder.render(""))

    def _contraction(self, kernel: Kernel) -> None:
        body = kernel.jaxpr
        dots = [eqn for eqn in body.eqns if eqn.prim.name == "dot_general"]
        leaves = dict(zip(body.invars, kernel.inputs, strict=True))
        if len(dots) != 1 or not all(x in leaves or isinstance(x, Literal) for x in dots[0].inputs):
            raise Unfusable(
                WriterRefusal.CONTRACTION_BODY,
                "a contraction kernel holds one dot_general of kernel inputs",
            )
        (dot,) = dots
        product = dot.outputs[0]
        lhs, rhs = (leaves.get(x, x) for x in dot.inputs)  # a literal: a scalar factor
        direct = [
            top for top, var in zip(kernel.outputs, body.outvars, strict=True) if var is product
        ]
        one_element = product.aval.size == 1  # a dot product: read back as a scalar
        if direct and not one_element:
            array = self.name(direct[0])
        else:
            array = self.fresh(f"{self.name(product)}_dot")
        target = array
        if one_element:
            target = self.name(direct[0]) if direct else self.fresh(self.name(product))
        epilogue = _epilogue(kernel, product)
        if not epilogue.outputs and self._product_unit(dot, lhs, rhs, array, direct):
            self.aliases(direct[1:], array)
            return
        operands = (self._dot_operand(lhs), lhs.aval, self._dot_operand(rhs), rhs.aval)
        if self._epilogue_unit(epilogue, dot, target, operands, direct, (lhs, rhs)):
            return
        writer, outputs, over_product, in_block = None, None, [], None
        if epilogue.outputs:
            writer = KernelWriter(self, epilogue)
            if one_element:
                writer.scalars[product] = Scalar(target)
            else:
                writer.leaves[product] = target
            liveness, index = self.place
            over_product = [
                top
                for top in epilogue.outputs
                if not one_element and liveness.overwrite_refusal(index, top, product) is None
            ]
            if not all(self._scalar_output(top) for top in epilogue.outputs):
                # One output of the epilogue takes the product's array.
                reuse = {over_product[0]: target} if over_product else {}
                outputs = self._output_uses(epilogue, writer, reuse)
                in_block = functools.partial(self._epilogue_rows, epilogue, writer, outputs, dot)
        lines, in_blocks = write_dot(self, *operands, array, product.aval, dot.params, in_block)
        self.emit(*lines)
        if one_element:
            self.emit(f"{target} = {array}[{scalar_values.element_index(product.aval)}]")
        self.emit(*(f"{self.name(top)} = {target}" for top in direct[1:]))
        if over_product and outputs is not None:
            self.emit(f"{self.name(over_product[0])} = {target}")
        if outputs is None and writer is not None:  # every output a scalar
            self._elementwise(epilogue, writer)
        elif outputs is not None and not in_blocks:
            self.emit(*self._elementwise_loops(epilogue, writer, outputs))

    def _product_unit(self, dot: Eqn, lhs, rhs, array: str, direct) -> bool:
        """Write the product as a unit (``units.write_product``) into the array named
        ``array`` (the kernel's first direct output, or a new array), allocated here from
        the memory plan; False, having written nothing, where it stays inline."""
        from .units import write_product  # circular at module level (``_kernel``)

        if not (isinstance(lhs, Var) and isinstance(rhs, Var)):
            return False  # a literal factor: a scalar, not an array to pass
        product = dot.outputs[0]
        out = direct[0] if direct and self.names.get(direct[0]) == array else None
        if out is None:
            out = Var(product.aval)
            self.names[out] = array
        return write_product(self, dot, lhs, rhs, out)

    def _epilogue_unit(
        self, epilogue: Kernel, dot: Eqn, array: str, operands, direct, atoms
    ) -> bool:
        """Write the product (a unit of its own where it can be, ``_product_unit``), then
        its epilogue as a unit of its own (``units``) reading the product's array, when
        the epilogue has outputs that are arrays and the product is a unit or small enough
        to run on one thread (a large product written inline, whose operands must be
        copied first, runs its epilogue in its row blocks, ``_epilogue_rows``); False,
        having written nothing, otherwise."""
        product = dot.outputs[0]
        (lhs_contract, _), _ = dot.params["dimension_numbers"]
        depth = math.prod(dot.inputs[0].aval.shape[d] for d in lhs_contract)
        small = not contraction.runs_on_all_threads(product.aval, depth)
        avals = (dot.inputs[0].aval, dot.inputs[1].aval, product.aval)
        unit = small or contraction.into_array(*avals, dot.params)  # in blocks, gemm.blocked_gemm
        if product.aval.size == 1 or not unit or not epilogue.outputs:
            return False
        if all(self._scalar_output(top) for top in epilogue.outputs):
            return False
        liveness, index = self.place
        over_product = [
            top
            for top in epilogue.outputs
            if liveness.overwrite_refusal(index, top, product) is None
        ]
        start, calls_blas = len(self.lines), self.calls_blas
        arrays, pooled, buffers = set(self.arrays), list(self.pooled), dict(self.buffers)
        unit_count = len(self.units)
        if not self._product_unit(dot, *atoms, array, direct):
            lines, _ = write_dot(self, *operands, array, product.aval, dot.params, None)
            self.emit(*lines)
        self.aliases(direct[1:], array)
        held = Var(product.aval)  # the product, a value of the launcher named ``array``
        self.names[held] = array
        body = epilogue.jaxpr
        eqns = [eqn for eqn in body.eqns if eqn is not dot]
        read = {a for eqn in eqns for a in eqn.inputs} | set(body.outvars)
        pairs = [(v, a) for v, a in zip(body.invars, epilogue.inputs, strict=True) if v in read]
        invars = [v for v, _ in pairs] + [product]
        unit = Kernel(
            "elementwise",
            Jaxpr([], invars, eqns, body.outvars),
            [a for _, a in pairs] + [held],
            epilogue.outputs,
            epilogue.name,
        )
        reuse = {over_product[0]: held} if over_product else {}
        from .units import write_unit  # circular at module level (``_kernel``)

        if write_unit(self, unit, "elementwise", reuse):
            return True
        del self.lines[start:]
        self.calls_blas = calls_blas
        self.arrays, self.pooled, self.buffers = arrays, pooled, buffers
        for unit in self.units[unit_count:]:
            del self.unit_index[unit.key]
        del self.units[unit_count:]
        return False

    def _epilogue_rows(self, epilogue, writer, outputs, dot, low: str, high: str):
        """The lines of a contraction's epilogue over rows ``low`` to ``high`` of its
        product only, as (those that read no row, the loops: ``write_dot`` runs the first
        before its parallel region), or None where it cannot be split so: it must read the
        product at the point it writes (elementwise), write whole arrays of the product's
        shape, and loop over the product's rows outermost (alone or merged with the
        columns)."""
        product = dot.outputs[0]
        shape = product.aval.shape
        (lhs_contract, _), (lhs_batch, _) = dot.params["dimension_numbers"]
        free = len(dot.inputs[0].aval.shape) - len(lhs_batch) - len(lhs_contract)
        if lhs_batch or any(use.window or use.shape != shape for _, use in outputs):
            return None
        groups = writer.plan(shape, outputs=outputs)
        name = writer.leaves[product]
        if any(u.array == name and u.dims != identity_mapping(shape) for u in writer.uses):
            return None
        row_dims = [d for d in range(free) if shape[d] != 1]
        if not groups or list(groups[0].dims[: len(row_dims)]) != row_dims:
            return None
        per_row = math.prod(shape[d] for d in groups[0].dims[len(row_dims) :])
        scale = "" if per_row == 1 else f" * {per_row}"
        writer.write_elementwise(outputs, False, f"{low}{scale}, {high}{scale}")
        return writer.builder.render_hoisted("")

    def _dot_operand(self, atom) -> str:
        """An operand of ``dot_general`` as an array (BLAS reads arrays)."""
        return self.array_of(atom) if isinstance(atom, Var) else self.constant_array(atom)


# The writer of each kind of kernel, the kind fusion gave it (``passes.kernels.decide``,
# also for a plain eqn: ``passes.kernels.as_kernel``); the writer never re-derives it.
KIND_WRITERS = {
    "elementwise": KindWriters._elementwise,
    "reduction": KindWriters._reduction,
    "contraction": KindWriters._contraction,
    "opaque": KindWriters._opaque,
}


def work(kernel: Kernel, shape) -> int:
    """An estimate of a loop kernel's run time: elements, weighted by its expensive ops."""
    expensive = sum(eqn.prim.expensive for eqn in kernel.jaxpr.eqns)
    return math.prod(shape) * (1 + 6 * expensive)


def _view_offset(eqn: Eqn) -> int | None:
    """Where the view ``eqn`` makes starts in its operand's memory, in bytes: a reshape's
    at 0, a static window of whole rows at its first row; None for any other op."""
    if eqn.prim.name in _VIEWS:
        return 0
    if eqn.prim.name == "slice" and makes_view(eqn):
        aval = eqn.inputs[0].aval
        row = math.prod(aval.shape[1:]) * scalar.storage_dtype(aval.dtype).itemsize
        return eqn.params["start_indices"][0] * row
    return None


def _epilogue(kernel: Kernel, product: Var) -> Kernel:
    """A contraction kernel's outputs other than the bare product, as an elementwise kernel."""
    body = kernel.jaxpr
    pairs = [
        (top, var)
        for top, var in zip(kernel.outputs, body.outvars, strict=True)
        if var is not product
    ]
    jaxpr = Jaxpr([], body.invars, body.eqns, [var for _, var in pairs])
    return Kernel("elementwise", jaxpr, kernel.inputs, [top for top, _ in pairs], kernel.name)


def _read(env, atom):
    return env.get(atom, atom) if isinstance(atom, Var) else atom
