"""A 2-D heat equation on a grid split across MPI processes in strips of rows, each
step exchanging one-row halos with ``ppermute``: domain decomposition, the way large
simulations are spread over many nodes.

Process ``r`` holds rows ``r * h`` to ``(r + 1) * h`` of the ``(ROWS, COLUMNS)`` grid.
Each explicit step needs the row above its strip (the last row of process ``r - 1``)
and the row below (the first row of ``r + 1``): two ``ppermute`` calls shift them one
process down and one up; the processes at the grid's edges receive zeros, which are the
boundary condition (the plate's edges are held at 0). The whole time loop is one jitted
``fori_loop``, its halo exchanges compiled into the program.

    mpiexec -n 4 python examples/heat_halo.py
    python examples/heat_halo.py          # one process: the whole grid

Process 0 gathers the final grid, checks it against the same steps in plain NumPy on
the whole grid, and prints ``MAX ERROR <value>``.
"""

from __future__ import annotations

import argparse

import numpy as np

import numbax
import numbax.distributed as nd

ROWS, COLUMNS = 32, 24
ALPHA = 0.2  # diffusion number: stable below 0.25


def initial_grid() -> np.ndarray:
    """A hot square off the centre, the rest cold."""
    grid = np.zeros((ROWS, COLUMNS))
    grid[ROWS // 4 : ROWS // 2, COLUMNS // 3 : 2 * COLUMNS // 3] = 100.0
    return grid


def step_numpy(u: np.ndarray) -> np.ndarray:
    """One explicit step on the whole grid, the edges outside it held at 0."""
    padded = np.pad(u, 1)
    laplacian = padded[:-2, 1:-1] + padded[2:, 1:-1] + padded[1:-1, :-2] + padded[1:-1, 2:] - 4 * u
    return u + ALPHA * laplacian


def step_strip(u):
    """One explicit step on this process's strip, its halos from its neighbours."""
    count = nd.process_count()
    above = nd.ppermute(u[-1], [(r, r + 1) for r in range(count - 1)])  # from r - 1
    below = nd.ppermute(u[0], [(r + 1, r) for r in range(count - 1)])  # from r + 1
    rows = np.concatenate([above[None], u, below[None]])
    padded = np.pad(rows, ((0, 0), (1, 1)))
    laplacian = padded[:-2, 1:-1] + padded[2:, 1:-1] + padded[1:-1, :-2] + padded[1:-1, 2:] - 4 * u
    return u + ALPHA * laplacian


@numbax.jit(static_argnums=1)
def simulate(strip, steps: int):
    return numbax.lax.fori_loop(0, steps, lambda _, u: step_strip(u), strip)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    args = parser.parse_args()
    count, rank = nd.process_count(), nd.process_index()
    if ROWS % count:
        raise SystemExit(f"{ROWS} rows do not split into {count} equal strips")
    height = ROWS // count
    strip = initial_grid()[rank * height : (rank + 1) * height]
    final = nd.all_gather(simulate(strip, args.steps), tiled=True)  # the whole grid
    if rank == 0:
        expected = initial_grid()
        for _ in range(args.steps):
            expected = step_numpy(expected)
        print(f"heat left: {final.sum():.6f} of {initial_grid().sum():.1f}")
        print(f"MAX ERROR {np.max(np.abs(final - expected)):.3e}")


if __name__ == "__main__":
    main()
