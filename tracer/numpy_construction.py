"""Shape and construction functions (tile, repeat, roll, rot90, diff, diag, tril/triu,
append/insert/delete, the stacks and splits, kron, cross, select, meshgrid, grids,
histogram, bincount, isclose, ...), written as compositions of primitives.

Each name in ``FUNCTIONS`` (and ``UFUNCS``) joins ``numbax.numpy`` and NumPy's dispatch
tables (``tracer/numpy_api.py``).
"""

from __future__ import annotations

FUNCTIONS: dict = {}
UFUNCS: dict = {}
