"""Backends turn a jaxpr into an ``Executable``: ``interpret`` (NumPy, the oracle),
``cpu`` (Numba njit) and ``cuda`` (numba.cuda). Each is imported only when first
used, so ``import numbax`` does not import Numba."""

from __future__ import annotations

import functools
import importlib
import importlib.util
import os
import sys

from ..config import config, cuda_simulator

_MODULES = {
    "interpret": "numbax.backends.interpret",
    "cpu": "numbax.backends.cpu",
    "cuda": "numbax.backends.cuda",
}
_LOADED: dict = {}


def get_backend(name: str | None = None):
    """The backend object for ``name`` (``None``: the default backend)."""
    name = name or default_backend_name()
    if name not in _MODULES:
        raise ValueError(
            f"unknown numbax backend {name!r}; choose one of {', '.join(sorted(_MODULES))}"
        )
    if name not in _LOADED:
        module = importlib.import_module(_MODULES[name])
        if not hasattr(module, "backend"):
            raise NotImplementedError(f"the {name!r} backend is not available yet")
        _LOADED[name] = module.backend
    return _LOADED[name]


def clear_caches() -> None:
    """Forget what every backend loaded so far compiled in this process (its disk cache
    stays): the next compile of a program compiles or loads its kernels again."""
    for backend in list(_LOADED.values()):
        backend.clear_caches()


def default_backend_name() -> str:
    """``config.backend`` if set, else the best backend this machine has (detected once)."""
    return config.backend or _detected_default()


@functools.cache
def _detected_default() -> str:
    if _gpu_visible():
        return "cuda"
    for name in ("cpu",):
        try:
            module = importlib.import_module(_MODULES[name])
        except ImportError:
            continue
        if hasattr(module, "backend"):
            return name
    return "interpret"


def _gpu_visible() -> bool:
    """A real GPU Numba can use: the CUDA extra is installed, the simulator is off (it is
    chosen only by name), and a device answers. Asked on the first jit call, not at
    ``import numbax``."""
    if importlib.util.find_spec("numba_cuda") is None:
        return False
    if cuda_simulator():
        return False
    if sys.platform == "linux" and not _nvidia_device_files():
        return False  # importing numba.cuda to learn that would cost half a second
    try:
        from numba import cuda

        return bool(cuda.is_available())
    except Exception:  # noqa: BLE001 - a broken driver means no GPU, not a failed jit
        return False


def _nvidia_device_files() -> bool:
    """Linux exposes every NVIDIA GPU as /dev/nvidia<N> (/dev/dxg under WSL)."""
    return os.path.exists("/dev/dxg") or any(
        name.startswith("nvidia") and name[6:].isdigit() for name in os.listdir("/dev")
    )
