"""``einsum`` and ``einsum_path``: NumPy's Einstein summation, lowered to primitives.

A call is parsed into one label string per operand and one for the output: an ellipsis
becomes fresh letters (right-aligned, so its axes broadcast as NumPy's do), and the
operand-list form ``einsum(a, [0, 1], b, [1, 2], [0, 2])`` becomes letters. Then each
operand

- takes its diagonals, for a label repeated within it (the two axes flattened together
  and read with a stride of n + 1: a transpose, a reshape and a strided slice);
- drops the size-1 axes that broadcast against a longer axis of the same label
  elsewhere (the operand is constant along that label);
- sums, before it meets any other operand, the labels no one else needs.

The operands then contract pairwise, each pair one ``dot_general``: left to right by
default as NumPy does, or in the order ``np.einsum_path`` picks when ``optimize=`` asks
for one (shapes are static, so the path is computed while tracing). A final transpose
puts the labels in the output's order.
"""

from __future__ import annotations

import string

import numpy as np

from ..ir import dtypes
from ..ir.errors import NumbaxTypeError, ShapeError, UnsupportedFunctionError, at_line
from ..tracer import lax
from ..tracer.promote import asarray, convert, operand, result_type
from ..tracer.source_info import user_frame_info
from . import ufuncs
from .numpy_construction import slice_axis

_LETTERS = string.ascii_letters  # NumPy's labels: 52 of them


def _error(cls, message):
    return cls(at_line(f"einsum: {message}", user_frame_info()))


def einsum(*operands, out=None, dtype=None, order="K", casting="safe", optimize=False):
    """``numpy.einsum``: every NumPy form (ellipsis, diagonals, implicit output, the
    operand-list form), each pairwise contraction one ``dot_general``.

    >>> import numpy as np, numbax.numpy as xnp
    >>> xnp.einsum("ii", np.arange(4.0).reshape(2, 2))
    array(3.)
    """
    if out is not None:
        raise _error(
            UnsupportedFunctionError,
            "numbax.numpy.einsum(..., out=...) is not supported: use the returned value, or "
            "call numpy.einsum(..., out=...), which numbax traces by writing into out",
        )
    subscripts, arrays = _subscripts_and_operands(operands)
    arrays = _converted(arrays, dtype, casting)
    terms, output = _labels(subscripts, arrays)
    arrays, terms = zip(
        *[_diagonals(x, t, k) for k, (x, t) in enumerate(zip(arrays, terms, strict=True))],
        strict=True,
    )
    arrays, terms = _broadcast(list(arrays), list(terms))
    boolean = arrays[0].dtype == dtypes.bool_
    if boolean:  # NumPy's bool einsum is "or" of "and"s: count, then compare with 0
        arrays = [lax.convert_element_type(x, dtypes.int64) for x in arrays]
    result, term = _contract_all(arrays, terms, output, optimize)
    result, term = _sum_unused(result, term, output)
    result = lax.transpose(result, [term.index(c) for c in output])
    return ufuncs.not_equal(result, np.int64(0)) if boolean else result


def einsum_path(*operands, optimize="greedy", einsum_call=False):
    """``numpy.einsum_path``: it reads only shapes, which are static, so NumPy answers."""
    subscripts, arrays = _subscripts_and_operands(operands)
    shapes = [np.broadcast_to(np.zeros((), np.int8), np.shape(x)) for x in arrays]
    return np.einsum_path(subscripts, *shapes, optimize=optimize, einsum_call=einsum_call)


# ------------------------------------------------------------------ parsing


def _subscripts_and_operands(operands):
    """``(subscripts, arrays)`` from either of NumPy's calling forms."""
    if not operands:
        raise _error(NumbaxTypeError, "no operands given")
    if isinstance(operands[0], str):
        return operands[0], list(operands[1:])
    arrays, terms = list(operands[0::2]), list(operands[1::2])
    output = None
    if len(arrays) > len(terms):  # an odd count: the last sublist is the output's
        output = arrays.pop()
        if arrays and not isinstance(output, (list, tuple)):
            raise _error(NumbaxTypeError, "each operand needs a sublist of its axes' labels")
    subscripts = ",".join(_sublist(t) for t in terms)
    return subscripts + ("" if output is None else "->" + _sublist(output)), arrays


def _sublist(labels) -> str:
    text = []
    for label in labels:
        if label is Ellipsis:
            text.append("...")
        elif isinstance(label, (int, np.integer)) and 0 <= label < len(_LETTERS):
            text.append(_LETTERS[int(label)])
        else:
            raise _error(
                NumbaxTypeError,
                f"a sublist label must be an int in [0, {len(_LETTERS)}) or Ellipsis, "
                f"got {label!r}",
            )
    return "".join(text)


def _converted(arrays, dtype, casting):
    arrays = [operand(x) for x in arrays]
    common = result_type(*arrays)
    if dtype is not None:
        dtype = dtypes.canonicalize(dtype)
        for x in arrays:
            source = result_type(x)
            if not np.can_cast(source, dtype, casting):
                raise _error(
                    NumbaxTypeError,
                    f"an operand of dtype {source} cannot be cast to dtype={dtype} with "
                    f"casting={casting!r} (NumPy refuses it too); pass casting='unsafe' or "
                    "convert the operand",
                )
        common = dtype
    return [asarray(convert(x, common)) for x in arrays]


def _labels(subscripts: str, arrays) -> tuple[list[str], str]:
    """One label string per operand and the output's, with every ellipsis spelled out."""
    spec = subscripts.replace(" ", "")
    if spec.count("->") > 1:
        raise _error(ShapeError, f"{subscripts!r} has more than one '->'")
    inputs, arrow, output = spec.partition("->")
    terms = inputs.split(",")
    if len(terms) != len(arrays):
        raise _error(ShapeError, f"{len(terms)} terms in {subscripts!r} but {len(arrays)} operands")
    for term in [*terms, output]:
        if any(c not in _LETTERS for c in term.replace("...", "")):
            raise _error(
                ShapeError, f"invalid subscript in {term!r}: labels are letters, and '...'"
            )
    named = "".join(terms).replace("...", "")
    fresh = [c for c in _LETTERS if c not in named]
    ranks = [_ellipsis_rank(t, x, k) for k, (t, x) in enumerate(zip(terms, arrays, strict=True))]
    broadcast = "".join(fresh[: max(ranks, default=0)])
    if len(broadcast) < max(ranks, default=0):
        raise _error(ShapeError, "too many axes: NumPy has 52 labels")
    terms = [
        t.replace("...", broadcast[len(broadcast) - r :]) for t, r in zip(terms, ranks, strict=True)
    ]
    if not arrow:
        singles = sorted(c for c in set(named) if named.count(c) == 1)
        return terms, broadcast + "".join(singles)
    if "..." not in output and broadcast and any(ranks):
        raise _error(
            ShapeError,
            "output has more dimensions than subscripts given in einstein sum, but no '...' "
            "ellipsis provided to broadcast the extra dimensions (NumPy raises this too)",
        )
    output = output.replace("...", broadcast)
    for c in output:
        if output.count(c) > 1:
            raise _error(ShapeError, f"output subscript {c!r} appears more than once")
        if not any(c in t for t in terms):
            raise _error(ShapeError, f"output subscript {c!r} does not appear in the inputs")
    return terms, output


def _ellipsis_rank(term: str, x, k: int) -> int:
    named = len(term.replace("...", ""))
    rank = x.ndim - named if "..." in term else 0
    if rank < 0 or ("..." not in term and named != x.ndim):
        raise _error(
            ShapeError,
            f"term {term!r} names {named} axes but operand {k} has shape {tuple(x.shape)}",
        )
    return rank


# ------------------------------------------------------------------ per operand


def _diagonals(x, term: str, k: int):
    """``x`` with each label repeated in ``term`` reduced to its diagonal."""
    while len(set(term)) < len(term):
        label = next(c for c in term if term.count(c) > 1)
        first = term.index(label)
        second = term.index(label, first + 1)
        n = x.shape[first]
        if x.shape[second] != n:
            raise _error(
                ShapeError,
                f"dimensions in operand {k} for collapsing index {label!r} don't match "
                f"({n} != {x.shape[second]})",
            )
        rest = [d for d in range(x.ndim) if d not in (first, second)]
        pair = lax.transpose(x, rest + [first, second])
        flat = lax.reshape(pair, pair.shape[:-2] + (n * n,))
        x = slice_axis(flat, flat.ndim - 1, 0, n * n, n + 1)
        term = "".join(term[d] for d in rest) + label
    return x, term


def _broadcast(arrays, terms):
    """Each label's size agreed across operands; a size-1 axis facing a longer one is
    dropped (the operand is constant along it)."""
    sizes: dict[str, int] = {}
    for x, term in zip(arrays, terms, strict=True):
        for c, n in zip(term, x.shape, strict=True):
            if sizes.get(c, 1) not in (1, n) and n != 1:
                shapes = ", ".join(str(tuple(a.shape)) for a in arrays)
                raise _error(
                    ShapeError,
                    f"operands could not be broadcast together: label {c!r} has sizes "
                    f"{sizes[c]} and {n} (operand shapes {shapes})",
                )
            sizes[c] = max(sizes.get(c, 1), n)
    for k, (x, term) in enumerate(zip(arrays, terms, strict=True)):
        keep = [d for d, c in enumerate(term) if not (x.shape[d] == 1 and sizes[c] > 1)]
        if len(keep) < len(term):
            arrays[k] = lax.reshape(x, [x.shape[d] for d in keep])
            terms[k] = "".join(term[d] for d in keep)
    return arrays, terms


def _sum_unused(x, term: str, keep: str):
    axes = tuple(d for d, c in enumerate(term) if c not in keep)
    if not axes:
        return x, term
    kept = "".join(c for c in term if c in keep)
    if any(x.shape[d] == 0 for d in axes):  # known zero: no loop over nothing
        return lax.full([x.shape[term.index(c)] for c in kept], 0, x.dtype), kept
    return lax.reduce_sum(x, axes), kept


# ------------------------------------------------------------------ contraction


def _contract_all(arrays, terms, output: str, optimize):
    """Contract the operands, in the order ``optimize`` asks for, down to one."""
    pending = list(zip(arrays, terms, strict=True))
    for positions in _path(arrays, terms, output, optimize):
        chosen = [pending[p] for p in positions]
        pending = [o for p, o in enumerate(pending) if p not in positions]
        later = "".join(t for _, t in pending) + output
        current, term = chosen[0]
        for k, (x, t) in enumerate(chosen[1:], 1):
            needed = "".join(t for _, t in chosen[k + 1 :]) + later
            current, term = _contract_pair(current, term, x, t, needed, output)
        pending.append(_sum_unused(current, term, later))
    ((result, term),) = pending
    return result, term


def _in_order(labels: str, output: str) -> int:
    """How many pairs of ``labels`` found in ``output`` are in ``output``'s order."""
    ranks = [output.index(c) for c in labels if c in output]
    return sum(x < y for i, x in enumerate(ranks) for y in ranks[i + 1 :])


def _path(arrays, terms, output, optimize):
    """Positions to contract, step by step (the result joins the end of the list, as in
    ``np.einsum_path``); without ``optimize``, left to right."""
    if optimize is False or optimize is None:
        # After the first step the running result is last: it meets the next operand.
        return [(0,)] + [(0, len(arrays) - k) for k in range(1, len(arrays))]
    if isinstance(optimize, (list, tuple)) and optimize and optimize[0] == "einsum_path":
        return [tuple(step) for step in optimize[1:]]
    if isinstance(optimize, (list, tuple)):
        raise _error(NumbaxTypeError, "optimize= as a list must be a path from np.einsum_path")
    strategy = "greedy" if optimize is True else optimize
    shapes = [np.broadcast_to(np.zeros((), np.int8), x.shape) for x in arrays]
    path, _ = np.einsum_path(",".join(terms) + "->" + output, *shapes, optimize=strategy)
    return [tuple(step) for step in path[1:]]


def _contract_pair(a, ta: str, b, tb: str, later: str, output: str):
    """``a`` and ``b`` as one ``dot_general``: shared labels still needed later are batch
    axes, the other shared ones are contracted. The operand whose free labels come
    first in ``output`` goes first, so the product is in the output's order and needs no
    transpose after it (``bhwpc,pco->bhwo``: a convolution's GEMM, not its transpose)."""
    a, ta = _sum_unused(a, ta, tb + later)
    b, tb = _sum_unused(b, tb, ta + later)
    if _in_order(tb + ta, output) > _in_order(ta + tb, output):
        a, ta, b, tb = b, tb, a, ta
    batch = [c for c in ta if c in tb and c in later]
    contract = [c for c in ta if c in tb and c not in later]
    free_a = [c for c in ta if c not in tb]
    free_b = [c for c in tb if c not in ta]
    term = "".join(batch + free_a + free_b)
    if any(a.shape[ta.index(c)] == 0 for c in contract):  # known zero: no loop over nothing
        sizes = {**dict(zip(tb, b.shape, strict=True)), **dict(zip(ta, a.shape, strict=True))}
        return lax.full([sizes[c] for c in term], 0, a.dtype), term
    numbers = (
        (tuple(ta.index(c) for c in contract), tuple(tb.index(c) for c in contract)),
        (tuple(ta.index(c) for c in batch), tuple(tb.index(c) for c in batch)),
    )
    return lax.dot_general(a, b, numbers), term
