"""How the CUDA backend builds a block with window stores (``backends/cuda/program.py``):
laid out first, each kernel generated once, with the stores the memory plan proves; an
update whose value reaches it through a reshape the device drops is not stored.

The programs are only generated here (``build_program``: no compile, no GPU); their
values under the simulator or on a GPU (``NUMBA_ENABLE_CUDASIM=1``, ``NUMBAX_TEST_GPU=1``).
"""

from __future__ import annotations

import numpy as np
import pytest

import numbax
import numbax.numpy as xnp
from numbax.backends.cuda import CudaBackend, CudaOptions, build_program
from numbax.backends.cuda import program as cuda_program
from numbax.backends.cuda.program import Step, StoredUpdate
from numbax.benchmarks import kernels

rng = np.random.default_rng(11)


def test_each_kernel_is_generated_once_with_its_stores(monkeypatch):
    loops = kernels.library_loops(numbax.fori_loop, numbax.scan)
    grids = (rng.random((6, 7)), rng.random((6, 7)))

    def jacobi(a, b):
        return kernels.jacobi_2d(xnp, loops, a, b, steps=2)

    generated = []
    generate = cuda_program.generate

    def counted(eqn, kernel_name, *rest):
        generated.append(kernel_name)
        return generate(eqn, kernel_name, *rest)

    monkeypatch.setattr(cuda_program, "generate", counted)
    program = CudaBackend().lower(numbax.make_jaxpr(jacobi)(*grids), "jacobi")
    (loop,) = [s for s in program.steps if getattr(s, "bodies", None)]
    body = loop.bodies[-1]
    # Both sweeps store into the other grid: their updates launch nothing.
    assert sum(isinstance(s, StoredUpdate) for s in body.steps) == 2
    assert sum(isinstance(s, Step) and bool(s.stored) for s in body.steps) == 2
    # Every kernel that ``generate`` writes is written once, none thrown away, and the
    # names stay unique (a stored update keeps its serial).
    names = [step.kernel.name for step in program.kernels]
    assert sorted(generated) == sorted(names)
    assert len(set(names)) == len(names)
    assert [step.number for step in program.kernels] == list(range(len(names)))


def _reshaped_update(a, b):
    """The update's value is a reshape of the kernel's output: the device drops the
    reshape, so the update reads a (3,) value as its (1, 3) window."""
    x = a * 1.0
    y = x.at[1:2].set((b * 2.0).reshape(1, 3))
    return y + 1.0


def _reshaped_update_numpy(a, b):
    y = a * 1.0
    y[1:2] = (b * 2.0).reshape(1, 3)
    return y + 1.0


def test_an_update_read_through_a_dropped_reshape_is_not_stored():
    a, b = rng.random((4, 3)), rng.random(3)
    # Unoptimised: each eqn a kernel of one op, the reshape one of its own.
    closed = numbax.make_jaxpr(_reshaped_update)(a, b)
    program = build_program(closed, "reshaped_update", CudaOptions.default())
    liveness = program.block.liveness
    names = [eqn.params["name"] for eqn in liveness.eqns]
    update = names.index("dynamic_update_slice")
    refusal = liveness.window_store_refusal(update)
    assert refusal == "the update reads its operand or its value through a reshape"
    assert not any(isinstance(s, StoredUpdate) for s in program.steps)


def test_a_reshaped_update_matches_numpy(compiled_backend):
    if compiled_backend != "cuda":
        pytest.skip("needs the CUDA backend (NUMBA_ENABLE_CUDASIM=1)")
    from numbax.backends.cuda import CudaExecutable

    a, b = rng.random((4, 3)), rng.random(3)
    closed = numbax.make_jaxpr(_reshaped_update)(a, b)
    program = build_program(closed, "reshaped_update", CudaOptions.default())
    (got,) = CudaExecutable(program)(a, b)
    np.testing.assert_allclose(np.asarray(got), _reshaped_update_numpy(a, b), rtol=1e-15)
