"""Passes over control flow: constant predicates folded (``control_flow``), loop
invariants hoisted (``loop_invariants``), dead loop state dropped (``loop_dce``), and
the existing DCE and fusion inside bodies. Each with the printed IR before and after,
random programs with loops that must keep their meaning (the interpreter on the traced
program is the oracle; every pass typechecks), and a ``fori_loop`` whose fused
program does not grow with its trip count."""

from __future__ import annotations

import functools
import textwrap

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from passes_util import assert_same_values, run_pass, trace

import numbax
from numbax import numpy as xnp
from numbax import passes
from numbax.passes import control_flow, dce, loop_dce, loop_invariants
from numbax.passes.manager import run_pipeline
from numbax.passes.verify import check_fused
from numbax.tracer import lax
from numbax.tracer.control_flow import cond, fori_loop, scan, switch, while_loop

# The passes up to and including the cleanup group (inline, narrow floats, cleanup).
_CLEANUP = next(i for i, stage in enumerate(passes.PIPELINE) if stage.name == "cleanup")
_UNTIL_CLEANUP = passes.PIPELINE[: _CLEANUP + 1]

x3 = np.array([0.5, -1.0, 2.0])
y3 = np.array([1.5, 0.25, -0.75])


def after(modules, fn, *args) -> str:
    """The printed program after tracing ``fn`` and running ``modules``' passes in
    order (each typechecked), checking its values against the traced program's."""
    traced = trace(fn, *args)
    out = traced
    for module in modules:
        out, _ = run_pass(module, out)
    assert_same_values(traced, out, args)
    return str(out)


def cleaned(fn, *args):
    """Inline and the cleanup group to its fixed point (no fusion: readable IR)."""
    traced = trace(fn, *args)
    out, log = run_pipeline(_UNTIL_CLEANUP, traced, dump_dir=None, debug_checks=True)
    assert_same_values(traced, out, args)
    return out, log


def ir(text: str) -> str:
    return textwrap.dedent(text).strip()


def prims(jaxpr) -> list[str]:
    """Every equation's primitive, sub-jaxprs included (for structure checks)."""
    names = []
    for eqn in jaxpr.eqns:
        names.append(eqn.prim.name)
        for value in eqn.params.values():
            for sub in value if isinstance(value, tuple) else (value,):
                if hasattr(sub, "eqns"):
                    names += prims(sub)
    return names


# -------------------------------------------------------- constant predicates


def test_cond_with_a_literal_index_is_its_branch():
    fn = lambda v: cond(True, lambda u: u * 2.0, lambda u: -u, v)  # noqa: E731
    assert "cond[" in str(trace(fn, x3))
    assert after([control_flow], fn, x3) == ir(
        "{ lambda ; a:f64[3]. let b:f64[3] = mul a 2.0:f64[] in (b,) }"
    )


def test_switch_index_clamps_as_at_run_time():
    branches = [lambda u: u * 2.0, lambda u: -u, lambda u: u + 1.0]
    for index, expected in [(7, "add a 1.0"), (-3, "mul a 2.0"), (1, "neg a")]:
        fn = functools.partial(switch, index, branches)
        assert expected in after([control_flow], fn, x3), index


def test_predicate_computed_from_constants_is_folded():
    def fn(v):
        # Built from numbax.numpy, the predicate is traced: decided at compile time.
        return cond(xnp.sum(xnp.ones(3)) > 2.0, lambda u: np.sin(u), lambda u: np.cos(u), v)

    out, log = cleaned(fn, x3)
    assert log.totals("control_flow") == {"cond_index_folded": 1}
    assert str(out) == ir("{ lambda ; a:f64[3]. let b:f64[3] = sin a in (b,) }")


def test_cond_with_identical_branches_is_inlined():
    fn = lambda p, v: cond(p, lambda u: np.tanh(u), lambda u: np.tanh(u), v)  # noqa: E731
    assert after([control_flow], fn, np.bool_(False), x3) == ir(
        """
        { lambda ; a:bool[] b:f64[3]. let
            c:i32[] = convert_element_type[new_dtype=int32] a
            d:f64[3] = tanh b
          in (d,) }
        """
    )


def test_data_dependent_cond_stays():
    fn = lambda v: cond(v.sum() > 0, lambda u: u * 2.0, lambda u: -u, v)  # noqa: E731
    assert "cond[" in after([control_flow], fn, x3)


def test_while_false_at_entry_is_removed():
    def fn(v):
        return while_loop(lambda c: c[0] < 0, lambda c: (c[0] + 1, c[1] * 2.0), (0, v))

    assert after([control_flow], fn, x3) == ir("{ lambda ; a:f64[3]. let in (0:i64[], a) }")


def test_while_false_by_a_closed_over_array_is_removed():
    limits = np.array([3.0, -1.0, 0.5])  # a constvar: known at compile time

    def fn(v):
        return while_loop(
            lambda c: np.sum(c[1] * limits) < -100.0, lambda c: (c[0], c[1] + v), (v, limits)
        )

    out, log = cleaned(fn, x3)
    assert log.totals("control_flow")["while_never_runs"] == 1
    assert "while" not in prims(out.jaxpr)


def test_while_that_runs_or_reads_data_stays():
    runs = lambda v: while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * 2.0), (0, v))  # noqa: E731
    unknown = lambda v: while_loop(lambda c: np.sum(c) < 10.0, lambda c: c * 2.0, v)  # noqa: E731
    for fn in (runs, unknown):
        assert "while[" in after([control_flow], fn, x3)


def test_scan_of_length_zero_is_removed():
    fn = lambda v: scan(lambda c, x: (c + x, c * x), v[0], v[:0])  # noqa: E731
    text = after([control_flow, dce], fn, x3)
    assert text == ir(
        """
        { lambda ; a:f64[3]. let
            b:f64[1] = slice[start_indices=(0,) limit_indices=(1,) strides=(1,)] a
            c:f64[] = squeeze[dimensions=(0,)] b
            d:f64[0] = broadcast_in_dim[shape=(0,) broadcast_dimensions=()] 0.0:f64[]
          in (c, d) }
        """
    )


def test_literal_operands_are_written_into_bodies():
    def fn(v):
        # Traced, k is an equation; folded, a literal (as the cond operand and the
        # loop constant it then is).
        k = lax.convert_element_type(np.float32(1.5), np.float64) * 2.0
        looped = fori_loop(0, 3, lambda i, c: c * k, v)
        return looped, cond(v[0] > 0, lambda u, s: u * s, lambda u, s: u - s, v, k)

    out, log = cleaned(fn, x3)
    assert log.totals("control_flow") == {"literal_consts_propagated": 3}
    assert str(out) == ir(
        """
        { lambda ; a:f64[3]. let
            b:f64[3] = scan[jaxpr=
                { lambda ; a:f64[3]. let
                    b:f64[3] = mul a 3.0:f64[]
                  in (b,) } length=3 reverse=False num_consts=0 num_carry=1] a
            c:f64[1] = slice[start_indices=(0,) limit_indices=(1,) strides=(1,)] a
            d:f64[] = reshape[new_sizes=()] c
            e:bool[] = gt d 0.0:f64[]
            f:i32[] = convert_element_type[new_dtype=int32] e
            g:f64[3] = cond[branches=(
                { lambda ; a:f64[3]. let
                    b:f64[3] = sub a 3.0:f64[]
                  in (b,) },
                { lambda ; a:f64[3]. let
                    b:f64[3] = mul a 3.0:f64[]
                  in (b,) })] f a
          in (b, g) }
        """
    )


# ------------------------------------------------------------ loop invariants


def test_invariant_equations_leave_a_while_body():
    def fn(v, w):
        body = lambda c: (c[0] + 1, c[1] * np.exp(w).sum() + w)  # noqa: E731
        return while_loop(lambda c: c[0] < 3, body, (0, v))[1]

    assert "exp a" in str(trace(fn, x3, y3))  # inside the body, as traced
    assert after([loop_invariants, loop_dce], fn, x3, y3) == ir(
        """
        { lambda ; a:f64[3] b:f64[3]. let
            c:f64[3] = exp b
            d:f64[] = reduce_sum[axes=(0,)] c
            e:i64[] f:f64[3] = while[cond_jaxpr=
                { lambda ; a:i64[] b:f64[3]. let
                    c:bool[] = lt a 3:i64[]
                  in (c,) } body_jaxpr=
                { lambda ; a:f64[3] b:f64[] c:i64[] d:f64[3]. let
                    e:i64[] = add c 1:i64[]
                    f:f64[3] = mul d b
                    g:f64[3] = add f a
                  in (e, g) } cond_nconsts=0 body_nconsts=2] b d 0:i64[] a
          in (f,) }
        """
    )


def test_scan_keeps_what_reads_the_carry_or_the_slices():
    def fn(v, w):
        step = lambda c, x: (c + np.tanh(w) * x, np.cos(x) + np.sin(w))  # noqa: E731
        return scan(step, v, np.stack([v, w]))

    assert after([loop_invariants, loop_dce], fn, x3, y3) == ir(
        """
        { lambda ; a:f64[3] b:f64[3]. let
            c:f64[6] = concatenate[dimension=0] a b
            d:f64[2,3] = reshape[new_sizes=(2, 3)] c
            e:f64[3] = tanh b
            f:f64[3] = sin b
            g:f64[3] h:f64[2,3] = scan[jaxpr=
                { lambda ; a:f64[3] b:f64[3] c:f64[3] d:f64[3]. let
                    e:f64[3] = mul a d
                    f:f64[3] = add c e
                    g:f64[3] = cos d
                    h:f64[3] = add g b
                  in (f, h) } length=2 reverse=False num_consts=2 num_carry=1] e f a d
          in (g, h) }
        """
    )


def test_cheap_broadcasts_and_literal_only_equations_stay_in_the_body():
    def fn(v, w):
        body = lambda i, c: c * np.broadcast_to(np.sum(w), (3,)) + xnp.full((3,), 2.0)  # noqa: E731
        return fori_loop(0, 3, body, v)

    traced = trace(fn, x3, y3)
    out, counts = run_pass(loop_invariants, traced)
    assert counts == {"eqns_hoisted": 1}
    (reduce_sum, loop) = out.eqns
    assert reduce_sum.prim.name == "reduce_sum"
    # The broadcast of the hoisted sum and the broadcast literal stay, for fusion.
    assert prims(loop.params["jaxpr"]) == [
        "add",
        "broadcast_in_dim",
        "mul",
        "broadcast_in_dim",
        "add",
    ]
    assert_same_values(traced, out, [x3, y3])


def test_invariants_of_an_inner_loop_move_all_the_way_out():
    def fn(v, w):
        def outer(i, c):
            inner = lambda j, d: d * np.exp(np.sum(w)) + c  # noqa: E731
            return fori_loop(0, 2, inner, c)

        return fori_loop(0, 3, outer, v)

    out, _ = cleaned(fn, x3, y3 * 0.1)
    assert [e.prim.name for e in out.eqns] == ["reduce_sum", "exp", "scan"]
    assert "exp" not in prims(out.eqns[-1].params["jaxpr"])


def test_hoisting_out_of_a_loop_that_never_runs_keeps_the_result():
    # log of a negative is NaN: computed before a loop that runs zero times, it must
    # not leak into the result.
    def fn(v, n):
        body = lambda c: (c[0] + 1, c[1] + np.log(v - 10.0))  # noqa: E731
        return while_loop(lambda c: c[0] < n, body, (0, v))[1]

    out, log = cleaned(fn, x3, np.int64(0))
    assert log.totals("loop_invariants")["eqns_hoisted"] == 2
    assert_same_values(trace(fn, x3, np.int64(0)), out, [x3, np.int64(0)])
    assert_same_values(trace(fn, x3, np.int64(2)), out, [x3, np.int64(2)])


def test_a_while_leaves_only_a_body_known_to_run():
    # An invariant inner while might not terminate: out of a while body (which may run
    # zero times) it must not move; out of a scan of length >= 1 it may.
    def inner(w):
        return while_loop(lambda c: c[0] < 4, lambda c: (c[0] + 1, c[1] * 0.5), (0, w))[1]

    def in_while(v, w):
        body = lambda c: (c[0] + 1, c[1] + inner(w))  # noqa: E731
        return while_loop(lambda c: c[0] < 2, body, (0, v))[1]

    def in_scan(v, w):
        return fori_loop(0, 2, lambda i, c: c + inner(w), v)

    for fn, hoisted in ((in_while, 0), (in_scan, 1)):
        traced = trace(fn, x3, y3)
        out, counts = run_pass(loop_invariants, traced)
        assert counts.get("eqns_hoisted", 0) == hoisted, fn.__name__
        assert [e.prim.name for e in out.eqns].count("while") == hoisted + (fn is in_while)
        assert_same_values(traced, out, [x3, y3])


# ------------------------------------------------------------------ loop DCE


def test_unused_carries_ys_and_consts_are_dropped():
    def fn(v, w):
        def step(c, x):
            i, a, b = c
            return (i + 1, a + x * w, b * 2.0), (a * x, np.sin(x))

        (_, a, _), (_, zs) = scan(step, (0, v, v), np.stack([v, w]))
        return a, zs

    assert after([loop_dce], fn, x3, y3) == ir(
        """
        { lambda ; a:f64[3] b:f64[3]. let
            c:f64[6] = concatenate[dimension=0] a b
            d:f64[2,3] = reshape[new_sizes=(2, 3)] c
            e:f64[3] f:f64[2,3] = scan[jaxpr=
                { lambda ; a:f64[3] b:f64[3] c:f64[3]. let
                    d:f64[3] = mul c a
                    e:f64[3] = add b d
                    f:f64[3] = sin c
                  in (e, f) } length=2 reverse=False num_consts=1 num_carry=1] b a d
          in (e, f) }
        """
    )


def test_unread_scanned_operands_are_dropped():
    def fn(v, w):
        final, _ = scan(
            lambda c, x: (c * 2.0, x[0] + x[1]), v, (np.stack([v, w]), np.stack([w, v]))
        )
        return final

    out, _ = run_pass(loop_dce, trace(fn, x3, y3))
    (loop,) = (e for e in out.eqns if e.prim.name == "scan")
    assert len(loop.inputs) == 1 and loop.params["num_carry"] == 1


def test_carries_the_live_state_depends_on_stay():
    def feeding(v, w):
        # b feeds a, and the predicate reads the counter: every carry is live.
        body = lambda c: (c[0] + 1, c[1] + c[2], c[2] * w)  # noqa: E731
        return while_loop(lambda c: c[0] < 3, body, (0, v, v))[1]

    out, counts = run_pass(loop_dce, trace(feeding, x3, y3))
    assert counts == {}

    def independent(v, w):
        body = lambda c: (c[0] + 1, c[1] + w, c[2] * w)  # noqa: E731
        return while_loop(lambda c: c[0] < 3, body, (0, v, v))[1]

    out, counts = run_pass(loop_dce, trace(independent, x3, y3))
    assert counts == {"carries_removed": 1}
    (loop,) = out.eqns
    assert len(loop.outputs) == 2 and loop.params["body_jaxpr"].eqns[-1].prim.name == "add"
    assert_same_values(trace(independent, x3, y3), out, [x3, y3])


def test_a_trimmed_loop_body_exposes_dead_state_in_an_inner_loop():
    def fn(v, w):
        def outer(c, x):
            inner = fori_loop(0, 2, lambda j, d: (d[0] * 0.5 + x, d[1] + 1.0), (c, c))
            return inner[0], inner[1]  # a y from the inner loop's second carry

        final, _ = scan(outer, v, np.stack([v, w]))
        return final

    traced = trace(fn, x3, y3)
    out, counts = run_pass(loop_dce, traced)
    # In one run: the outer y goes, then the inner carry it read, and the counter.
    assert counts == {"ys_removed": 1, "carries_removed": 2}
    (loop,) = (e for e in out.eqns if e.prim.name == "scan")
    (inner,) = (e for e in loop.params["jaxpr"].eqns if e.prim.name == "scan")
    assert len(loop.outputs) == 1 and len(inner.outputs) == 1
    assert_same_values(traced, out, [x3, y3])


# ----------------------------------------------- DCE and fusion inside bodies


def test_dce_removes_dead_equations_inside_bodies():
    def fn(v):
        def step(c, x):
            np.exp(c)  # computed and never used
            return c + x, None

        return scan(step, v[0], v)[0]

    out, counts = run_pass(dce, trace(fn, x3))
    assert counts["eqns_removed"] == 1
    (loop,) = (e for e in out.eqns if e.prim.name == "scan")
    assert prims(loop.params["jaxpr"]) == ["add"]


def test_fusion_fuses_inside_bodies():
    def fn(v, w):
        body = lambda i, c: np.tanh(c * 1.5 + w) * 0.5 + c  # noqa: E731
        return fori_loop(0, 4, body, v)

    traced = trace(fn, x3, y3)
    fused, _ = passes.optimize(traced, debug_checks=True)
    check_fused(fused)
    (loop,) = fused.eqns
    body = loop.params["jaxpr"]
    (kernel,) = body.eqns
    assert kernel.params["kind"] == "elementwise"
    assert prims(kernel.params["jaxpr"]) == ["mul", "add", "tanh", "mul", "add"]
    assert_same_values(traced, fused, [x3, y3])


# -------------------------------------------------------------- trip count


@functools.partial(numbax.jit, static_argnums=1)
def _stepped(x, steps):
    return fori_loop(0, steps, lambda i, c: np.tanh(c * 1.5 + x) + i * 0.001 + np.exp(x), x)


def test_fused_program_does_not_grow_with_the_trip_count():
    short, long = (_stepped.lower(x3, steps) for steps in (10, 1000))
    assert len(prims(short.fused.jaxpr)) == len(prims(long.fused.jaxpr))
    assert short.as_text().replace("length=10 ", "length=1000 ") == long.as_text()
    changes = lambda lowered: [(r.name, r.changes) for r in lowered.pass_log]  # noqa: E731
    assert changes(short) == changes(long)
    # And the loop invariant exp(x) runs once, in front of the loop.
    assert "exp" not in prims(long.fused.eqns[-1].params["jaxpr"])


# ------------------------------------------------------------ random programs

# Programs of loops, conds and elementwise maths over f64[3] values (and scalar
# constants that fold into literals), drawn before they are traced (a loop body may be
# traced twice, so its choices are drawn up front). Loop bodies mix invariant terms
# (over closed-over values), carries, slices and the counter; some carries and ys are
# never read; trip counts include 0.

OPS = {
    "add": lambda a, b: a + b,
    "mul": lambda a, b: a * b,
    "tanh": lambda a, b: np.tanh(a) + b,
    "gauss": lambda a, b: a * np.exp(-b * b),
    "where": lambda a, b: np.where(a > b, a, b),
    "sum": lambda a, b: a - 0.1 * np.sum(b),
    "sin": lambda a, b: np.sin(a) * 0.5,
}


def _recipe(data, label):
    n = data.draw(st.integers(1, 4), label=f"{label} ops")
    return [
        (
            data.draw(st.sampled_from(sorted(OPS))),
            data.draw(st.integers(0, 99)),
            data.draw(st.integers(0, 99)),
        )
        for _ in range(n)
    ]


def _apply(recipe, values):
    values = list(values)
    for op, a, b in recipe:
        values.append(OPS[op](values[a % len(values)], values[b % len(values)]))
    return values


def _picks(data, count, label):
    """Which of ``count`` results a program reads (at least one)."""
    chosen = data.draw(st.lists(st.booleans(), min_size=count, max_size=count), label=label)
    return chosen if any(chosen) else [True] + chosen[1:]


def _loop_step(data, pool):
    kind = data.draw(st.sampled_from(["fori", "scan", "while", "cond", "nested"]), label="kind")
    captured = [pool[data.draw(st.integers(0, len(pool) - 1))] for _ in range(2)]
    if data.draw(st.booleans(), label="literal"):
        # A traced scalar that folding turns into a literal loop constant.
        captured.append(lax.convert_element_type(np.float32(0.75), np.float64) * 2.0)
    num_carry = data.draw(st.integers(1, 3), label="carries")
    init = tuple(pool[data.draw(st.integers(0, len(pool) - 1))] for _ in range(num_carry))
    recipe = _recipe(data, kind)
    updates = [data.draw(st.integers(0, 99)) for _ in range(num_carry)]
    reads = _picks(data, num_carry, "reads")

    def new_carry(carry, extra):
        values = _apply(recipe, [*captured, *carry, *extra])
        return tuple(np.broadcast_to(np.tanh(values[u % len(values)]), (3,)) for u in updates)

    def read(carry):
        return [c for c, r in zip(carry, reads, strict=True) if r]

    if kind == "fori":
        steps = data.draw(st.sampled_from([0, 1, 3]), label="steps")
        return read(fori_loop(0, steps, lambda i, c: new_carry(c, [c[0] + 0.1 * i]), init))
    if kind == "scan":
        length = data.draw(st.sampled_from([0, 1, 3]), label="length")
        xs = np.stack([pool[k % len(pool)] for k in range(length)]) if length else pool[0][None][:0]
        carry, ys = scan(lambda c, x: (new_carry(c, [x]), new_carry(c, [x])[0]), init, xs)
        return read(carry) + ([ys.sum(axis=0)] if data.draw(st.booleans(), label="ys") else [])
    if kind == "while":
        limit = data.draw(st.sampled_from(["zero", "two", "data"]), label="limit")
        bound = {"zero": 0, "two": 2, "data": np.where(np.sum(pool[0]) > 0, 1, 3)}[limit]
        body = lambda c: (c[0] + 1, *new_carry(c[1:], [c[1]]))  # noqa: E731
        return read(while_loop(lambda c: c[0] < bound, body, (0, *init))[1:])
    if kind == "cond":
        pred = data.draw(st.sampled_from(["true", "constant", "data"]), label="pred")
        pred = {"true": True, "constant": xnp.sum(xnp.ones(2)) > 2.5, "data": np.sum(init[0]) > 0}[
            pred
        ]
        other = recipe if data.draw(st.booleans(), label="same") else _recipe(data, "other")

        def branch(r):
            def run(*c):
                results = _apply(r, [*captured, *c])[-num_carry:]
                return tuple(np.broadcast_to(np.tanh(v), (3,)) for v in results)

            return run

        return read(cond(pred, branch(recipe), branch(other), *init))
    inner_steps = data.draw(st.sampled_from([0, 2]), label="inner steps")

    def outer(i, c):
        inner = fori_loop(0, inner_steps, lambda j, d: new_carry(d, [c[0] * 0.5]), c)
        return new_carry(inner, [c[-1]])

    return read(fori_loop(0, 2, outer, init))


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data())
def test_random_programs_with_loops_keep_their_meaning(data):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    inputs = [rng.standard_normal(3), rng.standard_normal(3)]
    steps = data.draw(st.integers(1, 3), label="steps")

    def program(*args):
        pool = list(args)
        for _ in range(steps):
            pool += _loop_step(data, pool)
        return pool[len(args) :] or pool

    traced = trace(program, *inputs)
    for module in (control_flow, loop_invariants, loop_dce):
        alone, _ = run_pass(module, traced)
        assert_same_values(traced, alone, inputs)
    fused, _ = passes.optimize(traced, debug_checks=True)  # typechecks after every pass
    check_fused(fused)
    assert_same_values(traced, fused, inputs, rtol=1e-9, atol=1e-12)
