"""A float's conversion to an integer type as generated source, shared by the backends.

NumPy's cast on x86-64 (``dtypes.float_to_integer_steps``): through a signed ``wide``
integer by truncation where the float lies in its range, else its smallest, then wrapped
into the target. Each backend spells a select, a conjunction, a constant and a cast its
own way (the cpu backend in selects without branches, the cuda backend in conditional
expressions) and passes them in.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..ir import dtypes


def float_to_integer(
    x: str,
    source: np.dtype,
    target: np.dtype,
    *,
    select: Callable[[str, str, str], str],
    both: Callable[[str, str], str],
    constant: Callable[[object, np.dtype], str],
    cast: Callable[[np.dtype, str], str],
) -> str:
    """The source converting ``x`` (of float ``source``) to integer ``target``."""
    wide, split = dtypes.float_to_integer_steps(target)
    low, high, invalid = dtypes.float_to_integer_bounds(wide)
    if split is not None:
        high_half = f"({x} >= {constant(split, source)})"
        x = select(high_half, f"{x} - {constant(split, source)}", x)
    in_range = both(f"{x} >= {constant(low, source)}", f"{x} < {constant(high, source)}")
    value = select(in_range, cast(wide, x), constant(invalid, wide))
    if split is not None:
        flip = select(high_half, constant(invalid, wide), constant(0, wide))
        value = f"({value} ^ {flip})"
    return value if target == wide else cast(target, value)
