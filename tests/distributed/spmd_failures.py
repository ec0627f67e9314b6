"""Run under ``mpiexec -n N`` with one argument, what to get wrong:

- ``raise``: process 1 raises while the others wait in a collective; the exception hook
  of ``numbax.distributed`` must print the error and abort every process.
- ``mismatch-interpret`` / ``mismatch-cpu``: process 0 sums 3 numbers, the others 4,
  under ``NUMBAX_MPI_CHECK=1``: every process must raise ``CollectiveMismatchError``
  instead of summing garbage or hanging.
"""

from __future__ import annotations

import sys

import numpy as np

import numbax
import numbax.distributed as nd

RANK = nd.process_index()
what = sys.argv[1]
if what == "raise":
    if RANK == 1:
        raise ValueError("process one fails on purpose")
    nd.psum(np.ones(3))  # the others wait here until the abort ends them
    print("UNREACHABLE: the collective returned")
else:
    backend = what.split("-")[1]
    x = np.ones(3 if RANK == 0 else 4)
    numbax.jit(lambda x: nd.psum(x) + 1.0, backend=backend)(x)
    print("UNREACHABLE: the mismatched collective returned")
