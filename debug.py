"""``numbax.debug``: printing and callbacks from inside traced programs, as in
``jax.debug``.

>>> import numpy as np, numbax
>>> @numbax.jit
... def f(x):
...     numbax.debug.print("x = {}", x)
...     return x + 1.0
>>> f(np.arange(2.0))
x = [0. 1.]
array([1., 2.])
"""

from __future__ import annotations

from .tracer.callbacks import debug_callback as callback
from .tracer.callbacks import debug_print as print  # noqa: A004 - jax.debug.print's name

__all__ = ["callback", "print"]
