"""The table of algebraic simplifications: ``SIMPLIFICATIONS[primitive]`` holds the
rules tried in order on each equation of that primitive; ``ELEMENTWISE_RULES`` apply to
every elementwise primitive after its own rules.

A rule reads one equation (inputs already substituted) and returns the atom that
replaces its output, or None. It may emit new equations through ``ctx`` but only once
it has decided to fire. Every rule must be exact in IEEE arithmetic for every input,
NaN, infinities and signed zeros included (``x * 0`` is not ``0``, ``x - x`` is not
``0``), and must keep the output's shape and dtype (``same_type``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from ..ir.core import Atom, Eqn, Var
from ..ir.primitive import PRIMITIVES
from ..ir.rules import RuleTable, any_primitive
from .rewrite import Rebuilder

Rule = Callable[[Eqn, "Context"], Atom | None]

# ``@SIMPLIFICATIONS.rule("mul")``; a primitive with no rule is left as it is.
SIMPLIFICATIONS = RuleTable("simplifications", not_applicable=any_primitive, multiple=True)
ELEMENTWISE_RULES: list[Rule] = []


def elementwise_simplification(rule: Rule) -> Rule:
    """Decorator: ``rule`` is tried on every elementwise equation, after the rules of
    its primitive (a rewrite of the pattern, not of one primitive)."""
    ELEMENTWISE_RULES.append(rule)
    return rule


class Context:
    """What a rule may look at (producers of its inputs, use counts) and do (emit)."""

    def __init__(self, out: Rebuilder, uses: Counter, source_info: str | None):
        self.out = out
        self.use_counts = uses
        self.source_info = source_info

    def producer(self, atom: Atom, *names: str) -> Eqn | None:
        """The equation that computed ``atom``, if it is one of ``names`` (or any)."""
        eqn = self.out.producer_of(atom)
        if eqn is None or (names and eqn.prim.name not in names):
            return None
        return eqn

    def uses(self, var: Var) -> int:
        """Reads of ``var`` in the program being simplified (0 for new variables)."""
        return self.use_counts.get(var, 0)

    def emit(self, name: str, inputs, **params) -> Var:
        return self.out.emit1(PRIMITIVES[name], inputs, self.source_info, **params)


def same_type(eqn: Eqn, atom: Atom) -> Atom | None:
    """``atom`` as the replacement of ``eqn``'s output, if it has the output's type: a
    rank-0 operand cannot replace a result that took its shape from the other one."""
    return atom if atom.aval == eqn.outputs[0].aval else None


def operand_orders(eqn: Eqn):
    """(x, c) and (c, x) for a commutative binary equation."""
    x, y = eqn.inputs
    return ((x, y), (y, x))
