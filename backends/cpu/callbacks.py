"""Callbacks into Python from the compiled program: ``debug_callback`` and
``pure_callback`` (``ir/callbacks.py``), each an opaque kernel of one op.

The call is a ``with numba.objmode(...)`` block: Numba runs the block as ordinary
Python, handing it the program's arrays as NumPy arrays, and checks what it binds
against the declared types. Each call site is a small ``njit`` function of its own at
module level, which the program calls: Numba (0.68) fails to compile a function with
more than one objmode block inside loops ("Instruction does not dominate all uses"),
and a call keeps the block out of the program's loops. The block looks the function up
by the eqn's id in ``CALLBACKS`` when it runs (a module global, read at run time, so
code loaded from the disk cache calls this process's function). A rank-0 literal
operand is passed as a 0-d array, as every other operand is an array.
"""

from __future__ import annotations

from ...ir import dtypes
from .opaque_emitters import EMITTERS

RUNTIME = "numbax.ir.callbacks"
NUMBA = "numba"
# What generated code that calls back needs imported (launcher_module.IMPORTS's form).
IMPORTS = {
    RUNTIME: ("nbx_callbacks", "from numbax.ir import callbacks as nbx_callbacks"),
    NUMBA: ("numba", "import numba"),
}


def _array_type(aval) -> str:
    """The Numba type of a C-contiguous array of ``aval``, as objmode reads it."""
    dtype = "boolean" if aval.dtype == dtypes.bool_ else aval.dtype.name
    return f"Array({dtype}, {aval.ndim}, 'C')"


def _call_site(program, eqn, block: list[str], results: list[str]) -> str:
    """Define the call site's function (parameters ``p0, p1, ...``, the objmode
    ``block``, returning ``results``); the call of it, on the eqn's operands."""
    name = program.fresh(eqn.prim.name)
    params = [f"p{k}" for k in range(len(eqn.inputs))]
    body = ["@njit(no_cfunc_wrapper=True)", f"def {name}({', '.join(params)}):", *block]
    if results:
        body.append(f"    return {', '.join(results)}")
    program.module_function(body)
    operands = [program.array_of(atom) for atom in eqn.inputs]
    return f"{name}({', '.join(operands)})"


def _callback(program, eqn) -> str:
    arguments = [str(eqn.params["callback"])] + [f"p{k}" for k in range(len(eqn.inputs))]
    return f"{program.function(RUNTIME, 'call')}({', '.join(arguments)})"


@EMITTERS.rule("debug_callback")
def _debug_callback(program, eqn, inputs, out) -> list[str]:
    objmode = program.function(NUMBA, "objmode")
    block = [f"    with {objmode}():", f"        {_callback(program, eqn)}"]
    return [_call_site(program, eqn, block, [])]


@EMITTERS.rule("pure_callback")
def _pure_callback(program, eqn, inputs, out) -> list[str]:
    results = [f"r{k}" for k in range(len(eqn.outputs))]
    declared = ", ".join(
        f'{r}="{_array_type(var.aval)}"' for r, var in zip(results, eqn.outputs, strict=True)
    )
    unpacked = f"({results[0]},)" if len(results) == 1 else ", ".join(results)
    call = f"{unpacked} = {_callback(program, eqn)}" if results else _callback(program, eqn)
    block = [f"    with {program.function(NUMBA, 'objmode')}({declared}):", f"        {call}"]
    site = _call_site(program, eqn, block, results)
    if not results:
        return [site]
    targets = ", ".join(program.name(var) for var in eqn.outputs)
    return [f"{targets} = {site}"]
