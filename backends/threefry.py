"""The ``threefry2x32`` primitive's helpers, one per ``output``, for the backends that
compile through Numba.

``threefry_functions(compile)`` compiles the IR's own algorithm (``ir/threefry.py``'s
``encrypt`` and ``COMBINE``: integer arithmetic only) for one target: ``compile`` is the
decorator that compiles a function there, given its signature, as ``complex_functions``'
is. The cpu backend compiles them with ``numba.njit`` (``cpu/threefry.py``); the cuda
backend into the kernels that call them, or runs them as Python under the simulator
(``cuda/devicelib.py``). Each helper takes the four int64 operands and returns the int64
result, so a kernel calls one helper per equation and Numba types and lowers the cipher
once per process, not once per program.
"""

from __future__ import annotations

from typing import NamedTuple

from numba import int64, types

from ..ir import threefry


class ThreefryFunctions(NamedTuple):
    word0: object
    word1: object
    xor: object
    bits64: object


def threefry_functions(compile) -> ThreefryFunctions:
    """The helper of every ``output`` of ``threefry2x32``, compiled by ``compile``."""
    operands = (int64, int64, int64, int64)
    encrypt = compile(types.UniTuple(int64, 2)(*operands))(threefry.encrypt)

    def helper(output: str):
        combine = compile(int64(int64, int64))(threefry.COMBINE[output])

        def threefry2x32(key0, key1, count0, count1):
            x0, x1 = encrypt(key0, key1, count0, count1)
            return combine(x0, x1)

        threefry2x32.__name__ = threefry2x32.__qualname__ = f"threefry2x32_{output}"
        return compile(int64(*operands))(threefry2x32)

    return ThreefryFunctions(*(helper(output) for output in threefry.OUTPUTS))
