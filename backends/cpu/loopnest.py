"""Loop nests: the iteration space of a kernel, its loops, and where each statement goes.

A kernel iterates over one shape ``S`` (some of whose dimensions a reduction may sum away).
Every array it touches is read or written at each point of ``S`` through a ``Use``: for
each array dimension, the dimension of ``S`` it follows, or ``None`` for a size-1
dimension that is broadcast. Three things follow from the uses:

- Dimensions of size 1 need no loop, and adjacent dimensions that every use treats alike
  (all follow both, in order, or none) collapse into one loop: a dense elementwise kernel
  over ``(4096, 1024)`` is one flat loop, which vectorises and splits evenly over threads.
  Each collapsed run of dimensions is a ``Group``; an array is indexed through a reshaped
  view with one dimension per group it follows.
- Every scalar the kernel computes is placed in the outermost loop where all the loop
  indices it reads are defined (``LoopBuilder.place``): a row's ``rsqrt(var + eps)`` is
  computed once per row, not once per element. That is loop-invariant code motion done
  while writing, which also keeps the generated source readable.
- A value is computed once per scope (``Block.memo``): the multiply two consumers share is
  written once.
- A sequential loop of a short constant extent (``OPAQUE_EXTENTS``) runs to a bound LLVM
  cannot see (``intrinsics.opaque_int``). With the constant, LLVM unrolls the loop
  completely before the loop vectoriser sees it, and the straight-line code it leaves is
  not vectorised: a 262144x16 float32 softmax took 23 ms that way and 6.2 ms as a vector
  loop, a 65536x64 one 12.2 ms and 2.7 ms. Below 8 iterations, unrolled code is the
  better code.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

# Extents of sequential loops that run to an opaque bound (see the module doc): from one
# AVX2 vector of float32 to 256. Row softmaxes and layer norms of every width measured in
# that range (8, 16, 64, 256) ran faster so; at 1024 the constant bound does as well.
OPAQUE_EXTENTS = range(8, 257)


@dataclass(frozen=True)
class Use:
    """An array read or written at every point of the iteration space.

    A window of the array (a fused ``slice``/``dynamic_slice``) is read in place: per
    array dim, ``(start, stride)`` with ``start`` an int or the name of a scalar computed
    before the loops, and the element at loop index ``i`` is ``start + stride * i`` (at
    ``start`` where the dim follows no iteration dim)."""

    array: str
    shape: tuple[int, ...]
    dims: tuple[int | None, ...]  # per array dim: the iteration dim it follows, or None
    window: tuple = ()  # per array dim (start, stride); () for the whole array


@dataclass(frozen=True)
class Group:
    """Adjacent iteration dimensions run by one loop."""

    dims: tuple[int, ...]
    extent: int
    reduced: bool
    index: str  # the loop variable


def group_dimensions(shape, reduced, uses, own_loop_dims, index_prefix="i") -> list[Group]:
    """Drop size-1 dims and merge neighbours that every use follows alike (see module doc).

    ``own_loop_dims`` must keep a loop of their own (``iota`` reads their index).
    """
    live = [d for d, n in enumerate(shape) if n != 1]
    runs: list[list[int]] = []
    for d in live:
        if runs and _mergeable(runs[-1][-1], d, reduced, uses, own_loop_dims):
            runs[-1].append(d)
        else:
            runs.append([d])
    return [
        Group(tuple(run), math.prod(shape[d] for d in run), run[0] in reduced, f"{index_prefix}{k}")
        for k, run in enumerate(runs)
    ]


def _mergeable(d, e, reduced, uses, own_loop_dims) -> bool:
    if (d in reduced) != (e in reduced) or d in own_loop_dims or e in own_loop_dims:
        return False
    for use in uses:
        if use.window and (d in use.dims or e in use.dims):
            return False  # a window is indexed per dim, never through a flat view
        if d in use.dims and e in use.dims:
            # The two array dims must be neighbours, in order, with only unit dims between.
            first, second = use.dims.index(d), use.dims.index(e)
            if second < first or any(x is not None for x in use.dims[first + 1 : second]):
                return False
        elif d in use.dims or e in use.dims:
            return False
    return True


class Block:
    """A scope of generated code: the function body, a loop, or an ``if``."""

    def __init__(self, header: str | None, parent: Block | None, bound: frozenset[int]):
        self.header = header
        self.parent = parent
        self.bound = bound  # groups whose loop index is defined in this block
        self.items: list[str | Block] = []
        self.memo: dict = {}

    def chain(self) -> list[Block]:
        """This block and its ancestors, innermost first."""
        blocks, block = [], self
        while block is not None:
            blocks.append(block)
            block = block.parent
        return blocks

    def render(self, indent: str) -> list[str]:
        lines = [] if self.header is None else [indent + self.header]
        inner = indent if self.header is None else indent + "    "
        for item in self.items:
            if isinstance(item, Block):
                lines.extend(item.render(inner))
            else:
                lines.extend(inner + line for line in item.split("\n"))
        if self.header is not None and not self.items:
            lines.append(inner + "pass")
        return lines


@dataclass
class Scalar:
    """A computed scalar: the expression naming it, and the groups whose indices it reads."""

    name: str
    deps: frozenset[int] = field(default_factory=frozenset)


class LoopBuilder:
    """Writes one kernel's loops, placing each statement as far out as it can go."""

    def __init__(self, groups: list[Group], fresh, view, opaque):
        self.groups = groups
        self.position = {g.index: k for k, g in enumerate(groups)}
        self.fresh = fresh  # fresh(prefix) -> a new local name
        self.view_of = view  # view(array, shape) -> the expression of a reshaped view
        self.opaque_of = opaque  # opaque(n) -> the expression of n, hidden from LLVM
        self.root = Block(None, None, frozenset())
        self.current = self.root
        self.views: dict[tuple, str] = {}
        self.opaque_extents: dict[int, str] = {}
        self.prelude: list[str] = []  # views and opaque extents, made before any loop

    # --- scopes ------------------------------------------------------------------------

    def open(self, header: str, binds: tuple[int, ...] = ()) -> Block:
        block = Block(header, self.current, self.current.bound | frozenset(binds))
        self.current = block
        return block

    def open_loop(self, k: int, parallel: bool = False, bounds: str | None = None) -> Block:
        group = self.groups[k]
        loop = "prange" if parallel else "range"
        if bounds is None:
            bounds = str(group.extent)
            if not parallel and group.extent in OPAQUE_EXTENTS:
                bounds = self._opaque_extent(group.extent)
        return self.open(f"for {group.index} in {loop}({bounds}):", (k,))

    def _opaque_extent(self, extent: int) -> str:
        if extent not in self.opaque_extents:
            name = self.fresh(f"n{extent}")
            self.opaque_extents[extent] = name
            self.prelude.append(f"{name} = {self.opaque_of(extent)}")
        return self.opaque_extents[extent]

    def close(self) -> None:
        block = self.current
        self.current = block.parent
        self.current.items.append(block)

    def write(self, line: str) -> None:
        """A statement that must run exactly here (a store, an accumulation)."""
        self.current.items.append(line)

    # --- values ------------------------------------------------------------------------

    def lookup(self, key) -> Scalar | None:
        for block in self.current.chain():
            if key in block.memo:
                return block.memo[key]
        return None

    def place(self, key, prefix: str, expression: str, deps: frozenset[int], comment="") -> Scalar:
        """Bind ``expression`` to a new name in the outermost block that defines ``deps``."""
        target = next(b for b in reversed(self.current.chain()) if deps <= b.bound)
        name = self.fresh(prefix)
        target.items.append(f"{name} = {expression}" + (f"  # {comment}" if comment else ""))
        scalar = Scalar(name, deps)
        target.memo[key] = scalar
        return scalar

    def view(self, use: Use) -> tuple[str, list[str], frozenset[int]]:
        """The array to index for ``use``, the index expressions, and the groups they read.

        The array is reshaped to one dimension per group it follows (views are made once,
        before the loops), unless its dimensions already match the groups one to one.
        """
        present = []
        for k, group in enumerate(self.groups):
            if group.dims[0] in use.dims:
                present.append((use.dims.index(group.dims[0]), k))
        present.sort()
        groups = [k for _, k in present]
        deps = frozenset(groups)
        if use.window:
            return use.array, self._window_index(use), deps
        indices = [self.groups[k].index for k in groups]
        live_dims = [k for k, n in enumerate(use.shape) if n != 1]
        if len(use.shape) == 0:
            return use.array, ["()"], deps
        if not groups:
            return use.array, ["0"] * len(use.shape), deps
        direct = len(use.shape) == len(groups) and all(
            len(self.groups[k].dims) == 1 for k in groups
        )
        if direct:
            return use.array, indices, deps
        if len(live_dims) == len(groups) and all(len(self.groups[k].dims) == 1 for k in groups):
            index = ["0"] * len(use.shape)
            for dim, k in zip(live_dims, groups, strict=True):
                index[dim] = self.groups[k].index
            return use.array, index, deps
        shape = tuple(self.groups[k].extent for k in groups)
        key = (use.array, shape)
        if key not in self.views:
            name = self.fresh(f"{use.array}_v")
            self.views[key] = name
            self.prelude.append(f"{name} = {self.view_of(use.array, shape)}")
        return self.views[key], indices, deps

    def _window_index(self, use: Use) -> list[str]:
        """The index expressions of a window's element at the current point."""
        index_of = {g.dims[0]: g.index for g in self.groups if len(g.dims) == 1}
        index = []
        for d, (start, stride) in zip(use.dims, use.window, strict=True):
            if d is None:
                index.append(str(start))
                continue
            step = index_of[d] if stride == 1 else f"{stride} * {index_of[d]}"
            index.append(step if start == 0 else f"{start} + {step}")
        return index

    def render(self, indent: str) -> list[str]:
        return [indent + line for line in self.prelude] + self.root.render(indent)

    def render_hoisted(self, indent: str) -> tuple[list[str], list[str]]:
        """The kernel's lines as (those that read no loop index, the loops): what the
        root holds (views, opaque extents, scalars placed outermost) may run once before
        a parallel region that runs the loops on each block of rows."""
        invariant = [indent + line for line in self.prelude]
        loops: list[str] = []
        for item in self.root.items:
            if isinstance(item, Block):
                loops.extend(item.render(indent))
            else:
                invariant.extend(indent + line for line in item.split("\n"))
        return invariant, loops

    def element(self, use: Use) -> tuple[str, frozenset[int]]:
        """``array[index]`` for ``use``, and the groups it reads."""
        array, index, deps = self.view(use)
        return f"{array}[{', '.join(index)}]", deps

    def load(self, use: Use, prefix: str) -> Scalar:
        key = ("load", use)
        found = self.lookup(key)
        if found is not None:
            return found
        element, deps = self.element(use)
        return self.place(key, prefix, element, deps)


def tuple_source(values) -> str:
    values = list(values)
    return "(" + ", ".join(map(str, values)) + ("," if len(values) == 1 else "") + ")"
