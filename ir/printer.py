"""Text form of a jaxpr, mirroring JAX's so people who read one read the other:

    { lambda ; a:f32[3] b:f32[3]. let c:f32[3] = add a b in (c,) }

Short programs print on one line; longer ones, and any with sub-jaxprs, one equation
per line with sub-jaxprs indented inside their equation's params.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from .core import Jaxpr, Literal, Var

ONE_LINE_WIDTH = 100


class _Namer:
    def __init__(self):
        self.names: dict[Var, str] = {}

    def __call__(self, var: Var) -> str:
        if var not in self.names:
            self.names[var] = var_name(len(self.names)) + var.suffix
        return self.names[var]


def var_name(n: int) -> str:
    """0 -> a, 25 -> z, 26 -> ba, as JAX names its variables."""
    out = ""
    while True:
        out = chr(ord("a") + n % 26) + out
        n //= 26
        if n == 0:
            return out


def _atom(atom, name: _Namer) -> str:
    if isinstance(atom, Literal):
        return f"{atom.val.item()!r}:{atom.aval.str_short()}"
    return name(atom)


def _binder(var: Var, name: _Namer) -> str:
    return f"{name(var)}:{var.aval.str_short()}"


def _param(value, indent: int) -> str:
    if isinstance(value, Jaxpr):
        return "\n" + _pp(value, indent + 4, force_multiline=True)
    if hasattr(value, "jaxpr") and isinstance(value.jaxpr, Jaxpr):
        return "\n" + _pp(value.jaxpr, indent + 4, force_multiline=True)
    if isinstance(value, np.dtype):
        return value.name
    if isinstance(value, tuple):
        items = [_param(v, indent) for v in value]
        # Sub-jaxprs (cond's branches) start on their own line: no trailing space.
        sep = "," if any(item.startswith("\n") for item in items) else ", "
        return "(" + sep.join(items) + ("," if len(value) == 1 else "") + ")"
    return repr(value) if isinstance(value, str) else str(value)


def _eqn(eqn, name: _Namer, indent: int) -> str:
    lhs = " ".join(_binder(v, name) for v in eqn.outputs)
    params = ""
    if eqn.params:
        params = "[" + " ".join(f"{k}={_param(v, indent)}" for k, v in eqn.params.items()) + "]"
    args = " ".join(_atom(a, name) for a in eqn.inputs)
    assign = f"{lhs} = " if lhs else ""  # an effect with no results, as JAX prints it
    return f"{assign}{eqn.prim.name}{params} {args}".rstrip()


def _is_subjaxpr(value) -> bool:
    if isinstance(value, tuple):  # cond's branches
        return any(_is_subjaxpr(v) for v in value)
    return isinstance(value, Jaxpr) or isinstance(getattr(value, "jaxpr", None), Jaxpr)


def _has_subjaxprs(jaxpr: Jaxpr) -> bool:
    return any(_is_subjaxpr(v) for eqn in jaxpr.eqns for v in eqn.params.values())


def _pp(jaxpr: Jaxpr, indent: int, force_multiline: bool = False) -> str:
    name = _Namer()
    consts = " ".join(_binder(v, name) for v in jaxpr.constvars)
    ins = " ".join(_binder(v, name) for v in jaxpr.invars)
    head = f"{{ lambda {consts}; {ins}. let"
    eqns = [_eqn(e, name, indent + 4) for e in jaxpr.eqns]
    outs = _outs(jaxpr.outvars, name)
    one_line = " ".join([head, "; ".join(eqns), f"in {outs} }}"]).replace("let  in", "let in")
    if not force_multiline and not _has_subjaxprs(jaxpr) and len(one_line) <= ONE_LINE_WIDTH:
        return " " * indent + one_line
    pad = " " * indent
    lines = [pad + head] + [pad + "    " + e for e in eqns] + [pad + f"  in {outs} }}"]
    return "\n".join(lines)


def _outs(outvars: Iterable, name: _Namer) -> str:
    items = [_atom(v, name) for v in outvars]
    return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"


def pp_jaxpr(jaxpr: Jaxpr) -> str:
    return _pp(jaxpr, 0)
