"""Every kernel boundary fusion leaves has a named reason in the pass log.

A boundary is a pair of equations of the fused program (kernels and control flow, at the
top level and inside control-flow bodies) in which one reads what the other writes. The
oracle counts them in the fusion pass's output; the pass log's refusals, per reason, must
add up to that count, and small programs must give the reason their structure implies.
"""

from __future__ import annotations

import numpy as np
import pytest
from corpus import CASES
from passes_util import trace

import numbax
from numbax.api import trace_to_jaxpr
from numbax.ir.core import Jaxpr, Var
from numbax.passes import kernels
from numbax.passes.manager import run_pipeline
from numbax.passes.pipeline import PIPELINE
from numbax.passes.refusals import Refusal
from numbax.passes.rewrite import subjaxprs

_THROUGH_FUSION = PIPELINE[: [stage.name for stage in PIPELINE].index("fusion") + 1]


def boundaries(jaxpr: Jaxpr) -> int:
    """Pairs of equations of ``jaxpr`` (and of its control flow's bodies) where one
    reads a value the other computes."""
    producer = {v: k for k, eqn in enumerate(jaxpr.eqns) for v in eqn.outputs}
    pairs = {
        (producer[a], k)
        for k, eqn in enumerate(jaxpr.eqns)
        for a in eqn.inputs
        if isinstance(a, Var) and a in producer
    }
    inner = sum(
        boundaries(body)
        for eqn in jaxpr.eqns
        if eqn.prim.name != "kernel"
        for body in subjaxprs(eqn)
    )
    return len(pairs) + inner


def fused_with_log(closed):
    return run_pipeline(_THROUGH_FUSION, closed, dump_dir=None, debug_checks=True)


def refusals_of(fn, *args) -> dict[Refusal, int]:
    fused, log = fused_with_log(trace(fn, *args))
    refusals = log.refusals("fusion")
    assert sum(refusals.values()) == boundaries(fused.jaxpr)
    return refusals


def _loss(params, x, y):
    (w1, b1), (w2, b2) = params
    hidden = np.tanh(x @ w1 + b1)
    logits = hidden @ w2 + b2
    logits = logits - logits.max(axis=1, keepdims=True)
    log_probs = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
    return -(log_probs * y).sum() / x.shape[0]


def _mlp(rng):
    f32 = np.float32
    params = [
        (rng.normal(size=(8, 16)).astype(f32), np.zeros(16, f32)),
        (rng.normal(size=(16, 4)).astype(f32), np.zeros(4, f32)),
    ]
    x = rng.normal(size=(5, 8)).astype(f32)
    y = np.eye(4, dtype=f32)[rng.integers(0, 4, 5)]
    return params, x, y


def test_a_training_steps_pass_log_counts_every_refusal_by_reason(rng):
    params, x, y = _mlp(rng)
    lowered = numbax.jit(numbax.value_and_grad(_loss), backend="cpu").lower(params, x, y)
    fused, log = fused_with_log(lowered.jaxpr)
    refused = lowered.pass_log.refusals("fusion")
    assert refused == log.refusals("fusion")
    assert sum(refused.values()) == boundaries(fused.jaxpr) > 0
    # The forward matmuls, the softmax's reductions and the backward matmuls stay apart
    # for the reasons a reader expects.
    assert refused[Refusal.TWO_CONTRACTIONS] >= 2
    assert refused[Refusal.CONTRACTION_AND_REDUCTION] >= 1
    assert Refusal.MISSED not in refused
    (line,) = [str(r) for r in lowered.pass_log if r.name == "fusion"]
    shown = line.split("; refused: ")[1]
    assert shown == ", ".join(
        f"{r.value}={n}" for r, n in sorted(refused.items(), key=lambda item: item[0].value)
    )


def test_a_product_feeding_a_reduction():
    def predict(w, b, x):
        hidden = np.tanh(x @ w + b)
        return hidden.sum(axis=1) / hidden.shape[1]

    args = np.ones((3, 4)), np.zeros(4), np.ones((2, 3))
    assert refusals_of(predict, *args) == {Refusal.CONTRACTION_AND_REDUCTION: 1}


def test_a_computed_matmul_operand_is_read_from_memory():
    def fn(x, w):
        y = x * 2.0
        return y @ w + y

    x = np.ones((4, 8))
    assert refusals_of(fn, x, np.ones((8, 8))) == {Refusal.CONTRACTION_PROLOGUE: 1}


def test_a_computed_value_broadcast_over_another_shape():
    """exp(v) loops over (4,), the sum over (3, 4): two iteration spaces."""
    x, v = np.ones((3, 4)), np.ones(4)
    assert refusals_of(lambda x, v: x + np.exp(v), x, v) == {Refusal.SHAPE: 1}


def test_two_reduction_spaces():
    x = np.ones((3, 4))

    def fn(x):
        centred = x - np.exp(x).sum(axis=1, keepdims=True)  # reduces the rows...
        return centred.sum(axis=0)  # ...and then the columns: a second loop nest

    assert refusals_of(fn, x) == {Refusal.REDUCTION_SPACES: 1}


def test_control_flow_and_opaque_ops():
    def fn(x, i):
        y = numbax.fori_loop(0, 3, lambda k, c: c * 2.0, np.exp(x))
        return np.sort(y) + 1.0

    refused = refusals_of(fn, np.ones(5), 2)
    assert refused == {Refusal.CONTROL_FLOW: 2, Refusal.OPAQUE: 1}


@pytest.mark.parametrize("case", CASES, ids=str)
def test_every_corpus_boundary_has_its_reason(case, rng):
    args = case.arguments(case.signatures[0], rng)
    traced, _, _, _ = trace_to_jaxpr(case.fn, args)
    fused, log = fused_with_log(traced)
    assert sum(log.refusals("fusion").values()) == boundaries(fused.jaxpr)


def test_decide_names_the_rule_that_classify_only_refuses():
    traced = trace(lambda x, w: (x * 2.0) @ w, np.ones((4, 8)), np.ones((8, 8)))
    eqns = traced.jaxpr.eqns
    assert kernels.decide(eqns) is Refusal.CONTRACTION_PROLOGUE
    assert kernels.classify(eqns) is None
    assert kernels.decide([]) is Refusal.EMPTY
    assert all(reason.why for reason in Refusal)
