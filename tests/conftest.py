"""Shared fixtures: the backends under test, debug checks on, a private compile cache.

``backend`` is parametrised over every backend this machine can run:

- ``interpret`` always (the oracle, NumPy);
- ``cpu`` when ``numbax.backends.cpu`` exposes ``backend``;
- ``cuda`` when ``numbax.backends.cuda`` exposes ``backend`` and either the Numba CUDA
  simulator is on (``NUMBA_ENABLE_CUDASIM=1``) or ``NUMBAX_TEST_GPU=1`` asks for a
  real GPU.

The fixture's value is the backend's name (a ``str``, so ``jit(f, backend=backend)``
works) carrying what a test needs to size itself: ``backend.compiled`` (every new
signature is a compile: use few), ``backend.simulated`` (the CUDA simulator runs
Python per thread: use tiny arrays, ``backend.size(1024, simulated=8)``), and
``backend.to_host(tree)`` to bring results back as NumPy arrays. ``compiled_backend``
is the same without the interpreter.

Every test runs with ``config.debug_checks`` on (``--no-debug-checks`` turns it off)
and with a private, empty on-disk compile cache.

Tests marked ``slow`` (scale tests: programs of a hundred thousand equations, loops
unrolled a thousand times; and sweeps: the whole corpus compiled in every narrow dtype)
run only with ``NUMBAX_TEST_SLOW=1``; otherwise they skip and say so. CI runs them beside
the suite (``.ci/run``), so no change lands without them.
"""

from __future__ import annotations

import importlib
import os
import shutil
import sys
import tempfile
import zlib

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))  # `import corpus` from any test folder

import switches  # noqa: E402

import numbax  # noqa: E402
from numbax import tree_map  # noqa: E402
from numbax.config import config as numbax_config  # noqa: E402
from numbax.config import cuda_simulator  # noqa: E402

# `benchmarks/` is not shipped in the package: the tests of the benchmark suite reach it
# from the repository's root, the package's folder.
REPOSITORY = os.path.dirname(os.path.abspath(numbax.__file__))
if REPOSITORY not in sys.path:
    sys.path.insert(0, REPOSITORY)

SIMULATED = cuda_simulator()
RUN_SLOW = switches.flag("NUMBAX_TEST_SLOW")


class Backend(str):
    """A backend name that knows how expensive it is to run."""

    compiled: bool
    simulated: bool

    def __new__(cls, name: str):
        self = super().__new__(cls, name)
        self.compiled = name != "interpret"
        self.simulated = name == "cuda" and SIMULATED
        return self

    def size(self, n: int, simulated: int | None = None) -> int:
        """``n`` elements, or ``simulated`` (default: a small fraction) under the simulator."""
        if not self.simulated:
            return n
        return simulated if simulated is not None else max(1, min(n, 8))

    @property
    def name(self) -> str:
        return str(self)

    @property
    def max_signatures(self) -> int | None:
        """How many signatures of each corpus case to run (None: all of them)."""
        return 1 if self.compiled else None

    def to_host(self, tree):
        """Results as NumPy arrays (the cuda backend returns device arrays)."""
        if self.name != "cuda":
            return tree
        return tree_map(_host_array, tree)


def _host_array(x):
    return x.copy_to_host() if hasattr(x, "copy_to_host") else np.asarray(x)


def _exposes_backend(module_name: str) -> bool:
    try:
        module = importlib.import_module(module_name)
    except ImportError:
        return False
    return hasattr(module, "backend")


def available_backends() -> list[Backend]:
    names = ["interpret"]
    if _exposes_backend("numbax.backends.cpu"):
        names.append("cpu")
    wants_cuda = SIMULATED or switches.flag("NUMBAX_TEST_GPU")
    if wants_cuda and _exposes_backend("numbax.backends.cuda"):
        names.append("cuda")
    return [Backend(name) for name in names]


BACKENDS = available_backends()


def pytest_addoption(parser):
    parser.addoption(
        "--no-debug-checks",
        action="store_true",
        help="run without numbax's debug checks (typecheck after every pass)",
    )
    parser.addoption(
        "--corpus-each",
        action="store_true",
        help="on compiled backends, run every corpus case and signature on its own "
        "instead of in bundles (slow: one compile each)",
    )


@pytest.fixture(params=BACKENDS, ids=str)
def backend(request) -> Backend:
    return request.param


@pytest.fixture(params=[b for b in BACKENDS if b.compiled], ids=str)
def compiled_backend(request) -> Backend:
    """Like ``backend``, without the interpreter (for tests whose oracle it is)."""
    return request.param


def pytest_configure(config: pytest.Config) -> None:
    """Debug checks on and a private, empty on-disk compile cache, from before the test
    modules are collected (some compile at import) until the session ends."""
    numbax_config.debug_checks = not config.getoption("--no-debug-checks")
    numbax_config.cache_dir = tempfile.mkdtemp(prefix="numbax-test-cache-")
    # The suite tests the compiled backends, so a first call waits for the compiled program
    # here and in the processes tests start (tests/backends/test_tiered.py tests tiering).
    os.environ["NUMBAX_TIERED"] = "0"
    numbax_config.tiered = False


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if RUN_SLOW:
        return
    skip = pytest.mark.skip(
        reason="slow (a scale test or a sweep): NUMBAX_TEST_SLOW=1 runs it; "
        "CI runs it beside the suite"
    )
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


def pytest_unconfigure(config: pytest.Config) -> None:
    if numbax_config.cache_dir and os.path.basename(numbax_config.cache_dir).startswith(
        "numbax-test-cache-"
    ):
        shutil.rmtree(numbax_config.cache_dir, ignore_errors=True)


@pytest.fixture
def rng(request) -> np.random.Generator:
    """A generator seeded by the test's id: reproducible, different per test."""
    return np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))
