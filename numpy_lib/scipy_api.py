"""``numbax.scipy``: the SciPy functions numbax traces, in SciPy's module layout
(``numbax.scipy.linalg``, ``numbax.scipy.special``), as ``jax.scipy`` has them.

>>> import numbax.scipy.special
>>> from numbax.scipy.special import expit
"""

from . import scipy_linalg as linalg
from . import scipy_special as special

__all__ = ["linalg", "special"]
