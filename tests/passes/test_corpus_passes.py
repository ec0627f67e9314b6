"""Every corpus program, optimised and fused, evaluates to what the traced program
does, typechecks after every pass and keeps the kernel contract."""

from __future__ import annotations

import numpy as np
import pytest
from corpus import CASES, signature_id
from passes_util import assert_same_values

import numbax
from numbax import passes
from numbax.api import trace_to_jaxpr
from numbax.passes.verify import check_fused


@pytest.mark.parametrize("case", CASES, ids=str)
def test_corpus_program_keeps_its_meaning(case, rng):
    for signature in case.signatures:
        args = case.arguments(signature, rng)
        traced, _, _, _ = trace_to_jaxpr(case.fn, args)
        fused, _ = passes.optimize(traced, debug_checks=True, name=case.name)
        check_fused(fused)
        flat = [np.asarray(a) for a in numbax.tree_leaves(args)]
        # Only merged sums of sums may round differently.
        tolerance = 1e-5 * case.tolerance
        try:
            assert_same_values(traced, fused, flat, rtol=tolerance, atol=tolerance)
        except AssertionError as err:
            raise AssertionError(f"{case} {signature_id(signature)}: {err}") from None
