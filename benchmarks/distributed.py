"""numbax.distributed's costs: the all-reduce compiled into a program against mpi4py's
``Allreduce`` on the same NumPy buffers, and the data-parallel MLP step's time at 1, 2
and 4 processes.

    mpiexec -n 2 python -m benchmarks.distributed             # all-reduce bandwidth + step
    python -m benchmarks.distributed --scaling                # the step at 1, 2, 4 processes

All-reduce: float64 arrays of 1 KiB to 64 MiB; for each size the two are called
alternately, each call after a barrier, and the median time on process 0 is kept;
bandwidth is the array's bytes over that time, and the ratio the median over the pairs
of calls (a pair runs back to back, so a loaded machine moves it little). numbax's call
is a whole jitted program (``jit(psum)`` on the cpu backend: argument checks, the
result's allocation, the ``MPI_Allreduce`` inside the compiled code); mpi4py's writes
into a buffer allocated once. The step: the digits MLP
(``examples/mlp_digits_distributed.py``), a minibatch of 64 split over the processes,
gradients averaged with ``pmean`` in the step; median seconds per step. Not part of
``python -m benchmarks``: it needs ``mpiexec``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

SIZES = [1 << k for k in range(10, 27, 2)]  # 1 KiB .. 64 MiB


def _timed(call, world) -> float:
    world.Barrier()
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def allreduce_bandwidth(repeats: int) -> list[tuple[int, float, float, float]]:
    """(bytes, numbax GB/s, mpi4py GB/s, numbax's bandwidth over mpi4py's) per size, on
    process 0: the bandwidths from the median times, the ratio the median of the pairs'."""
    from mpi4py import MPI

    import numbax
    import numbax.distributed as nd

    world = MPI.COMM_WORLD
    rows = []
    for nbytes in SIZES:
        x = np.full(nbytes // 8, 1.0 + world.Get_rank())
        out = np.empty_like(x)
        program = numbax.jit(nd.psum, backend="cpu").lower(x).compile()
        np.testing.assert_array_equal(program(x), np.full_like(x, sum(range(1, world.size + 1))))
        times = {"numbax": [], "mpi4py": []}
        count = max(3, min(repeats, (256 << 20) // nbytes))
        for _ in range(count):
            times["numbax"].append(_timed(lambda: program(x), world))  # noqa: B023
            times["mpi4py"].append(_timed(lambda: world.Allreduce(x, out, MPI.SUM), world))  # noqa: B023
        seconds = {k: statistics.median(v) for k, v in times.items()}
        # Each pair ran back to back: its ratio is little moved by the load of the moment.
        ratio = statistics.median(m / n for n, m in zip(*times.values(), strict=True))
        bandwidth = {k: nbytes / t / 1e9 for k, t in seconds.items()}
        rows.append((nbytes, bandwidth["numbax"], bandwidth["mpi4py"], ratio))
    return rows


def step_seconds(steps: int) -> float:
    """Median seconds of one data-parallel MLP step at this process count."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
    from mlp_digits import LEARNING_RATE, init_params, load_data
    from mlp_digits_distributed import make_step, shard

    import numbax
    from numbax.config import config

    config.tiered = False  # every timed step runs the compiled program
    x_train, _, y_train, _ = load_data()
    params = init_params(64, 10)
    optimizer = numbax.optim.adam(LEARNING_RATE)
    state, step = optimizer.init(params), make_step(optimizer)
    batch = shard(np.arange(64))
    from mpi4py import MPI

    world, times = MPI.COMM_WORLD, []
    for k in range(steps + 5):
        start = time.perf_counter()
        params, state, loss = step(params, state, x_train[batch + k], y_train[batch + k])
        float(loss)
        world.Barrier()
        if k >= 5:  # after compiling and warming up
            times.append(time.perf_counter() - start)
    return statistics.median(times)


def scaling(steps: int) -> None:
    """The step at 1, 2 and 4 processes, each a run of ``mpiexec -n k`` of this module."""
    mpiexec = Path(sys.executable).parent / "mpiexec"
    print(f"data-parallel MLP step, minibatch 64 over k processes ({os.cpu_count()} cores)")
    for count in (1, 2, 4):
        command = [str(mpiexec), "-n", str(count), sys.executable, "-m", "benchmarks.distributed"]
        done = subprocess.run(
            [*command, "--step-only", "--steps", str(steps)],
            capture_output=True,
            text=True,
            timeout=900,
            check=True,
        )
        print(f"  {count} process(es): {done.stdout.strip().splitlines()[-1]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=50, help="calls per size (at most)")
    parser.add_argument("--steps", type=int, default=200, help="timed MLP steps")
    parser.add_argument("--scaling", action="store_true", help="the step at 1, 2, 4 processes")
    parser.add_argument("--step-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.scaling:
        scaling(args.steps)
        return
    import numbax.distributed as nd

    rank, count = nd.process_index(), nd.process_count()
    if args.step_only:
        seconds = step_seconds(args.steps)
        if rank == 0:
            print(f"{seconds * 1e3:.3f} ms per step")
        return
    rows = allreduce_bandwidth(args.repeats)
    seconds = step_seconds(args.steps)
    if rank != 0:
        return
    print(f"all-reduce of float64, {count} processes, {os.cpu_count()} cores (median per call)")
    print(f"{'bytes':>10} {'numbax GB/s':>12} {'mpi4py GB/s':>12} {'ratio':>7}")
    for nbytes, ours, theirs, ratio in rows:
        print(f"{nbytes:>10} {ours:>12.3f} {theirs:>12.3f} {ratio:>7.2f}")
    print("ratio: numbax's bandwidth over mpi4py's, the median over calls made in pairs")
    print(f"data-parallel MLP step at {count} processes: {seconds * 1e3:.3f} ms")


if __name__ == "__main__":
    main()
