"""Fusion: partitions the program into kernels, each a ``kernel`` equation (the
contract is on ``kernel_p`` in ir/higher_order.py; ``kernels.classify`` enforces it).

Every equation starts as a kernel of its own. Pairs of kernels are then merged,
greedily, the pair that saves the most bytes of memory traffic first:

- a producer and its consumer: the value between them is no longer read from memory,
  and no longer written either if nobody else reads it;
- two siblings that read the same array: it is read once (multi-output kernels).

A merge happens only if ``classify`` accepts the merged equations as one kernel and
the merge makes no cycle between kernels (a path from one to the other through a third
kernel would need the third to run both before and after the merged one). Nothing is
ever duplicated here: an expensive producer read by two kernels stays in one of them
and its result goes through memory. Cheap producers were already copied per consumer, and
a few windows of a cheap value recomputed from windows of its operands, by
``broadcasts``. Control flow (``cond``, ``while``, ``scan``) stays as it is, with its
bodies fused.

A window of an array (``slice``, ``dynamic_slice``, with the unit reshapes after it) is
a kernel of kind "view" until it merges into a kernel that reads it: that kernel then
reads the window in place (``kernels.views_read_memory``); one that merges into nothing
is a copy, an opaque kernel of each of its equations. So are ``pad`` and
``concatenate`` (``kernels.INDEX_MAPS``): a kernel reads them by index arithmetic, a
select between their pieces and the padding value, and views may read views, so a
``np.roll`` (slices, then a concatenate) or the slices of a ``np.pad`` cost the loop
that reads them no buffer.

Every boundary left between two kernels (a value one writes and the other reads, the
pair counted once) is counted by its reason, a ``Refusal`` (passes/refusals.py): why
the two are not one kernel, asked of the final partition (``Partition.decide``). The
pass log shows the counts on the fusion line.

Equations with side effects (prints, and control flow that prints) keep their program
order: each one is an extra predecessor of the next, an edge the cycle check and the
final order respect like a value read (they are never merged, so the edge stays put).
"""

from __future__ import annotations

import heapq
import itertools
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from ..ir.core import ClosedJaxpr, Eqn, Jaxpr, Var
from ..ir.primitive import Pattern, has_side_effects
from .broadcasts import copy_cheap_producers, copy_views, hoist_broadcasts, sink_windows
from .dce import eliminate_dead_code
from .fusion_order import ListOrder
from .kernels import (
    INDEX_MAPS,
    INDEXED,
    UNIT_RESHAPES,
    KernelSpec,
    build_kernel,
    classify,
    indexed_arrays,
    is_view,
    merged_spec,
    merged_with_view,
    read_across_refusal,
)
from .refusals import Refusal
from .rewrite import map_subjaxprs


def run(closed: ClosedJaxpr) -> tuple[ClosedJaxpr, Counter]:
    counts: Counter = Counter()
    return ClosedJaxpr(fuse(closed.jaxpr, counts), closed.consts), counts


def fuse(jaxpr: Jaxpr, counts: Counter | None = None) -> Jaxpr:
    counts = Counter() if counts is None else counts
    jaxpr = eliminate_dead_code(sink_windows(jaxpr))
    jaxpr = eliminate_dead_code(hoist_broadcasts(jaxpr))
    jaxpr = eliminate_dead_code(copy_cheap_producers(jaxpr))
    jaxpr = eliminate_dead_code(copy_views(jaxpr))
    partition = Partition(jaxpr)
    partition.merge_greedily()
    eqns = partition.build(counts, lambda body: fuse(body, counts))
    return Jaxpr(jaxpr.constvars, jaxpr.invars, eqns, jaxpr.outvars)


# A var read by many kernels (an input every term of a long sum reads) pairs each of them
# with only this many others as siblings: candidates stay linear in the program's size.
SIBLING_CANDIDATES = 16
# ``_reaches`` answers from a pair's own edges where either end has at most this many.
FIRST_STEPS = 16


@dataclass(eq=False)
class Group:
    """A kernel in the making (None as spec for control flow, which is never merged).

    A merge moves the smaller group into the larger, updating the larger's sets in place,
    so an equation moves O(log n) times and fusing a long program stays near linear."""

    members: list[int]  # equation indices
    spec: KernelSpec | None
    produced: set
    inputs: set  # variables read and not produced here
    consumers: set  # equations outside the group that read what it produces
    guarded_reads: set  # variables its broadcasts and contractions read (``read_across_refusal``)
    first: int  # its first equation
    merges: int = 0  # how many merges changed it: a heap entry's saving is current while
    # neither of its groups has changed (``bytes_saved`` reads only the two)

    @property
    def mergeable(self) -> bool:
        return self.spec is not None and self.spec.kind != "opaque"


class Partition:
    def __init__(self, jaxpr: Jaxpr):
        self.eqns = jaxpr.eqns
        self.outvars = {v for v in jaxpr.outvars if isinstance(v, Var)}
        self.producer = {v: i for i, e in enumerate(self.eqns) for v in e.outputs}
        self.readers: dict[Var, list[int]] = defaultdict(list)
        for i, eqn in enumerate(self.eqns):
            for var in _read_vars(eqn):
                self.readers[var].append(i)
        self.group_of = list(range(len(self.eqns)))
        # var -> {group: how many of its equations read var}, in order of first reading.
        self.reader_groups: dict[Var, dict[int, int]] = {
            var: dict.fromkeys(readers, 1) for var, readers in self.readers.items()
        }
        effects = [i for i, eqn in enumerate(self.eqns) if has_side_effects(eqn)]
        self.effect_after = dict(itertools.pairwise(effects))  # effect -> the next effect
        self.effect_before = {b: a for a, b in self.effect_after.items()}
        self.groups: dict[int, Group] = {}
        for i, eqn in enumerate(self.eqns):
            if eqn.prim.name in INDEXED:
                spec = KernelSpec("view", eqn.outputs[0].aval.shape)
            else:
                spec = None if eqn.prim.pattern is Pattern.CONTROL else classify([eqn])
            guarded = eqn.prim.pattern is Pattern.CONTRACTION or eqn.prim.name == "broadcast_in_dim"
            self.groups[i] = Group(
                [i],
                spec,
                set(eqn.outputs),
                set(_read_vars(eqn)),
                {r for v in eqn.outputs for r in self.readers.get(v, ())},
                set(_read_vars(eqn)) if guarded else _window_array(eqn),
                i,
            )
        # The groups in a topological order, kept one through every merge (``_reorder``):
        # program order is one to begin with.
        self.order = ListOrder(range(len(self.eqns)))

    # ------------------------------------------------------------------ merging

    def chain_views(self) -> None:
        """Each window joins the unit reshapes that alone read it, one after another
        (``x[:, j]`` is a window one wide, then a squeeze): one view of kind "view"."""
        for i, eqn in enumerate(self.eqns):
            if eqn.prim.name not in INDEXED:
                continue
            var = eqn.outputs[0]
            while var not in self.outvars and len(self.readers[var]) == 1:
                (reader,) = self.readers[var]
                reshape = self.eqns[reader]
                if reshape.prim.name not in UNIT_RESHAPES or not is_view(reshape):
                    break
                var = reshape.outputs[0]
                self._merge([], self.group_of[i], reader, KernelSpec("view", var.aval.shape))

    def merge_greedily(self) -> None:
        """Merge the pair saving the most bytes first, until no pair saves any. A pair's
        saving is re-read when it is popped if either group has merged since (which alone
        may change it); the pairs a merge may have made more valuable are pushed again by
        ``_merge``."""
        self.chain_views()
        heap = self._first_candidates()
        while heap:
            popped = heapq.heappop(heap)
            a, b = popped[2], popped[3]
            if a not in self.groups or b not in self.groups:
                continue
            if popped[4:] != (self.groups[a].merges, self.groups[b].merges):
                entry = self._candidate(a, b)
                if entry is None:
                    continue
                if entry[:4] != popped[:4]:
                    heapq.heappush(heap, entry)
                    continue
            spec = self.decide(a, b)
            if isinstance(spec, KernelSpec):
                self._merge(heap, a, b, spec)
        for gid in list(self.groups):
            self.gather_pieces(gid)

    def gather_pieces(self, gid: int) -> None:
        """A pad or concatenate that no kernel reads in place (a product's operand, a
        result of the program) is written by one loop that reads its pieces in place:
        the views only it reads join it, where ``classify`` accepts them, instead of
        each being copied out first."""
        group = self.groups.get(gid)
        if group is None or group.spec is None or group.spec.kind != "view":
            return
        if self.eqns[min(group.members)].prim.name not in INDEX_MAPS:
            return
        refused: set = set()
        while True:
            pieces = [
                self.group_of[self.producer[v]]
                for v in self.groups[gid].inputs
                if v in self.producer
                and v not in self.outvars
                and all(self.group_of[r] == gid for r in self.readers[v])
            ]
            pieces = [
                g
                for g in pieces
                if g not in refused and self.groups[g].spec and self.groups[g].spec.kind == "view"
            ]
            if not pieces:
                return
            piece = pieces[0]
            members = sorted(self.groups[gid].members + self.groups[piece].members)
            spec = classify([self.eqns[i] for i in members])
            if spec is None or spec.kind != "elementwise":
                refused.add(piece)
                continue
            self._merge([], gid, piece, spec)
            gid = gid if gid in self.groups else piece

    def merged_spec(self, a: int, b: int) -> KernelSpec | None:
        """The spec of ``a`` and ``b`` as one kernel, if that is legal."""
        spec = self.decide(a, b)
        return spec if isinstance(spec, KernelSpec) else None

    def decide(self, a: int, b: int) -> KernelSpec | Refusal:
        """The spec of ``a`` and ``b`` as one kernel, or why they may not be one."""
        ga, gb = self.groups[a], self.groups[b]
        for group in (ga, gb):
            if group.spec is None:
                return Refusal.CONTROL_FLOW
            if group.spec.kind == "opaque":
                return Refusal.OPAQUE
        if gb.spec.kind == "view":
            spec = self._merged_with_view(b, a)
        elif ga.spec.kind == "view":
            spec = self._merged_with_view(a, b)
        else:
            spec = merged_spec(ga.spec, gb.spec)
        if isinstance(spec, Refusal):
            return spec
        refusal = self._read_across_refusal(a, b, spec) or self._read_across_refusal(b, a, spec)
        if refusal is not None:
            return refusal
        if self._reaches(a, b) or self._reaches(b, a):
            return Refusal.CYCLE
        return spec

    def _merged_with_view(self, view: int, other: int) -> KernelSpec | Refusal:
        """The spec of view ``view`` merged into ``other``: its result stays inside when
        only broadcasts and views of ``other`` read it (a piece of a concatenate), else it
        must have one of other's shapes."""
        (result,) = self._results(view)
        readers = [self.group_of[r] for r in self.readers[result]]
        read_by_broadcasts = (
            other in readers
            and result not in self.outvars
            and all(g == other for g in readers)
            and all(
                self.eqns[r].prim.name == "broadcast_in_dim" or is_view(self.eqns[r])
                for r in self.readers[result]
            )
        )
        return merged_with_view(self.groups[view].spec, self.groups[other].spec, read_by_broadcasts)

    def _results(self, gid: int) -> list[Var]:
        """The values of ``gid`` read outside it or returned by the program."""
        return [
            v
            for v in self.groups[gid].produced
            if v in self.outvars or any(self.group_of[r] != gid for r in self.readers[v])
        ]

    def _read_across_refusal(self, reader: int, source: int, spec: KernelSpec):
        """Why the equations of ``reader`` that read values ``source`` computes may not
        read them inside one kernel of ``spec``; None when they may."""
        group, produced = self.groups[reader], self.groups[source].produced
        for var in group.guarded_reads & produced:
            # A view's result is read at any index, in place: broadcasts may read it, and
            # reads by index arithmetic may read another's.
            producer = self.eqns[self.producer[var]]
            of_view, of_indexed = is_view(producer), producer.prim.name in INDEXED
            for r in self.readers[var]:
                if self.group_of[r] != reader:
                    continue
                refusal = read_across_refusal(self.eqns[r], spec)
                if refusal is None:
                    continue
                name = self.eqns[r].prim.name
                if not (of_view and name == "broadcast_in_dim" or of_indexed and name in INDEXED):
                    return refusal
        return None

    def _candidate(self, a: int, b: int) -> tuple | None:
        """The heap entry of merging ``a`` and ``b``, or None when it saves nothing: the
        most bytes saved first, then the earliest, then the groups' merges when counted."""
        saved = self.bytes_saved(a, b)
        if saved <= 0:
            return None
        ga, gb = self.groups[a], self.groups[b]
        return (-saved, min(ga.first, gb.first), a, b, ga.merges, gb.merges)

    def _first_candidates(self) -> list:
        """The heap of every kernel's candidates with the kernels related to it, each
        pair's saving counted once though most pairs are related both ways."""
        pairs = {
            (gid, other)
            for gid, group in self.groups.items()
            if group.mergeable
            for other in self._related(gid)
            if self.groups[other].mergeable
        }
        heap = []
        for a, b in pairs:
            if a < b or (b, a) not in pairs:
                entry = self._candidate(a, b)
                if entry is not None:
                    heap.append(entry)
                    if (b, a) in pairs:
                        heap.append((entry[0], entry[1], b, a, entry[5], entry[4]))
        heapq.heapify(heap)
        return heap

    def _push_candidates(self, heap: list, gid: int, related: set[int]) -> None:
        if not self.groups[gid].mergeable:
            return
        for other in related:
            if other != gid and other in self.groups and self.groups[other].mergeable:
                entry = self._candidate(gid, other)
                if entry is not None:
                    heapq.heappush(heap, entry)

    def _related(self, gid: int) -> set[int]:
        """Kernels that consume, produce or share (as siblings) a variable ``gid`` reads
        or computes; every one of them that a merge can save bytes with."""
        group = self.groups[gid]
        related = {self.group_of[r] for r in group.consumers}
        for var in group.inputs:
            if var in self.producer:
                related.add(self.group_of[self.producer[var]])
            if var.aval.shape != ():  # a shared scalar saves nothing
                related.update(itertools.islice(self.reader_groups[var], SIBLING_CANDIDATES + 1))
        related.discard(gid)
        return related

    def bytes_saved(self, a: int, b: int) -> int:
        """Memory traffic saved by running ``a`` and ``b`` as one kernel."""
        ga, gb = self.groups[a], self.groups[b]
        saved = 0
        for source, sink in ((ga, gb), (gb, ga)):
            for var in source.produced & sink.inputs:
                read_elsewhere = var in self.outvars or any(
                    g != a and g != b for g in self.reader_groups[var]
                )
                saved += var.aval.nbytes * (1 if read_elsewhere else 2)
        shared = (v for v in ga.inputs & gb.inputs if v.aval.shape != ())
        return saved + sum(v.aval.nbytes for v in shared)

    def _merge(self, heap: list, a: int, b: int, spec: KernelSpec) -> None:
        """Move the smaller of ``a`` and ``b`` into the larger, then offer the merged
        group to every kernel the smaller one was related to: only their savings can
        have grown."""
        if len(self.groups[a].members) < len(self.groups[b].members):
            a, b = b, a
        related = self._related(b)
        if self.groups[a].spec.kind == "view":
            # The views a view reads could merge with no view; now they can.
            inputs = self.groups[a].inputs
            related |= {self.group_of[self.producer[v]] for v in inputs if v in self.producer}
        self._reorder(a, b)
        big, small = self.groups[a], self.groups.pop(b)
        for i in small.members:
            self.group_of[i] = a
            for var in _read_vars(self.eqns[i]):
                counts = self.reader_groups[var]
                counts[b] -= 1
                if not counts[b]:
                    del counts[b]
                counts[a] = counts.get(a, 0) + 1
        big.members += small.members
        big.consumers.difference_update(small.members)
        big.consumers.update(r for r in small.consumers if self.group_of[r] != a)
        big.produced |= small.produced
        big.inputs.difference_update(small.produced)
        big.inputs.update(v for v in small.inputs if v not in big.produced)
        big.guarded_reads |= small.guarded_reads
        big.first = min(big.first, small.first)
        big.spec = spec
        big.merges += 1
        self._push_candidates(heap, a, related)

    # ------------------------------------------------------------------- graph

    def successors(self, gid: int) -> set[int]:
        return set(self._next_kernels(gid))

    def predecessors(self, gid: int) -> set[int]:
        return set(self._previous_kernels(gid))

    def _next_kernels(self, gid: int) -> Iterator[int]:
        """The kernels that read what ``gid`` computes, or run after it as the next effect,
        one at a time and maybe repeated: a walk that ends early does not pay for every
        reader of a large kernel."""
        for i in self.groups[gid].consumers:
            yield self.group_of[i]
        if gid in self.effect_after:  # an effect's group is its one equation
            yield self.effect_after[gid]

    def _previous_kernels(self, gid: int) -> Iterator[int]:
        """The kernels that compute what ``gid`` reads, or run before it as the previous
        effect, one at a time and maybe repeated."""
        for var in self.groups[gid].inputs:
            if var in self.producer and self.group_of[self.producer[var]] != gid:
                yield self.group_of[self.producer[var]]
        if gid in self.effect_before:
            yield self.effect_before[gid]

    def _reaches(self, source: int, target: int) -> bool:
        """Whether a path leads from ``source`` to ``target`` through another kernel.

        It is searched from both ends at once, answered by the search that ends first or
        where they meet: from one end only, a large kernel early in the program (which
        leads to most after it) would walk the whole program on a merge with a window.

        Most pairs are answered before any walk: a path through another kernel leaves
        ``source`` by a kernel between the two in the topological order and enters
        ``target`` by one, so where ``source`` leads to none such, or none such leads to
        ``target``, there is no path (two looks at the pair's own edges; a third of an
        8-layer transformer's fusing time was the walks' steps)."""
        labels = self.order.labels
        low, high = labels[source], labels[target]
        if high < low:
            return False  # nothing leads back against the topological order
        for edges in (self._next_kernels(source), self._previous_kernels(target)):
            # Only a few edges: a value read by 50,000 equations would make it quadratic.
            first_steps = list(itertools.islice(edges, FIRST_STEPS + 1))
            if len(first_steps) <= FIRST_STEPS and not any(
                low < labels[k] < high for k in first_steps
            ):
                return False
        forward, backward = set(), set()  # what source leads to, what leads to target
        walks = (
            self._walk(source, target, self._next_kernels, forward, meets=backward),
            self._walk(target, source, self._previous_kernels, backward, meets=forward),
        )
        _, seen = _first_done(walks)
        return source in seen or target in seen

    def _walk(self, start: int, end: int, step: Callable, seen: set[int], meets=frozenset()):
        """A generator walking the kernels between ``start`` and ``end`` in the topological
        order that ``start`` leads to (``step`` is ``_next_kernels``) or that lead to it
        (``_previous_kernels``) through others, one edge per step, into ``seen``, which it
        returns. It stops on reaching ``end`` or a kernel of ``meets`` (those the walk from
        the other end found), adding ``end``: a path through another kernel joins the two.
        A layer's forward kernel and the backward one reading its value are joined through
        every later layer: walks that had to reach the other end crossed them all."""
        labels = self.order.labels  # no merge moves a kernel while it is walked
        low, high = sorted((labels[start], labels[end]))
        stack = [start]
        while stack:
            node = stack.pop()
            for nxt in step(node):
                yield
                if nxt in seen or not low <= labels[nxt] <= high:
                    continue
                if nxt == end and node == start:
                    continue  # the edge between the two is no path through another
                if nxt == end or nxt in meets:
                    seen.add(end)
                    return seen
                seen.add(nxt)
                stack.append(nxt)
        return seen

    def _reorder(self, a: int, b: int) -> None:
        """Keep ``order`` a topological order once ``b`` merges into ``a`` (no path joins
        the two through a third). The kernels between the two are searched from both ends
        at once, as ``_reaches`` does, and the search that ends first decides, so a merge
        costs what its cheaper side costs. If the search from the earlier one ends first,
        the merged kernel takes the later one's place and the kernels between that the
        earlier one leads to move right behind it; if the search back from the later one
        ends first, the merged kernel takes the earlier one's place and the kernels
        between that lead to the later one move right in front of it. Either way every
        kernel keeps what it reads in front of it and its readers behind it (Pearce and
        Kelly's reordering, moving one side only, which the order's labels allow)."""
        early, late = sorted((a, b), key=self._position)
        walks = (
            self._walk(early, late, self._next_kernels, set()),
            self._walk(late, early, self._previous_kernels, set()),
        )
        first, found = _first_done(walks)
        if (late if first == 0 else early) == a:
            self.order.remove(b)
        else:
            self.order.take_place(a, of=b)
        moved = sorted(found, key=self._position)
        if first == 0:
            self.order.move_after(moved, a)
        else:
            self.order.move_before(moved, a)

    def _position(self, gid: int) -> int:
        return self.order.labels[gid]

    # ------------------------------------------------------------------- output

    def build(self, counts: Counter, fuse_body) -> list[Eqn]:
        eqns: list[Eqn] = []
        group_of_built: list[int] = []  # the group each built equation came from
        for gid in self._topological_order():
            group = self.groups[gid]
            members = [self.eqns[i] for i in sorted(group.members)]
            if group.spec is None:
                eqns.append(map_subjaxprs(members[0], fuse_body))
                group_of_built.append(gid)
                continue
            if group.spec.kind == "view":  # read by no kernel in place: copies
                for eqn in members:
                    eqns.append(build_kernel([eqn], eqn.outputs, KernelSpec("opaque")))
                    group_of_built.append(gid)
                    counts["opaque_kernels"] += 1
                continue
            outputs = [
                v
                for e in members
                for v in e.outputs
                if v in self.outvars or any(self.group_of[r] != gid for r in self.readers[v])
            ]
            eqns.append(build_kernel(members, outputs, group.spec))
            group_of_built.append(gid)
            counts[f"{group.spec.kind}_kernels"] += 1
            if len(members) > 1:
                counts["eqns_fused"] += len(members)
        counts.update(self.boundaries(eqns, group_of_built))
        return eqns

    def boundaries(self, eqns: list[Eqn], group_of_built: list[int]) -> Counter:
        """Why each pair of the built equations ``eqns`` (from groups ``group_of_built``)
        in which one reads what the other writes is two kernels, counted by reason."""
        built_producer = {v: k for k, eqn in enumerate(eqns) for v in eqn.outputs}
        pairs = {
            (built_producer[a], k)
            for k, eqn in enumerate(eqns)
            for a in _read_vars(eqn)
            if a in built_producer
        }
        reasons: Counter = Counter()
        for producer, consumer in pairs:
            a, b = group_of_built[producer], group_of_built[consumer]
            decision = Refusal.VIEW_COPY if a == b else self.decide(a, b)
            if isinstance(decision, KernelSpec):
                saves = self.bytes_saved(a, b) > 0
                decision = Refusal.MISSED if saves else Refusal.NO_SAVING
            reasons[decision] += 1
        return reasons

    def _topological_order(self) -> list[int]:
        """Kernels in dependency order, ties in the order of their first equation."""
        waiting = {gid: len(self.predecessors(gid)) for gid in self.groups}
        ready = [(self.groups[g].first, g) for g, n in waiting.items() if n == 0]
        heapq.heapify(ready)
        order = []
        while ready:
            _, gid = heapq.heappop(ready)
            order.append(gid)
            for nxt in self.successors(gid):
                waiting[nxt] -= 1
                if waiting[nxt] == 0:
                    heapq.heappush(ready, (self.groups[nxt].first, nxt))
        return order


def _first_done(walks) -> tuple[int, set]:
    """Steps the generators ``walks`` (``Partition._walk``) in turn until one is done:
    its index and the set it returned."""
    while True:
        for index, walk in enumerate(walks):
            try:
                next(walk)
            except StopIteration as done:
                return index, done.value


def _window_array(eqn: Eqn) -> set:
    """The arrays a window, pad or concatenate reads in place (a window's starts and the
    padding value are read as any scalar is)."""
    return {a for a in indexed_arrays(eqn) if isinstance(a, Var)}


def _read_vars(eqn: Eqn) -> list[Var]:
    """The variables ``eqn`` reads, each once."""
    return list(dict.fromkeys(a for a in eqn.inputs if isinstance(a, Var)))
