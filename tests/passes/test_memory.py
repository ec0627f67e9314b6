"""Memory planning: buffers reused by liveness, never while their value is live, never
for the program's inputs and outputs; checked by running the fused program with every
intermediate stored in its planned buffer."""

from __future__ import annotations

import numpy as np
import pytest
from passes_util import evaluate, optimize

import numbax
from numbax import ir
from numbax.ir.core import Eqn, Jaxpr, Var
from numbax.ir.higher_order import kernel_p
from numbax.passes import plan_memory
from numbax.passes.memory import Liveness

rng = np.random.default_rng(1)


def chain(x):
    """20 layers, each a reduction kernel over the other axis than its neighbours."""
    for layer in range(20):
        x = np.tanh(x - x.mean(axis=layer % 2, keepdims=True) * 0.5)
    return x


def run_in_planned_buffers(fused, plan, *args):
    """Interpret the fused program writing each intermediate into its planned buffer
    (a view, so a buffer reused too early corrupts a later read)."""
    buffers = [np.empty(b.size, b.dtype) for b in plan.buffers]
    jaxpr = fused.jaxpr
    env = dict(zip(jaxpr.constvars, fused.consts, strict=True))
    env.update(zip(jaxpr.invars, args, strict=True))
    read = lambda a: a.val if isinstance(a, ir.Literal) else env[a]  # noqa: E731
    for eqn in jaxpr.eqns:
        outs = eqn.prim.impl(*map(read, eqn.inputs), **eqn.params)
        for var, value in zip(eqn.outputs, outs, strict=True):
            if var in plan.buffer_of:
                buffer = buffers[plan.buffer_of[var]]
                buffer[:] = np.asarray(value, var.aval.dtype).reshape(-1)
                value = buffer.reshape(var.aval.shape)
            env[var] = value
    return [np.asarray(read(v)) for v in jaxpr.outvars]


def test_twenty_layer_chain_reuses_buffers():
    x = rng.standard_normal((16, 24)).astype(np.float32)
    fused, log = optimize(chain, x)
    plan = log.memory_plan
    assert len(fused.eqns) >= 20
    outvars = set(fused.jaxpr.outvars)
    intermediates = [v for e in fused.eqns for v in e.outputs if v not in outvars]
    assert plan.total_intermediate_bytes == sum(v.aval.nbytes for v in intermediates)
    assert plan.peak_bytes < plan.total_intermediate_bytes / 4
    # Each layer hands on an array and a row or column of means: two buffers of each.
    assert plan.num_buffers <= 4
    for got, want in zip(run_in_planned_buffers(fused, plan, x), evaluate(fused, x), strict=True):
        np.testing.assert_array_equal(got, want)


def test_inputs_and_outputs_are_never_planned():
    x = rng.standard_normal((4, 6))
    fused, log = optimize(lambda v: (chain(v), v.sum(0)), x)
    planned = set(log.memory_plan.buffer_of)
    assert not planned & set(fused.jaxpr.invars)
    assert not planned & {v for v in fused.jaxpr.outvars if isinstance(v, Var)}


def test_a_buffer_is_shared_only_by_values_of_one_size_and_dtype():
    def fn(x, w):
        a = (x @ w).astype(np.float64)  # f32 [4,4] -> f64 [4,4]
        b = a @ a.T  # f64 [4,4]
        c = (b @ b).sum(axis=1)  # f64 [4]
        return np.tanh(c).astype(np.float32) @ w  # f32 [4] then [4]

    x, w = rng.standard_normal((4, 4)).astype(np.float32), np.eye(4, dtype=np.float32)
    fused, log = optimize(fn, x, w)
    plan = plan_memory(fused)
    for var, buffer in plan.buffer_of.items():
        assert (plan.buffers[buffer].size, plan.buffers[buffer].dtype) == (
            var.aval.size,
            var.aval.dtype,
        )
    got = run_in_planned_buffers(fused, plan, x, w)
    np.testing.assert_allclose(got[0], evaluate(fused, x, w)[0])


def test_no_two_live_values_share_a_buffer():
    x = rng.standard_normal((8, 8))
    fused, log = optimize(lambda v: np.tanh(v @ v) @ np.sin(v @ v.T) + v.sum(), x)
    plan = log.memory_plan
    eqns = fused.jaxpr.eqns
    defined = {v: i for i, e in enumerate(eqns) for v in e.outputs}
    last = {a: i for i, e in enumerate(eqns) for a in e.inputs if isinstance(a, Var)}
    for a, buffer in plan.buffer_of.items():
        for b, other in plan.buffer_of.items():
            if a is not b and buffer == other:
                # One's life [defined, last read] ends before the other's begins.
                a_span = (defined[a], last.get(a, defined[a]))
                b_span = (defined[b], last.get(b, defined[b]))
                assert a_span[1] < b_span[0] or b_span[1] < a_span[0]


# --- the proof that a write cannot be followed by a read of the value it overwrites ------------


def _contraction(fused):
    (eqn,) = [e for e in fused.eqns if e.params.get("kind") == "contraction"]
    return fused.jaxpr.eqns.index(eqn), eqn


def _product(eqn):
    (dot,) = [e for e in eqn.params["jaxpr"].eqns if e.prim.name == "dot_general"]
    return dot.outputs[0]


def test_an_epilogue_output_that_does_not_read_the_product_may_not_overwrite_it():
    a, b, d = rng.standard_normal((3, 3)), rng.standard_normal((3, 3)), np.full((3, 3), 2.0)
    fused, _ = optimize(lambda a, b, d: (d * 2.0, (a @ b) * d), a, b, d)
    index, eqn = _contraction(fused)
    liveness = Liveness(fused)
    doubled, scaled = eqn.outputs
    # d * 2.0 would be written over the product before (a @ b) * d reads it.
    assert "another output" in liveness.overwrite_refusal(index, doubled, _product(eqn))
    assert liveness.overwrite_refusal(index, scaled, _product(eqn)) is None


def _one_kernel(epilogue, *args):
    """A program of one contraction kernel whose body is ``epilogue(a @ b, d)`` as traced
    (no fusion decides what goes in), its product, and the program's liveness."""
    body = numbax.make_jaxpr(lambda a, b, d: epilogue(a @ b, d))(*args).jaxpr
    invars = [Var(v.aval) for v in body.invars]
    outputs = [Var(v.aval) for v in body.outvars]
    params = {"jaxpr": body, "kind": "contraction", "name": "epilogue"}
    program = Jaxpr([], invars, [Eqn(kernel_p, invars, outputs, params)], [])
    return program.eqns[0], _product(program.eqns[0]), Liveness(program)


@pytest.mark.parametrize(
    "epilogue, refusals",
    [
        (lambda p, d: (d * 2.0, p * d), ["another output", None]),
        (lambda p, d: (p * d, d * 2.0), [None, "another output"]),
        (lambda p, d: (p * d, p + 1.0), ["another output", "another output"]),
        (lambda p, d: (np.tanh(p) * d + 1.0, d - p), ["another output", "another output"]),
        (lambda p, d: (p, p * d), ["a result of the kernel", "a result of the kernel"]),
        (lambda p, d: (p.sum(axis=1, keepdims=True) * d,), ["reads the value at other points"]),
        (lambda p, d: (p[:1] * d,), ["reads the value at other points"]),
        (lambda p, d: ((p > d).astype(np.float32),), ["differ in shape or dtype"]),
        (lambda p, d: (np.exp(p) - d, np.sin(d)), [None, "another output"]),
    ],
)
def test_an_output_overwrites_the_product_only_if_it_alone_reads_it_pointwise(epilogue, refusals):
    args = rng.standard_normal((3, 4)), rng.standard_normal((4, 5)), rng.standard_normal((3, 5))
    eqn, product, liveness = _one_kernel(epilogue, *args)
    for output, expected in zip(eqn.outputs, refusals, strict=True):
        refusal = liveness.overwrite_refusal(0, output, product)
        assert refusal is None if expected is None else expected in refusal, refusal


def test_a_value_of_the_program_is_overwritten_only_after_its_last_reader():
    x = rng.standard_normal((8, 8))
    fused, _ = optimize(lambda v: np.tanh(np.tanh(v @ v) @ v) @ v, x)
    liveness = Liveness(fused)
    eqns = fused.jaxpr.eqns
    for index, eqn in enumerate(eqns):
        for value, made in liveness.made_at.items():
            refusal = liveness.overwrite_refusal(index, eqn.outputs[0], value)
            last = liveness.last_read.get(value, made)
            if value in fused.jaxpr.outvars:
                assert "caller's array" in refusal
            elif made < index and last < index:
                assert refusal is None
            else:
                assert refusal is not None
        for argument in fused.jaxpr.invars:
            assert "caller's array" in liveness.overwrite_refusal(index, eqn.outputs[0], argument)


@pytest.mark.parametrize("backend", ["cpu", "cuda"])
def test_a_compile_proves_each_programs_liveness_once(backend, monkeypatch):
    """One memory plan per program a backend runs, and one liveness proof behind it:
    the cpu writer and its executable read the pipeline plan's (``MemoryPlan.liveness``),
    and a loop body's proof is its loop's ownership (proven until the carries it owns
    settle, here at once). cuda plans the blocks it builds after its own rewrites, and
    the pipeline plans nothing for it: the top-level block, its loop's body for the
    ownership, and the body's block, which the device's rewrites made another program."""
    from numbax.backends import get_backend
    from numbax.config import cuda_simulator

    if backend == "cuda" and not cuda_simulator():
        pytest.skip("needs Numba's CUDA simulator (NUMBA_ENABLE_CUDASIM=1)")
    proven = []
    init = Liveness.__init__
    monkeypatch.setattr(
        Liveness,
        "__init__",
        lambda self, program, owned=(): proven.append(program) or init(self, program, owned),
    )

    def program(x):
        y = numbax.fori_loop(0, 3, lambda i, c: c.at[0].set(c[1] * 2.0), np.sin(x))
        return np.cumsum(y, axis=0) * 0.5

    closed = numbax.make_jaxpr(program)(rng.standard_normal((4, 3)))
    get_backend(backend).compile(closed, "program")
    assert len(proven) == {"cpu": 2, "cuda": 3}[backend]
