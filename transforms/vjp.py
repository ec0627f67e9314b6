"""Reverse mode: the VJP of a jaxpr as a forward jaxpr and a backward jaxpr.

``vjp_split(jaxpr, wrt)`` returns a ``VJPSplit``:

  forward   (*primals) -> (*outs, *saved residuals)
  backward  (*saved residuals, *forwarded primals, *out cotangents) -> input cotangents

It is built by two nested traces. The forward trace replays the equations, asking
each primitive's rule in ``VJP_RULES`` (see ``vjp_rules.py``) for its outputs and a
``backward`` closure over the primal values it needs. The backward trace, opened
inside the forward one, calls those closures in reverse order, summing the cotangents
of values used on several paths. Every forward value a closure touches is lifted into
the backward trace as a constvar: exactly the residuals, which the forward jaxpr then
returns. So the split falls out of the nesting of traces, and a ``jit_call``'s rule can
emit one compiled call for each half (``grad(jit(f))`` runs the forward once).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..ir.core import Jaxpr, Literal, ShapedArray, Var
from ..ir.higher_order import jit_call_p
from ..tracer.closure import closure_convert
from ..tracer.core import Tracer, bind, new_trace, replay, trace_flat
from . import derivatives as d
from .jaxprs import JaxprCache, dce_closed
from .vjp_rules import VJP_RULES


@dataclass(frozen=True, eq=False)
class VJPSplit:
    """The two halves of a jaxpr's VJP, both closure-converted (consts lead)."""

    forward: Jaxpr
    forward_consts: list
    backward: Jaxpr
    backward_consts: list
    num_outputs: int
    forwarded: tuple[int, ...]  # primal inputs the backward reads directly
    wrt: tuple[bool, ...]  # inputs that get a cotangent (one backward output each)
    cotangent_mask: tuple[bool, ...]  # outputs that take a cotangent (one backward input each)
    # The var of the source jaxpr whose value each saved residual is (None for values
    # only a rule's forward computes, such as a jit_call's inner residuals).
    saved_origins: tuple[Var | None, ...]

    @property
    def residual_avals(self) -> list[ShapedArray]:
        saved = self.forward.out_avals[self.num_outputs :]
        inputs = self.forward.in_avals[len(self.forward_consts) :]
        return saved + [inputs[i] for i in self.forwarded]

    def run_forward(self, primals) -> tuple[list, list]:
        """Outputs and residuals; eager outside a trace, recorded inside one."""
        results = replay(self.forward, [], [*self.forward_consts, *primals])
        outs, saved = results[: self.num_outputs], results[self.num_outputs :]
        return outs, saved + [primals[i] for i in self.forwarded]

    def residuals_from(self, values: dict, primals) -> list | None:
        """The residuals read off the source jaxpr's values (its concrete trace kept
        them), or None when the forward must run to compute some of them."""
        if any(var is None or values.get(var) is None for var in self.saved_origins):
            return None
        return [values[var] for var in self.saved_origins] + [primals[i] for i in self.forwarded]

    def run_backward(self, residuals, cotangents) -> list:
        """One cotangent per input in ``wrt``, from one per output in ``cotangent_mask``."""
        return replay(self.backward, [], [*self.backward_consts, *residuals, *cotangents])


_split_cache = JaxprCache()


def vjp_split(jaxpr: Jaxpr, wrt, cotangent_mask=None) -> VJPSplit:
    """The VJP of a closure-converted ``jaxpr`` with respect to the inputs in ``wrt``,
    for cotangents of the outputs in ``cotangent_mask`` (default: all). Only floating
    point inputs and outputs take part. Cached per jaxpr."""
    wrt = tuple(bool(w) and d.has_tangent(v.aval) for w, v in zip(wrt, jaxpr.invars, strict=True))
    if cotangent_mask is None:
        cotangent_mask = (True,) * len(jaxpr.outvars)
    cotangent_mask = tuple(
        bool(m) and d.has_tangent(v.aval)
        for m, v in zip(cotangent_mask, jaxpr.outvars, strict=True)
    )
    key = (wrt, cotangent_mask)
    return _split_cache.get(jaxpr, key, lambda: _build_split(jaxpr, wrt, cotangent_mask))


def _build_split(jaxpr: Jaxpr, wrt, cotangent_mask) -> VJPSplit:
    with new_trace(concrete=False) as forward_trace:
        primals = [forward_trace.new_arg(a) for a in jaxpr.in_avals]
        outs, tape, depends, env = forward_pass(jaxpr, primals, wrt)

        def backward(*cotangents):
            cts = d.in_place(cotangents, cotangent_mask)
            in_cts = backward_pass(jaxpr, tape, depends, cts)
            return [
                d.instantiate(ct, p) for ct, p, w in zip(in_cts, primals, wrt, strict=True) if w
            ]

        ct_avals = [v.aval for v, m in zip(jaxpr.outvars, cotangent_mask, strict=True) if m]
        backward_closed, _ = trace_flat(backward, ct_avals)
        backward_closed = dce_closed(backward_closed)

        # Sort the backward's lifted values: forward tracers are residuals (an input of
        # the forward is passed through, anything else the forward returns), arrays stay
        # consts.
        input_index = {id(p): i for i, p in enumerate(primals)}
        saved, forwarded, consts = [], [], []
        for var, value in zip(backward_closed.jaxpr.constvars, backward_closed.consts, strict=True):
            if isinstance(value, Tracer) and value._trace is forward_trace:
                if id(value) in input_index:
                    forwarded.append((input_index[id(value)], var))
                else:
                    saved.append((value, var))
            else:
                consts.append((value, var))
        forwarded.sort(key=lambda item: item[0])
        forward_closed = forward_trace.to_jaxpr(outs + [value for value, _ in saved])

    origin = {id(value): var for var, value in env.items()}
    forward_jaxpr, forward_consts = closure_convert(dce_closed(forward_closed))
    inner = backward_closed.jaxpr
    backward_jaxpr = Jaxpr(
        [],
        [var for _, var in consts + saved + forwarded] + inner.invars,
        inner.eqns,
        inner.outvars,
    )
    return VJPSplit(
        forward=forward_jaxpr,
        forward_consts=forward_consts,
        backward=backward_jaxpr,
        backward_consts=[value for value, _ in consts],
        num_outputs=len(jaxpr.outvars),
        forwarded=tuple(i for i, _ in forwarded),
        wrt=wrt,
        cotangent_mask=cotangent_mask,
        saved_origins=tuple(origin.get(id(value)) for value, _ in saved),
    )


def forward_pass(jaxpr: Jaxpr, primals, wrt):
    """Bind every equation; for those that depend on ``wrt`` inputs, keep the rule's
    backward closure on a tape. Returns the outputs, the tape, the set of vars that
    depend on ``wrt`` (the only ones that receive cotangents) and every var's value."""
    env: dict = {}
    depends: set[Var] = set()
    tape = []

    def read(atom):
        return atom.val if isinstance(atom, Literal) else env[atom]

    for var, value, w in zip(jaxpr.invars, primals, wrt, strict=True):
        env[var] = value
        if w:
            depends.add(var)
    for eqn in jaxpr.eqns:
        ins = [read(a) for a in eqn.inputs]
        eqn_wrt = tuple(isinstance(a, Var) and a in depends for a in eqn.inputs)
        if eqn.prim.differentiable and any(eqn_wrt):
            outs, backward = VJP_RULES[eqn.prim](ins, eqn_wrt, **eqn.params)
            tape.append((eqn, backward))
            depends.update(v for v in eqn.outputs if d.has_tangent(v.aval))
        else:
            outs = bind(eqn.prim, *ins, **eqn.params)
            outs = outs if eqn.prim.multiple_results else [outs]
        for var, value in zip(eqn.outputs, outs, strict=True):
            env[var] = value
    return [read(v) for v in jaxpr.outvars], tape, depends, env


def backward_pass(jaxpr: Jaxpr, tape, depends, cotangents) -> list:
    """Run the tape backwards from the outputs' cotangents (``None`` = zero); returns
    each input's cotangent (``None`` where zero)."""
    ct_env: dict = {}

    def accumulate(atom, ct):
        if ct is None or not isinstance(atom, Var) or atom not in depends:
            return
        assert d.aval(ct) == atom.aval, f"cotangent {d.aval(ct)} for a {atom.aval} value"
        ct_env[atom] = d.add(ct_env.get(atom), ct)

    for var, ct in zip(jaxpr.outvars, cotangents, strict=True):
        accumulate(var, ct)
    for eqn, backward in reversed(tape):
        cts_out = [ct_env.pop(v, None) for v in eqn.outputs]
        if all(ct is None for ct in cts_out):
            continue
        for atom, ct in zip(eqn.inputs, backward(cts_out), strict=True):
            accumulate(atom, ct)
    return [ct_env.get(v) for v in jaxpr.invars]


@VJP_RULES.rule(jit_call_p)
def _jit_call_vjp(primals, wrt, *, jaxpr: Jaxpr, name: str = "jit_call"):
    """Two compiled calls: the forward half now, the backward half in the backward pass."""
    split = vjp_split(jaxpr, wrt)
    results = bind(
        jit_call_p, *split.forward_consts, *primals, jaxpr=split.forward, name=f"{name}_fwd"
    )
    outs, saved = results[: split.num_outputs], results[split.num_outputs :]
    residuals = saved + [primals[i] for i in split.forwarded]

    def backward(cts):
        given = [
            d.instantiate(ct, out)
            for ct, out, m in zip(cts, outs, split.cotangent_mask, strict=True)
            if m
        ]
        in_cts = bind(
            jit_call_p,
            *split.backward_consts,
            *residuals,
            *given,
            jaxpr=split.backward,
            name=f"{name}_bwd",
        )
        return d.in_place(in_cts, split.wrt)

    return outs, backward
