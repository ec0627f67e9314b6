"""Processes and communicators: ``initialize``, ``process_index``, ``process_count``, and
what happens when a process fails.

An SPMD program whose process raises while the others wait in a collective would hang
for ever. ``initialize()`` (called by every function of ``numbax.distributed`` on first
use) installs an exception hook: an uncaught exception prints its traceback, each line
marked with the process's rank, then calls ``MPI_Abort`` on ``COMM_WORLD``, which ends
every process of the job with a non-zero exit status.
"""

from __future__ import annotations

import sys
import threading
import time
import traceback

from ..ir import collectives as c
from ..ir.errors import MissingDependencyError

_STARTED = threading.Lock()
_hook_installed = False
ABORT_GRACE_S = 0.5  # seconds between printing a failing process's error and the abort


def _mpi():
    try:
        from mpi4py import MPI
    except ImportError:
        raise MissingDependencyError(
            "numbax.distributed needs mpi4py and an MPI library: pip install 'numbax[mpi]' "
            "(mpi4py, mpich, numba-mpi), then run with mpiexec -n 4 python script.py"
        ) from None
    return MPI


def initialize() -> None:
    """Start MPI (through mpi4py) and make any uncaught exception abort every process.

    Safe to call more than once; every collective calls it. Run the script with
    ``mpiexec -n 4 python script.py``; without ``mpiexec`` it is one process of one.
    """
    global _hook_installed
    with _STARTED:
        if _hook_installed:
            return
        _mpi()
        previous = sys.excepthook

        def abort_on_uncaught(kind, error, trace):
            world = _mpi().COMM_WORLD
            rank, size = world.Get_rank(), world.Get_size()
            if size == 1:
                previous(kind, error, trace)
                return
            lines = "".join(traceback.format_exception(kind, error, trace)).splitlines()
            marked = "".join(f"[process {rank}] {line}\n" for line in lines)
            sys.stderr.write(
                f"[process {rank}] numbax.distributed: process {rank} of {size} raised; "
                "aborting every process (MPI_Abort)\n" + marked
            )
            sys.stderr.flush()
            sys.stdout.flush()
            # The launcher forwards a process's output through its proxy, which the abort
            # kills: a moment first, or the traceback may be lost (seen under load in CI).
            time.sleep(ABORT_GRACE_S)
            world.Abort(1)

        sys.excepthook = abort_on_uncaught
        _hook_installed = True


def comm_id(comm=None) -> int:
    """The id of ``comm`` (``COMM_WORLD`` when None) in the communicator registry."""
    initialize()
    return c.register_communicator(comm)


def communicator(comm=None):
    return c.communicator(comm_id(comm))


def process_index(comm=None) -> int:
    """This process's rank in ``comm`` (``COMM_WORLD`` by default), a Python int.

    >>> import numbax.distributed as nd
    >>> 0 <= nd.process_index() < nd.process_count()
    True
    """
    return communicator(comm).Get_rank()


def process_count(comm=None) -> int:
    """How many processes ``comm`` (``COMM_WORLD`` by default) has."""
    return communicator(comm).Get_size()
