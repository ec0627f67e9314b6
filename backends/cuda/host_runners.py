"""The ops the host runs between the kernels, one runner per primitive.

``RUNNERS[prim](executable, step, operands, stream) -> results``: control flow (the host
runs the blocks of its bodies, ``control.py``), callbacks, and the library calls no
kernel computes (sort, linear algebra and FFT through CuPy, collectives through NCCL or
the host). The modules that own them register them here with ``@RUNNERS.rule(...)``;
``control`` imports them all, so its ``RUNNERS`` is complete.
"""

from __future__ import annotations

from ...ir.primitive import Pattern, Primitive
from ...ir.rules import RuleTable
from .indexing import INDEX_RULES

# The ops that run on the device although a host step could: the kernel itself, the calls
# spliced into kernels, and the opaque ops that are kernels of their own.
ON_THE_DEVICE = frozenset(
    {"kernel", "jit_call", "checkpoint", "custom_vjp_call", "custom_jvp_call", "cumsum", "scatter"}
)


def _computed_on_the_device(prim: Primitive) -> bool:
    if prim.pattern not in (Pattern.CONTROL, Pattern.OPAQUE):
        return True  # elementwise, index maps, reductions and contractions are kernels
    return prim.name in ON_THE_DEVICE or prim in INDEX_RULES


RUNNERS = RuleTable("cuda host runners", not_applicable=_computed_on_the_device)
