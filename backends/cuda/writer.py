"""Writing one kernel's source: lines, scopes, names, and the value of a variable at an
index.

Every generated kernel takes flat, C-contiguous 1-D arrays, so an element is reached by
index arithmetic on static shapes. The heart of the generator is ``value(var, index)``:
the expression of ``var``'s element at ``index``. An input is a load; an elementwise eqn
is its scalar rule applied to its operands' values at the same index; a data-movement
eqn (broadcast, reshape, transpose, slice, pad, gather, ...) maps the index to its
operand's index. So a whole fused kernel becomes straight-line scalar code per element,
with intermediates in registers, and a value computed once per index (memoised per
scope: a value defined inside a loop or branch is not visible after it).

Names: array parameters are ``in_<var>``/``out_<var>``, a variable's values are its
letter and a counter (``c0``), index temporaries carry an underscore (``i_0``) so the two
never collide.
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass, field

import numpy as np

from ...ir.core import Jaxpr, Literal, Var
from ...ir.errors import NumbaxError
from ...ir.printer import var_name
from .. import source as escape
from .narrow_floats import storage_dtype
from .scalar import SCALAR_RULES, constant

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$|^-?\d+$")
_CONSTANT = re.compile(
    r"^(float16|float32|float64|u?int8|u?int16|u?int32|u?int64)"
    r"\(-?(\d[\w.+-]*|math\.inf|math\.nan)\)$|^(True|False)$"
)


@dataclass(frozen=True)
class Index:
    """An element of an array of ``shape``: per-dimension index expressions, or the
    flat (C order) position, or both. Whichever is missing is derived on demand."""

    shape: tuple
    dims: tuple | None = None
    flat: str | None = None


SCALAR = Index((), dims=(), flat="0")


def c_strides(shape) -> list[int]:
    strides, running = [], 1
    for size in reversed(shape):
        strides.append(running)
        running *= size
    return strides[::-1]


def linear(dims, shape) -> str:
    """The flat position of ``dims`` in a C-contiguous array of ``shape``."""
    terms = []
    for d, size, stride in zip(dims, shape, c_strides(shape), strict=True):
        if size == 1 or d == "0":
            continue
        term = d if _IDENTIFIER.match(d) else f"({d})"
        terms.append(term if stride == 1 else f"{term} * {stride}")
    return " + ".join(terms) or "0"


def storage(atom) -> np.dtype:
    """The dtype of the device array that holds ``atom`` (bfloat16 as its bits)."""
    return storage_dtype(atom.aval.dtype)


class CodegenError(NumbaxError, NotImplementedError):
    """A fused kernel outside what the CUDA generator handles (a fusion/backends mismatch)."""


@dataclass
class Param:
    """One kernel argument: an input or output of the kernel eqn, a scratch buffer, or a
    variable of the block the kernel eqn does not take (the destination of a window
    store and its traced starts: ``elementwise.WindowStore``)."""

    name: str
    dtype: np.dtype  # of the device array: bfloat16 is held as uint16 bits
    # "in" (position in the kernel's inputs), "out" (outputs), "scratch" or "var" (``var``)
    role: str
    position: int = 0
    size: int = 0  # scratch only: elements (allocated once per executable, zeroed)
    var: Var | None = None  # "var" only: the block's variable


@dataclass
class KernelSource:
    """A generated kernel and how to launch it."""

    name: str
    source: str
    params: list[Param]
    grid: tuple
    block: tuple
    # (input position, output position): device copies done before the launch.
    copies: list = field(default_factory=list)
    launch: bool = True  # False when the outputs are empty: nothing to compute
    cublas: object = None  # a cublas.CublasPlan when this matmul may go through CuPy


class KernelWriter:
    """Accumulates one kernel function: parameters, body lines, memoised values."""

    def __init__(self, name: str, jaxpr: Jaxpr, literals: dict):
        self.name = name
        self.jaxpr = jaxpr
        self.literals = literals  # kernel invar -> Literal given at the call site
        self.lines: list[str] = []
        self.params: list[Param] = []
        self._depth = 1
        self._scopes: list[dict] = [{}]
        self._letter: dict = {}
        self._value_count: dict = {}
        self._temp_count: dict = {}
        self.producer = {out: eqn for eqn in jaxpr.eqns for out in eqn.outputs}
        for var in jaxpr.invars:  # letters in the printer's order: comments match the jaxpr
            self.letter(var)
        for eqn in jaxpr.eqns:
            for var in eqn.outputs:
                self.letter(var)
        self.input_param: dict = {}
        for position, var in enumerate(jaxpr.invars):
            if var not in literals and var not in self.input_param:
                param = Param(f"in_{self.letter(var)}", storage(var), "in", position)
                self.params.append(param)
                self.input_param[var] = param.name
        self.output_params = []
        for position, atom in enumerate(jaxpr.outvars):
            label = self.letter(atom) if isinstance(atom, Var) else str(position)
            param = Param(f"out_{label}_{position}", storage(atom), "out", position)
            self.params.append(param)
            self.output_params.append(param.name)

    # --- names and lines ----------------------------------------------------------------

    def letter(self, var: Var) -> str:
        if var not in self._letter:
            self._letter[var] = var_name(len(self._letter))
        return self._letter[var]

    def temp(self, base: str) -> str:
        count = self._temp_count.get(base, 0)
        self._temp_count[base] = count + 1
        return f"{base}_{count}"

    def scratch(self, base: str, dtype, size: int) -> str:
        """A buffer of the kernel's own, kept between launches, zero at the first."""
        param = Param(f"scratch_{base}", np.dtype(dtype), "scratch", size=size)
        self.params.append(param)
        return param.name

    def line(self, code: str, comment: str | None = None) -> None:
        text = "    " * self._depth + code
        self.lines.append(f"{text}  # {escape.comment(comment)}" if comment else text)

    @contextlib.contextmanager
    def block(self, header: str):
        """An indented block (loop or branch) with its own scope of memoised values."""
        self.line(header)
        start = len(self.lines)
        self._depth += 1
        self._scopes.append({})
        try:
            yield
        finally:
            if len(self.lines) == start:
                self.line("pass")
            self._scopes.pop()
            self._depth -= 1

    def remember(self, key, value: str) -> None:
        self._scopes[-1][key] = value

    def recall(self, key):
        for scope in reversed(self._scopes):
            if key in scope:
                return scope[key]
        return None

    def eqn_text(self, eqn) -> str:
        def atom(a):
            return constant(a.val, a.aval.dtype) if isinstance(a, Literal) else self.letter(a)

        params = " ".join(f"{k}={v}" for k, v in eqn.params.items() if not isinstance(v, Jaxpr))
        params = f"[{params}]" if params else ""
        outs = " ".join(self.letter(v) for v in eqn.outputs)
        text = f"{outs} = {eqn.prim.name}{params} {' '.join(map(atom, eqn.inputs))}".rstrip()
        return f"{text}  ({eqn.source_info})" if eqn.source_info else text

    def source(self, header_comment: str) -> str:
        params = ", ".join(p.name for p in self.params)
        comment = "".join(f"# {escape.comment(line)}\n" for line in header_comment.splitlines())
        return f"{comment}def {self.name}({params}):\n" + "\n".join(self.lines) + "\n"

    # --- indices ------------------------------------------------------------------------

    def dims(self, index: Index) -> tuple:
        """Per-dimension index expressions, divided out of the flat index if needed."""
        if index.dims is not None:
            return index.dims
        key = ("dims", index.flat, index.shape)
        found = self.recall(key)
        if found is not None:
            return found
        flat = index.flat
        if not _IDENTIFIER.match(flat):
            flat = self.temp("f")
            self.line(f"{flat} = {index.flat}")
        dims, leading = [], True
        for size, stride in zip(index.shape, c_strides(index.shape), strict=True):
            if size == 1:
                dims.append("0")
                continue
            expr = flat if stride == 1 else f"{flat} // {stride}"
            if not leading:
                expr = f"({expr}) % {size}" if stride != 1 else f"{flat} % {size}"
            leading = False
            if expr == flat:
                dims.append(flat)
                continue
            name = self.temp("i")
            self.line(f"{name} = {expr}")
            dims.append(name)
        dims = tuple(dims)
        self.remember(key, dims)
        return dims

    def flat(self, index: Index) -> str:
        return index.flat if index.flat is not None else linear(index.dims, index.shape)

    def delinearize(self, flat: str, shape) -> tuple:
        return self.dims(Index(tuple(shape), flat=flat))

    @staticmethod
    def _index_key(index: Index):
        return ("d", index.dims) if index.dims is not None else ("f", index.flat, index.shape)

    # --- values -------------------------------------------------------------------------

    def bind(self, var: Var, index: Index, expr: str) -> None:
        """Declare ``var``'s value at ``index`` (a reduction result, a matmul accumulator)."""
        self.remember(("v", var, self._index_key(index)), expr)
        if index.dims is not None and index.flat is not None:
            self.remember(("v", var, ("f", index.flat, index.shape)), expr)

    def value(self, atom, index: Index) -> str:
        """The expression of ``atom``'s element at ``index`` (emitting what it needs)."""
        if isinstance(atom, Literal):
            return constant(atom.val, atom.aval.dtype)
        if atom in self.literals:
            literal = self.literals[atom]
            return constant(literal.val, literal.aval.dtype)
        if atom.aval.shape == ():
            index = SCALAR
        key = ("v", atom, self._index_key(index))
        found = self.recall(key)
        if found is not None:
            return found
        if atom in self.input_param:
            expr, comment = f"{self.input_param[atom]}[{self.flat(index)}]", None
        else:
            eqn = self.producer.get(atom)
            if eqn is None:
                raise CodegenError(f"cuda codegen: {self.letter(atom)} has no value here")
            expr, comment = self._apply(eqn, index), self.eqn_text(eqn)
        if _IDENTIFIER.match(expr) or _CONSTANT.match(expr):
            name = expr
        else:
            name = self._value_name(atom)
            self.line(f"{name} = {expr}", comment)
        self.remember(key, name)
        return name

    def values(self, atoms, index: Index) -> list[str]:
        """The values of ``atoms`` at ``index``. Their ancestors of the index's shape are
        computed first, in program order: the source follows the jaxpr, and ``value``'s
        recursion stays shallow however long the chain of eqns."""
        from .indexing import INDEX_RULES  # its rules call back into this writer

        needed, stack = set(), [a for a in atoms if isinstance(a, Var)]
        while stack:
            var = stack.pop()
            if var in needed:
                continue
            needed.add(var)
            eqn = self.producer.get(var)
            if eqn is not None:
                stack.extend(x for x in eqn.inputs if isinstance(x, Var))
        shape = tuple(index.shape)
        for eqn in self.jaxpr.eqns:
            if eqn.prim.name not in SCALAR_RULES and eqn.prim.name not in INDEX_RULES:
                continue
            for out in eqn.outputs:
                if out in needed and tuple(out.aval.shape) == shape:
                    self.value(out, index)
        return [self.value(atom, index) for atom in atoms]

    def _value_name(self, var: Var) -> str:
        base = self.letter(var)
        count = self._value_count.get(base, 0)
        self._value_count[base] = count + 1
        return f"{base}{count}"

    def _apply(self, eqn, index: Index) -> str:
        from .indexing import INDEX_RULES  # its rules call back into this writer

        name = eqn.prim.name
        if name in SCALAR_RULES:
            args = [self.value(x, SCALAR if x.aval.shape == () else index) for x in eqn.inputs]
            return SCALAR_RULES[name](args, eqn)
        if name in INDEX_RULES:
            return INDEX_RULES[name](self, eqn, index)
        raise CodegenError(
            f"cuda codegen: {name} cannot be computed per element inside this kernel "
            f"({self.eqn_text(eqn)})"
        )
