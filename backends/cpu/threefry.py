"""``threefry2x32``'s helpers for the cpu backend: ``backends/threefry.py``'s, compiled
with ``numba.njit``.

Numba types and lowers each helper once per process, the first time a program calls
it (not at import), instead of some 180 equations of rounds in every program that
draws. A program that calls one is cached on disk with the helper's code in it; the
helpers are not cached themselves: Numba's cache key of a closure pickles the functions
it calls, which differ in every process.

``forceinline``: LLVM inlines the helper into the caller's loop, which then vectorises.
As a call, ``normal(key, (2**20,))`` ran 2.1x (float64) and 1.5x (float32) as long as
with the rounds written out in primitives; inlined, 0.6x and 0.46x, and the first call
compiles no slower (interleaved medians, a loaded 2-core machine).

Generated code calls them through ``intrinsics``: ``nbx.threefry2x32_xor(k0, k1, c0, c1)``.
"""

from __future__ import annotations

from numba import njit

from ..threefry import threefry_functions


def _compiled(signature):
    return njit(error_model="numpy", no_cfunc_wrapper=True, forceinline=True)


(
    threefry2x32_word0,
    threefry2x32_word1,
    threefry2x32_xor,
    threefry2x32_bits64,
) = threefry_functions(_compiled)
