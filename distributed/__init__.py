"""``numbax.distributed``: SPMD programs over MPI.

Every process runs the same script on its own shard of the data (``mpiexec -n 4 python
train.py``); collectives combine what the processes hold. They are primitives of the IR
(``ir/collectives.py``), so they compile into the program (the cpu backend calls MPI from
inside the compiled code, ``backends/cpu/collectives.py``; the cuda backend calls NCCL
through CuPy where present, else stages through MPI, ``backends/cuda/collectives.py``),
differentiate (``transforms/collective_rules.py``) and batch like any other. See
docs/distributed.md.

>>> import numpy as np, numbax, numbax.distributed as nd
>>> step = numbax.jit(lambda g: nd.pmean(g))
>>> step(np.full(3, 2.0))
array([2., 2., 2.])
"""

from .. import transforms as _transforms  # noqa: F401  (the rule tables the rules join)
from ..backends.cpu import collectives as _cpu_collectives  # noqa: F401  (the MPI imports)
from ..transforms import collective_rules as _collective_rules  # noqa: F401
from .collectives import (
    all_gather,
    all_to_all,
    axis_index,
    broadcast,
    pmax,
    pmean,
    pmin,
    ppermute,
    psum,
    psum_scatter,
    reduce_scatter,
)
from .runtime import communicator, initialize, process_count, process_index

_cpu_collectives.register()

__all__ = [
    "all_gather",
    "all_to_all",
    "axis_index",
    "broadcast",
    "communicator",
    "initialize",
    "pmax",
    "pmean",
    "pmin",
    "ppermute",
    "process_count",
    "process_index",
    "psum",
    "psum_scatter",
    "reduce_scatter",
]
