"""Every refusal carries a named reason on the pass log: fusion's (``Refusal``), the memory
plan's (``MemoryRefusal``, on the ``memory_plan`` line) and the cpu writer's
(``WriterRefusal``, the pass ``cpu_write``); the cpu writer takes each kernel's kind from
fusion and dispatches on it (``KIND_WRITERS``); the cuda backend's ``cuda_launch`` record
reaches ``Lowered.pass_log`` and the ``NUMBAX_DUMP`` folder.

Oracles: the interpreter for what each program computes (a refused kernel split into its
eqns, a loop that copies the caller's array), NumPy for the caller's arrays left as they
were.
"""

from __future__ import annotations

import copy
import os
import pickle

import numpy as np
import pytest

import numbax
from numbax.backends import get_backend
from numbax.backends.cpu.kind_writers import KIND_WRITERS
from numbax.backends.cpu.unfusable import WriterRefusal
from numbax.config import config, cuda_simulator
from numbax.ir import eval_jaxpr
from numbax.ir.core import ClosedJaxpr, Eqn, Jaxpr, Var
from numbax.ir.higher_order import kernel_p
from numbax.passes import optimize, plan_memory
from numbax.passes.memory import Liveness
from numbax.passes.refusals import MemoryRefusal, Reason, Refusal, Refused

rng = np.random.default_rng(35)


def mlp_loss(params, x, y):
    (w1, b1), (w2, b2) = params
    h = np.tanh(x @ w1 + b1)
    logits = h @ w2 + b2
    logits = logits - logits.max(axis=1, keepdims=True)
    log_p = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
    return -(log_p * y).sum() / x.shape[0]


def train(params, xs, ys, history):
    """SGD over the batches of ``xs``, each batch's loss written into ``history``."""

    def body(i, carry):
        params, history = carry
        loss, grads = numbax.value_and_grad(mlp_loss)(params, xs[i], ys[i])
        params = [
            (w - 0.1 * gw, b - 0.1 * gb) for (w, b), (gw, gb) in zip(params, grads, strict=True)
        ]
        return params, history.at[i].set(loss)

    return numbax.fori_loop(0, xs.shape[0], body, (params, history))


def training_arguments():
    params = [(rng.normal(size=(8, 16)), np.zeros(16)), (rng.normal(size=(16, 4)), np.zeros(4))]
    xs = rng.normal(size=(3, 32, 8))
    ys = np.eye(4)[rng.integers(0, 4, (3, 32))]
    return params, xs, ys, np.zeros(3)


def test_a_training_step_logs_every_refusal_with_its_named_reason():
    args = training_arguments()
    lowered = numbax.jit(train).lower(*args)
    log = lowered.pass_log
    fusion = log.refusals()
    # The forward and backward products each need a kernel of their own, and the
    # softmax's reductions loop nests besides the products'.
    assert {Refusal.TWO_CONTRACTIONS, Refusal.CONTRACTION_AND_REDUCTION} <= set(fusion)
    assert all(isinstance(reason, Refusal) and reason.why for reason in fusion)
    # The loop writes the losses into its carry in place: the caller's array is copied
    # once, before the loop, and that is the plan's one refusal.
    assert log.refusals("memory_plan") == {MemoryRefusal.CALLERS_MEMORY: 1}
    assert log.refusals("cpu_write") == {}  # fusion's kernels are the writer's
    text = str(log)
    (fusion_line,) = [line for line in text.splitlines() if " fusion " in line]
    for reason, count in fusion.items():
        assert f"{reason}={count}" in fusion_line.split("refused: ")[1]
    assert text.splitlines()[-1].endswith("; refused: callers_memory=1")
    history = args[3].copy()
    got = lowered.compile()(*args)
    want = numbax.jit(train, backend="interpret")(*args)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-12)
    for got_layer, want_layer in zip(got[0], want[0], strict=True):
        for g, w in zip(got_layer, want_layer, strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-14)
    np.testing.assert_array_equal(args[3], history)  # the copy the refusal made


def read_later(x):
    y = np.tanh(x)
    return y.at[1:3].set(0.0) + y


def read_later_numpy(x):
    y = np.tanh(x)
    z = y.copy()
    z[1:3] = 0.0
    return z + y


def updated_twice(x):
    y = np.tanh(x)
    return y.at[np.array([4, 3, 2, 1, 0])].set(y)


def updated_twice_numpy(x):
    y = np.tanh(x)
    z = y.copy()
    z[[4, 3, 2, 1, 0]] = y
    return z


@pytest.mark.parametrize(
    "fn, numpy_fn, reason",
    [
        (read_later, read_later_numpy, MemoryRefusal.READ_LATER),
        (updated_twice, updated_twice_numpy, MemoryRefusal.READ_ELSEWHERE),
    ],
)
def test_the_memory_plan_counts_an_update_it_refuses_by_its_reason(fn, numpy_fn, reason):
    x = rng.standard_normal(5)
    fused, log = optimize(numbax.make_jaxpr(fn)(x))
    liveness = Liveness(fused)
    refused = [
        liveness.update_refusal(k)
        for k in range(len(liveness.eqns))
        if liveness.eqns[k].params["name"] in ("dynamic_update_slice", "scatter")
    ]
    (refusal,) = refused
    assert refusal.reason is reason and isinstance(refusal, str)  # its words, and its name
    assert plan_memory(fused).refusals == {reason: 1}
    assert log.refusals("memory_plan") == {reason: 1}
    assert f"; refused: {reason}=1" in str(log.memory_plan)
    np.testing.assert_allclose(eval_jaxpr(fused.jaxpr, fused.consts, x)[0], numpy_fn(x))


def read_before_the_update(x, w):
    y = np.tanh(x)
    v = np.sin(w) * 2.0
    read = np.concatenate([y, np.cos(w)])  # after v's kernel, which makes the cos
    return y.at[1:3].set(v), read


def test_the_memory_plan_counts_a_window_store_it_refuses():
    x, w = rng.standard_normal(5), rng.standard_normal(2)
    fused, log = optimize(numbax.make_jaxpr(read_before_the_update)(x, w))
    plan = plan_memory(fused)
    assert len(plan.in_place) == 1 and not plan.window_stores  # in place, through a copy
    assert plan.refusals == {MemoryRefusal.READ_ELSEWHERE: 1}
    assert log.refusals("memory_plan") == {MemoryRefusal.READ_ELSEWHERE: 1}
    y = np.tanh(x)
    want = (np.concatenate([y[:1], np.sin(w) * 2.0, y[3:]]), np.concatenate([y, np.cos(w)]))
    for got, expected in zip(eval_jaxpr(fused.jaxpr, fused.consts, x, w), want, strict=True):
        np.testing.assert_allclose(got, expected)


def test_the_overwrite_proof_names_its_reasons():
    x = rng.standard_normal((4, 4))
    fused, _ = optimize(numbax.make_jaxpr(lambda v: np.tanh(np.tanh(v @ v) @ v) @ v)(x))
    liveness = Liveness(fused)
    refusals = [
        liveness.overwrite_refusal(index, eqn.outputs[0], value)
        for index, eqn in enumerate(fused.jaxpr.eqns)
        for value in [*liveness.made_at, *fused.jaxpr.invars]
    ]
    reasons = {refusal.reason for refusal in refusals if refusal is not None}
    assert reasons == {
        MemoryRefusal.NOT_MADE_YET,
        MemoryRefusal.CALLERS_MEMORY,
        MemoryRefusal.READ_ELSEWHERE,
    }


def hand_made(fn, kind: str, *args) -> ClosedJaxpr:
    """A program of one kernel eqn of ``kind`` whose body is ``fn`` as traced: no fusion
    decided what it holds."""
    body = numbax.make_jaxpr(fn)(*args).jaxpr
    invars = [Var(v.aval) for v in body.invars]
    outputs = [Var(v.aval) for v in body.outvars]
    params = {"jaxpr": body, "kind": kind, "name": "hand_made"}
    return ClosedJaxpr(Jaxpr([], invars, [Eqn(kernel_p, invars, outputs, params)], outputs), [])


@pytest.mark.parametrize(
    "fn, kind, reason",
    [
        (lambda x, y: (np.sin(x), y + 1.0), "elementwise", WriterRefusal.OUTPUT_SHAPES),
        # The writer takes the kind it is given: a reduction in an "elementwise" kernel
        # is no loop it writes (it used to look inside and write a reduction).
        (
            lambda x, y: (np.exp(x).sum(axis=1) * 2.0,),
            "elementwise",
            WriterRefusal.REDUCTION_SPACES,
        ),
        (lambda x, y: (np.tanh(x @ x.T),), "elementwise", WriterRefusal.NOT_A_LOOP_OP),
    ],
)
def test_the_cpu_writer_names_each_kernel_it_splits(fn, kind, reason):
    x, y = rng.standard_normal((3, 4)), rng.standard_normal(5)
    closed = hand_made(fn, kind, x, y)
    backend = get_backend("cpu")
    generated = backend.lower(closed, "hand_made", optimize=False)
    assert generated.refusals == {reason: 1}
    (record,) = generated.pass_log.records
    assert record.name == "cpu_write" and record.refusals == {reason: 1}
    assert record.changes == {"kernels_split": 1}
    assert str(record).endswith(f"kernels_split=1; refused: {reason}=1")
    assert generated.pass_log.refusals("cpu_write") == {reason: 1}
    executable = backend.compile(closed, "hand_made", optimize=False)
    for got, want in zip(
        executable(x, y), eval_jaxpr(closed.jaxpr, closed.consts, x, y), strict=True
    ):
        np.testing.assert_allclose(got, want, rtol=1e-12)


def test_a_kernel_of_a_kind_the_writer_lacks_is_refused_by_name():
    closed = hand_made(lambda x: np.exp(x), "stencil", rng.standard_normal(3))
    with pytest.raises(NotImplementedError, match="kind 'stencil'"):
        get_backend("cpu").lower(closed, "hand_made", optimize=False)


def test_the_writer_has_a_writer_for_every_kind_fusion_makes():
    def every_kind(a, b):
        h = np.tanh(a @ b + 1.0)  # a contraction with its epilogue
        return h.sum(axis=1), np.sort(h, axis=0)  # a reduction, an opaque op

    a, b = rng.standard_normal((3, 4)), rng.standard_normal((4, 5))
    fused, log = optimize(numbax.make_jaxpr(every_kind)(a, b))
    kinds = {eqn.params["kind"] for eqn in fused.jaxpr.eqns}
    assert kinds | {"elementwise"} <= set(KIND_WRITERS)
    assert set(KIND_WRITERS) == {"elementwise", "reduction", "contraction", "opaque"}
    generated = get_backend("cpu").lower(numbax.make_jaxpr(every_kind)(a, b), "every_kind")
    assert [k.kind for k in generated.kernels] == [e.params["kind"] for e in fused.jaxpr.eqns]
    assert not generated.refusals
    headings = [line for line in generated.source.splitlines() if "# kernel " in line]
    for heading, eqn in zip(headings, fused.jaxpr.eqns, strict=True):
        assert f": {eqn.params['kind']} {eqn.params['name']} " in heading


def test_every_reason_is_named_and_says_why():
    for reasons in (Refusal, MemoryRefusal, WriterRefusal):
        assert issubclass(reasons, Reason)
        assert len({r.value for r in reasons}) == len(reasons)
        assert all(r.why and str(r) == r.value for r in reasons)
    refused = Refused(MemoryRefusal.READ_LATER, "eqn 4 reads the operand after the update")
    for copied in (pickle.loads(pickle.dumps(refused)), copy.deepcopy(refused)):
        assert copied == refused and copied.reason is MemoryRefusal.READ_LATER


@pytest.fixture
def cuda_simulator_on():
    if not cuda_simulator():
        pytest.skip("needs Numba's CUDA simulator (NUMBA_ENABLE_CUDASIM=1)")
    pytest.importorskip("numba.cuda")


def cuda_program(x, w):
    return np.tanh(x.reshape(4, 3) @ w).sum(axis=1)


def test_the_cuda_launch_record_reaches_the_lowered_pass_log(cuda_simulator_on):
    x, w = rng.standard_normal(12).astype(np.float32), rng.standard_normal((3, 2))
    lowered = numbax.jit(cuda_program, backend="cuda").lower(x, w.astype(np.float32))
    log = lowered.pass_log
    record = log.records[-1]
    assert record.name == "cuda_launch" and record.changes["views_dropped"] >= 1
    assert record.eqns_before == len(lowered.fused.jaxpr.eqns)
    assert record.eqns_after == record.eqns_before - record.changes["views_dropped"]
    assert record.index == max(r.index for r in log.records[:-1]) + 1  # no plan between
    assert str(record) in str(log)
    # The memory plan is of the program the device runs (its top-level block), made by
    # the backend after its rewrites: the pipeline makes none for cuda.
    program = get_backend("cuda").lower(numbax.make_jaxpr(cuda_program)(x, w.astype(np.float32)))
    assert program.pass_log.memory_plan is program.block.memory_plan
    assert set(program.block.memory_plan.buffer_of) <= {
        v for eqn in program.block.jaxpr.eqns for v in eqn.outputs
    }


def test_the_cuda_launch_record_is_dumped_with_the_passes(cuda_simulator_on, tmp_path, monkeypatch):
    monkeypatch.setattr(config, "dump_dir", str(tmp_path))
    x, w = (
        rng.standard_normal(12).astype(np.float32),
        rng.standard_normal((3, 2)).astype(np.float32),
    )
    out = numbax.jit(cuda_program, backend="cuda")(x, w)
    np.testing.assert_allclose(np.asarray(out), cuda_program(x, w), rtol=1e-5)
    (folder,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    files = sorted(os.listdir(folder))
    (plan,) = [f for f in files if f.endswith("_memory_plan.txt")]
    (launch,) = [f for f in files if f.endswith("_cuda_launch.txt")]
    assert int(plan[:2]) == int(launch[:2]) + 1  # the plan of what the device runs, last
    text = (folder / launch).read_text()
    assert text.startswith("# ") and "cuda_launch" in text.splitlines()[0]
    assert "views_dropped=" in text.splitlines()[0]
    assert "kernel[" in text  # the program the device runs


def long_chain(x, b):
    y = x
    for _ in range(12):
        y = np.sin(y) * b + b * 0.5
    return y, x * 2.0


def test_the_cpu_backends_kernel_split_runs_in_the_pipeline_before_the_one_memory_plan(
    monkeypatch,
):
    from numbax.backends.cpu import parts

    monkeypatch.setattr(parts, "KERNEL_WEIGHT", 24)  # the chain's kernel weighs 12 * 11
    x, b = np.linspace(-1.0, 1.0, 12).reshape(3, 4), np.linspace(0.5, 1.5, 4)
    lowered = numbax.jit(long_chain).lower(x, b)
    log = lowered.pass_log
    names = [record.name for record in log.records]
    assert names[-1] == "bounded_kernels" and names[-2] == "dce"  # then the plan
    (record,) = [r for r in log.records if r.name == "bounded_kernels"]
    kernels = [e for e in lowered.fused.jaxpr.eqns if e.prim.name == "kernel"]
    assert record.changes["kernels_added"] == record.eqns_after - record.eqns_before > 0
    assert record.eqns_after == len(kernels)
    # The plan is of the program the backend runs: every planned value is made by one
    # of the kernels it writes, and the pieces hand each other values through planned
    # buffers.
    generated = get_backend("cpu").lower(numbax.make_jaxpr(long_chain)(x, b), "long_chain")
    plan = generated.pass_log.memory_plan
    made = {v for kernel in generated.kernels for v in kernel.outputs}
    assert len(generated.kernels) == record.eqns_after
    assert plan.buffer_of and set(plan.buffer_of) <= made
    assert lowered.memory_plan is log.memory_plan
    got = lowered.compile()(x, b)
    for g, want in zip(got, long_chain(x, b), strict=True):
        np.testing.assert_allclose(g, want, rtol=1e-12, atol=1e-12)
