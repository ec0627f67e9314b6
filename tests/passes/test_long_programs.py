"""Programs of 100,000 equations go through every stage that reads a whole program: the
tracer, typecheck, the printer, serialisation, the interpreter and every pass. None may
recurse on the program's length or on how deeply operands nest (Python's stack holds
about a thousand frames), and none may take time quadratic in the length.

Two shapes of program: a chain, each equation reading the one before (operands nested
100,000 deep), and a wide sum tree, 50,000 terms of one input added pairwise (a value
read by 50,000 equations, and kernels that grow by merging siblings)."""

from __future__ import annotations

import numpy as np
import pytest

import numbax
from numbax import ir, passes
from numbax.ir import serialize
from numbax.ir.core import ClosedJaxpr, Eqn, Jaxpr, Literal, ShapedArray, Var
from numbax.ir.primitive import PRIMITIVES
from numbax.passes.verify import check_fused

pytestmark = pytest.mark.slow  # a scale test: NUMBAX_TEST_SLOW=1 runs it (see conftest.py)

EQNS = 100_000
X = np.linspace(0.0, 1.0, 4)


def chain(x):
    for _ in range(EQNS // 3):
        x = np.sin(x) * 0.5 + 0.25
    return x


def sum_tree_jaxpr(terms: int) -> ClosedJaxpr:
    """``x*2 + x*3 + ... + x*(terms+1)``, added pairwise, written as IR directly (tracing
    it would take as long as the rest of the test)."""
    aval = ShapedArray((4,), np.float64)
    x = Var(aval)
    mul, add = PRIMITIVES["mul"], PRIMITIVES["add"]
    eqns, level = [], []
    for i in range(terms):
        level.append(Var(aval))
        eqns.append(Eqn(mul, [x, Literal(float(i + 2), np.float64)], [level[-1]], {}))
    while len(level) > 1:
        pairs = [level[k : k + 2] for k in range(0, len(level), 2)]
        level = []
        for pair in pairs:
            if len(pair) == 1:
                level.append(pair[0])
                continue
            level.append(Var(aval))
            eqns.append(Eqn(add, pair, [level[-1]], {}))
    return ClosedJaxpr(Jaxpr([], [x], eqns, level), [])


def numpy_chain(x):
    for _ in range(EQNS // 3):
        x = np.sin(x) * 0.5 + 0.25
    return x


@pytest.fixture(scope="module")
def programs():
    traced = numbax.make_jaxpr(chain)(X)
    tree = sum_tree_jaxpr(EQNS // 2)
    terms = EQNS // 2
    return {
        "chain": (traced, numpy_chain(X)),
        "sum_tree": (tree, X * (terms * (terms + 3) / 2)),
    }


@pytest.mark.parametrize("name", ["chain", "sum_tree"])
def test_a_long_program_typechecks_prints_and_round_trips(programs, name):
    closed, _ = programs[name]
    assert len(closed.eqns) >= EQNS - 2
    ir.typecheck(closed)
    text = str(closed)
    assert text.count("\n") >= len(closed.eqns)
    back = serialize.loads(serialize.dumps(closed))
    assert str(back) == text


@pytest.mark.parametrize("name", ["chain", "sum_tree"])
def test_a_long_program_is_optimised_and_evaluated(programs, name):
    closed, expected = programs[name]
    (value,) = ir.eval_jaxpr(closed.jaxpr, closed.consts, X)
    np.testing.assert_allclose(value, expected, rtol=1e-12)
    # Checked once at the end: typechecking after each of the ~18 passes takes longer.
    fused, _ = passes.optimize(closed, debug_checks=False)
    ir.typecheck(fused)
    check_fused(fused)
    assert [e.params["kind"] for e in fused.eqns] == ["elementwise"]
    (fused_value,) = ir.eval_jaxpr(fused.jaxpr, fused.consts, X)
    np.testing.assert_allclose(fused_value, expected, rtol=1e-12)
