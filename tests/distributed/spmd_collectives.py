"""Run under ``mpiexec -n N``: every collective against NumPy's computation of the same
global function, on every process; ``grad`` and ``jvp`` against central finite
differences of the global function; ``vmap`` against a loop over examples. Under
``jit`` on the interpret and cpu backends, and eagerly.

The global function of a case is ``ys = reference(xs)``: every process's input to every
process's output. Process ``r`` holds ``xs[r]`` (drawn from a seed of its rank, so every
process can compute every other's) and must compute ``ys[r]``. Its gradient is that of
``G(xs) = sum_s loss(ys[s], ws[s])`` with respect to ``xs[r]`` (JAX's meaning of a
collective's derivative: each process seeds the cotangent of its own output).

The cpu programs are compiled by process 0 first, then loaded by the others from the
shared disk cache (``NUMBAX_CACHE_DIR``): a program's text is the same on every process.
Prints ``ALL CHECKS PASSED`` at the end; any failure raises, and the exception hook of
``numbax.distributed`` aborts every process.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

import numpy as np
from mpi4py import MPI

import numbax
import numbax.distributed as nd

RANK, SIZE = nd.process_index(), nd.process_count()
WORLD = MPI.COMM_WORLD
BACKENDS = sys.argv[1].split(",") if len(sys.argv) > 1 else ["interpret", "cpu"]
BATCH = 3


@dataclass
class Case:
    name: str
    collective: object  # x -> y on one process
    reference: object  # [x per process] -> [y per process], NumPy
    shape: tuple
    dtype: str = "float64"
    differentiable: bool = True
    comm: object = None
    members: list = field(default_factory=lambda: list(range(SIZE)))


def draw(shape, dtype, rank, salt=0):
    rng = np.random.default_rng(1000 * rank + salt)
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if np.dtype(dtype).kind in "iu":
        return rng.integers(-50 if np.dtype(dtype).kind == "i" else 0, 50, shape).astype(dtype)
    return rng.normal(size=shape).astype(dtype)


def split(a, axis):
    return np.split(a, SIZE, axis)


def ppermute_reference(perm):
    def reference(xs):
        ys = [np.zeros_like(x) for x in xs]
        for source, destination in perm:
            ys[destination] = xs[source]
        return ys

    return reference


def cases() -> list[Case]:
    n = SIZE
    ring = [(i, (i + 1) % n) for i in range(n)]
    one_way = [(0, n - 1)]
    every = range(n)
    found = [
        Case("psum", nd.psum, lambda xs: [sum(xs)] * n, (3, 2)),
        Case("pmean", nd.pmean, lambda xs: [sum(xs) / n] * n, (3, 2)),
        Case("psum_scalar", nd.psum, lambda xs: [sum(xs)] * n, ()),
        Case("all_gather_scalar", nd.all_gather, lambda xs: [np.stack(xs)] * n, ()),
        Case("pmax", nd.pmax, lambda xs: [np.max(xs, 0)] * n, (5,)),
        Case("pmin", nd.pmin, lambda xs: [np.min(xs, 0)] * n, (5,)),
        Case("psum_int32", nd.psum, lambda xs: [sum(xs)] * n, (4,), "int32", False),
        Case("pmax_bool", nd.pmax, lambda xs: [np.any(xs, 0)] * n, (4,), "bool", False),
        Case("psum_float16", nd.psum, lambda xs: [sum(xs)] * n, (4,), "float16", False),
        Case("all_gather", nd.all_gather, lambda xs: [np.stack(xs)] * n, (2, 3)),
        Case(
            "all_gather_axis2",
            lambda x: nd.all_gather(x, axis=2),
            lambda xs: [np.stack(xs, 2)] * n,
            (2, 3),
        ),
        Case(
            "all_gather_tiled_axis1",
            lambda x: nd.all_gather(x, axis=1, tiled=True),
            lambda xs: [np.concatenate(xs, 1)] * n,
            (2, 3),
        ),
        Case(
            "all_gather_float32",
            nd.all_gather,
            lambda xs: [np.stack(xs)] * n,
            (3,),
            "float32",
            False,
        ),
        Case(
            "psum_scatter_dim1",
            lambda x: nd.psum_scatter(x, scatter_dimension=1),
            lambda xs: [split(sum(xs), 1)[s][:, 0] for s in every],
            (2, n),
        ),
        Case(
            "psum_scatter_tiled",
            lambda x: nd.psum_scatter(x, tiled=True),
            lambda xs: [split(sum(xs), 0)[s] for s in every],
            (2 * n, 3),
        ),
        Case(
            "all_to_all_0_1",
            lambda x: nd.all_to_all(x, None, 0, 1),
            lambda xs: [np.stack([x[s] for x in xs], 1) for s in every],
            (n, 3),
        ),
        Case(
            "all_to_all_tiled_1_0",
            lambda x: nd.all_to_all(x, None, 1, 0, tiled=True),
            lambda xs: [np.concatenate([split(x, 1)[s] for x in xs], 0) for s in every],
            (2, 2 * n),
        ),
        Case("ppermute_ring", lambda x: nd.ppermute(x, ring), ppermute_reference(ring), (2, 2)),
        Case(
            "ppermute_one_way",
            lambda x: nd.ppermute(x, perm=one_way),
            ppermute_reference(one_way),
            (3,),
        ),
        Case(
            "broadcast",
            lambda x: nd.broadcast(x, root=n - 1),
            lambda xs: [xs[n - 1]] * n,
            (2, 2),
        ),
        Case(
            "axis_index",
            lambda x: x * nd.axis_index(),
            lambda xs: [x * s for s, x in enumerate(xs)],
            (3,),
        ),
    ]
    if n >= 4:  # a communicator of the even and one of the odd ranks
        halves = WORLD.Split(RANK % 2, RANK)
        members = [r for r in range(n) if r % 2 == RANK % 2]

        def half_sum(xs):
            return [sum(xs[r] for r in range(n) if r % 2 == s % 2) for s in range(n)]

        found.append(
            Case("psum_comm", lambda x: nd.psum(x, comm=halves), half_sum, (3,), comm=halves)
        )
        found[-1].members = members
    return found


def check(name, actual, expected, rtol=1e-12):
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.shape == expected.shape, f"{name}: shape {actual.shape} != {expected.shape}"
    assert actual.dtype == expected.dtype or np.issubdtype(actual.dtype, np.floating), (
        f"{name}: dtype {actual.dtype} != {expected.dtype}"
    )
    if actual.dtype == np.float16:
        rtol = 1e-3
    ok = np.allclose(actual.astype(np.float64), expected.astype(np.float64), rtol, 1e-12)
    assert ok, f"{name} on process {RANK}:\n{actual}\n!=\n{expected}"


def loss(y, w):
    return (np.sin(y) * w).sum()


def numbax_loss(collective):
    return lambda x, w: (numbax.numpy.sin(collective(x)) * w).sum()


def global_gradient(case, xs, ws):
    """d/dxs[RANK] of sum_s loss(ys[s], ws[s]), by central differences in float64."""

    def total(x_mine):
        inputs = [x_mine if r == RANK else x for r, x in enumerate(xs)]
        return sum(loss(y, w) for y, w in zip(case.reference(inputs), ws, strict=True))

    x, step = xs[RANK].astype(np.float64), 1e-6
    gradient = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        plus, minus = x.copy(), x.copy()
        plus[i] += step
        minus[i] -= step
        gradient[i] = (total(plus) - total(minus)) / (2 * step)
    return gradient


def global_tangent(case, xs, ts):
    """This process's output's tangent along every process's tangent ``ts``: a central
    difference of the global function, in float64."""
    step = 1e-6
    plus = case.reference([x + step * t for x, t in zip(xs, ts, strict=True)])[RANK]
    minus = case.reference([x - step * t for x, t in zip(xs, ts, strict=True)])[RANK]
    return (plus - minus) / (2 * step)


def programs(case, backend, xs, ws, batch):
    """The jitted programs of a case on one backend and their arguments and oracles."""
    x, w = xs[RANK], ws[RANK]
    found = [
        (f"{case.name}/{backend}/value", case.collective, (x,), case.reference(xs)[RANK]),
        (
            f"{case.name}/{backend}/vmap",
            numbax.vmap(case.collective),
            (batch[RANK],),
            np.stack([case.reference([b[i] for b in batch])[RANK] for i in range(BATCH)]),
        ),
    ]
    if case.differentiable:
        ts = [draw(case.shape, case.dtype, r, salt=3) for r in range(SIZE)]
        found.append(
            (
                f"{case.name}/{backend}/grad",
                numbax.grad(numbax_loss(case.collective)),
                (x, w),
                global_gradient(case, xs, ws),
            )
        )
        found.append(
            (
                f"{case.name}/{backend}/jvp",
                lambda x, t: numbax.jvp(case.collective, (x,), (t,))[1],
                (x, ts[RANK]),
                global_tangent(case, xs, ts),
            )
        )
    return [(name, numbax.jit(fn, backend=backend), args, want) for name, fn, args, want in found]


def scan_program(backend):
    """psum inside a scan: each step adds every process's carry."""

    def run(x):
        def step(carry, _):
            carry = nd.psum(carry) * 0.5
            return carry, carry.sum()

        return numbax.lax.scan(step, x, None, length=3)

    x = np.full(2, RANK + 1.0)
    carry = np.full(2, sum(range(1, SIZE + 1)) * 0.5)
    sums = [carry.sum()]
    for _ in range(2):
        carry = carry * SIZE * 0.5
        sums.append(carry.sum())
    return f"scan/{backend}", numbax.jit(run, backend=backend), (x,), (carry, np.array(sums))


def main() -> None:
    every_case = cases()
    work = []
    for case in every_case:
        xs = [draw(case.shape, case.dtype, r) for r in range(SIZE)]
        ws = [draw(case.reference(xs)[0].shape, "float64", r, salt=1) for r in range(SIZE)]
        batch = [draw((BATCH, *case.shape), case.dtype, r, salt=2) for r in range(SIZE)]
        x = xs[RANK]
        check(f"{case.name}/eager", case.collective(x), case.reference(xs)[RANK])
        for backend in BACKENDS:
            work += programs(case, backend, xs, ws, batch)
    work += [scan_program(backend) for backend in BACKENDS]
    # Compile (traces only: no collective runs): process 0 first, the others from its cache.
    for turn in (0, 1):
        if (RANK == 0) == (turn == 0):
            executables = [fn.lower(*args).compile() for _, fn, args, _ in work]
        WORLD.Barrier()
    for (name, _, args, want), executable in zip(work, executables, strict=True):
        got = executable(*args)
        if isinstance(want, tuple):
            for k, (g, e) in enumerate(zip(got, want, strict=True)):
                check(f"{name}[{k}]", g, e, rtol=1e-6)
        else:
            derivative = name.endswith(("grad", "jvp"))
            check(name, got, want, rtol=1e-6 if derivative else 1e-12)
    WORLD.Barrier()
    if RANK == 0:
        print(f"ALL CHECKS PASSED: {len(every_case)} collectives, {len(work)} programs, {SIZE}")


main()
