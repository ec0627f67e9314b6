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


def test_numbax_imports_no_mpi_and_says_what_to_install_without_it(tmp_path):
    """``import numbax`` starts no MPI; without mpi4py a collective names the extra."""
    script = tmp_path / "without_mpi4py.py"
    script.write_text(
        "import sys\n"
        "import numbax\n"
        "assert 'mpi4py' not in sys.modules\n"
        "sys.modules['mpi4py'] = None  # as if it were not installed\n"
        "import numbax.distributed as nd\n"
        "try:\n"
        "    nd.psum(1.0)\n"
        "except numbax.MissingDependencyError as err:\n"
        "    assert \"pip install 'numbax[mpi]'\" in str(err), err\n"
        "    print('REFUSED')\n"
    )
    done = run_python(script, cache_dir=tmp_path, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "REFUSED" in done.stdout
