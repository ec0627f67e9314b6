"""The IR of every corpus program: it typechecks, and its JSON form round-trips to a
jaxpr that prints identically and evaluates to the same values."""

from __future__ import annotations

import numpy as np
import pytest
from corpus import CASES, assert_tree_matches, signature_id

import numbax
from numbax import ir
from numbax.api import trace_to_jaxpr


def _trace(case, args):
    closed, _, out_tree, _ = trace_to_jaxpr(case.fn, args)
    return closed, out_tree


def _flat_args(args):
    return [np.asarray(a) for a in numbax.tree_leaves(args)]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_corpus_typechecks_and_round_trips(case, rng):
    for signature in case.signatures:
        where = f"{case} {signature_id(signature)}"
        args = case.arguments(signature, rng)
        closed, out_tree = _trace(case, args)
        ir.typecheck(closed)

        loaded = ir.loads(ir.dumps(closed))
        assert str(loaded) == str(closed), where
        assert ir.dumps(loaded) == ir.dumps(closed), where
        flat = _flat_args(args)
        original = ir.eval_jaxpr(closed.jaxpr, closed.consts, *flat)
        reloaded = ir.eval_jaxpr(loaded.jaxpr, loaded.consts, *flat)
        for k, (a, b) in enumerate(zip(reloaded, original, strict=True)):
            np.testing.assert_array_equal(a, b, err_msg=f"{where} output {k}")
            assert a.dtype == b.dtype, where
        expected = case.oracle(*args)
        assert_tree_matches(
            numbax.tree_unflatten(out_tree, original), expected, case.tolerance, where
        )
