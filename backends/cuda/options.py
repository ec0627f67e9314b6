"""How the CUDA code generator sizes its kernels: launch shapes, tiles, warp shuffles.

Two presets: ``for_gpu()`` (what an H100-class GPU wants) and ``for_simulator()``.
Numba's CUDA simulator runs every thread of a block as a Python thread, so its preset
uses blocks of a few threads and grids of a few blocks; the kernels are the same code
with smaller constants, which is also what makes the tests exercise rows longer than a
block, partial tiles and grid-stride loops at tiny sizes.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ...config import cuda_simulator


def simulating() -> bool:
    """Whether Numba's CUDA simulator is on (``NUMBA_ENABLE_CUDASIM=1`` at start-up):
    ``config.cuda_simulator``, the one switch."""
    return cuda_simulator()


@dataclass(frozen=True)
class CudaOptions:
    # Warp shuffles (shfl_*_sync) for reductions inside a warp. The simulator has none,
    # so the generator then reduces through shared memory only.
    warp_shuffle: bool = True
    warp_size: int = 32
    # Elementwise and opaque kernels: grid-stride loops over the output.
    block_size: int = 256
    items_per_thread: int = 4  # elements per thread before the grid stops growing
    max_blocks: int = 65535
    # Reductions over trailing axes: one group of `lanes` threads per row, lanes a power
    # of two between 1 and `max_row_lanes`, and at least `row_block` threads per block.
    max_row_lanes: int = 1024
    row_block: int = 256
    # Reductions over other axes: `column_slots` adjacent outputs per block (coalesced),
    # each reduced by up to `column_lanes` threads.
    column_slots: int = 32
    column_lanes: int = 8
    # Reductions over every axis: the most first-stage blocks (and partial results).
    max_partials: int = 1024
    # Matmul tiles: the block computes a tile_m x tile_n tile of the output, stepping
    # through the contraction tile_k at a time; each thread owns thread_m x thread_n.
    tile_m: int = 64
    tile_n: int = 64
    tile_k: int = 16
    thread_m: int = 4
    thread_n: int = 4
    # cumsum: one block scans a row, `scan_block` elements at a time.
    scan_block: int = 256
    # cuBLAS through CuPy for matmuls of at least `cublas_min_flops` (f32/f64 only).
    # Off by default (NUMBAX_CUDA_CUBLAS=1 turns it on): it needs CuPy, and the fused
    # epilogue then costs one more kernel.
    cublas: bool = False
    cublas_min_flops: int = 2 * 512**3

    @classmethod
    def for_gpu(cls, **changes) -> CudaOptions:
        return dataclasses.replace(cls(), **changes)

    @classmethod
    def for_simulator(cls, **changes) -> CudaOptions:
        small = cls(
            warp_shuffle=False,
            warp_size=4,
            block_size=8,
            items_per_thread=2,
            max_blocks=2,
            max_row_lanes=4,
            row_block=8,
            column_slots=4,
            column_lanes=2,
            max_partials=3,
            tile_m=4,
            tile_n=4,
            tile_k=2,
            thread_m=2,
            thread_n=2,
            scan_block=4,
        )
        return dataclasses.replace(small, **changes)

    @classmethod
    def default(cls) -> CudaOptions:
        """The preset for where the code runs; cuBLAS as ``config.cuda_cublas`` says."""
        from ...config import config

        preset = cls.for_simulator if simulating() else cls.for_gpu
        return preset(cublas=config.cuda_cublas)

    def __post_init__(self):
        for name in ("warp_size", "max_row_lanes", "column_lanes", "scan_block"):
            value = getattr(self, name)
            if value < 1 or value & (value - 1):
                raise ValueError(f"CudaOptions.{name} must be a power of two, got {value}")
        if self.warp_shuffle and self.warp_size != 32:
            raise ValueError("warp shuffles need warp_size=32")
        if self.tile_m % self.thread_m or self.tile_n % self.thread_n:
            raise ValueError("the matmul tile must be a multiple of the per-thread tile")
