"""CUDA loop bodies as the memory plan writes them: an elementwise kernel stores its value
straight into the window of the in-place update that takes it (``passes.window_stores``),
and the update launches nothing, so a stencil sweep in a ``fori_loop`` is one launch per
iteration with no temporary and no copy.

Under the simulator (``NUMBA_ENABLE_CUDASIM=1``) or on a GPU (``NUMBAX_TEST_GPU=1``):
values against NumPy and the interpreter, the launches each call makes (counted at the
launcher's kernels), and the generated source of the stores.
"""

from __future__ import annotations

import re
from collections import Counter

import numpy as np
import pytest

import numbax
import numbax.numpy as xnp
from numbax.backends.cuda.program import Step, StoredUpdate
from numbax.benchmarks import kernels

LOOPS = kernels.library_loops(numbax.fori_loop, numbax.scan)
STEPS = 3
rng = np.random.default_rng(7)


@pytest.fixture
def cuda(compiled_backend):
    if compiled_backend != "cuda":
        pytest.skip("needs the CUDA backend (NUMBA_ENABLE_CUDASIM=1)")


def compile_cuda(fn, *args):
    from numbax.backends.cuda import CudaBackend

    return CudaBackend().compile(numbax.make_jaxpr(fn)(*args), fn.__name__)


def run_counting(executable, *args) -> tuple[list, Counter]:
    """The results of a call, and how often it launched each kernel (by name)."""
    executable(*args)  # the first call allocates the launchers
    launched: Counter = Counter()

    def counted(launch, name):
        def run(*arrays):
            launched[name] += 1
            return launch(*arrays)

        return run

    executable._launchers = [
        counted(launch, step.kernel.name)
        for launch, step in zip(executable._launchers, executable.program.kernels, strict=True)
    ]
    results = executable(*args)
    return [np.asarray(r) for r in results], launched


def loop_body(executable):
    """The body block of the program's one host-run loop."""
    (loop,) = [s for s in executable.program.steps if getattr(s, "bodies", None)]
    return loop.bodies[-1]


def assert_close(got, want):
    want = [want] if isinstance(want, np.ndarray) else list(want)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)


# name: (kernel, its arguments, kernels the loop body launches per iteration)
def _stencils():
    grid, cube = (9, 10), (5, 6, 5)
    jacobi = (rng.random(grid), rng.random(grid))
    fields = (rng.random((6, 7)), rng.random((6, 7)), rng.random((6, 7)), rng.random(STEPS))
    return {
        # One kernel per sweep: the sweep's update stores into the other grid.
        "jacobi_2d": (kernels.jacobi_2d, jacobi, {"steps": STEPS}, 2),
        "jacobi_2d_inplace": (kernels.jacobi_2d_inplace, jacobi, {"steps": STEPS}, 2),
        "heat_3d": (kernels.heat_3d, (rng.random(cube), rng.random(cube)), {"steps": STEPS}, 2),
        # The counter, fict[t] into ey's first row (wrapping and clamping t itself: that
        # scalar kernel is folded in), and three updates: ey[1:], ex[:, 1:] and
        # hz[:-1, :-1] read their own window only, so all store.
        "fdtd_2d": (kernels.fdtd_2d, fields, {}, 5),
    }


STENCILS = _stencils()


@pytest.mark.parametrize("name", list(STENCILS))
def test_stencil_loop_bodies_launch_one_kernel_per_update(cuda, name):
    kernel, args, params, per_iteration = STENCILS[name]

    def program(*arrays):
        return kernel(xnp, LOOPS, *arrays, **params)

    program.__name__ = name
    executable = compile_cuda(program, *args)
    results, launched = run_counting(executable, *args)
    assert_close(results, kernel(np, kernels.EAGER_NUMPY, *args, **params))
    body = loop_body(executable)
    body_kernels = [s.kernel.name for s in body.steps if isinstance(s, Step)]
    assert len(body_kernels) == per_iteration, body_kernels
    assert all(launched[k] == STEPS for k in body_kernels), launched
    # The only kernel of scalars left is fori_loop's counter, a carry, where the body
    # reads it (``scalar_kernels``): fdtd's fict[t].
    scalars = [s for s in body.steps if isinstance(s, Step) and s.eqn.outputs[0].aval.shape == ()]
    assert len(scalars) == (name == "fdtd_2d"), [s.kernel.name for s in scalars]
    assert all(s.eqn.outputs[0] in body.jaxpr.outvars for s in scalars)
    # Every update of a grid is stored by its kernel: none launches, none copies.
    updates = [s for s in body.steps if isinstance(s, StoredUpdate)]
    assert len(updates) == {"fdtd_2d": 4}.get(name, 2)
    assert not any(s.kernel.copies for s in body.steps if isinstance(s, Step))
    for step in body.steps:
        if isinstance(step, Step) and step.stored:
            assert re.search(r"^\s+dst_\d+\[.+\] = \w+  # into the update's window$",
                             step.kernel.source, flags=re.M), step.kernel.source  # fmt: skip
            assert not any(p.role == "out" and step.eqn.outputs[p.position] in step.stored
                           for p in step.kernel.params)  # fmt: skip


def _mixed(x, v, i):
    """In one loop body: a store at a traced start (dropped past the end on the last
    iterations), a pointwise read-and-write of the destination's window, and a
    Gauss-Seidel-like read of the destination at shifted points, which must not store."""

    def body(k, carry):
        x, y = carry
        x = x.at[i + k].set(x[i + k] * 2.0 + v)
        x = x.at[1:-1].set(x[1:-1] * 0.5 - 1.0)
        y = y.at[1:-1].set(y[:-2] + y[2:])
        return x, y

    return numbax.fori_loop(0, 4, body, (x * 1.0, x[:, 0] * 1.0))


def _mixed_numpy(x, v, i):
    x, y = x.copy(), x[:, 0].copy()
    for k in range(4):
        if i + k < x.shape[0]:  # JAX's ``.at[]`` drops an update past the end
            x[i + k] = x[i + k] * 2.0 + v
        x[1:-1] = x[1:-1] * 0.5 - 1.0
        y[1:-1] = y[:-2] + y[2:]
    return x, y


def test_traced_starts_pointwise_reads_and_refusals(cuda):
    x, v = rng.standard_normal((5, 3)), rng.standard_normal(3)
    executable = compile_cuda(_mixed, x, v, 2)
    want = _mixed_numpy(x, v, 2)
    results, launched = run_counting(executable, x, v, 2)
    launched = Counter(launched)  # this call's, not the next one's
    assert_close(results, want)
    assert_close(results, numbax.jit(_mixed, backend="interpret")(x, v, 2))
    assert_close([np.asarray(r) for r in executable(x, v, 0)], _mixed_numpy(x, v, 0))
    body = loop_body(executable)
    stored = [s for s in body.steps if isinstance(s, Step) and s.stored]
    assert len(stored) == 2, [s.kernel.name for s in stored]
    traced = [s for s in stored if any(p.name.startswith("start_") for p in s.kernel.params)]
    (traced,) = traced
    # The traced start is clamped once, before the loop over the window.
    assert re.search(r"^    s_0 = min\(max\(start_0_0\[0\], 0\), 4\)$", traced.kernel.source,
                     flags=re.M), traced.kernel.source  # fmt: skip
    # The shifted read of y keeps its temporary and the update that copies it in.
    (kept,) = [s for s in body.steps if isinstance(s, Step) and s.kernel.name.endswith("_slice")]
    assert kept.kernel.launch and launched[kept.kernel.name] == 4
    assert sum(isinstance(s, StoredUpdate) for s in body.steps) == 2


def test_an_update_making_a_result_keeps_its_launch(cuda):
    # At the top level the update's output is the program's result, a new array on
    # every call, while its operand sits in a planned buffer: it copies, so its value's
    # kernel may not store into that buffer.
    def program(a):
        x = a * 2.0
        return x.at[1:-1].set(x[1:-1] + 1.0)

    a = rng.standard_normal(7)
    executable = compile_cuda(program, a)
    results, launched = run_counting(executable, a)
    want = a * 2.0
    want[1:-1] += 1.0
    assert_close(results, [want])
    assert not any(isinstance(s, StoredUpdate) for s in executable.program.steps)
    assert sum(launched.values()) == len(executable.program.kernels) == 3
