"""Random well-typed programs through the whole pipeline give the interpreter's answer
on the program as traced, and typecheck after every pass.

The programs come from the generator the differential fuzzer shares
(``tests/random_programs.py``), drawn while they are traced.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from passes_util import assert_same_values, trace
from random_programs import inputs, program

from numbax import passes
from numbax.passes import fusion
from numbax.passes.manager import run_pipeline
from numbax.passes.rewrite import subjaxprs
from numbax.passes.verify import check_fused

# The passes up to and including the cleanup group (inline, narrow floats, cleanup).
_CLEANUP = next(i for i, stage in enumerate(passes.PIPELINE) if stage.name == "cleanup")
_UNTIL_CLEANUP = passes.PIPELINE[: _CLEANUP + 1]


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data())
def test_random_programs_keep_their_meaning(data):
    dtype = data.draw(st.sampled_from([np.float64, np.float32]), label="dtype")
    arrays = inputs(data, dtype, edge_shapes=data.draw(st.booleans(), label="edges"))
    traced = trace(program(data, data.draw(st.integers(1, 8), label="steps")), *arrays)
    fused, log = passes.optimize(traced, debug_checks=True)  # typechecks after every pass
    check_fused(fused)
    # Merged sums of sums reassociate; everything else must agree to the last bit.
    tolerance = 1e-9 if dtype == np.float64 else 1e-4
    assert_same_values(traced, fused, arrays, rtol=tolerance, atol=tolerance)
    assert not _outside_kernels(fused.jaxpr)
    # Fusion itself never duplicates an expensive producer.
    cleaned, _ = run_pipeline(_UNTIL_CLEANUP, traced, dump_dir=None, debug_checks=False)
    assert _expensive_ops(fusion.run(cleaned)[0].jaxpr) <= _expensive_ops(cleaned.jaxpr)


_CONTROL_FLOW = ("cond", "scan", "while")


def _outside_kernels(jaxpr) -> list[str]:
    """The eqns left outside a kernel, at the top level and in control flow's bodies."""
    left = []
    for eqn in jaxpr.eqns:
        if eqn.prim.name in _CONTROL_FLOW:
            left += [name for sub in subjaxprs(eqn) for name in _outside_kernels(sub)]
        elif eqn.prim.name != "kernel":
            left.append(eqn.prim.name)
    return left


def _expensive_ops(jaxpr) -> Counter:
    found = Counter(e.prim.name for e in jaxpr.eqns if e.prim.expensive)
    for eqn in jaxpr.eqns:
        for sub in subjaxprs(eqn):
            found += _expensive_ops(sub)
    return found
