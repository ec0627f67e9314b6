"""The linalg benchmark group (`--group linalg`): its workloads agree with NumPy on every
backend at their quick sizes, checked as the suite checks them, and its SVD check tells a
right answer (any signs of the singular vectors) from a wrong one."""

from __future__ import annotations

import numpy as np
import pytest

import numbax
import numbax.numpy as xnp
from benchmarks.__main__ import parse_args
from benchmarks.implementation import bind
from benchmarks.linalg import LINALG_WORKLOAD_BUILDERS


def _workload(name: str):
    return LINALG_WORKLOAD_BUILDERS[name]("quick", np.random.default_rng(0))


def test_linalg_is_a_group_of_its_own():
    default = parse_args(["--backend", "interpret"]).names
    group = parse_args(["--backend", "interpret", "--group", "linalg"]).names
    assert group == list(LINALG_WORKLOAD_BUILDERS)
    assert not set(default) & set(group)


@pytest.mark.parametrize("name", list(LINALG_WORKLOAD_BUILDERS))
def test_numbax_passes_the_workloads_check(backend, name):
    workload = _workload(name)
    program = numbax.jit(bind(workload.program, xnp), backend=backend.name)
    workload.check(backend.to_host(program(*workload.inputs)), workload.reference())


def test_the_svd_check_accepts_other_signs_and_rejects_a_wrong_answer():
    workload = _workload("linalg_svd")
    u, s, vt = expected = workload.reference()
    flipped = np.where(np.arange(len(s)) % 2, -1.0, 1.0)
    workload.check((u * flipped, s, flipped[:, None] * vt), expected)
    with pytest.raises(AssertionError):
        workload.check((u, s * 1.001, vt), expected)
    with pytest.raises(AssertionError):
        workload.check((u * flipped, s, vt), expected)  # u and vt no longer agree
