"""``einsum`` contracts each pair in the order its output wants (``numpy_lib/einsum.py``):
no transpose after the product where the output's labels are the free labels of one
operand, then the other's."""

from __future__ import annotations

import numpy as np
import pytest

import numbax


@pytest.mark.parametrize(
    "subscripts, shapes",
    [
        ("bhwpc,pco->bhwo", [(2, 5, 4, 9, 3), (9, 3, 6)]),  # a convolution's GEMM
        ("pco,bhwpc->bhwo", [(9, 3, 6), (2, 5, 4, 9, 3)]),  # the same, operands swapped
        ("ij,jk->ik", [(4, 5), (5, 3)]),
        ("ij,kj->ki", [(4, 5), (3, 5)]),
        ("bij,bjk->bik", [(2, 4, 5), (2, 5, 3)]),
    ],
)
def test_a_pair_in_the_output_s_order_needs_no_transpose(subscripts, shapes):
    rng = np.random.default_rng(0)
    operands = [rng.standard_normal(shape) for shape in shapes]
    closed = numbax.make_jaxpr(lambda *xs: np.einsum(subscripts, *xs))(*operands)
    names = [eqn.prim.name for eqn in closed.jaxpr.eqns]
    assert names.count("dot_general") == 1 and "transpose" not in names, names
    got = numbax.jit(lambda *xs: np.einsum(subscripts, *xs))(*operands)
    np.testing.assert_allclose(got, np.einsum(subscripts, *operands), rtol=1e-12)


def test_an_output_in_neither_order_still_gets_its_transpose():
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((4, 5, 2)), rng.standard_normal((5, 3))
    closed = numbax.make_jaxpr(lambda a, b: np.einsum("ijk,jl->kli", a, b))(a, b)
    assert "transpose" in [eqn.prim.name for eqn in closed.jaxpr.eqns]
    got = numbax.jit(lambda a, b: np.einsum("ijk,jl->kli", a, b))(a, b)
    np.testing.assert_allclose(got, np.einsum("ijk,jl->kli", a, b), rtol=1e-12)
