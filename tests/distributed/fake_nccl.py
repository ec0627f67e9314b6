"""A stand-in for CuPy's NCCL binding (``cupy.cuda.nccl``), so that the cuda backend's
NCCL path runs under Numba's CUDA simulator, where device memory is host memory.

It has the binding's names (``available``, the ``NCCL_*`` constants, ``get_unique_id``,
``groupStart``/``groupEnd``, ``NcclCommunicator`` with ``allReduce``, ``allGather``,
``reduceScatter``, ``broadcast``, ``send`` and ``recv``), logs every call in ``LOG``,
and does the communication with mpi4py on host copies of the memory the pointers name,
read and written as NCCL would, so a wrong pointer, count, type or peer gives a wrong
value. What NCCL requires and the stand-in checks: a communicator's unique id is the same
on every process (made once and broadcast), its size and rank are MPI's, and sends and
receives are inside a group (NCCL would deadlock on a pair of blocking ones).

``install()`` puts it in ``sys.modules`` as ``cupy``, ``cupy.cuda`` and
``cupy.cuda.nccl`` (before numbax first looks for CuPy).
"""

from __future__ import annotations

import ctypes
import os
import sys
import types

import numpy as np
from mpi4py import MPI

available = True
simulated = True  # works on the simulator's device memory (host memory), as NCCL cannot
NCCL_SUM, NCCL_PROD, NCCL_MAX, NCCL_MIN, NCCL_AVG = range(5)
(
    NCCL_INT8,
    NCCL_UINT8,
    NCCL_INT32,
    NCCL_UINT32,
    NCCL_INT64,
    NCCL_UINT64,
    NCCL_FLOAT16,
    NCCL_FLOAT32,
    NCCL_FLOAT64,
    NCCL_BFLOAT16,
) = range(10)
TYPES = {
    NCCL_INT8: np.int8,
    NCCL_UINT8: np.uint8,
    NCCL_INT32: np.int32,
    NCCL_UINT32: np.uint32,
    NCCL_INT64: np.int64,
    NCCL_UINT64: np.uint64,
    NCCL_FLOAT16: np.float16,
    NCCL_FLOAT32: np.float32,
    NCCL_FLOAT64: np.float64,
}
TYPE_NAMES = {value: name for name, value in globals().items() if name.startswith("NCCL_")}
OPS = {NCCL_SUM: MPI.SUM, NCCL_PROD: MPI.PROD, NCCL_MAX: MPI.MAX, NCCL_MIN: MPI.MIN}
OP_NAMES = {NCCL_SUM: "SUM", NCCL_PROD: "PROD", NCCL_MAX: "MAX", NCCL_MIN: "MIN"}

LOG: list[tuple] = []  # (call, *arguments that are not pointers)
_pending: list | None = None  # the sends and receives of the open group


def _memory(pointer: int, count: int, datatype: int) -> np.ndarray:
    """The ``count`` values of ``datatype`` at ``pointer``, as a writable NumPy view."""
    assert isinstance(pointer, int) and pointer, f"not a device pointer: {pointer!r}"
    dtype = np.dtype(TYPES[datatype])
    buffer = (ctypes.c_char * (count * dtype.itemsize)).from_address(pointer)
    return np.frombuffer(buffer, dtype)


def _check_stream(stream) -> None:
    assert isinstance(stream, int), f"a stream is a cudaStream_t (an int), not {stream!r}"


def get_unique_id() -> tuple:
    LOG.append(("get_unique_id",))
    return tuple(int(b) for b in np.frombuffer(os.urandom(128), np.int8))


def groupStart() -> None:
    global _pending
    assert _pending is None, "groupStart inside a group"
    LOG.append(("groupStart",))
    _pending = []


def groupEnd() -> None:
    global _pending
    assert _pending is not None, "groupEnd without groupStart"
    LOG.append(("groupEnd",))
    work, _pending = _pending, None
    requests, landings = [], []
    for kind, comm, memory, peer in work:
        if kind == "send":
            requests.append(comm.Isend(memory.copy(), dest=peer, tag=7))
        else:
            landing = np.empty_like(memory)
            requests.append(comm.Irecv(landing, source=peer, tag=7))
            landings.append((memory, landing))
    MPI.Request.Waitall(requests)
    for memory, landing in landings:
        memory[...] = landing


class NcclCommunicator:
    made = 0

    def __init__(self, ndev: int, commId: tuple, rank: int):
        self._mpi = MPI.COMM_WORLD.Dup()
        assert len(commId) == 128, commId
        assert (ndev, rank) == (self._mpi.Get_size(), self._mpi.Get_rank()), (ndev, rank)
        ids = self._mpi.allgather(commId)
        assert all(other == commId for other in ids), "the processes' unique ids differ"
        NcclCommunicator.made += 1
        LOG.append(("NcclCommunicator", ndev, rank))

    def allReduce(self, sendbuf, recvbuf, count, datatype, op, stream):
        _check_stream(stream)
        LOG.append(("allReduce", count, TYPE_NAMES[datatype], OP_NAMES[op]))
        sent = _memory(sendbuf, count, datatype).copy()
        self._mpi.Allreduce(sent, _memory(recvbuf, count, datatype), op=OPS[op])

    def reduceScatter(self, sendbuf, recvbuf, recvcount, datatype, op, stream):
        _check_stream(stream)
        LOG.append(("reduceScatter", recvcount, TYPE_NAMES[datatype], OP_NAMES[op]))
        size = self._mpi.Get_size()
        sent = _memory(sendbuf, recvcount * size, datatype).copy()
        received = _memory(recvbuf, recvcount, datatype)
        self._mpi.Reduce_scatter_block(sent, received, op=OPS[op])

    def allGather(self, sendbuf, recvbuf, count, datatype, stream):
        _check_stream(stream)
        LOG.append(("allGather", count, TYPE_NAMES[datatype]))
        size = self._mpi.Get_size()
        sent = _memory(sendbuf, count, datatype).copy()
        self._mpi.Allgather(sent, _memory(recvbuf, count * size, datatype))

    def broadcast(self, sendbuff, recvbuff, count, datatype, root, stream):
        _check_stream(stream)
        LOG.append(("broadcast", count, TYPE_NAMES[datatype], root))
        data = _memory(sendbuff, count, datatype).copy()
        self._mpi.Bcast(data, root=root)
        _memory(recvbuff, count, datatype)[...] = data

    def send(self, sendbuf, count, datatype, peer, stream):
        _check_stream(stream)
        assert _pending is not None, "send outside groupStart/groupEnd"
        LOG.append(("send", count, TYPE_NAMES[datatype], peer))
        _pending.append(("send", self._mpi, _memory(sendbuf, count, datatype), peer))

    def recv(self, recvbuf, count, datatype, peer, stream):
        _check_stream(stream)
        assert _pending is not None, "recv outside groupStart/groupEnd"
        LOG.append(("recv", count, TYPE_NAMES[datatype], peer))
        _pending.append(("recv", self._mpi, _memory(recvbuf, count, datatype), peer))


def install() -> types.ModuleType:
    """This module as ``cupy.cuda.nccl`` (and empty ``cupy``, ``cupy.cuda`` around it)."""
    this = sys.modules[__name__]
    cupy, cuda = types.ModuleType("cupy"), types.ModuleType("cupy.cuda")
    cupy.cuda, cuda.nccl = cuda, this
    sys.modules.update({"cupy": cupy, "cupy.cuda": cuda, "cupy.cuda.nccl": this})
    return this
