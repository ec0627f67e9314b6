"""Collectives: communication between the processes of an SPMD program, over MPI.

Every process runs the same program on its own shard; a collective combines the
values the processes hold. Each is an IR primitive over the *leading* axis (what an MPI
call moves as one contiguous buffer); ``numbax.distributed`` builds JAX's ``axis``,
``tiled``, ``split_axis`` and ``concat_axis`` variants from these with moves and
reshapes. ``size`` is the communicator's process count, a param so that shape rules
need no MPI.

  psum / pmax / pmin  x:S -> S                   [comm]       sum/max/min over processes
  all_gather          x:S -> (size, *S)          [comm size]  every process's x, stacked
  psum_scatter        x:(size*k, *S) -> (k, *S)  [comm size]  on r: sum of every x's chunk r
  all_to_all          x:(size*k, *S) -> same     [comm size]  chunk r to r; chunk j from j
  ppermute            x:S -> S                   [comm perm]  the x of this one's source, or 0
  broadcast           x:S -> S                   [comm root]  process ``root``'s x
  axis_index          () -> int32[]              [comm]       this process's rank

A collective is communication: every process must make the same calls in the same
order, so each is ``side_effects=True`` (passes never drop, merge, fold, hoist or reorder
one, ``primitive.has_side_effects``) and ``expensive`` (fusion never duplicates it).
``axis_index`` is marked so too: folded, it would make each process's program text
different, so no process could reuse another's compiled program.

The communicator is not a param (params are plain data): it sits in ``COMMUNICATORS``
and the eqn carries its integer id, as callbacks do (``callbacks.py``). Id 0 is
mpi4py's ``COMM_WORLD``, looked up on first use. mpi4py is imported only when a
collective runs, so importing numbax needs no MPI.

The implementations below are the interpreter's (the oracle): mpi4py's buffer calls on
NumPy arrays. With ``config.mpi_check`` on, each call first checks that every process
is making the same one (``checked``).
"""

from __future__ import annotations

import threading
import zlib

import numpy as np

from . import dtypes
from .core import ShapedArray
from .errors import CollectiveMismatchError
from .primitive import Pattern, check, register
from .serialize import COUNT, SIGNATURES, Signature, _tuple_of

WORLD = 0
# Communicators, by id, for the life of the process (compiled programs name them by id).
COMMUNICATORS: list = [None]  # id 0: COMM_WORLD, resolved on first use
_REGISTERING = threading.Lock()
# The dtypes MPI reduces (C types); the front end widens the others (float16, bool).
REDUCIBLE = frozenset(
    np.dtype(t)
    for t in (
        "int8",
        "int16",
        "int32",
        "int64",
        "uint8",
        "uint16",
        "uint32",
        "uint64",
        "float32",
        "float64",
        "complex64",
        "complex128",
    )
)


def communicator(comm_id: int):
    """The mpi4py communicator of id ``comm_id``."""
    if comm_id == WORLD and COMMUNICATORS[WORLD] is None:
        from mpi4py import MPI

        COMMUNICATORS[WORLD] = MPI.COMM_WORLD
    return COMMUNICATORS[comm_id]


def register_communicator(comm) -> int:
    """The id under which programs name ``comm`` (the same id for the same communicator)."""
    if comm is None:
        return WORLD
    with _REGISTERING:
        for comm_id, known in enumerate(COMMUNICATORS):
            if comm_id == WORLD:
                known = communicator(WORLD)
            if known is comm or known == comm:
                return comm_id
        COMMUNICATORS.append(comm)
        return len(COMMUNICATORS) - 1


def fingerprint(name: str, avals, params) -> int:
    """A number that two processes compute equal iff they make the same call."""
    shown = sorted((k, v) for k, v in params.items() if k != "comm")
    text = f"{name} {[(a.shape, a.dtype.name) for a in avals]} {shown}"
    return zlib.crc32(text.encode())


def description(name: str, avals, params) -> str:
    shapes = ", ".join(f"{a.dtype.name}{list(a.shape)}" for a in avals)
    shown = " ".join(f"{k}={v}" for k, v in params.items() if k != "comm")
    return f"{name}({shapes}){' [' + shown + ']' if shown else ''}"


def mismatch_message(rank: int, mine: str, fingerprints) -> str:
    differing = [r for r, f in enumerate(fingerprints) if f != fingerprints[rank]]
    return (
        f"numbax.distributed: collective mismatch: process {rank} calls {mine}, but "
        f"process(es) {differing} call a different collective or shape at this point. "
        "Every process must make the same collective calls, with the same shapes and "
        "dtypes, in the same order (check shard sizes and rank-dependent Python branches)."
    )


def checked(name: str, arrays, params) -> None:
    """With ``config.mpi_check``: raise unless every process makes this same call."""
    from ..config import config

    if not config.mpi_check:
        return
    comm = communicator(params["comm"])
    avals = [ShapedArray(np.shape(a), np.asarray(a).dtype) for a in arrays]
    mine = fingerprint(name, avals, params)
    everyone = np.empty(comm.Get_size(), np.int64)
    comm.Allgather(_as_bytes(np.array([mine], np.int64)), _as_bytes(everyone))
    if (everyone != mine).any():
        raise CollectiveMismatchError(
            mismatch_message(comm.Get_rank(), description(name, avals, params), everyone)
        )


# --------------------------------------------------------------------------------------
# Shape rules


def _check_comm(name: str, comm) -> None:
    check(
        type(comm) is int and 0 <= comm < len(COMMUNICATORS),
        name,
        f"comm {comm!r} is not a registered communicator id",
    )


def _reduce_rule(name):
    def rule(x: ShapedArray, *, comm: int):
        _check_comm(name, comm)
        check(x.dtype in REDUCIBLE, name, f"MPI cannot reduce {x.dtype.name}")
        return x

    return rule


def _leading_chunks(name: str, x: ShapedArray, size: int) -> int:
    check(type(size) is int and size >= 1, name, f"size must be a positive int, got {size!r}")
    check(x.ndim >= 1 and x.shape[0] % size == 0, name, f"leading axis of {x} not in {size} chunks")
    return x.shape[0] // size


def _all_gather_rule(x: ShapedArray, *, comm: int, size: int):
    _check_comm("all_gather", comm)
    check(type(size) is int and size >= 1, "all_gather", f"size must be positive, got {size!r}")
    return x.update(shape=(size, *x.shape))


def _psum_scatter_rule(x: ShapedArray, *, comm: int, size: int):
    _check_comm("psum_scatter", comm)
    check(x.dtype in REDUCIBLE, "psum_scatter", f"MPI cannot reduce {x.dtype.name}")
    return x.update(shape=(_leading_chunks("psum_scatter", x, size), *x.shape[1:]))


def _all_to_all_rule(x: ShapedArray, *, comm: int, size: int):
    _check_comm("all_to_all", comm)
    _leading_chunks("all_to_all", x, size)
    return x


def _ppermute_rule(x: ShapedArray, *, comm: int, perm: tuple):
    _check_comm("ppermute", comm)
    pairs_ok = all(
        isinstance(p, tuple) and len(p) == 2 and all(type(r) is int and r >= 0 for r in p)
        for p in perm
    )
    check(isinstance(perm, tuple) and pairs_ok, "ppermute", f"perm {perm!r} is not int pairs")
    sources, destinations = [s for s, _ in perm], [d for _, d in perm]
    check(
        len(set(sources)) == len(sources) and len(set(destinations)) == len(destinations),
        "ppermute",
        f"perm {perm!r} sends from or to a process twice",
    )
    return x


def _broadcast_rule(x: ShapedArray, *, comm: int, root: int):
    _check_comm("broadcast", comm)
    check(type(root) is int and root >= 0, "broadcast", f"root {root!r} is not a rank")
    return x


def _axis_index_rule(*, comm: int):
    _check_comm("axis_index", comm)
    return ShapedArray((), dtypes.int32)


# --------------------------------------------------------------------------------------
# The interpreter's implementations: mpi4py's buffer calls


def mpi_datatype(dtype: np.dtype):
    """MPI's predefined datatype of a ``REDUCIBLE`` dtype (reductions need a predefined one)."""
    from mpi4py import MPI

    return MPI._typedict[np.dtype(dtype).char]


def _as_bytes(array: np.ndarray) -> list:
    """A C-contiguous array's bytes as an MPI_BYTE buffer: data movement is typeless
    (bfloat16 moves too), and the compiled program moves the same (``mpi_calls``)."""
    from mpi4py import MPI

    return [np.asarray(array, order="C").reshape(-1).view(np.uint8), MPI.BYTE]


def _allreduce(name: str, op_name: str):
    def impl(x, *, comm: int):
        from mpi4py import MPI

        checked(name, [x], {"comm": comm})
        x = np.asarray(x, order="C")  # (ascontiguousarray makes a scalar 1-d)
        out = np.empty_like(x)
        kind = mpi_datatype(x.dtype)
        communicator(comm).Allreduce([x, kind], [out, kind], op=getattr(MPI, op_name))
        return out

    return impl


def _all_gather_impl(x, *, comm: int, size: int):
    checked("all_gather", [x], {"comm": comm, "size": size})
    out = np.empty((size, *np.shape(x)), np.asarray(x).dtype)
    communicator(comm).Allgather(_as_bytes(x), _as_bytes(out))
    return out


def _psum_scatter_impl(x, *, comm: int, size: int):
    checked("psum_scatter", [x], {"comm": comm, "size": size})
    x = np.asarray(x, order="C")
    out = np.empty((x.shape[0] // size, *x.shape[1:]), x.dtype)
    kind = mpi_datatype(x.dtype)
    from mpi4py import MPI

    communicator(comm).Reduce_scatter_block([x, kind], [out, kind], op=MPI.SUM)
    return out


def _all_to_all_impl(x, *, comm: int, size: int):
    checked("all_to_all", [x], {"comm": comm, "size": size})
    out = np.empty(np.shape(x), np.asarray(x).dtype)  # C order, whatever x's layout
    communicator(comm).Alltoall(_as_bytes(x), _as_bytes(out))
    return out


def ppermute_partners(perm: tuple, rank: int) -> tuple[int, int]:
    """Whom process ``rank`` sends to and receives from under ``perm`` (-1: nobody)."""
    destination = next((d for s, d in perm if s == rank), -1)
    source = next((s for s, d in perm if d == rank), -1)
    return destination, source


def _ppermute_impl(x, *, comm: int, perm: tuple):
    from mpi4py import MPI

    checked("ppermute", [x], {"comm": comm, "perm": perm})
    c = communicator(comm)
    destination, source = ppermute_partners(perm, c.Get_rank())
    out = np.zeros(np.shape(x), np.asarray(x).dtype)  # no source: zeros (JAX)
    c.Sendrecv(
        _as_bytes(x),
        MPI.PROC_NULL if destination < 0 else destination,
        0,
        _as_bytes(out),
        MPI.PROC_NULL if source < 0 else source,
        0,
    )
    return out


def _broadcast_impl(x, *, comm: int, root: int):
    checked("broadcast", [x], {"comm": comm, "root": root})
    out = np.array(x, copy=True, order="C")
    communicator(comm).Bcast(_as_bytes(out), root=root)
    return out


def _axis_index_impl(*, comm: int):
    return np.int32(communicator(comm).Get_rank())


def _collective(name, rule, impl):
    return register(
        name,
        Pattern.OPAQUE,
        rule,
        impl,
        expensive=True,  # communication: never duplicated into several consumers
        side_effects=True,  # every process makes the same calls, in the same order
    )


psum_p = _collective("psum", _reduce_rule("psum"), _allreduce("psum", "SUM"))
pmax_p = _collective("pmax", _reduce_rule("pmax"), _allreduce("pmax", "MAX"))
pmin_p = _collective("pmin", _reduce_rule("pmin"), _allreduce("pmin", "MIN"))
all_gather_p = _collective("all_gather", _all_gather_rule, _all_gather_impl)
psum_scatter_p = _collective("psum_scatter", _psum_scatter_rule, _psum_scatter_impl)
all_to_all_p = _collective("all_to_all", _all_to_all_rule, _all_to_all_impl)
ppermute_p = _collective("ppermute", _ppermute_rule, _ppermute_impl)
broadcast_p = _collective("broadcast", _broadcast_rule, _broadcast_impl)
axis_index_p = register(
    "axis_index",
    Pattern.OPAQUE,
    _axis_index_rule,
    _axis_index_impl,
    differentiable=False,
    side_effects=True,  # never folded: programs stay the same text on every process
)
COLLECTIVES = (
    psum_p,
    pmax_p,
    pmin_p,
    all_gather_p,
    psum_scatter_p,
    all_to_all_p,
    ppermute_p,
    broadcast_p,
    axis_index_p,
)

# What a file may hold (``serialize.SIGNATURES``): the communicator's id is this
# process's registry's (0, COMM_WORLD, in any process).
SIGNATURES.update(
    {
        "psum": Signature(1, {"comm": COUNT}),
        "pmax": Signature(1, {"comm": COUNT}),
        "pmin": Signature(1, {"comm": COUNT}),
        "all_gather": Signature(1, {"comm": COUNT, "size": COUNT}),
        "psum_scatter": Signature(1, {"comm": COUNT, "size": COUNT}),
        "all_to_all": Signature(1, {"comm": COUNT, "size": COUNT}),
        "ppermute": Signature(1, {"comm": COUNT, "perm": _tuple_of(_tuple_of(COUNT, 2))}),
        "broadcast": Signature(1, {"comm": COUNT, "root": COUNT}),
        "axis_index": Signature(0, {"comm": COUNT}),
    }
)
