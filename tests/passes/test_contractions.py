"""Contractions as GEMMs (passes/contractions.py): a sum over a product's batch dims is a
contraction over them, contracting pairs are listed in their operands' memory order, and
each product then folds into one GEMM over its dims. On the IR, on values against NumPy
on every backend, on gradients against finite differences, and on the CPU's code."""

from __future__ import annotations

import re
from collections import Counter

import numpy as np
import pytest
from passes_util import assert_same_values, kernels, optimize, prim_names, trace

import numbax
from numbax.passes import contractions

rng = np.random.default_rng(36)
B, H, W, K, OUT = 2, 3, 4, 5, 6


def normal(*shape):
    return rng.standard_normal(shape)


def weight_gradient(w, x):
    """The gradient of an N-D @ 2-D product's weight: B·H products and a sum, as traced."""
    return numbax.grad(lambda w, x: np.sum(np.tanh(x @ w)))(w, x)


def dense_over_sequence(x, w):
    """``x:(B,T,D) @ w:(D,O)``: the forward and both gradients."""
    return numbax.value_and_grad(lambda x, w: np.sum(np.sin(x @ w)), argnums=(0, 1))(x, w)


def batch_sum_kept(x, g):
    """Summing the leading batch dim only: the product would contract dims 0 and 2 of
    each operand with dim 1 between them, which no view folds."""
    return np.einsum("bhwk,bhwo->bhko", x, g).sum(axis=0)


def contract_in_reverse(a, b):
    return np.tensordot(a, b, axes=([1, 0], [1, 0]))


def contract_around_a_free_dim(a, b):
    return np.tensordot(a, b, axes=([0, 2], [0, 1]))


# name: (function, arguments, dimension numbers of the one product after the pipeline)
FOLDED = {
    "weight_gradient": (
        weight_gradient,
        (normal(K, OUT), normal(B, H, W, K)),
        None,  # its forward product is a second one, checked by the test below
    ),
    "weight_gradient_einsum": (
        lambda x, g: np.einsum("bhwk,bhwo->ko", x, g),
        (normal(B, H, W, K), normal(B, H, W, OUT)),
        (((0, 1, 2), (0, 1, 2)), ((), ())),
    ),
    "doitgen": (
        lambda a, c4: np.einsum("rqs,sp->rqp", a, c4),
        (normal(3, 4, 5), normal(5, 5)),
        (((2,), (0,)), ((), ())),
    ),
    "attention_scores": (
        lambda q, k: np.einsum("bhtd,bhsd->bhts", q, k),
        (normal(B, H, 4, 5), normal(B, H, 3, 5)),
        (((3,), (3,)), ((0, 1), (0, 1))),
    ),
    "attention_matmul": (
        lambda q, k: q @ np.swapaxes(k, -1, -2),
        (normal(B, H, 4, 5), normal(B, H, 3, 5)),
        (((3,), (3,)), ((0, 1), (0, 1))),
    ),
    "contract_in_reverse": (
        contract_in_reverse,
        (normal(3, 4, 5), normal(3, 4, 6)),
        (((0, 1), (0, 1)), ((), ())),
    ),
}

KEPT = {
    "batch_sum_kept": (batch_sum_kept, (normal(B, H, W, K), normal(B, H, W, OUT))),
    "contract_around_a_free_dim": (contract_around_a_free_dim, (normal(3, 4, 5), normal(3, 5, 6))),
}


def products(closed) -> list:
    """Every dot_general of a program, in kernel bodies too."""
    found = []
    for eqn in closed.jaxpr.eqns:
        if eqn.prim.name == "dot_general":
            found.append(eqn)
        elif eqn.prim.name == "kernel":
            found += [e for e in eqn.params["jaxpr"].eqns if e.prim.name == "dot_general"]
    return found


def assert_folds(dot) -> None:
    lhs, rhs = dot.inputs
    numbers = dot.params["dimension_numbers"]
    assert contractions.folding_operands(lhs.aval.shape, rhs.aval.shape, numbers) == [True] * 2


# --------------------------------------------------------------------------------- IR


def test_weight_gradient_is_one_product_over_the_folded_dims():
    w, x = FOLDED["weight_gradient"][1]
    traced = trace(weight_gradient, w, x)
    traced_dims = [
        e.params["dimension_numbers"] for e in traced.eqns if e.prim.name == "dot_general"
    ]
    assert (((2,), (2,)), ((0, 1), (0, 1))) in traced_dims  # B·H products, then a sum
    fused, log = optimize(weight_gradient, w, x)
    assert log.totals("contractions") == {"batch_sums_folded": 1}
    assert_same_values(traced, fused, (w, x))
    forward, gradient = products(fused)
    assert gradient.params["dimension_numbers"] == (((0, 1, 2), (0, 1, 2)), ((), ()))
    assert gradient.outputs[0].aval.shape == (K, OUT)
    assert_folds(forward)
    assert_folds(gradient)
    assert "reduce_sum" not in prim_names(fused)  # nothing left to sum


@pytest.mark.parametrize("name", [n for n, case in FOLDED.items() if case[2] is not None])
def test_product_folds_into_one_gemm(name):
    fn, args, numbers = FOLDED[name]
    fused, _ = optimize(fn, *args)
    assert_same_values(trace(fn, *args), fused, args)
    (dot,) = products(fused)
    assert dot.params["dimension_numbers"] == numbers
    assert_folds(dot)
    assert [k.params["kind"] for k in kernels(fused)].count("contraction") == 1


def test_dense_layer_over_a_sequence_forward_and_both_gradients_fold():
    x, w = normal(B, 7, K), normal(K, OUT)
    fused, log = optimize(dense_over_sequence, x, w)
    assert_same_values(trace(dense_over_sequence, x, w), fused, (x, w))
    dots = products(fused)
    assert len(dots) == 3
    for dot in dots:
        assert dot.params["dimension_numbers"][1] == ((), ())  # no batch of small products
        assert_folds(dot)
    assert log.totals("contractions")["batch_sums_folded"] == 1


def test_contract_pairs_are_listed_in_memory_order():
    a, b = FOLDED["contract_in_reverse"][1]
    traced = trace(contract_in_reverse, a, b)
    (before,) = [e for e in traced.eqns if e.prim.name == "dot_general"]
    assert before.params["dimension_numbers"] == (((1, 0), (1, 0)), ((), ()))
    assert contractions.folding_operands(
        (3, 4, 5), (3, 4, 6), before.params["dimension_numbers"]
    ) == [False, False]
    rewritten, counts = contractions.run(traced)
    assert counts == Counter(contract_pairs_ordered=1)
    assert_same_values(traced, rewritten, (a, b))


@pytest.mark.parametrize("name", KEPT)
def test_product_that_cannot_fold_is_kept_as_it_was(name):
    fn, args = KEPT[name]
    cleaned = numbax.passes.clean(trace(fn, *args))
    rewritten, counts = contractions.run(cleaned)
    assert str(rewritten) == str(cleaned)
    assert sum(v for k, v in counts.items() if k.startswith("kept_")) == 1
    assert not any(v for k, v in counts.items() if not k.startswith("kept_"))


def test_batch_sum_of_a_product_read_elsewhere_is_kept():
    def both(x, g):
        batched = np.einsum("bhwk,bhwo->bhko", x, g)
        return batched.sum(axis=(0, 1)), batched

    args = (normal(B, H, W, K), normal(B, H, W, OUT))
    cleaned = numbax.passes.clean(trace(both, *args))
    rewritten, counts = contractions.run(cleaned)
    assert str(rewritten) == str(cleaned)
    assert counts["kept_batch_sum_product_read_elsewhere"] == 1


def test_batch_sum_that_also_sums_free_dims_keeps_a_smaller_sum():
    def total(x, g):
        return np.einsum("bhwk,bhwo->bhko", x, g).sum(axis=(0, 1, 3))

    args = (normal(B, H, W, K), normal(B, H, W, OUT))
    traced = trace(total, *args)
    rewritten, counts = contractions.run(numbax.passes.clean(traced))
    assert counts["batch_sums_folded"] == 1
    assert_same_values(traced, rewritten, args)
    (dot,) = products(rewritten)
    assert dot.params["dimension_numbers"][1] == ((), ())
    (total_eqn,) = [e for e in rewritten.eqns if e.prim.name == "reduce_sum"]
    assert total_eqn.params["axes"] == (1,)


def test_products_in_a_loop_body_are_folded():
    def body(carry, x):  # the product reads the carry: it stays in the loop (scan_products)
        return carry + np.einsum("bhwk,bhwo->bhko", x, x * carry[0, 0]).sum(axis=(0, 1)), None

    xs = normal(2, B, H, W, K)
    program = lambda xs: numbax.lax.scan(body, np.zeros((K, K)), xs)[0]  # noqa: E731
    traced = trace(program, xs)
    rewritten, counts = contractions.run(numbax.passes.clean(traced))
    assert counts["batch_sums_folded"] == 1
    assert_same_values(traced, rewritten, (xs,))


# --------------------------------------------------------------------------- values


def numpy_weight_gradient(w, x):
    cotangent = 1.0 - np.tanh(x @ w) ** 2
    return np.einsum("bhwk,bhwo->ko", x, cotangent)


@pytest.mark.parametrize("name", [*FOLDED, *KEPT])
def test_values_match_numpy(backend, name):
    fn, args = (FOLDED.get(name) or KEPT[name])[:2]
    got = backend.to_host(numbax.jit(fn, backend=backend)(*args))
    want = numpy_weight_gradient(*args) if name == "weight_gradient" else fn(*args)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_dense_layer_over_a_sequence_matches_numpy(backend):
    x, w = normal(B, 7, K), normal(K, OUT)
    value, (dx, dw) = backend.to_host(numbax.jit(dense_over_sequence, backend=backend)(x, w))
    cotangent = np.cos(x @ w)
    np.testing.assert_allclose(value, np.sum(np.sin(x @ w)), rtol=1e-12)
    np.testing.assert_allclose(dx, cotangent @ w.T, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(dw, np.einsum("btk,bto->ko", x, cotangent), rtol=1e-12, atol=1e-12)


# ------------------------------------------------------------------------ gradients


def central_differences(fn, x, step=1e-6):
    grad = np.zeros_like(x)
    for index in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[index] += step
        down[index] -= step
        grad[index] = (fn(up) - fn(down)) / (2 * step)
    return grad


GRADIENT_CASES = {
    # The weight gradient of the batch-summed product, through the rewritten product.
    "batch_sum": lambda x, g: np.sum(np.tanh(np.einsum("bhwk,bhwo->bhko", x, g).sum(axis=(0, 1)))),
    "contract_in_reverse": lambda a, b: np.sum(np.tanh(contract_in_reverse(a, b))),
}


@pytest.mark.parametrize("name", GRADIENT_CASES)
def test_gradients_through_folded_products_match_finite_differences(backend, name):
    fn = GRADIENT_CASES[name]
    args = (normal(B, H, W, K), normal(B, H, W, OUT)) if name == "batch_sum" else FOLDED[name][1]
    got = backend.to_host(numbax.jit(numbax.grad(fn, argnums=(0, 1)), backend=backend)(*args))
    wants = (
        central_differences(lambda a: fn(a, args[1]), args[0]),
        central_differences(lambda b: fn(args[0], b), args[1]),
    )
    for g, want in zip(got, wants, strict=True):
        np.testing.assert_allclose(g, want, rtol=1e-6, atol=1e-7)


# --------------------------------------------------------------------- generated code


def product_calls(source: str) -> list[tuple[str, bool]]:
    """Each BLAS call of generated ``source`` (``gemm``, ``np.dot``, ``threaded_dot``), and
    whether a ``for`` loop of its function encloses it."""
    lines = source.splitlines()
    calls = []
    for k, line in enumerate(lines):
        if line.lstrip().startswith("#") or not re.search(r"\b(gemm|dot|threaded_dot)\(", line):
            continue
        indent = len(line) - len(line.lstrip())
        in_loop = False
        for above in reversed(lines[:k]):
            if above.startswith("def "):
                break
            stripped = above.lstrip()
            if stripped.startswith("for ") and len(above) - len(stripped) < indent:
                in_loop = True
        calls.append((line.strip(), in_loop))
    return calls


def test_cpu_code_of_the_weight_gradient_is_one_gemm_call():
    w, x, g = normal(K, OUT), normal(8, 6, 5, K), normal(8, 6, 5, OUT)
    only_gradient = lambda w, x, g: numbax.grad(lambda w: np.sum((x @ w) * g))(w)  # noqa: E731
    lowered = numbax.jit(only_gradient, backend="cpu").lower(w, x, g)
    (dot,) = products(lowered.fused)
    assert dot.params["dimension_numbers"] == (((0, 1, 2), (0, 1, 2)), ((), ()))
    assert "reduce_sum" not in prim_names(lowered.fused)  # no sum of products after it
    source = lowered.source()
    ((call, in_loop),) = product_calls(source)  # one call, ...
    assert not in_loop, call  # ... not a loop of 8 * 6 small products
    got = numbax.jit(only_gradient, backend="cpu")(w, x, g)
    np.testing.assert_allclose(got, np.einsum("bhwk,bhwo->ko", x, g), rtol=1e-12)


def test_cpu_code_of_a_batch_of_products_loops_over_the_batch():
    """The oracle of the test above: ``product_calls`` sees the loop it looks for."""
    x, g = normal(8, 6, 5, K), normal(8, 6, 5, OUT)
    batched = lambda x, g: np.einsum("bhwk,bhwo->bhko", x, g)  # noqa: E731
    calls = product_calls(numbax.jit(batched, backend="cpu").lower(x, g).source())
    assert calls and all(in_loop for _, in_loop in calls), calls


# ---------------------------------------------------------------- outer products

# name: (function, arguments): products whose contracting dims all have size 1, or none.
OUTER = {
    "column_times_row": (lambda a, b: a @ b, (normal(5, 1), normal(1, 4))),
    "per_example_weight_gradient": (
        lambda x, g: np.einsum("bi,bo->bio", x, g),
        (normal(3, 5), normal(3, 4)),
    ),
    "batched_depth_one": (lambda a, b: a @ b, (normal(3, 5, 1), normal(3, 1, 4))),
    "depth_one_read_transposed": (
        lambda a, b: np.einsum("kbi,bko->bio", a, b),
        (normal(1, 3, 5), normal(3, 1, 4)),
    ),
    "batch_not_leading": (
        lambda a, b: np.einsum("ibk,kob->boi", a, b),
        (normal(5, 3, 1), normal(1, 4, 3)),
    ),
    "np_outer": (np.outer, (normal(5), normal(4))),
    "complex": (
        lambda a, b: a @ b,
        (normal(5, 1) + 1j * normal(5, 1), normal(1, 4) - 2j * normal(1, 4)),
    ),
    "float32": (
        lambda a, b: a @ b,
        (normal(6, 1).astype(np.float32), normal(1, 5).astype(np.float32)),
    ),
}


@pytest.mark.parametrize("name", OUTER)
def test_outer_product_is_a_multiply_of_broadcasts(name):
    fn, args = OUTER[name]
    traced = trace(fn, *args)
    fused, log = optimize(fn, *args)
    assert not products(fused), "a product of depth one is left a dot_general"
    if any(e.prim.name == "dot_general" for e in traced.eqns):
        assert log.totals("contractions").get("outer_products_as_multiplies") == 1
    assert_same_values(traced, fused, args)


@pytest.mark.parametrize("name", OUTER)
def test_outer_product_values_are_numpys(backend, name):
    """Each element is one product: NumPy's, exactly."""
    fn, args = OUTER[name]
    got = backend.to_host(numbax.jit(fn, backend=backend)(*args))
    want = np.einsum(*_einsum_of(name), *args) if name != "np_outer" else np.outer(*args)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


def _einsum_of(name: str) -> tuple[str]:
    """The products of ``OUTER`` as one exact einsum each (a product per element)."""
    return {
        "column_times_row": ("ik,ko->io",),
        "per_example_weight_gradient": ("bi,bo->bio",),
        "batched_depth_one": ("bik,bko->bio",),
        "depth_one_read_transposed": ("kbi,bko->bio",),
        "batch_not_leading": ("ibk,kob->boi",),
        "complex": ("ik,ko->io",),
        "float32": ("ik,ko->io",),
    }[name]


def test_negative_zero_products_are_numpys_positive_zeros(backend):
    """NumPy's matmul sums one product from zero: a -0 product is +0, as here."""
    a, b = np.array([[-0.0], [2.0]]), np.array([[3.0, -0.0]])
    got = backend.to_host(numbax.jit(lambda a, b: a @ b, backend=backend)(a, b))
    want = a @ b
    assert np.array_equal(got, want) and not np.signbit(want).any()
    assert np.array_equal(np.signbit(got), np.signbit(want))


def test_integer_and_deeper_products_stay_products():
    ints = (np.arange(5).reshape(5, 1), np.arange(4).reshape(1, 4))
    fused, log = optimize(lambda a, b: a @ b, *ints)
    assert len(products(fused)) == 1 and not log.totals("contractions")
    fused, _ = optimize(lambda a, b: a @ b, normal(5, 2), normal(2, 4))
    assert len(products(fused)) == 1


def test_per_example_gradients_under_vmap_have_no_products_of_depth_one(backend):
    """vmap(grad) of a dense layer: the per-example weight gradient is the outer product of
    the example and its cotangent; its values against the closed form."""
    x, w = normal(4, 5), normal(5, 3)

    def loss(w, example):
        return np.sum(np.tanh(example @ w))

    per_example = numbax.vmap(numbax.grad(loss), in_axes=(None, 0))
    fused, log = optimize(per_example, w, x)
    assert log.totals("contractions").get("outer_products_as_multiplies") == 1
    assert all(
        all(dot.inputs[0].aval.shape[d] > 1 for d in dot.params["dimension_numbers"][0][0])
        for dot in products(fused)
    )
    got = backend.to_host(numbax.jit(per_example, backend=backend)(w, x))
    want = np.einsum("bi,bo->bio", x, 1.0 - np.tanh(x @ w) ** 2)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
