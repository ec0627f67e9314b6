"""Staged control flow: ``cond``, ``switch``, ``while_loop``, ``fori_loop``, ``scan``.

Each program is checked against the same algorithm as a Python loop over NumPy, run
eagerly (the primitives' reference implementations) and under ``jit`` on every backend
(the ``backend`` fixture: interpreter, CPU, and CUDA under the simulator); the IR side
(printing, JSON, typecheck, shape rules) is checked on the jaxprs they produce.
"""

from __future__ import annotations

import numpy as np
import pytest

import numbax
from numbax import lax
from numbax.ir import PRIMITIVES, Jaxpr, Var
from numbax.ir.control_flow import cond_p
from numbax.ir.errors import ControlFlowError, TypecheckError
from numbax.tracer.core import bind


def interpreted(fun, **kwargs):
    return numbax.jit(fun, backend="interpret", **kwargs)


def both_ways(fun, *args, backend=None):
    """``fun(*args)`` eagerly and under jit on ``backend`` (the interpreter by default);
    they must agree: exactly on the interpreter, which runs the same NumPy code, and to
    rounding (compiled math functions may differ in the last ulp) on compiled backends.
    """
    eager = fun(*args)
    if backend is None:
        jitted = interpreted(fun)(*args)
    else:
        jitted = backend.to_host(numbax.jit(fun, backend=backend)(*args))
    if backend is None or not backend.compiled:
        numbax.tree_map(np.testing.assert_array_equal, eager, jitted)
    else:
        numbax.tree_map(_assert_close, eager, jitted)
    return jitted


def _assert_close(expected, actual):
    actual = np.asarray(actual)
    assert actual.dtype == np.asarray(expected).dtype
    np.testing.assert_allclose(actual, expected, rtol=1e-12, atol=0)


def prim_names(jaxpr: Jaxpr) -> list[str]:
    """Every primitive in ``jaxpr`` and its sub-jaxprs."""
    names = []
    for eqn in jaxpr.eqns:
        names.append(eqn.prim.name)
        for value in eqn.params.values():
            for sub in value if isinstance(value, tuple) else (value,):
                if isinstance(sub, Jaxpr):
                    names += prim_names(sub)
    return names


# ------------------------------------------------------------------------ cond


def relu_or_square(x):
    return numbax.cond(x.sum() > 0, lambda a: a * a, lambda a: np.maximum(a, 0.0) - 1.0, x)


@pytest.mark.parametrize("sign", [1.0, -1.0], ids=["true_branch", "false_branch"])
def test_cond_takes_both_branches(sign, backend):
    x = sign * np.array([0.5, 2.0, -0.25])
    expected = x * x if x.sum() > 0 else np.maximum(x, 0.0) - 1.0
    np.testing.assert_allclose(both_ways(relu_or_square, x, backend=backend), expected)


def test_cond_operands_and_results_are_pytrees_and_closures_are_captured(backend):
    scale = np.float64(3.0)

    def fn(pred, pair):
        return numbax.cond(
            pred,
            lambda p: {"sum": p[0] + p[1] * scale, "first": p[0]},
            lambda p: {"sum": p[0] - p[1], "first": p[1]},
            pair,
        )

    pair = (np.arange(3.0), np.ones(3))
    for pred in (True, False):
        out = both_ways(fn, np.bool_(pred), pair, backend=backend)
        np.testing.assert_allclose(out["sum"], pair[0] + pair[1] * 3 if pred else pair[0] - 1)
        np.testing.assert_allclose(out["first"], pair[0] if pred else pair[1])


def test_cond_with_concrete_predicate_outside_jit_runs_eagerly():
    assert numbax.cond(True, lambda: np.float32(1), lambda: np.float32(2)) == 1
    out = numbax.cond(np.int64(0), lambda x: x + 1, lambda x: x - 1, np.arange(3))
    np.testing.assert_array_equal(out, [-1, 0, 1])


def test_cond_python_scalar_branch_output_takes_the_other_branch_dtype():
    out = interpreted(lambda x: numbax.cond(x > 0, lambda: x, lambda: 0.0))(np.float32(-2))
    assert out.dtype == np.float32 and out == 0


def test_switch_picks_and_clamps_the_index(backend):
    branches = [lambda x: x + 1, lambda x: x * 10, lambda x: -x]
    fn = numbax.jit(lambda i, x: numbax.switch(i, branches, x), backend=backend)
    x = np.arange(3.0)
    for index, expected in [(0, x + 1), (1, x * 10), (2, -x), (7, -x), (-3, x + 1)]:
        np.testing.assert_array_equal(backend.to_host(fn(np.int32(index), x)), expected)


def test_cond_branch_type_mismatch_names_both_types_and_the_line():
    def fn(x):
        return numbax.cond(x > 0, lambda: x, lambda: x.astype(np.float32))  # mismatch

    with pytest.raises(ControlFlowError) as info:
        numbax.make_jaxpr(fn)(np.float64(1.0))
    message = str(info.value)
    assert "(f32[])" in message and "(f64[])" in message
    assert f"{__file__}:{fn.__code__.co_firstlineno + 1}" in message


def test_cond_needs_a_scalar_predicate():
    with pytest.raises(ControlFlowError, match="numpy.where"):
        numbax.make_jaxpr(lambda x: numbax.cond(x > 0, lambda: x, lambda: -x))(np.ones(3))


# ------------------------------------------------------------------------ while


def newton_sqrt(a):
    def keep_going(state):
        x, steps = state
        return (np.abs(x * x - a) > 1e-12 * a) & (steps < 50)

    def improve(state):
        x, steps = state
        return 0.5 * (x + a / x), steps + 1

    return numbax.while_loop(keep_going, improve, (a, 0))


def test_newton_sqrt_with_while_loop(backend):
    a = np.float64(10.0)
    x, steps = a, 0
    while abs(x * x - a) > 1e-12 * a and steps < 50:
        x, steps = 0.5 * (x + a / x), steps + 1
    root, count = both_ways(newton_sqrt, a, backend=backend)
    assert root == x and count == steps
    np.testing.assert_allclose(root, np.sqrt(10.0), rtol=1e-12)


def collatz_like(x, limit):
    # A cond nested in the body of a while_loop: halve even totals, else 3n + 1.
    def body(state):
        n, steps = state
        n = numbax.cond(n % 2 == 0, lambda m: m // 2, lambda m: 3 * m + 1, n)
        return n, steps + 1

    return numbax.while_loop(lambda s: (s[0] != 1) & (s[1] < limit), body, (x, np.int64(0)))


def test_cond_nested_in_while_loop(backend):
    n, steps = 27, 0
    while n != 1 and steps < 200:
        n, steps = (n // 2 if n % 2 == 0 else 3 * n + 1), steps + 1
    out = both_ways(collatz_like, np.int64(27), np.int64(200), backend=backend)
    assert out == (n, steps)
    assert prim_names(numbax.make_jaxpr(collatz_like)(np.int64(27), np.int64(9)).jaxpr)[0] == (
        "while"
    )


def test_while_body_carry_mismatch_names_both_types():
    def fn(x):
        return numbax.while_loop(lambda v: v.sum() < 10, lambda v: v[:2], x)

    with pytest.raises(ControlFlowError, match=r"maps \(f64\[3\]\) to \(f64\[2\]\)"):
        numbax.make_jaxpr(fn)(np.ones(3))


def test_while_cond_must_return_a_bool_scalar():
    with pytest.raises(ControlFlowError, match="bool scalar"):
        numbax.while_loop(lambda v: v, lambda v: v - 1, np.float64(3))


# ------------------------------------------------------------------------- scan


def test_cumulative_sum_with_scan(backend):
    xs = np.arange(1.0, 7.0).reshape(3, 2)

    def cumulative(xs):
        return numbax.scan(lambda total, x: (total + x, total + x), np.zeros(2), xs)

    total, partial = both_ways(cumulative, xs, backend=backend)
    np.testing.assert_array_equal(partial, np.cumsum(xs, axis=0))
    np.testing.assert_array_equal(total, xs.sum(0))


def rnn(params, h0, xs):
    w_h, w_x, b = params

    def cell(h, x):
        h = np.tanh(h @ w_h + x @ w_x + b)
        return h, h.sum()

    return numbax.scan(cell, h0, xs)


def test_rnn_cell_with_scan(rng, backend):
    params = (rng.normal(size=(4, 4)), rng.normal(size=(3, 4)), rng.normal(size=4))
    h0, xs = np.zeros(4), rng.normal(size=(5, 3))
    h, sums = h0, []
    for x in xs:
        h = np.tanh(h @ params[0] + x @ params[1] + params[2])
        sums.append(h.sum())
    final, ys = both_ways(rnn, params, h0, xs, backend=backend)
    np.testing.assert_allclose(final, h, rtol=1e-12)
    np.testing.assert_allclose(ys, sums, rtol=1e-12)


def test_scan_reverse_length_and_pytree_xs(backend):
    xs = {"a": np.arange(4.0), "b": np.arange(8.0).reshape(4, 2)}

    def fn(xs):
        return numbax.scan(
            lambda c, x: (c * 2 + x["a"], (c, x["b"].sum())), np.float64(0), xs, reverse=True
        )

    carry, (cs, sums) = both_ways(fn, xs, backend=backend)
    expected_c, expected_cs = 0.0, [0.0] * 4
    for i in reversed(range(4)):
        expected_cs[i] = expected_c
        expected_c = expected_c * 2 + xs["a"][i]
    assert carry == expected_c
    np.testing.assert_array_equal(cs, expected_cs)
    np.testing.assert_array_equal(sums, xs["b"].sum(1))
    counted = numbax.scan(lambda c, _: (c + 1, None), 0, None, length=6)
    assert counted == (6, None)


def test_scan_must_return_a_pair():
    with pytest.raises(ControlFlowError, match=r"pair \(carry, y\)"):
        numbax.scan(lambda c, x: c + x, 0.0, np.ones(3))


# --------------------------------------------------------------------- fori_loop


def test_fori_loop_with_a_pytree_carry(backend):
    def fn(x):
        def body(i, carry):
            return {"total": carry["total"] + x * i, "count": carry["count"] + 1}

        return numbax.fori_loop(2, 7, body, {"total": np.zeros_like(x), "count": 0})

    x = np.array([1.0, -2.0], np.float32)
    out = both_ways(fn, x, backend=backend)
    np.testing.assert_array_equal(out["total"], x * sum(range(2, 7)))
    assert out["count"] == 5 and out["total"].dtype == np.float32


def test_fori_loop_weak_carry_takes_the_dtype_the_loop_computes_in():
    xs = np.array([0.5, 1.5, 2.5], np.float32)
    out = interpreted(lambda xs: numbax.fori_loop(0, 3, lambda i, c: c + xs[i], 0.0))(xs)
    assert out.dtype == np.float32 and out == xs.sum()


def test_jit_of_a_long_fori_loop_traces_the_body_once(backend):
    calls = []

    def body(i, x):
        calls.append(i)
        return x * 0.5 + 1.0

    def run(steps):
        return lambda x: numbax.fori_loop(0, steps, body, x)

    out = backend.to_host(numbax.jit(run(1000), backend=backend)(np.float64(0.0)))
    assert len(calls) == 1
    x = 0.0
    for _ in range(1000):
        x = x * 0.5 + 1.0
    np.testing.assert_allclose(out, x)
    short = numbax.make_jaxpr(run(10))(np.float64(0.0))
    long = numbax.make_jaxpr(run(1000))(np.float64(0.0))
    assert len(prim_names(short.jaxpr)) == len(prim_names(long.jaxpr))
    assert prim_names(long.jaxpr)[0] == "scan"  # static trip count: reverse-differentiable
    if backend.compiled:
        # What is compiled is the same code but for the trip count (on CUDA the count
        # lives on the host: the kernels are identical), so compile time cannot grow.
        short, long = (
            numbax.jit(run(n), backend=backend).lower(np.float64(0.0)).compile().source
            for n in (10, 1000)
        )
        assert long.replace("1000", "10") == short


def test_fori_loop_with_traced_bounds_is_a_while_loop(backend):
    fn = lambda n, x: numbax.fori_loop(0, n, lambda i, acc: acc + i * x, np.zeros_like(x))
    closed = numbax.make_jaxpr(fn)(np.int32(4), np.ones(2))
    assert "while" in prim_names(closed.jaxpr) and "scan" not in prim_names(closed.jaxpr)
    jitted = numbax.jit(fn, backend=backend)
    for n, expected in [(4, [6.0, 6.0]), (-1, [0.0, 0.0])]:
        np.testing.assert_array_equal(backend.to_host(jitted(np.int32(n), np.ones(2))), expected)


def test_lax_map_stacks_a_function_of_each_row(backend):
    xs = {"a": np.arange(6.0).reshape(3, 2), "b": np.array([1, -2, 3])}

    def per_row(row):
        return {"norm": np.sqrt(row["a"] @ row["a"]), "scaled": row["a"] * row["b"]}

    def fn(xs):
        return lax.map(per_row, xs)

    out = both_ways(fn, xs, backend=backend)
    expected = [per_row({"a": a, "b": b}) for a, b in zip(xs["a"], xs["b"], strict=True)]
    np.testing.assert_allclose(out["norm"], [e["norm"] for e in expected], rtol=1e-15)
    np.testing.assert_array_equal(out["scaled"], np.stack([e["scaled"] for e in expected]))
    assert prim_names(numbax.make_jaxpr(fn)(xs).jaxpr).count("scan") == 1


def test_lax_namespace_has_jax_spelling():
    assert lax.fori_loop(0, 3, lambda i, c: c + i, 0) == 3
    assert lax.cond is numbax.cond and lax.scan is numbax.scan
    assert lax.while_loop is numbax.while_loop and lax.switch is numbax.switch


# ------------------------------------------------------------------------- the IR


def nested_program(x):
    def body(i, c):
        return numbax.cond(c.sum() > 3, lambda v: v * 0.5, lambda v: v + x * i, c)

    c = numbax.fori_loop(0, 4, body, np.zeros_like(x))
    c = numbax.while_loop(lambda v: v.max() < 10, lambda v: v * 2 + 1, c)
    return numbax.scan(lambda h, y: (h + y, h * y), c, np.stack([x, x]))


def test_printer_json_and_typecheck_recurse_into_sub_jaxprs():
    x = np.array([0.5, 1.0, 2.0])
    closed = numbax.make_jaxpr(nested_program)(x)
    numbax.typecheck(closed)
    text = str(closed)
    assert "cond[branches=(\n" in text and "while[cond_jaxpr=\n" in text
    assert "scan[jaxpr=\n" in text and ", \n" not in text
    loaded = numbax.ir.loads(numbax.ir.dumps(closed))
    assert str(loaded) == text
    expected = nested_program(x)
    got = numbax.ir.eval_jaxpr(loaded.jaxpr, loaded.consts, x)
    for want, have in zip(numbax.tree_leaves(expected), got, strict=True):
        np.testing.assert_array_equal(have, want)


def test_typecheck_finds_a_broken_branch():
    closed = numbax.make_jaxpr(relu_or_square)(np.ones(3))
    cond_eqn = next(e for e in closed.eqns if e.prim is cond_p)
    branch = cond_eqn.params["branches"][0]
    wrong = Var(numbax.ShapedArray((3,), np.float32))
    branch.eqns[-1].outputs[0] = wrong
    branch.outvars[0] = wrong
    with pytest.raises(TypecheckError):
        numbax.typecheck(closed)


def test_shape_rules_check_branch_and_body_types():
    closed = numbax.make_jaxpr(lambda x: (x + 1.0, x * 2.0))(np.float64(1))
    jaxpr = closed.jaxpr
    one = Jaxpr([], jaxpr.invars, jaxpr.eqns, jaxpr.outvars[:1])
    with pytest.raises(TypecheckError, match="branch 1 returns"):
        bind(cond_p, np.int32(0), np.float64(1), branches=(one, jaxpr))
    with pytest.raises(TypecheckError, match="body_jaxpr returns"):
        bind(
            PRIMITIVES["while"],
            np.float64(1),
            cond_jaxpr=numbax.make_jaxpr(lambda x: x > 0)(np.float64(1)).jaxpr,
            body_jaxpr=jaxpr,
            cond_nconsts=0,
            body_nconsts=0,
        )
    with pytest.raises(TypecheckError, match="leading dimension 3"):
        bind(
            PRIMITIVES["scan"],
            np.ones(2),
            jaxpr=one,
            length=3,
            reverse=False,
            num_consts=0,
            num_carry=0,
        )
