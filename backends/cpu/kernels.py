"""Loop kernels: the iteration space of a kernel body and one scalar statement per eqn.

The generator reads the kernel's sub-jaxpr backwards from its outputs, asking for each
value "at" a ``mapping`` (for each of the value's dims, the iteration dim it follows, or
``None``): an output is wanted at every point of the iteration space, a
``broadcast_in_dim`` operand at the dims it is broadcast along, a reduction's operand at
the kept dims plus the reduced ones. Reading the uses this way first (``_Analysis``)
gives the loops (``group_dimensions``); writing them the same way (``KernelWriter.value``)
gives one scalar statement per equation, placed by ``LoopBuilder``. Elementwise kernels
and contraction epilogues are one loop nest (``write_elementwise``); reduction kernels
are written by ``reductions.ReductionWriter``.

Windows, pads and concatenates (``passes.kernels.INDEXED``) read kernel inputs in place
by index arithmetic (``index_maps.IndexMap``): each dim of a value is read at ``start +
stride * i`` of one loop index ``i``. A window of an input is a ``Use.window``; a chain
of them (a slice of a concatenate of slices: ``np.roll`` on two axes) becomes one
expression that selects, by comparing the index, the piece or the padding value it
reads. Pieces and conditions that the loop's extent rules out are left out of the
expression. A body outside this contract raises ``unfusable.Unfusable``.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from ...ir.core import Eqn, Jaxpr, Literal, Var
from ...ir.primitive import Pattern
from ...ir.rules import RuleTable
from ...passes.kernels import INDEXED, WINDOWS, indexed_arrays
from ...passes.window_stores import update_window
from . import scalar
from .index_maps import IndexMap
from .loopnest import Group, LoopBuilder, Scalar, Use, group_dimensions
from .unfusable import Unfusable, WriterRefusal

# A loop nest's body is written at most this many times, once per piece of its loops
# split where their index tests change (``KernelWriter._write_loops``).
MAX_LOOP_PIECES = 16
# The reductions a loop kernel folds (``reductions.ReductionWriter``), each with the rule
# of the mapping its operand is read at (``operand_mappings``).
REDUCTIONS = RuleTable(
    "cpu reductions", not_applicable=lambda prim: prim.pattern is not Pattern.REDUCTION
)
_PASS_THROUGH = ("broadcast_in_dim", "reshape", "squeeze", "expand_dims")


@dataclass
class Kernel:
    """One unit of code generation: a fused kernel, or a plain eqn treated as one."""

    kind: str
    jaxpr: Jaxpr
    inputs: list  # atoms of the program
    outputs: list[Var]
    name: str

    @classmethod
    def of(cls, eqn: Eqn) -> Kernel:
        """The ``kernel`` eqn ``eqn`` (``passes.kernels.as_kernel`` makes one of a plain
        eqn, of the kind fusion gives it) as the record its writers read."""
        params = eqn.params
        return cls(
            params["kind"], params["jaxpr"], list(eqn.inputs), list(eqn.outputs), params["name"]
        )


# --- the mapping rules, shared by analysis and writing -----------------------------------


def operand_mappings(eqn: Eqn, mapping: tuple, shape: tuple) -> list[tuple | None]:
    """For each input of ``eqn``, the mapping it is needed at when the output is at ``mapping``.

    ``shape`` is the iteration shape; dims of size 1 there are normalised to ``None``.
    """
    prim = eqn.prim.name
    out = eqn.outputs[0].aval
    if eqn.prim.pattern is Pattern.ELEMENTWISE:
        return [mapping if len(x.aval.shape) == len(mapping) else () for x in eqn.inputs]
    if prim == "broadcast_in_dim":
        x = eqn.inputs[0].aval
        dims = eqn.params["broadcast_dimensions"]
        return [
            tuple(mapping[d] if x.shape[k] == out.shape[d] else None for k, d in enumerate(dims))
        ]
    if prim in ("reshape", "squeeze", "expand_dims"):
        x = eqn.inputs[0].aval
        out_live = [k for k, n in enumerate(out.shape) if n != 1]
        in_live = [k for k, n in enumerate(x.shape) if n != 1]
        if [out.shape[k] for k in out_live] != [x.shape[k] for k in in_live]:
            raise Unfusable(
                WriterRefusal.RESHAPE_MOVES_DATA,
                f"{prim} that moves data: {x.str_short()} -> {out.str_short()}",
            )
        result: list = [None] * len(x.shape)
        for k_in, k_out in zip(in_live, out_live, strict=True):
            result[k_in] = mapping[k_out]
        return [tuple(result)]
    if prim in REDUCTIONS:
        return REDUCTIONS[prim](eqn, mapping, shape)
    raise Unfusable(WriterRefusal.NOT_A_LOOP_OP, f"{prim} inside a loop kernel")


@REDUCTIONS.rule("reduce_sum", "reduce_prod", "reduce_max", "reduce_min", "argmax", "argmin")
def _reduction_operand(eqn: Eqn, mapping: tuple, shape: tuple) -> list[tuple]:
    """A reduction's operand is read at the kept dims of ``mapping`` and along the
    reduced ones (the iteration shape is the operand's)."""
    x = eqn.inputs[0].aval
    axes = reduced_axes(eqn)
    if x.shape != shape:
        raise Unfusable(
            WriterRefusal.REDUCTION_SPACES, "reductions of different shapes in one kernel"
        )
    kept = iter(mapping)
    return [
        tuple(
            (d if shape[d] != 1 else None) if d in axes else next(kept) for d in range(len(shape))
        )
    ]


def reduced_axes(eqn: Eqn) -> tuple[int, ...]:
    params = eqn.params
    return tuple(params["axes"]) if "axes" in params else (params["axis"],)


def identity_mapping(shape: tuple) -> tuple:
    return tuple(d if n != 1 else None for d, n in enumerate(shape))


def kept_mapping(aval_shape: tuple, shape: tuple, reduced: frozenset) -> tuple | None:
    """The mapping of a value of shape ``aval_shape`` over the kept dims of ``shape``."""
    kept = [d for d, n in enumerate(shape) if d not in reduced and n != 1]
    live = [k for k, n in enumerate(aval_shape) if n != 1]
    if [aval_shape[k] for k in live] != [shape[d] for d in kept]:
        return None
    mapping: list = [None] * len(aval_shape)
    for k, d in zip(live, kept, strict=True):
        mapping[k] = d
    return tuple(mapping)


class _Analysis:
    """Which arrays the kernel reads and writes at which mappings (before any code)."""

    def __init__(self, writer: KernelWriter):
        self.writer = writer
        self.seen: set = set()
        self.uses: list[Use] = []
        self.iota_dims: set[int] = set()
        self.indexed: list[tuple] = []  # (eqn, mapping) of each read by index arithmetic

    def visit(self, var, mapping: tuple) -> None:
        # A worklist, not recursion: a fused chain is as deep as the program is long.
        work = [(var, mapping)]
        while work:
            var, mapping = work.pop()
            for operand in self._operands(var, mapping):
                work.append(operand)

    def _operands(self, var, mapping: tuple) -> list:
        """Record ``var``'s use at ``mapping``; the (operand, mapping) pairs it needs."""
        if isinstance(var, Literal) or var in self.writer.scalars or (var, mapping) in self.seen:
            return []
        self.seen.add((var, mapping))
        writer = self.writer
        if var in writer.leaves:
            self.uses.append(Use(writer.leaves[var], var.aval.shape, mapping))
            return []
        eqn = writer.producer[var]
        if eqn.prim.name in INDEXED:
            self.indexed.append((eqn, mapping))
            return self._indexed(eqn, mapping)
        if eqn.prim.name == "iota":
            d = mapping[eqn.params["dimension"]]
            if d is not None:
                self.iota_dims.add(d)
            return []
        if eqn.prim.name in REDUCTIONS:
            writer.check_reduction(eqn, mapping)
        mappings = operand_mappings(eqn, mapping, writer.shape)
        return list(zip(eqn.inputs, mappings, strict=True))

    def _indexed(self, eqn: Eqn, mapping: tuple) -> list:
        """Record the kernel inputs a chain of reads by index arithmetic reads (windows:
        their loops stay unmerged); the scalars it needs (starts, padding values).
        Every such read keeps its operands' dims: they follow ``mapping`` too."""
        writer, scalars, work = self.writer, [], [eqn]
        while work:
            eqn = work.pop()
            arrays = indexed_arrays(eqn)
            scalars += [(a, ()) for a in eqn.inputs if all(a is not b for b in arrays)]
            for x in arrays:
                if x in writer.leaves:
                    window = ((0, 1),) * x.aval.ndim
                    self.uses.append(Use(writer.leaves[x], x.aval.shape, mapping, window))
                elif x in writer.producer and writer.producer[x].prim.name in INDEXED:
                    work.append(writer.producer[x])
                else:
                    raise Unfusable(
                        WriterRefusal.VIEW_OF_COMPUTED,
                        f"{eqn.prim.name} of a value computed in the kernel",
                    )
        return scalars


class KernelWriter:
    """Writes one loop kernel into a ``LoopBuilder``; ``program`` names and allocates."""

    def __init__(self, program, kernel: Kernel):
        self.program = program
        self.kernel = kernel
        body = kernel.jaxpr
        self.producer = {v: eqn for eqn in body.eqns for v in eqn.outputs}
        self.leaves: dict[Var, str] = {}  # body vars read from arrays: the array's name
        # Body vars bound to scalars: literals and the program's scalar locals.
        self.scalars: dict[Var, Scalar] = {}
        for invar, atom in zip(body.invars, kernel.inputs, strict=True):
            if program.is_scalar(atom):
                self.scalars[invar] = Scalar(program.scalar_of(atom))
            else:
                self.leaves[invar] = program.atom(atom)
        self.reductions = [eqn for eqn in body.eqns if eqn.prim.name in REDUCTIONS]
        self.results: dict[Var, Scalar | Use] = {}  # reduction results, once computed
        # Values read back from an array instead of computed again (a reduction's epilogue
        # reads what its passes kept): var -> the array's use.
        self.stored: dict[Var, Use] = {}
        self.shape: tuple = ()
        self.reduced: frozenset[int] = frozenset()
        # Iteration dims whose loop runs over part of its extent (``write_elementwise``
        # splits the innermost one where index tests change): dim -> (first, stop).
        self.ranges: dict[int, tuple[int, int]] = {}
        self.cuts: dict[int, set] | None = None  # where tests change, while collecting

    # --- set-up ---------------------------------------------------------------------------

    def plan(self, shape: tuple, reduced=frozenset(), outputs=()) -> list[Group]:
        """Analyse the body over iteration ``shape`` and choose the loops."""
        self.shape, self.reduced = shape, frozenset(reduced)
        analysis = _Analysis(self)
        uses = []
        for body_out, use in outputs:
            analysis.visit(body_out, use.dims)
            uses.append(use)
        for eqn in self.reductions:
            x = eqn.inputs[0].aval
            if x.shape != shape or set(reduced_axes(eqn)) != set(reduced):
                raise Unfusable(
                    WriterRefusal.REDUCTION_SPACES, "reductions over different axes in one kernel"
                )
        for eqn in self.reductions:  # a reduction runs even if only a later pass reads it
            analysis.visit(eqn.inputs[0], identity_mapping(shape))
        uses += analysis.uses
        self.uses = uses  # every array the kernel reads or writes, at its mapping
        self.indexed = analysis.indexed
        groups = group_dimensions(shape, self.reduced, uses, analysis.iota_dims)
        self.builder = LoopBuilder(
            groups, self.program.fresh, self.program.view, self.program.opaque
        )
        return groups

    def kept_dims(self) -> tuple:
        return tuple(d for d, n in enumerate(self.shape) if d not in self.reduced and n != 1)

    def check_reduction(self, eqn: Eqn, mapping: tuple) -> None:
        if tuple(m for m in mapping if m is not None) != self.kept_dims():
            raise Unfusable(
                WriterRefusal.REDUCTION_READ_BACK,
                "a reduction result read at other dims than it was reduced to",
            )

    def window_use(self, eqn: Eqn, mapping: tuple) -> Use:
        """The kernel input a window eqn reads, at ``mapping``, through its index map."""
        x = eqn.inputs[0]
        return Use(self.leaves[x], x.aval.shape, mapping, self.window_of(eqn))

    def _index_mapped(self, eqn: Eqn, mapping: tuple, key) -> Scalar:
        """The value of a chain of windows, pads and concatenates at ``mapping``: one
        expression that selects the element it reads (``IndexMap``)."""
        index_map = IndexMap(self, tuple((0, 1, d) for d in mapping))
        expression, deps = index_map.read(eqn)
        var = eqn.outputs[0]
        comment = self.program.comment(eqn)
        return self.builder.place(key, self._prefix(var), expression, deps, comment)

    def output_use(self, top: Var, array: str | None = None) -> Use:
        """Where the kernel stores its output ``top``: ``array`` when given, else straight
        into the window of the update that takes ``top`` where the memory plan proves
        nothing reads the old values there (``Liveness.window_stores``; the update then
        writes nothing, ``program.windows_written``), else an array of its own. An
        update of a value of one element held as a scalar (``scalar_values``) has no
        memory to store into: its kernel makes its own."""
        program = self.program
        shape = top.aval.shape
        liveness, _ = program.place
        index = liveness.window_stores.get(top)
        window = None if index is None else update_window(liveness.eqns[index])
        if array is not None or window is None or program.is_scalar(window.operand):
            return Use(array or program.allocate(top), shape, identity_mapping(shape))
        starts = []
        for d, atom in enumerate(window.starts):
            start = window.static_start(d)
            if start is None:  # clamped once, before the kernel's loops
                start = program.fresh("start")
                limit = window.operand.aval.shape[d] - shape[d]
                program.emit(f"{start} = min(max({program.scalar_of(atom)}, 0), {limit})")
            starts.append((start, 1))
        program.windows_written.add(top)
        operand = window.operand
        mapping = identity_mapping(shape)
        return Use(program.atom(operand), operand.aval.shape, mapping, tuple(starts))

    def window_of(self, eqn: Eqn) -> tuple:
        params, shape = eqn.params, eqn.inputs[0].aval.shape
        if eqn.prim.name == "slice":
            return tuple(zip(params["start_indices"], params["strides"], strict=True))
        window = []
        for atom, size, n in zip(eqn.inputs[1:], shape, params["slice_sizes"], strict=True):
            if isinstance(atom, Literal):  # clamped so the window fits, as the reference
                window.append((min(max(int(atom.val), 0), size - n), 1))
                continue
            # A start is rank 0: computed (or loaded) once, before the kernel's loops.
            start = self.value(atom, ())
            key = ("start", atom, size - n)
            clamped = self.builder.lookup(key) or self.builder.place(
                key, "start", f"min(max({start.name}, 0), {size - n})", start.deps
            )
            window.append((clamped.name, 1))
        return tuple(window)

    # --- values ---------------------------------------------------------------------------

    def value(self, var, mapping: tuple) -> Scalar:
        """The scalar ``var`` holds at the current point, when its dims follow ``mapping``.

        Operands are written before the eqns that read them, first operand first, from an
        explicit stack: a fused chain is as deep as the program is long."""
        done: dict = {}
        stack = [(var, mapping)]
        while stack:
            item = stack[-1]
            if item in done:
                stack.pop()
                continue
            found = self._known(*item)
            if found is not None:
                stack.pop()
                done[item] = found
                continue
            eqn = self.producer[item[0]]
            operands = self._operand_items(eqn, item[1])
            pending = [o for o in operands if o not in done]
            if pending:
                stack.extend(reversed(pending))
                continue
            stack.pop()
            done[item] = self._apply(eqn, *item, [done[o] for o in operands])
        return done[(var, mapping)]

    def _known(self, var, mapping: tuple) -> Scalar | None:
        """``var``'s scalar when no operand has to be computed first, else None."""
        if isinstance(var, Literal):
            return Scalar(self.program.constant(var.val, var.aval.dtype))
        if var in self.scalars:
            return self.scalars[var]
        builder = self.builder
        key = ("value", var, mapping)
        found = builder.lookup(key)
        if found is not None:
            return found
        if var in self.leaves:
            return builder.load(Use(self.leaves[var], var.aval.shape, mapping), self._prefix(var))
        if var in self.stored and mapping == self.stored[var].dims:
            return builder.load(self.stored[var], self._prefix(var))
        if var in self.results:
            result = self.results[var]
            return result if isinstance(result, Scalar) else builder.load(result, self._prefix(var))
        eqn = self.producer[var]
        if eqn.prim.name in WINDOWS and eqn.inputs[0] in self.leaves:
            return builder.load(self.window_use(eqn, mapping), self._prefix(var))
        if eqn.prim.name in INDEXED:
            return self._index_mapped(eqn, mapping, key)
        if eqn.prim.name == "iota":
            return self._iota(eqn, mapping, key, self._prefix(var))
        if eqn.prim.name not in _PASS_THROUGH and eqn.prim.pattern is not Pattern.ELEMENTWISE:
            raise Unfusable(WriterRefusal.NOT_A_LOOP_OP, f"{eqn.prim.name} inside a loop kernel")
        return None

    def _prefix(self, var) -> str:
        return self.program.name(var)

    def _operand_items(self, eqn: Eqn, mapping: tuple) -> list[tuple]:
        """The (operand, mapping) pairs ``eqn``'s output at ``mapping`` is computed from."""
        shape = self.shape if eqn.prim.name in _PASS_THROUGH else ()
        return list(zip(eqn.inputs, operand_mappings(eqn, mapping, shape), strict=True))

    def _apply(self, eqn: Eqn, var, mapping: tuple, operands: list[Scalar]) -> Scalar:
        """The statement computing ``var`` from its operands' scalars."""
        if eqn.prim.name in _PASS_THROUGH:
            return operands[0]
        in_dtype = eqn.inputs[-1].aval.dtype  # select's predicate comes first
        names = [o.name for o in operands]
        expression = scalar.emit(
            self.program, eqn.prim.name, in_dtype, var.aval.dtype, names, eqn.params
        )
        deps = frozenset().union(*(o.deps for o in operands))
        key = ("value", var, mapping)
        comment = self.program.comment(eqn)
        return self.builder.place(key, self._prefix(var), expression, deps, comment)

    def _iota(self, eqn: Eqn, mapping, key, prefix) -> Scalar:
        d = mapping[eqn.params["dimension"]]
        dtype = eqn.params["dtype"]
        if d is None:
            return Scalar(self.program.constant(0, dtype))
        k = next(k for k, g in enumerate(self.builder.groups) if g.dims == (d,))
        index = self.builder.groups[k].index
        return self.builder.place(
            key, prefix, scalar.cast(dtype, index), frozenset([k]), self.program.comment(eqn)
        )

    def store(self, use: Use, var) -> None:
        element, _ = self.builder.element(use)
        self.builder.write(f"{element} = {self.value(var, use.dims).name}")

    # --- kernels ---------------------------------------------------------------------------

    def write_elementwise(self, outputs: list[tuple], parallel: bool, outer=None) -> None:
        """Loops over every group; ``outputs`` are (body var, Use of the output array);
        ``outer``, the outermost loop's ``range`` arguments when not the whole extent."""
        self._write_loops(0, outputs, parallel, outer, 1)
        self.ranges.clear()

    def _write_loops(self, k: int, outputs, parallel: bool, outer, copies: int) -> None:
        """Loop ``k`` and those inside it, the body ``copies`` times already. A loop runs
        in pieces between the points where an index test of a pad or concatenate
        changes (a border, the seam of a roll): inside each piece no test is left, so the
        innermost loop vectorises. A parallel loop, or one over a block of its rows
        (``outer``), runs whole."""
        builder = self.builder
        if k == len(builder.groups):
            for var, use in outputs:
                self.store(use, var)
            return
        whole = k == 0 and (parallel or outer is not None)
        pieces = [] if whole else self._pieces(k, MAX_LOOP_PIECES // copies)
        if not pieces:
            builder.open_loop(k, parallel=parallel and k == 0, bounds=outer if k == 0 else None)
            self._write_loops(k + 1, outputs, parallel, outer, copies)
            builder.close()
            return
        (d,) = builder.groups[k].dims
        for first, stop in pieces:
            self.ranges[d] = (first, stop)
            builder.open_loop(k, bounds=f"{first}, {stop}")
            self._write_loops(k + 1, outputs, parallel, outer, copies * len(pieces))
            builder.close()
        del self.ranges[d]

    def _pieces(self, k: int, most: int) -> list[tuple[int, int]]:
        """The ranges loop ``k`` runs in so that no index test of its index changes
        inside one; [] when one range does (or it would take more than ``most``)."""
        group = self.builder.groups[k]
        if len(group.dims) != 1 or most < 2:
            return []
        self.cuts = {}
        for eqn, mapping in self.indexed:  # reads every test once, writing nothing
            IndexMap(self, tuple((0, 1, d) for d in mapping)).read(eqn)
        cuts, self.cuts = sorted(self.cuts.get(group.dims[0], ())), None
        if not cuts or len(cuts) >= most:
            return []
        return list(itertools.pairwise([0, *cuts, group.extent]))
