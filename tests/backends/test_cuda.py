"""The CUDA backend's kernels, run under Numba's CUDA simulator against the interpreter.

    NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/backends -k cuda

Without the simulator (and without ``NUMBAX_TEST_GPU=1`` on a GPU machine) these tests
skip; test_cuda_ptx.py checks the GPU variant of the same code as PTX instead. Sizes are
tiny, but the simulator's launch shapes are tiny too (blocks of 8 threads, rows of 4
lanes, 4x4 matmul tiles, 2 blocks at most): every size here is larger than a block, a
row group or a tile somewhere, so grid-stride loops, partial tiles, multi-pass rows and
multi-block reductions all run.
"""

from __future__ import annotations

import sys
import threading

import numpy as np
import pytest
import switches

import numbax
from numbax.config import cuda_simulator
from numbax.ir.interpret import eval_jaxpr
from numbax.tracer import lax

SIMULATED = cuda_simulator()
pytestmark = pytest.mark.skipif(
    not (SIMULATED or switches.flag("NUMBAX_TEST_GPU")),
    reason="needs NUMBA_ENABLE_CUDASIM=1 (or NUMBAX_TEST_GPU=1 on a GPU machine)",
)

TOLERANCE = {np.dtype("float32"): 2e-5, np.dtype("float64"): 1e-12}


def run(fun, *args, options=None, kernels=None):
    """Compile ``fun`` for CUDA, run it, and compare every output with the interpreter.
    Returns the executable (``.program.steps`` are its kernels)."""
    from numbax.backends.cuda import CudaBackend

    closed = numbax.make_jaxpr(fun)(*args)
    with np.errstate(all="ignore"):  # the GPU, too, returns NaN quietly
        expected = eval_jaxpr(closed.jaxpr, closed.consts, *args)
    executable = CudaBackend(options).compile(closed, fun.__name__)
    outputs = executable(*args)
    assert len(outputs) == len(expected)
    for k, (got, want) in enumerate(zip(outputs, expected, strict=True)):
        got = np.asarray(got)
        assert got.dtype == want.dtype and got.shape == want.shape, (k, got.dtype, got.shape)
        if want.dtype.kind == "f":
            tol = TOLERANCE[want.dtype]
            np.testing.assert_allclose(got, want, rtol=tol, atol=tol, err_msg=f"output {k}")
        else:
            np.testing.assert_array_equal(got, want, err_msg=f"output {k}")
    if kernels is not None:
        assert len(executable.program.steps) == kernels, executable.source
    return executable


def normal(rng, *shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


# --- elementwise ------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(), (1,), (7,), (0,), (2, 0, 3), (5, 7), (37,)], ids=str)
def test_elementwise_chain_any_size(shape, rng):
    def chain(x, y):
        return np.tanh(x * 1.5 + 0.5) * y + x * x

    x, y = normal(rng, *shape), normal(rng, *shape[-1:])
    run(chain, x, y, kernels=1 if np.prod(shape) else None)


def test_elementwise_broadcasts_by_index_arithmetic(rng):
    def broadcasts(a, b, c):
        return a + b * c, (a > b) & (c < 0.5)

    run(broadcasts, normal(rng, 3, 1, 5), normal(rng, 4, 1), normal(rng, 5, dtype=np.float32))


def test_integer_semantics():
    def ints(a, b):
        return a // b, a % b, lax.div(a, b), lax.rem(a, b), a * 1_000_003, -a, abs(a), a**3

    a = np.array([7, -7, 7, -7, 0, 2**30, -(2**31)], np.int32)
    b = np.array([2, 2, -2, -2, 3, 3, 5], np.int32)
    run(ints, a, b)
    run(ints, a.astype(np.int64), b.astype(np.int64))


def test_integer_division_by_zero_is_zero():
    run(
        lambda a, b: (lax.div(a, b), lax.rem(a, b)),
        np.array([5, -5], np.int32),
        np.zeros(2, np.int32),
    )


def test_float_special_values():
    def specials(x, y):
        return (np.exp(x * 100), np.log(x), np.maximum(x, y), np.minimum(x, y), np.sign(x),
                np.round(x), np.floor(x), np.ceil(x), x ** -2, lax.logistic(x), lax.rsqrt(x),
                np.arctan2(x, y), np.power(np.abs(x), y), np.fmod(x, y), np.sqrt(x))  # fmt: skip

    x = np.array([-1.5, -0.5, 0.0, 0.5, 2.5, np.nan, np.inf, -np.inf, 1e30], np.float32)
    y = np.array([np.nan, 1.0, -2.0, 0.25, 3.0, 1.0, 2.0, np.nan, 7.0], np.float32)
    run(specials, x, y)
    run(specials, x.astype(np.float64), y.astype(np.float64))


def test_bool_logic_select_and_conversions(rng):
    def logic(x, i, b):
        mask = (x > 0) | ~b
        return (np.where(mask & b, x, -x), mask.astype(np.float32), x.astype(bool),
                x.astype(np.int32), i.astype(np.float64), b.astype(np.int64),
                np.logical_not(mask))  # fmt: skip

    x = np.array([-2.7, 0.0, 0.5, np.nan, 3.9], np.float32)
    run(logic, x, np.arange(5, dtype=np.int32), np.array([True, False, True, True, False]))


def test_iota_and_literal_outputs(rng):
    def creation(x):
        return x + lax.iota(np.float32, (3, 4), 1), lax.iota(np.int32, (2, 5), 0), x, x, 2.0

    run(creation, normal(rng, 3, 4))


# --- data movement ----------------------------------------------------------------------


def test_data_movement(rng):
    def movement(x, y):
        return (x.T, x[1:, ::2], x[::-1, 1], np.pad(x, ((1, 2), (0, 1)), constant_values=7.0),
                np.concatenate([x, y * 2.0, x[:, :1]], axis=1), np.stack([x, x + 1.0]),
                x.reshape(5, 3)[None], np.broadcast_to(x[:, :1], (3, 5)))  # fmt: skip

    run(movement, normal(rng, 3, 5), normal(rng, 3, 2))


def test_gather_and_dynamic_slices_clamp(rng):
    def indexing(x, i, s):
        return (lax.gather(x, i, axis=0), lax.gather(x, i, axis=1),
                lax.dynamic_slice(x, (s, s), (2, 3)),
                lax.dynamic_update_slice(x, x[:2, :2] * 10.0, (s, s + 1)))  # fmt: skip

    x = normal(rng, 5, 6)
    run(indexing, x, np.array([[0, 4], [-3, 9]], np.int32), np.int32(4))
    run(indexing, x, np.array([[1, 2], [3, 0]], np.int32), np.int32(-2))


def test_reshapes_between_kernels_cost_no_kernel(rng):
    def reshaped(x):
        y = np.exp(x).reshape(2, 6)
        return y.sum(axis=1), (y.reshape(12) * 2.0)[::-1]

    executable = run(reshaped, normal(rng, 3, 4))
    names = [step.eqn.params["name"] for step in executable.program.steps]
    assert "reshape" not in names, names


# --- reductions -------------------------------------------------------------------------


def _all_reductions(x):
    return (x.sum(axis=-1), x.max(axis=-1), x.min(axis=-1), x.prod(axis=-1), x.mean(axis=-1),
            np.argmax(x, axis=-1), np.argmin(x, axis=-1))  # fmt: skip


# 4 lanes per row and 8 threads per block under the simulator: rows shorter and longer
# than both, non-powers of two, one element, and more rows than the grid has slots.
@pytest.mark.parametrize("shape", [(6, 3), (5, 13), (21, 2), (2, 1), (3, 40)], ids=str)
def test_row_reductions(shape, rng):
    run(_all_reductions, normal(rng, *shape))


def test_row_reductions_of_ints_and_bools(rng):
    ints = rng.integers(-5, 5, (4, 9)).astype(np.int32)
    run(lambda x: (x.sum(-1), x.max(-1), np.argmin(x, -1), x.prod(-1)), ints)
    big = np.full((2, 5), 2**30, np.int32)
    run(lambda x: x.sum(-1), big)  # wraps around, as in NumPy
    bools = rng.random((3, 7)) < 0.3
    run(lambda b: (b.max(-1), b.min(-1), b.sum(-1), np.argmax(b, -1), b.max(0)), bools)


def test_column_reductions(rng):
    def columns(x):
        return x.sum(axis=0), x.max(axis=0), np.argmax(x, axis=0)

    run(columns, normal(rng, 13, 5))
    run(lambda x: (x.sum(axis=1), x.min(axis=1), x.mean(axis=(0, 2))), normal(rng, 3, 6, 4))


def test_two_stage_reduction_over_everything(rng):
    def totals(x):
        return x.sum(), x.max(), np.argmin(x.reshape(-1)), x.mean(keepdims=True)

    x = normal(rng, 4, 25)  # 100 elements: three blocks of the first stage
    executable = run(totals, x)
    again = [np.asarray(out) for out in executable(x)]  # the block counter was reset
    np.testing.assert_allclose(again[0], x.sum(dtype=np.float64), rtol=1e-5)


def test_nans_and_ties_in_reductions():
    x = np.array([[1.0, np.nan, 3.0, np.nan], [2.0, 5.0, 5.0, 1.0], [-np.inf] * 4], np.float32)
    run(lambda x: (x.max(-1), x.min(-1), np.argmax(x, -1), np.argmin(x, -1)), x)


def test_empty_reductions(rng):
    run(lambda x: (x.sum(axis=1), x.prod(axis=1), x.sum(axis=0)), normal(rng, 3, 0))
    run(lambda x: x.max(axis=1), normal(rng, 0, 4))


def test_softmax_and_layer_norm_are_one_kernel(rng):
    def softmax(x):
        e = np.exp(x - x.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)

    def layer_norm(x, gamma, beta):
        mean = x.mean(axis=-1, keepdims=True)
        centered = x - mean
        variance = (centered * centered).mean(axis=-1, keepdims=True)
        return centered / np.sqrt(variance + 1e-5) * gamma + beta

    run(softmax, normal(rng, 5, 11), kernels=1)
    run(layer_norm, normal(rng, 6, 9), normal(rng, 9), normal(rng, 9), kernels=1)
    run(softmax, normal(rng, 30), kernels=1)  # one row: the dependent passes in one block
    run(lambda x: softmax(x.T).T, normal(rng, 7, 3))  # over the first axis: columns


# --- contractions -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "lhs, rhs, dtype",
    [((5, 3), (3, 7), "float32"), ((1, 4), (4, 1), "float64"), ((2, 3, 5), (2, 5, 6), "float32"),
     ((9,), (9,), "float64"), ((3, 0), (0, 2), "float32"), ((0, 3), (3, 2), "float32"),
     ((4, 5), (5, 3), "int32"), ((3, 4), (4, 2), "bool"), ((6, 5), (5,), "float32")],
    ids=str,
)  # fmt: skip
def test_matmul(lhs, rhs, dtype, rng):
    def matmul(a, b):
        return a @ b

    a, b = (rng.standard_normal(s) * 3 for s in (lhs, rhs))
    run(matmul, a.astype(dtype), b.astype(dtype))


def test_matmul_epilogue_is_fused(rng):
    def dense(x, w, b):
        return np.maximum(x @ w + b, 0.0)

    run(dense, normal(rng, 6, 5), normal(rng, 5, 9), normal(rng, 9), kernels=1)


def test_dot_general_any_dimension_numbers(rng):
    def contractions(a, c):
        return (np.einsum("ki,kj->ij", a, a), np.einsum("bij,bkj->bik", c, c),
                np.tensordot(c, c, axes=([0, 2], [0, 2])))  # fmt: skip

    run(contractions, normal(rng, 5, 3), normal(rng, 2, 3, 4))


# --- opaque: cumsum and scatter ---------------------------------------------------------


def test_cumsum(rng):
    def cumulative(x, i):
        return (np.cumsum(x, axis=1), np.cumsum(x, axis=0), lax.cumsum(x, 1, reverse=True),
                np.cumsum(i, axis=1))  # fmt: skip

    run(cumulative, normal(rng, 3, 9), rng.integers(-9, 9, (3, 9)).astype(np.int32))
    run(lambda x: np.cumsum(x), normal(rng, 0))


def test_scatter_modes(rng):
    def updates(x, i, v, n):
        return (x.at[i].add(v), x.at[i].set(v), x.at[i].multiply(v), x.at[i].min(v),
                x.at[i].max(v), n.at[i].max(n[:4] * 2), n.at[i].add(n[:4]))  # fmt: skip

    x = normal(rng, 6, 3, dtype=np.float64)
    v = normal(rng, 4, 3, dtype=np.float64)
    v[1, 1] = np.nan
    n = rng.integers(-9, 9, (6, 3)).astype(np.int32)
    # duplicate indices: adds accumulate, the last set wins
    run(updates, x, np.array([1, 4, 1, 5]), v, n)


def test_scatter_clamps_indices(rng):
    def clamped(x, i, v):
        return lax.scatter(x, i, v, axis=1, mode="add"), lax.scatter(x, i, v, axis=1, mode="set")

    i = np.array([-3, 0, 7], np.int32)
    run(clamped, normal(rng, 2, 4), i, normal(rng, 2, 3))


# --- the program as a whole -------------------------------------------------------------


def test_control_flow_runs_its_bodies_on_the_host(rng):
    """cond, while and scan nested in each other, with consts, literal operands, reverse
    and pytree carries, against the interpreter."""

    def program(x, xs):
        def step(carry, row):
            h, n = carry
            h = numbax.cond(row.sum() > 0, lambda v: np.tanh(v + row), lambda v: v * 0.5, h)
            return (h, n + 1), (h * x).sum()

        (h, n), sums = numbax.scan(step, (x, 0), xs, reverse=True)
        h = numbax.while_loop(lambda v: np.abs(v).sum() < 50.0, lambda v: v * 2.0 + 0.25, h)
        return h, n, sums

    executable = run(program, normal(rng, 5), normal(rng, 7, 5))
    program = executable.program
    on_the_host = [step for step in program.steps if type(step).__name__ == "ControlStep"]
    assert len(on_the_host) == 2  # the scan and the while loop; the kernels are in bodies
    assert len(program.kernels) > len(program.steps) - len(on_the_host)


def test_a_long_loop_compiles_its_body_once(rng):
    def loop(steps):
        def fn(x):
            return numbax.fori_loop(0, steps, lambda i, c: np.sin(c) * 0.5 + x, x)

        return fn

    x = normal(rng, 3)
    short = run(loop(3), x)
    long = run(loop(300), x)
    assert len(long.program.kernels) == len(short.program.kernels) <= 2
    assert long.source.replace("300", "3") == short.source


def test_a_value_a_branch_passes_through_keeps_its_buffer(rng):
    """The cond returns its operand itself; the planner must not hand the operand's
    buffer to a later kernel while the cond's result still lives in it."""

    def passes_through(x):
        a = np.exp(x) * 2.0
        b = numbax.cond(a.sum() > 0, lambda v: v, lambda v: v * 3.0, a)
        d = np.cumsum(np.sin(x * 3.0))  # a kernel of its own, writing a's size and dtype
        return b + d

    run(passes_through, normal(rng, 9))


def test_a_scan_output_may_be_the_incoming_carry(rng):
    # The backward pass of a scan emits exactly this: ys[t] = carry entering step t.
    def carries(x):
        return numbax.scan(lambda c, r: (c * 2.0 + r, c), x[0], x)

    run(carries, normal(rng, 6))


def test_loops_recycle_only_dead_carries(rng):
    """A body that swaps carries, passes one through, and returns its incoming carry as
    a y: every array a later iteration overwrites must be dead by then."""

    def shuffled(a, b, x):
        def step(carry, row):
            a, b, same = carry  # the sum keeps this loop on the host (see loop.py)
            return (b, a * 0.5 + row.sum(), same), (a, b * same)

        carry, ys = numbax.scan(step, (a, b, x), np.stack([x, -x, x * 2.0, x + 1.0, x]))
        swapped = numbax.while_loop(
            lambda c: c[2].sum() < 40.0,
            lambda c: (c[1], c[0] + 1.0, c[2] + c[0] * 0.0 + 1.0),
            carry,
        )
        return carry, ys, swapped

    run(shuffled, normal(rng, 6), normal(rng, 6), normal(rng, 6))


def _on_the_host(executable) -> int:
    return sum(type(step).__name__ == "ControlStep" for step in executable.program.steps)


@pytest.mark.parametrize("reverse", [False, True], ids=["forward", "reverse"])
def test_an_elementwise_loop_is_one_kernel(rng, reverse):
    """Bodies of elementwise ops over one shape (and scalars, like the loop counter) run
    as one kernel: each thread loops over its elements' carries."""

    def loops(x, xs, n):
        def step(carry, row):
            h, k = carry
            h = np.tanh(h * row + x) + k * 0.25
            return (h, k + 1.0), (h - row, k)

        (h, k), (ys, ks) = numbax.scan(step, (x, np.float32(0)), xs, reverse=reverse)
        # A traced trip count: a while loop, with its counter a scalar carry.
        counted = numbax.fori_loop(0, n, lambda i, c: np.sin(c) + i.astype(c.dtype), h)
        return h, k, ys, ks, counted

    executable = run(loops, normal(rng, 9), normal(rng, 5, 9), np.int32(3))
    assert _on_the_host(executable) == 0
    assert [step.kernel.name.endswith("loop") for step in executable.program.kernels] == [
        True,
        True,
    ]


def test_a_scalar_while_loop_never_waits_for_the_host():
    def newton(a):
        def going(state):
            x, steps = state
            return (np.abs(x * x - a) > 1e-12 * a) & (steps < 50)

        return numbax.while_loop(going, lambda s: (0.5 * (s[0] + a / s[0]), s[1] + 1), (a, 0))

    executable = run(newton, np.float64(10.0))
    assert _on_the_host(executable) == 0


def test_an_empty_scan_returns_its_initial_carry(rng):
    def empty(c, xs):
        return numbax.scan(lambda c, x: (c + x, c * x), c, xs)

    run(empty, normal(rng, 4), np.zeros((0, 4), np.float32))


def test_a_kernel_beyond_the_generators_runs_split(rng):
    """A reduction kernel whose epilogue reads other rows' results (fusion never makes
    one) runs as one kernel per op instead of failing."""
    from numbax.backends.cuda import CudaExecutable, CudaOptions, build_program
    from numbax.ir.core import ClosedJaxpr, Eqn, Jaxpr, ShapedArray, Var
    from numbax.ir.higher_order import kernel_p
    from numbax.ir.primitive import PRIMITIVES

    square = ShapedArray((3, 3), np.dtype("float32"))
    x, sums, across, out = Var(square), Var(square.update(shape=(3,))), Var(square), Var(square)
    body = Jaxpr([], [x], [
        Eqn(PRIMITIVES["reduce_sum"], [x], [sums], {"axes": (1,)}),
        Eqn(PRIMITIVES["broadcast_in_dim"], [sums], [across],
            {"shape": (3, 3), "broadcast_dimensions": (1,)}),
        Eqn(PRIMITIVES["mul"], [x, across], [out], {}),
    ], [out])  # fmt: skip
    outer_x, outer_out = Var(square), Var(square)
    params = {"jaxpr": body, "kind": "reduction", "name": "across_rows"}
    program = Jaxpr([], [outer_x], [Eqn(kernel_p, [outer_x], [outer_out], params)], [outer_out])
    data = normal(rng, 3, 3)
    # Straight to the generators: the passes would not let such a kernel through.
    closed = ClosedJaxpr(program, [])
    executable = CudaExecutable(build_program(closed, "across_rows", CudaOptions.default()))
    assert len(executable.program.steps) == 3
    np.testing.assert_allclose(np.asarray(executable(data)[0]), data * data.sum(1), rtol=1e-6)


def test_results_stay_on_the_device(rng, monkeypatch):
    from numba import cuda

    f = numbax.jit(lambda x: x * 2.0 + 1.0, backend="cuda")
    g = numbax.jit(lambda y, x: (y * x).sum(axis=0), backend="cuda")
    x = normal(rng, 3, 4)
    g(f(x), x)  # compile both
    x_device = cuda.to_device(x)
    copies = []
    to_device, copy_to_host = cuda.to_device, type(x_device).copy_to_host
    monkeypatch.setattr(
        cuda, "to_device", lambda *a, **k: copies.append("in") or to_device(*a, **k)
    )
    monkeypatch.setattr(
        type(x_device),
        "copy_to_host",
        lambda s, *a, **k: copies.append("out") or copy_to_host(s, *a, **k),
    )
    y = f(x_device)
    z = g(y, x_device)
    assert copies == [], "a jitted result went through the host"
    assert getattr(y, "__cuda_ndarray__", False) or hasattr(y, "__cuda_array_interface__")
    assert y.shape == (3, 4) and z.shape == (4,)
    monkeypatch.undo()
    np.testing.assert_allclose(np.asarray(z), ((x * 2 + 1) * x).sum(0), rtol=1e-5)


def test_device_argument_of_a_narrow_dtype_keeps_it(rng):
    """A float16 device array is a float16 argument (it used to be refused, numbax then
    having no float16): the result stays float16 on the device."""
    from numba import cuda

    f = numbax.jit(lambda x: x * 3 + 1, backend="cuda")
    x = np.arange(3, dtype=np.float16)
    y = np.asarray(f(cuda.to_device(x)).copy_to_host())
    assert y.dtype == np.float16
    np.testing.assert_array_equal(y, x * 3 + 1)


def test_generated_source_is_named_and_commented(rng):
    def softmax(x):
        e = np.exp(x - x.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)

    executable = run(softmax, normal(rng, 2, 3))
    assert "def softmax_0_fused_reduce_max" in executable.source
    assert "= exp " in executable.source and "test_cuda.py:" in executable.source
    units = executable.program.units  # each kernel compiles from a module of its own
    assert len(units) == len(executable.kernels) >= 1
    for unit in units:
        assert sys.modules[unit.module_name].__name__ == unit.module_name


def test_warp_shuffle_variant(rng, monkeypatch):
    """The GPU variant (warp shuffles), run with shuffles simulated block-wide: the
    generated code calls them where every thread of the block does."""
    if not SIMULATED:
        pytest.skip("runs the shuffle variant under the simulator")
    from numba.cuda.simulator import kernelapi

    from numbax.backends.cuda import CudaOptions

    def exchange(value, source_lane):
        thread = threading.current_thread()
        store = thread._manager.__dict__.setdefault("numbax_shuffle", {})
        tid = thread.threadIdx.x
        store[tid] = value
        thread.syncthreads()
        lane = tid % 32
        source = source_lane(lane)
        result = store[tid - lane + source] if 0 <= source < 32 else value
        thread.syncthreads()
        return result

    def down(self, mask, value, delta):
        return exchange(value, lambda lane: lane + delta if lane + delta < 32 else -1)

    monkeypatch.setattr(kernelapi.FakeCUDAModule, "shfl_down_sync", down, raising=False)
    monkeypatch.setattr(
        kernelapi.FakeCUDAModule, "shfl_sync",
        lambda self, mask, value, src: exchange(value, lambda lane: src % 32), raising=False,
    )  # fmt: skip
    options = CudaOptions.for_simulator(
        warp_shuffle=True, warp_size=32, max_row_lanes=64, row_block=32, max_partials=2
    )

    def rows(x):
        return x.sum(axis=-1), np.argmax(x, axis=-1), x.max()

    for shape in [(3, 5), (2, 150)]:  # 4-lane segments of a warp; two warps per row
        executable = run(rows, normal(rng, *shape), options=options)
        assert "shfl_down_sync" in executable.source


def test_cublas_path_with_a_stand_in_for_cupy(rng, monkeypatch):
    """The cuBLAS option's glue, with NumPy standing in for CuPy on simulated arrays."""
    if not SIMULATED:
        pytest.skip("uses simulated device arrays")
    import types

    from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray

    from numbax.backends.cuda import CudaOptions, cublas

    monkeypatch.setitem(sys.modules, "cupy", types.SimpleNamespace(matmul=np.matmul))
    monkeypatch.setattr(cublas, "available", lambda: True)
    monkeypatch.setattr(cublas, "to_cupy", lambda array: array._ary)
    monkeypatch.setattr(cublas, "from_cupy", FakeCUDAArray)
    options = CudaOptions.for_simulator(cublas=True, cublas_min_flops=0)

    def dense(x, w, b):
        return np.maximum(x @ w + b, 0.0), x @ w.T, np.einsum("ki,kj->ij", x, x)

    x, w = normal(rng, 6, 5), normal(rng, 5, 5)
    executable = run(dense, x, w, normal(rng, 5), options=options)
    assert all(step.kernel.cublas is not None for step in executable.program.steps)
