"""Reductions and scans beyond sum/max/min/prod/mean: any/all, the nan-reductions, cumprod,
nancumsum, ptp, average, where= and initial=; compositions of primitives.

Each name in ``FUNCTIONS`` (and ``UFUNCS``) joins ``numbax.numpy`` and NumPy's dispatch
tables (``tracer/numpy_api.py``).
"""

from __future__ import annotations

FUNCTIONS: dict = {}
UFUNCS: dict = {}
