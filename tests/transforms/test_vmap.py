"""``vmap``: every batching rule against a Python loop over examples.

The oracle runs the same per-example function on each example (eagerly: NumPy, or the
primitives' NumPy implementations for ``lax`` calls) and stacks the results. Rule
cases vary which operands are batched and where (``in_axes`` with ``None`` and
negative axes); the corpus runs every shared program batched; composition with
``jit``, nesting and per-example gradients close the file.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
from corpus import CASES, PYTHON, assert_tree_matches

import numbax
from numbax.config import config
from numbax.ir import PRIMITIVES, Jaxpr
from numbax.ir.elementwise import BINARY, COMPARISONS, UNARY
from numbax.ir.errors import BatchingError
from numbax.ir.higher_order import checkpoint_p, custom_jvp_call_p, custom_vjp_call_p, kernel_p
from numbax.numpy_lib import numpy_complex as cx
from numbax.numpy_lib.numpy_fft import fft_primitive
from numbax.tracer import lax
from numbax.tracer import lax_linalg as la
from numbax.tracer.core import bind
from numbax.transforms.batching import BATCH_RULES

SIZE = 3  # examples per batch


def take(x, i, axis):
    return x if axis is None else np.take(x, i, axis=axis)


def loop(fun, args, in_axes, out_axes=0):
    """The oracle: ``fun`` on each example, results stacked along ``out_axes``."""
    size = next(np.shape(a)[ax] for a, ax in zip(args, in_axes, strict=True) if ax is not None)
    outs = [
        fun(*[take(a, i, ax) for a, ax in zip(args, in_axes, strict=True)]) for i in range(size)
    ]
    return numbax.tree_map(lambda *xs: np.stack(xs, axis=out_axes), *outs)


def check(fun, args, in_axes, out_axes=0, tolerance=1.0):
    batched = numbax.vmap(fun, in_axes=tuple(in_axes), out_axes=out_axes)
    expected = loop(fun, args, in_axes, out_axes)
    assert_tree_matches(batched(*args), expected, tolerance)
    numbax.typecheck(numbax.make_jaxpr(batched)(*args))


def batch_of(rng, example_shape, axis, dtype=np.float64, low=-2.0, high=2.0):
    """A batched argument: SIZE examples of ``example_shape`` stacked on ``axis``."""
    if axis is None:
        shape = example_shape
    else:
        axis = axis % (len(example_shape) + 1)
        shape = example_shape[:axis] + (SIZE,) + example_shape[axis:]
    if np.dtype(dtype).kind in "iu":
        return rng.integers(int(low), int(high), shape).astype(dtype)
    if np.dtype(dtype) == np.bool_:
        return rng.random(shape) > 0.5
    return rng.uniform(low, high, shape).astype(dtype)


@dataclass(frozen=True)
class Arg:
    shape: tuple
    dtype: object = np.float64
    low: float = -2.0
    high: float = 2.0


@dataclass(frozen=True)
class RuleCase:
    """A per-example function of ``args``, batched with each tuple of ``in_axes``."""

    name: str
    fun: object
    args: tuple
    in_axes: tuple

    def arguments(self, rng, axes):
        return [
            batch_of(rng, a.shape, ax, a.dtype, a.low, a.high)
            for a, ax in zip(self.args, axes, strict=True)
        ]


RULES: list[RuleCase] = []


def rule(name, args, *in_axes):
    def register(fun):
        RULES.append(RuleCase(name, fun, tuple(args), in_axes))
        return fun

    return register


# ------------------------------------------------------------------ elementwise

POSITIVE_ONLY = {"log", "log1p", "sqrt", "rsqrt", "pow"}
INTEGER_ONLY = {"not", "and", "or", "xor", "shift_left", "shift_right_arithmetic"}


def _operand(name):
    if name in INTEGER_ONLY:
        return Arg((4,), np.int64, -5, 5)
    if name in POSITIVE_ONLY:
        return Arg((4,), np.float64, 0.5, 2.0)
    if name in ("div", "rem"):
        return Arg((4,), np.float64, 0.5, 2.0)
    return Arg((4,), np.float64)


for _name in UNARY:
    rule(_name, [_operand(_name)], (0,), (-1,))(lambda x, _p=PRIMITIVES[_name]: bind(_p, x))

for _name in [*BINARY, *COMPARISONS]:
    rule(_name, [_operand(_name)] * 2, (0, 0), (None, 0), (1, None), (0, -1))(
        lambda x, y, _p=PRIMITIVES[_name]: bind(_p, x, y)
    )


@rule("rank0_broadcast", [Arg((4,)), Arg(())], (0, 0), (None, 0), (1, None), (-1, 0))
def _rank0(x, s):  # a per-example scalar meets a per-example vector
    return lax.atan2(x, s), lax.mul(s, s)


@rule("integer_pow", [Arg((4,))], (0,))
def _integer_pow(x):
    return lax.integer_pow(x, 3)


@rule(
    "threefry2x32",
    [Arg((4,), np.int64, -5, 5), Arg((), np.int64, 0, 9)],
    (0, None), (None, 0), (0, 0), (-1, 0),
)  # fmt: skip
def _threefry2x32(counts, key):  # four operands, two of them rank 0 per example
    threefry = PRIMITIVES["threefry2x32"]
    mixed = bind(threefry, key, np.int64(3), np.int64(0), counts, output="bits64")
    return mixed, bind(threefry, counts, key, counts, key, output="xor")


@rule(
    "select", [Arg((4,), np.bool_), Arg((4,)), Arg(())], (0, None, None), (None, 0, 0), (1, 0, None)
)
def _select(p, x, s):
    return lax.select(p, x, lax.broadcast_in_dim(s, (4,), ()))


@rule("select_rank0_predicate", [Arg((), np.bool_), Arg((4,)), Arg((4,))], (0, None, 0), (0, 0, 1))
def _select_rank0(p, x, y):
    return lax.select(p, x, y)


@rule("convert_and_stop_gradient", [Arg((2, 3))], (1,))
def _convert(x):
    return lax.convert_element_type(lax.stop_gradient(x), np.int32)


# ------------------------------------------------------------------- structural


@rule("broadcast_in_dim", [Arg((3,))], (0,), (1,))
def _broadcast(x):
    return lax.broadcast_in_dim(x, (2, 3, 4), (1,))


@rule("reshape_transpose", [Arg((2, 3, 4))], (1,), (-1,))
def _reshape(x):
    return lax.reshape(lax.transpose(x, (2, 0, 1)), (4, 6))


@rule("squeeze_expand_dims", [Arg((1, 3))], (1,), (0,))
def _squeeze(x):
    return lax.expand_dims(lax.squeeze(x, (0,)), (0, 2))


@rule("slice", [Arg((5, 4))], (0,), (2,))
def _slice(x):
    return lax.slice(x, (1, 0), (5, 3), (2, 1))


@rule("pad", [Arg((3, 2)), Arg(())], (0, None), (0, 0), (None, 0), (-1, 0))
def _pad(x, value):
    return lax.pad(x, value, ((1, 2), (0, 1)))


@rule("concatenate", [Arg((2, 3)), Arg((1, 3))], (0, None), (None, 1), (1, 0))
def _concatenate(x, y):
    return lax.concatenate([x, y, x], 0)


@rule("iota", [Arg((2, 3))], (1,))
def _iota(x):
    return lax.add(x, lax.iota(np.float64, (2, 3), 1))


@rule("reductions", [Arg((3, 4))], (0,), (1,), (-1,))
def _reductions(x):
    return (
        lax.reduce_sum(x, (1,)),
        lax.reduce_max(x, (0, 1)),
        lax.reduce_min(x, (0,)),
        lax.reduce_prod(x, (1,)),
        lax.argmax(x, 1),
        lax.argmin(x, 0, np.int32),
        lax.cumsum(x, 1),
        lax.cumsum(x, 0, reverse=True),
    )


@rule("sort", [Arg((3, 4)), Arg((3, 4), np.int64, -2, 2)], (0, 0), (1, None), (None, -1))
def _sort(x, keys):
    # Ties in the integer keys: a stable sort by (keys, x) moves both together.
    return lax.sort([keys, x], 1, True, 1), lax.sort(x, 0), lax.sort([keys, x], 0, True, 2)


@rule("dot_general_matvec", [Arg((3, 4)), Arg((4,))], (0, None), (None, 0), (0, 0), (1, -1))
def _matvec(a, v):
    return lax.dot_general(a, v, (((1,), (0,)), ((), ())))


@rule("dot_general_batched", [Arg((2, 3, 4)), Arg((2, 4, 5))], (0, None), (None, 2), (1, 1))
def _batched_matmul(a, b):
    return lax.dot_general(a, b, (((2,), (1,)), ((0,), (0,))))


# --------------------------------------------------------------------- indexing

INDEX = Arg((2, 2), np.int64, -1, 7)  # some out of range: gather/scatter clamp


@rule("gather", [Arg((5, 3)), INDEX], (0, None), (None, 0), (1, 0), (2, -1))
def _gather(x, idx):
    return lax.gather(x, idx, 0), lax.gather(x, lax.reshape(idx, (4,)), 1)


@rule("scatter_add", [Arg((5, 3)), INDEX, Arg((2, 2, 3))],
      (0, None, None), (None, 0, None), (None, None, 0), (0, 0, 0), (1, 2, -1))  # fmt: skip
def _scatter_add(x, idx, updates):
    return lax.scatter(x, idx, updates, 0, "add")


@rule("scatter_set_axis1", [Arg((3, 5)), Arg((2,), np.int64, 0, 5), Arg((3, 2))],
      (0, None, 0), (None, 0, None), (1, 0, 0))  # fmt: skip
def _scatter_set(x, idx, updates):
    distinct = lax.concatenate([idx[:1], lax.rem(lax.add(idx[:1], np.int64(1)), np.int64(5))], 0)
    return lax.scatter(x, distinct, updates, 1, "set")


START = Arg((), np.int64, -2, 8)


@rule("dynamic_slice", [Arg((6, 4)), START, START], (0, None, None), (None, 0, None), (1, 0, 0))
def _dynamic_slice(x, i, j):
    return lax.dynamic_slice(x, [i, j], (3, 2))


@rule("dynamic_update_slice", [Arg((6, 4)), Arg((3, 2)), START, START],
      (0, None, None, None), (None, 0, None, None), (None, None, 0, 0), (0, 1, 0, 0))  # fmt: skip
def _dynamic_update_slice(x, update, i, j):
    return lax.dynamic_update_slice(x, update, [i, j])


# ------------------------------------------------------------ calls and control flow


@numbax.jit(backend="interpret")
def _jitted(x, y):
    return np.sin(x) * y


@rule("jit_call", [Arg((4,)), Arg(())], (0, None), (None, 0))
def _jit_call(x, s):
    return _jitted(x, s) + 1.0


_EXAMPLE = numbax.make_jaxpr(lambda x, s: (np.tanh(x) * s, s + 1.0))(np.ones(4), 1.0).jaxpr


@rule("checkpoint_and_kernel", [Arg((4,)), Arg(())], (0, None), (None, 0), (0, 0))
def _checkpoint(x, s):
    a, b = bind(checkpoint_p, x, s, jaxpr=_EXAMPLE)
    c, d = bind(kernel_p, a, b, jaxpr=_EXAMPLE, kind="elementwise", name="tanh_mul")
    return c, d


_SIN = numbax.make_jaxpr(np.sin)(np.ones(4)).jaxpr
_SIN_FWD = numbax.make_jaxpr(lambda x: (np.sin(x), np.cos(x)))(np.ones(4)).jaxpr
_SIN_BWD = numbax.make_jaxpr(lambda cos, ct: (cos * ct,))(np.ones(4), np.ones(4)).jaxpr


@rule("custom_vjp_call", [Arg((4,))], (0,))
def _custom_vjp(x):
    (out,) = bind(
        custom_vjp_call_p,
        x,
        jaxpr=_SIN,
        fwd_jaxpr=_SIN_FWD,
        bwd_jaxpr=_SIN_BWD,
        const_counts=(0, 0, 0),
    )
    return out


_SIN_JVP = numbax.make_jaxpr(lambda x, t: (np.sin(x), np.cos(x) * t))(np.ones(4), np.ones(4)).jaxpr


@rule("custom_jvp_call", [Arg((4,))], (0,))
def _custom_jvp(x):
    (out,) = bind(custom_jvp_call_p, x, jaxpr=_SIN, jvp_jaxpr=_SIN_JVP, const_counts=(0, 0))
    return out


@rule("switch", [Arg((), np.int64, -1, 4), Arg((4,)), Arg(())], (0, None, None), (None, 0, 0),
      (0, 0, None))  # fmt: skip
def _switch(i, x, s):
    branches = [lambda x, s: x * s, lambda x, s: x - 1.0, lambda x, s: np.sin(x) + s]
    return numbax.switch(i, branches, x, s)


@rule("cond_in_scan", [Arg((5, 2)), Arg(())], (0, None), (None, 0), (1, 0))
def _cond_in_scan(xs, threshold):
    def step(total, x):
        total = numbax.cond(x.sum() > threshold, lambda t: t + x, lambda t: t * 0.5, total)
        return total, total.sum()

    return numbax.scan(step, np.zeros(2), xs)


@rule("scan_reverse_consts", [Arg((4, 3)), Arg((3,))], (None, 0), (1, None), (0, 0))
def _scan_reverse(xs, w):
    return numbax.scan(lambda c, x: (c * w + x, c.sum()), np.ones(3), xs, reverse=True)


@rule("while_traced_bound", [Arg((), np.int64, 0, 6), Arg((3,))], (None, 0), (0, None), (0, 0))
def _while(n, x):
    return numbax.fori_loop(0, n, lambda i, acc: acc * 0.5 + x * i, np.zeros(3))


@rule("newton_sqrt", [Arg((), np.float64, 0.5, 50.0)], (0,))
def _newton(a):
    return numbax.while_loop(lambda x: np.abs(x * x - a) > 1e-9 * a, lambda x: 0.5 * (x + a / x), a)


@rule("debug_callback", [Arg((4,)), Arg(())], (0, None), (None, 0), (0, 0))
def _debug_callback(x, s):
    numbax.debug.callback(lambda x, s: None, x, s=s)
    return x * s


@rule("pure_callback", [Arg((4,)), Arg(())], (0, None), (None, 0), (1, 0))
def _pure_callback(x, s):
    result = numbax.ShapeDtypeStruct((4,), np.float64)
    return numbax.pure_callback(lambda x, s: np.sin(x) * s, result, x, s) + x


@rule("linalg", [Arg((3, 3)), Arg((3, 2))], (0, 0), (None, 1), (2, None), (-1, 0))
def _linalg(a, b):
    # Every factorization, one batched argument or both (a per-example matrix and a shared one).
    spd = la.matmul(a, la.mT(a)) + 4.0 * la.eye(3, a.dtype)
    lower = la.cholesky(spd)
    x = la.triangular_solve(lower, b, lower=True, transpose_a=True)
    packed, pivots, permutation = la.lu(a)
    q, r = la.qr(b, full_matrices=True)
    w, v = la.eigh(spd)
    u, s, vt = la.svd(b, full_matrices=False, compute_uv=True)
    return lower, x, packed, pivots, permutation, q, r, w, lax.abs(v), lax.abs(u), s, lax.abs(vt)


@rule("complex", [Arg((3, 4)), Arg((3, 4))], (0, 0), (None, 1), (1, None), (-1, 0))
def _complex(x, y):
    z = cx.make_complex(x, y)
    return cx.real_part(z * z), cx.imag_part(cx.conj(z) * x), lax.abs(z)


@rule("fft", [Arg((3, 8)), Arg((3, 5))], (0, 0), (None, 1), (2, None), (-1, 0))
def _fft(x, y):
    # Batched along a leading axis and along a transformed one (moved to the front).
    spectrum = fft_primitive(x, "rfft", (3, 8))
    back = fft_primitive(cx.make_complex(y, y * y), "irfft", (3, 8))
    both = fft_primitive(cx.make_complex(x, x), "fft", (8,))
    return cx.real_part(spectrum), back, cx.imag_part(fft_primitive(both, "ifft", (3, 8)))


def _prims(jaxpr: Jaxpr) -> set[str]:
    names = set()
    for eqn in jaxpr.eqns:
        names.add(eqn.prim.name)
        for value in eqn.params.values():
            for sub in value if isinstance(value, tuple) else (value,):
                if isinstance(sub, Jaxpr):
                    names |= _prims(sub)
    return names


@pytest.fixture
def interpret_backend(monkeypatch):
    """``jit_call``'s eager implementation compiles with the default backend."""
    monkeypatch.setattr(config, "backend", "interpret")


PARAMS = [(c, axes) for c in RULES for axes in c.in_axes]


@pytest.mark.usefixtures("interpret_backend")
@pytest.mark.parametrize(
    "case,in_axes", PARAMS, ids=[f"{c.name}-{','.join(map(str, a))}" for c, a in PARAMS]
)
def test_batching_rule_matches_a_loop_over_examples(case, in_axes, rng):
    check(case.fun, case.arguments(rng, in_axes), in_axes)


def test_every_batching_rule_is_exercised_by_a_rule_case(rng):
    covered = set()
    for case in RULES:
        example = [batch_of(rng, a.shape, None, a.dtype, a.low, a.high) for a in case.args]
        covered |= _prims(numbax.make_jaxpr(case.fun)(*example).jaxpr)
    assert not set(PRIMITIVES) - covered, f"untested: {sorted(set(PRIMITIVES) - covered)}"


def test_a_primitive_without_a_rule_is_an_error(monkeypatch):
    cumsum = PRIMITIVES["cumsum"]
    without = {prim: rule for prim, rule in BATCH_RULES._rules.items() if prim is not cumsum}
    monkeypatch.setattr(BATCH_RULES, "_rules", without)
    with pytest.raises(BatchingError, match="'cumsum' has no batching rule"):
        numbax.vmap(lambda x: np.cumsum(x))(np.ones((2, 3)))


# ------------------------------------------------------------------------ corpus


def _corpus_params():
    return [pytest.param(c, id=c.name) for c in CASES]


@pytest.mark.parametrize("case", _corpus_params())
def test_corpus_program_batched_matches_a_loop(case, rng):
    signature = case.signatures[0]
    examples = [case.arguments(signature, rng) for _ in range(SIZE)]
    in_axes = tuple(None if a.values == PYTHON else 0 for a in signature)
    args = [
        examples[0][k] if ax is None else np.stack([e[k] for e in examples])
        for k, ax in enumerate(in_axes)
    ]
    expected = [case.oracle(*[e[k] if ax is not None else args[k] for k, ax in enumerate(in_axes)])
                for e in examples]  # fmt: skip
    expected = numbax.tree_map(lambda *xs: np.stack([np.asarray(x) for x in xs]), *expected)
    got = numbax.vmap(case.fn, in_axes=in_axes)(*args)
    assert_tree_matches(got, expected, case.tolerance * 100, case.name)


# ------------------------------------------------------------------ the transform


def mlp(params, x):
    (w1, b1), (w2, b2) = params
    return np.tanh(x @ w1 + b1) @ w2 + b2


def test_pytree_in_axes_and_out_axes(rng):
    params = ((rng.normal(size=(3, 5)), rng.normal(size=5)), (rng.normal(size=(5, 2)), 0.5))
    xs = rng.normal(size=(4, 3))

    def fn(params, x):
        out = mlp(params, x)
        return {"out": out, "norm": (out * out).sum()}

    in_axes = (((None, None), (None, None)), 0)
    got = numbax.vmap(fn, in_axes=in_axes, out_axes={"out": 1, "norm": 0})(params, xs)
    for i, x in enumerate(xs):
        want = fn(params, x)
        np.testing.assert_allclose(got["out"][:, i], want["out"], rtol=1e-12)
        np.testing.assert_allclose(got["norm"][i], want["norm"], rtol=1e-12)


def test_keyword_arguments_map_over_axis_0_and_python_scalars_stay_weak(rng):
    x, y = rng.normal(size=(3, 2)).astype(np.float32), rng.normal(size=(3, 2))
    got = numbax.vmap(lambda x, s, y: x * s + y.sum(), in_axes=(1, None))(x.T, 2.5, y=y)
    np.testing.assert_allclose(got, x * 2.5 + y.sum(1, keepdims=True), rtol=1e-6)
    assert numbax.vmap(lambda x, s: x * s, in_axes=(0, None))(x, 2.5).dtype == np.float32


def test_out_axes_none_and_unbatched_outputs(rng):
    x = rng.normal(size=(3, 4))
    const, batched = numbax.vmap(lambda x: (np.float64(2.0), x + 1), out_axes=(None, -1))(x)
    assert const == 2.0
    np.testing.assert_array_equal(batched, (x + 1).T)
    broadcast = numbax.vmap(lambda x: np.ones(2))(x)
    np.testing.assert_array_equal(broadcast, np.ones((3, 2)))
    with pytest.raises(BatchingError, match="out_axes is None"):
        numbax.vmap(lambda x: x * 2, out_axes=None)(x)


def test_inconsistent_sizes_and_bad_axes_are_errors():
    with pytest.raises(BatchingError, match="different sizes"):
        numbax.vmap(lambda a, b: a + b)(np.ones(3), np.ones(4))
    with pytest.raises(BatchingError, match="out of range"):
        numbax.vmap(lambda a: a, in_axes=2)(np.ones((3, 4)))
    with pytest.raises(BatchingError, match="no argument is mapped"):
        numbax.vmap(lambda a: a, in_axes=None)(np.ones(3))
    with pytest.raises(BatchingError, match="in_axes has 1 entries"):
        numbax.vmap(lambda a, b: a, in_axes=(0,))(np.ones(3), np.ones(3))


def test_nested_vmap_is_an_outer_operation(rng):
    x, y = rng.normal(size=(3, 4)), rng.normal(size=(5, 4))
    pairwise = numbax.vmap(numbax.vmap(lambda a, b: ((a - b) ** 2).sum(), (None, 0)), (0, None))
    np.testing.assert_allclose(
        pairwise(x, y), ((x[:, None, :] - y[None, :, :]) ** 2).sum(-1), rtol=1e-12
    )


@pytest.mark.usefixtures("interpret_backend")
def test_vmap_of_jit_and_jit_of_vmap(rng):
    params = ((rng.normal(size=(3, 5)), rng.normal(size=5)), (rng.normal(size=(5, 2)), 0.5))
    xs = rng.normal(size=(4, 3))
    expected = np.stack([mlp(params, x) for x in xs])
    per_example = numbax.jit(mlp, backend="interpret")
    vmap_of_jit = numbax.vmap(per_example, in_axes=(None, 0))
    np.testing.assert_allclose(vmap_of_jit(params, xs), expected, rtol=1e-12)
    assert "jit_call" in _prims(numbax.make_jaxpr(vmap_of_jit)(params, xs).jaxpr)
    jit_of_vmap = numbax.jit(numbax.vmap(mlp, in_axes=(None, 0)), backend="interpret")
    np.testing.assert_allclose(jit_of_vmap(params, xs), expected, rtol=1e-12)
    shifted = np.stack([mlp(params, x + 1) for x in xs])
    np.testing.assert_allclose(jit_of_vmap(params, xs + 1), shifted, rtol=1e-12)
    assert jit_of_vmap.cache_info().traces == 1


def test_per_example_gradients_of_an_mlp_loss(rng):
    grad = getattr(numbax, "grad", None)
    if grad is None:
        pytest.skip("numbax.grad does not exist yet (the autodiff transform is not merged)")

    def loss(params, x, y):
        return ((mlp(params, x) - y) ** 2).sum()

    params = ((rng.normal(size=(3, 5)), rng.normal(size=5)), (rng.normal(size=(5, 2)), 0.5))
    xs, ys = rng.normal(size=(4, 3)), rng.normal(size=(4, 2))
    batched = numbax.vmap(grad(loss), in_axes=(None, 0, 0))(params, xs, ys)
    expected = [grad(loss)(params, x, y) for x, y in zip(xs, ys, strict=True)]
    stacked = numbax.tree_map(lambda *gs: np.stack(gs), *expected)
    numbax.tree_map(lambda g, w: np.testing.assert_allclose(g, w, rtol=1e-10), batched, stacked)


def recurrent_loss(w, xs):
    def step(h, x):
        h = np.tanh(h * w + x)
        return h, h

    h, hs = numbax.scan(step, 0.0 * w, xs)
    return numbax.cond(h.sum() > 0, lambda a: (a * a).sum(), lambda a: -a.sum(), hs)


def test_vmap_and_grad_compose_through_scan_and_cond(rng, backend):
    w, xs = rng.normal(size=3), rng.normal(size=(4, 5, 3))
    expected = np.stack([numbax.grad(recurrent_loss)(w, x) for x in xs])
    per_example = numbax.vmap(numbax.grad(recurrent_loss), in_axes=(None, 0))
    np.testing.assert_allclose(per_example(w, xs), expected, rtol=1e-12)
    jitted = numbax.jit(per_example, backend=backend)
    np.testing.assert_allclose(backend.to_host(jitted(w, xs)), expected, rtol=1e-12)
    batch_loss = lambda w: numbax.vmap(recurrent_loss, in_axes=(None, 0))(w, xs).sum()
    np.testing.assert_allclose(numbax.grad(batch_loss)(w), expected.sum(0), rtol=1e-12)


def test_vmap_of_jvp_through_a_batched_while_loop(backend):
    def newton_sqrt(a):
        return numbax.while_loop(
            lambda x: np.abs(x * x - a) > 1e-12 * a, lambda x: 0.5 * (x + a / x), a
        )

    a = np.array([2.0, 9.0, 30.0])  # lanes that converge after different trip counts
    batched = numbax.vmap(lambda a: numbax.jvp(newton_sqrt, (a,), (1.0,)))
    for run in (batched, numbax.jit(batched, backend=backend)):
        roots, slopes = backend.to_host(run(a))
        np.testing.assert_allclose(roots, np.sqrt(a), rtol=1e-12)
        np.testing.assert_allclose(slopes, 0.5 / np.sqrt(a), rtol=1e-9)
