"""Products out of scans: a product that a ``scan`` computes on every iteration from
values known before the loop, or whose result the loop only sums, runs once, as one
product over all the iterations.

- *hoisted*: a ``dot_general`` of scanned slices and loop constants (an RNN's input
  projection ``x_t @ w_x``) is computed before the loop, over the stacked slices, and
  enters the loop as a new scanned operand;
- *sunk*: a carry that only accumulates a product or a sum (``acc + h_t.T @ dz_t``,
  ``acc + dz_t.sum(0)``: the weight and bias gradients of a scan's backward pass) is
  computed after the loop: the scan emits the operands it computes as new ``ys`` (a
  scanned slice is stacked already, as the scanned operand) and one product contracts
  the iteration axis with the others.

Per iteration these are small products (16 x 128 by 128 x 512 in the LSTM step of the
``models`` benchmarks), each paying BLAS's packing; over the loop they are one GEMM of
``length`` times the depth or rows. JAX's scan keeps them in the loop. A sunk sum adds
the iterations' terms inside one product, in its order: results differ from the loop's
by rounding, as a product's do between BLAS libraries.

Stacking costs memory, ``length`` times a value's size: a product whose stacked result
or operands would pass ``STACKED_ELEMENTS`` stays in the loop. The carry left unread
and the work that fed it are dropped by ``loop_dce``.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from ..ir.core import ClosedJaxpr, Eqn, Jaxpr, ShapedArray, Var
from ..ir.primitive import PRIMITIVES
from ..ir.reductions import with_leading_axes
from .rewrite import Rebuilder, map_subjaxprs, use_counts

STACKED_ELEMENTS = 1 << 24  # 64 MiB of float32


def acts_on() -> frozenset[str]:
    """The loops this pass takes products out of (``manager.Pass.acts_on``)."""
    return frozenset({"scan"})


def run(closed: ClosedJaxpr) -> tuple[ClosedJaxpr, Counter]:
    counts: Counter = Counter()
    return ClosedJaxpr(lift_products(closed.jaxpr, counts), closed.consts), counts


def lift_products(jaxpr: Jaxpr, counts: Counter) -> Jaxpr:
    uses = use_counts(jaxpr)
    out = Rebuilder()
    for eqn in jaxpr.eqns:
        eqn = map_subjaxprs(out.substituted(eqn), lambda sub: lift_products(sub, counts))
        if eqn.prim.name != "scan":
            out.add(eqn)
            continue
        # Sums first: a summed product of slices is one product over the iterations,
        # where hoisted it would be one per iteration, then their sum.
        eqn, sums = _stack_summed_terms(eqn, uses, counts)
        eqn = _hoist_products(out, eqn, counts)
        out.add(eqn)
        _sum_after(out, eqn, sums)
    return out.finish(jaxpr)


def _scanned(scan: Eqn) -> dict:
    """``scan``'s body's slice of each scanned operand -> that operand (the slices
    stacked, iterations first)."""
    first_xs = scan.params["num_consts"] + scan.params["num_carry"]
    return dict(zip(scan.params["jaxpr"].invars[first_xs:], scan.inputs[first_xs:], strict=True))


def _hoist_products(out: Rebuilder, scan: Eqn, counts: Counter) -> Eqn:
    """``scan`` without the products of its scanned slices and constants: each computed
    into ``out`` over the stacked slices, its result a new scanned operand."""
    num_consts = scan.params["num_consts"]
    body, length = scan.params["jaxpr"], scan.params["length"]
    consts = dict(zip(body.invars[:num_consts], scan.inputs[:num_consts], strict=True))
    stacked = _scanned(scan)
    # A product a reduction sums stays: in the loop ``contractions`` folds the two into one
    # GEMM, where hoisted every iteration's product would be stored, then summed.
    summed = {a for eqn in body.eqns if eqn.prim.name == "reduce_sum" for a in eqn.inputs}
    kept, sliced, operands = [], [], []
    for eqn in body.eqns:
        if not _hoistable(eqn, consts, stacked, length) or eqn.outputs[0] in summed:
            kept.append(eqn)
            continue
        lhs, rhs = (stacked.get(a, consts.get(a)) for a in eqn.inputs)
        product = _stacked_product(out, eqn, lhs, rhs, [a in stacked for a in eqn.inputs])
        (result,) = eqn.outputs  # inside, the product's value is now its slice
        stacked[result] = product
        sliced.append(result)
        operands.append(product)
    if not sliced:
        return scan
    counts["products_hoisted_from_scans"] += len(sliced)
    body = Jaxpr(body.constvars, body.invars + sliced, kept, body.outvars)
    return scan.replace(inputs=scan.inputs + operands, params={**scan.params, "jaxpr": body})


def _hoistable(eqn: Eqn, consts: dict, stacked: dict, length: int) -> bool:
    if eqn.prim.name != "dot_general" or eqn.outputs[0].aval.dtype.kind == "b":
        return False
    if not all(isinstance(a, Var) and (a in consts or a in stacked) for a in eqn.inputs):
        return False
    return any(a in stacked for a in eqn.inputs) and (
        length * eqn.outputs[0].aval.size <= STACKED_ELEMENTS
    )


def _shifted(dims: tuple, by: int) -> tuple:
    """A product's dimension numbers ``dims`` of an operand with ``by`` axes put in front."""
    return tuple(d + by for d in dims)


def _stacked_product(out: Rebuilder, eqn: Eqn, lhs, rhs, is_stacked: list[bool]) -> Var:
    """``eqn``'s product for every iteration, iterations first: its operands ``lhs`` and
    ``rhs``, the stacked ones (``is_stacked``) with the iteration axis in front."""
    numbers, axis = with_leading_axes(
        eqn.params["dimension_numbers"], lhs.aval.ndim, tuple(is_stacked)
    )
    dot = PRIMITIVES["dot_general"]
    product = out.emit1(dot, [lhs, rhs], eqn.source_info, dimension_numbers=numbers)
    if axis == 0:
        return product
    order = (axis, *(d for d in range(product.aval.ndim) if d != axis))
    return out.emit1(PRIMITIVES["transpose"], [product], eqn.source_info, permutation=order)


@dataclass(frozen=True)
class _Sum:
    """What a carry accumulates: a ``product``, a ``reduction``, or the reduction of a
    product that only it reads (a product with batch dims summed, which ``contractions``
    folds into one GEMM)."""

    product: Eqn | None
    reduction: Eqn | None

    @property
    def operands(self) -> list:
        return (self.product or self.reduction).inputs


def _stack_summed_terms(scan: Eqn, uses: Counter, counts: Counter):
    """``scan`` emitting, as new ``ys``, the operands of the products and reductions its
    carries only accumulate, and those sums: ``(carry index, _Sum, stacked operands)``
    each, for ``_sum_after`` (the carry itself is left to ``loop_dce``)."""
    num_consts, num_carry = scan.params["num_consts"], scan.params["num_carry"]
    body, length = scan.params["jaxpr"], scan.params["length"]
    producers = {v: e for e in body.eqns for v in e.outputs}
    reads = use_counts(body)
    sunk = [
        (k, term)
        for k in range(num_carry)
        if uses[scan.outputs[k]]
        and (term := _summed_term(body, k, num_consts, length, producers, reads)) is not None
    ]
    if not sunk:
        return scan, []
    counts["sums_sunk_from_scans"] += len(sunk)
    stacked = _scanned(scan)
    operands = (a for _, term in sunk for a in term.operands if a not in stacked)
    emitted = list(dict.fromkeys(operands))
    ys = [Var(ShapedArray((length, *v.aval.shape), v.aval.dtype)) for v in emitted]
    stacked.update(zip(emitted, ys, strict=True))
    body = Jaxpr(body.constvars, body.invars, body.eqns, body.outvars + emitted)
    scan = scan.replace(outputs=scan.outputs + ys, params={**scan.params, "jaxpr": body})
    return scan, [(k, term, [stacked[a] for a in term.operands]) for k, term in sunk]


def _sum_after(out: Rebuilder, scan: Eqn, sums: list) -> None:
    """After ``scan``, each of ``sums`` (``_stack_summed_terms``) over all the iterations
    added to its carry's initial value: what every later read of the carry reads."""
    for k, term, stacked in sums:
        total = _over_iterations(out, term, stacked)
        initial = scan.inputs[scan.params["num_consts"] + k]
        out.alias(scan.outputs[k], out.emit1(PRIMITIVES["add"], [initial, total]))


def _summed_term(
    body: Jaxpr, k: int, num_consts: int, length: int, producers: dict, reads: Counter
) -> _Sum | None:
    """What carry ``k`` of a scan body only accumulates (``carry' = carry + term``, the
    carry read nowhere else, the term nowhere else, its operands computed in the loop or
    scanned), or None. ``producers`` and ``reads``: the body's equation of each
    variable, and its reads (``use_counts``)."""
    carry, result = body.invars[num_consts + k], body.outvars[k]
    add = producers.get(result)
    if add is None or add.prim.name != "add" or reads[carry] != 1 or reads[result] != 1:
        return None
    others = [a for a in add.inputs if a is not carry]
    if len(others) != 1 or not isinstance(others[0], Var) or reads[others[0]] != 1:
        return None
    term = producers.get(others[0])
    if term is None or carry.aval.dtype.kind == "b":
        return None
    if term.prim.name == "dot_general":
        summed = _Sum(term, None)
    elif term.prim.name == "reduce_sum":
        inner = producers.get(term.inputs[0])
        if inner is not None and inner.prim.name == "dot_general" and reads[term.inputs[0]] == 1:
            summed = _Sum(inner, term)
        else:
            summed = _Sum(None, term)
    else:
        return None
    invariant = set(body.invars[:num_consts])
    if not all(isinstance(a, Var) and a not in invariant for a in summed.operands):
        return None  # a loop constant's product sums nothing per iteration worth stacking
    if any(length * a.aval.size > STACKED_ELEMENTS for a in summed.operands):
        return None
    return summed


def _over_iterations(out: Rebuilder, term: _Sum, stacked: list) -> Var:
    """``term`` summed over the iterations, from its ``stacked`` operands (iterations
    first): the iteration axis contracted, or reduced, with the others."""
    if term.reduction is not None:
        if term.product is not None:  # the iterations' products, then the sum of all
            stacked = [_stacked_product(out, term.product, *stacked, [True, True])]
        axes = (0, *_shifted(term.reduction.params["axes"], 1))
        reduce_sum = PRIMITIVES["reduce_sum"]
        return out.emit1(reduce_sum, stacked, term.reduction.source_info, axes=axes)
    (lhs_contract, rhs_contract), (lhs_batch, rhs_batch) = term.product.params["dimension_numbers"]
    numbers = (
        ((0, *_shifted(lhs_contract, 1)), (0, *_shifted(rhs_contract, 1))),
        (_shifted(lhs_batch, 1), _shifted(rhs_batch, 1)),
    )
    dot = PRIMITIVES["dot_general"]
    return out.emit1(dot, stacked, term.product.source_info, dimension_numbers=numbers)
