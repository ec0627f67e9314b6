"""The test suite's switches: every environment variable that changes what the tests run.

This is the one place they are read; docs/testing.md lists them for people, and
tests/test_docs.py checks that the two agree and that no test reads one elsewhere.
Options of numbax itself (``NUMBAX_BACKEND``, ``NUMBAX_TIERED``, ...) are config.py's,
not these.
"""

from __future__ import annotations

import os

# name -> what it does (docs/testing.md repeats these lines)
SWITCHES = {
    "NUMBAX_TEST_SLOW": "`1`: run the tests marked `slow` (scale tests and sweeps); "
    "otherwise they skip and say so",
    "NUMBAX_TEST_GPU": "`1`: run the `cuda` backend's tests on a real GPU (without it they "
    "need the CUDA simulator, `NUMBA_ENABLE_CUDASIM=1`)",
    "NUMBAX_TEST_PTX": "`1`: a missing CUDA toolchain fails the PTX checks instead of "
    "skipping them",
    "NUMBAX_TEST_GRAPHVIZ": "`1`: a missing Graphviz (`graphviz` package, `dot` program) "
    "fails the SVG tests instead of skipping them",
    "NUMBAX_TEST_MPI": "`1`: a missing MPI (mpi4py, numba-mpi, `mpiexec`) fails the "
    "distributed tests instead of skipping them",
    "NUMBAX_TEST_TORCH": "`1`: a missing PyTorch fails the models group's PyTorch rows' "
    "tests (eager and `torch.compile`) instead of skipping them",
    "NUMBAX_TEST_EXAMPLES": "N: random programs drawn by the cpu backend's Hypothesis "
    "search (default 20; each is a compile)",
    "NUMBAX_FUZZ_EXAMPLES": "N: programs per test of the differential and view fuzzers "
    "(defaults 6 and 12) and mutants of the IR-file fuzzer (default 800)",
    "NUMBAX_FUZZ_WIDE": "`1`: the fuzzers also draw rows of up to 257 elements (the cpu "
    "backend's longer loops)",
    "NUMBAX_FUZZ_LARGE": "`1`: the fuzzers also draw real sizes (matrices of hundreds per "
    "side, 10^5-element rows, arrays of 32 MiB and more)",
}


def _read(name: str) -> str:
    if name not in SWITCHES:
        raise KeyError(f"{name} is not a test switch: add it to SWITCHES in tests/switches.py")
    return os.environ.get(name, "")


def flag(name: str) -> bool:
    """Whether the switch ``name`` is set to ``1``."""
    return _read(name) == "1"


def count(name: str, default: int) -> int:
    """The whole number the switch ``name`` holds, or ``default`` when it is unset."""
    text = _read(name)
    if not text:
        return default
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"{name}={text!r}: expected a whole number of examples") from None
