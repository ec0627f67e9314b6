"""Collectives (``ir/collectives.py``) on the device through NCCL, by way of CuPy's
binding (``cupy.cuda.nccl``): no host copy, no synchronisation.

``collectives.run_collective`` runs a collective here when ``chosen`` says so: CuPy
imports with NCCL (``cupy.cuda.nccl.available``), ``config.cuda_nccl`` is on
(``NUMBAX_CUDA_NCCL=0`` turns it off), the operand is a device array, and NCCL has a
type for the reduction; otherwise the collective is staged through the host and MPI.
Each call is enqueued on the executable's stream, so it is ordered with the kernels
before and after it as a kernel would be:

  psum / pmax / pmin   allReduce(x, out, count, type, SUM / MAX / MIN)
  psum_scatter         reduceScatter(x, out, count of out, type, SUM)
  all_gather           allGather(x, out, bytes of x, UINT8)
  broadcast            broadcast(x, out, bytes of x, UINT8, root)
  all_to_all           group { send(chunk j, to j); recv(chunk j, from j) for every j }
  ppermute             group { send(x, to destination); recv(out, from source) }

Types. The data-moving collectives move bytes, so every dtype moves, bfloat16 as the
bits the device holds. A reduction reaches a backend only in a dtype MPI reduces
(``REDUCIBLE`` in ``ir/collectives.py``): ``numbax.distributed`` reduces float16 and
bfloat16 through float32 (and bools through integers) on every backend, so a ``psum``
gives the same bits on cuda as on cpu; NCCL's own float16/bfloat16 sums, rounded at
every step, would not. Complex sums are sums of (real, imaginary) pairs. int16, uint16
and a complex max or min have no NCCL type and are staged.

Communicators. One NCCL communicator per MPI communicator (by its id in the registry of
``ir/collectives.py``), made at its first collective: process 0 makes the unique id, MPI
broadcasts it, and every process joins (``ncclCommInitRank``) on its current device. That
is itself a collective, reached at the same point of the same program by every process;
so is the choice of NCCL, which every process of a job makes alike as long as they have
the same software (one with CuPy and one without would wait on each other for ever).
"""

from __future__ import annotations

import functools
import importlib
import threading

import numpy as np

from ...config import config
from ...ir import dtypes
from . import device
from .options import simulating

_MADE = threading.Lock()
# NCCL communicators by the id of their MPI communicator, for the life of the process.
_COMMUNICATORS: dict[int, object] = {}

# NCCL's name of each type a reduction may have, and how many of it make one value.
REDUCTION_TYPES = {
    dtypes.int8: ("NCCL_INT8", 1),
    dtypes.uint8: ("NCCL_UINT8", 1),
    dtypes.int32: ("NCCL_INT32", 1),
    dtypes.uint32: ("NCCL_UINT32", 1),
    dtypes.int64: ("NCCL_INT64", 1),
    dtypes.uint64: ("NCCL_UINT64", 1),
    dtypes.float32: ("NCCL_FLOAT32", 1),
    dtypes.float64: ("NCCL_FLOAT64", 1),
    dtypes.complex64: ("NCCL_FLOAT32", 2),  # sums only: (re, im) pairs
    dtypes.complex128: ("NCCL_FLOAT64", 2),
}
OPS = {"psum": "NCCL_SUM", "pmax": "NCCL_MAX", "pmin": "NCCL_MIN", "psum_scatter": "NCCL_SUM"}


@functools.cache
def library():
    """CuPy's NCCL module, or None where CuPy or its NCCL library is missing."""
    try:
        module = importlib.import_module("cupy.cuda.nccl")
    except (ImportError, OSError):
        return None
    return module if getattr(module, "available", False) else None


def _reduction_type(name: str, dtype) -> tuple[str, int] | None:
    """NCCL's type of a reduction's operand and its count per value; None: NCCL has none."""
    found = REDUCTION_TYPES.get(np.dtype(dtype))
    if found is None or (found[1] == 2 and name not in ("psum", "psum_scatter")):
        return None
    return found


def chosen(step, operands: list) -> bool:
    """Whether NCCL runs this collective (else it is staged through the host)."""
    name = step.eqn.prim.name
    if not config.cuda_nccl or name not in RUNNERS or library() is None:
        return False
    if simulating() and not getattr(library(), "simulated", False):
        # The simulator's device memory is host memory, which NCCL cannot read; only a
        # stand-in that works on host memory (the tests') says ``simulated = True``.
        return False
    if not all(device.is_device_array(array) for array in operands):
        return False
    return name not in OPS or _reduction_type(name, step.inputs[0].aval.dtype) is not None


def _collectives():
    """``ir/collectives.py``, imported when a collective runs: importing it registers the
    collectives' primitives, which a process that imports the cuda backend and not
    ``numbax.distributed`` must not see."""
    from ...ir import collectives

    return collectives


def communicator(comm_id: int):
    """The NCCL communicator of the processes of MPI communicator ``comm_id``."""
    c = _collectives()
    with _MADE:
        known = _COMMUNICATORS.get(comm_id)
        if known is None:
            nccl, mpi = library(), c.communicator(comm_id)
            rank = mpi.Get_rank()
            unique_id = mpi.bcast(nccl.get_unique_id() if rank == 0 else None, root=0)
            known = _COMMUNICATORS[comm_id] = nccl.NcclCommunicator(mpi.Get_size(), unique_id, rank)
    return known


def _pointer(array) -> int:
    """The device address of a flat device array's first element."""
    array = device.as_numba_array(array)
    if simulating():  # the simulator's device array holds a NumPy one
        return array._ary.ctypes.data
    return array.__cuda_array_interface__["data"][0]


def _stream_pointer(stream) -> int:
    """The ``cudaStream_t`` to enqueue on: the stream's handle (Numba's ``int(stream)``);
    0, the legacy default stream, for the simulator's stream, which has none."""
    try:
        return int(stream)
    except TypeError:
        return 0


def _nbytes(aval) -> int:
    return aval.size * aval.dtype.itemsize


def run(step, operands: list, stream) -> list:
    """Run the collective ``step`` through NCCL on the flat device array ``operands[0]``;
    its flat device result."""
    eqn, (x,), (aval,) = step.eqn, operands, [v.aval for v in step.outputs]
    _collectives().checked(eqn.prim.name, [_shaped(step.inputs[0].aval)], eqn.params)
    if aval.size == 0:  # nothing to move: no call, on any process (shapes agree)
        return [device.device_empty(0, aval.dtype, stream)]
    nccl, comm = library(), communicator(eqn.params["comm"])
    return [RUNNERS[eqn.prim.name](nccl, comm, step, x, _stream_pointer(stream), stream)]


def _shaped(aval):
    """A stand-in of ``aval``'s shape and dtype that owns no memory (``checked`` reads
    no values)."""
    return np.broadcast_to(np.zeros((), aval.dtype), aval.shape)


def _allreduce(nccl, comm, step, x, handle, stream):
    name, aval = step.eqn.prim.name, step.inputs[0].aval
    out = device.device_empty(aval.size, aval.dtype, stream)
    kind, per_value = _reduction_type(name, aval.dtype)
    op = getattr(nccl, OPS[name])
    comm.allReduce(
        _pointer(x), _pointer(out), aval.size * per_value, getattr(nccl, kind), op, handle
    )
    return out


def _psum_scatter(nccl, comm, step, x, handle, stream):
    aval = step.outputs[0].aval
    out = device.device_empty(aval.size, aval.dtype, stream)
    kind, per_value = _reduction_type("psum_scatter", aval.dtype)
    count = aval.size * per_value
    comm.reduceScatter(
        _pointer(x), _pointer(out), count, getattr(nccl, kind), nccl.NCCL_SUM, handle
    )
    return out


def _all_gather(nccl, comm, step, x, handle, stream):
    sent, gathered = step.inputs[0].aval, step.outputs[0].aval
    out = device.device_empty(gathered.size, gathered.dtype, stream)
    comm.allGather(_pointer(x), _pointer(out), _nbytes(sent), nccl.NCCL_UINT8, handle)
    return out


def _broadcast(nccl, comm, step, x, handle, stream):
    aval = step.outputs[0].aval
    out = device.device_empty(aval.size, aval.dtype, stream)
    root = step.eqn.params["root"]
    comm.broadcast(_pointer(x), _pointer(out), _nbytes(aval), nccl.NCCL_UINT8, root, handle)
    return out


def _all_to_all(nccl, comm, step, x, handle, stream):
    """Chunk ``j`` of ``x`` to process ``j``, and chunk ``j`` of the result from it: one
    send and one receive per process, grouped so that NCCL runs them together."""
    aval, size = step.outputs[0].aval, step.eqn.params["size"]
    out = device.device_empty(aval.size, aval.dtype, stream)
    chunk = _nbytes(aval) // size
    sent, received = _pointer(x), _pointer(out)
    nccl.groupStart()
    try:
        for peer in range(size):
            comm.send(sent + peer * chunk, chunk, nccl.NCCL_UINT8, peer, handle)
            comm.recv(received + peer * chunk, chunk, nccl.NCCL_UINT8, peer, handle)
    finally:
        nccl.groupEnd()
    return out


def _ppermute(nccl, comm, step, x, handle, stream):
    """``x`` to this process's destination, the result from its source, in one group;
    zeros where no process sends here (JAX's meaning)."""
    aval, params, c = step.outputs[0].aval, step.eqn.params, _collectives()
    rank = c.communicator(params["comm"]).Get_rank()
    destination, source = c.ppermute_partners(params["perm"], rank)
    if source < 0:
        zeros = np.zeros((), aval.dtype)
        out = device.device_constant(zeros, aval, stream).reshape(aval.size)
    else:
        out = device.device_empty(aval.size, aval.dtype, stream)
    if destination < 0 and source < 0:
        return out
    nccl.groupStart()
    try:
        if destination >= 0:
            comm.send(_pointer(x), _nbytes(aval), nccl.NCCL_UINT8, destination, handle)
        if source >= 0:
            comm.recv(_pointer(out), _nbytes(aval), nccl.NCCL_UINT8, source, handle)
    finally:
        nccl.groupEnd()
    return out


RUNNERS = {
    "psum": _allreduce,
    "pmax": _allreduce,
    "pmin": _allreduce,
    "psum_scatter": _psum_scatter,
    "all_gather": _all_gather,
    "broadcast": _broadcast,
    "all_to_all": _all_to_all,
    "ppermute": _ppermute,
}
