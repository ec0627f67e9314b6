"""Products out of scans (``passes.scan_products``): a product of scanned slices and
constants computed before the loop, a carry that only accumulates a product or a sum
computed after it. The interpreter on the traced program is the oracle for each
rewritten program (every pass typechecked); the compiled gradients of an RNN are checked
against it and against central finite differences in float64, tiered and not."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from passes_util import assert_same_values, trace

import numbax
from numbax import passes
from numbax.passes import contractions, scan_products
from numbax.passes.manager import run_pipeline
from numbax.tracer import lax
from numbax.tracer.control_flow import scan
from numbax.tree_util import tree_leaves

_CLEANUP = next(i for i, stage in enumerate(passes.PIPELINE) if stage.name == "cleanup")
_UNTIL_CLEANUP = passes.PIPELINE[: _CLEANUP + 1]

rng = np.random.default_rng(7)
STEPS, BATCH, INPUTS, UNITS = 5, 3, 4, 6
XS = rng.standard_normal((STEPS, BATCH, INPUTS))
PARAMS = (
    rng.standard_normal((INPUTS, UNITS)) * 0.5,
    rng.standard_normal((UNITS, UNITS)) * 0.5,
    rng.standard_normal(UNITS) * 0.1,
)


def cleaned(fn, *args, rtol=1e-12):
    """``fn`` traced and cleaned (the pass runs in the cleanup group), its values checked
    against the traced program's; the program and the cleanup's counts."""
    traced = trace(fn, *args)
    out, log = run_pipeline(_UNTIL_CLEANUP, traced, dump_dir=None, debug_checks=True)
    assert_same_values(traced, out, tree_leaves(args), rtol=rtol, atol=1e-12)
    counts = {}
    for record in log.records:
        if record.name == "scan_products":
            for key, value in record.changes.items():
                counts[key] = counts.get(key, 0) + value
    return out, counts


def scans(jaxpr):
    return [eqn for eqn in jaxpr.eqns if eqn.prim.name == "scan"]


def body_prims(scan_eqn) -> list[str]:
    return [eqn.prim.name for eqn in scan_eqn.params["jaxpr"].eqns]


def rnn_loss(params, xs, reverse=False):
    w_x, w_h, b = params

    def cell(h, x):
        h = np.tanh(x @ w_x + h @ w_h + b)
        return h, h

    _, states = scan(cell, np.zeros((xs.shape[1], w_h.shape[0])), xs, reverse=reverse)
    return np.sum(states * states)


def test_the_input_projection_runs_once_before_the_loop():
    out, counts = cleaned(rnn_loss, PARAMS, XS)
    assert counts["products_hoisted_from_scans"] == 1
    (loop,) = scans(out.jaxpr)
    assert body_prims(loop).count("dot_general") == 1  # h @ w_h stays: it reads the carry
    products = [e for e in out.jaxpr.eqns if e.prim.name == "dot_general"]
    assert [p.outputs[0].aval.shape for p in products] == [(STEPS, BATCH, UNITS)]


@pytest.mark.parametrize("reverse", [False, True])
def test_the_weight_gradients_are_summed_after_the_loop(reverse):
    grad = numbax.grad(lambda p, xs: rnn_loss(p, xs, reverse))
    out, counts = cleaned(grad, PARAMS, XS, rtol=1e-10)
    assert counts["sums_sunk_from_scans"] == 3  # w_x's, w_h's and b's gradients
    backward = scans(out.jaxpr)[-1]
    carried = backward.params["jaxpr"].invars[
        backward.params["num_consts"] : backward.params["num_consts"] + backward.params["num_carry"]
    ]
    assert [v.aval.shape for v in carried] == [(BATCH, UNITS)]  # the state's cotangent only
    assert body_prims(backward).count("dot_general") == 1  # dh @ w_h.T
    # After the loop, each weight gradient is one product over every iteration.
    weights = {(INPUTS, UNITS), (UNITS, UNITS)}
    depths = [
        e.inputs[0].aval.shape[0]
        for e in out.jaxpr.eqns
        if e.prim.name == "dot_general" and e.outputs[0].aval.shape in weights
    ]
    assert depths == [STEPS, STEPS]


def central_differences(f, params, xs, step=1e-6):
    grads = []
    for k, p in enumerate(params):
        g = np.zeros_like(p)
        for index in np.ndindex(p.shape):
            up = [q.copy() for q in params]
            down = [q.copy() for q in params]
            up[k][index] += step
            down[k][index] -= step
            g[index] = (f(tuple(up), xs) - f(tuple(down), xs)) / (2 * step)
        grads.append(g)
    return grads


def numpy_rnn_loss(params, xs):
    w_x, w_h, b = params
    h = np.zeros((xs.shape[1], w_h.shape[0]))
    total = 0.0
    for x in xs:
        h = np.tanh(x @ w_x + h @ w_h + b)
        total += np.sum(h * h)
    return total


@pytest.mark.parametrize("tiered", [True, False])
def test_compiled_rnn_gradients_match_finite_differences(tiered):
    step = numbax.jit(numbax.value_and_grad(rnn_loss), tiered=tiered)
    want = central_differences(numpy_rnn_loss, PARAMS, XS)
    params, xs = tuple(p.copy() for p in PARAMS), XS.copy()
    for _ in range(2):  # tiered: the first call interpreted, then compiled code
        value, grads = step(params, xs)
        np.testing.assert_allclose(value, numpy_rnn_loss(PARAMS, XS), rtol=1e-12)
        for got, expected in zip(grads, want, strict=True):
            np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-8)
            got[...] = np.nan  # results are the caller's: the next call's are new
        for arg, original in zip((*params, xs), (*PARAMS, XS), strict=True):
            np.testing.assert_array_equal(arg, original)
        step.wait_compiled()


def test_rnn_gradients_on_each_compiled_backend(compiled_backend):
    step = numbax.jit(numbax.value_and_grad(rnn_loss), backend=compiled_backend)
    value, grads = compiled_backend.to_host(step(PARAMS, XS))
    np.testing.assert_allclose(value, numpy_rnn_loss(PARAMS, XS), rtol=1e-12)
    want = central_differences(numpy_rnn_loss, PARAMS, XS)
    for got, expected in zip(grads, want, strict=True):
        np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-8)


def test_a_product_of_two_slices_is_one_batched_product():
    def fn(a, b):
        return scan(lambda c, ab: (c + 1.0, ab[0] @ ab[1]), 0.0, (a, b))[1]

    a, b = rng.standard_normal((STEPS, 2, 3)), rng.standard_normal((STEPS, 3, 4))
    out, counts = cleaned(fn, a, b)
    assert counts["products_hoisted_from_scans"] == 1
    assert "dot_general" not in body_prims(scans(out.jaxpr)[0])


def test_a_slice_on_the_right_of_a_batched_product_keeps_the_iterations_first():
    numbers = (((2,), (1,)), ((0,), (0,)))

    def fn(w, xs):
        return scan(lambda c, x: (c, lax.dot_general(w, x, numbers)), 0.0, xs)[1]

    w, xs = rng.standard_normal((2, 3, 4)), rng.standard_normal((STEPS, 2, 4, 5))
    out, counts = cleaned(fn, w, xs)
    assert counts["products_hoisted_from_scans"] == 1
    assert any(e.prim.name == "transpose" for e in out.jaxpr.eqns)


def test_integer_sums_are_exact_and_an_empty_scan_leaves_the_initial_carry():
    def fn(init, xs):
        return scan(lambda acc, x: (acc + x.T @ x, None), init, xs)[0]

    init = np.arange(9, dtype=np.int64).reshape(3, 3)
    xs = rng.integers(-5, 5, (STEPS, 2, 3))
    out, counts = cleaned(fn, init, xs)
    assert counts["sums_sunk_from_scans"] == 1
    assert scans(out.jaxpr) == []  # nothing left to loop over
    np.testing.assert_array_equal(
        numbax.jit(fn, tiered=False)(init, xs), init + sum(x.T @ x for x in xs)
    )
    empty = xs[:0]
    np.testing.assert_array_equal(numbax.jit(fn, tiered=False)(init, empty), init)


def test_what_is_not_only_summed_stays_in_the_loop():
    def read_elsewhere(xs):  # the carry is read by a y too
        return scan(lambda acc, x: (acc + x.T @ x, acc * 2.0), np.zeros((3, 3)), xs)

    def of_a_constant(w, xs):  # w's product sums nothing that varies on its own
        return scan(lambda acc, x: (acc + w @ x, None), np.zeros((3, 2)), xs)[0]

    def term_read_elsewhere(xs):
        def step(acc, x):
            term = x.T @ x
            return acc + term, term

        return scan(step, np.zeros((3, 3)), xs)

    xs = rng.standard_normal((STEPS, 3, 2))
    for fn, args in (
        (read_elsewhere, (xs.transpose(0, 2, 1),)),
        (of_a_constant, (rng.standard_normal((3, 3)), xs)),
        (term_read_elsewhere, (xs.transpose(0, 2, 1),)),
    ):
        _, counts = cleaned(fn, *args)
        assert "sums_sunk_from_scans" not in counts, fn.__name__


def test_stacked_values_past_the_limit_stay_in_the_loop(monkeypatch):
    monkeypatch.setattr(scan_products, "STACKED_ELEMENTS", STEPS * BATCH * UNITS - 1)
    grad = numbax.grad(rnn_loss)
    out, counts = cleaned(grad, PARAMS, XS, rtol=1e-10)
    assert counts == {}


def test_a_summed_batched_product_is_one_gemm_after_the_loop():
    def fn(xs):  # a dense layer's weight gradient over a sequence, step by step
        step = lambda acc, x: (acc + np.einsum("bhk,bho->bko", x, x).sum(axis=0), None)  # noqa: E731
        return scan(step, np.zeros((3, 3)), xs)[0]

    xs = rng.standard_normal((STEPS, 2, 4, 3))
    out, counts = cleaned(fn, xs, rtol=1e-10)
    assert counts == {"sums_sunk_from_scans": 1}
    assert scans(out.jaxpr) == []
    folded, changes = contractions.run(out)
    assert changes["batch_sums_folded"] == 1
    (product,) = [e for e in folded.jaxpr.eqns if e.prim.name == "dot_general"]
    assert product.params["dimension_numbers"][1] == ((), ())  # iterations and batch contracted
    assert_same_values(trace(fn, xs), folded, [xs], rtol=1e-10, atol=1e-12)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    length=st.sampled_from([0, 1, 4]),
    reverse=st.booleans(),
    term=st.sampled_from(["slices", "computed", "batched_sum", "constant", "reduction"]),
    keeps_carry=st.booleans(),
    hoisted_y=st.booleans(),
    reads_state=st.booleans(),
)
def test_random_scans_keep_their_meaning(
    length, reverse, term, keeps_carry, hoisted_y, reads_state
):
    """Scans that accumulate a product or a sum of slices, of computed values or of a
    constant, read by the carry or not, with products of slices and constants as ``ys``:
    the cleaned program (whatever was moved out) computes what the traced one does."""
    a = rng.standard_normal((length, 2, 3))
    b = rng.standard_normal((length, 3, 2))
    w = rng.standard_normal((3, 3))

    def fn(a, b, w):
        def step(carry, ab):
            acc, h = carry
            x, y = ab
            if term == "slices":
                summed = x @ y
            elif term == "computed":
                summed = np.tanh(x) @ (y * 2.0)
            elif term == "batched_sum":
                summed = np.einsum("ik,kj->ikj", x, y).sum(axis=1)
            elif term == "constant":
                summed = x @ w @ y
            else:
                summed = np.sum(x * y.T, axis=1)[:, None] + np.zeros((2, 2))
            if reads_state:
                summed = summed + h @ w[:, :2]
            new_acc = acc * 0.5 + summed if keeps_carry else acc + summed
            new_h = np.tanh(h @ w + x)
            out = x @ w if hoisted_y else h
            return (new_acc, new_h), out

        init = (np.ones((2, 2)), np.zeros((2, 3)))
        return scan(step, init, (a, b), reverse=reverse)

    cleaned(fn, a, b, w, rtol=1e-10)
