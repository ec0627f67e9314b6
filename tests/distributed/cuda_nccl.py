"""Run under ``NUMBA_ENABLE_CUDASIM=1`` as ``python cuda_nccl.py MODE`` or on N processes
with ``mpiexec``: the cuda backend's choice between NCCL and host staging, and the NCCL
calls it makes, against NumPy's global result. Prints ``CUDA NCCL CHECKS PASSED``.

MODE ``nccl``: CuPy's NCCL binding is the stand-in of ``fake_nccl.py``: every collective
of a float64 program goes through it (the calls logged, in the program's order, on one
NCCL communicator made once), the other dtypes through NCCL or, without an NCCL type,
through the host. ``off``: the stand-in is there and ``NUMBAX_CUDA_NCCL=0`` (set by the
caller): nothing calls it. ``absent``: CuPy cannot be imported: everything is staged.
"""

from __future__ import annotations

import sys

import numpy as np

MODE = sys.argv[1]
if MODE in ("nccl", "off"):
    import fake_nccl

    fake_nccl.install()
    LOG = fake_nccl.LOG
else:
    assert MODE == "absent", MODE
    sys.modules["cupy"] = None  # as if CuPy were not installed
    LOG = []

import numbax  # noqa: E402  (after CuPy's stand-in is in place)
import numbax.distributed as nd  # noqa: E402
from numbax.backends.cuda import collectives, nccl  # noqa: E402
from numbax.ir import dtypes  # noqa: E402

RANK, SIZE = nd.process_index(), nd.process_count()
STAGED: list[str] = []
_run_staged = collectives.run_staged


def counting_staged(executable, step, operands, stream):
    STAGED.append(step.eqn.prim.name)
    return _run_staged(executable, step, operands, stream)


collectives.run_staged = counting_staged


def local(rank: int, dtype=np.float64) -> np.ndarray:
    """Process ``rank``'s operand: (2 * SIZE, 3), different on every process."""
    return (np.arange(6 * SIZE).reshape(2 * SIZE, 3) * (rank + 1) + 7 * rank).astype(dtype)


EVERYONE = [local(r) for r in range(SIZE)]
RING = [(r, (r + 1) % SIZE) for r in range(SIZE)]
CHAIN = [(r, r + 1) for r in range(SIZE - 1)]  # process 0 receives nothing: zeros
MINE = slice(2 * RANK, 2 * RANK + 2)


def every_collective(x):
    return {
        "psum": nd.psum(x),
        "pmax": nd.pmax(x),
        "pmin": nd.pmin(x),
        "all_gather": nd.all_gather(x),
        "psum_scatter": nd.psum_scatter(x, tiled=True),
        "all_to_all": nd.all_to_all(x, None, 0, 0, tiled=True),
        "ppermute ring": nd.ppermute(x, RING),
        "ppermute chain": nd.ppermute(x, CHAIN),
        "broadcast": nd.broadcast(x, root=SIZE - 1),
    }


EXPECTED = {
    "psum": sum(EVERYONE),
    "pmax": np.max(EVERYONE, axis=0),
    "pmin": np.min(EVERYONE, axis=0),
    "all_gather": np.stack(EVERYONE),
    "psum_scatter": sum(EVERYONE)[MINE],
    "all_to_all": np.concatenate([theirs[MINE] for theirs in EVERYONE]),
    "ppermute ring": EVERYONE[(RANK - 1) % SIZE],
    "ppermute chain": EVERYONE[RANK - 1] if RANK > 0 else np.zeros_like(EVERYONE[0]),
    "broadcast": EVERYONE[SIZE - 1],
}


def nccl_calls(start: int) -> list[tuple]:
    made = ("NcclCommunicator", "get_unique_id")
    return [call for call in LOG[start:] if call[0] not in made]


def expected_calls() -> list[tuple]:
    """The NCCL calls of ``every_collective`` on float64 (2 * SIZE, 3), in order."""
    count, nbytes = 6 * SIZE, 6 * SIZE * 8
    chunk = nbytes // SIZE
    destination, source = (RANK + 1) % SIZE, (RANK - 1) % SIZE
    chain = [("send", nbytes, "NCCL_UINT8", RANK + 1)] if RANK < SIZE - 1 else []
    chain += [("recv", nbytes, "NCCL_UINT8", RANK - 1)] if RANK > 0 else []
    return [
        ("allReduce", count, "NCCL_FLOAT64", "SUM"),
        ("allReduce", count, "NCCL_FLOAT64", "MAX"),
        ("allReduce", count, "NCCL_FLOAT64", "MIN"),
        ("allGather", nbytes, "NCCL_UINT8"),
        ("reduceScatter", count // SIZE, "NCCL_FLOAT64", "SUM"),
        ("groupStart",),
        *[
            call
            for peer in range(SIZE)
            for call in (
                ("send", chunk, "NCCL_UINT8", peer),
                ("recv", chunk, "NCCL_UINT8", peer),
            )
        ],
        ("groupEnd",),
        ("groupStart",),
        ("send", nbytes, "NCCL_UINT8", destination),
        ("recv", nbytes, "NCCL_UINT8", source),
        ("groupEnd",),
        *([("groupStart",), *chain, ("groupEnd",)] if chain else []),
        ("broadcast", nbytes, "NCCL_UINT8", SIZE - 1),
    ]


def check_values(results: dict, what: str) -> None:
    for name, expected in EXPECTED.items():
        got = np.asarray(results[name].copy_to_host())
        np.testing.assert_array_equal(got, expected, err_msg=f"{what}: {name}")


def check_every_collective() -> None:
    run = numbax.jit(every_collective, backend="cuda")
    for attempt in range(2):  # the second call reuses the NCCL communicator
        start, staged = len(LOG), len(STAGED)
        check_values(run(EVERYONE[RANK]), f"call {attempt}")
        if MODE == "nccl":
            assert STAGED[staged:] == [], STAGED[staged:]
            calls = nccl_calls(start)
            assert calls == expected_calls(), f"NCCL calls:\n{calls}\n!=\n{expected_calls()}"
        else:
            assert LOG == [], f"NCCL called in mode {MODE}: {LOG}"
            assert sorted(STAGED[staged:]) == sorted(
                ["psum", "pmax", "pmin", "all_gather", "psum_scatter", "all_to_all"]
                + ["ppermute", "ppermute", "broadcast"]
            ), STAGED[staged:]
    if MODE == "nccl":
        made = [call for call in LOG if call[0] == "NcclCommunicator"]
        ids = [call for call in LOG if call[0] == "get_unique_id"]
        assert made == [("NcclCommunicator", SIZE, RANK)], made
        assert len(ids) == (1 if RANK == 0 else 0), ids  # made on 0, broadcast by MPI


def check_gradients() -> None:
    """The transposes run through NCCL too: psum's is a psum, all_gather's a
    psum_scatter. grad on process r of the sum over processes of every output."""
    x = EVERYONE[RANK]
    weights = np.arange(SIZE * x.size, dtype=np.float64).reshape(SIZE, *x.shape)
    squared = numbax.jit(numbax.grad(lambda x: nd.psum(x * x).sum()), backend="cuda")
    np.testing.assert_allclose(squared(x).copy_to_host(), 2 * SIZE * x, rtol=1e-12)
    gathered = numbax.jit(numbax.grad(lambda x: (nd.all_gather(x) * weights).sum()), backend="cuda")
    start = len(LOG)
    np.testing.assert_allclose(gathered(x).copy_to_host(), SIZE * weights[RANK], rtol=1e-12)
    if MODE == "nccl":
        assert ("reduceScatter", x.size, "NCCL_FLOAT64", "SUM") in LOG[start:], LOG[start:]


def check_dtypes() -> None:
    """Reductions in each kind of dtype; NCCL where it has the type, else staged."""
    cases = [  # dtype, NCCL's type of the psum, or None: staged
        (np.float32, "NCCL_FLOAT32", 1),
        (np.int32, "NCCL_INT32", 1),
        (np.uint8, "NCCL_UINT8", 1),
        (np.complex64, "NCCL_FLOAT32", 2),  # (re, im) pairs
        (np.float16, "NCCL_FLOAT32", 1),  # reduced through float32 by the front end
        (np.int16, None, 1),  # NCCL has no int16
    ]
    if dtypes.bfloat16 is not None:
        cases.append((dtypes.bfloat16, "NCCL_FLOAT32", 1))
    for dtype, nccl_type, per_value in cases:
        everyone = [local(r, np.float64) for r in range(SIZE)]
        if np.dtype(dtype).kind == "c":
            everyone = [e + 1j * (e + 1) for e in everyone]
        everyone = [e.astype(dtype) for e in everyone]
        run = numbax.jit(lambda x: (nd.psum(x), nd.all_gather(x)), backend="cuda")
        start, staged = len(LOG), len(STAGED)
        total, gathered = run(everyone[RANK])
        wide = np.float32 if np.dtype(dtype).itemsize == 2 and dtype != np.int16 else dtype
        expected = sum(e.astype(wide) for e in everyone).astype(dtype)
        name = np.dtype(dtype).name
        np.testing.assert_array_equal(total.copy_to_host(), expected, err_msg=name)
        np.testing.assert_array_equal(gathered.copy_to_host(), np.stack(everyone), err_msg=name)
        if MODE != "nccl":
            continue
        # The gather moves bytes (of float32, where the program computes a narrow
        # float in float32); the values above check them.
        calls = [
            call[:1] + call[2:] if call[0] == "allGather" else call for call in nccl_calls(start)
        ]
        if nccl_type is None:
            assert STAGED[staged:] == ["psum"], (name, STAGED[staged:])
            assert calls == [("allGather", "NCCL_UINT8")], (name, calls)
        else:
            assert STAGED[staged:] == [], (name, STAGED[staged:])
            reduce = ("allReduce", everyone[0].size * per_value, nccl_type, "SUM")
            assert calls == [reduce, ("allGather", "NCCL_UINT8")], (name, calls)


def check_a_second_communicator() -> None:
    """A second MPI communicator gets its own NCCL communicator."""
    other = nd.communicator().Dup()
    run = numbax.jit(lambda x: nd.psum(x, comm=other), backend="cuda")
    np.testing.assert_array_equal(run(EVERYONE[RANK]).copy_to_host(), sum(EVERYONE))
    if MODE == "nccl":
        assert fake_nccl.NcclCommunicator.made == 2, fake_nccl.NcclCommunicator.made
        assert len(nccl._COMMUNICATORS) == 2


def check_real_nccl_is_not_given_simulated_memory() -> None:
    """Under the simulator, device memory is host memory: a NCCL module that does not
    say it works on that (CuPy's real one) is not called."""
    if MODE != "nccl":
        return
    fake_nccl.simulated = False
    try:
        start, staged = len(LOG), len(STAGED)
        run = numbax.jit(lambda x: nd.psum(x) * 3.0, backend="cuda")
        np.testing.assert_array_equal(run(EVERYONE[RANK]).copy_to_host(), 3 * sum(EVERYONE))
        assert LOG[start:] == [] and STAGED[staged:] == ["psum"], (LOG[start:], STAGED)
    finally:
        fake_nccl.simulated = True


check_every_collective()
check_gradients()
check_dtypes()
check_a_second_communicator()
check_real_nccl_is_not_given_simulated_memory()
print("CUDA NCCL CHECKS PASSED")
