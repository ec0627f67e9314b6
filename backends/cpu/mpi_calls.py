"""MPI's C API, called from compiled programs (``collectives.py`` writes the calls).

Each function is Numba code calling MPI's C functions as external symbols
(``types.ExternalFunction``): the machine code names ``MPI_Allreduce``, which the
loader resolves in the MPI library numba-mpi finds and this module loads for the
process, so a program calling them is cached on disk like any other (a ctypes
function pointer, numba-mpi's way, would bake this process's addresses into the
machine code and keep the program out of the cache). The calls read and write the
program's arrays in place, with no copy to Python. Buffers are C-contiguous (the
program's arrays are); data that is only moved travels as bytes, so every dtype moves.
Handles (communicator, datatype, operation) are integers the code generator reads from
mpi4py; pointers and counts are passed as the C ABI passes them.

Importing this module starts MPI (through mpi4py) in the process.
"""

from __future__ import annotations

import numpy as np
from llvmlite import binding
from mpi4py import MPI
from numba import njit, types
from numba_mpi.common import LIB

from ...ir.errors import CollectiveMismatchError  # noqa: F401 - raised by programs

binding.load_library_permanently(LIB)

_JIT = {"error_model": "numpy", "no_cfunc_wrapper": True}
_PTR, _INT = types.intp, types.int32


def _handle_type(kind) -> types.Integer:
    return types.int32 if MPI._sizeof(kind) == 4 else types.intp


_COMM, _TYPE, _OP = _handle_type(MPI.Comm), _handle_type(MPI.Datatype), _handle_type(MPI.Op)
BYTE = MPI._handleof(MPI.BYTE)
STATUS_INTS = 16  # room for an MPI_Status (MPICH's is 5 ints)

_Allreduce = types.ExternalFunction("MPI_Allreduce", _INT(_PTR, _PTR, _INT, _TYPE, _OP, _COMM))
_Allgather = types.ExternalFunction(
    "MPI_Allgather", _INT(_PTR, _INT, _TYPE, _PTR, _INT, _TYPE, _COMM)
)
_Reduce_scatter_block = types.ExternalFunction(
    "MPI_Reduce_scatter_block", _INT(_PTR, _PTR, _INT, _TYPE, _OP, _COMM)
)
_Alltoall = types.ExternalFunction(
    "MPI_Alltoall", _INT(_PTR, _INT, _TYPE, _PTR, _INT, _TYPE, _COMM)
)
_Sendrecv = types.ExternalFunction(
    "MPI_Sendrecv",
    _INT(_PTR, _INT, _TYPE, _INT, _INT, _PTR, _INT, _TYPE, _INT, _INT, _COMM, _PTR),
)
_Bcast = types.ExternalFunction("MPI_Bcast", _INT(_PTR, _INT, _TYPE, _INT, _COMM))
_Comm_rank = types.ExternalFunction("MPI_Comm_rank", _INT(_COMM, _PTR))


class MPICallError(RuntimeError):
    """An MPI call returned an error code (the error handler returned instead of aborting)."""


@njit(**_JIT)
def _succeeded(status):
    if status != 0:
        raise MPICallError("an MPI call inside the compiled program failed")


@njit(**_JIT)
def allreduce(x, out, datatype, op, comm):
    _succeeded(_Allreduce(x.ctypes.data, out.ctypes.data, x.size, datatype, op, comm))


@njit(**_JIT)
def allgather(x, out, comm):
    _succeeded(_Allgather(x.ctypes.data, x.nbytes, BYTE, out.ctypes.data, x.nbytes, BYTE, comm))


@njit(**_JIT)
def reduce_scatter(x, out, datatype, op, comm):
    _succeeded(_Reduce_scatter_block(x.ctypes.data, out.ctypes.data, out.size, datatype, op, comm))


@njit(**_JIT)
def alltoall(x, out, size, comm):
    chunk = x.nbytes // size
    _succeeded(_Alltoall(x.ctypes.data, chunk, BYTE, out.ctypes.data, chunk, BYTE, comm))


@njit(**_JIT)
def rank(comm):
    found = np.zeros(1, np.int32)
    _succeeded(_Comm_rank(comm, found.ctypes.data))
    return found[0]


@njit(**_JIT)
def sendrecv(x, out, destinations, sources, proc_null, comm):
    """``out`` = the ``x`` of this process's source (zeros without one); ``x`` to its
    destination. ``destinations[r]`` and ``sources[r]`` are process r's (-1: none)."""
    me = rank(comm)
    destination, source = destinations[me], sources[me]
    if source < 0:
        out[...] = 0
    status = np.empty(STATUS_INTS, np.int32)
    _succeeded(
        _Sendrecv(
            x.ctypes.data,
            x.nbytes,
            BYTE,
            proc_null if destination < 0 else destination,
            0,
            out.ctypes.data,
            out.nbytes,
            BYTE,
            proc_null if source < 0 else source,
            0,
            comm,
            status.ctypes.data,
        )
    )


@njit(**_JIT)
def bcast(out, root, comm):
    _succeeded(_Bcast(out.ctypes.data, out.nbytes, BYTE, root, comm))


@njit(**_JIT)
def agree(fingerprint, size, comm):
    """Whether every process of ``comm`` passes the same ``fingerprint`` (debug mode)."""
    mine = np.full(1, fingerprint, np.int64)
    everyone = np.empty(size, np.int64)
    allgather(mine, everyone, comm)
    return (everyone == fingerprint).all()
