"""The fft benchmark group (`--group fft`): a group of its own (not in the default run),
whose workloads agree with NumPy on every backend at their quick sizes, checked as the
suite checks them."""

from __future__ import annotations

import numpy as np
import pytest

import numbax
import numbax.numpy as xnp
from benchmarks.__main__ import parse_args
from benchmarks.fft import FFT_WORKLOAD_BUILDERS
from benchmarks.implementation import bind


def test_fft_is_a_group_of_its_own():
    default = parse_args(["--backend", "interpret"]).names
    group = parse_args(["--backend", "interpret", "--group", "fft"]).names
    assert group == list(FFT_WORKLOAD_BUILDERS)
    assert not set(default) & set(group)


@pytest.mark.parametrize("name", list(FFT_WORKLOAD_BUILDERS))
def test_numbax_passes_the_workloads_check(backend, name):
    workload = FFT_WORKLOAD_BUILDERS[name]("quick", np.random.default_rng(0))
    program = numbax.jit(bind(workload.program, xnp), backend=backend.name)
    workload.check(backend.to_host(program(*workload.inputs)), workload.reference())
