"""The cpu backend's table of opaque emitters: how each op that fusion leaves alone (data
movement and indexing, callbacks, linear algebra, FFT, collectives) is written into the
program, one op per kernel.

``EMITTERS[prim](program, eqn, input expressions, output name) -> lines``. The modules
that own the emitters register them here with ``@EMITTERS.rule(...)``: ``opaque.py``
(data movement and indexing), ``callbacks.py``, ``linalg.py``, ``fft.py`` and
``collectives.py``; ``opaque`` imports them all, so its ``EMITTERS`` is complete. The
table lives apart from them so that each imports it without importing the others.
"""

from __future__ import annotations

from ...ir.primitive import Pattern
from ...ir.rules import RuleTable

# Every opaque and injective op is written by an emitter of its own; the other patterns
# are written inside loop kernels (elementwise, broadcast, reduction), by the contraction
# writer, or as control flow (``control.WRITERS``).
EMITTERS = RuleTable(
    "cpu opaque emitters",
    not_applicable=lambda prim: prim.pattern not in (Pattern.OPAQUE, Pattern.INJECTIVE),
)
