"""The passes' work grows linearly with the program: counted, never timed.

Two programs of benchmarks/compile_scaling.py's shapes (a straight-line chain that fuses
into one kernel, and a Python loop unrolled into many kernels) are optimised at two sizes
ten times apart. The pipeline must run the same passes the same number of times at both
sizes (no fixed point that needs more rounds for a longer program), and build at most
about ten times as many equations: a pass that rebuilt the program once per equation it
rewrote, or re-fused per merge, would build a hundred times as many.

Fusion's own work is counted the same way: the merge candidates it evaluates and the steps
of its cycle checks and reorderings (``Partition._walk``, one edge per step)."""

from __future__ import annotations

import functools
from collections import Counter

import numpy as np
import pytest

import numbax
import numbax.numpy
from numbax import passes
from numbax.ir import core
from numbax.passes import fusion


def straight_line(steps: int):
    def program(x):
        for _ in range(steps):
            x = np.sin(x) * 0.5 + 0.25
        return x

    return program, (np.linspace(0.0, 1.0, 8),)


def unrolled_loop(terms: int):
    def program(x, w):
        acc = np.zeros(x.shape[1:])
        for i in range(terms):
            acc = acc + x[i] * w[i]
        return acc

    return program, (np.ones((terms, 8)), np.ones(terms))


@functools.cache
def optimise_counting_work(make, size: int) -> tuple[int, Counter]:
    """The traced program's eqns, and what optimising it did: ``built`` eqns, pass
    ``runs``, fusion's ``candidates`` and ``walk_steps``. Cached: the tests share runs."""
    program, args = make(size)
    closed = numbax.make_jaxpr(program)(*args)
    work: Counter = Counter()
    original_init, original_saved = core.Eqn.__init__, fusion.Partition.bytes_saved
    original_walk = fusion.Partition._walk

    def counting_init(self, *a, **k):
        work["built"] += 1
        original_init(self, *a, **k)

    def counting_saved(self, a, b):
        work["candidates"] += 1
        return original_saved(self, a, b)

    def counting_walk(self, *a, **k):
        walk = original_walk(self, *a, **k)
        while True:
            try:
                next(walk)
            except StopIteration as done:
                return done.value
            work["walk_steps"] += 1
            yield

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(core.Eqn, "__init__", counting_init)
        patch.setattr(fusion.Partition, "bytes_saved", counting_saved)
        patch.setattr(fusion.Partition, "_walk", counting_walk)
        _, log = passes.optimize(closed, debug_checks=False)
    work["runs"] = len(log)
    return len(closed.eqns), work


# The loop from 50 terms: its cycle checks are 20 steps a term less ~100 in all (linear, but
# the offset alone is 1.32x at 20 -> 200 terms; 1.10x at 50 -> 500).
SIZES = [(straight_line, 40), (unrolled_loop, 50)]


def grows_linearly(make, small: int, counted: str) -> bool:
    """Whether ``counted`` grows at most 1.3 times as fast as the program, tenfold."""
    eqns_small, work_small = optimise_counting_work(make, small)
    eqns_large, work_large = optimise_counting_work(make, small * 10)
    assert eqns_large >= 9 * eqns_small  # the program did grow tenfold
    assert work_small[counted] > 0  # what is counted did happen
    return work_large[counted] <= 1.3 * work_small[counted] * eqns_large / eqns_small


@pytest.mark.parametrize("make, small", SIZES)
def test_pass_work_grows_linearly_with_the_program(make, small):
    _, work_small = optimise_counting_work(make, small)
    _, work_large = optimise_counting_work(make, small * 10)
    assert work_large["runs"] == work_small["runs"]
    assert grows_linearly(make, small, "built")
    assert grows_linearly(make, small, "candidates")


@pytest.mark.parametrize("make, small", SIZES)
def test_fusion_cycle_checks_grow_linearly(make, small):
    assert grows_linearly(make, small, "walk_steps")


def transformer_step(layers: int):
    """The benchmarks' transformer training step (issue #34's model) at its quick size."""
    from benchmarks.implementation import bind
    from benchmarks.kernels import library_loops
    from benchmarks.model_workloads import transformer

    workload = transformer(layers)("quick", np.random.default_rng(0))
    loss = bind(workload.program, numbax.numpy, library_loops(numbax.fori_loop, numbax.scan))
    return numbax.value_and_grad(loss), workload.inputs


def test_fusion_cycle_checks_grow_linearly_in_a_training_step():
    """A layer's forward kernel and the backward kernel reading its value are joined
    through every layer after it: a cycle check walking from one to the other crossed
    them all (2 -> 20 layers: 8.2x the equations, 23x the steps); walks from both ends
    that stop where they meet grow with the program."""
    eqns_small, work_small = optimise_counting_work(transformer_step, 2)
    eqns_large, work_large = optimise_counting_work(transformer_step, 20)
    assert eqns_large >= 8 * eqns_small
    ratio = work_large["walk_steps"] / work_small["walk_steps"]
    assert ratio <= 1.3 * eqns_large / eqns_small, ratio
