"""``numbax.scipy.linalg``: the ``scipy.linalg`` functions numbax traces.

>>> import numpy as np
>>> from numbax.scipy.linalg import solve_triangular
>>> solve_triangular(np.array([[2.0, 0.0], [1.0, 1.0]]), np.array([2.0, 3.0]), lower=True)
array([1., 2.])
"""

from .numpy_linalg import cho_solve, solve_triangular

__all__ = ["cho_solve", "solve_triangular"]
