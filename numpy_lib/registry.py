"""The one way a NumPy-library module registers its implementations.

Each ``numpy_*`` module keeps ``FUNCTIONS`` and ``UFUNCS``: NumPy's name -> numbax's
implementation; ``numpy_api`` turns the names into NumPy's own function objects, the
keys of ``__array_function__`` and ``__array_ufunc__`` dispatch. They are keyed by
NumPy's names, not by ``Primitive`` (``ir.rules.RuleTable``): a NumPy function is a
composition of primitives, and one primitive serves many functions (``np.conj`` and
``np.conjugate``, ``np.deg2rad`` and ``np.radians``).
"""

from __future__ import annotations

from collections.abc import Callable


def implements(table: dict, *names: str):
    """Decorator: the decorated function implements NumPy's ``names`` (its own name when
    none is given) and is stored under each in ``table``."""

    def register(fn: Callable) -> Callable:
        for name in names or (fn.__name__,):
            if name in table:
                raise ValueError(f"NumPy's {name!r} is already implemented by {table[name]}")
            table[name] = fn
        return fn

    return register
