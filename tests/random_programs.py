"""Random well-typed NumPy programs, drawn with Hypothesis: the one generator that the
pass tests (``tests/passes/test_random_programs.py``) and the differential fuzzer
(``tests/test_differential_fuzz.py``) share.

A program is drawn while it runs: each step picks an operation and operands among the
values computed so far (elementwise maths, broadcasting, scalar and array constants,
NaN-sensitive identities, reductions over random axes, reshapes, transposes, matmuls and
matmul epilogues read by several consumers, selects, nested jit calls, integer and
boolean detours, indexing, ``cond``, ``fori_loop`` bodies updating their carry in place),
and it returns one to three outputs, an input or a repeated output among them. Inputs are
float32 or float64, sometimes with size-0 and size-1 dimensions, and sometimes hold NaN,
infinities and signed zeros.

The choices are recorded on the first run and replayed on every later one
(:class:`Choices`), so the same program can run under plain NumPy, be traced by ``jit``
and be differentiated.
"""

from __future__ import annotations

import numpy as np
import switches
from hypothesis import strategies as st

import numbax
from numbax.tracer.control_flow import cond, fori_loop

SHAPES = [(3, 4), (4,), (2, 3, 4), (1, 4), (3, 1), ()]
EDGE_SHAPES = [(0,), (2, 0), (0, 3), (1,), (1, 1)]  # size-0 and size-1 dimensions
# ``NUMBAX_FUZZ_WIDE=1`` adds rows long enough for the cpu backend's loops of 8 to 256
# iterations (opaque bounds), and of 1 KiB and more (prefetched rows), beside the others.
WIDE_SHAPES = [(5, 16), (16,), (2, 3, 16), (9, 64), (64,), (7, 257), (257,)]
WIDE = switches.flag("NUMBAX_FUZZ_WIDE")
# ``NUMBAX_FUZZ_LARGE=1`` adds real sizes, the paths only large arrays take: matrices of
# hundreds per side (matrix products of 2^23 flops and more run on all threads, as one
# threaded BLAS call or split into blocks of rows), rows of 10^5 elements, and a million
# elements or more (kernels of 2^20 elements run their loops in prange; outputs of 32 MiB
# and more are written into the arrays the executable keeps, ``OutputPool``).
LARGE_SHAPES = [(300, 300), (200, 210), (1, 210), (100_000,), (3, 90, 300), (1100, 1000)]
LARGE_SHAPES += [((32 << 20) // 8 + 7,)]  # 32 MiB in float64, and twice it after a concat
LARGE = switches.flag("NUMBAX_FUZZ_LARGE")
# A product with a weight matrix as wide as its operand's rows (``_shared_product``), a
# Gram matrix (``_matmul``: n x n for n columns) and one line at a time (``_library``'s
# convolve) only up to this many columns and lines.
WIDEST_WEIGHTS, MOST_LINES = 512, 16
SCALARS = [0.0, -0.0, 1.0, -1.0, 2.0, 0.5, 3.0]
SPECIALS = [0.0, -0.0, np.nan, np.inf, -np.inf]


class Choices:
    """Hypothesis draws, recorded on the first run of a program and replayed on later
    runs, so that every run (NumPy, a trace, a derivative) is the same program."""

    def __init__(self, data):
        self.data = data
        self.recorded: list = []
        self.position = None  # None: recording

    def draw(self, strategy, label=None):
        if self.position is None:
            value = self.data.draw(strategy, label=label)
            self.recorded.append(value)
            return value
        value = self.recorded[self.position]
        self.position += 1
        return value

    def replay(self) -> None:
        self.position = 0


@numbax.jit(backend="interpret")  # tracing compiles it: keep that cheap
def _jitted_helper(v):
    return np.tanh(v) * 2.0 + v


def _pick(data, values, where="operand"):
    return values[data.draw(st.integers(0, len(values) - 1), label=where)]


def _pair(data, values):
    """Two values whose shapes broadcast together (the second may be the first)."""
    a = _pick(data, values)
    partners = [v for v in values if _broadcastable(a.shape, v.shape)]
    return a, _pick(data, partners)


def _broadcastable(s, t) -> bool:
    try:
        np.broadcast_shapes(s, t)
        return True
    except ValueError:
        return False


def _unary(data, values):
    x = _pick(data, values)
    op = data.draw(
        st.sampled_from(
            ["tanh", "sin", "exp_tanh", "abs", "neg", "sqrt_abs", "square", "cube", "relu", "jit"]
        )
    )
    return {
        "tanh": np.tanh, "sin": np.sin, "exp_tanh": lambda v: np.exp(np.tanh(v)),
        "abs": np.abs, "neg": lambda v: -v, "sqrt_abs": lambda v: np.sqrt(np.abs(v)),
        "square": lambda v: v**2, "cube": lambda v: v**3.0,
        "relu": lambda v: np.maximum(v, 0.0), "jit": _jitted_helper,
    }[op](x)  # fmt: skip


def _binary(data, values):
    a, b = _pair(data, values)
    op = data.draw(st.sampled_from(["add", "sub", "mul", "div", "max", "where"]))
    if op == "add":
        return a + b
    if op == "sub":
        return a - b
    if op == "mul":
        return a * b
    if op == "div":
        return a / (1.0 + b * b)
    if op == "max":
        return np.maximum(a, b)
    return np.where(a > b, a, b)


def _with_constant(data, values):
    """Scalar constants (identities the simplifier must and must not apply), arrays."""
    x = _pick(data, values)
    c = data.draw(st.sampled_from(SCALARS))
    op = data.draw(
        st.sampled_from(
            ["add", "radd", "sub", "rsub", "mul", "div", "self_sub", "self_div", "array", "where"]
        )
    )
    if op == "array" and x.ndim:
        return x * np.linspace(-1.0, 1.0, x.shape[-1]).astype(x.dtype)
    if op == "where":
        return np.where(c > 1.0, x, -x)
    return {
        "add": lambda: x + c, "radd": lambda: c + x, "sub": lambda: x - c,
        "rsub": lambda: c - x, "mul": lambda: x * c, "div": lambda: x / 2.0,
        "self_sub": lambda: x - x, "self_div": lambda: x / x, "array": lambda: x * c,
    }[op]()  # fmt: skip


def _reduction(data, values):
    x = _pick(data, values)
    if x.ndim == 0:
        return x + 1.0
    axes = data.draw(st.lists(st.integers(0, x.ndim - 1), min_size=1, max_size=x.ndim, unique=True))
    keepdims = data.draw(st.booleans())
    op = data.draw(st.sampled_from(["sum", "max", "mean", "softmax"]))
    if any(x.shape[a] == 0 for a in axes) and op in ("max", "softmax"):
        op = "sum"  # NumPy refuses a maximum over nothing
    if op == "softmax":
        return numbax.nn.softmax(x, axis=axes[0])
    return getattr(np, op)(x, axis=tuple(axes), keepdims=keepdims)


def _layout(data, values):
    x = _pick(data, values)
    op = data.draw(st.sampled_from(["flatten", "lead1", "inner1", "transpose", "broadcast"]))
    if op == "flatten":
        return x.reshape(-1)
    if op == "lead1":
        return x[None]
    if op == "inner1" and x.ndim:
        return x.reshape(x.shape[:-1] + (1, x.shape[-1]))
    if op == "transpose" and x.ndim:
        return x.transpose(data.draw(st.permutations(range(x.ndim))))
    return np.broadcast_to(x, (2,) + x.shape)


def _weights(x, columns=3):
    return np.linspace(-1.0, 1.0, x.shape[-1] * columns).reshape(x.shape[-1], columns)


def _matmul(data, values):
    x = _pick(data, values)
    if x.ndim == 0:
        return x * x
    if x.ndim == 1:
        return x @ x
    op = data.draw(st.sampled_from(["weights", "gram"]))
    if op == "gram" and x.ndim == 2 and x.shape[1] <= WIDEST_WEIGHTS:  # (n, n): bounded
        return x.T @ x
    return x @ _weights(x).astype(x.dtype)


def _shared_product(data, values):
    """A matmul whose product several values read: its fused epilogue, a second
    elementwise consumer, and the product itself, next to an unrelated value that may
    be written in place (the epilogue must not take the product's buffer for it)."""
    x = _pick(data, values)
    if x.ndim == 0:
        return [x * x, x + 1.0]
    columns = x.shape[-1] if x.shape[-1] <= WIDEST_WEIGHTS else 3
    product = x @ _weights(x, columns=columns).astype(x.dtype)
    others = [v for v in values if _broadcastable(product.shape, v.shape)]
    other = _pick(data, others or [product])  # none but itself: a product of 3 columns
    return [other * 2.0, product * other, np.tanh(product) + product, product]


def _other(data, values):
    """Integer and boolean detours, iota, indexing, scans and control flow."""
    x = _pick(data, values)
    if x.ndim == 0:
        return cond(x > 0, lambda v: v * 2.0, lambda v: v - 1.0, x)
    op = data.draw(st.sampled_from(
        ["argmax", "arange", "take", "cumsum", "concat", "slice", "stencil", "strided", "cond",
         "int", "compare"]
    ))  # fmt: skip
    if x.shape[-1] == 0 and op in ("argmax", "take"):
        op = "cumsum"  # NumPy refuses both on an empty axis
    if op == "argmax":
        return np.argmax(x, axis=-1).astype(x.dtype)
    if op == "arange":
        return x * np.arange(x.shape[-1]).astype(x.dtype)
    if op == "take":
        return np.take(x, np.array([0, x.shape[-1] - 1, 0]), axis=-1)
    if op == "cumsum":
        return np.cumsum(x, axis=-1)
    if op == "concat":
        return np.concatenate([x, -x], axis=-1)
    if op == "slice":
        return x[..., 1:] if x.shape[-1] > 1 else x[..., :1]
    if op == "stencil":  # two windows of one value: fusion may recompute it for each
        return x[..., 1:] * 0.5 - x[..., :-1] if x.shape[-1] > 1 else x
    if op == "strided":
        return x[..., ::2] + x[..., 1::2][..., :1] if x.shape[-1] > 1 else x
    if op == "cond":
        return cond(x.sum() > 0, lambda v: np.tanh(v), lambda v: v * 0.5, x)
    if op == "int":
        return (x * 3.0).astype(np.int32).astype(np.float64).astype(x.dtype)
    return np.where((x > 0.5) | (x < -0.5), x, 0.0).astype(x.dtype)


def _library(data, values):
    """NumPy's library functions beyond the ufuncs: scans, contractions of a value with
    itself, convolution along the last axis, writes through put_along_axis, membership."""
    x = _pick(data, values)
    if x.ndim == 0:
        return np.cumulative_sum(x[None], include_initial=True)
    op = data.draw(st.sampled_from(
        ["cumulative", "vecdot", "trapezoid", "convolve", "put_along_axis", "isin", "unwrap"]
    ), label="library")  # fmt: skip
    if op == "cumulative":
        return np.cumulative_sum(x, axis=-1, include_initial=True)
    if op == "vecdot":
        return np.vecdot(x, x * 0.5 + 1.0)
    if op == "trapezoid":
        return np.trapezoid(x, dx=0.5, axis=-1)
    if op == "convolve":
        lines = x.reshape(-1, x.shape[-1]) if x.size else x.reshape(1, -1)
        if lines.shape[-1] == 0 or lines.shape[0] > MOST_LINES:
            return x
        # As long as the line at most ("same" keeps its length), in the value's dtype.
        kernel = np.array([0.25, 0.5, -0.75], x.dtype)[: lines.shape[-1]]
        return np.stack([np.convolve(line, kernel, "same") for line in lines]).reshape(x.shape)
    if op == "put_along_axis":
        if x.shape[-1] == 0:
            return x
        y = x.copy()
        first = np.zeros(x.shape[:-1] + (1,), np.int64)
        np.put_along_axis(y, first, np.take(x, [-1], axis=-1) * 2.0, axis=-1)
        return y
    if op == "isin":
        return np.where(np.isin(x, [0.0, 1.0, -2.0]), x, 1.5).astype(x.dtype)
    return np.unwrap(x, axis=-1)


def _loop(data, values):
    """A ``fori_loop`` carrying a value through drawn updates, in place as NumPy writes
    them (a window from its neighbour, a three-point stencil, the row at the loop index)
    or not (scaling, a value from outside the loop): the loops that update their carry
    in place and fuse their body. Sometimes it carries two values and swaps them each
    step, the updated one first, and returns both."""
    x = _pick(data, values)
    outside = _pick(data, [v for v in values if _fits(v.shape, x.shape)], "outside")
    trips = data.draw(st.integers(0, 4), label="trips")
    kinds = ["scale", "outside", "window", "stencil", "row"]
    updates = data.draw(st.lists(st.sampled_from(kinds), min_size=1, max_size=3), label="body")

    def updated(i, c):
        c = c.copy()
        for update in updates:
            if update == "window" and c.ndim and c.shape[-1] > 1:
                c[..., 1:] = c[..., :-1] * 0.5 + c[..., 1:]
            elif update == "stencil" and c.ndim and c.shape[-1] > 2:
                c[..., 1:-1] = (c[..., :-2] + c[..., 2:]) * 0.5
            elif update == "row" and c.ndim and c.shape[0]:
                row = i % c.shape[0]
                c[row] = c[row] * 0.5 + 1.0
            elif update == "outside":
                c = c * 0.5 + outside
            else:
                c = c * 0.5 + 1.0
        return c

    if data.draw(st.booleans(), label="two carries swapped"):
        pair = fori_loop(0, trips, lambda i, cd: (updated(i, cd[1]), cd[0]), (x, x * 0.25))
        return list(pair)
    return fori_loop(0, trips, updated, x)


def _fits(s, t) -> bool:
    """Whether shape ``s`` broadcasts to shape ``t`` (leaving ``t`` as it is)."""
    return _broadcastable(s, t) and np.broadcast_shapes(s, t) == tuple(t)


STEPS = [
    _unary, _binary, _with_constant, _reduction, _layout, _matmul, _shared_product, _other,
    _library, _loop,
]  # fmt: skip


def program(data, n_steps: int, max_outputs: int = 2):
    """A function of the inputs, drawn step by step; its outputs are the last value and
    up to ``max_outputs - 1`` more values drawn among all of them (inputs included)."""

    def run(*inputs):
        values = list(inputs)
        for _ in range(n_steps):
            step = data.draw(st.sampled_from(STEPS), label="step")
            made = step(data, values)
            values.extend(made if isinstance(made, list) else [made])
        extras = (
            data.draw(st.integers(1, max_outputs - 1), label="outputs") if max_outputs > 1 else 0
        )
        return (values[-1], *(_pick(data, values, "extra output") for _ in range(extras)))

    return run


def inputs(data, dtype, edge_shapes: bool = False, most_elements: int | None = None):
    """One to three arrays of random shapes (with ``edge_shapes``, size-0 and size-1
    dimensions too; of at most ``most_elements`` each where given), holding NaN,
    infinities and signed zeros when drawn so."""
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    shapes = SHAPES + (EDGE_SHAPES if edge_shapes else []) + (WIDE_SHAPES if WIDE else [])
    shapes += LARGE_SHAPES if LARGE else []
    if most_elements is not None:
        shapes = [s for s in shapes if np.prod(s, dtype=np.int64) <= most_elements]
    drawn = data.draw(st.lists(st.sampled_from(shapes), min_size=1, max_size=3), label="shapes")
    specials = data.draw(st.booleans(), label="specials")
    arrays = []
    for shape in drawn:
        array = rng.standard_normal(shape) * 2.0
        if specials and array.size:
            flat = array.reshape(-1)
            flat[rng.integers(0, flat.size, 2)] = rng.choice(SPECIALS, 2)
        arrays.append(np.asarray(array, dtype))
    return arrays
