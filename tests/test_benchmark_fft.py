"""The fft benchmark group (`--group fft`): a group of its own (not in the default run),
whose workloads agree with NumPy on every backend at their quick sizes, checked as the
suite checks them."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

import numbax
import numbax.numpy as xnp

ROOT = os.path.dirname(os.path.abspath(numbax.__file__))
if ROOT not in sys.path:  # `benchmarks/` is not shipped in the package: reach it from the root
    sys.path.insert(0, ROOT)

from benchmarks.__main__ import parse_args  # noqa: E402
from benchmarks.fft import FFT_WORKLOAD_BUILDERS  # noqa: E402
from benchmarks.implementation import bind  # noqa: E402


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
