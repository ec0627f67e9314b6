"""What needs no second process, each in a fresh interpreter (importing
``numbax.distributed`` registers primitives, which this pytest process's other tests
must not see): the IR (printed form, JSON round trip, typechecked transforms, rule
tables, passes keeping every collective) and the cuda backend under the simulator."""

from __future__ import annotations

import pytest
from mpi_launch import HERE, require_mpi, run_python


def test_ir_tables_passes_and_errors(tmp_path):
    require_mpi()
    done = run_python(HERE / "single_process.py", cache_dir=tmp_path, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SINGLE PROCESS CHECKS PASSED" in done.stdout


def test_cuda_simulator_stages_collectives_through_the_host(tmp_path):
    require_mpi()
    pytest.importorskip("numba.cuda")
    done = run_python(
        HERE / "single_process.py",
        "cuda",
        cache_dir=tmp_path,
        timeout=600,
        env={"NUMBA_ENABLE_CUDASIM": "1"},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SINGLE PROCESS CHECKS PASSED" in done.stdout
