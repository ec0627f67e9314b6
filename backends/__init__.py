"""Backends turn a jaxpr into an ``Executable``: ``interpret`` (NumPy, the oracle),
``cpu`` (Numba njit) and ``cuda`` (numba.cuda). Each is imported only when first
used, so ``import numbax`` does not import Numba."""

from __future__ import annotations

import importlib

from ..config import config

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


def default_backend_name() -> str:
    if config.backend:
        return config.backend
    for name in ("cpu",):
        try:
            module = importlib.import_module(_MODULES[name])
        except ImportError:
            continue
        if hasattr(module, "backend"):
            return name
    return "interpret"
