"""A loop whose body works element by element, as one kernel.

When every op of a ``scan`` or ``while`` body (its fused kernels spliced together) is
elementwise, and every value in it has one common shape ``S`` or is a scalar, element
``i`` of the next carry depends only on element ``i`` of this one. So each thread runs
the whole loop for its elements, carries in registers, and the loop is one launch
instead of a launch per body kernel per iteration (and, for ``while``, a read-back of the
condition per iteration). Scalars, such as ``fori_loop``'s counter, are the same for
every element: each thread computes them itself. A ``while`` condition can only read
scalars here (a scalar computed elementwise comes from scalars only), so every thread
runs the same number of iterations.

    for i_flat in range(i_start, n, i_stride):     # the elements of S
        carry_0 = in_init[i_flat]
        for step in range(length):                  # or: while True (cond; break)
            row_0 = in_xs[step * n + i_flat]
            ...body, element i_flat...
            out_ys[step * n + i_flat] = y0
            carry_0 = c0
        out_carry[i_flat] = carry_0

Everything else (reductions, matmuls, data movement in the body, carries of other
shapes) runs on the host over the body's kernels (``control``).
"""

from __future__ import annotations

import math

from ...ir.core import Eqn, Jaxpr, Literal, Var
from .elementwise import launch_1d
from .options import CudaOptions
from .scalar import SCALAR_RULES
from .writer import SCALAR, Index, KernelSource, KernelWriter


def element_shape(eqn: Eqn, bodies: list[Jaxpr]) -> tuple | None:
    """``S`` when ``eqn`` (a ``scan`` or ``while``, with ``bodies`` its sub-jaxprs with
    their kernels spliced in) fits one kernel, else None."""
    if eqn.prim.name not in ("scan", "while"):
        return None
    shapes = set()
    for body in bodies:
        if any(e.prim.name not in SCALAR_RULES for e in body.eqns):
            return None
        shapes.update(v.aval.shape for v in body.invars)
        shapes.update(a.aval.shape for a in body.outvars)
        shapes.update(v.aval.shape for e in body.eqns for v in e.outputs)
    shapes.discard(())
    if len(shapes) > 1:
        return None
    shape = shapes.pop() if shapes else ()
    # No elements, no thread: scalar carries would never be stored. The host runs it.
    return shape if math.prod(shape) else None


def loop_kernel(
    eqn: Eqn, name: str, options: CudaOptions, *, bodies: list[Jaxpr], shape: tuple
) -> KernelSource:
    """The kernel of a loop that ``element_shape`` accepted (``shape`` is its ``S``)."""
    if eqn.prim.name == "scan":
        return _scan_kernel(eqn, bodies[0], shape, name, options)
    return _while_kernel(eqn, bodies, shape, name, options)


def _writer(eqn: Eqn, const_vars: list, avals: list, eqns: list, name: str):
    """A writer whose parameters are ``eqn``'s operands and results, in order: the
    consts are the bodies' own const invars (so the body reads them as kernel inputs),
    the other operands stand-ins of types ``avals`` (the body's: an operand may be a
    reshape of it, dropped as a view); literal operands are constants."""
    others = [Var(aval) for aval in avals]
    invars = list(const_vars) + others
    literals = {v: a for v, a in zip(invars, eqn.inputs, strict=True) if isinstance(a, Literal)}
    outvars = [Var(v.aval) for v in eqn.outputs]
    w = KernelWriter(name, Jaxpr([], invars, eqns, outvars), literals)
    return w, others


def _at(var, index: Index) -> Index:
    return SCALAR if var.aval.shape == () else index


def _start_carries(w: KernelWriter, init_vars, const_vars, index: Index) -> list[str]:
    """Load the consts (read in every iteration: once, here) and the initial carries."""
    w.values([v for v in const_vars if v.aval.shape != ()], index)
    for var in const_vars:
        if var.aval.shape == ():
            w.value(var, SCALAR)
    carries = []
    for var in init_vars:
        carry = w.temp("carry")
        w.line(f"{carry} = {w.value(var, _at(var, index))}")
        carries.append(carry)
    return carries


def _bind(w: KernelWriter, invars, names, index: Index) -> None:
    for var, name in zip(invars, names, strict=True):
        w.bind(var, _at(var, index), name)


def _update(w: KernelWriter, carries: list[str], values: list[str]) -> None:
    if carries:  # all at once: a body may swap its carries
        w.line(f"{', '.join(carries)} = {', '.join(values)}")


def _finish(w: KernelWriter, carries: list[str], outvars, index: Index) -> None:
    params = w.output_params[: len(carries)]
    for param, carry, var in zip(params, carries, outvars, strict=True):
        # A scalar carry is the same in every thread: each stores the same value.
        where = "0" if var.aval.shape == () else index.flat
        w.line(f"{param}[{where}] = {carry}")


def _launch(w: KernelWriter, n: int, header: str, options: CudaOptions) -> KernelSource:
    grid, block = launch_1d(n, options)
    return KernelSource(w.name, w.source(header), w.params, grid, block, launch=n > 0)


def _scan_kernel(eqn, body: Jaxpr, shape, name, options) -> KernelSource:
    p = eqn.params
    n_consts, n_carry, length = p["num_consts"], p["num_carry"], p["length"]
    carry_invars = body.invars[n_consts : n_consts + n_carry]
    row_invars = body.invars[n_consts + n_carry :]
    avals = [v.aval for v in carry_invars]
    avals += [v.aval.update(shape=(length, *v.aval.shape)) for v in row_invars]
    w, others = _writer(eqn, body.invars[:n_consts], avals, body.eqns, name)
    init_vars, xs_vars = others[:n_carry], others[n_carry:]
    n = math.prod(shape)
    index = Index(shape, flat="i_flat")
    w.line("i_start = cuda.grid(1)")
    w.line("i_stride = cuda.gridsize(1)")
    with w.block(f"for i_flat in range(i_start, {n}, i_stride):"):
        carries = _start_carries(w, init_vars, body.invars[:n_consts], index)
        order = f"range({length} - 1, -1, -1)" if p["reverse"] else f"range({length})"
        with w.block(f"for step in {order}:"):
            _bind(w, carry_invars, carries, index)
            rows = []
            for row_var, xs_var in zip(row_invars, xs_vars, strict=True):
                row = w.temp("row")
                where = "step" if row_var.aval.shape == () else f"step * {n} + i_flat"
                w.line(f"{row} = {w.input_param[xs_var]}[{where}]")
                rows.append(row)
            _bind(w, row_invars, rows, index)
            values = w.values(body.outvars, index)
            for param, value, var in zip(
                w.output_params[n_carry:], values[n_carry:], body.outvars[n_carry:], strict=True
            ):
                where = "step" if var.aval.shape == () else f"step * {n} + i_flat"
                w.line(f"{param}[{where}] = {value}")
            _update(w, carries, values[:n_carry])
        _finish(w, carries, eqn.outputs[:n_carry], index)
    header = f"loop (scan, length {length}) as one kernel, per element of {list(shape)}:\n{body}"
    return _launch(w, n, header, options)


def _while_kernel(eqn, bodies, shape, name, options) -> KernelSource:
    p = eqn.params
    cond, body = bodies
    cond_consts = cond.invars[: p["cond_nconsts"]]
    body_consts = body.invars[: p["body_nconsts"]]
    avals = [v.aval for v in body.invars[p["body_nconsts"] :]]
    w, init_vars = _writer(eqn, cond_consts + body_consts, avals, cond.eqns + body.eqns, name)
    n = math.prod(shape)
    index = Index(shape, flat="i_flat")
    w.line("i_start = cuda.grid(1)")
    w.line("i_stride = cuda.gridsize(1)")
    with w.block(f"for i_flat in range(i_start, {n}, i_stride):"):
        carries = _start_carries(w, init_vars, cond_consts + body_consts, index)
        with w.block("while True:"):
            _bind(w, cond.invars[p["cond_nconsts"] :], carries, index)
            going = w.value(cond.outvars[0], SCALAR)
            with w.block(f"if not {going}:"):
                w.line("break")
            _bind(w, body.invars[p["body_nconsts"] :], carries, index)
            _update(w, carries, w.values(body.outvars, index))
        _finish(w, carries, eqn.outputs, index)
    header = f"loop (while) as one kernel, per element of {list(shape)}:\n{cond}\n{body}"
    return _launch(w, n, header, options)
