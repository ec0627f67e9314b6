"""The cuda backend's collectives through NCCL (CuPy) when present, else staged through
the host and MPI: ``cuda_nccl.py`` under Numba's CUDA simulator, with ``fake_nccl.py``
standing in for CuPy's NCCL binding, at 1, 2 and 4 processes; each run in a fresh
interpreter (importing ``numbax.distributed`` registers primitives this pytest process's
other tests must not see)."""

from __future__ import annotations

import pytest
from mpi_launch import HERE, require_mpi, run, run_python

SIMULATOR = {"NUMBA_ENABLE_CUDASIM": "1", "NUMBAX_CUDA_NCCL": "1"}
PASSED = "CUDA NCCL CHECKS PASSED"


def _one_process(mode: str, tmp_path, **env):
    require_mpi()
    pytest.importorskip("numba.cuda")
    done = run_python(
        HERE / "cuda_nccl.py", mode, cache_dir=tmp_path, timeout=600, env={**SIMULATOR, **env}
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert PASSED in done.stdout, done.stdout + done.stderr


def test_collectives_go_through_nccl_where_cupy_has_it(tmp_path):
    _one_process("nccl", tmp_path)


@pytest.mark.parametrize("processes", [2, 4])
def test_nccl_calls_between_processes_equal_numpy(tmp_path, processes):
    pytest.importorskip("numba.cuda")
    done = run(
        HERE / "cuda_nccl.py", processes, "nccl", cache_dir=tmp_path, timeout=600, env=SIMULATOR
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count(PASSED) == processes, done.stdout + done.stderr


def test_collectives_are_staged_through_the_host_without_cupy(tmp_path):
    _one_process("absent", tmp_path)


def test_numbax_cuda_nccl_0_stages_them_even_with_nccl(tmp_path):
    _one_process("off", tmp_path, NUMBAX_CUDA_NCCL="0")


def test_the_cuda_backend_registers_no_collective_until_one_runs(tmp_path):
    """The NCCL path imports ``ir/collectives.py`` (which registers the collectives'
    primitives) only when a collective runs, so a process that never imports
    ``numbax.distributed`` keeps its every-primitive tables as they were."""
    pytest.importorskip("numba.cuda")
    script = tmp_path / "import_cuda.py"
    script.write_text(
        "import sys\n"
        "import numbax.backends.cuda.control\n"
        "import numbax.backends.cuda.nccl\n"
        "assert 'numbax.ir.collectives' not in sys.modules\n"
        "print('NOT REGISTERED')\n"
    )
    done = run_python(script, cache_dir=tmp_path, timeout=300, env=SIMULATOR)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "NOT REGISTERED" in done.stdout
