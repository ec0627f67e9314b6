"""What every pass shares: rebuilding a jaxpr equation by equation, reading constants,
structural keys (for CSE), and walking the sub-jaxprs of higher-order primitives.

A pass never mutates its input: it builds new ``Eqn`` and ``Jaxpr`` objects, reusing
the ``Var`` objects that do not change.
"""

from __future__ import annotations

import functools
import itertools
import weakref
from collections import Counter
from collections.abc import Callable

import numpy as np

from ..ir.core import Atom, ClosedJaxpr, Eqn, Jaxpr, Literal, Var
from ..ir.primitive import Primitive


class Rebuilder:
    """Builds a new equation list while substituting replaced variables.

    ``alias(old, atom)`` says that every later read of ``old`` means ``atom``;
    ``emit`` appends a new equation whose output types come from the primitive's rule,
    so a rewrite cannot produce an ill-typed program by hand.
    """

    def __init__(self):
        self.env: dict[Var, Atom] = {}
        self.eqns: list[Eqn] = []
        self.producer: dict[Var, Eqn] = {}

    def read(self, atom: Atom) -> Atom:
        if isinstance(atom, Var):
            return self.env.get(atom, atom)
        return atom

    def substituted(self, eqn: Eqn) -> Eqn:
        env = self.env
        for atom in eqn.inputs:  # most equations read nothing replaced: no new list
            if isinstance(atom, Var) and atom in env:
                inputs = [self.read(a) for a in eqn.inputs]
                if any(a is not b for a, b in zip(inputs, eqn.inputs, strict=True)):
                    return eqn.replace(inputs=inputs)
                return eqn
        return eqn

    def add(self, eqn: Eqn) -> None:
        self.eqns.append(eqn)
        for var in eqn.outputs:
            self.producer[var] = eqn

    def take_back(self) -> Eqn:
        """The last equation added, removed again (to be rewritten before it is added)."""
        eqn = self.eqns.pop()
        for var in eqn.outputs:
            del self.producer[var]
        return eqn

    def emit(self, prim: Primitive, inputs, source_info=None, **params) -> list[Var]:
        avals = prim.abstract_eval(*[a.aval for a in inputs], **params)
        outputs = [Var(a) for a in avals]
        self.add(Eqn(prim, list(inputs), outputs, params, source_info))
        return outputs

    def emit1(self, prim: Primitive, inputs, source_info=None, **params) -> Var:
        return self.emit(prim, inputs, source_info, **params)[0]

    def alias(self, old: Var, atom: Atom) -> None:
        self.env[old] = atom

    def splice(self, body: Jaxpr, inputs: list[Atom], outputs: list[Var]) -> None:
        """Copy ``body``'s equations in, reading ``inputs`` for its invars and defining
        ``outputs`` as its outvars. Every copied variable is fresh: the same body may be
        spliced twice, and SSA needs every variable defined once."""
        env: dict = dict(zip(body.invars, inputs, strict=True))

        def read(atom):
            return env.get(atom, atom) if isinstance(atom, Var) else atom

        for eqn in body.eqns:
            fresh = [Var(v.aval, v.suffix) for v in eqn.outputs]
            env.update(zip(eqn.outputs, fresh, strict=True))
            self.add(eqn.replace(inputs=[read(a) for a in eqn.inputs], outputs=fresh))
        for var, atom in zip(outputs, body.outvars, strict=True):
            self.alias(var, read(atom))

    def producer_of(self, atom: Atom) -> Eqn | None:
        return self.producer.get(atom) if isinstance(atom, Var) else None

    def finish(self, jaxpr: Jaxpr, constvars=None) -> Jaxpr:
        return Jaxpr(
            list(jaxpr.constvars if constvars is None else constvars),
            list(jaxpr.invars),
            list(self.eqns),  # its own list: a jaxpr is not changed once built (jaxpr_key)
            [self.read(v) for v in jaxpr.outvars],
        )


def done_in_one_run(transform: Callable[..., Jaxpr]) -> Callable[..., Jaxpr]:
    """``transform(jaxpr, ...)``, a rewrite that one run takes to its fixed point (and
    that returns ``jaxpr`` itself where it changes nothing), given back at once for a
    jaxpr it made or left as it is: remembered per object (a jaxpr is not changed once
    built), so a cleanup round does not walk again what an earlier one finished, fusion's
    kernel bodies included. A recursive call by the decorated name is remembered too."""
    done: weakref.WeakSet = weakref.WeakSet()

    @functools.wraps(transform)
    def remembered(jaxpr: Jaxpr, *args, **kwargs) -> Jaxpr:
        if jaxpr in done:
            return jaxpr
        result = transform(jaxpr, *args, **kwargs)
        done.add(result)
        return result

    return remembered


# ---------------------------------------------------------------------------- constants


def literal_value(atom: Atom):
    """The value of a scalar literal, or None."""
    return atom.val if isinstance(atom, Literal) else None


def is_literal(atom: Atom, value: float, *, negative_zero: bool | None = None) -> bool:
    """Whether ``atom`` is a literal equal to ``value``; ``negative_zero`` also pins the
    sign of a zero (IEEE identities depend on it: ``x + -0.0`` is ``x``, ``x + 0.0`` is
    not)."""
    val = literal_value(atom)
    if val is None or val != value:
        return False
    if negative_zero is not None and val.dtype.kind == "f":
        return bool(np.signbit(val)) == negative_zero
    if negative_zero is not None and val.dtype.kind == "c":  # both parts' zeros signed so
        return bool(np.signbit(val.real)) == bool(np.signbit(val.imag)) == negative_zero
    return True


def is_concrete(value) -> bool:
    """Whether a const is a concrete array (not, say, an outer trace's tracer)."""
    return isinstance(value, (np.ndarray, np.generic, bool, int, float))


# ------------------------------------------------------------------- structural keys


def atom_key(atom: Atom):
    if isinstance(atom, Literal):
        # Bytes, not value: -0.0 and 0.0 are different constants, and NaN equals itself.
        return ("literal", atom.val.dtype.str, atom.val.tobytes())
    return atom


def params_key(params: dict) -> tuple:
    return tuple(sorted((k, _param_key(v)) for k, v in params.items()))


def _param_key(value):
    if isinstance(value, Jaxpr):
        return jaxpr_key(value)
    if isinstance(value, ClosedJaxpr):
        return (jaxpr_key(value.jaxpr), tuple(id(c) for c in value.consts))
    if isinstance(value, tuple):
        return tuple(_param_key(v) for v in value)
    if isinstance(value, np.ndarray):
        return (value.dtype.str, value.shape, value.tobytes())
    return value


_KEYS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # jaxpr -> its number
_NUMBERS: dict[tuple, int] = {}  # a structure -> its number, in this process
_NEXT = itertools.count()  # atomic: two threads never draw the same number


def jaxpr_key(jaxpr: Jaxpr) -> int:
    """A key equal for jaxprs that are the same up to variable renaming: one number per
    structure seen in this process, kept per jaxpr object (a jaxpr is not changed once
    built). A kernel's body is keyed once, not in every pass that compares equations (CSE
    hashed an 8-layer model's kernels 9k times over), and the key is cheap to hash."""
    key = _KEYS.get(jaxpr)
    if key is None:
        key = _NUMBERS.setdefault(_structure(jaxpr), next(_NEXT))
        _KEYS[jaxpr] = key
    return key


def _structure(jaxpr: Jaxpr) -> tuple:
    number: dict[Var, int] = {}

    def ref(atom):
        if isinstance(atom, Literal):
            return atom_key(atom)
        return number[atom]

    def define(var):
        number[var] = len(number)
        return (var.aval.shape, var.aval.dtype.str)

    head = tuple(define(v) for v in jaxpr.constvars + jaxpr.invars)
    body = []
    for eqn in jaxpr.eqns:
        inputs = tuple(ref(a) for a in eqn.inputs)
        body.append((eqn.prim.name, inputs, params_key(eqn.params)))
        for var in eqn.outputs:
            define(var)
    return (len(jaxpr.constvars), head, tuple(body), tuple(ref(a) for a in jaxpr.outvars))


# ---------------------------------------------------------------------- sub-jaxprs


def map_subjaxprs(eqn: Eqn, fn: Callable[[Jaxpr], Jaxpr]) -> Eqn:
    """``eqn`` with ``fn`` applied to every sub-jaxpr in its params (tuples included,
    as in ``cond``'s branches); the same object when nothing changes."""
    if not eqn.bodies:
        return eqn
    params = None
    for key, value in eqn.params.items():
        new = _mapped(value, fn)
        if new is not value:
            params = dict(eqn.params) if params is None else params
            params[key] = new
    return eqn if params is None else eqn.replace(params=params)


def _mapped(value, fn: Callable[[Jaxpr], Jaxpr]):
    """``value`` with ``fn`` applied to the jaxprs in it; the same object where none
    changed. (Not a closure calling itself: that is a reference cycle per call, garbage
    only the cyclic collector frees, half a million objects in an 8-layer model's passes.)"""
    if isinstance(value, Jaxpr):
        return fn(value)
    if not isinstance(value, tuple):
        return value
    for item in value:  # a plain loop: most tuples are shapes, read once per pass
        if isinstance(item, (Jaxpr, tuple)):
            break
    else:
        return value
    items = tuple(_mapped(v, fn) for v in value)
    return value if all(a is b for a, b in zip(items, value, strict=True)) else items


def subjaxprs(eqn: Eqn) -> list[Jaxpr]:
    """The jaxprs ``map_subjaxprs`` maps: ``eqn``'s bodies."""
    return list(eqn.bodies)


def use_counts(jaxpr: Jaxpr) -> Counter:
    """How many times each variable is read (outvars count as reads)."""
    counts: Counter = Counter()
    for eqn in jaxpr.eqns:
        counts.update(a for a in eqn.inputs if isinstance(a, Var))
    counts.update(a for a in jaxpr.outvars if isinstance(a, Var))
    return counts
