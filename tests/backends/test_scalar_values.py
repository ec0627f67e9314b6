"""Values of one element are Numba scalars in the CPU program (``backends/cpu/scalar_values``).

Rank-0 kernel outputs, loop carries and indices, ``cond`` operands and results, the
elements read by ``x[i]`` with a traced ``i`` and the one-element windows that
``x.at[j].set(v)`` writes are scalar locals, never 0-d arrays. The programs here run such
values through ``fori_loop``, ``while_loop``, ``scan`` and ``cond`` in every dtype that
behaves differently as a scalar (narrow integers wrap, bool is its own type, float32 must
not widen to float64) and are checked against NumPy run eagerly and against the
interpreter; the structural tests read the generated source (no allocation inside the
loops of a scalar recurrence) and Numba's types of the scalar locals (exactly their
dtypes: a carry that widened would still give the right dtype at the output).
"""

from __future__ import annotations

import re
from types import SimpleNamespace

import numpy as np
from numba.core.registry import CPUDispatcher as Dispatcher
from test_inplace_lowering import cpu_source

import numbax
from numbax.backends.cpu.scalar import storage_dtype
from numbax.ir import dtypes

rng = np.random.default_rng(11)

# Each behaves differently as a scalar: narrow integers wrap, int32 arithmetic is widened
# by Numba and cast back, float16 is held as its bits, float32 must not widen. (int64 and
# float64 are the loop indices and the seidel recurrence below.)
DTYPES = [np.int8, np.uint8, np.int32, np.float16, np.float32]


# --- the same program in NumPy (eager Python loops) and in numbax --------------------------


def _eager_while(cond, body, value):
    while cond(value):
        value = body(value)
    return value


def _eager_scan(step, carry, xs):
    ys = []
    for x in xs:
        carry, y = step(carry, x)
        ys.append(y)
    return carry, np.stack(ys)


def _eager_cond(predicate, on_true, on_false, *operands):
    return on_true(*operands) if predicate else on_false(*operands)


EAGER = SimpleNamespace(
    fori_loop=lambda low, high, body, value: _eager_loop(low, high, body, value),
    while_loop=_eager_while,
    scan=_eager_scan,
    cond=_eager_cond,
)
TRACED = SimpleNamespace(
    fori_loop=numbax.fori_loop, while_loop=numbax.while_loop, scan=numbax.scan, cond=numbax.cond
)


def _eager_loop(low, high, body, value):
    for i in range(low, high):
        value = body(i, value)
    return value


def recurrences(ops, seed, v):
    """Rank-0 recurrences of ``seed``'s dtype: a fori_loop whose carry reads ``v[i % n]``
    and a reduction of the carry, a while loop with an index, a value and a bool flag,
    and a scan whose step takes a ``cond`` on the row and emits rank-0 ys (narrow
    integers wrap, as NumPy's do)."""
    n = v.shape[0]
    factor = 3 if v.dtype.kind in "iu" else 0.5  # integers wrap, floats stay finite

    def point(i, c):
        c = c * factor + v[i % n]
        return c - (v - c).max()

    a = ops.fori_loop(0, 7, point, seed)

    def going(carry):
        k, _, _ = carry
        return k < 4

    def step(carry):
        k, c, flag = carry
        return k + 1, c - v[k] * 2, np.logical_not(flag)

    k, b, flag = ops.while_loop(going, step, (0, a, np.asarray(True)))

    def row(c, x):
        c = ops.cond(x > c, lambda c: c + x, lambda c: c - 1, c)
        return c, c * 2

    c, ys = ops.scan(row, b, v)
    return a, k, b, flag, c, ys


def bool_recurrences(ops, seed, v):
    """The same shapes of loop over bool: xor with ``v[i % n]``, a while loop counting
    flips, a scan whose ``cond`` picks between the carry and the row."""
    n = v.shape[0]
    a = ops.fori_loop(0, 7, lambda i, c: np.logical_xor(c, v[i % n]), seed)

    def going(carry):
        k, _ = carry
        return k < 3

    def flip(carry):
        k, c = carry
        return k + 1, np.logical_and(np.logical_not(c), v[k])

    k, b = ops.while_loop(going, flip, (0, a))

    def row(c, x):
        c = ops.cond(c, lambda c: np.logical_and(c, x), lambda c: np.logical_or(c, x), c)
        return c, np.logical_not(c)

    c, ys = ops.scan(row, b, v)
    return a, k, b, c, ys


def every_dtype(ops, *arrays):
    """``recurrences`` of each dtype in ``DTYPES`` and ``bool_recurrences``, in one program
    (one compile checks them all)."""
    pairs = [arrays[k : k + 2] for k in range(0, len(arrays), 2)]
    results = [recurrences(ops, seed, v) for seed, v in pairs[:-1]]
    return results + [bool_recurrences(ops, *pairs[-1])]


def every_dtype_inputs():
    arrays = []
    for dtype in DTYPES:
        values = rng.integers(-3, 4, 6) if np.dtype(dtype).kind == "i" else rng.integers(0, 5, 6)
        arrays += [np.asarray(values[0], dtype), values[1:].astype(dtype)]
    arrays += [np.asarray(False), rng.integers(0, 2, 5).astype(bool)]
    return arrays


def _numpy(fn, *arrays):
    with np.errstate(all="ignore"):  # narrow integers wrap, as in the compiled program
        return fn(EAGER, *[np.asarray(a) for a in arrays])


def _assert_same(got, want, what) -> None:
    got_leaves, _ = numbax.tree_flatten(got)
    want_leaves, _ = numbax.tree_flatten(want)
    assert len(got_leaves) == len(want_leaves)
    for k, (g, w) in enumerate(zip(got_leaves, want_leaves, strict=True)):
        g, w = np.asarray(g), np.asarray(w)
        message = f"{what}: result {k}"
        assert g.dtype == w.dtype and g.shape == w.shape, (message, g, w)
        if w.dtype.kind == "f":
            tolerance = {2: 2e-3, 4: 1e-5}.get(w.dtype.itemsize, 1e-12)
            np.testing.assert_allclose(g, w, rtol=tolerance, err_msg=message)
        else:
            np.testing.assert_array_equal(g, w, err_msg=message)


def _lowered(fn, *arrays):
    jitted = numbax.jit(lambda *xs: fn(TRACED, *xs))
    return jitted, jitted.lower(*arrays).compile()


# --- values -----------------------------------------------------------------------------


def test_rank0_recurrences_match_numpy_and_the_interpreter_in_every_dtype():
    arrays = every_dtype_inputs()
    jitted, executable = _lowered(every_dtype, *arrays)
    got = jitted(*arrays)
    interpreted = numbax.jit(lambda *xs: every_dtype(TRACED, *xs), backend="interpret")(*arrays)
    want = _numpy(every_dtype, *arrays)
    names = [np.dtype(d).name for d in DTYPES] + ["bool"]
    for name, g, i, w in zip(names, got, interpreted, want, strict=True):
        _assert_same(g, w, f"{name} against NumPy")
        _assert_same(g, i, f"{name} against the interpreter")
    # The scalars are exactly their dtypes in Numba's types of the program: an int8 carry
    # that widened to int64 or a float32 one to float64 would still give the right dtype
    # at the output, where the value is stored into an array of the output's dtype.
    _assert_exact_scalar_types(executable)


_SHORT_DTYPES = {
    dtypes.short_name(np.dtype(d)): np.dtype(d) for d in [*DTYPES, np.int64, np.float64, bool]
}


def _typemaps(function) -> list[dict]:
    """Numba's types of the locals of the program function and of every compiled
    function it calls (a large program is split into parts)."""
    functions = [function] + [
        value for value in function.py_func.__globals__.values() if isinstance(value, Dispatcher)
    ]
    return [
        f.overloads[signature].type_annotation.typemap
        for f in functions
        for signature in f.signatures
    ]


def _assert_exact_scalar_types(executable) -> None:
    """Every one-element kernel output (named in the kernels' headings) has its dtype's
    Numba scalar type, in each of Numba's SSA versions of the local."""
    types = {}
    for heading in re.findall(r"# kernel \d+: .* -> (.*)", executable.source):
        for name, short, shape in re.findall(r"(\w+):(\w+)\[([\d,]*)\]", heading):
            if all(n == "1" for n in shape.split(",") if n):
                types[name] = _SHORT_DTYPES[short]
    checked = set()
    for typemap in _typemaps(executable.function):
        for local, numba_type in typemap.items():
            dtype = types.get(local.split(".")[0])
            if dtype is not None:
                want = "bool" if dtype == np.bool_ else storage_dtype(dtype).name
                assert str(numba_type) == want, (local, numba_type, dtype)
                checked.add(local.split(".")[0])
    assert len(checked) > 40, "the program's scalar kernel outputs were not found"


# --- what a scalar recurrence compiles to ----------------------------------------------


def seidel_rows(a):
    """Gauss-Seidel along each row, in place (PolyBench's seidel-2d, three points): each
    point reads the one just written, so the point loop is a scalar recurrence."""
    n = a.shape[1]

    def row(i, a):
        known = a[i - 1, 1:-1] + a[i + 1, 1:-1] + a[i, 2:]

        def point(j, new_row):
            return new_row.at[j].set((new_row[j - 1] + known[j - 1]) / 3.0)

        return a.at[i].set(numbax.fori_loop(1, n - 1, point, a[i]))

    return numbax.fori_loop(1, a.shape[0] - 1, row, a)


def converge(x):
    """Fixed-point iteration until the largest change is small: the loop's condition is
    a reduction's rank-0 result."""

    def going(carry):
        y, previous, _ = carry
        return np.abs(y - previous).max() > 1e-9

    def step(carry):
        y, _, count = carry
        return np.cos(y), y, count + 1

    y, _, count = numbax.while_loop(going, step, (np.cos(x), x, 0))
    return y, count


def numpy_seidel_rows(a):
    a = a.copy()
    for i in range(1, a.shape[0] - 1):
        known = a[i - 1, 1:-1] + a[i + 1, 1:-1] + a[i, 2:]
        for j in range(1, a.shape[1] - 1):
            a[i, j] = (a[i, j - 1] + known[j - 1]) / 3.0
    return a


def numpy_converge(x):
    y, previous, count = np.cos(x), x, 0
    while np.abs(y - previous).max() > 1e-9:
        y, previous, count = np.cos(y), y, count + 1
    return y, count


def _loops(source: str) -> list[tuple[int, str, list[str]]]:
    """Each ``for``/``while`` of the program: its indentation, header and body's lines."""
    lines = [line for line in source.split("\n@njit", 1)[1].splitlines() if line.strip()]
    loops = []
    for k, line in enumerate(lines):
        if line.lstrip().startswith(("for ", "while ")):
            indent = len(line) - len(line.lstrip())
            body = []
            for inner in lines[k + 1 :]:
                if len(inner) - len(inner.lstrip()) <= indent:
                    break
                body.append(inner.strip())
            loops.append((indent, line.strip(), body))
    return loops


def test_a_scalar_recurrence_allocates_nothing_in_its_loops():
    a = rng.random((7, 9))
    x = rng.random(5)

    def program(a, x):
        return seidel_rows(a), converge(x)

    jitted = numbax.jit(program)
    got = jitted(a, x)
    want = (numpy_seidel_rows(a), numpy_converge(x))
    interpreted = numbax.jit(program, backend="interpret")(a, x)
    _assert_same(got, want, "against NumPy")
    _assert_same(got, interpreted, "against the interpreter")

    loops = _loops(cpu_source(program, a, x))  # the launcher, its kernels in place
    assert len(loops) >= 3
    for _, header, body in loops:  # no 0-d array anywhere in a loop
        assert not [line for line in body if "np.empty(()" in line], (header, body)
    # The point loop (the innermost of the nested fori_loops) is straight scalar code:
    # the wrapped indices, two loads, the value and one store; no allocation, no copy,
    # no loop over a one-element window.
    _, header, body = max(loop for loop in loops if loop[1].startswith("for step"))
    code = [line for line in body if not line.startswith("#")]
    assert not [line for line in code if "np.empty" in line or ".copy()" in line], code
    assert not [line for line in code if line.startswith(("for ", "while "))], code
    stores = [line for line in code if re.match(r"\w+\[[^\]]+\] = ", line)]
    assert len(stores) == 1, code


# --- scalars meeting ops that read or write arrays --------------------------------------


def scalars_meet_arrays(m, v, s):
    """Scalars in loops passed to ops that want arrays (a determinant, a callback, a sort,
    a gather, a concatenation, a dot product) and back, one-element arrays as carries and
    scan rows, a scan of one step, and a rank-0 argument read in a loop and a ``cond``."""
    det = numbax.fori_loop(0, 3, lambda i, c: c + np.linalg.det(m * c), 1.0)
    sine = numbax.fori_loop(
        0, 3, lambda i, c: numbax.pure_callback(np.sin, np.zeros(()), c) * v[i] + 1.0, 0.5
    )
    smallest = numbax.fori_loop(0, 2, lambda i, c: c + np.sort(v * c)[0], 1.0)
    gathered = numbax.fori_loop(0, 3, lambda i, c: c * v[np.array([1, 2])].sum() + v[i], 0.25)

    def shift(i, c):
        head = v[i] * 2.0
        return np.concatenate([head.reshape(1), c[:2]]) + np.stack([head, c[0], c[1]])

    shifted = numbax.fori_loop(0, 4, shift, np.zeros(3))
    norm = numbax.fori_loop(0, 3, lambda i, c: c + np.sqrt(v @ (v * c)), 1.0)
    window = numbax.fori_loop(0, 3, lambda i, c: c * 2.0 + v[:1], v[1:2] * 1.0)
    column, rows = numbax.scan(lambda c, r: (c + r.sum(), c * r), np.zeros(1), v.reshape(5, 1))
    first, once = numbax.scan(lambda c, r: (c + r, c * r), 0.0, v[:1])
    scaled = numbax.fori_loop(0, 4, lambda i, c: c * s + v[i], s)
    sign = numbax.cond(s > 0, lambda s: s, lambda s: -s, s)
    arrays = (det, sine, smallest, gathered, shifted, norm, window, column, rows, first, once)
    return arrays, scaled, sign


def test_scalars_meet_ops_that_want_arrays():
    m = rng.random((3, 3)) + 3.0 * np.eye(3)
    args = (m, rng.random(5), np.asarray(0.7))
    got = numbax.jit(scalars_meet_arrays)(*args)
    want = numbax.jit(scalars_meet_arrays, backend="interpret")(*args)
    _assert_same(got, want, "against the interpreter")
    _assert_same(got[0][0], _numpy_det_loop(m), "the determinant loop against NumPy")


def _numpy_det_loop(m):
    c = 1.0
    for _ in range(3):
        c = c + np.linalg.det(m * c)
    return np.asarray(c)
