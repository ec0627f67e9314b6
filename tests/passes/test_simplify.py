"""Algebraic simplification: each rule before/after on printed IR, the identities it
must not apply (NaN, infinity and signed-zero sensitive), and exactness on special
values through the whole pipeline."""

from __future__ import annotations

import numpy as np
import pytest
from passes_util import assert_bitwise_equal, run_pass, trace

from numbax import ir
from numbax import numpy as xnp
from numbax.ir.primitive import PRIMITIVES
from numbax.passes import cse, dce, optimize, simplify
from numbax.tracer import lax
from numbax.tracer.core import bind

F32 = np.float32
x3 = np.ones(3, F32)
x23 = np.ones((2, 3), F32)
SPECIALS = np.array([-0.0, 0.0, np.nan, np.inf, -np.inf, 1.5, -2.0], F32)


def simplified(fn, *args) -> str:
    """The program after one simplify sweep and DCE (so replaced equations vanish),
    printed on one line."""
    closed, _ = run_pass(simplify, trace(fn, *args))
    closed, _ = run_pass(dce, closed)
    return one_line(str(closed))


def one_line(text: str) -> str:
    """A flat program's text in the printer's one-line form, however long it is."""
    lines = text.split("\n")
    if len(lines) == 1:
        return text
    eqns = "; ".join(line.strip() for line in lines[1:-1])
    return f"{lines[0].strip()} {eqns} {lines[-1].strip()}"


def counts(fn, *args) -> dict:
    return run_pass(simplify, trace(fn, *args))[1]


def bcast(x, shape, dims):
    """A broadcast_in_dim even where lax's wrapper would skip it (same shape)."""
    return bind(PRIMITIVES["broadcast_in_dim"], x, shape=shape, broadcast_dimensions=dims)


# ------------------------------------------------------------------------ arithmetic


@pytest.mark.parametrize(
    "fn, expected",
    [
        (lambda x: x * 1.0, "{ lambda ; a:f32[3]. let in (a,) }"),
        (lambda x: 1.0 * x, "{ lambda ; a:f32[3]. let in (a,) }"),
        (lambda x: x * -1.0, "{ lambda ; a:f32[3]. let b:f32[3] = neg a in (b,) }"),
        (lambda x: x + -0.0, "{ lambda ; a:f32[3]. let in (a,) }"),
        (lambda x: x - 0.0, "{ lambda ; a:f32[3]. let in (a,) }"),
        (lambda x: -0.0 - x, "{ lambda ; a:f32[3]. let b:f32[3] = neg a in (b,) }"),
        (lambda x: x / 1.0, "{ lambda ; a:f32[3]. let in (a,) }"),
        (lambda x: lax.neg(lax.neg(x)), "{ lambda ; a:f32[3]. let in (a,) }"),
        (lambda x: lax.integer_pow(x, 1), "{ lambda ; a:f32[3]. let in (a,) }"),
        (lambda x: x**2, "{ lambda ; a:f32[3]. let b:f32[3] = mul a a in (b,) }"),
        (
            lambda x: lax.integer_pow(x, 0),
            "{ lambda ; a:f32[3]. let "
            "b:f32[3] = broadcast_in_dim[shape=(3,) broadcast_dimensions=()] 1.0:f32[] in (b,) }",
        ),
        (
            lambda x: lax.pow(x, F32(3.0)),
            "{ lambda ; a:f32[3]. let b:f32[3] = integer_pow[y=3] a in (b,) }",
        ),
        (
            lambda x: lax.pow(x, F32(-2.0)),
            "{ lambda ; a:f32[3]. let b:f32[3] = integer_pow[y=-2] a in (b,) }",
        ),
        (lambda x: lax.stop_gradient(x), "{ lambda ; a:f32[3]. let in (a,) }"),
        (
            lambda x: lax.select(lax.gt(x, F32(0)), x, x),
            "{ lambda ; a:f32[3]. let in (a,) }",
        ),
    ],
    ids=[
        "x*1", "1*x", "x*-1", "x+(-0.0)", "x-0.0", "(-0.0)-x", "x/1", "neg(neg(x))",
        "x**1", "x**2", "x**0", "pow(x,3.0)", "pow(x,-2.0)", "stop_gradient", "select(p,x,x)",
    ],
)  # fmt: skip
def test_arithmetic_rules(fn, expected):
    assert simplified(fn, x3) == expected


def test_integer_identities():
    i3 = np.ones(3, np.int32)
    assert simplified(lambda i: i * 1, i3) == "{ lambda ; a:i32[3]. let in (a,) }"
    assert simplified(lambda i: i + 0, i3) == "{ lambda ; a:i32[3]. let in (a,) }"
    assert simplified(lambda i: i - 0, i3) == "{ lambda ; a:i32[3]. let in (a,) }"
    assert simplified(lambda i: lax.div(i, np.int32(1)), i3) == "{ lambda ; a:i32[3]. let in (a,) }"


def test_select_with_a_known_predicate():
    fn = lambda x, y: lax.select(np.True_, x, y)  # noqa: E731
    assert simplified(fn, x3, x3) == "{ lambda ; a:f32[3] b:f32[3]. let in (a,) }"
    fn = lambda x, y: lax.select(np.False_, x, y)  # noqa: E731
    assert simplified(fn, x3, x3) == "{ lambda ; a:f32[3] b:f32[3]. let in (b,) }"


def test_select_with_a_broadcast_predicate():
    always = lambda s, x: lax.select(lax.broadcast_in_dim(np.True_, (3,), ()), s, x)  # noqa: E731
    assert simplified(always, F32(2.0), x3) == (
        "{ lambda ; a:f32[] b:f32[3]. let "
        "c:f32[3] = broadcast_in_dim[shape=(3,) broadcast_dimensions=()] a in (c,) }"
    )
    never = lambda s, x: lax.select(lax.broadcast_in_dim(np.False_, (3,), ()), s, x)  # noqa: E731
    assert simplified(never, F32(2.0), x3) == "{ lambda ; a:f32[] b:f32[3]. let in (b,) }"


def test_conversions():
    same = lambda x: bind(PRIMITIVES["convert_element_type"], x, new_dtype=np.dtype(F32))  # noqa: E731
    assert simplified(same, x3) == "{ lambda ; a:f32[3]. let in (a,) }"
    round_trip = lambda x: lax.convert_element_type(lax.convert_element_type(x, "float64"), F32)  # noqa: E731
    assert simplified(round_trip, x3) == "{ lambda ; a:f32[3]. let in (a,) }"
    # f64 -> f32 -> f64 rounds: it stays.
    lossy = lambda x: lax.convert_element_type(lax.convert_element_type(x, F32), "float64")  # noqa: E731
    assert counts(lossy, np.ones(3)) == {}
    # int32 -> float32 -> int32 loses integers above 2**24: it stays.
    narrow = lambda i: lax.convert_element_type(lax.convert_element_type(i, F32), "int32")  # noqa: E731
    assert counts(narrow, np.ones(3, np.int32)) == {}


# Identities that do NOT hold in IEEE arithmetic, and that the simplifier must leave:
# NaN * 0 and inf * 0 are NaN, -1 * 0 is -0.0; inf - inf is NaN; -0.0 + 0.0 is +0.0;
# 0 / 0 is NaN; 0.0 - 0.0 is +0.0, not -0.0; -0.0 - -0.0 is +0.0, not -0.0.
NOT_IDENTITIES = {
    "x*0": lambda x: x * 0.0,
    "0*x": lambda x: 0.0 * x,
    "x*-0.0": lambda x: x * -0.0,
    "x-x": lambda x: x - x,
    "x+0.0": lambda x: x + 0.0,
    "0.0+x": lambda x: 0.0 + x,
    "x/x": lambda x: x / x,
    "0.0-x": lambda x: 0.0 - x,
    "x-(-0.0)": lambda x: x - (-0.0),
    "x*x is not x**2 of a pow": lambda x: lax.pow(x, F32(0.5)),
    "max(x,x)": lambda x: xnp.maximum(x, x) + 0.0,
}


@pytest.mark.parametrize("fn", NOT_IDENTITIES.values(), ids=NOT_IDENTITIES.keys())
def test_non_identities_are_left_alone(fn):
    before = trace(fn, x3)
    after, changes = run_pass(simplify, before)
    assert changes == {}
    assert str(after) == str(before)


ALL_IDENTITIES = {**NOT_IDENTITIES, "x*1": lambda x: x * 1.0, "x+(-0.0)": lambda x: x + -0.0,
                  "x-0.0": lambda x: x - 0.0, "(-0.0)-x": lambda x: -0.0 - x,
                  "x/1": lambda x: x / 1.0, "x**2": lambda x: x**2,
                  "x**0": lambda x: lax.integer_pow(x, 0), "x*-1": lambda x: x * -1.0}  # fmt: skip


@pytest.mark.parametrize("fn", ALL_IDENTITIES.values(), ids=ALL_IDENTITIES.keys())
def test_special_values_bit_for_bit(fn):
    """Through the whole pipeline, NaN, infinities and both zeros give the same bits."""
    before = trace(fn, SPECIALS)
    after, _ = optimize(before, debug_checks=True)
    assert_bitwise_equal(before, after, [SPECIALS])


def test_rewrites_keep_the_output_shape():
    """select(True, s, x) with a rank-0 s has x's shape: s broadcast replaces it, not s."""
    fn = lambda s, x: lax.select(np.True_, s, x)  # noqa: E731
    assert simplified(fn, F32(2.0), x3) == (
        "{ lambda ; a:f32[] b:f32[3]. let "
        "c:f32[3] = broadcast_in_dim[shape=(3,) broadcast_dimensions=()] a in (c,) }"
    )


# ------------------------------------------------------------------------ broadcasts


def test_scalar_broadcast_is_an_implicit_operand():
    fn = lambda x, s: x * lax.broadcast_in_dim(s, (3,), ())  # noqa: E731
    assert simplified(fn, x3, F32(2.0)) == (
        "{ lambda ; a:f32[3] b:f32[]. let c:f32[3] = mul a b in (c,) }"
    )
    # ones(3) * x: the broadcast 1.0 becomes a literal, and x * 1.0 then goes in the same
    # sweep: the product that replaced the first is offered to the rules again.
    assert counts(lambda x: x * xnp.ones(3, F32), x3) == {
        "scalar_broadcast_operand": 1,
        "multiply_by_one": 1,
    }


def test_ops_on_broadcast_literals_fold_to_one_literal():
    """ones(3) * s for a rank-0 s: the ones sink, 1.0 * s folds away, and what is left is
    s broadcast (of the output's shape: never the rank-0 s itself)."""
    fn = lambda s: s * xnp.ones(3, F32)  # noqa: E731
    closed = trace(fn, F32(2.0))
    for _ in range(2):
        closed, _ = run_pass(simplify, closed)
        closed, _ = run_pass(dce, closed)
    assert str(closed) == (
        "{ lambda ; a:f32[]. let "
        "b:f32[3] = broadcast_in_dim[shape=(3,) broadcast_dimensions=()] a in (b,) }"
    )


def test_expensive_op_sinks_below_a_broadcast():
    fn = lambda v: xnp.exp(lax.broadcast_in_dim(v, (2, 3), (1,)))  # noqa: E731
    assert simplified(fn, x3) == (
        "{ lambda ; a:f32[3]. let b:f32[3] = exp a; "
        "c:f32[2,3] = broadcast_in_dim[shape=(2, 3) broadcast_dimensions=(1,)] b in (c,) }"
    )
    # A cheap op over a growing broadcast is left for fusion.
    cheap = lambda v: lax.neg(lax.broadcast_in_dim(v, (2, 3), (1,)))  # noqa: E731
    assert counts(cheap, x3) == {}


def test_keepdims_reshape_sinks_and_broadcasts_compose():
    """A reduction, its keepdims reshape, a cheap op on the (2, 1) value and the
    broadcast back: the op runs on the reduced (2,) value, broadcast once."""

    def fn(x):
        total = x.sum(axis=1, keepdims=True)
        return x - (total + 1.0)

    closed = trace(fn, x23)
    for _ in range(2):
        closed, _ = run_pass(simplify, closed)
        closed, _ = run_pass(dce, closed)
    assert one_line(str(closed)) == (
        "{ lambda ; a:f32[2,3]. let b:f32[2] = reduce_sum[axes=(1,)] a; "
        "c:f32[2] = add b 1.0:f32[]; "
        "d:f32[2,3] = broadcast_in_dim[shape=(2, 3) broadcast_dimensions=(0,)] c; "
        "e:f32[2,3] = sub a d in (e,) }"
    )


def test_broadcast_rules():
    same = lambda x: bcast(x, (3,), (0,))  # noqa: E731
    assert simplified(same, x3) == "{ lambda ; a:f32[3]. let in (a,) }"
    twice = lambda x: bcast(bcast(x, (2, 3), (1,)), (4, 2, 3), (1, 2))  # noqa: E731
    assert simplified(twice, x3) == (
        "{ lambda ; a:f32[3]. let "
        "b:f32[4,2,3] = broadcast_in_dim[shape=(4, 2, 3) broadcast_dimensions=(2,)] a in (b,) }"
    )


def test_broadcast_of_iota_is_an_iota():
    ramp = lambda x: x + bcast(xnp.arange(3, dtype=np.int32), (2, 3), (1,))  # noqa: E731
    text = simplified(ramp, np.ones((2, 3), np.int32))
    assert "iota[dtype=int32 shape=(2, 3) dimension=1]" in text
    assert "broadcast_in_dim" not in text


def test_broadcast_of_squeeze():
    fn = lambda x: bcast(lax_reshape(x, (3,)), (2, 3), (1,))  # noqa: E731
    assert simplified(fn, np.ones((1, 3), F32)) == (
        "{ lambda ; a:f32[1,3]. let "
        "b:f32[2,3] = broadcast_in_dim[shape=(2, 3) broadcast_dimensions=(0, 1)] a in (b,) }"
    )


def lax_reshape(x, shape):
    return bind(PRIMITIVES["reshape"], x, new_sizes=tuple(shape))


# ---------------------------------------------------------- reshapes and transposes


def test_reshape_rules():
    assert simplified(lambda x: lax_reshape(x, (2, 3)), x23) == (
        "{ lambda ; a:f32[2,3]. let in (a,) }"
    )
    assert simplified(lambda x: lax_reshape(lax_reshape(x, (6,)), (3, 2)), x23) == (
        "{ lambda ; a:f32[2,3]. let b:f32[3,2] = reshape[new_sizes=(3, 2)] a in (b,) }"
    )
    assert simplified(lambda x: lax_reshape(x, (2, 1, 3)), x23) == (
        "{ lambda ; a:f32[2,3]. let "
        "b:f32[2,1,3] = broadcast_in_dim[shape=(2, 1, 3) broadcast_dimensions=(0, 2)] a in (b,) }"
    )
    assert simplified(lambda x: xnp.squeeze(x, 0), np.ones((1, 3), F32)) == (
        "{ lambda ; a:f32[1,3]. let b:f32[3] = reshape[new_sizes=(3,)] a in (b,) }"
    )
    assert simplified(lambda x: xnp.expand_dims(x, 0), x3) == (
        "{ lambda ; a:f32[3]. let "
        "b:f32[1,3] = broadcast_in_dim[shape=(1, 3) broadcast_dimensions=(1,)] a in (b,) }"
    )


def test_transpose_rules():
    assert simplified(lambda x: x.T.T, x23) == "{ lambda ; a:f32[2,3]. let in (a,) }"
    x234 = np.ones((2, 3, 4), F32)
    fn = lambda x: x.transpose(1, 2, 0).transpose(1, 0, 2)  # noqa: E731
    assert simplified(fn, x234) == (
        "{ lambda ; a:f32[2,3,4]. let b:f32[4,3,2] = transpose[permutation=(2, 1, 0)] a in (b,) }"
    )


def test_structural_no_ops():
    assert simplified(lambda x: x[0:3], x3) == "{ lambda ; a:f32[3]. let in (a,) }"
    assert simplified(lambda x: xnp.concatenate([x]), x3) == "{ lambda ; a:f32[3]. let in (a,) }"
    pad = lambda x: xnp.pad(x, ((0, 0),))  # noqa: E731
    assert simplified(pad, x3) == "{ lambda ; a:f32[3]. let in (a,) }"
    assert "slice" in simplified(lambda x: x[1:3], x3)


# ------------------------------------------------------------------------ reductions


def test_sum_of_sum_merges():
    fn = lambda x: x.sum(axis=2).sum(axis=0)  # noqa: E731
    assert simplified(fn, np.ones((2, 3, 4), F32)) == (
        "{ lambda ; a:f32[2,3,4]. let b:f32[3] = reduce_sum[axes=(0, 2)] a in (b,) }"
    )

    # The inner sum is read elsewhere too: merging would compute it twice.
    def shared(x):
        rows = x.sum(axis=1)
        return rows.sum(), rows

    assert counts(shared, x23) == {}
    # max of max too; a sum of a max is no such thing.
    assert counts(lambda x: x.max(axis=1).max(), x23) == {"reduce_of_reduce": 1}
    assert counts(lambda x: x.max(axis=1).sum(), x23) == {}


def test_reduction_over_size_one_axes_is_a_reshape():
    fn = lambda x: x.sum(axis=0)  # noqa: E731
    assert simplified(fn, np.ones((1, 3), F32)) == (
        "{ lambda ; a:f32[1,3]. let b:f32[3] = reshape[new_sizes=(3,)] a in (b,) }"
    )


def test_transposed_matmul_operands_are_read_in_place():
    fn = lambda a, b: a.T @ b  # noqa: E731
    assert simplified(fn, np.ones((4, 2), F32), np.ones((4, 3), F32)) == (
        "{ lambda ; a:f32[4,2] b:f32[4,3]. let "
        "c:f32[2,3] = dot_general[dimension_numbers=(((0,), (0,)), ((), ()))] a b in (c,) }"
    )
    fn = lambda a, b: a @ b.T  # noqa: E731
    assert simplified(fn, np.ones((2, 4), F32), np.ones((3, 4), F32)) == (
        "{ lambda ; a:f32[2,4] b:f32[3,4]. let "
        "c:f32[2,3] = dot_general[dimension_numbers=(((1,), (1,)), ((), ()))] a b in (c,) }"
    )
    # Reordering two free dims would change the output's layout: the transpose stays.
    fn = lambda a, b: xnp.tensordot(a.transpose(1, 0, 2), b, axes=1)  # noqa: E731
    assert counts(fn, np.ones((2, 3, 4), F32), np.ones((4, 5), F32)) == {}


def test_transposed_matmul_is_the_swapped_matmul():
    fn = lambda a, b: (a @ b).T  # noqa: E731
    assert simplified(fn, np.ones((2, 4), F32), np.ones((4, 3), F32)) == (
        "{ lambda ; a:f32[2,4] b:f32[4,3]. let "
        "c:f32[3,2] = dot_general[dimension_numbers=(((0,), (1,)), ((), ()))] b a in (c,) }"
    )
    batched = lambda a, b: xnp.swapaxes(a @ b, 1, 2)  # noqa: E731
    assert counts(batched, np.ones((5, 2, 4), F32), np.ones((5, 4, 3), F32)) == {
        "transposed_dot": 1
    }
    # The product is read elsewhere too: transposing it is cheaper than a second matmul.
    shared = lambda a, b: ((a @ b).T, a @ b)  # noqa: E731
    closed, _ = run_pass(cse, trace(shared, np.ones((2, 4), F32), np.ones((4, 3), F32)))
    assert run_pass(simplify, closed)[1] == {}


def test_rules_inside_sub_jaxprs():
    from numbax.tracer.control_flow import cond

    fn = lambda p, x: cond(p, lambda v: v * 1.0, lambda v: -v, x)  # noqa: E731
    closed, changes = run_pass(simplify, trace(fn, True, x3))
    assert changes == {"multiply_by_one": 1}
    branch = closed.eqns[-1].params["branches"][1]
    assert str(branch) == "{ lambda ; a:f32[3]. let in (a,) }"
    ir.typecheck(closed)
