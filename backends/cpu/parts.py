"""A large program as several ``njit`` functions, and a large loop kernel as several loops.

Numba and LLVM compile a function, and a loop, as one unit, and some of their work grows
faster than the unit: LLVM's loop vectoriser is quadratic in one loop body (its share of
compiling a fused chain of ``sin``, ``mul``, ``add``: 0.44 s at 100 ops, 5.4 s at 300),
SROA and instruction combining grow faster than one function of thousands of lines
(1.3 s of 2.3 s in SROA for 400 ops in one function). Numba's typing and lowering grow
with the program. So the cpu backend keeps both units bounded:

- ``bounded_kernels``: a fused kernel whose body weighs more than ``KERNEL_WEIGHT`` (an
  op counts 1, an expensive one ``EXPENSIVE_WEIGHT``: its math function is inlined into
  the loop) becomes consecutive kernels, each of at most that weight, built the way
  fusion builds kernels. The values one piece hands to the next are arrays of their own;
  below the bound (every kernel of the benchmark suite weighs at most 35) nothing changes.
- ``functions``: a program whose body is longer than ``PART_LINES`` lines is cut between
  its top-level eqns into parts of at most that many lines (an eqn longer than that is a
  part alone). Each part is an ``njit`` function taking the values it reads that were
  made before it and returning those that the later parts or the program's results
  read (the program writer records the names each top-level eqn binds and mentions as
  it writes them, ``write_spans``); the program function calls the parts in order. An
  array is passed, never copied, so in-place updates work across parts, and the memory
  plan's buffers are passed along like values. A program within ``PART_LINES`` is one
  function, exactly as before: no extra call at run time.

The parts are compiled when the program function is, each once, and Numba links their
code into it (LLVM optimises the linked module once more, which costs about a third of
the LLVM time of a split program: linear still). The disk cache keeps the program
function's machine code, parts included, under the key of the whole module's source.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from functools import partial
from itertools import islice

from ...ir.core import ClosedJaxpr, Eqn, Jaxpr, Var
from ...passes.kernels import build_kernel, classify
from ...passes.rewrite import map_subjaxprs

# Lines of generated code per njit function: the part's statements, comments included.
PART_LINES = 500
# A loop body's size, in ops, from which it is written as several loops.
KERNEL_WEIGHT = 160
EXPENSIVE_WEIGHT = 8  # an expensive op's inlined math function, in plain ops

_VIEWS = ("slice", "reshape", "squeeze", "expand_dims", "broadcast_in_dim")


# --- large loop kernels -------------------------------------------------------------------


def bounded_kernels(closed: ClosedJaxpr) -> ClosedJaxpr:
    """``closed`` with every kernel that weighs more than ``KERNEL_WEIGHT`` (control-flow
    bodies included) split into consecutive kernels that do not (``split_by_weight``)."""
    jaxpr = _bounded(closed.jaxpr)
    return closed if jaxpr is closed.jaxpr else ClosedJaxpr(jaxpr, closed.consts)


def _bounded(jaxpr: Jaxpr) -> Jaxpr:
    eqns, changed = [], False
    for eqn in jaxpr.eqns:
        if eqn.prim.name == "kernel":
            pieces = split_by_weight(eqn)
        else:
            pieces = [map_subjaxprs(eqn, _bounded)]
        changed |= pieces != [eqn]
        eqns += pieces
    return Jaxpr(jaxpr.constvars, jaxpr.invars, eqns, jaxpr.outvars) if changed else jaxpr


def body_weight(body: Jaxpr) -> int:
    """The size of the loop a kernel body becomes, in plain ops (``_weight``)."""
    return sum(map(_weight, body.eqns))


def _weight(eqn: Eqn) -> int:
    """An op's share of a loop body: a view (which element is read) weighs nothing."""
    if eqn.prim.name in _VIEWS:
        return 0
    return EXPENSIVE_WEIGHT if eqn.prim.expensive else 1


def split_by_weight(eqn: Eqn) -> list[Eqn]:
    """The kernel ``eqn`` as consecutive kernels of at most ``KERNEL_WEIGHT`` each (see
    ``_pieces``), built as fusion builds kernels; ``[eqn]`` where it weighs less, or where
    a piece would not be a kernel (``passes.kernels.classify``). The values one piece
    hands to the next are new variables of the program, arrays of their own.

    A bound on size, for compile time: each piece is still a kernel the writer writes as
    one loop. Not ``passes.kernels.split_into_ops``, which takes apart a kernel the
    writer cannot write at all, into kernels of one op each."""
    body = eqn.params["jaxpr"]
    if body_weight(body) <= KERNEL_WEIGHT:
        return [eqn]
    # The body's eqns over the program's values: its inputs are the kernel's operands,
    # its results the kernel's outputs (fusion never passes an input through; a value
    # may be several outputs, ``also``: the first one is made, the others return it).
    program = dict(zip(body.invars, eqn.inputs, strict=True))
    also, made_outputs, invars = defaultdict(list), [], set(body.invars)
    for inner, top in zip(body.outvars, eqn.outputs, strict=True):
        if not isinstance(inner, Var) or inner in invars:
            return [eqn]
        if inner in program:
            also[program[inner]].append(top)
        else:
            program[inner] = top
            made_outputs.append(top)
    flat = [
        e.replace(
            inputs=[program.get(a, a) if isinstance(a, Var) else a for a in e.inputs],
            outputs=[program.get(v, v) for v in e.outputs],
        )
        for e in body.eqns
    ]
    whole = classify(flat)
    if whole is None:
        return [eqn]
    # Views of the kernel's inputs (a row a slice takes, reshaped) are recomputed by each
    # piece that reads them, never handed on: they need not have the kernel's shape.
    made_by = {v: e for e in flat for v in e.outputs}
    views = _views_of_inputs(flat, set(eqn.inputs), set(made_outputs))
    work = [e for e in flat if not set(e.outputs) <= views]
    position = {id(e): k for k, e in enumerate(flat)}

    def complete(run: list[Eqn]) -> list[Eqn]:
        return _with_views(run, views, made_by, position) + run

    runs = _pieces(work, made_outputs, whole.shape, {whole.shape, whole.reduced_shape}, complete)
    specs = [classify(complete(run)) for run in runs]
    while len(runs) > 1 and specs[-1] is None:  # a tail that is no kernel joins the run before
        runs[-2:] = [runs[-2] + runs[-1]]
        specs[-2:] = [classify(complete(runs[-1]))]
    if None in specs:
        return [eqn]
    needed = set(made_outputs)  # read by the pieces after the one being built
    pieces = []
    for run, spec in zip(reversed(runs), reversed(specs), strict=True):
        chunk = complete(run)
        outputs = [v for e in chunk for v in e.outputs if v in needed]
        pieces.append(_returning_also(build_kernel(chunk, outputs, spec), also))
        needed |= {a for e in chunk for a in e.inputs if isinstance(a, Var)} - views
    return pieces[::-1]


def _returning_also(piece: Eqn, also: dict) -> Eqn:
    """``piece`` with the outputs that are its outputs' value again (``split_by_weight``)."""
    body = piece.params["jaxpr"]
    pairs = [(body.outvars[k], top) for k, v in enumerate(piece.outputs) for top in also[v]]
    if not pairs:
        return piece
    outvars = body.outvars + [inner for inner, _ in pairs]
    jaxpr = Jaxpr(body.constvars, body.invars, body.eqns, outvars)
    outputs = piece.outputs + [top for _, top in pairs]
    return piece.replace(outputs=outputs, params={**piece.params, "jaxpr": jaxpr})


def _views_of_inputs(flat: list[Eqn], inputs: set, outputs: set) -> set:
    """The values of ``flat`` made by views alone from ``inputs``, but the kernel's
    ``outputs`` (made once, by the piece that makes them, and handed on) and what is made
    from those."""
    views = set()
    for e in flat:
        reads = [a for a in e.inputs if isinstance(a, Var)]
        if e.prim.name in _VIEWS and all(a in inputs or a in views for a in reads):
            views.update(v for v in e.outputs if v not in outputs)
    return views


def _with_views(chunk: list[Eqn], views: set, made_by: dict, position: dict) -> list[Eqn]:
    """The eqns making the views ``chunk`` reads and does not make, in program order
    (``position``: of each eqn, by identity)."""
    made = {v for e in chunk for v in e.outputs}
    wanted, found = [a for e in chunk for a in e.inputs if a in views and a not in made], {}
    while wanted:
        var = wanted.pop()
        if var not in found:
            found[var] = made_by[var]
            wanted += [a for a in made_by[var].inputs if a in views]
    eqns = {id(e): e for e in found.values()}.values()
    return sorted(eqns, key=lambda e: position[id(e)])


def _pieces(flat: list[Eqn], outputs, shape, shapes: set, complete) -> list[list[Eqn]]:
    """``flat`` cut into runs of at most about ``KERNEL_WEIGHT``: a run ends at the first
    point past half that weight where, with the views it reads (``complete``), it is a
    kernel (``classify``), every value it hands on has one of the kernel's ``shapes``
    and the next run starts over the iteration ``shape`` (not with the epilogue of a
    reduction). A run passes the bound only where no such point comes."""
    last_read = {a: index for index, e in enumerate(flat) for a in e.inputs}
    last_read.update((v, len(flat)) for v in outputs)
    runs, start, weight = [], 0, 0
    odd: dict[Var, int] = {}  # values of the run read after it, of another shape
    for index, e in enumerate(flat[:-1]):
        weight += _weight(e)
        odd.update((v, last_read[v]) for v in e.outputs if v.aval.shape not in shapes)
        odd = {v: last for v, last in odd.items() if last > index}
        following = flat[index + 1].outputs
        if (
            weight >= KERNEL_WEIGHT // 2
            and not odd
            and all(v.aval.shape == shape for v in following)
            and classify(complete(flat[start : index + 1])) is not None
        ):
            runs.append(flat[start : index + 1])
            start, weight = index + 1, 0
    return [*runs, flat[start:]]


# --- large programs -----------------------------------------------------------------------


@dataclass
class Span:
    """The lines one top-level eqn (or the program's results) was written as, the names
    they bind, and the names of values and buffers they mention and do not bind: what
    they may read of the code before them."""

    start: int
    end: int
    parallel: bool
    binds: list[str]
    reads: set[str]


@dataclass
class Function:
    """One ``njit`` function of the module: the program function or one of its parts."""

    name: str
    arguments: list[str]
    lines: list[str]
    parallel: bool


def write_spans(writer, jaxpr: Jaxpr, liveness) -> list[Span]:
    """Write ``jaxpr``'s eqns into ``writer``, then the program's results, recording the
    span of each (the results' last, ``_span``)."""
    spans = []
    for index, eqn in enumerate(jaxpr.eqns):
        spans.append(_span(writer, eqn.outputs, partial(writer.write_eqn, liveness, index, eqn)))
    spans.append(_span(writer, [], writer.write_results))
    return spans


def _span(writer, outputs: list[Var], write) -> Span:
    """Call ``write`` and record the span of the lines it adds: their use of prange, the
    names they bind (of ``outputs``, and of the buffers allocated first) and those they
    mention, as the writer records them (``mentioned``). An output that a kernel stored
    into an update's window is bound by no line (the update mentions it, reads nothing
    of it): no part may hand it on."""
    start, was_parallel, buffers = len(writer.lines), writer.parallel, len(writer.buffers)
    writer.parallel, writer.mentioned = False, set()
    write()
    binds = [writer.name(v) for v in outputs if v not in writer.windows_written]
    new = islice(reversed(writer.buffers.values()), len(writer.buffers) - buffers)
    binds += reversed(list(new))  # the buffers allocated here, in order
    span = Span(start, len(writer.lines), writer.parallel, binds, writer.mentioned - set(binds))
    writer.parallel |= was_parallel
    return span


def functions(writer, name: str, arguments: list[str], spans: list[Span]) -> list[Function]:
    """The module's njit functions, the program function ``name`` last: the parts of its
    body (``writer.lines``, whose top-level eqns and then results wrote ``spans``) and
    the calls of them."""
    lines = writer.lines
    if len(lines) <= PART_LINES:
        return [Function(name, arguments, lines, writer.parallel)]
    *spans, ending = spans  # ending: the results, which the program function returns
    groups, size = [[]], 0
    for span in spans:
        if groups[-1] and size + span.end - span.start > PART_LINES:
            groups.append([])
            size = 0
        groups[-1].append(span)
        size += span.end - span.start
    parts = []
    needed = set(ending.reads)  # read by the parts after the one being cut, or the ending
    for group in reversed(groups):
        body = lines[group[0].start : group[-1].end]
        bound = {b for span in group for b in span.binds}
        results = [b for span in group for b in span.binds if b in needed]
        reads = set().union(*(span.reads for span in group)) - bound
        needed = (needed - bound) | reads
        parts.append((group, body, results, reads))
    made_at = {n: k for k, n in enumerate([*arguments, *(b for s in spans for b in s.binds)])}
    calls, out, first = [], [], len(arguments)  # first: made_at of the part's first name
    for group, body, results, reads in reversed(parts):
        part_name = writer.fresh(f"{name}_part")
        taken = sorted((n for n in reads if made_at.get(n, first) < first), key=made_at.get)
        first += sum(len(span.binds) for span in group)
        parallel = any(span.parallel for span in group)
        out.append(Function(part_name, taken, [*body, f"return {_tuple(results)}"], parallel))
        call = f"{part_name}({', '.join(taken)})"
        calls.append(f"{_tuple(results)} = {call}" if results else call)
    out.append(Function(name, arguments, calls + lines[ending.start :], False))
    return out


def _tuple(names: list[str]) -> str:
    if len(names) == 1:
        return f"({names[0]},)"
    return f"({', '.join(names)})"
