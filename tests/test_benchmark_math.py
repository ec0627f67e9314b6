"""The math group (`--group math`): a group of its own (not in the default run), one
elementwise function per row in float32 and float64, whose every row agrees with NumPy and
SciPy on every backend at its quick size, checked as the suite checks it; and each library
takes `erf` and `expit` from its own `scipy.special`."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.special

import numbax
import numbax.numpy as xnp
from benchmarks.__main__ import parse_args
from benchmarks.implementation import bind
from benchmarks.math_functions import DTYPES, FUNCTIONS, MATH_WORKLOAD_BUILDERS, special


def test_math_is_a_group_of_its_own():
    default = parse_args(["--backend", "interpret"]).names
    group = parse_args(["--backend", "interpret", "--group", "math"]).names
    assert group == list(MATH_WORKLOAD_BUILDERS)
    assert len(group) == len(FUNCTIONS) * len(DTYPES)
    assert not set(default) & set(group)


@pytest.mark.parametrize("name", list(MATH_WORKLOAD_BUILDERS))
def test_numbax_passes_the_workloads_check(backend, name):
    workload = MATH_WORKLOAD_BUILDERS[name]("quick", np.random.default_rng(0))
    program = numbax.jit(bind(workload.program, xnp), backend=backend.name)
    result = backend.to_host(program(*workload.inputs))
    assert result.dtype == workload.inputs[0].dtype  # float32 stays float32
    workload.check(result, workload.reference())


def test_each_library_takes_its_own_scipy_special():
    import numbax.scipy.special

    assert special(np) is scipy.special
    assert special(xnp) is numbax.scipy.special
    with pytest.raises(ValueError, match="no scipy.special known"):
        special(scipy)
