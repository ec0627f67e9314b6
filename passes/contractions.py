"""Contractions as GEMMs: each ``dot_general`` put in the form that every backend runs as
one matrix product over folded dimensions, with no copy of an operand.

A ``dot_general`` *folds* when each operand's dimensions lie in memory as three blocks,
batch dims first, then the free and the contracting dims in either order
(``(batch, free, contract)`` or ``(batch, contract, free)``), each block in the order of
its pairing with the other operand. Each block is then one dimension of a contiguous
view: the batch dims one batch of B·H·..., the free dims a GEMM's M (or N), the
contracting dims its K, and the result ``(batch, lhs free, rhs free)`` is the GEMM's
output in memory order. The backends read a folding product through such views, never
a copy (``backends/cpu/contraction.py`` reshapes, ``backends/cuda/contraction.py``
indexes), and a product that does not fold is copied into one that does. So the form
is the folded GEMM itself, and this pass leaves it as one ``dot_general``: writing the
views out as ``reshape`` equations around a 2-D product would change no memory access,
and would cut the product off from its fused epilogue (a contraction kernel's
elementwise ops run over the product's own output shape, ``ir/higher_order.py``).

Two rewrites, each taken only when its result folds:

- ``batch_sum_as_contraction``: a sum over batch dims of a product read only by that
  sum is a contraction over them. The weight gradient of ``x:(B,H,W,K) @ w:(K,O)``
  traces as B·H products ``(K, W) @ (W, O)`` and a sum over (B, H); it becomes one
  GEMM with K = B·H·W (768 small products and a reduction in a small CNN, one call
  now). Floating-point addition is reassociated, as any BLAS does within a product.
- ``contract_pairs_ordered``: contracting pairs listed in another order than the
  operands' memory order (``np.tensordot(a, b, axes=([1, 0], [1, 0]))`` lists a's dim 1
  first) are listed in the order that leaves the fewest elements to copy (here none);
  the sum is the same in any order of the pairs. Where no order folds both operands
  (``einsum('ij,ji->', a, b)``), one of them is still copied.

And one that leaves the product's form:

- ``outer_products_as_multiplies``: a float product whose contracting dims all have size
  one (or that has none) sums one product per output element: it is the multiply of its
  operands broadcast to the output, an elementwise equation fusion can put in a loop
  with its neighbours. As a GEMM of depth one it was a BLAS call per batch that zeroes
  its output before adding into it (per-example weight gradients under ``vmap(grad)``:
  64 products of 256 x 1 @ 1 x 128, 8 MiB written twice). Each element is ``a*b + 0``,
  the sum of one product as NumPy's matmul and BLAS compute it: the product itself,
  exactly, with a -0 turned +0 as theirs (XLA's algebraic simplifier makes the same
  rewrite without the zero).

A product left as it was is counted with its reason (``kept_...``) on the pass log.
"""

from __future__ import annotations

import math
from collections import Counter

from ..ir.core import ClosedJaxpr, Eqn, Jaxpr, Literal, Var
from ..ir.primitive import PRIMITIVES
from .rewrite import Rebuilder, map_subjaxprs, subjaxprs, use_counts

Pairs = tuple[tuple[int, ...], tuple[int, ...]]  # the lhs's dims, the rhs's dims
DimensionNumbers = tuple[Pairs, Pairs]  # (contracting, batch)


def run(closed: ClosedJaxpr) -> tuple[ClosedJaxpr, Counter]:
    counts: Counter = Counter()
    return ClosedJaxpr(fold_contractions(closed.jaxpr, counts), closed.consts), counts


def fold_contractions(jaxpr: Jaxpr, counts: Counter | None = None) -> Jaxpr:
    """``jaxpr`` with its products in folding form where a rewrite gets them there."""
    counts = Counter() if counts is None else counts
    summed = _summed_products(jaxpr, counts)
    taken = {id(dot) for dot, _ in summed.values()}
    out = Rebuilder()
    for eqn in jaxpr.eqns:
        if id(eqn) in taken:  # computed by the sum that alone reads it
            continue
        batch_sum = summed.get(id(eqn))
        eqn = out.substituted(eqn)
        if subjaxprs(eqn):
            out.add(map_subjaxprs(eqn, lambda sub: fold_contractions(sub, counts)))
        elif batch_sum is not None:
            dot, numbers = batch_sum
            out.alias(eqn.outputs[0], _batch_sum_as_contraction(out, eqn, dot, numbers))
            counts["batch_sums_folded"] += 1
        elif eqn.prim.name == "dot_general" and _is_outer_product(eqn):
            out.alias(eqn.outputs[0], _outer_product_as_multiply(out, eqn))
            counts["outer_products_as_multiplies"] += 1
        elif eqn.prim.name == "dot_general":
            _order_contract_pairs(out, eqn, counts)
        else:
            out.add(eqn)
    return out.finish(jaxpr)


# ------------------------------------------------------------------------- folding


def folds(shape: tuple, batch, free, contract) -> bool:
    """Whether an operand of ``shape`` lies as (batch, free, contract) or (batch,
    contract, free) blocks in memory, each block in the listed order: a view of it is
    then a (batch, rows, depth) or transposed matrix per batch, no copy."""
    order = list(range(len(shape)))
    return order in (
        list(batch) + list(free) + list(contract),
        list(batch) + list(contract) + list(free),
    )


def operand_groups(lhs_ndim: int, rhs_ndim: int, numbers: DimensionNumbers):
    """Each operand's (batch, free, contract) dims, in dimension-number order."""
    (lhs_contract, rhs_contract), (lhs_batch, rhs_batch) = numbers
    groups = []
    for ndim, batch, contract in (
        (lhs_ndim, lhs_batch, lhs_contract),
        (rhs_ndim, rhs_batch, rhs_contract),
    ):
        free = tuple(d for d in range(ndim) if d not in batch and d not in contract)
        groups.append((tuple(batch), free, tuple(contract)))
    return groups


def folding_operands(lhs_shape: tuple, rhs_shape: tuple, numbers: DimensionNumbers) -> list[bool]:
    """Whether the lhs and the rhs of a product with ``numbers`` fold (``folds``)."""
    groups = operand_groups(len(lhs_shape), len(rhs_shape), numbers)
    return [
        folds(shape, *group) for shape, group in zip((lhs_shape, rhs_shape), groups, strict=True)
    ]


def _copied_elements(lhs_shape, rhs_shape, numbers) -> int:
    """How many operand elements a backend copies to make the product fold."""
    sizes = (math.prod(lhs_shape), math.prod(rhs_shape))
    flags = folding_operands(lhs_shape, rhs_shape, numbers)
    return sum(size for size, ok in zip(sizes, flags, strict=True) if not ok)


def _with_pairs_ordered(lhs_shape, rhs_shape, numbers: DimensionNumbers) -> DimensionNumbers:
    """``numbers`` with the contracting pairs in the order that leaves the fewest operand
    elements to copy: as listed, by the lhs's dims, or by the rhs's (in that preference)."""
    (lhs_contract, rhs_contract), batch = numbers
    pairs = list(zip(lhs_contract, rhs_contract, strict=True))
    candidates = [numbers]
    for side in (0, 1):
        ordered = sorted(pairs, key=lambda pair, side=side: pair[side])
        candidates.append(((tuple(p[0] for p in ordered), tuple(p[1] for p in ordered)), batch))
    return min(candidates, key=lambda c: _copied_elements(lhs_shape, rhs_shape, c))


# ----------------------------------------------------------------- contract pairs


def _order_contract_pairs(out: Rebuilder, eqn: Eqn, counts: Counter) -> None:
    lhs, rhs = eqn.inputs
    numbers = eqn.params["dimension_numbers"]
    ordered = _with_pairs_ordered(lhs.aval.shape, rhs.aval.shape, numbers)
    if ordered == numbers:
        if not all(folding_operands(lhs.aval.shape, rhs.aval.shape, numbers)):
            counts["kept_operand_order_not_foldable"] += 1
        out.add(eqn)
        return
    counts["contract_pairs_ordered"] += 1
    out.add(eqn.replace(params={**eqn.params, "dimension_numbers": ordered}))


# -------------------------------------------------------------- sums over batches


def _summed_products(jaxpr: Jaxpr, counts: Counter) -> dict[int, tuple[Eqn, DimensionNumbers]]:
    """The ``reduce_sum`` equations (by id) that sum batch dims of a product they alone
    read, each with that product and the dimension numbers of the product that
    contracts those dims too."""
    producers = {v: e for e in jaxpr.eqns for v in e.outputs}
    uses = use_counts(jaxpr)
    found = {}
    for eqn in jaxpr.eqns:
        if eqn.prim.name != "reduce_sum" or not isinstance(eqn.inputs[0], Var):
            continue
        dot = producers.get(eqn.inputs[0])
        if dot is None or dot.prim.name != "dot_general":
            continue
        if dot.outputs[0].aval.dtype.kind == "b":  # a boolean product is an or of ands
            continue
        n_batch = len(dot.params["dimension_numbers"][1][0])
        summed = [a for a in eqn.params["axes"] if a < n_batch]
        if not summed:
            continue
        if uses[dot.outputs[0]] != 1:
            counts["kept_batch_sum_product_read_elsewhere"] += 1
            continue
        numbers = _contracting_batch_dims(dot, summed)
        lhs, rhs = dot.inputs
        if not all(folding_operands(lhs.aval.shape, rhs.aval.shape, numbers)):
            counts["kept_batch_sum_not_foldable"] += 1
            continue
        found[id(eqn)] = (dot, numbers)
    return found


def _contracting_batch_dims(dot: Eqn, summed: list[int]) -> DimensionNumbers:
    """``dot``'s dimension numbers with its batch dims ``summed`` (their positions in the
    output) moved to the contracting dims, pairs in their folding order."""
    (lhs_contract, rhs_contract), (lhs_batch, rhs_batch) = dot.params["dimension_numbers"]
    kept = [i for i in range(len(lhs_batch)) if i not in summed]
    numbers = (
        (
            tuple(lhs_batch[i] for i in summed) + tuple(lhs_contract),
            tuple(rhs_batch[i] for i in summed) + tuple(rhs_contract),
        ),
        (tuple(lhs_batch[i] for i in kept), tuple(rhs_batch[i] for i in kept)),
    )
    lhs, rhs = dot.inputs
    return _with_pairs_ordered(lhs.aval.shape, rhs.aval.shape, numbers)


def _batch_sum_as_contraction(out: Rebuilder, total: Eqn, dot: Eqn, numbers) -> Var:
    """The product contracting the summed batch dims, then the sum of the axes it did
    not take (free dims summed too), at their places in the smaller output."""
    lhs, rhs = (out.read(a) for a in dot.inputs)
    product = out.emit1(
        PRIMITIVES["dot_general"], [lhs, rhs], dot.source_info, dimension_numbers=numbers
    )
    n_batch = len(dot.params["dimension_numbers"][1][0])
    n_summed = sum(1 for a in total.params["axes"] if a < n_batch)
    rest = tuple(a - n_summed for a in total.params["axes"] if a >= n_batch)
    if not rest:
        return product
    params = {**total.params, "axes": rest}
    return out.emit1(PRIMITIVES["reduce_sum"], [product], total.source_info, **params)


# ---------------------------------------------------------------- outer products


def _is_outer_product(eqn: Eqn) -> bool:
    """A float or complex product of one dtype whose contracting dims are all of size 1."""
    lhs, rhs = eqn.inputs
    (lhs_contract, _), _ = eqn.params["dimension_numbers"]
    same_dtype = lhs.aval.dtype == rhs.aval.dtype == eqn.outputs[0].aval.dtype
    return (
        same_dtype
        and lhs.aval.dtype.kind in "fc"
        and all(lhs.aval.shape[d] == 1 for d in lhs_contract)
    )


def _outer_product_as_multiply(out: Rebuilder, eqn: Eqn) -> Var:
    """Each operand without its contracting dims (size 1), its (batch, free) dims in the
    output's order, broadcast to the output's shape; then their product, plus zero."""
    numbers = eqn.params["dimension_numbers"]
    shape = eqn.outputs[0].aval.shape
    groups = operand_groups(len(eqn.inputs[0].aval.shape), len(eqn.inputs[1].aval.shape), numbers)
    n_batch, n_lhs_free = len(groups[0][0]), len(groups[0][1])
    placed = []
    for side, (operand, (batch, free, contract)) in enumerate(zip(eqn.inputs, groups, strict=True)):
        x, source = out.read(operand), eqn.source_info
        kept = [d for d in range(len(operand.aval.shape)) if d not in contract]
        if contract:
            sizes = tuple(operand.aval.shape[d] for d in kept)
            x = out.emit1(PRIMITIVES["reshape"], [x], source, new_sizes=sizes)
        order = tuple(kept.index(d) for d in (*batch, *free))
        if order != tuple(range(len(order))):
            x = out.emit1(PRIMITIVES["transpose"], [x], source, permutation=order)
        start = n_batch + (n_lhs_free if side else 0)
        dims = (*range(n_batch), *range(start, start + len(free)))
        if len(dims) != len(shape):
            x = out.emit1(
                PRIMITIVES["broadcast_in_dim"], [x], source, shape=shape, broadcast_dimensions=dims
            )
        placed.append(x)
    product = out.emit1(PRIMITIVES["mul"], placed, eqn.source_info)
    zero = Literal(0, eqn.outputs[0].aval.dtype)
    return out.emit1(PRIMITIVES["add"], [product, zero], eqn.source_info)
