"""glibc's heap keeps the memory a compiled program frees, for the next call to reuse.

A compiled program allocates its outputs and temporaries on every call (NRT, then
``malloc``) and frees them on return. glibc returns freed memory to the OS past two
thresholds, which it raises as it sees large blocks freed (up to 32 MiB to map a block of
its own, twice that to trim the heap's top). Until a process has freed a 32 MiB block, a
program whose temporaries add up to a few MiB has them unmapped or trimmed on return and
page-faulted in again, zero-filled by the kernel, on the next call: hdiff's four kernels at
64x64x60 float64 took 2.8 ms a call that way and 0.52 ms with the memory kept, and
hand-written Numba loops allocating the same temporaries paid the same. Which state a
process is in depended on what it had freed before, so a kernel's speed did too.

``keep_freed_memory`` sets the two thresholds to where glibc's own rule ends (32 MiB and
64 MiB), once, at the first compile: a process then keeps up to 64 MiB of freed heap and
maps blocks of 32 MiB or more on their own, as any process does after its first large
free. ``NUMBAX_HEAP_TUNING=0`` leaves glibc's heap as it is; so does any C library but
glibc's.
"""

from __future__ import annotations

import ctypes
import functools
import platform

from ...config import config

# mallopt's parameters (malloc.h) and the values glibc's dynamic thresholds stop at on a
# 64-bit machine (DEFAULT_MMAP_THRESHOLD_MAX, and twice it for the trim threshold).
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD_BYTES = 32 << 20
TRIM_THRESHOLD_BYTES = 2 * MMAP_THRESHOLD_BYTES


@functools.cache
def keep_freed_memory() -> str:
    """Set glibc's thresholds (see the module doc) once; says what was done."""
    if not config.heap_tuning:
        return "left as it is: NUMBAX_HEAP_TUNING=0"
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return "left as it is: not glibc"
    mallopt = _mallopt()
    done = mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES) and mallopt(
        M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES
    )
    return "kept: thresholds 32 MiB and 64 MiB" if done else "left as it is: mallopt refused"


def _mallopt():
    """The process's own C library's ``mallopt``."""
    mallopt = ctypes.CDLL(None).mallopt
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return mallopt
