"""``dot_general`` as BLAS calls (``np.dot``), or as a loop nest for integers and booleans.

Every ``dot_general`` is a batch of matrix products once its operands are laid out as
``(batch, free, contract)`` and ``(batch, contract, free)``. An operand already in that
order is only reshaped; one in the transposed order (``x.T @ y``) is reshaped and passed
transposed, which BLAS reads without a copy; any other order is copied once by
``np.ascontiguousarray``. The result is ``(batch, lhs free, rhs free)`` in memory order,
which is exactly ``dot_general``'s output layout, so it is only reshaped.

BLAS runs single-threaded inside compiled code (the executable sets OpenBLAS's thread
count to one for the call and back after it, ``threads.py``): BLAS's own thread pool
would oversubscribe the cores next to ours in parallel kernels, and waking it for a small
product costs more than the product. A large product (a unit's: from a threshold
measured per machine and read at run time, ``calibration.py``) is split into
blocks, one single-threaded BLAS call per thread of the call's parallel loops, in one
``prange`` (``gemm.blocked_gemm``, compiled once, not a parallel loop in every product
unit): of rows, of columns, or of the depth, whichever has the blocks read least
(``split_of``: a weight gradient's long contraction by depth, each block's sum in an
array of its own, added up in block order). OpenBLAS's own threads are not used: after a call
they spin for their next one, and on a machine whose cores are busy with other work a
two-thread OpenBLAS product waited for one of the scheduler's time slices (0.24 ms
became 8 or 16 ms), where Numba's threads sleep until woken. A fused epilogue runs in the
blocks of rows of one ``prange``. The thread count is read when the program runs
(``numba.get_num_threads()``, capped for the call), not written into the source.

A product on one thread is a unit of compilation of its own (``units.write_product``):
``write_dot`` then writes ``into`` the output array the launcher allocated, one ``gemm``
call per batch with the transposes and sizes in the text (``into_array``, ``gemm.py``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...ir.core import ShapedArray
from .loopnest import tuple_source
from .scalar import dtype_source

# A product written inline (in row blocks with a fused epilogue; operands copied first)
# of at least this many flops runs on all threads: one constant, so the launcher's source
# is the same on every machine.
PARALLEL_FLOPS = 1 << 25
# A product unit of at least this many flops calls ``gemm.blocked_gemm``, which splits it
# over the call's threads from the machine's measured threshold, read at run time
# (``calibration.py``: 2^22 to 2^26); a smaller one calls ``gemm`` once.
SPLITTABLE_FLOPS = 1 << 22
MIN_ROWS = 32
# How a large product's blocks split it (``split_of``, ``gemm.blocked_gemm``).
ROWS, DEPTH, COLUMNS = 0, 1, 2
# The thread count a product unit's split is chosen for (``split_of``): the source
# is the same whatever the machine; two threads is the least that splits at all.
SPLIT_THREADS = 2
THREADS_MODULE = "numbax.backends.cpu.threads"
GEMM_MODULE = "numbax.backends.cpu.gemm"
IMPORTS = {
    GEMM_MODULE: ("nbx_gemm", "from numbax.backends.cpu import gemm as nbx_gemm"),
    THREADS_MODULE: ("nbx_threads", "from numbax.backends.cpu import threads as nbx_threads"),
}


def _operand(name, aval: ShapedArray, batch, free, contract, fresh, lines) -> tuple[str, bool]:
    """``name`` as a (B, F, C) array, or as (B, C, F) with ``transposed`` set."""
    size = lambda dims: math.prod(aval.shape[d] for d in dims)  # noqa: E731
    b, f, c = size(batch), size(free), size(contract)
    order = list(range(len(aval.shape)))
    view = fresh(f"{name}_3d")
    if order == list(batch) + list(free) + list(contract):
        lines.append(f"{view} = {name}.reshape({tuple_source((b, f, c))})")
        return view, False
    if order == list(batch) + list(contract) + list(free):
        lines.append(f"{view} = {name}.reshape({tuple_source((b, c, f))})")
        return view, True
    permutation = tuple_source(list(batch) + list(free) + list(contract))
    lines.append(
        f"{view} = np.ascontiguousarray({name}.transpose({permutation}))"
        f".reshape({tuple_source((b, f, c))})"
    )
    return view, False


def write_dot(
    program,
    lhs: str,
    lhs_aval,
    rhs: str,
    rhs_aval,
    out: str,
    out_aval,
    params,
    in_block=None,
):
    """Lines that bind ``out`` to the ``dot_general`` of ``lhs`` and ``rhs``, and whether
    ``in_block`` wrote into them: a product the launcher writes inline (``write_gemm``
    writes a product unit's).

    ``in_block(low, high)``, when given, returns the lines that finish rows ``low`` to
    ``high`` of ``out`` (a contraction kernel's epilogue) as (the lines that read no row,
    the lines per block), or None; a product split into blocks of rows runs the second in
    each block, right after the block's product, so the epilogue runs on the same threads
    while the rows are in cache, in one parallel region. The first run once, before the
    region: they load the epilogue's scalars, and Numba hands a rank-0 array that a
    parallel region reads to its threads as a scalar, which ``a[()]`` cannot index.
    """
    fresh = program.fresh
    (lhs_contract, rhs_contract), (lhs_batch, rhs_batch) = params["dimension_numbers"]
    lhs_free = [d for d in range(len(lhs_aval.shape)) if d not in lhs_contract + lhs_batch]
    rhs_free = [d for d in range(len(rhs_aval.shape)) if d not in rhs_contract + rhs_batch]
    lines: list[str] = []
    left, left_t = _operand(lhs, lhs_aval, lhs_batch, lhs_free, lhs_contract, fresh, lines)
    # The rhs is wanted as (B, C, F): its "free" and "contract" swap roles.
    right, right_t = _operand(rhs, rhs_aval, rhs_batch, rhs_contract, rhs_free, fresh, lines)
    batch = math.prod(lhs_aval.shape[d] for d in lhs_batch)
    rows = math.prod(lhs_aval.shape[d] for d in lhs_free)
    columns = math.prod(rhs_aval.shape[d] for d in rhs_free)
    depth = math.prod(lhs_aval.shape[d] for d in lhs_contract)
    dtype = dtype_source(out_aval.dtype)
    product = fresh(f"{out}_3d")
    reshape = [f"{out} = {product}.reshape({tuple_source(out_aval.shape)})"]
    if not out_aval.shape:  # Numba cannot reshape to rank 0
        reshape = [f"{out} = np.empty((), {dtype})", f"{out}[()] = {product}[0, 0, 0]"]
    if out_aval.dtype.kind != "f":
        sizes = (batch, rows, depth, columns)
        lines += _integer_dot(
            left, left_t, right, right_t, product, dtype, out_aval.dtype, sizes, fresh
        )
        return lines + reshape, False
    lines += program.new_array(product, (batch, rows, columns), out_aval.dtype)
    program.calls_blas = True
    parallel = runs_on_all_threads(out_aval, depth) and rows >= 2 * MIN_ROWS
    if parallel and left_t:  # a transposed operand's rows are not contiguous
        rows_first = fresh(f"{lhs}_rows")
        lines.append(f"{rows_first} = np.ascontiguousarray({left}.transpose((0, 2, 1)))")
        left, left_t = rows_first, False
    b, indent = _batch_loop(batch, fresh, lines)
    right_b = _matrix(right, right_t, b)
    if not parallel:
        lines.append(f"{indent}np.dot({_matrix(left, left_t, b)}, {right_b}, {product}[{b}])")
        return lines + reshape, False
    blocks, step, block, low = fresh("blocks"), fresh("step"), fresh("block"), fresh("low")
    rows_block = f"{low}:{low} + {step}"
    body = [
        f"{low} = {block} * {step}",
        f"np.dot({left}[{b}, {rows_block}], {right_b}, {product}[{b}, {rows_block}])",
    ]
    finish = None
    if batch == 1 and in_block is not None and out_aval.shape:
        finish = in_block(low, f"min({low} + {step}, {rows})")
    if finish is not None:  # the product's rows are named before the threads fill them
        invariant, finish = finish
        lines += reshape + [f"{indent}{line}" for line in invariant]
        reshape = []
    program.parallel = True
    lines += [f"{indent}{line}" for line in _row_blocks(program, rows, blocks, step)]
    lines.append(f"{indent}for {block} in prange({blocks}):")
    lines += [f"{indent}    {line}" for line in body + (finish or [])]
    return lines + reshape, finish is not None


@dataclass(frozen=True)
class Matrices:
    """How BLAS reads each batch's matrix of a C-contiguous operand where it lies:
    ``transposed`` (stored columns first), ``leading`` (elements between the stored
    rows), and per batch dimension its size and stride, in the product's batch order."""

    transposed: bool
    leading: int
    batch: tuple[tuple[int, int], ...]


def matrices(aval, batch, rows, columns) -> Matrices | None:
    """The ``Matrices`` of an operand read as (batch, rows, columns) over the dimension
    groups ``batch``, ``rows``, ``columns`` (each in the product's order), or None where
    BLAS cannot read them without a copy: a group's dimensions must flatten to one stride
    (``x.transpose(0, 2, 1, 3)`` flattens; a group split by another does not), and the
    rows' or the columns' stride must be one."""
    shape = aval.shape
    strides = [math.prod(shape[d + 1 :]) for d in range(len(shape))]

    def stride(dims) -> int | None:  # of the group flattened; 0 for a group of size one
        dims = [d for d in dims if shape[d] != 1]
        if any(
            strides[a] != strides[b] * shape[b] for a, b in zip(dims[:-1], dims[1:], strict=True)
        ):
            return None
        return strides[dims[-1]] if dims else 0

    m = math.prod(shape[d] for d in rows)
    k = math.prod(shape[d] for d in columns)
    row, column = stride(rows), stride(columns)
    if row is None or column is None:
        return None
    batch_dims = tuple((shape[d], strides[d]) for d in batch if shape[d] != 1)
    if (column == 1 or k == 1) and (m == 1 or row >= k):
        return Matrices(False, row if m > 1 else max(k, 1), batch_dims)
    if (row == 1 or m == 1) and (k == 1 or column >= m):
        return Matrices(True, column if k > 1 else max(m, 1), batch_dims)
    return None


def _groups(lhs_aval, rhs_aval, params):
    """Each operand's (batch, rows, columns) dimension groups as ``gemm`` reads them:
    the lhs as (batch, free, contract), the rhs as (batch, contract, free)."""
    (lhs_contract, rhs_contract), (lhs_batch, rhs_batch) = params["dimension_numbers"]
    lhs_free = [d for d in range(len(lhs_aval.shape)) if d not in lhs_contract + lhs_batch]
    rhs_free = [d for d in range(len(rhs_aval.shape)) if d not in rhs_contract + rhs_batch]
    return (
        (list(lhs_batch), lhs_free, list(lhs_contract)),
        (list(rhs_batch), list(rhs_contract), rhs_free),
    )


def into_array(lhs_aval, rhs_aval, out_aval, params) -> bool:
    """Whether ``write_gemm`` can write this product into an array, as a product unit:
    floats BLAS multiplies, into an array of more than one element, from operands BLAS
    reads where they lie (``matrices``: a kernel allocates nothing but a depth split's
    sums)."""
    if not out_aval.shape or out_aval.size < 2:
        return False
    kinds = {aval.dtype for aval in (lhs_aval, rhs_aval, out_aval)}
    if kinds not in ({np.dtype(np.float32)}, {np.dtype(np.float64)}):
        return False
    (lhs_contract, _), _ = params["dimension_numbers"]
    depth = math.prod(lhs_aval.shape[d] for d in lhs_contract)
    if depth < 1:
        return False
    (lhs, rhs) = _groups(lhs_aval, rhs_aval, params)
    return matrices(lhs_aval, *lhs) is not None and matrices(rhs_aval, *rhs) is not None


def write_gemm(program, lhs: str, lhs_aval, rhs: str, rhs_aval, out: str, out_aval, params):
    """A product unit's lines (``into_array``): one ``gemm`` call per batch into ``out``,
    the C-contiguous array the launcher allocated, each operand read where it lies
    (``matrices``), every size, stride and transpose in the text; a large product in
    blocks on the call's threads (module doc)."""
    (lhs_groups, rhs_groups) = _groups(lhs_aval, rhs_aval, params)
    left = matrices(lhs_aval, *lhs_groups)
    right = matrices(rhs_aval, *rhs_groups)
    size = lambda aval, dims: math.prod(aval.shape[d] for d in dims)  # noqa: E731
    rows, depth = size(lhs_aval, lhs_groups[1]), size(lhs_aval, lhs_groups[2])
    columns = size(rhs_aval, rhs_groups[2])
    fresh, lines, indent = program.fresh, [], ""
    offsets = [[], [], []]  # per operand and the product: the terms of a batch's offset
    out_stride = rows * columns
    for (extent, lhs_stride), (_, rhs_stride) in zip(left.batch, right.batch, strict=True):
        index = fresh("b")
        lines.append(f"{indent}for {index} in range({extent}):")
        indent += "    "
        for terms, stride in zip(offsets[:2], (lhs_stride, rhs_stride), strict=True):
            terms.append(f"{index} * {stride}")
        offsets[2] = [f"({' + '.join(offsets[2])}) * {extent}"] if offsets[2] else []
        offsets[2].append(index)
    product_terms = offsets[2]
    if product_terms:
        product_terms = [f"({' + '.join(product_terms)}) * {out_stride}"]
    starts = [" + ".join(terms) or "0" for terms in (*offsets[:2], product_terms)]
    from .calibration import ensure_measured
    from .packed_gemm import LEAST_MULTIPLIES

    if rows * columns * depth >= LEAST_MULTIPLIES:
        # The machine's facts (``calibration``): whose product runs it, and from which
        # size a product is split over the threads; measured by the first compile.
        ensure_measured()
    gemm = program.function(GEMM_MODULE, "gemm")
    flags = f"({int(left.transposed)}, {int(right.transposed)})"
    leading = f"({left.leading}, {right.leading})"
    if 2 * out_aval.size * depth < SPLITTABLE_FLOPS:
        sizes = f"({rows}, {columns}, {depth})"
        call = f"{gemm}({lhs}, {rhs}, {out}, ({', '.join(starts)}), {flags}, {sizes}, {leading})"
        return [*lines, indent + call]
    # A large product: blocks on the call's threads, one single-threaded call each, from
    # the machine's threshold.
    blocked = program.function(GEMM_MODULE, "blocked_gemm")
    split = split_of(rows, columns, depth, SPLIT_THREADS)
    flat = [f"{name}.reshape({aval.size})" for name, aval in ((lhs, lhs_aval), (rhs, rhs_aval))]
    flat.append(f"{out}.reshape({out_aval.size})")
    call = (
        f"{blocked}({', '.join(flat)}, ({', '.join(starts)}), {flags}, "
        f"({rows}, {columns}, {depth}), {leading}, {split}, {_threads(program)}, {MIN_ROWS})"
    )
    return [*lines, indent + call]


def split_of(rows: int, columns: int, depth: int, threads: int) -> int:
    """How a large product's blocks split it (``ROWS``, ``COLUMNS`` or ``DEPTH``):
    the split whose blocks each read and write the fewest elements, every block packing
    what it reads. Blocks of rows each read all of ``op(b)``, which an MLP's
    64 x 784 @ 784 x 512 packed twice; blocks of columns each read all of ``op(a)``;
    blocks of the depth read their share of both but write a whole product each, then
    added (a weight gradient, 72 x 18432 @ 18432 x 16). A split needs ``MIN_ROWS`` per
    block."""
    costs = {
        ROWS: rows * depth / threads + depth * columns,
        COLUMNS: rows * depth + depth * columns / threads,
        DEPTH: (rows * depth + depth * columns) / threads + rows * columns * (threads + 1),
    }
    extents = {ROWS: rows, COLUMNS: columns, DEPTH: depth}
    allowed = [split for split, extent in extents.items() if extent >= threads * MIN_ROWS]
    return min(allowed or [ROWS], key=lambda split: costs[split])


def runs_on_all_threads(out_aval, depth: int) -> bool:
    """Whether a product of ``out_aval`` summing over ``depth`` written inline runs in
    blocks on all threads (``PARALLEL_FLOPS``)."""
    return 2 * out_aval.size * depth >= PARALLEL_FLOPS


def _threads(program) -> str:
    """The threads the call runs on, read at run time: the calling thread's Numba thread
    count, which the executable capped for the call (``threads.py``)."""
    return f"{program.function(THREADS_MODULE, 'numba_threads')}()"


def _batch_loop(batch: int, fresh, lines: list[str]) -> tuple[str, str]:
    """The batch index and the indentation of a product's lines, after opening a loop
    over the batch in ``lines`` (a batch of one is no loop: index 0)."""
    if batch == 1:
        return "0", ""
    b = fresh("b")
    lines.append(f"for {b} in range({batch}):")
    return b, "    "


def _row_blocks(program, rows: int, blocks: str, step: str) -> list[str]:
    """Lines that bind ``blocks`` and ``step`` (rows per block) to one block of rows per
    thread of the call, of at least ``MIN_ROWS`` rows: a single-threaded BLAS call each
    where the product is split, and the epilogue's rows (see the module doc)."""
    most = max(1, rows // MIN_ROWS)
    return [
        f"{blocks} = max(1, min({_threads(program)}, {most}))",
        f"{step} = ({rows} + {blocks} - 1) // {blocks}",
    ]


def _matrix(name: str, transposed: bool, batch: str) -> str:
    return f"{name}[{batch}].T" if transposed else f"{name}[{batch}]"


def _integer_dot(left, left_t, right, right_t, product, dtype, np_dtype, sizes, fresh):
    """A plain loop nest in (batch, row, depth, column) order: the column loop vectorises."""
    batch, rows, depth, columns = sizes
    b, i, k, j = fresh("b"), fresh("i"), fresh("k"), fresh("j")
    a = f"{left}[{b}, {k}, {i}]" if left_t else f"{left}[{b}, {i}, {k}]"
    w = f"{right}[{b}, {j}, {k}]" if right_t else f"{right}[{b}, {k}, {j}]"
    target = f"{product}[{b}, {i}, {j}]"
    update = f"{target} | ({a} & {w})" if np_dtype.kind == "b" else f"{target} + {a} * {w}"
    return [
        f"{product} = np.zeros({tuple_source((batch, rows, columns))}, {dtype})",
        f"for {b} in range({batch}):",
        f"    for {i} in range({rows}):",
        f"        for {k} in range({depth}):",
        f"            for {j} in range({columns}):",
        f"                {target} = {update}",
    ]
