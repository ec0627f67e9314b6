"""Every differentiable primitive's JVP and VJP rule against finite differences.

``PROGRAMS`` holds, per primitive, small programs that exercise it (written with
``numbax.lax``-style wrappers, so the primitive appears as is) over several shapes,
broadcasting and reductions over chosen axes. A test fails when a differentiable
primitive has no rule in either table, or no program here.
"""

from __future__ import annotations

import numpy as np
import pytest
from finite_differences import check_derivatives

import numbax
from numbax.ir import PRIMITIVES
from numbax.numpy_lib import numpy_complex as cx
from numbax.numpy_lib.numpy_fft import fft_primitive
from numbax.tracer import lax
from numbax.tracer import lax_linalg as la

F64 = np.float64


def normal(*shape):
    return lambda rng: rng.standard_normal(shape)


def positive(*shape):
    return lambda rng: rng.uniform(0.5, 2.0, shape)


def nonzero(*shape):
    return lambda rng: rng.uniform(0.5, 2.0, shape) * rng.choice([-1.0, 1.0], shape)


def fixed(value):
    return lambda rng: np.asarray(value)


def grid(*shape):
    """Multiples of 1/64: exact in float32, as are steps of 2**-10 around them."""
    return lambda rng: rng.integers(-128, 128, shape) / 64.0


UNARY = {
    "neg": normal, "exp": normal, "log": positive, "log1p": positive, "expm1": normal,
    "sin": normal, "cos": normal, "tanh": normal, "logistic": normal, "sqrt": positive,
    "rsqrt": positive, "abs": nonzero, "erf": normal,
}  # fmt: skip
BINARY = {
    "add": (normal, normal), "sub": (normal, normal), "mul": (normal, normal),
    "div": (normal, nonzero), "pow": (positive, normal), "max": (normal, normal),
    "min": (normal, normal), "atan2": (normal, normal), "rem": (positive, positive),
}  # fmt: skip
BINARY_SHAPES = [((3, 4), (3, 4)), ((), (2, 3)), ((2, 3), ())]

# name -> list of (program, argument makers, finite-difference step)
PROGRAMS: dict[str, list] = {name: [] for name in PRIMITIVES}


def program(name, *makers, step=1e-5):
    def register(fn):
        PROGRAMS[name].append((fn, makers, step))
        return fn

    return register


for _name, _kind in UNARY.items():
    _op = getattr(lax, _name)
    PROGRAMS[_name] += [(_op, (_kind(3, 4),), 1e-5), (_op, (_kind(),), 1e-5)]
for _name, (_kind_x, _kind_y) in BINARY.items():
    _op = getattr(lax, _name)
    PROGRAMS[_name] += [(_op, (_kind_x(*a), _kind_y(*b)), 1e-5) for a, b in BINARY_SHAPES]
for _y in (0, 1, 2, 3, -2):
    PROGRAMS["integer_pow"].append((lambda x, y=_y: lax.integer_pow(x, y), (nonzero(2, 3),), 1e-5))


@program(
    "max",
    normal(
        3,
    ),
)
def _max_tie(x):
    return lax.max(x, x) * 2.0  # ties: each side gets half, the sum is exact


@program(
    "select",
    fixed([True, False, True]),
    normal(
        3,
    ),
    normal(
        3,
    ),
)
@program("select", fixed([[True], [False]]), normal(2, 1), normal(2, 1))
def _select(pred, a, b):
    return lax.select(pred, a * a, lax.sin(b))


@program(
    "select",
    fixed([True, False, True]),
    normal(),
    normal(
        3,
    ),
)
def _select_scalar_branch(pred, a, b):
    return lax.select(pred, a, b * b)


@program("convert_element_type", grid(2, 3), step=2.0**-10)
def _convert_float(x):
    # float64 -> float32 -> float64 on a grid where float32 is exact.
    return lax.convert_element_type(
        lax.mul(lax.convert_element_type(x, np.float32), np.float32(3.0)), F64
    )


@program(
    "convert_element_type",
    normal(
        4,
    ),
)
def _convert_to_int(x):
    # Through an integer: piecewise constant, zero derivative.
    return lax.convert_element_type(lax.convert_element_type(x * 10.0, np.int64), F64) + x


@program(
    "broadcast_in_dim",
    normal(
        3,
    ),
)
def _broadcast_new_axis(x):
    return lax.broadcast_in_dim(x, (2, 3), (1,)) * lax.iota(F64, (2, 3), 0)


@program("broadcast_in_dim", normal(3, 1), normal())
def _broadcast_stretch(x, s):
    return lax.broadcast_in_dim(x, (2, 3, 4), (1, 2)) * lax.iota(
        F64, (2, 3, 4), 2
    ) + lax.broadcast_in_dim(s, (2, 3, 4), ())


@program("reshape", normal(2, 6))
def _reshape(x):
    return lax.sin(lax.reshape(x, (3, 4)))


@program("transpose", normal(2, 3, 4))
def _transpose(x):
    return lax.transpose(x, (2, 0, 1)) * lax.iota(F64, (4, 2, 3), 0)


@program("squeeze", normal(1, 3, 1))
def _squeeze(x):
    return lax.sin(lax.squeeze(x, (0, 2)))


@program(
    "expand_dims",
    normal(
        3,
    ),
)
def _expand_dims(x):
    return lax.sin(lax.expand_dims(x, (0, 2)))


@program("slice", normal(5, 7))
def _slice(x):
    return lax.sin(lax.slice(x, (1, 0), (5, 7), (1, 3)))


@program(
    "slice",
    normal(
        6,
    ),
)
def _slice_unit(x):
    return lax.slice(x, (2,), (4,)) * 3.0


@program("dynamic_slice", normal(5, 4), fixed(np.int64(1)), fixed(np.int64(3)))
def _dynamic_slice(x, i, j):
    return lax.sin(lax.dynamic_slice(x, (i, j), (2, 2)))


@program("dynamic_update_slice", normal(4, 4), normal(2, 3), fixed(np.int64(2)))
def _dynamic_update_slice(x, update, i):
    return lax.sin(lax.dynamic_update_slice(x, update * update, (i, np.int64(0))))


@program("gather", normal(4, 3), fixed([[0, 2], [2, 3]]))
@program("gather", normal(4, 3), fixed([1, 1, 0, 2]))
def _gather(x, indices):
    return lax.sin(lax.gather(x, indices, 1 if indices.ndim == 1 else 0))


for _mode in ("add", "set", "max", "min"):
    PROGRAMS["scatter"].append(
        (
            lambda x, indices, updates, mode=_mode: lax.sin(
                lax.scatter(x, indices, updates, 0, mode)
            ),
            (normal(4, 3), fixed([2, 0, 2]), normal(3, 3)),
            1e-5,
        )
    )
    PROGRAMS["scatter"].append(
        (
            lambda x, indices, updates, mode=_mode: lax.scatter(x, indices, updates, 1, mode) * 2.0,
            (normal(2, 4), fixed([[3], [1]]), normal(2, 2, 1)),
            1e-5,
        )
    )


@program("concatenate", normal(2, 3), normal(2, 1), normal(2, 2))
def _concatenate(a, b, c):
    return lax.sin(lax.concatenate([a, b, c], 1))


@program("pad", normal(2, 3), normal())
def _pad(x, value):
    return lax.sin(lax.pad(x, value, ((1, 2), (0, 1))))


@program("reduce_sum", normal(2, 3, 4))
def _reduce_sum(x):
    return lax.reduce_sum(lax.sin(x), (0, 2)), lax.reduce_sum(x, (1,)), lax.reduce_sum(x, (0, 1, 2))


@program("reduce_max", normal(3, 4))
@program("reduce_min", normal(3, 4))
def _reduce_chooser(x):
    return lax.reduce_max(x, (1,)) + lax.reduce_min(x, (0, 1)), lax.reduce_min(lax.sin(x), (0,))


@program("reduce_max", fixed([[1.0, 3.0, 3.0], [2.0, -1.0, 0.5]]))
@program("reduce_min", fixed([[1.0, -3.0, -3.0], [2.0, -1.0, 0.5]]))
def _reduce_chooser_tie(x):
    # Tied entries share the derivative equally: exactly what central differences see.
    return lax.reduce_max(x, (1,)) + lax.reduce_min(x, (1,))


@program("reduce_prod", normal(3, 4))
@program("reduce_prod", fixed([[0.0, 2.0, 3.0], [0.0, 0.0, 1.5], [1.0, 2.0, -1.0]]))
def _reduce_prod(x):
    # With one zero, two zeros, none in a row; products are multilinear, so central
    # differences are exact even at the zeros.
    return lax.reduce_prod(x, (1,)), lax.reduce_prod(x, (0, 1))


@program("cumsum", normal(3, 4))
def _cumsum(x):
    return lax.sin(lax.cumsum(x, 1)), lax.cumsum(x, 0, reverse=True)


@program("sort", normal(3, 4), normal(3, 4))
def _sort(x, y):
    # Sorted by x with y riding along, and y sorted on its own along the other axis.
    by_x = lax.sort([x, y], 1)
    return lax.sin(by_x[0]) * by_x[1], lax.sort(y * x, 0)


DOT_CASES = [
    ((3, 4), (4, 5), (((1,), (0,)), ((), ()))),
    ((2, 3, 4), (2, 4, 5), (((2,), (1,)), ((0,), (0,)))),
    ((4, 2, 3), (3, 5, 4), (((0, 2), (2, 0)), ((), ()))),
    ((3, 2, 4), (4, 2, 5), (((2,), (0,)), ((1,), (1,)))),
    ((4,), (4,), (((0,), (0,)), ((), ()))),
    ((3,), (2,), (((), ()), ((), ()))),
]
for _lhs, _rhs, _dims in DOT_CASES:
    PROGRAMS["dot_general"].append(
        (lambda a, b, dims=_dims: lax.dot_general(a, b, dims), (normal(*_lhs), normal(*_rhs)), 1e-5)
    )


_jitted = numbax.jit(lambda x, y: lax.sin(x) * y + x)


@program(
    "jit_call",
    normal(
        3,
    ),
    normal(
        3,
    ),
)
def _jit_call(x, y):
    return _jitted(x, y) * x


_checkpointed = numbax.checkpoint(lambda x, y: lax.tanh(x * y) * x)


@program(
    "checkpoint",
    normal(
        3,
    ),
    normal(
        3,
    ),
)
def _checkpoint(x, y):
    return _checkpointed(x, y) + lax.sin(y)


@numbax.custom_vjp
def _sin_times(x, y):
    return lax.sin(x) * y


_sin_times.defvjp(
    lambda x, y: (lax.sin(x) * y, (lax.cos(x), lax.sin(x), y)),
    lambda res, ct: (ct * res[0] * res[2], ct * res[1]),
)


@program(
    "custom_vjp_call",
    normal(
        3,
    ),
    normal(
        3,
    ),
)
def _custom_vjp(x, y):
    return _sin_times(x * x, y) * 2.0


@numbax.custom_jvp
def _tanh_times(x, y):
    return lax.tanh(x) * y


@_tanh_times.defjvp
def _tanh_times_jvp(primals, tangents):
    (x, y), (tx, ty) = primals, tangents
    tanh = lax.tanh(x)
    return tanh * y, (1.0 - tanh * tanh) * y * tx + tanh * ty


@program(
    "custom_jvp_call",
    normal(
        3,
    ),
    normal(
        3,
    ),
)
def _custom_jvp(x, y):
    return _tanh_times(x * x, y) * 2.0


@program(
    "cond",
    normal(
        3,
    ),
    normal(
        3,
    ),
)
def _cond(x, y):
    def positive(x, y):
        return lax.sin(x) * y, x

    def negative(x, y):
        return x * y * y, lax.exp(y)

    # Both branches are taken across the corpus of random draws; each is checked by the
    # program below with fixed predicates.
    return numbax.cond(lax.reduce_sum(x, (0,)) > 0, positive, negative, x, y)


@program(
    "cond",
    normal(
        2,
    ),
    fixed(np.int32(0)),
)
@program(
    "cond",
    normal(
        2,
    ),
    fixed(np.int32(2)),
)
def _switch(x, index):
    return numbax.switch(index, [lambda x: lax.sin(x) * x, lambda x: x, lambda x: lax.exp(x)], x)


@program(
    "while",
    normal(
        3,
    ),
    normal(
        3,
    ),
)
def _while(x, y):
    def body(carry):
        i, value = carry
        return i + 1, lax.sin(value) * y + value

    return numbax.while_loop(lambda carry: carry[0] < 4, body, (0, x))[1]


@program(
    "scan",
    normal(
        3,
    ),
    normal(4, 3),
    normal(),
)
def _scan(init, xs, w):
    def step(carry, x):
        return lax.tanh(carry * w + x), lax.sin(carry) * x

    return numbax.scan(step, init, xs)


@program(
    "scan",
    normal(
        2,
    ),
    normal(3, 2),
)
def _scan_reverse(init, xs):
    return numbax.scan(lambda c, x: (c * x, c + x * x), init, xs, reverse=True)


@program(
    "scan",
    normal(
        2,
    ),
)
def _fori_loop(x):
    return numbax.fori_loop(0, 3, lambda i, v: lax.sin(v) * (i + 1.0), x)


# --- linear algebra: stacks of matrices, square, tall and wide -----------------------------


def _spd(x):
    """A positive-definite stack from any square stack (its upper triangle is read too)."""
    return la.matmul(x, la.mT(x)) + 4.0 * la.eye(x.shape[-1], x.dtype, x.shape[:-2])


PROGRAMS["cholesky"].append((lambda x: la.cholesky(_spd(x) + x * 0.5), (normal(2, 3, 3),), 1e-5))
# (lower, transpose_a, unit_diagonal)
_TRIANGULAR = [(True, False, False), (False, True, False), (True, True, True), (False, False, True)]
for _flags in _TRIANGULAR:
    PROGRAMS["triangular_solve"].append(
        (
            lambda a, b, f=_flags: la.triangular_solve(
                _spd(a), b, lower=f[0], transpose_a=f[1], unit_diagonal=f[2]
            ),
            (normal(2, 3, 3), normal(2, 3, 2)),
            1e-5,
        )
    )
PROGRAMS["lu"].append((lambda x: la.lu(x)[0], (normal(2, 4, 4),), 1e-5))
for _shape, _full in [((2, 4, 3), False), ((3, 3), True), ((2, 3, 5), False), ((2, 5), True)]:
    PROGRAMS["qr"].append((lambda x, f=_full: la.qr(x, full_matrices=f), (normal(*_shape),), 1e-5))
PROGRAMS["eigh"].append((la.eigh, (normal(2, 4, 4),), 1e-6))
for _shape, _uv in [((2, 4, 3), True), ((3, 5), True), ((3, 3), True), ((2, 3, 4), False)]:
    PROGRAMS["svd"].append(
        (
            lambda x, uv=_uv: la.svd(x, full_matrices=False, compute_uv=uv),
            (normal(*_shape),),
            1e-6,
        )
    )

# Complex primitives, in programs from real arguments to real results (the oracle's
# finite differences are real): each is checked as the real map of the parts it is.
_C = cx.make_complex
PROGRAMS["complex"].append(
    (lambda x, y: cx.real_part(_C(x, y) * _C(y, x)), (normal(3), normal(3)), 1e-5)
)
PROGRAMS["complex"].append(
    (lambda x, y: cx.imag_part(_C(x, y) * _C(x, y)), (normal(2, 3), normal()), 1e-5)
)
PROGRAMS["real"].append(
    (lambda x, y: cx.real_part(lax.exp(_C(x, y))), (normal(4), normal(4)), 1e-5)
)
PROGRAMS["real"].append((lambda x: cx.real_part(x * x), (normal(3),), 1e-5))  # of a real operand
PROGRAMS["imag"].append(
    (lambda x, y: cx.imag_part(lax.sin(_C(x, y)) * _C(y, x)), (normal(4), normal(4)), 1e-5)
)
PROGRAMS["conj"].append(
    (lambda x, y: cx.imag_part(cx.conj(_C(x, y)) * _C(y, x * x)), (normal(4), normal(4)), 1e-5)
)
PROGRAMS["abs"].append((lambda x, y: lax.abs(lax.log(_C(x, y))), (nonzero(5), nonzero(5)), 1e-5))
PROGRAMS["convert_element_type"].append(
    (
        lambda x: cx.imag_part(lax.convert_element_type(x, np.complex128) * _C(x, x * x)),
        (normal(3),),
        1e-5,
    )
)


def _parts(z):
    return cx.real_part(z), cx.imag_part(z)


for _n in (7, 8):
    PROGRAMS["fft"] += [
        (
            lambda x, y, n=_n: _parts(fft_primitive(_C(x, y), "fft", (n,))),
            (normal(2, _n), normal(2, _n)),
            1e-5,
        ),
        (
            lambda x, y, n=_n: _parts(fft_primitive(_C(x, y), "ifft", (n,))),
            (normal(_n), normal(_n)),
            1e-5,
        ),
        (lambda x, n=_n: _parts(fft_primitive(x * x, "rfft", (n,))), (normal(3, _n),), 1e-5),
        (
            lambda x, y, n=_n: fft_primitive(_C(x, y), "irfft", (n,)),
            (normal(2, _n // 2 + 1), normal(2, _n // 2 + 1)),
            1e-5,
        ),
    ]
PROGRAMS["fft"] += [
    (lambda x: _parts(fft_primitive(x, "rfft", (3, 4))), (normal(2, 3, 4),), 1e-5),
    (lambda x, y: fft_primitive(_C(x, y), "irfft", (3, 5)), (normal(3, 3), normal(3, 3)), 1e-5),
    (
        lambda x, y: _parts(fft_primitive(_C(x, y), "fft", (2, 3, 2))),
        (normal(2, 3, 2), normal(2, 3, 2)),
        1e-5,
    ),
]


CASES = [(name, k, *entry) for name, entries in PROGRAMS.items() for k, entry in enumerate(entries)]


@pytest.mark.parametrize(
    ("name", "k", "fn", "makers", "step"), CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES]
)
def test_rule_matches_finite_differences(name, k, fn, makers, step, rng):
    args = [make(rng) for make in makers]
    # Reverse mode through a while loop is refused (see test_while_loop_reverse_mode).
    check_derivatives(fn, args, rng, step=step, reverse=name != "while")


def differentiable_primitives():
    return [p for name, p in PRIMITIVES.items() if p.differentiable and name != "kernel"]


# Primitives whose rules refuse with a GradientError naming the fix instead of
# differentiating (a Python callback): tests/tracer/test_debug.py checks the refusal.
REFUSED = {"pure_callback"}


def test_every_differentiable_primitive_has_a_check():
    # That each has both rules is tests/test_rule_tables.py's check of every table.
    unchecked = [
        p.name
        for p in differentiable_primitives()
        if not PROGRAMS.get(p.name) and p.name not in REFUSED
    ]
    assert not unchecked, f"no finite-difference program for {unchecked}"


def test_non_differentiable_primitives_give_zero():
    x = np.array([0.3, -1.7, 2.2])

    def f(x):
        kinks = lax.floor(x) + lax.ceil(x) + lax.round(x) + lax.sign(x) + lax.stop_gradient(x)
        picked = lax.convert_element_type(lax.argmax(x, 0), F64)
        return lax.reduce_sum(kinks * x, (0,)) + picked

    constant = np.floor(x) + np.ceil(x) + np.round(x) + np.sign(x) + x
    np.testing.assert_array_equal(numbax.grad(f)(x), constant)


def test_while_loop_reverse_mode_raises():
    def f(x):
        return numbax.while_loop(lambda v: v < 10.0, lambda v: v * 2.0, x)

    with pytest.raises(numbax.GradientError, match="while_loop"):
        numbax.grad(f)(1.0)


def test_scatter_multiply_has_no_derivative_yet():
    def f(x):
        return lax.reduce_sum(lax.scatter(x, np.array([0, 0]), x[:2] * 2.0, 0, "mul"), (0,))

    with pytest.raises(numbax.UnsupportedFunctionError, match="'mul'"):
        numbax.grad(f)(np.ones(3))
    with pytest.raises(numbax.UnsupportedFunctionError, match="'mul'"):
        numbax.jvp(f, (np.ones(3),), (np.ones(3),))
