"""The NumPy library over the tracer: ``numbax.numpy`` (``numpy_api``, assembled from
the ``numpy_*`` modules and the ufuncs, reductions, shapes, sorting, linear algebra, FFT,
einsum, ... they draw on), the Tracer's NumPy methods and operators (``array_methods``,
installed into ``tracer.Tracer`` when this package is imported: the arrow in the code
points down), ``numbax.random``, ``numbax.nn`` and ``numbax.scipy``.

It is built from the primitives the tracer binds (``tracer/lax.py``) and may import
``ir`` and ``tracer``; the tracer never imports it at module level.
"""

from . import array_methods

array_methods.install()
