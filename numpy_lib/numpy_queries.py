"""Questions about arrays rather than computations on them: the dtype queries
(``result_type``, ``can_cast``, ``common_type``, ``min_scalar_type``) and the memory
queries (``may_share_memory``, ``shares_memory``), answered while tracing as Python values.

Decisions:

- The dtype queries answer from the tracer's dtype; a weakly typed tracer (a Python scalar
  argument) is the Python scalar of its kind, so NEP 50 promotes it as NumPy would.
  ``min_scalar_type`` of a 0-d tracer depends on its value: known while tracing, it is
  used; otherwise ``ConcretizationError``.
- The memory queries are decided from numbax's views: two handles of one memory (a base
  and its views) overlap exactly where NumPy's arrays would (NumPy answers on their probes,
  which have the arrays' layout). numbax takes every other traced array for memory of its
  own: each result, each argument of a traced function (were the caller to pass one
  array twice, NumPy would say True; numbax traces the two arguments as two arrays, and
  refuses the call when the function writes into one of them), and a traced array
  against a NumPy array (a constant of the program, a copy taken while tracing) is False.

Each name in ``FUNCTIONS`` joins ``numbax.numpy`` and NumPy's dispatch tables
(``numpy_lib/numpy_api.py``).
"""

from __future__ import annotations

import numpy as np

from ..ir.errors import ConcretizationError
from ..tracer.core import Tracer
from ..tracer.functionalize import traced_overlap
from ..tracer.source_info import error_at_user_line as _error

# --------------------------------------------------------------------------------------
# Dtype queries


def _stand_in(x):
    """What NumPy's dtype queries see for ``x``: a tracer's dtype, or for a weakly typed one
    (a Python scalar argument) the Python scalar of its kind."""
    if not isinstance(x, Tracer):
        return x
    return x.dtype.type(0).item() if x.weak_type else x.dtype


def _ask_numpy(function, *args, **kwargs):
    """NumPy's answer, its refusal raised at the user's line."""
    try:
        return function(*args, **kwargs)
    except (TypeError, ValueError) as err:
        raise _error(type(err), f"numpy.{function.__name__}: {err} (NumPy's own refusal)") from None


def result_type(*arrays_and_dtypes):
    return _ask_numpy(np.result_type, *map(_stand_in, arrays_and_dtypes))


def can_cast(from_, to, casting="safe"):
    return _ask_numpy(np.can_cast, _stand_in(from_), to, casting)


def common_type(*arrays):
    stand_ins = [np.empty(0, x.dtype) if isinstance(x, Tracer) else x for x in arrays]
    return _ask_numpy(np.common_type, *stand_ins)


def min_scalar_type(a, /):
    """The array's dtype; for a 0-d array, the smallest dtype that holds its value."""
    if not isinstance(a, Tracer):
        return _ask_numpy(np.min_scalar_type, a)
    if a.ndim:
        return a.dtype
    if a._value is None or not a._trace.active:
        raise _error(
            ConcretizationError,
            f"numpy.min_scalar_type of a 0-d traced array ({a.aval.str_short()}) depends on "
            "its value, which jit does not know while tracing: pass it as a static argument "
            "(jit(f, static_argnums=...)), or ask outside the traced function",
        )
    return np.min_scalar_type(a._value)


# --------------------------------------------------------------------------------------
# Memory queries


def _memory_query(numpy_function):
    def fn(a, b, /, max_work=None):
        work = {} if max_work is None else {"max_work": max_work}
        if not (isinstance(a, Tracer) or isinstance(b, Tracer)):
            return _ask_numpy(numpy_function, a, b, **work)
        if not (isinstance(a, Tracer) and isinstance(b, Tracer)):
            return False  # a traced array and a constant of the program
        return traced_overlap(a, b, numpy_function, **work)

    fn.__name__ = fn.__qualname__ = numpy_function.__name__
    fn.__doc__ = f"""NumPy's ``{numpy_function.__name__}``, decided from numbax's views (see the
    module's docstring): False for traced arrays of different memories."""
    return fn


may_share_memory = _memory_query(np.may_share_memory)
shares_memory = _memory_query(np.shares_memory)


FUNCTIONS = {
    "can_cast": can_cast,
    "common_type": common_type,
    "may_share_memory": may_share_memory,
    "min_scalar_type": min_scalar_type,
    "result_type": result_type,
    "shares_memory": shares_memory,
}
UFUNCS: dict = {}
