"""Run as one process (``python single_process.py [cuda]``, MPI's singleton): what needs
no second process. With ``cuda`` (under ``NUMBA_ENABLE_CUDASIM=1``), the collectives on
the cuda backend against NumPy; otherwise the IR side: printed form, JSON round trip,
typechecked transforms, the rule tables, passes that keep communication, and the errors
of bad arguments. A process of one is a communicator too: every collective is then the
identity (or a stack of one). Prints ``SINGLE PROCESS CHECKS PASSED``.
"""

from __future__ import annotations

import sys

import numpy as np

import numbax
import numbax.distributed as nd
from numbax.backends.cpu import opaque
from numbax.backends.cuda.control import RUNNERS
from numbax.ir import collectives as c
from numbax.ir import dumps, eval_jaxpr, loads, typecheck
from numbax.ir.errors import ShapeError
from numbax.ir.rules import RuleTable
from numbax.transforms.batching import BATCH_RULES
from numbax.transforms.jvp import JVP_RULES
from numbax.transforms.vjp_rules import VJP_RULES

assert nd.process_count() == 1 and nd.process_index() == 0


def every_collective(x):
    """Each collective once, on a (2, 3) float64 array, combined into one output."""
    gathered = nd.all_gather(x, axis=1)  # (2, 1, 3)
    parts = [
        nd.psum(x),
        nd.pmean(x),
        nd.pmax(x),
        nd.pmin(x),
        gathered.reshape(2, 3),
        nd.psum_scatter(x, scatter_dimension=0, tiled=True),
        nd.all_to_all(x, None, 1, 0, tiled=True),
        nd.ppermute(x, [(0, 0)]),
        nd.broadcast(x, root=0),
        x * nd.axis_index(),
    ]
    return sum(parts[1:], parts[0])


def check_ir() -> None:
    x = np.arange(6.0).reshape(2, 3)
    closed = numbax.make_jaxpr(every_collective)(x)
    text = str(closed)
    for name in ("psum[comm=0]", "all_gather[comm=0 size=1]", "ppermute[comm=0 perm=((0, 0),)]"):
        assert name in text, f"{name} not printed in\n{text}"
    loaded = loads(dumps(closed))
    assert str(loaded) == text
    expected = x * 9  # nine identities, and the rank 0
    np.testing.assert_array_equal(eval_jaxpr(loaded.jaxpr, loaded.consts, x)[0], expected)
    for transformed in (
        numbax.make_jaxpr(numbax.grad(lambda x: every_collective(x).sum()))(x),
        numbax.make_jaxpr(numbax.vmap(every_collective))(np.stack([x, x])),
        numbax.make_jaxpr(lambda x, t: numbax.jvp(every_collective, (x,), (t,)))(x, x),
    ):
        typecheck(transformed.jaxpr)
    for backend in ("interpret", "cpu"):
        np.testing.assert_array_equal(numbax.jit(every_collective, backend=backend)(x), expected)
        grad = numbax.jit(numbax.grad(lambda x: every_collective(x).sum()), backend=backend)
        np.testing.assert_array_equal(grad(x), np.full_like(x, 9.0))


def check_tables() -> None:
    """The collectives in every rule table that applies to them (the cpu emitters, the
    batching, derivative and cuda runner tables among them)."""
    for prim in c.COLLECTIVES:
        assert prim.side_effects, prim
        assert prim.name in opaque.EMITTERS, f"{prim}: no cpu writer"
        assert prim in BATCH_RULES or BATCH_RULES.not_applicable(prim), prim
        assert prim in RUNNERS, f"{prim}: no cuda runner"
        if prim.differentiable:
            assert prim in JVP_RULES and prim in VJP_RULES, f"{prim}: no derivative rule"
    for table in RuleTable.TABLES:
        missing = [prim.name for prim in table.missing()]
        assert not missing, f"table {table.name!r} has no rule for {missing}"


def check_passes_keep_communication() -> None:
    """Unread, repeated or constant collectives still run: every process must call them."""

    def program(x):
        nd.psum(x)  # unread
        return nd.psum(x) + nd.psum(x) + nd.psum(np.ones(3))  # twice the same, constant

    source = numbax.jit(program, backend="cpu").lower(np.ones(3)).compile().source
    assert source.count("nbx_mpi.allreduce(") == 4, source


def check_errors() -> None:
    refusals = [
        (lambda: nd.ppermute(np.ones(2), [(0, 1)]), "not a permutation of ranks"),
        (lambda: nd.psum_scatter(np.ones((2, 3)), scatter_dimension=1), "must be 1"),
        (lambda: nd.broadcast(np.ones(2), root=3), "root=3"),
        (lambda: nd.all_gather(np.ones(2), axis=5), "axis=5 is out of range"),
        (lambda: nd.all_gather(np.float64(1.0), tiled=True), "scalar"),
    ]
    for call, words in refusals:
        try:
            call()
        except ShapeError as err:
            assert words in str(err), f"{words!r} not in {err}"
        else:
            raise AssertionError(f"no error: {words}")


def check_cuda() -> None:
    x = np.arange(6.0).reshape(2, 3)
    run = numbax.jit(lambda x: every_collective(x) * 2.0, backend="cuda")
    np.testing.assert_array_equal(np.asarray(run(x)), x * 18)
    grad = numbax.jit(numbax.grad(lambda x: every_collective(x).sum()), backend="cuda")
    np.testing.assert_array_equal(np.asarray(grad(x)), np.full_like(x, 9.0))
    batched = numbax.jit(numbax.vmap(every_collective), backend="cuda")
    np.testing.assert_array_equal(np.asarray(batched(np.stack([x, -x]))), np.stack([x, -x]) * 9)


if sys.argv[1:] == ["cuda"]:
    check_cuda()
else:
    check_ir()
    check_tables()
    check_passes_keep_communication()
    check_errors()
print("SINGLE PROCESS CHECKS PASSED")
