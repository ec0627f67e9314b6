"""The machine description names the kernels each loaded OpenBLAS runs, and the
``OPENBLAS_CORETYPE`` that chose them: a matrix product's speed depends on it."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys

import pytest

import numbax
from benchmarks import machine

ROOT = os.path.dirname(os.path.abspath(numbax.__file__))


def test_the_software_line_names_the_blas_kernels_and_who_chose_them():
    described = {"python": "3.11", "numpy": "2", "numba": "0.6", "peers": {}, "peers_missing": {}}
    blas = {"openblas": {"libscipy_openblas": "Haswell"}, "OPENBLAS_CORETYPE": "Haswell"}
    line = machine.software_line({**described, "blas": blas})
    assert line.endswith("OpenBLAS kernels Haswell (OPENBLAS_CORETYPE=Haswell in the environment)")
    chosen_by_openblas = {"openblas": {"a": "SkylakeX", "b": "Zen"}, "OPENBLAS_CORETYPE": None}
    line = machine.software_line({**described, "blas": chosen_by_openblas})
    assert line.endswith("OpenBLAS kernels SkylakeX/Zen")
    assert "OpenBLAS" not in machine.software_line(described)


@pytest.mark.skipif(
    platform.machine() not in ("x86_64", "AMD64") or not os.path.exists("/proc/self/maps"),
    reason="OpenBLAS core types named here are x86-64's; the loaded libraries are read on Linux",
)
def test_the_kernels_a_process_runs_are_read_from_its_openblas():
    # Sandybridge (AVX) runs on every x86-64 machine that runs the suite's NumPy wheels.
    program = (
        "import json, numpy; from benchmarks import machine; "
        "print(json.dumps(machine.blas_kernels()))"
    )
    env = {**os.environ, "OPENBLAS_CORETYPE": "Sandybridge"}
    env["PYTHONPATH"] = os.pathsep.join([ROOT, env.get("PYTHONPATH", "")])
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    blas = json.loads(done.stdout)
    if not blas["openblas"]:
        pytest.skip("this NumPy is not built with OpenBLAS")
    assert blas["OPENBLAS_CORETYPE"] == "Sandybridge"
    assert set(blas["openblas"].values()) == {"Sandybridge"}
