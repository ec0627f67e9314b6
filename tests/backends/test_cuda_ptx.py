"""The CUDA backend's GPU code, checked without a GPU: generated with the GPU presets
(warp shuffles on, full-size blocks and tiles) and compiled to PTX for sm_90 with
``numba.cuda.compile_ptx``. Also the generator's tables against the primitive registry.

Runs in a plain ``python -m pytest`` (the PTX compiler needs the real numba.cuda, so
these tests skip under NUMBA_ENABLE_CUDASIM=1, where test_cuda.py runs instead). The tests
that compile PTX need the ``cuda`` extra (numba-cuda and NVRTC): without it they skip,
saying why, unless ``NUMBAX_TEST_PTX=1`` (set by ``.ci/run``) makes a missing toolchain a
failure. Where ``ptxas`` is present (the ``cuda`` extra's ``nvidia-cuda-nvcc``), every
kernel's PTX is also assembled to sm_90 machine code, which must not spill.
"""

from __future__ import annotations

import multiprocessing
import os
import re

import numpy as np
import pytest
import switches

import numbax
from numbax.config import cuda_simulator
from numbax.ir import dtypes

SIMULATED = cuda_simulator()
pytestmark = pytest.mark.skipif(SIMULATED, reason="PTX needs the real numba.cuda")


@pytest.fixture
def ptx_toolchain():
    """Skip (or, with NUMBAX_TEST_PTX=1, fail) where PTX cannot be compiled."""
    from numbax.backends.cuda.ptx import ptx_toolchain_problem

    problem = ptx_toolchain_problem()
    if problem is None:
        return
    if switches.flag("NUMBAX_TEST_PTX"):
        pytest.fail(f"NUMBAX_TEST_PTX=1 but {problem}")
    pytest.skip(problem)


VIEWS = ("reshape", "squeeze", "expand_dims")
STATIC_SHARED_LIMIT = 48 * 1024  # bytes a block may declare without opting in to more
_SHARED = re.compile(r"\.shared\s+\.align\s+\d+\s+\.b8\s+\S+\[(\d+)\]")


def shared_bytes(ptx: str) -> int:
    return sum(int(size) for size in _SHARED.findall(ptx))


def expected_kernels(closed) -> int:
    """The kernels of the fused program that the CUDA program launches: every kernel
    (control-flow bodies' included) but those that only reshape an operand (a view of
    the same buffer on the device), those that only widen a narrow-float matmul
    operand (the matmul widens as it loads: ``narrow_matmul``), kernels of scalars that
    the map kernels reading them compute themselves (``scalar_kernels``), and updates
    whose value's kernel stores into their window (``program.StoredUpdate``)."""
    from numbax.backends.cuda import CudaBackend, CudaOptions
    from numbax.passes import optimize

    fused, _ = optimize(closed)
    program = CudaBackend(CudaOptions.for_gpu()).lower(closed)
    return _count_kernels(fused.jaxpr) - _stored_updates(program.block)


def _stored_updates(block) -> int:
    from numbax.backends.cuda.program import StoredUpdate

    count = 0
    for step in block.steps:
        count += isinstance(step, StoredUpdate)
        count += sum(_stored_updates(body) for body in getattr(step, "bodies", ()))
    return count


def _count_kernels(jaxpr) -> int:
    from numbax.backends.cuda.callbacks import host_call
    from numbax.backends.cuda.loop import element_shape
    from numbax.backends.cuda.program import HOST_OPS, control_bodies, launched_kernels
    from numbax.passes.inline import inline_calls

    jaxpr = launched_kernels(jaxpr)

    # The host runs its ops (callbacks, sorts, factorizations) without a kernel, and reads
    # each operand in its own shape: a view it reads is a kernel of its own.
    host_steps = [eqn for eqn in jaxpr.eqns if host_call(eqn, HOST_OPS) is not None]
    host_read = {atom for eqn in host_steps for atom in eqn.inputs}
    count = 0
    for eqn in jaxpr.eqns:
        if any(eqn is step for step in host_steps):
            continue
        if eqn.prim.name != "kernel":  # control flow: one kernel, or its bodies' kernels
            bodies = control_bodies(eqn)
            spliced = [inline_calls(body) for body in bodies]
            if element_shape(eqn, spliced) is not None:
                count += 1
            else:
                count += sum(_count_kernels(body) for body in bodies)
            continue
        body = eqn.params["jaxpr"]
        only_view = (
            len(body.eqns) == 1
            and body.eqns[0].prim.name in VIEWS
            and body.eqns[0].inputs[0] in body.invars
        )
        count += not only_view or eqn.outputs[0] in host_read
    return count


def _assembler() -> bool:
    """Whether ``ptxas`` is here to assemble each kernel (with NUMBAX_TEST_PTX=1 it must
    be: the cuda extra brings it)."""
    from numbax.backends.cuda.ptx import ptxas

    if ptxas() is None and switches.flag("NUMBAX_TEST_PTX"):
        pytest.fail("NUMBAX_TEST_PTX=1 but ptxas is missing: pip install -e '.[cuda]'")
    return ptxas() is not None


def compile_and_count(fun, args, name):
    from numbax.backends.cuda.ptx import assembled, program_ptx

    closed = numbax.make_jaxpr(fun)(*args)
    kernels = program_ptx(closed, name)
    assemble = _assembler()
    for kernel_name, ptx in kernels:
        assert ptx.count(".entry") == 1, kernel_name
        assert ".target sm_90" in ptx
        assert shared_bytes(ptx) <= STATIC_SHARED_LIMIT, kernel_name
        if assemble:  # sm_90 machine code that keeps every value in registers
            report = assembled(ptx)
            assert report.spill_stores == report.spill_loads == 0, (kernel_name, report)
            assert report.shared <= STATIC_SHARED_LIMIT, (kernel_name, report)
    assert len(kernels) == expected_kernels(closed), [k for k, _ in kernels]
    return dict(kernels)


def _softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _control_flow(x, xs):
    # Kernels in a scan body, a while condition and body, and both branches of a cond.
    h, ys = numbax.scan(lambda h, row: (np.tanh(h + row), (h * row).sum()), x, xs)
    h = numbax.while_loop(lambda v: v.sum() < 100.0, lambda v: v * 2.0 + 1.0, h)
    return numbax.cond(ys.sum() > 0, lambda v: _softmax(v), lambda v: -v, h), ys


F32 = np.float32


def _gelu_parts(h):
    inner = 0.7978846 * (h + 0.044715 * h * h * h)
    t = np.tanh(inner)
    return 0.5 * h * (1.0 + t), t, inner, h * h, 1.0 - t * t, h * 0.5, inner * 2.0


def _arrays(*shapes, dtype=F32):
    return tuple(np.ones(shape, dtype) for shape in shapes)


INTEGER_TYPES = (np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64)

# name: (program, arguments, PTX instructions every kernel of it must contain)
VARIANTS = {
    "elementwise": (lambda x, y: np.tanh(x * 1.5) + y, _arrays((64, 33), (33,)), []),
    "movement": (
        lambda x, i: (np.pad(x, 1), np.concatenate([x, x], 1), x[i], x.T[::2]),
        (np.ones((6, 5), F32), np.array([0, 5, 2])),
        [],
    ),
    "softmax_short_rows": (_softmax, _arrays((64, 7)), ["shfl.sync.down", "shfl.sync.idx"]),
    "softmax_warp_rows": (_softmax, _arrays((64, 100)), ["shfl.sync.down"]),
    "softmax_long_rows": (_softmax, _arrays((8, 5000)), ["shfl.sync.down", "bar.sync"]),
    "argmax_rows_f64": (lambda x: np.argmax(x, -1), _arrays((16, 300), dtype=np.float64), ["shfl"]),
    "narrow_rows": (  # shuffled as 32-bit words, cast back
        lambda b, i, h: (b.max(-1), i.max(-1), np.argmax(i, -1), h.max(-1)),
        (np.ones((9, 40), bool), np.ones((9, 40), np.int8), np.ones((9, 40), np.float16)),
        ["shfl.sync"],
    ),
    "columns": (lambda x: (x.sum(0), np.argmin(x, 0)), _arrays((300, 70)), ["bar.sync"]),
    "everything": (lambda x: (x.sum(), np.argmax(x)), _arrays((1 << 16,)), ["atom.", "membar"]),
    "bools_ints": (
        lambda b, i: (b.max(-1), i.sum(0), b.sum()),
        (np.ones((9, 40), bool), np.ones((40, 9), np.int32)),
        [],
    ),
    "matmul_f32": (
        lambda a, b: np.maximum(a @ b, 0.0),
        _arrays((70, 40), (40, 90)),
        ["fma.rn.f32"],
    ),
    # A transformer's GELU with its derivative's factors, fused after the product: with the
    # full thread tile it needed more than 255 registers (``contraction.EPILOGUE_LIMIT``).
    "matmul_gelu_epilogue": (
        lambda a, b, c: _gelu_parts(a @ b + c),  # spilled 256 bytes before the limit
        _arrays((8, 32, 64), (64, 256), (256,)),
        ["fma.rn.f32"],
    ),
    "matmul_batched_f64": (
        lambda a, b: a @ b,
        _arrays((3, 5, 4), (3, 4, 6), dtype=np.float64),
        ["fma.rn.f64"],
    ),  # fmt: skip
    "matmul_int_bool": (
        lambda a, b, p, q: (a @ b, p @ q),
        (*_arrays((5, 4), (4, 3), dtype=np.int32), *_arrays((2, 3), (3, 2), dtype=bool)),
        [],
    ),
    "cumsum": (lambda x: (np.cumsum(x, 1), np.cumsum(x, 0)), _arrays((40, 300)), ["bar.sync"]),
    "scatter_atomic": (
        lambda x, i, v: x.at[i].add(v),
        (np.ones((9, 4), F32), np.array([1, 1]), np.ones((2, 4), F32)),
        ["atom.global.add.f32"],
    ),  # fmt: skip
    "control_flow": (_control_flow, _arrays((4, 40), (6, 4, 40)), []),
    "elementwise_loops": (
        lambda x, xs, n: (
            numbax.scan(lambda h, r: (np.tanh(h * r + x), h), x, xs),
            numbax.fori_loop(0, n, lambda i, c: np.sin(c) * 0.5 + x, x),
        ),
        (*_arrays((4, 40), (6, 4, 40)), np.int32(5)),
        [],
    ),
    "loop_carries_of_every_dtype": (
        lambda x, k: numbax.fori_loop(
            0,
            7,
            lambda i, c: (
                c[0] ^ (c[1] > 0.5),
                c[1] * 0.5 + i,
                c[2] // 2 + k,
                c[3] * np.float32(1.5),
            ),
            (np.ones(x.shape, bool), x, k, np.float32(1)),
        ),
        (np.ones((3, 5)), np.ones((3, 5), np.int64)),
        [],
    ),
    "scatter_serial": (
        lambda x, i, v: x.at[i].set(v),
        (np.ones((9, 4), F32), np.array([1, 1]), np.ones((2, 4), F32)),
        [],
    ),  # fmt: skip
    "float_to_every_integer": (  # NumPy's cast on x86-64 (dtypes.float_to_integer_steps)
        lambda x, y: tuple(v.astype(t) for v in (x, y) for t in INTEGER_TYPES),
        (np.ones((3, 5), F32), np.ones((3, 5))),
        ["cvt.rzi.s32.f32", "cvt.rzi.s64.f64"],
    ),
    "threefry2x32": (  # the cipher's helper compiled into the kernel of the uniforms
        lambda key: (numbax.random.uniform(key, (64,), F32), numbax.random.bits(key, (64,))),
        (np.array([0, 3]),),
        ["xor.b"],
    ),
}


def _narrow_program(x, w):
    conversions = ((x > 0).astype(x.dtype), (x * 3).astype(np.int32).astype(x.dtype))
    return np.tanh(x * 1.5) + 1, x.sum(axis=-1), x.mean(), np.maximum(x @ w, 0), conversions


NARROW_FLOATS = [np.dtype(np.float16)] + ([dtypes.bfloat16] if dtypes.bfloat16 else [])
_F64_INSTRUCTION = re.compile(r"^\s*[a-z]+(\.[a-z0-9]+)*\.f64\b", re.MULTILINE)
_WIDENING_SHIFT = re.compile(r"shl\.b32\s+%r\d+, %r\d+, 16;")


@pytest.mark.parametrize("dtype", NARROW_FLOATS, ids=str)
def test_narrow_float_kernels_load_16_bits_and_compute_in_float32(dtype, ptx_toolchain):
    """float16 and bfloat16 kernels (elementwise, a row sum, a mean of all, a matmul) load 2
    bytes an element, the matmul too (its operands' widening folds into its tile loads),
    convert in registers (float16: sm_90's cvt; bfloat16, held as its bits: a shift in,
    integer rounding out) and do no float64 arithmetic: sums of narrow floats accumulate
    in float32."""
    kernels = compile_and_count(_narrow_program, _arrays((64, 40), (40, 24), dtype=dtype), "nf")
    assert any("dot_general" in name for name in kernels)
    for name, ptx in kernels.items():
        assert re.search(r"ld\.global(\.nc)?\.u16", ptx), name
        assert not _F64_INSTRUCTION.search(ptx), (name, _F64_INSTRUCTION.search(ptx).group())
        if dtype == np.float16:
            assert "cvt.f32.f16" in ptx and "cvt.rn.f16.f32" in ptx, name
        else:
            assert _WIDENING_SHIFT.search(ptx) and ".f16" not in ptx, name


@pytest.mark.parametrize("name", VARIANTS)
def test_kernel_variants_compile_to_ptx(name, ptx_toolchain):
    fun, args, instructions = VARIANTS[name]
    kernels = compile_and_count(fun, args, name)
    for instruction in instructions:
        assert any(instruction in ptx for ptx in kernels.values()), instruction


def test_many_reductions_make_the_block_smaller():
    """Sibling reductions of one array share a kernel; when a full block's accumulators
    would not fit in shared memory, the generator gives the kernel a smaller block."""
    from numbax.backends.cuda import CudaBackend, CudaOptions

    def many(x):
        return [np.argmax(x * k, 0) for k in range(1, 16)]

    options = CudaOptions.for_gpu()
    closed = numbax.make_jaxpr(many)(np.ones((300, 70)))
    (step,) = CudaBackend(options).lower(closed, "many").steps
    declared = re.findall(r"cuda\.shared\.array\((\d+), (\w+)\)", step.kernel.source)
    itemsize = {"float64": 8, "int64": 8}
    assert len(declared) == 30
    assert sum(int(n) * itemsize[kind] for n, kind in declared) <= STATIC_SHARED_LIMIT
    assert step.kernel.block[0] < options.column_slots * options.column_lanes


def test_every_primitive_is_computed_one_way_on_cuda():
    """That each has a scalar rule, an index map or a host runner where its table asks for
    one is tests/test_rule_tables.py's check; here, that no primitive has two."""
    from numbax.backends.cuda.control import RUNNERS
    from numbax.backends.cuda.indexing import INDEX_RULES
    from numbax.backends.cuda.scalar import SCALAR_RULES
    from numbax.ir.primitive import PRIMITIVES

    for name, prim in PRIMITIVES.items():
        ways = [prim in SCALAR_RULES, prim in INDEX_RULES, prim in RUNNERS]
        assert sum(ways) <= 1, f"{name} has {ways.count(True)} CUDA rules"


def test_generated_module_needs_no_gpu_to_import():
    from numbax.backends.cuda import CudaBackend, CudaOptions
    from numbax.backends.cuda.loader import load_module

    closed = numbax.make_jaxpr(_softmax)(np.ones((4, 40), F32))
    program = CudaBackend(CudaOptions.for_gpu()).lower(closed, "softmax")
    module, _ = load_module(program.module_name, program.source)
    assert callable(getattr(module, program.steps[0].kernel.name))
    assert "cuda.shfl_down_sync" in program.source


# --- the whole corpus -------------------------------------------------------------------


def corpus_ptx(positions: list[int]) -> list[str]:
    """Compile the first signature of these corpus cases to PTX; the problems found."""
    import corpus

    from numbax.api import trace_to_jaxpr
    from numbax.backends.cuda.ptx import program_ptx

    problems = []
    for position in positions:
        case = corpus.CASES[position]
        args = case.arguments(case.signatures[0], np.random.default_rng(position))
        try:
            closed = trace_to_jaxpr(case.fn, args)[0]
            kernels = program_ptx(closed, case.name)
            entries = sum(ptx.count(".entry") for _, ptx in kernels)
            wanted = expected_kernels(closed)
            if entries != wanted:
                problems.append(f"{case.name}: {entries} .entry kernels, fused {wanted}")
            shared = max((shared_bytes(ptx) for _, ptx in kernels), default=0)
            if shared > STATIC_SHARED_LIMIT:
                problems.append(f"{case.name}: {shared} bytes of shared memory in a kernel")
        except Exception as error:  # noqa: BLE001 - collected, reported together
            problems.append(f"{case.name}: {type(error).__name__}: {error}"[:2000])
    return problems


def test_every_corpus_kernel_compiles_to_ptx(ptx_toolchain):
    """Every kernel the corpus generates (each case's first signature) compiles for sm_90
    and is one ``.entry`` per kernel of the fused program. Compiling is CPU-bound, so
    the cases are shared between a process per core."""
    import corpus

    workers = max(1, min(len(os.sched_getaffinity(0)), 4))
    chunks = [list(range(len(corpus.CASES)))[k::workers] for k in range(workers)]
    if workers == 1:
        problems = corpus_ptx(chunks[0])
    else:
        # Spawned, not forked (Numba is not fork-safe); a child starts with this sys.path.
        with multiprocessing.get_context("spawn").Pool(workers) as pool:
            problems = [p for found in pool.map(corpus_ptx, chunks) for p in found]
    assert not problems, "\n".join(problems)
