"""Control flow decided at compile time: what a ``cond``, ``while`` or ``scan`` does
when the answer is already known from constants.

  cond     a constant index picks its branch (clamped, as at run time), which is
           inlined; so is a cond whose branches are all the same program
  while    a loop whose predicate is false on its initial values (decidable when all
           the predicate reads is constant) never runs: its outputs are its inits
  scan     a scan of length 0 never runs: the final carry is the init, the ys empty
  consts   a literal operand that reaches a branch or loop body unchanged on every
           iteration (a cond operand, a loop const) is written into the body, where
           folding and simplification can use it (DCE then drops the operand)

A value is constant when it is a literal, a constvar with a concrete value, or the
result of an equation over constants: such equations are evaluated here on demand with
the reference implementations (as folding would), as long as their results are small.
Loop carries are never substituted: they change from one iteration to the next.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from ..ir.core import Atom, ClosedJaxpr, Eqn, Jaxpr, Literal, Var
from ..ir.interpret import eval_jaxpr
from ..ir.primitive import PRIMITIVES, Pattern
from ..ir.rules import RuleTable
from .dce import eliminate_dead_code
from .rewrite import Rebuilder, is_concrete, jaxpr_key, map_subjaxprs

# ``fold(out, eqn, known, counts) -> bool``: whether the equation was resolved into
# ``out``. Only control flow has anything to decide.
FOLDERS = RuleTable(
    "control-flow folders", not_applicable=lambda prim: prim.name not in {"cond", "while", "scan"}
)

BROADCAST = PRIMITIVES["broadcast_in_dim"]
MAX_ELEMENTS = 1 << 16  # bigger intermediates are not evaluated to decide control flow
MAX_DEPTH = 64  # nor are longer chains of equations


def acts_on() -> frozenset[str]:
    """The primitives this pass folds (``manager.Pass.acts_on``)."""
    return frozenset(prim.name for prim in FOLDERS)


def run(closed: ClosedJaxpr) -> tuple[ClosedJaxpr, Counter]:
    counts: Counter = Counter()
    known = {
        var: np.asarray(value)
        for var, value in zip(closed.jaxpr.constvars, closed.consts, strict=True)
        if is_concrete(value)
    }
    return ClosedJaxpr(fold_control_flow(closed.jaxpr, known, counts), closed.consts), counts


def fold_control_flow(jaxpr: Jaxpr, known: dict, counts: Counter) -> Jaxpr:
    """``jaxpr`` with its decidable control flow resolved; ``known`` holds the values
    of constvars (inside a body only literals are known)."""
    out = Rebuilder()
    for eqn in jaxpr.eqns:
        eqn = out.substituted(eqn)
        if eqn.prim in FOLDERS:
            eqn = _propagate_literal_consts(eqn, counts)
            if FOLDERS[eqn.prim](out, eqn, known, counts):
                continue
        out.add(map_subjaxprs(eqn, lambda sub: fold_control_flow(sub, {}, counts)))
    return out.finish(jaxpr)


@FOLDERS.rule("cond")
def _fold_cond(out: Rebuilder, eqn: Eqn, known: dict, counts: Counter) -> bool:
    index, *operands = eqn.inputs
    branches = eqn.params["branches"]
    if len({jaxpr_key(b) for b in branches}) == 1:
        counts["cond_branches_identical"] += 1
        chosen = branches[0]
    else:
        value = _constant(index, out, known)
        if value is None:
            return False
        counts["cond_index_folded"] += 1
        chosen = branches[int(np.clip(value, 0, len(branches) - 1))]
    out.splice(fold_control_flow(chosen, {}, counts), operands, eqn.outputs)
    return True


@FOLDERS.rule("while")
def _fold_while(out: Rebuilder, eqn: Eqn, known: dict, counts: Counter) -> bool:
    cond_jaxpr, cond_nconsts = eqn.params["cond_jaxpr"], eqn.params["cond_nconsts"]
    inits = eqn.inputs[cond_nconsts + eqn.params["body_nconsts"] :]
    operands = eqn.inputs[:cond_nconsts] + inits
    if _evaluates_to(cond_jaxpr, operands, out, known) is not False:
        return False
    counts["while_never_runs"] += 1
    for var, init in zip(eqn.outputs, inits, strict=True):
        out.alias(var, init)
    return True


@FOLDERS.rule("scan")
def _fold_scan(out: Rebuilder, eqn: Eqn, known: dict, counts: Counter) -> bool:
    if eqn.params["length"] != 0:
        return False
    counts["scan_never_runs"] += 1
    num_consts, num_carry = eqn.params["num_consts"], eqn.params["num_carry"]
    inits = eqn.inputs[num_consts : num_consts + num_carry]
    for var, init in zip(eqn.outputs[:num_carry], inits, strict=True):
        out.alias(var, init)
    for var in eqn.outputs[num_carry:]:
        zero = Literal(np.zeros((), var.aval.dtype), var.aval.dtype)
        out.alias(var, out.emit1(BROADCAST, [zero], shape=var.aval.shape, broadcast_dimensions=()))
    return True


# ------------------------------------------------------------- literal operands


def _propagate_literal_consts(eqn: Eqn, counts: Counter) -> Eqn:
    """Write literal operands into the sub-jaxprs that read them as constants."""
    params = eqn.params
    if eqn.prim.name == "cond":
        new = {
            "branches": tuple(_substitute(b, eqn.inputs[1:], counts) for b in params["branches"])
        }
        changed = any(a is not b for a, b in zip(new["branches"], params["branches"], strict=True))
    elif eqn.prim.name == "while":
        cond_n, body_n = params["cond_nconsts"], params["body_nconsts"]
        new = {
            "cond_jaxpr": _substitute(params["cond_jaxpr"], eqn.inputs[:cond_n], counts),
            "body_jaxpr": _substitute(
                params["body_jaxpr"], eqn.inputs[cond_n : cond_n + body_n], counts
            ),
        }
        changed = any(new[k] is not params[k] for k in new)
    else:
        new = {"jaxpr": _substitute(params["jaxpr"], eqn.inputs[: params["num_consts"]], counts)}
        changed = new["jaxpr"] is not params["jaxpr"]
    return eqn.replace(params={**params, **new}) if changed else eqn


def _substitute(body: Jaxpr, operands: list[Atom], counts: Counter) -> Jaxpr:
    """``body`` reading the literals among ``operands`` (its leading invars) in place
    of those invars. Outvars keep the invar: a body's results stay variables."""
    subst = {
        var: atom
        for var, atom in zip(body.invars, operands, strict=False)
        if isinstance(atom, Literal) and _reads(body, var)
    }
    if not subst:
        return body
    counts["literal_consts_propagated"] += len(subst)
    eqns = [
        e.replace(inputs=[subst.get(a, a) if isinstance(a, Var) else a for a in e.inputs])
        for e in body.eqns
    ]
    return Jaxpr(body.constvars, body.invars, eqns, body.outvars)


def _reads(body: Jaxpr, var: Var) -> bool:
    return any(a is var for e in body.eqns for a in e.inputs)


# ------------------------------------------------------------------- helpers


def _evaluates_to(jaxpr: Jaxpr, operands: list[Atom], out: Rebuilder, known: dict):
    """The value of a one-output ``jaxpr`` on ``operands`` if everything it reads is a
    constant, else None."""
    live = eliminate_dead_code(jaxpr)
    read = {a for e in live.eqns for a in e.inputs} | set(live.outvars)
    args = []
    for var, atom in zip(jaxpr.invars, operands, strict=True):
        if var not in read:
            args.append(np.zeros(var.aval.shape, var.aval.dtype))
        elif (value := _constant(atom, out, known)) is not None:
            args.append(value)
        else:
            return None
    try:
        with np.errstate(all="ignore"):
            (value,) = eval_jaxpr(live, [], *args)
    except Exception:  # noqa: BLE001 - not decidable now: it is left to run time
        return None
    return bool(value)


def _constant(atom: Atom, out: Rebuilder, known: dict, depth: int = 0):
    """``atom``'s value if it is a constant, else None; ``known`` caches both answers."""
    if isinstance(atom, Literal):
        return atom.val
    if atom in known:
        return known[atom]
    known[atom] = None
    eqn = out.producer_of(atom)
    if (
        eqn is None
        or depth > MAX_DEPTH
        or eqn.prim.pattern is Pattern.CONTROL
        or any(v.aval.size > MAX_ELEMENTS for v in eqn.outputs)
    ):
        return None
    args = [_constant(a, out, known, depth + 1) for a in eqn.inputs]
    if any(a is None for a in args):
        return None
    try:
        with np.errstate(all="ignore"):
            results = eqn.prim.impl(*args, **eqn.params)
    except Exception:  # noqa: BLE001 - not decidable now: it is left to run time
        return None
    for var, value in zip(eqn.outputs, results, strict=True):
        known[var] = np.asarray(value, var.aval.dtype)
    return known[atom]
