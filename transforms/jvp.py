"""Forward mode: ``jvp_jaxpr`` rewrites a jaxpr into one that also pushes tangents.

The rewrite is an interpreter over the equations (``jvp_pass``) that binds each
primitive and calls its rule in ``JVP_RULES``; run inside ``trace_flat`` it records
the program with its tangents as a new jaxpr, which can be transformed again.

A rule is ``rule(primals, tangents, **params) -> (primal_outs, tangent_outs)``; a
tangent is ``None`` when it is symbolically zero. Most rules are built from a
one-line formula by the helpers below: ``elementwise`` (from ``derivatives``),
``linear`` (the primitive is linear in some operands, so its tangent is the same
primitive applied to their tangents).
"""

from __future__ import annotations

from ..ir.core import Jaxpr, Literal
from ..ir.errors import UnsupportedFunctionError
from ..ir.primitive import PRIMITIVES, Primitive
from ..ir.rules import RuleTable
from ..tracer import lax
from ..tracer.closure import closure_convert
from ..tracer.core import bind, trace_flat
from . import derivatives as d
from .jaxprs import JaxprCache, dce_closed

# Every differentiable primitive has a rule; ``kernel``'s refuses (fusion runs after
# the transforms).
JVP_RULES = RuleTable("jvp", not_applicable=lambda prim: not prim.differentiable)


def jvp_pass(jaxpr: Jaxpr, consts, primals, tangents) -> tuple[list, list]:
    """Evaluate ``jaxpr`` on primals and tangents (``None`` = zero) by binding; returns
    the outputs and their tangents (``None`` where zero or not floating point)."""
    env, tangent_env = {}, {}

    def read(atom):
        return atom.val if isinstance(atom, Literal) else env[atom]

    def read_tangent(atom):
        return None if isinstance(atom, Literal) else tangent_env.get(atom)

    for var, value in zip(jaxpr.constvars, consts, strict=True):
        env[var] = value
    for var, value, tangent in zip(jaxpr.invars, primals, tangents, strict=True):
        env[var] = value
        if tangent is not None and d.has_tangent(var.aval):
            tangent_env[var] = tangent
    for eqn in jaxpr.eqns:
        ins = [read(a) for a in eqn.inputs]
        tangents_in = [read_tangent(a) for a in eqn.inputs]
        if eqn.prim.differentiable and any(t is not None for t in tangents_in):
            outs, tangents_out = JVP_RULES[eqn.prim](ins, tangents_in, **eqn.params)
        else:
            outs = bind(eqn.prim, *ins, **eqn.params)
            outs = outs if eqn.prim.multiple_results else [outs]
            tangents_out = [None] * len(outs)
        for var, value, tangent in zip(eqn.outputs, outs, tangents_out, strict=True):
            env[var] = value
            if tangent is not None and d.has_tangent(var.aval):
                tangent_env[var] = tangent
    return [read(v) for v in jaxpr.outvars], [read_tangent(v) for v in jaxpr.outvars]


_jvp_cache = JaxprCache()


def jvp_jaxpr(jaxpr: Jaxpr, nonzeros: tuple[bool, ...]) -> tuple[Jaxpr, list]:
    """The forward-mode program of a closure-converted ``jaxpr``.

    It takes ``(*primals, *tangents)``, one tangent per input marked in ``nonzeros``,
    and returns ``(*outs, *tangents)`` with one tangent per floating-point output (zeros
    made explicit). Returns the jaxpr, closure-converted, and its leading consts.
    """
    nonzeros = _nonzeros(jaxpr, nonzeros)
    return _jvp_cache.get(jaxpr, nonzeros, lambda: _build_jvp_jaxpr(jaxpr, nonzeros))


def _build_jvp_jaxpr(jaxpr: Jaxpr, nonzeros) -> tuple[Jaxpr, list]:
    in_avals = jaxpr.in_avals
    tangent_avals = [a for a, nz in zip(in_avals, nonzeros, strict=True) if nz]

    def forward(*args):
        primals = list(args[: len(in_avals)])
        tangents = d.in_place(args[len(in_avals) :], nonzeros)
        outs, tangents_out = jvp_pass(jaxpr, [], primals, tangents)
        return outs + [
            d.instantiate(t, out)
            for t, out in zip(tangents_out, outs, strict=True)
            if d.has_tangent(d.aval(out))
        ]

    closed, _ = trace_flat(forward, in_avals + tangent_avals)
    return closure_convert(dce_closed(closed))


def call_jvp(prim: Primitive, primals, tangents, *, jaxpr: Jaxpr, **params):
    """JVP of a call-like primitive: the same primitive over the JVP of its sub-jaxpr."""
    nonzeros = _nonzeros(jaxpr, [t is not None for t in tangents])
    jvp_sub, consts = jvp_jaxpr(jaxpr, nonzeros)
    given = [t for t, nz in zip(tangents, nonzeros, strict=True) if nz]
    results = bind(prim, *consts, *primals, *given, jaxpr=jvp_sub, **params)
    n = len(jaxpr.outvars)
    return results[:n], d.in_place(results[n:], [d.has_tangent(v.aval) for v in jaxpr.outvars])


def _nonzeros(jaxpr: Jaxpr, nonzeros) -> tuple[bool, ...]:
    return tuple(
        bool(nz) and d.has_tangent(v.aval) for nz, v in zip(nonzeros, jaxpr.invars, strict=True)
    )


# --------------------------------------------------------------------------------------
# Rule builders


def elementwise(prim: Primitive, partials):
    def rule(primals, tangents, **params):
        out = bind(prim, *primals, **params)
        tangent = None
        for partial, t in zip(partials, tangents, strict=True):
            if partial is not None and t is not None:
                tangent = d.add(tangent, partial(t, *primals, out, **params))
        return [out], [d.broadcast_to(tangent, out)]

    return rule


def linear(prim: Primitive, *positions: int):
    """``prim`` is linear in the operands at ``positions`` (default: all; the others,
    indices, are held fixed): its tangent is ``prim`` of their tangents."""

    def rule(primals, tangents, **params):
        out = bind(prim, *primals, **params)
        linear_in = positions or range(len(primals))
        if all(tangents[i] is None for i in linear_in):
            return [out], [None]
        args = [
            d.instantiate(tangents[i], x) if i in linear_in else x for i, x in enumerate(primals)
        ]
        return [out], [bind(prim, *args, **params)]

    return rule


def unary(prim: Primitive, tangent_rule):
    """A rule from ``tangent_rule(t, x, out, **params)`` for a one-operand primitive."""

    def rule(primals, tangents, **params):
        out = bind(prim, *primals, **params)
        return [out], [tangent_rule(tangents[0], *primals, out, **params)]

    return rule


P = PRIMITIVES

for _name, _partials in d.ELEMENTWISE.items():
    JVP_RULES.rule(_name)(elementwise(P[_name], _partials))

# The structural primitives are linear: ``vjp_rules.deflinear`` declares their JVP with
# their transpose.


def _convert_element_type(t, x, out, *, new_dtype):
    # Only float -> float conversions carry a tangent; to or from an integer it is zero.
    if d.has_tangent(d.aval(x)) and d.has_tangent(d.aval(out)):
        return lax.convert_element_type(t, new_dtype)
    return None


JVP_RULES.rule("convert_element_type")(unary(P["convert_element_type"], _convert_element_type))


def _reduce_chooser(t, x, out, *, axes):
    return lax.reduce_sum(t * d.reduce_chooser_weights(x, out, axes), axes)


JVP_RULES.rule("reduce_max")(unary(P["reduce_max"], _reduce_chooser))
JVP_RULES.rule("reduce_min")(unary(P["reduce_min"], _reduce_chooser))
JVP_RULES.rule("reduce_prod")(
    unary(
        P["reduce_prod"],
        lambda t, x, out, *, axes: lax.reduce_sum(t * d.reduce_prod_partials(x, axes), axes),
    )
)


@JVP_RULES.rule("dot_general")
def _dot_general(primals, tangents, *, dimension_numbers):
    lhs, rhs = primals
    lhs_dot, rhs_dot = tangents
    out = lax.dot_general(lhs, rhs, dimension_numbers)
    tangent = None
    if lhs_dot is not None:
        tangent = lax.dot_general(lhs_dot, rhs, dimension_numbers)
    if rhs_dot is not None:
        tangent = d.add(tangent, lax.dot_general(lhs, rhs_dot, dimension_numbers))
    return [out], [tangent]


@JVP_RULES.rule("scatter")
def _scatter(primals, tangents, *, axis, mode):
    if mode in ("add", "set"):
        return linear(P["scatter"], 0, 2)(primals, tangents, axis=axis, mode=mode)
    if mode in ("max", "min"):
        return _scatter_chooser(primals, tangents, axis=axis, mode=mode)
    raise d.scatter_mode_error(mode)


def _scatter_chooser(primals, tangents, *, axis, mode):
    x, indices, updates = primals
    out = lax.scatter(x, indices, updates, axis, mode)
    x_weight, updates_weight = d.scatter_chooser_weights(x, indices, updates, out, axis)
    tangent_x, tangent_updates = tangents[0], tangents[2]
    tangent = lax.zeros_like_aval(d.aval(x)) if tangent_x is None else tangent_x * x_weight
    if tangent_updates is not None:
        tangent = lax.scatter(tangent, indices, tangent_updates * updates_weight, axis, "add")
    return [out], [tangent]


@JVP_RULES.rule("sort")
def _sort(primals, tangents, **params):
    outs, positions = d.sort_with_order(primals, **params)
    return outs, [None if t is None else d.gather_flat(t, positions) for t in tangents]


def _call(prim_name):
    prim = P[prim_name]
    return lambda primals, tangents, **params: call_jvp(prim, primals, tangents, **params)


JVP_RULES.rule("jit_call")(_call("jit_call"))
JVP_RULES.rule("checkpoint")(_call("checkpoint"))


@JVP_RULES.rule("custom_vjp_call")
def _custom_vjp_call(primals, tangents, *, jaxpr, **_):
    # Forward mode differentiates the primal function: the custom rule is reverse-mode
    # only (JAX's custom_vjp refuses forward mode; numbax gives the primal's JVP). The
    # primal's closed-over values are operands, so their tangents are exact here.
    return jvp_pass(jaxpr, [], primals, tangents)


@JVP_RULES.rule("kernel")
def _kernel(primals, tangents, **params):
    raise UnsupportedFunctionError(
        "kernel equations come from fusion, which runs after the transforms: differentiate "
        "the program before it is fused"
    )
