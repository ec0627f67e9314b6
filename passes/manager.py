"""The pass manager: runs a pipeline of named passes, checks and dumps between them,
and records what each one changed.

A pass is a pure function ``ClosedJaxpr -> (ClosedJaxpr, changes)``, where ``changes``
maps what it did to how often (``{"folded": 3}``), and what it refused to do, keyed by
a named ``Reason`` (passes/refusals.py), to how often; it keeps the program's meaning. A
``FixedPoint`` group reruns its passes until none of them changes anything. An
``Analysis`` reads the final program and leaves a result on the log (the memory plan,
whose refusals ``PassLog.refusals("memory_plan")`` reads). A backend records its own
rewrites of the fused program as passes of the log (``PassLog.add``).
With debug checks on, the program is typechecked after every pass (and a pass's own
``verify`` runs), so a broken rewrite is caught at the pass that broke it.
"""

from __future__ import annotations

import itertools
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..ir.core import ClosedJaxpr, Jaxpr
from ..ir.errors import TypecheckError
from ..ir.graph import jaxpr_to_dot
from ..ir.typecheck import typecheck
from .refusals import Reason, counted

PassFn = Callable[[ClosedJaxpr], tuple[ClosedJaxpr, dict[str, int]]]


@dataclass(frozen=True)
class Pass:
    name: str
    run: PassFn
    # An extra invariant checked after this pass in debug mode (the kernel contract).
    verify: Callable[[ClosedJaxpr], None] | None = None
    # Where set, the only primitives whose equations the pass rewrites (it may read any):
    # a program holding none of them, bodies included, is left as it is without a walk.
    # The loop passes on a program with no loop cost 4-6 ms a round at 1,800 equations.
    acts_on: frozenset[str] | None = None
    # Whether one run reaches the pass's own fixed point (run again on its own result it
    # changes nothing): in a fixed-point group it is not run again until another pass has
    # changed the program (CSE and DCE: ``rewrite.done_in_one_run``).
    idempotent: bool = False


@dataclass(frozen=True)
class FixedPoint:
    """Passes run in order, again and again, until a whole round changes nothing."""

    name: str
    passes: tuple[Pass, ...]
    max_rounds: int = 10


@dataclass(frozen=True)
class Analysis:
    """Reads the final program; its result lands on ``PassLog.analyses[name]``."""

    name: str
    run: Callable[[ClosedJaxpr], Any]


@dataclass
class PassRecord:
    index: int  # position in the run, as in the dump file names
    name: str
    group: str | None  # the fixed-point group it ran in, if any
    round: int | None
    changes: dict[str, int]
    eqns_before: int  # top-level equations (a kernel counts as one)
    eqns_after: int
    seconds: float = 0.0  # the pass's own time, checks and dumps excluded
    refusals: dict[Reason, int] = field(default_factory=dict)  # what it declined, why

    @property
    def changed(self) -> bool:
        return any(self.changes.values())

    def __str__(self):
        label = f"{self.group}[{self.round}].{self.name}" if self.group else self.name
        changes = ", ".join(f"{k}={v}" for k, v in sorted(self.changes.items()) if v)
        refused = ", ".join(f"{k}={v}" for k, v in sorted(self._refused()) if v)
        return (
            f"{self.index:02d} {label:<26} eqns {self.eqns_before:>4} -> {self.eqns_after:<4} "
            f"{self.seconds * 1e3:7.1f} ms  {changes or '-'}"
            + (f"; refused: {refused}" if refused else "")
        )

    def _refused(self):
        return ((refusal.value, count) for refusal, count in self.refusals.items())


@dataclass
class PassLog:
    """What every pass of one ``optimize`` run changed, in order."""

    records: list[PassRecord] = field(default_factory=list)
    analyses: dict[str, Any] = field(default_factory=dict)
    # Where the run dumps the program after each pass (``NUMBAX_DUMP``), and the number of
    # the last file written there: a record ``add`` ed later is dumped after them.
    dump_dir: str | None = None
    last_index: int = 0

    def __iter__(self):
        return iter(self.records)

    def __len__(self):
        return len(self.records)

    def seconds(self) -> dict[str, float]:
        """Each pass's time, its runs in every fixed-point round added up."""
        out: dict[str, float] = {}
        for record in self.records:
            out[record.name] = out.get(record.name, 0.0) + record.seconds
        return out

    def add(
        self,
        name: str,
        changes,
        eqns_before: int,
        eqns_after: int,
        *,
        seconds: float = 0.0,
        program=None,
    ) -> PassRecord:
        """Record a rewrite run after the pipeline, on its result (a backend's rewrites
        of the fused program, ``program`` what they made), as the log's next pass, dumped
        after the others where the run dumps."""
        self.last_index = max(self.last_index, self.records[-1].index if self.records else 0)
        self.last_index += 1
        refusals = counted(changes)
        kept = {k: v for k, v in changes.items() if k not in refusals}
        record = PassRecord(
            self.last_index, name, None, None, kept, eqns_before, eqns_after, seconds, refusals
        )
        self.records.append(record)
        if self.dump_dir:
            shown = "" if program is None else f"{program}\n"
            path = os.path.join(self.dump_dir, f"{record.index:02d}_{name}.txt")
            _write(path, f"# {record}\n{shown}")
        return record

    def add_analysis(self, name: str, result) -> None:
        """Record an analysis of a backend's rewrite of the pipeline's result (the cuda
        backend's memory plan of the program it runs) as the log's next step, dumped
        after the others where the run dumps."""
        self.last_index = max(self.last_index, self.records[-1].index if self.records else 0)
        self.last_index += 1
        self.analyses[name] = result
        if self.dump_dir:
            _write(os.path.join(self.dump_dir, f"{self.last_index:02d}_{name}.txt"), f"{result}\n")

    def refusals(self, name: str = "fusion") -> dict[Reason, int]:
        """What every run of the pass ``name`` refused, counted by reason: fusion's
        ``Refusal``, a backend's (``cpu_write``), or the memory plan's ``MemoryRefusal``
        (``refusals("memory_plan")``, an analysis whose result counts them)."""
        out: dict[Reason, int] = {}
        counts = [record.refusals for record in self.records if record.name == name]
        counts.append(getattr(self.analyses.get(name), "refusals", {}))
        for refusals in counts:
            for refusal, count in refusals.items():
                out[refusal] = out.get(refusal, 0) + count
        return out

    def totals(self, name: str) -> dict[str, int]:
        """The changes of every run of the pass ``name``, added up."""
        out: dict[str, int] = {}
        for record in self.records:
            if record.name == name:
                for key, value in record.changes.items():
                    out[key] = out.get(key, 0) + value
        return out

    @property
    def memory_plan(self):
        return self.analyses.get("memory_plan")

    def __str__(self):
        lines = [str(r) for r in self.records]
        for name, result in self.analyses.items():
            lines.append(f"-- {name}: {result}")
        return "\n".join(lines)

    __repr__ = __str__


def run_pipeline(
    pipeline, closed: ClosedJaxpr, *, dump_dir: str | None, debug_checks: bool
) -> tuple[ClosedJaxpr, PassLog]:
    runner = _Runner(dump_dir, debug_checks)
    runner.dump("input", closed)
    for stage in pipeline:
        if isinstance(stage, FixedPoint):
            closed = runner.fixed_point(stage, closed)
        elif isinstance(stage, Analysis):
            runner.analyse(stage, closed)
        else:
            closed = runner.run(stage, closed)
    return closed, runner.log


class _Runner:
    def __init__(self, dump_dir: str | None, debug_checks: bool):
        self.dump_dir = dump_dir
        self.debug_checks = debug_checks
        self.log = PassLog(dump_dir=dump_dir)
        self.index = itertools.count(1)
        self._primitives: tuple[Jaxpr, set[str]] | None = None
        if dump_dir:
            os.makedirs(dump_dir, exist_ok=True)

    def run(self, stage: Pass, closed, group=None, round_=None, settled=False) -> ClosedJaxpr:
        """``stage`` run on ``closed`` and logged; a ``settled`` stage (``fixed_point``) or
        one that acts on no primitive ``closed`` holds is logged as changing nothing."""
        before = len(closed.jaxpr.eqns)
        start = time.perf_counter()
        if not settled and (stage.acts_on is None or stage.acts_on & self.primitives(closed.jaxpr)):
            result, changes = stage.run(closed)
        else:
            result, changes = closed, {}
        refusals = counted(changes)
        self.log.last_index = next(self.index)
        record = PassRecord(
            self.log.last_index,
            stage.name,
            group,
            round_,
            {k: v for k, v in changes.items() if k not in refusals},
            before,
            len(result.jaxpr.eqns),
            time.perf_counter() - start,
            refusals,
        )
        self.log.records.append(record)
        known = self._primitives
        if not record.changed and known is not None and known[0] is closed.jaxpr:
            self._primitives = (result.jaxpr, known[1])  # the same program, perhaps rebuilt
        self.dump(stage.name, result, record)
        if self.debug_checks:
            self.check(stage, result)
        return result

    def primitives(self, jaxpr: Jaxpr) -> set[str]:
        """The names of the primitives ``jaxpr`` holds, bodies included; kept for the last
        program asked about and for what each pass that changed nothing made of it (a
        pass that changes nothing may still rebuild the program)."""
        if self._primitives is None or self._primitives[0] is not jaxpr:
            self._primitives = (jaxpr, primitive_names(jaxpr))
        return self._primitives[1]

    def fixed_point(self, group: FixedPoint, closed) -> ClosedJaxpr:
        """``group``'s passes in rounds until one changes nothing. An idempotent pass
        whose last run saw the program as it is now is settled: it is logged, not run
        (after fusion, CSE merges kernels and DCE finds nothing: no second round runs)."""
        settled: set[int] = set()
        for round_ in range(1, group.max_rounds + 1):
            changed = False
            for k, stage in enumerate(group.passes):
                closed = self.run(stage, closed, group.name, round_, settled=k in settled)
                if self.log.records[-1].changed:
                    changed = True
                    settled.clear()
                if stage.idempotent:
                    settled.add(k)
            if not changed:
                break
        return closed

    def analyse(self, stage: Analysis, closed) -> None:
        result = stage.run(closed)
        self.log.analyses[stage.name] = result
        self.log.last_index = next(self.index)
        if self.dump_dir:
            path = os.path.join(self.dump_dir, f"{self.log.last_index:02d}_{stage.name}.txt")
            _write(path, f"{result}\n")

    def check(self, stage: Pass, closed) -> None:
        try:
            typecheck(closed)
            if stage.verify is not None:
                stage.verify(closed)
        except TypecheckError as err:
            raise TypecheckError(f"after pass {stage.name!r}: {err}") from err

    def dump(self, name: str, closed, record: PassRecord | None = None) -> None:
        if not self.dump_dir:
            return
        index = record.index if record else 0
        header = f"# {record}\n" if record else "# the program as traced\n"
        stem = os.path.join(self.dump_dir, f"{index:02d}_{name}")
        _write(stem + ".txt", header + str(closed) + "\n")
        _write(stem + ".dot", jaxpr_to_dot(closed, name=name, title=header[2:].strip()))


def _write(path: str, text: str) -> None:
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def primitive_names(jaxpr: Jaxpr) -> set[str]:
    """The names of the primitives of ``jaxpr``'s equations and of every body they hold."""
    names: set[str] = set()
    stack = [jaxpr]
    while stack:
        eqns = stack.pop().eqns
        names.update(eqn.prim.name for eqn in eqns)
        stack.extend(sub for eqn in eqns for sub in eqn.bodies)
    return names
