"""A picture of a jaxpr: the program as a Graphviz DOT graph.

One node per equation (its primitive, its params, its source line), one node per
input, constant and output, and an edge per value read, labelled with the value's name
and type as the text printer writes them (``c:f32[3,4]``). A fused ``kernel`` is not a
node but a cluster around the equations of its body, coloured by its kind; a value
internal to a kernel (kept in registers) has no name, only its type. Every other
higher-order equation (``cond``, ``while``, ``scan``, ``jit_call``, ...) is a node in a
cluster holding one nested cluster per sub-jaxpr, each with its own inputs and outputs.

The text is built here, by hand, so it needs no package; ``numbax.graph`` renders it.
Every piece of text that reaches the DOT source goes through ``dot_string``.
"""

from __future__ import annotations

import itertools
import os

import numpy as np

from .core import ClosedJaxpr, Jaxpr, Literal, Var
from .higher_order import kernel_p
from .printer import var_name

KERNEL_COLORS = {
    "elementwise": "#fff3c4",
    "reduction": "#d9f2d9",
    "contraction": "#dcd6f7",
    "opaque": "#e8e8e8",
}
_MAX_PARAM_CHARS = 48


def dot_string(text: object) -> str:
    """``text`` as a quoted DOT string that Graphviz shows verbatim.

    Quotes and backslashes are escaped for the DOT parser, so ``\\N`` or a trailing
    backslash stay text; ``&``, ``<`` and ``>`` become entities, since Graphviz decodes
    entities in labels; line breaks become ``\\n``; other control characters and lone
    surrogates (from undecodable file names) are shown as escapes instead of reaching
    the parser.

    >>> print(dot_string('say "hi"\\n<x>'))
    "say \\"hi\\"\\n&lt;x&gt;"
    """
    text = str(text).encode("utf-8", "backslashreplace").decode("utf-8")
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = "".join(f"\\x{ord(c):02x}" if c < " " and c not in "\n\t" else c for c in text)
    for raw, escaped in (
        ("\\", "\\\\"),
        ('"', '\\"'),
        ("&", "&amp;"),
        ("<", "&lt;"),
        (">", "&gt;"),
        ("\n", "\\n"),
    ):
        text = text.replace(raw, escaped)
    return f'"{text}"'


def _attrs(**attrs) -> str:
    return "[" + ", ".join(f"{key}={dot_string(value)}" for key, value in attrs.items()) + "]"


class _Names:
    """The names of one jaxpr's values, given in the printer's order (``a``, ``b``, ...)
    so that the picture and the text form agree. A kernel's body shares its caller's
    names: its inputs and outputs are the caller's values, its other values are unnamed."""

    def __init__(self):
        self.names: dict[Var, str] = {}
        self.count = itertools.count()

    def bind(self, var: Var) -> None:
        self.names[var] = var_name(next(self.count)) + var.suffix

    def alias(self, inner: Var, outer: Var) -> None:
        if outer in self.names:
            self.names.setdefault(inner, self.names[outer])

    def binder(self, var: Var) -> str:
        """``c:f32[3,4]``, or only the type of a value without a name."""
        name = self.names.get(var)
        return f"{name}:{var.aval.str_short()}" if name else var.aval.str_short()


def _literal(atom: Literal) -> str:
    return f"{atom.val.item()!r}:{atom.aval.str_short()}"


def _holds_jaxprs(value) -> bool:
    items = value if isinstance(value, tuple) else (value,)  # cond's branches are a tuple
    return any(isinstance(item, (Jaxpr, ClosedJaxpr)) for item in items)


def _subjaxprs(params: dict) -> list[tuple[str, Jaxpr]]:
    """The sub-jaxprs among an equation's params, each named after its param."""
    found = []
    for key, value in params.items():
        if not _holds_jaxprs(value):
            continue
        items = value if isinstance(value, tuple) else (value,)
        for i, item in enumerate(items):
            label = f"{key}[{i}]" if isinstance(value, tuple) else key
            found.append((label, item.jaxpr if isinstance(item, ClosedJaxpr) else item))
    return found


def _param_text(value) -> str:
    if isinstance(value, np.dtype):
        text = value.name
    elif isinstance(value, str):
        text = repr(value)
    else:
        text = str(value)
    return text if len(text) <= _MAX_PARAM_CHARS else text[: _MAX_PARAM_CHARS - 3] + "..."


def _short_source(source_info: str) -> str:
    """``file.py:12`` of a ``/full/path/file.py:12`` (the full one is the tooltip)."""
    path, sep, line = source_info.rpartition(":")
    return os.path.basename(path) + sep + line if sep else source_info


class _Writer:
    def __init__(self):
        self.lines: list[str] = []
        self.edges: list[str] = []
        self.depth = 1
        self.sources: dict[Var, str] = {}  # the node that computes each value
        self.ids = itertools.count()

    def emit(self, line: str) -> None:
        self.lines.append("  " * self.depth + line)

    def node(self, prefix: str, label: str, **attrs) -> str:
        node_id = f"{prefix}{next(self.ids)}"
        self.emit(f"{node_id} {_attrs(label=label, **attrs)}")
        return node_id

    def open_cluster(self, label: str, **attrs) -> None:
        self.emit(f"subgraph cluster_{next(self.ids)} {{")
        self.depth += 1
        self.emit(f"graph {_attrs(label=label, **attrs)}")

    def close_cluster(self) -> None:
        self.depth -= 1
        self.emit("}")

    def source(self, var: Var, names: _Names) -> str:
        """The node that computes ``var``."""
        if var not in self.sources:
            # Only a broken program reads a value nothing defines; its dump after the
            # pass that broke it is when a picture helps most, so draw it, do not fail.
            label = f"undefined {names.binder(var)}"
            self.sources[var] = self.node("undefined", label, color="red", fontcolor="red")
        return self.sources[var]

    def edge(self, atom, target: str, names: _Names) -> None:
        if isinstance(atom, Var):  # a literal is written in its reader's label
            label = _attrs(label=names.binder(atom))
            self.edges.append(f"{self.source(atom, names)} -> {target} {label}")

    def program(self, jaxpr: Jaxpr, names: _Names, role: str) -> None:
        """The jaxpr's inputs, equations and outputs; ``role`` is "in" for the program
        itself, "arg" for a sub-jaxpr (whose inputs are its caller's operands)."""
        for var in jaxpr.constvars:
            names.bind(var)
            self.sources[var] = self.node("const", f"const {names.binder(var)}", shape="note")
        for i, var in enumerate(jaxpr.invars):
            names.bind(var)
            label = f"{role} {i}\n{names.binder(var)}"
            style = dict(shape="invhouse", style="filled", fillcolor="#dbe9f6")
            self.sources[var] = self.node(role, label, **style)
        for eqn in jaxpr.eqns:
            self.equation(eqn, names)
        for i, atom in enumerate(jaxpr.outvars):
            label = f"out {i}" + (f"\n{_literal(atom)}" if isinstance(atom, Literal) else "")
            out = self.node("out", label, shape="house", style="filled", fillcolor="#f6e0db")
            self.edge(atom, out, names)

    def equation(self, eqn, names: _Names, in_kernel: bool = False) -> None:
        if not in_kernel:
            for var in eqn.outputs:
                names.bind(var)
        if eqn.prim is kernel_p:
            self.kernel(eqn, names)
            return
        subjaxprs = _subjaxprs(eqn.params)
        if subjaxprs:
            self.open_cluster(eqn.prim.name, style="dashed")
        node = self.node("eqn", self.label(eqn), tooltip=eqn.source_info or eqn.prim.name)
        for label, sub in subjaxprs:
            self.open_cluster(label, style="rounded")
            self.program(sub, _Names(), "arg")
            self.close_cluster()
        if subjaxprs:
            self.close_cluster()
        for atom in eqn.inputs:
            self.edge(atom, node, names)
        for var in eqn.outputs:
            self.sources[var] = node

    def kernel(self, eqn, names: _Names) -> None:
        body: Jaxpr = eqn.params["jaxpr"]
        for inner, outer in zip(body.invars, eqn.inputs, strict=True):
            names.alias(inner, outer)
            if isinstance(outer, Var):
                self.sources[inner] = self.source(outer, names)
        for inner, outer in zip(body.outvars, eqn.outputs, strict=True):
            names.alias(inner, outer)
        label = f"kernel {eqn.params['name']} ({eqn.params['kind']})"
        if eqn.source_info:
            label += f"\n{_short_source(eqn.source_info)}"
        color = KERNEL_COLORS.get(eqn.params["kind"], "#ffffff")
        self.open_cluster(label, style="filled", fillcolor=color, color="#999999")
        for inner_eqn in body.eqns:
            self.equation(inner_eqn, names, in_kernel=True)
        self.close_cluster()
        for inner, outer in zip(body.outvars, eqn.outputs, strict=True):
            if isinstance(inner, Var):
                self.sources[outer] = self.source(inner, names)

    @staticmethod
    def label(eqn) -> str:
        """The primitive (with any literal operands in place), its params, its line."""
        head = eqn.prim.name
        if any(isinstance(a, Literal) for a in eqn.inputs):
            operands = ", ".join(_literal(a) if isinstance(a, Literal) else "·" for a in eqn.inputs)
            head += f"({operands})"
        params = [f"{k}={_param_text(v)}" for k, v in eqn.params.items() if not _holds_jaxprs(v)]
        lines = [head, *params]
        if eqn.source_info:
            lines.append(_short_source(eqn.source_info))
        return "\n".join(lines)


def jaxpr_to_dot(program: Jaxpr | ClosedJaxpr, name: str = "jaxpr", title: str = "") -> str:
    """The DOT text of ``program``'s dataflow graph (see the module docstring).

    >>> import numpy as np, numbax
    >>> closed = numbax.make_jaxpr(lambda x: np.sin(x) * 2.0)(np.ones(3))
    >>> text = jaxpr_to_dot(closed, name="f")
    >>> text.splitlines()[0], text.count("-> eqn")
    ('digraph "f" {', 2)
    """
    jaxpr = program.jaxpr if isinstance(program, ClosedJaxpr) else program
    writer = _Writer()
    writer.program(jaxpr, _Names(), "in")
    header = [
        f"digraph {dot_string(name)} {{",
        f"  graph {_attrs(label=title or name, labelloc='t', fontname='Helvetica')}",
        f"  node {_attrs(shape='box', fontname='Helvetica', fontsize='10')}",
        f"  edge {_attrs(fontname='Helvetica', fontsize='9')}",
    ]
    edges = ["  " + edge for edge in writer.edges]
    return "\n".join(header + writer.lines + edges + ["}"]) + "\n"
