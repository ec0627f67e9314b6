"""One switch says whether Numba's CUDA simulator is on: ``config.cuda_simulator``.

It must agree with Numba's own reading of ``NUMBA_ENABLE_CUDASIM`` before and after Numba
is imported, and no other module of the package may read the variable itself."""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent

_PROBE = """
from numbax.config import cuda_simulator
before = cuda_simulator()
from numba.core import config as numba_config
print(before, cuda_simulator(), bool(numba_config.ENABLE_CUDASIM))
"""


@pytest.mark.parametrize(
    ("value", "on"), [("1", True), ("0", False), ("", False), (None, False), ("2", True)]
)
def test_the_switch_agrees_with_numba_before_and_after_it_is_imported(value, on):
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    if value is not None:
        env["NUMBA_ENABLE_CUDASIM"] = value
    run = subprocess.run(
        [sys.executable, "-c", _PROBE], env=env, capture_output=True, text=True, check=True
    )
    assert run.stdout.split() == [str(on)] * 3


def test_no_other_module_reads_the_variable():
    readers = []
    for path in ROOT.rglob("*.py"):
        relative = path.relative_to(ROOT)
        if relative.parts[0] in ("tests", "benchmarks", "build") or relative.name == "config.py":
            continue
        text = path.read_text(encoding="utf-8")
        if re.search(r"environ[^\n]*NUMBA_ENABLE_CUDASIM|ENABLE_CUDASIM\)", text):
            readers.append(str(relative))
    assert readers == []
