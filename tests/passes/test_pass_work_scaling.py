"""The passes' work grows linearly with the program: counted, never timed.

Two programs of benchmarks/compile_scaling.py's shapes (a straight-line chain that fuses
into one kernel, and a Python loop unrolled into many kernels) are optimised at two sizes
ten times apart. The pipeline must run the same passes the same number of times at both
sizes (no fixed point that needs more rounds for a longer program), and build at most
about ten times as many equations: a pass that rebuilt the program once per equation it
rewrote, or re-fused per merge, would build a hundred times as many."""

from __future__ import annotations

import numpy as np
import pytest

import numbax
from numbax import passes
from numbax.ir import core


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


def optimise_counting_eqns(make, size: int, monkeypatch) -> tuple[int, int, int]:
    """(traced eqns, eqns built by the passes, pass runs)."""
    program, args = make(size)
    closed = numbax.make_jaxpr(program)(*args)
    built = []
    original_init = core.Eqn.__init__

    def counting_init(self, *a, **k):
        built.append(1)
        original_init(self, *a, **k)

    with monkeypatch.context() as patch:
        patch.setattr(core.Eqn, "__init__", counting_init)
        _, log = passes.optimize(closed, debug_checks=False)
    return len(closed.eqns), len(built), len(log)


@pytest.mark.parametrize("make, small", [(straight_line, 40), (unrolled_loop, 20)])
def test_pass_work_grows_linearly_with_the_program(make, small, monkeypatch):
    eqns_small, built_small, runs_small = optimise_counting_eqns(make, small, monkeypatch)
    eqns_large, built_large, runs_large = optimise_counting_eqns(make, small * 10, monkeypatch)
    assert eqns_large >= 9 * eqns_small  # the program did grow tenfold
    assert runs_large == runs_small
    assert built_large <= 1.3 * built_small * eqns_large / eqns_small
