"""Launching ``mpiexec`` from the tests: the scripts of this folder, run on N processes
with a time limit, so a hang is a failure and never a stuck test run.

A test that needs MPI skips, saying why, when mpi4py or ``mpiexec`` is missing; CI
installs ``numbax[mpi]`` and runs this folder with ``NUMBAX_TEST_MPI=1`` (``.ci/run``),
which turns a skip into a failure, so there it cannot silently skip.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import switches

HERE = Path(__file__).parent
ROOT = HERE.parent.parent


def mpiexec() -> str | None:
    beside_python = Path(sys.executable).parent / "mpiexec"
    return str(beside_python) if beside_python.exists() else shutil.which("mpiexec")


def _missing(reason: str) -> None:
    """Skip, saying why; a failure where CI asks for these tests (``NUMBAX_TEST_MPI=1``)."""
    if switches.flag("NUMBAX_TEST_MPI"):
        pytest.fail(f"NUMBAX_TEST_MPI=1 but {reason}")
    pytest.skip(reason)


def require_mpi() -> str:
    if importlib.util.find_spec("mpi4py") is None:
        _missing("mpi4py is not installed: pip install 'numbax[mpi]'")
    if importlib.util.find_spec("numba_mpi") is None:
        _missing("numba-mpi is not installed: pip install 'numbax[mpi]'")
    launcher = mpiexec()
    if launcher is None:
        _missing("no mpiexec on PATH or beside the Python: pip install 'numbax[mpi]'")
    return launcher


def run(script, processes: int, *arguments, cache_dir, timeout: float, env=None):
    """``mpiexec -n processes python script arguments``; the completed process."""
    launcher = require_mpi()
    environment = {
        **os.environ,
        "NUMBAX_TIERED": "0",
        "NUMBAX_CACHE_DIR": str(cache_dir),
        "PYTHONUNBUFFERED": "1",
        **(env or {}),
    }
    command = [launcher, "-n", str(processes), sys.executable, str(script), *map(str, arguments)]
    try:
        return subprocess.run(
            command,
            cwd=ROOT.parent,
            env=environment,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired as err:
        pytest.fail(
            f"{' '.join(command)} did not end within {timeout} s:\n{err.stdout}{err.stderr}"
        )


def run_python(script, *arguments, cache_dir, timeout: float, env=None):
    """``python script arguments``: one process (MPI's singleton)."""
    environment = {**os.environ, "NUMBAX_TIERED": "0", "NUMBAX_CACHE_DIR": str(cache_dir)}
    command = [sys.executable, str(script), *map(str, arguments)]
    return subprocess.run(
        command,
        cwd=ROOT.parent,
        env={**environment, **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
    )
