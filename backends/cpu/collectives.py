"""Collectives (``ir/collectives.py``) in the compiled program: each an opaque kernel of
one op whose code calls MPI's C API on the program's arrays (``mpi_calls.py``), inside
the ``njit`` launcher, with no copy to Python.

  psum / pmax / pmin   out = new;          MPI_Allreduce(x, out)
  all_gather           out = new;          MPI_Allgather(x, out)         as bytes
  psum_scatter         out = new;          MPI_Reduce_scatter_block(x, out)
  all_to_all           out = new;          MPI_Alltoall(x, out)          as bytes
  ppermute             out = new;          MPI_Sendrecv(x, out)          as bytes
  broadcast            out = copy of x;    MPI_Bcast(out)                as bytes
  axis_index           out = MPI_Comm_rank

Handles are integers this process reads from mpi4py when it writes the program; a
ppermute's partners are a table indexed by the rank at run time, so the program text is
the same on every process, which then share one compiled program. With
``config.mpi_check`` each call is preceded by a check that every process makes the
same call (``mpi_calls.agree``), raising ``CollectiveMismatchError`` otherwise.

The emitters are in the opaque kernels' table (``opaque_emitters.EMITTERS``) from the
moment the backend is imported, held under their primitives' names until
``ir/collectives.py`` registers the primitives (``registered_later``): a process that
never communicates does not see them, so this module imports ``ir.collectives`` only
inside the emitters. ``register()`` adds the runtime module to the program's imports;
``numbax.distributed`` calls it on import.
"""

from __future__ import annotations

from ...config import config
from .loopnest import tuple_source
from .opaque_emitters import EMITTERS

RUNTIME = "numbax.backends.cpu.mpi_calls"
ALIAS = "nbx_mpi"
IMPORTS = {RUNTIME: (ALIAS, "from numbax.backends.cpu import mpi_calls as nbx_mpi")}


def _handle(mpi_object) -> int:
    """A handle as the C functions take it: a signed int where handles are ints."""
    from mpi4py import MPI

    value = MPI._handleof(mpi_object)
    if MPI._sizeof(mpi_object) == 4 and value >= 2**31:
        value -= 2**32
    return value


def _comm(eqn) -> int:
    from ...ir import collectives as c  # at run time: it registers the primitives

    return _handle(c.communicator(eqn.params["comm"]))


def _datatype(eqn) -> int:
    from ...ir import collectives as c  # at run time: it registers the primitives

    return _handle(c.mpi_datatype(eqn.inputs[0].aval.dtype))


def _op(name: str) -> int:
    from mpi4py import MPI

    return _handle({"psum": MPI.SUM, "pmax": MPI.MAX, "pmin": MPI.MIN}[name])


def _call(program, function: str, *arguments) -> str:
    return f"{program.function(RUNTIME, function)}({', '.join(map(str, arguments))})"


def _checked(program, eqn, lines: list[str]) -> list[str]:
    """``lines``, after a check that every process makes this call (debug mode)."""
    from ...ir import collectives as c  # at run time: it registers the primitives

    if not config.mpi_check:
        return lines
    avals, name = [a.aval for a in eqn.inputs], eqn.prim.name
    comm = c.communicator(eqn.params["comm"])
    mine = c.description(name, avals, eqn.params)
    message = (
        f"numbax.distributed: collective mismatch: this process (of {comm.Get_size()}) "
        f"calls {mine}, and some other process calls a different collective or shape "
        "here. Every process must make the same collective calls, with the same shapes "
        "and dtypes, in the same order."
    )
    fingerprint = c.fingerprint(name, avals, eqn.params)
    agreed = _call(program, "agree", fingerprint, comm.Get_size(), _comm(eqn))
    error = f"{ALIAS}.CollectiveMismatchError({message!r})"
    program.function(RUNTIME, "agree")
    return [f"if not {agreed}:", f"    raise {error}", *lines]


def _new(program, eqn, out) -> list[str]:
    """Bind ``out`` to the array MPI writes: the memory plan's buffer, the executable's
    pooled array for a large output, or a new array (``allocate`` emits the lines)."""
    program.allocate(eqn.outputs[0])
    return []


@EMITTERS.rule("psum", "pmax", "pmin", registered_later=True)
def _allreduce(program, eqn, inputs, out) -> list[str]:
    call = _call(
        program, "allreduce", inputs[0], out, _datatype(eqn), _op(eqn.prim.name), _comm(eqn)
    )
    return _checked(program, eqn, [*_new(program, eqn, out), call])


@EMITTERS.rule("all_gather", registered_later=True)
def _all_gather(program, eqn, inputs, out) -> list[str]:
    call = _call(program, "allgather", inputs[0], out, _comm(eqn))
    return _checked(program, eqn, [*_new(program, eqn, out), call])


@EMITTERS.rule("psum_scatter", registered_later=True)
def _psum_scatter(program, eqn, inputs, out) -> list[str]:
    call = _call(program, "reduce_scatter", inputs[0], out, _datatype(eqn), _op("psum"), _comm(eqn))
    return _checked(program, eqn, [*_new(program, eqn, out), call])


@EMITTERS.rule("all_to_all", registered_later=True)
def _all_to_all(program, eqn, inputs, out) -> list[str]:
    call = _call(program, "alltoall", inputs[0], out, eqn.params["size"], _comm(eqn))
    return _checked(program, eqn, [*_new(program, eqn, out), call])


@EMITTERS.rule("ppermute", registered_later=True)
def _ppermute(program, eqn, inputs, out) -> list[str]:
    from mpi4py import MPI

    from ...ir import collectives as c  # at run time: it registers the primitives

    size = c.communicator(eqn.params["comm"]).Get_size()
    partners = [c.ppermute_partners(eqn.params["perm"], r) for r in range(size)]
    destinations = tuple_source([d for d, _ in partners])
    sources = tuple_source([s for _, s in partners])
    arguments = (inputs[0], out, destinations, sources, MPI.PROC_NULL, _comm(eqn))
    return _checked(
        program, eqn, [*_new(program, eqn, out), _call(program, "sendrecv", *arguments)]
    )


@EMITTERS.rule("broadcast", registered_later=True)
def _broadcast(program, eqn, inputs, out) -> list[str]:
    call = _call(program, "bcast", out, eqn.params["root"], _comm(eqn))
    return _checked(program, eqn, [*_new(program, eqn, out), f"{out}[...] = {inputs[0]}", call])


@EMITTERS.rule("axis_index", registered_later=True)
def _axis_index(program, eqn, inputs, out) -> list[str]:
    return [*_new(program, eqn, out), f"{out}[()] = {_call(program, 'rank', _comm(eqn))}"]


def register() -> None:
    """Add the collectives' runtime module to the program's imports (idempotent)."""
    from . import launcher_module

    launcher_module.IMPORTS.update(IMPORTS)
    launcher_module._RESERVED.add(ALIAS)
