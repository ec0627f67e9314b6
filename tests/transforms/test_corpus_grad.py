"""The shared corpus's differentiable programs: jvp and vjp against finite differences.

Each ``grad``-tagged case is differentiated at its all-float signatures, in float64 (a
float32 signature is promoted: finite differences need the precision); the finite
differences are taken of the case's NumPy oracle.
"""

from __future__ import annotations

import corpus
import numpy as np
import pytest
from finite_differences import check_derivatives

MAX_SIGNATURES = 2
CASES = [
    (case, signature)
    for case in corpus.cases("grad")
    for signature in case.grad_signatures[:MAX_SIGNATURES]
]


@pytest.mark.parametrize(
    ("case", "signature"), CASES, ids=[f"{c.name}-{corpus.signature_id(s)}" for c, s in CASES]
)
def test_corpus_case_derivatives(case, signature, rng):
    args = [np.asarray(a, np.float64) for a in case.arguments(signature, rng)]
    check_derivatives(case.fn, args, rng, reference=case.oracle)
