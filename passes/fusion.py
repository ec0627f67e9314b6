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
and its result goes through memory. Cheap producers were already copied per consumer by
``broadcasts``. Control flow (``cond``, ``while``, ``scan``) stays as it is, with its
bodies fused.
"""

from __future__ import annotations

import heapq
from collections import Counter, defaultdict
from dataclasses import dataclass

from ..ir.core import ClosedJaxpr, Eqn, Jaxpr, Var
from ..ir.primitive import Pattern
from .broadcasts import copy_cheap_producers, hoist_broadcasts
from .dce import eliminate_dead_code
from .kernels import KernelSpec, build_kernel, classify
from .rewrite import map_subjaxprs


def run(closed: ClosedJaxpr) -> tuple[ClosedJaxpr, Counter]:
    counts: Counter = Counter()
    return ClosedJaxpr(fuse(closed.jaxpr, counts), closed.consts), counts


def fuse(jaxpr: Jaxpr, counts: Counter | None = None) -> Jaxpr:
    counts = Counter() if counts is None else counts
    jaxpr = eliminate_dead_code(hoist_broadcasts(jaxpr))
    jaxpr = eliminate_dead_code(copy_cheap_producers(jaxpr))
    partition = Partition(jaxpr)
    partition.merge_greedily()
    eqns = partition.build(counts, lambda body: fuse(body, counts))
    return Jaxpr(jaxpr.constvars, jaxpr.invars, eqns, jaxpr.outvars)


@dataclass(frozen=True)
class Group:
    """A kernel in the making: equation indices in program order, and its spec (None
    for a control-flow equation, which is never merged)."""

    members: tuple[int, ...]
    spec: KernelSpec | None
    produced: frozenset
    inputs: frozenset  # variables read and not produced here
    consumers: frozenset  # equations outside the group that read what it produces

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
            for var in dict.fromkeys(a for a in eqn.inputs if isinstance(a, Var)):
                self.readers[var].append(i)
        self.group_of = list(range(len(self.eqns)))
        self.groups: dict[int, Group] = {}
        for i, eqn in enumerate(self.eqns):
            spec = None if eqn.prim.pattern is Pattern.CONTROL else classify([eqn])
            self.groups[i] = Group(
                (i,),
                spec,
                frozenset(eqn.outputs),
                frozenset(a for a in eqn.inputs if isinstance(a, Var)),
                frozenset(r for v in eqn.outputs for r in self.readers.get(v, ())),
            )
        self.next_id = len(self.eqns)

    # ------------------------------------------------------------------ merging

    def merge_greedily(self) -> None:
        heap: list = []
        for gid in list(self.groups):
            self._push_candidates(heap, gid)
        while heap:
            _, _, a, b = heapq.heappop(heap)
            if a not in self.groups or b not in self.groups:
                continue
            spec = self.merged_spec(a, b)
            if spec is not None:
                self._push_candidates(heap, self._merge(a, b, spec))

    def merged_spec(self, a: int, b: int) -> KernelSpec | None:
        """The spec of ``a`` and ``b`` as one kernel, if that is legal."""
        ga, gb = self.groups[a], self.groups[b]
        if not (ga.mergeable and gb.mergeable):
            return None
        spec = classify([self.eqns[i] for i in sorted(ga.members + gb.members)])
        if spec is None or self._reaches(a, b) or self._reaches(b, a):
            return None
        return spec

    def _push_candidates(self, heap: list, gid: int) -> None:
        group = self.groups[gid]
        if not group.mergeable:
            return
        for other in self._related(gid):
            saved = self.bytes_saved(gid, other)
            if saved > 0:
                first = min(group.members), min(self.groups[other].members)
                heapq.heappush(heap, (-saved, min(first), gid, other))

    def _related(self, gid: int) -> set[int]:
        """Kernels that produce, consume or share a variable with ``gid``."""
        group = self.groups[gid]
        related = set()
        for var in group.produced | group.inputs:
            related.update(self.group_of[r] for r in self.readers.get(var, ()))
            if var in self.producer:
                related.add(self.group_of[self.producer[var]])
        related.discard(gid)
        return {g for g in related if self.groups[g].mergeable}

    def bytes_saved(self, a: int, b: int) -> int:
        """Memory traffic saved by running ``a`` and ``b`` as one kernel."""
        ga, gb = self.groups[a], self.groups[b]
        saved = 0
        for source, sink in ((ga, gb), (gb, ga)):
            for var in source.produced & sink.inputs:
                read_elsewhere = var in self.outvars or any(
                    self.group_of[r] not in (a, b) for r in self.readers[var]
                )
                saved += var.aval.nbytes * (1 if read_elsewhere else 2)
        shared = (v for v in ga.inputs & gb.inputs if v.aval.shape != ())
        return saved + sum(v.aval.nbytes for v in shared)

    def _merge(self, a: int, b: int, spec: KernelSpec) -> int:
        ga, gb = self.groups.pop(a), self.groups.pop(b)
        produced = ga.produced | gb.produced
        gid, self.next_id = self.next_id, self.next_id + 1
        members = tuple(sorted(ga.members + gb.members))
        inputs = (ga.inputs | gb.inputs) - produced
        consumers = (ga.consumers | gb.consumers) - set(members)
        self.groups[gid] = Group(members, spec, produced, inputs, consumers)
        for i in members:
            self.group_of[i] = gid
        return gid

    # ------------------------------------------------------------------- graph

    def successors(self, gid: int) -> set[int]:
        return {self.group_of[i] for i in self.groups[gid].consumers}

    def predecessors(self, gid: int) -> set[int]:
        inputs = self.groups[gid].inputs
        return {self.group_of[self.producer[v]] for v in inputs if v in self.producer} - {gid}

    def _reaches(self, source: int, target: int) -> bool:
        """Whether a path leads from ``source`` to ``target`` through another kernel."""
        stack = [g for g in self.successors(source) if g != target]
        seen = set(stack)
        while stack:
            for nxt in self.successors(stack.pop()):
                if nxt == target:
                    return True
                if nxt not in seen:
                    seen.add(nxt)
                    stack.append(nxt)
        return False

    # ------------------------------------------------------------------- output

    def build(self, counts: Counter, fuse_body) -> list[Eqn]:
        eqns = []
        for gid in self._topological_order():
            group = self.groups[gid]
            members = [self.eqns[i] for i in group.members]
            if group.spec is None:
                eqns.append(map_subjaxprs(members[0], fuse_body))
                continue
            outputs = [
                v
                for e in members
                for v in e.outputs
                if v in self.outvars or any(self.group_of[r] != gid for r in self.readers[v])
            ]
            eqns.append(build_kernel(members, outputs, group.spec))
            counts[f"{group.spec.kind}_kernels"] += 1
            if len(members) > 1:
                counts["eqns_fused"] += len(members)
        return eqns

    def _topological_order(self) -> list[int]:
        """Kernels in dependency order, ties in the order of their first equation."""
        waiting = {gid: len(self.predecessors(gid)) for gid in self.groups}
        ready = [(min(self.groups[g].members), g) for g, n in waiting.items() if n == 0]
        heapq.heapify(ready)
        order = []
        while ready:
            _, gid = heapq.heappop(ready)
            order.append(gid)
            for nxt in self.successors(gid):
                waiting[nxt] -= 1
                if waiting[nxt] == 0:
                    heapq.heappush(ready, (min(self.groups[nxt].members), nxt))
        return order
