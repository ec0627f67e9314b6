"""Sorting and what is built on it: sort, argsort, lexsort, partition, top_k,
unique(size=), searchsorted, interp, median, percentile, quantile.

Each name in ``FUNCTIONS`` (and ``UFUNCS``) joins ``numbax.numpy`` and NumPy's dispatch
tables (``tracer/numpy_api.py``).
"""

from __future__ import annotations

FUNCTIONS: dict = {}
UFUNCS: dict = {}
