"""Reading kernel inputs in place by index arithmetic (``IndexMap``), for the windows,
pads and concatenates a loop kernel reads (``passes.kernels.INDEXED``): each dim of a
value is read at ``start + stride * i`` of one loop index ``i``; a chain of them becomes
one expression that selects, by comparing the index, the piece or the padding value it
reads, leaving out the pieces and conditions that the loop's extent rules out.
"""

from __future__ import annotations

from ...ir.core import Eqn
from ...passes.kernels import INDEXED, WINDOWS
from .loopnest import Use
from .unfusable import Unfusable, WriterRefusal


def _plus(a, b):
    """``a + b`` for ints or names of scalars (kept an int where both are)."""
    if isinstance(a, int) and isinstance(b, int):
        return a + b
    if a == 0 or b == 0:
        return b if a == 0 else a
    return f"({a} + {b})"


def _times(k: int, a):
    if isinstance(a, int):
        return k * a
    return a if k == 1 else f"{k} * {a}"


class IndexMap:
    """The element a chain of reads by index arithmetic reads at the current point.

    ``dims`` holds, per dim of the value read, ``(start, stride, d)``: its index is
    ``start + stride * i`` for ``i`` the index of iteration dim ``d`` (``start`` alone
    where ``d`` is None); ``start`` is an int or the name of a scalar computed before
    the loops (a dynamic window's clamped start). A window composes its own starts and
    strides in; a pad tests its operand's bounds and reads it or the padding value; a
    concatenate tests which piece the index falls in. ``read`` returns the expression
    and the loop groups it reads."""

    def __init__(self, writer, dims: tuple):  # a kernels.KernelWriter
        self.writer = writer
        self.dims = dims

    def read(self, eqn: Eqn) -> tuple[str, frozenset]:
        name = eqn.prim.name
        if name in WINDOWS:
            return self._window(eqn)
        if name == "pad":
            return self._pad(eqn)
        return self._concatenate(eqn)

    def _at(self, x, dims: tuple) -> tuple[str, frozenset]:
        """The element of ``x`` (a kernel input, or another read) at ``dims``."""
        writer = self.writer
        if x in writer.leaves:
            window = tuple((start, stride) for start, stride, _ in dims)
            mapping = tuple(d for _, _, d in dims)
            use = Use(writer.leaves[x], x.aval.shape, mapping, window)
            return writer.builder.element(use)
        producer = writer.producer.get(x)
        if producer is None or producer.prim.name not in INDEXED:
            raise Unfusable(
                WriterRefusal.VIEW_OF_COMPUTED,
                "a window, pad or concatenate of a value the kernel computes",
            )
        return IndexMap(writer, dims).read(producer)

    def _window(self, eqn: Eqn) -> tuple[str, frozenset]:
        window = self.writer.window_of(eqn)
        dims = tuple(
            (_plus(first, _times(step, start)), step * stride, d)
            for (first, step), (start, stride, d) in zip(window, self.dims, strict=True)
        )
        return self._at(eqn.inputs[0], dims)

    def _pad(self, eqn: Eqn) -> tuple[str, frozenset]:
        x, padding_value = eqn.inputs
        value = self.writer.value(padding_value, ())
        inner, tests, deps = [], [], set(value.deps)
        for k, (low, high) in enumerate(eqn.params["padding_config"]):
            start, stride, d = self.dims[k]
            inner.append((_plus(start, -low), stride, d))
            if not (low or high):
                continue
            size = x.aval.shape[k]
            inside, inside_deps = self._inside(k, low, low + size)
            deps |= inside_deps
            if inside is False or size == 0:
                return value.name, frozenset(deps)
            if inside is not True:
                tests.append(inside)
        element, element_deps = self._at(x, tuple(inner))
        deps |= element_deps
        if not tests:
            return element, frozenset(deps)
        return f"({element} if {' and '.join(tests)} else {value.name})", frozenset(deps)

    def _concatenate(self, eqn: Eqn) -> tuple[str, frozenset]:
        axis = eqn.params["dimension"]
        pieces, at = [], 0  # (operand, its first index) for those the index may fall in
        deps: set = set()
        for x in eqn.inputs:
            size = x.aval.shape[axis]
            if size:
                inside, inside_deps = self._inside(axis, at, at + size)
                deps |= inside_deps
                if inside is not False:
                    pieces.append((x, at))
            at += size
        start, stride, d = self.dims[axis]
        expression = ""
        for x, first in reversed(pieces):
            dims = list(self.dims)
            dims[axis] = (_plus(start, -first), stride, d)
            element, element_deps = self._at(x, tuple(dims))
            deps |= element_deps
            if not expression:  # the last piece: where no test before it holds
                expression = element
                continue
            test, test_deps = self._inside(axis, None, first + x.aval.shape[axis])
            deps |= test_deps
            expression = f"({element} if {test} else {expression})"
        return expression, frozenset(deps)

    def _inside(self, k: int, low: int | None, high: int) -> tuple:
        """Whether index ``k`` lies in ``[low, high)`` (no lower bound if ``low`` is
        None), and the loop groups that answer reads: True or False when the range its
        loop runs over decides it (that loop's group, when the loop runs over part of its
        extent), else the test's source."""
        start, stride, d = self.dims[k]
        deps = frozenset()
        if isinstance(start, int):
            first, stop = self.writer.ranges.get(d, (0, 1 if d is None else self.writer.shape[d]))
            if d in self.writer.ranges:
                deps = self._index(0, 1, d)[1]
            ends = (start + stride * first, start + stride * (stop - 1))
            least, most = min(ends), max(ends)
            if (low is not None and most < low) or least >= high:
                return False, deps
            if low is not None and least >= low:
                low = None  # the loop never reaches below it
            if most < high:
                high = None
            if low is None and high is None:
                return True, deps
            if self.writer.cuts is not None and d is not None:
                for bound in (low, high):  # the first loop index at or past the bound
                    if bound is not None:
                        self.writer.cuts.setdefault(d, set()).add(-((start - bound) // stride))
        index, index_deps = self._index(start, stride, d)
        if low is None:
            return f"{index} < {high}", deps | index_deps
        test = f"{low} <= {index}" if high is None else f"{low} <= {index} < {high}"
        return test, deps | index_deps

    def _index(self, start, stride: int, d) -> tuple[str, frozenset]:
        if d is None:
            return str(start), frozenset()
        builder = self.writer.builder
        k = next(k for k, g in enumerate(builder.groups) if g.dims == (d,))
        index = builder.groups[k].index
        if stride != 1:
            index = f"{stride} * {index}"
        if start != 0:
            index = f"{start} + {index}"
        return (index if index.isidentifier() else f"({index})"), frozenset([k])
