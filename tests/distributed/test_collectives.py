"""Every collective on 2 and 4 processes: values against NumPy's global function,
``grad`` against central finite differences of it, ``vmap`` against a loop, under
``jit`` on interpret and cpu (``spmd_collectives.py``, one launch per process count:
each process compiles with Numba, so the checks are grouped). A rank that raises ends
every rank, and a mismatched collective raises, within a time limit
(``spmd_failures.py``)."""

from __future__ import annotations

import time

import pytest
from mpi_launch import HERE, run


@pytest.mark.parametrize("processes", [2, 4])
def test_every_collective_against_numpy_grad_and_vmap(processes, tmp_path):
    done = run(
        HERE / "spmd_collectives.py", processes, "interpret,cpu", cache_dir=tmp_path, timeout=900
    )
    assert done.returncode == 0, done.stdout + done.stderr
    cases = {2: 21, 4: 22}[processes]  # and a sub-communicator's psum from 4 processes
    assert f"ALL CHECKS PASSED: {cases} collectives" in done.stdout


def test_a_raising_rank_ends_every_rank_with_its_error(tmp_path):
    start = time.monotonic()
    done = run(HERE / "spmd_failures.py", 2, "raise", cache_dir=tmp_path, timeout=60)
    assert done.returncode != 0
    assert time.monotonic() - start < 30
    assert "[process 1] ValueError: process one fails on purpose" in done.stderr
    assert "aborting every process" in done.stderr
    assert "UNREACHABLE" not in done.stdout


@pytest.mark.parametrize("backend", ["interpret", "cpu"])
def test_mismatched_collectives_raise_in_check_mode(backend, tmp_path):
    done = run(
        HERE / "spmd_failures.py",
        2,
        f"mismatch-{backend}",
        cache_dir=tmp_path,
        timeout=300,
        env={"NUMBAX_MPI_CHECK": "1"},
    )
    assert done.returncode != 0
    assert "CollectiveMismatchError" in done.stderr, done.stderr
    assert "psum(float64[3])" in done.stderr or "psum(float64[4])" in done.stderr
    assert "UNREACHABLE" not in done.stdout
