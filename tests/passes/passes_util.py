"""Helpers shared by the pass tests: trace a function, run one pass or the pipeline,
compare a program's values with the traced one's (the interpreter is the oracle)."""

from __future__ import annotations

from collections import Counter

import numpy as np

import numbax
from numbax import ir, passes
from numbax.ir.core import ClosedJaxpr
from numbax.passes import fusion
from numbax.passes.inline import inline_calls
from numbax.passes.kernels import classify


def trace(fn, *args) -> ClosedJaxpr:
    return numbax.make_jaxpr(fn)(*args)


def run_pass(module, closed: ClosedJaxpr) -> tuple[ClosedJaxpr, dict]:
    """One pass (a module with ``run``), typechecked."""
    out, counts = module.run(closed)
    ir.typecheck(out)
    return out, counts


def after(module, fn, *args) -> str:
    """The printed program after tracing ``fn`` and running one pass over it."""
    out, _ = run_pass(module, trace(fn, *args))
    return str(out)


def optimize(fn, *args):
    return passes.optimize(trace(fn, *args), debug_checks=True)


def evaluate(closed: ClosedJaxpr, *args) -> list[np.ndarray]:
    with np.errstate(all="ignore"):  # matmuls of NaN and inf warn; the values are the test
        return ir.eval_jaxpr(closed.jaxpr, closed.consts, *[np.asarray(a) for a in args])


def assert_same_values(before: ClosedJaxpr, after: ClosedJaxpr, args, rtol=1e-12, atol=0.0):
    """``after`` computes what ``before`` does (NaNs match NaNs; dtypes and shapes exact)."""
    expected, actual = evaluate(before, *args), evaluate(after, *args)
    assert len(expected) == len(actual)
    for k, (want, got) in enumerate(zip(expected, actual, strict=True)):
        assert got.dtype == want.dtype and got.shape == want.shape, f"output {k}"
        if want.dtype.kind in "fc":
            np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=f"output {k}")
        else:
            np.testing.assert_array_equal(got, want, err_msg=f"output {k}")


def assert_bitwise_equal(before: ClosedJaxpr, after: ClosedJaxpr, args):
    """Same values and the same signs of zeros; NaN where NaN. (A NaN's sign bit is no
    value: IEEE 754 leaves it unspecified for arithmetic, and ``-1 * x`` and ``-x``
    differ in it on x86.)"""
    for want, got in zip(evaluate(before, *args), evaluate(after, *args), strict=True):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)
        numbers = ~np.isnan(want)
        np.testing.assert_array_equal(np.signbit(got[numbers]), np.signbit(want[numbers]))


def kernels(fused: ClosedJaxpr) -> list:
    return [e for e in fused.eqns if e.prim.name == "kernel"]


def kinds(fused: ClosedJaxpr) -> list[str]:
    return [e.params["kind"] for e in kernels(fused)]


def prim_names(jaxpr) -> list[str]:
    """Primitive names of every equation, kernel bodies included."""
    names = []
    for eqn in jaxpr.eqns:
        names.append(eqn.prim.name)
        if eqn.prim.name == "kernel":
            names += prim_names(eqn.params["jaxpr"])
    return names


def joinable_neighbours(fused: ClosedJaxpr) -> list[tuple[str, str]]:
    """Pairs of kernels, at least one elementwise, where one's outputs are read only by
    the other and the two would make one legal kernel without a cycle: fusion missed a
    merge. Legality is the fusion pass's own (``classify``, and the path check)."""
    eqns = kernels(fused)
    readers: dict = {}
    for i, eqn in enumerate(eqns):
        for var in eqn.inputs:
            readers.setdefault(var, set()).add(i)
    outvars = {v for v in fused.jaxpr.outvars if isinstance(v, ir.Var)}
    missed = []
    for producer in eqns:
        consumers = set().union(*(readers.get(v, set()) for v in producer.outputs))
        if len(consumers) != 1 or any(v in outvars for v in producer.outputs):
            continue
        (j,) = consumers
        consumer = eqns[j]
        if "elementwise" not in (producer.params["kind"], consumer.params["kind"]):
            continue
        if _legal_merge(fused, producer, consumer):
            missed.append((producer.params["name"], consumer.params["name"]))
    return missed


def _legal_merge(fused, producer, consumer) -> bool:
    """Unfuse the two kernels back into their equations and ask the fusion pass's rules."""
    pair = ir.Jaxpr(
        fused.jaxpr.constvars,
        fused.jaxpr.invars,
        [producer, consumer],
        [v for e in (producer, consumer) for v in e.outputs],
    )
    inlined = inline_calls(pair, Counter())
    spec = classify(inlined.eqns)
    if spec is None or spec.kind == "opaque":
        return False
    partition = fusion.Partition(fused.jaxpr)
    a, b = fused.eqns.index(producer), fused.eqns.index(consumer)
    return not (partition._reaches(a, b) or partition._reaches(b, a))
