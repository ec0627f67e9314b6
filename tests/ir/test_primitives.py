"""Every registered primitive: its shape rule agrees with its NumPy reference on sample
operands, a one-equation program of it typechecks and survives the JSON round trip.
``SAMPLES`` must cover the whole registry, so a new primitive comes with a sample."""

from __future__ import annotations

import numpy as np
import pytest

import numbax
from numbax import ir
from numbax.api import closure_convert
from numbax.ir import PRIMITIVES
from numbax.ir.callbacks import register_callback
from numbax.ir.serialize import SIGNATURES
from numbax.tracer import bind

rng = np.random.default_rng(0)
F = rng.standard_normal((3, 4))
F32 = F.astype(np.float32)
POS = np.abs(F) + 0.1
INT = rng.integers(-5, 6, (3, 4)).astype(np.int32)
B = F > 0


def _jaxpr(fn, *args) -> ir.Jaxpr:
    """A closure-converted jaxpr of ``fn`` (as higher-order primitives carry)."""
    jaxpr, consts = closure_convert(numbax.make_jaxpr(fn)(*args))
    assert not consts
    return jaxpr


def _sample(*args, **params):
    return args, params


SAMPLES = {
    **{name: _sample(F) for name in ["neg", "exp", "sin", "cos", "tanh", "logistic", "abs",
                                     "sign", "floor", "ceil", "round", "expm1", "erf"]},
    **{name: _sample(POS) for name in ["log", "log1p", "sqrt", "rsqrt"]},
    "not": _sample(B),
    **{name: _sample(F, F32.astype(np.float64)) for name in ["add", "sub", "mul", "max", "min",
                                                             "atan2", "rem"]},
    "div": _sample(INT, np.where(INT == 0, 1, INT).astype(np.int32)),
    "pow": _sample(POS, F),
    "and": _sample(B, ~B),
    "or": _sample(INT, INT),
    "xor": _sample(INT, np.int32(6)),
    **{name: _sample(INT, (INT + 30).astype(np.int32)) for name in ["shift_left",
                                                                  "shift_right_arithmetic"]},
    **{name: _sample(F, np.float64(0.5)) for name in ["eq", "ne", "lt", "le", "gt", "ge"]},
    "integer_pow": _sample(F32, y=3),
    "select": _sample(B, F, np.zeros((3, 4))),
    "convert_element_type": _sample(F, new_dtype=np.dtype("int32")),
    "stop_gradient": _sample(F),
    "threefry2x32": _sample(np.int64(7), INT.astype(np.int64), np.int64(-1), INT.astype(np.int64),
                            output="bits64"),
    "broadcast_in_dim": _sample(F[0], shape=(2, 3, 4), broadcast_dimensions=(2,)),
    "reshape": _sample(F, new_sizes=(2, 6)),
    "transpose": _sample(F, permutation=(1, 0)),
    "squeeze": _sample(F[:1], dimensions=(0,)),
    "expand_dims": _sample(F, dimensions=(0, 3)),
    "slice": _sample(F, start_indices=(1, 0), limit_indices=(3, 4), strides=(1, 2)),
    "dynamic_slice": _sample(F, np.int32(2), np.int64(-1), slice_sizes=(2, 2)),
    "dynamic_update_slice": _sample(F, np.ones((2, 2)), np.int32(1), np.int32(3)),
    "gather": _sample(F, np.array([[0, 3], [3, 9]]), axis=1),
    "scatter": _sample(F, np.array([0, 2, 0]), np.ones((3, 3)), axis=1, mode="add"),
    "concatenate": _sample(F, F[:1], dimension=0),
    "pad": _sample(INT, np.int32(7), padding_config=((1, 0), (0, 2))),
    "iota": _sample(dtype=np.dtype("int32"), shape=(2, 3), dimension=1),
    **{name: _sample(F, axes=(0,)) for name in ["reduce_sum", "reduce_max", "reduce_min",
                                                "reduce_prod"]},
    "argmax": _sample(F, axis=1, index_dtype=np.dtype("int32")),
    "argmin": _sample(INT, axis=0, index_dtype=np.dtype("int64")),
    "cumsum": _sample(INT, axis=1, reverse=True),
    "sort": _sample(INT, F, dimension=1, is_stable=True, num_keys=1),
    "dot_general": _sample(F, F.T.copy(), dimension_numbers=(((1,), (0,)), ((), ()))),
    "cholesky": _sample(np.stack([F @ F.T + np.eye(3), np.eye(3)])),
    "triangular_solve": _sample(F[:, :3], F, lower=True, transpose_a=True, unit_diagonal=False),
    "lu": _sample(F[:, :3]),
    "qr": _sample(F, full_matrices=True),
    "eigh": _sample(F32[None, :, :3]),
    "svd": _sample(F.T.copy(), full_matrices=True, compute_uv=True),
    "real": _sample(F + 1j * POS),
    "imag": _sample((F + 1j * POS).astype(np.complex64)),
    "conj": _sample(F - 1j * F),
    "complex": _sample(F32, F32 * 2),
    "fft": _sample(F32, fft_type="rfft", fft_lengths=(3, 4)),
    "jit_call": _sample(F, jaxpr=_jaxpr(lambda x: np.sin(x) + 1, F), name="f"),
    "checkpoint": _sample(F, jaxpr=_jaxpr(lambda x: np.sin(x) * x, F), name="f"),
    "kernel": _sample(F, F, jaxpr=_jaxpr(lambda x, y: (x * y + 1,), F, F), kind="elementwise",
                      name="mul_add"),
    "cond": _sample(np.int32(1), F, branches=(_jaxpr(lambda x: x * 2, F),
                                               _jaxpr(lambda x: x + 1, F))),
    "while": _sample(np.float64(10.0), np.float64(1.0), np.float64(0.0),
                     cond_jaxpr=_jaxpr(lambda limit, c: c < limit, 1.0, 1.0),
                     body_jaxpr=_jaxpr(lambda step, c: c + step, 1.0, 1.0),
                     cond_nconsts=1, body_nconsts=1),
    "scan": _sample(F[0], F, jaxpr=_jaxpr(lambda c, x: (c + x, c * x), F[0], F[0]), length=3,
                    reverse=False, num_consts=0, num_carry=1),
    "custom_vjp_call": _sample(
        F,
        jaxpr=_jaxpr(lambda x: np.sin(x), F),
        fwd_jaxpr=_jaxpr(lambda x: (np.sin(x), np.cos(x)), F),
        bwd_jaxpr=_jaxpr(lambda cos, g: g * cos, F, F),
        const_counts=(0, 0, 0),
    ),
    "custom_jvp_call": _sample(
        F,
        jaxpr=_jaxpr(lambda x: np.sin(x), F),
        jvp_jaxpr=_jaxpr(lambda x, t: (np.sin(x), np.cos(x) * t), F, F),
        const_counts=(0, 0),
    ),
    "debug_callback": _sample(F, INT, callback=register_callback(lambda *arrays: None)),
    "pure_callback": _sample(
        F,
        callback=register_callback(lambda x: (np.cos(x), x > 0)),
        result_avals=(ir.ShapedArray(F.shape, F.dtype), ir.ShapedArray(F.shape, np.bool_)),
    ),
}  # fmt: skip


def test_every_primitive_has_a_sample():
    missing = sorted(set(PRIMITIVES) - set(SAMPLES))
    assert not missing, f"add a sample for {missing} to tests/ir/test_primitives.py"


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_shape_rule_agrees_with_reference(name):
    if name not in PRIMITIVES:
        pytest.skip(f"{name} is not registered")
    prim = PRIMITIVES[name]
    args, params = SAMPLES[name]
    out_avals = prim.abstract_eval(*[ir.aval_of(a) for a in args], **params)
    outs = prim.impl(*args, **params)
    assert len(outs) == len(out_avals)
    for out, aval in zip(outs, out_avals, strict=True):
        out = np.asarray(out)
        assert out.shape == aval.shape, name
        # Reference implementations return the recorded dtype (the interpreter pins it
        # too, but a rule and its reference must not silently disagree).
        assert out.dtype == aval.dtype, name


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_one_equation_program_typechecks_and_round_trips(name):
    if name not in PRIMITIVES:
        pytest.skip(f"{name} is not registered")
    prim = PRIMITIVES[name]
    args, params = SAMPLES[name]

    def program(*xs):
        return bind(prim, *xs, **params)

    closed = numbax.make_jaxpr(program)(*args)
    assert [e.prim for e in closed.eqns] == [prim]
    ir.typecheck(closed)
    if SIGNATURES[name].refused:
        with pytest.raises(numbax.SerializationError, match=f"{name} cannot be serialised"):
            ir.dumps(closed)
        return
    loaded = ir.loads(ir.dumps(closed))
    assert str(loaded) == str(closed)
    flat = [np.asarray(a) for a in args]
    for got, want in zip(
        ir.eval_jaxpr(loaded.jaxpr, loaded.consts, *flat),
        ir.eval_jaxpr(closed.jaxpr, closed.consts, *flat),
        strict=True,
    ):
        np.testing.assert_array_equal(got, want)


def test_pattern_classes():
    pattern = {name: prim.pattern for name, prim in PRIMITIVES.items()}
    assert pattern["add"] is ir.Pattern.ELEMENTWISE
    assert pattern["broadcast_in_dim"] is ir.Pattern.BROADCAST
    assert pattern["transpose"] is ir.Pattern.INJECTIVE
    assert pattern["reduce_sum"] is ir.Pattern.REDUCTION
    assert pattern["dot_general"] is ir.Pattern.CONTRACTION
    assert pattern["jit_call"] is ir.Pattern.CONTROL
    expensive = {name for name, prim in PRIMITIVES.items() if prim.expensive}
    assert {"exp", "log", "tanh", "div", "dot_general", "reduce_sum"} <= expensive
    assert not {"add", "mul", "neg", "reshape", "broadcast_in_dim"} & expensive


def test_non_differentiable_primitives():
    flat = {name for name, prim in PRIMITIVES.items() if not prim.differentiable}
    assert {
        "argmax",
        "argmin",
        "floor",
        "ceil",
        "round",
        "sign",
        "eq",
        "lt",
        "stop_gradient",
        "iota",
    } <= flat
    assert not {"add", "mul", "exp", "dot_general", "reduce_sum", "gather"} & flat
