"""NumPy's remaining ufuncs (inverse trig and hyperbolic, hypot, cbrt, rounding, degrees,
fmax/fmin, copysign, heaviside, signbit, nan_to_num, real/imag/conj/angle), written as
compositions of primitives.

Each name in ``FUNCTIONS`` (and ``UFUNCS``) joins ``numbax.numpy`` and NumPy's dispatch
tables (``tracer/numpy_api.py``).
"""

from __future__ import annotations

FUNCTIONS: dict = {}
UFUNCS: dict = {}
