"""The view fuzzer: random views of an argument, written and read in place inside a
jitted function, give NumPy's results and leave NumPy's values in the caller's array.

Hypothesis draws a function as Python source (printed with a failing example): views of
the argument and of each other (basic slices with steps, negative ones included, ``.T``
and axis permutations, reshapes of contiguous views, flips, rows), copies taken before
the writes (``.copy()``, ``np.copy``, ``np.array``, ``astype``), fresh values, and writes
into views, copies and fresh values: ``v[...] = expr``, ``v[index] = expr``, ``v += expr``,
``np.copyto(v, w)`` and ufuncs with ``out=v`` whose sources overlap ``v`` (``v[::-1]``,
``np.flip(v)``, ``v.T``, the view's parent), ``v[...] = alpha * a @ W + beta * v``, and
NumPy's other writers (``fill``, ``put``, masks, integer-array indices, ``clip``,
``cumsum``, ``sum`` and ``matmul`` into ``out=``, ``sort``, ``fill_diagonal``).
It returns copies, fresh values, expressions, views and the argument itself.

The argument is contiguous or a strided, reversed or transposed view of a larger array
(the caller's array, whose every element is compared). Sometimes the function takes a
second argument: a view of the same array or a copy. numbax refuses a call exactly where
its rule allows (``functionalize.refuse_aliased_writes``): the function writes into an
argument and the two arguments share memory; the refused call writes nothing. Every
other call must give NumPy's answer (a call the rule allows refusing may be answered
instead, as where the only write is ``np.copyto(A, A)``: NumPy's answer, then).

The oracle is the same function run by NumPy on a copy of the caller's array. Each
function is jitted tiered (called twice, then once more after ``wait_compiled``) and
``tiered=False`` (twice), each call on a fresh copy; after each call every result is
checked to share no memory with the caller's array or another result and is written
into, and the caller's array must keep NumPy's values.

The default run is small. ``NUMBAX_FUZZ_EXAMPLES=N`` draws N functions per test and
backend; ``NUMBAX_FUZZ_LARGE=1`` draws half of them at real sizes (matrices up to 300 x
300, rows up to 10^5), where the cpu backend's parallel loops and large matrix products
run.
"""

from __future__ import annotations

import linecache
import math
import zlib

import numpy as np
import pytest
import switches
from hypothesis import HealthCheck, event, given, note, settings
from hypothesis import strategies as st
from random_programs import LARGE

import numbax
from numbax.backends.cpu import program as cpu_program
from numbax.ir.errors import InPlaceUpdateError

EXAMPLES = switches.count("NUMBAX_FUZZ_EXAMPLES", 12)
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    print_blob=True,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.function_scoped_fixture,
    ],
)
TOLERANCE = {np.dtype(np.float64): 1e-9, np.dtype(np.float32): 2e-4}
SENTINEL = -1234.5


class Handle:
    """A name in the drawn function, with a probe array standing for it: views of the
    probe of the caller's array where the name is a view of an argument, an array of its
    own where it is a copy or a fresh value. Probes give shapes, layouts and overlaps."""

    def __init__(self, name: str, probe: np.ndarray, root: str | None):
        self.name, self.probe, self.root = name, probe, root


class Program:
    """The drawn function's source lines, its names, and which arguments it writes."""

    def __init__(self, draw, arguments: dict[str, np.ndarray], scalars: tuple[str, str]):
        self.draw = draw
        self.scalars = scalars  # alpha and beta: argument names, or literals
        self.lines: list[str] = []
        self.handles = [Handle(name, probe, name) for name, probe in arguments.items()]
        self.written: set[str] = set()
        self.count = 0

    def new(self, expression: str, probe: np.ndarray, root: str | None) -> Handle:
        self.count += 1
        handle = Handle(f"{'v' if root else 'c'}{self.count}", probe, root)
        self.lines.append(f"{handle.name} = {expression}")
        self.handles.append(handle)
        return handle

    def pick(self, handles=None, label="handle") -> Handle:
        handles = self.handles if handles is None else handles
        return handles[self.draw(st.integers(0, len(handles) - 1), label=label)]

    def write(self, target: Handle, line: str) -> None:
        self.lines.append(line)
        if target.root is not None:
            self.written.add(target.root)


# --- views --------------------------------------------------------------------------------


def _slice(draw, n: int) -> slice:
    """A basic slice of an axis of ``n`` elements that selects at least one of them
    (where it has one)."""
    step = draw(st.sampled_from([1, 1, 2, 3, -1, -2]))
    if n == 0:
        return slice(None, None, step)
    start = draw(st.integers(0, n - 1))
    if draw(st.booleans()):
        return slice(start, None, step)
    stop = draw(st.integers(-1, n))
    drawn = slice(start, None if stop == -1 else stop, step)
    return drawn if len(range(*drawn.indices(n))) else slice(None, None, step)


def _slice_source(s: slice) -> str:
    parts = ["" if s.start is None else str(s.start), "" if s.stop is None else str(s.stop)]
    return ":".join(parts) + ("" if s.step in (None, 1) else f":{s.step}")


def _index(draw, shape) -> tuple[str, tuple]:
    """A basic index of an array of ``shape`` (slices, sometimes an integer on the first
    axis), as source and as the index itself."""
    index = []
    for axis, n in enumerate(shape):
        if axis == 0 and len(shape) > 1 and n and draw(st.integers(0, 3)) == 0:
            index.append(draw(st.integers(-n, n - 1)))
        else:
            index.append(_slice(draw, n))
    source = ", ".join(str(i) if isinstance(i, int) else _slice_source(i) for i in index)
    return source or "...", tuple(index)


def _view_of(program: Program, of: Handle) -> None:
    draw, probe = program.draw, of.probe
    kinds = ["slice", "flip", "reverse", "identity"] + (["slice"] if probe.ndim else [])
    if probe.ndim >= 2:
        kinds += ["transpose", "permute"]
    if probe.flags.c_contiguous and probe.size > 1:
        kinds += ["reshape"]
    kind = draw(st.sampled_from(kinds), label="view")
    name = of.name
    if kind == "slice" and probe.ndim:
        source, index = _index(draw, probe.shape)
        program.new(f"{name}[{source}]", probe[index], of.root)
    elif kind == "flip" and probe.ndim:
        axis = draw(st.integers(0, probe.ndim - 1))
        program.new(f"np.flip({name}, {axis})", np.flip(probe, axis), of.root)
    elif kind == "reverse" and probe.ndim:
        program.new(f"{name}[::-1]", probe[::-1], of.root)
    elif kind == "transpose":
        program.new(f"{name}.T", probe.T, of.root)
    elif kind == "permute":
        axes = tuple(draw(st.permutations(range(probe.ndim))))
        program.new(f"np.transpose({name}, {axes})", np.transpose(probe, axes), of.root)
    elif kind == "reshape":
        shape = _factored(draw, probe.size)
        program.new(f"{name}.reshape({shape})", probe.reshape(shape), of.root)
    else:
        # np.asarray(traced) is refused by design (tests/tracer/test_errors.py).
        source = draw(st.sampled_from([f"{name}[...]", f"{name}[:]"]))
        program.new(source, probe[...], of.root)


def _factored(draw, size: int) -> tuple:
    """A shape of ``size`` elements: flat, or two or three factors."""
    divisors = [d for d in range(1, size + 1) if size % d == 0]
    first = draw(st.sampled_from(divisors), label="rows")
    if draw(st.booleans()):
        return (size,) if draw(st.booleans()) else (first, size // first)
    rest = [d for d in divisors if (size // first) % d == 0]
    second = draw(st.sampled_from(rest), label="columns")
    return (first, second, size // first // second)


# --- values read ------------------------------------------------------------------------------


def _operand(program: Program, shape, label="source", accept=None) -> tuple[str, np.ndarray]:
    """Source that reads a name (as it is, reversed, flipped or transposed) whose shape
    broadcasts to ``shape``: often the target itself or a view overlapping it."""
    options = []
    for handle in program.handles:
        p, name = handle.probe, handle.name
        forms = [(name, p)]
        if p.ndim:
            forms += [(f"{name}[::-1]", p[::-1]), (f"np.flip({name})", np.flip(p))]
        if p.ndim >= 2:
            forms += [(f"{name}.T", p.T)]
        accepted = accept or (lambda q: _broadcasts_to(q.shape, shape))
        options += [(s, q) for s, q in forms if accepted(q)]
    if not options:
        return "1.5", np.empty(())
    return options[program.draw(st.integers(0, len(options) - 1), label=label)]


def _broadcasts_to(s, t) -> bool:
    try:
        return np.broadcast_shapes(s, t) == tuple(t)
    except ValueError:
        return False


def _expression(program: Program, shape) -> str:
    """A value of ``shape`` (or broadcasting to it) computed from the names."""
    source, _ = _operand(program, shape)
    kinds = ["read", "affine", "scaled", "sin", "sum", "neg"]
    kind = program.draw(st.sampled_from(kinds), label="expr")
    if kind == "read":
        return source
    if kind == "affine":
        return f"{source} * 0.5 + 1.0"
    if kind == "scaled":
        return f"{program.scalars[1]} * {source}"
    if kind == "sin":
        return f"np.sin({source})"
    if kind == "neg":
        return f"-{source}"
    other, _ = _operand(program, shape, "second source")
    return f"{source} * 0.5 - {other}"


# --- statements -------------------------------------------------------------------------------


def _statement(program: Program) -> None:
    draw = program.draw
    kind = draw(
        st.sampled_from(
            ["view", "view", "copy", "fresh", "set", "set_index", "inplace", "copyto", "out"]
            + ["gemm", "library", "library"]
        ),
        label="statement",
    )
    if kind == "view":
        return _view_of(program, program.pick())
    if kind == "copy":
        of = program.pick()
        form = draw(
            st.sampled_from(["{}.copy()", "np.copy({})", "np.array({})", "{}.astype({}.dtype)"])
        )
        program.new(form.format(of.name, of.name), of.probe.copy(), None)
        return None
    if kind == "fresh":
        of = program.pick()
        form = draw(st.sampled_from(["{} * 2.0 - 1.0", "np.cos({})", "{} + 0.0", "{} * 1"]))
        program.new(form.format(of.name), np.empty_like(of.probe), None)
        return None
    target = program.pick(label="target")
    t, shape = target.name, target.probe.shape
    if kind == "set":
        return program.write(target, f"{t}[...] = {_expression(program, shape)}")
    if kind == "set_index" and target.probe.ndim:
        source, index = _index(draw, shape)
        value = _expression(program, target.probe[index].shape)
        return program.write(target, f"{t}[{source}] = {value}")
    if kind == "inplace":
        op = draw(st.sampled_from(["+=", "-=", "*="]))
        value = _expression(program, shape) if op != "*=" else "-0.5"
        return program.write(target, f"{t} {op} {value}")
    if kind == "copyto":
        source, _ = _operand(program, shape)
        return program.write(target, f"np.copyto({t}, {source})")
    if kind == "gemm" and target.probe.ndim == 2:
        return _gemm(program, target)
    if kind == "library" and target.probe.size:
        return _library_write(program, target)
    ufunc = draw(st.sampled_from(["add", "subtract", "multiply", "negative", "positive"]))
    first, _ = _operand(program, shape)
    if ufunc in ("negative", "positive"):
        return program.write(target, f"np.{ufunc}({first}, out={t})")
    second, _ = _operand(program, shape, "second source")
    return program.write(target, f"np.{ufunc}({first}, {second}, out={t})")


def _gemm(program: Program, target: Handle) -> None:
    """``t[...] = alpha * a @ b + beta * t``: NPBench's gemm, ``a`` any name with ``t``'s
    rows (``t`` itself included), ``b`` a name (or its transpose) of the right shape or
    fixed weights, scaled by the depth so that repeated products stay small."""
    rows, columns = target.probe.shape
    lhs = [h for h in program.handles if h.probe.ndim == 2 and h.probe.shape[0] == rows]
    a = program.pick(lhs, "lhs")
    k = a.probe.shape[1]
    rhs = [f"np.linspace(-1.0, 1.0, {k * columns}).reshape({k}, {columns})"]
    for h in program.handles:
        if h.probe.shape == (k, columns):
            rhs.append(h.name)
        if h.probe.ndim == 2 and h.probe.T.shape == (k, columns):
            rhs.append(f"{h.name}.T")
    b = rhs[program.draw(st.integers(0, len(rhs) - 1), label="rhs")]
    alpha, beta = program.scalars
    t = target.name
    program.write(target, f"{t}[...] = {alpha} * {a.name} @ ({b} / {k}) + {beta} * {t}")


def _library_write(program: Program, target: Handle) -> None:
    """A write by a NumPy function or method other than a ufunc: fills, ``put``, a mask,
    an integer-array index with a repeated row (NumPy updates it once), ``clip``,
    ``cumsum`` and ``sum`` into ``out=``, an in-place ``sort`` and ``matmul(out=)``;
    their sources may overlap the target."""
    t, probe = target.name, target.probe
    kinds = ["fill", "put", "mask", "fancy", "clip", "sort", "cumsum", "sum"]
    kinds += ["fill_diagonal", "matmul"] if probe.ndim == 2 else []
    kind = program.draw(st.sampled_from(kinds), label="library")
    n = probe.shape[0] if probe.ndim else 1
    same = lambda q: q.shape == probe.shape  # noqa: E731
    if kind == "fill":
        line = f"{t}.fill(2.5)"
    elif kind == "put":
        line = f"np.put({t}, [0, {probe.size - 1}], [1.0, -2.0])"
    elif kind == "mask" and probe.ndim:
        source, _ = _operand(program, probe.shape, "mask source", same)
        line = f"{t}[{source} > 0.0] = -1.0" if source != "1.5" else f"{t}[{t} > 0.0] = -1.0"
    elif kind == "fancy" and probe.ndim:
        line = f"{t}[[0, {n - 1}, 0]] += 1.0"
    elif kind == "clip":
        source, _ = _operand(program, probe.shape)
        line = f"np.clip({source}, -0.5, 0.5, out={t})"
    elif kind == "sort" and probe.ndim:
        line = f"{t}.sort(axis=-1)"
    elif kind == "cumsum" and probe.ndim:
        source, _ = _operand(program, probe.shape, "cumsum source", same)
        line = f"np.cumsum({source if source != '1.5' else t}, axis=0, out={t})"
    elif kind == "sum" and probe.ndim:
        rows = lambda q: q.ndim == probe.ndim + 1 and q.shape[1:] == probe.shape  # noqa: E731
        source, _ = _operand(program, probe.shape, "sum source", rows)
        line = f"np.sum({source}, axis=0, out={t})" if source != "1.5" else f"{t}.fill(-0.25)"
    elif kind == "fill_diagonal":
        line = f"np.fill_diagonal({t}, -2.0)"
    elif kind == "matmul":
        rows, columns = probe.shape
        lhs = [h for h in program.handles if h.probe.ndim == 2 and h.probe.shape[0] == rows]
        a = program.pick(lhs, "lhs")
        k = a.probe.shape[1]
        b = f"np.linspace(-1.0, 1.0, {k * columns}).reshape({k}, {columns}) / {max(k, 1)}"
        line = f"np.matmul({a.name}, {b}, out={t})"
    else:
        line = f"{t}.fill(0.5)"
    program.write(target, line)


def _results(program: Program) -> str:
    """One to three results: names (views, copies, the argument itself) and expressions."""
    results = []
    for _ in range(program.draw(st.integers(1, 3), label="results")):
        handle = program.pick(label="result")
        form = program.draw(st.sampled_from(["{}", "{}", "{} * 1.5", "{}.sum()", "{}.T + 0"]))
        results.append(form.format(handle.name))
    return ", ".join(results) + ","


# --- the caller's arrays ----------------------------------------------------------------------


LAYOUTS = {
    # name: (the caller's array's shape from the argument's, the argument from it)
    "contiguous": (lambda s: s, lambda base: base),
    "every other row": (lambda s: (2 * s[0], *s[1:]), lambda base: base[::2]),
    "reversed rows": (lambda s: s, lambda base: base[::-1]),
    "transposed": (lambda s: s[::-1], lambda base: base.T),
    "reversed columns of wider": (lambda s: (*s[:-1], s[-1] + 3), lambda base: _narrower(base)),
}  # fmt: skip


def _narrower(base):
    """The last axis reversed from its next-to-last element, three elements short."""
    return base[..., -2::-1][..., : base.shape[-1] - 3]


SECOND = {
    # name: the second argument, from the caller's array and the first argument
    "a copy": lambda base, first: first.copy(),
    "the same array": lambda base, first: first,
    "its reverse": lambda base, first: first[::-1],
    "the caller's array": lambda base, first: base,
    "the other rows": lambda base, first: base[1::2] if base.shape[0] > 1 else base[:0],
    "its first row": lambda base, first: first[0] if first.ndim > 1 else first[:1],
}


LARGE_SIDES = {  # largest first: where Hypothesis draws its simplest examples
    1: [1_200_007, 1 << 20, 100_000, 4099, 1000],
    2: [300, 257, 210, 200, 100],
    3: [101, 60, 33, 20],
}


@st.composite
def programs(draw):
    """A drawn function's source, the caller's array, and how its arguments are made."""
    large = LARGE and draw(st.booleans(), label="large")
    dtype = np.dtype(draw(st.sampled_from([np.float64, np.float32]), label="dtype"))
    ndim = draw(st.sampled_from([1, 2, 2, 3]), label="ndim")
    # Real sizes from a list (integers drawn from a range stay near its low end): rows of
    # a million elements and more run the cpu backend's loops on all threads.
    sides = (
        st.sampled_from(LARGE_SIDES[ndim])
        if large
        else st.integers(*{1: (1, 24), 2: (1, 6), 3: (1, 4)}[ndim])
    )
    shape = tuple(draw(sides, label="side") for _ in range(ndim))
    layout = draw(st.sampled_from(sorted(LAYOUTS)), label="layout")
    second = draw(st.none() | st.sampled_from(sorted(SECOND)), label="second argument")
    base_shape, view = LAYOUTS[layout]
    probe_base = np.empty(base_shape(shape), dtype)
    arguments = {"A": view(probe_base)}
    if second is not None:
        arguments["B"] = SECOND[second](probe_base, arguments["A"])
    scalars = draw(st.sampled_from(["literals", "floats", "0-d arrays"]), label="alpha, beta")
    names = ("alpha", "beta") if scalars != "literals" else ("1.5", "0.5")
    program = Program(draw, arguments, names)
    for _ in range(draw(st.integers(1, 8), label="statements")):
        _statement(program)
    body = program.lines + [f"return {_results(program)}"]
    parameters = ", ".join([*arguments, *(["alpha", "beta"] if scalars != "literals" else [])])
    source = f"def fuzzed({parameters}):\n" + "".join(f"    {line}\n" for line in body)
    overlap = second is not None and np.shares_memory(*arguments.values())
    may_refuse = overlap and bool(program.written)
    seed = draw(st.integers(0, 2**32 - 1), label="seed")
    pooled = draw(st.booleans(), label="every output pooled")
    return source, dtype, base_shape(shape), (layout, second, scalars), may_refuse, seed, pooled


def _function(source: str):
    """The function defined by ``source``, with its lines where tracebacks look."""
    filename = f"<view fuzz {zlib.crc32(source.encode()):08x}>"  # one name per function
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace = {"np": np}
    exec(compile(source, filename, "exec"), namespace)
    return namespace["fuzzed"]


def _numpy_answer(fuzzed, start, how, aliased: bool):
    """NumPy's results, and the caller's array after NumPy's call.

    NumPy runs the function on contiguous copies of the arguments, written back into a
    copy of the caller's array afterwards. That is the same program wherever numbax must
    answer: the arguments do not overlap, or the function writes into neither. It keeps
    NumPy's own slips with strided operands out of the oracle (NumPy 2.4's float32
    ``np.negative(A, out=A)``, ``A`` a column of a row-reversed array (strides (16, -4)),
    negates a neighbouring element). Where the written arguments overlap (``aliased``:
    numbax may refuse, or give NumPy's answer) NumPy runs on the arguments themselves."""
    base = start.copy()
    arguments = _arguments(base, *how)
    if aliased:
        with np.errstate(all="ignore"):
            return fuzzed(*arguments), base
    views = [a for a in arguments[:2] if isinstance(a, np.ndarray) and a.ndim]
    copies = [np.array(view) for view in views]
    with np.errstate(all="ignore"):
        expected = fuzzed(*copies, *arguments[len(views) :])
    for view, copy in zip(views, copies, strict=True):
        view[...] = copy
    return expected, base


SCALARS = {"literals": (), "floats": (1.5, 0.5), "0-d arrays": (np.array(1.5), np.array(0.5))}


def _arguments(base, layout, second, scalars):
    """The arguments of a call: views of ``base`` (the caller's array), alpha and beta."""
    first = LAYOUTS[layout][1](base)
    arrays = (first,) if second is None else (first, SECOND[second](base, first))
    return arrays + SCALARS[scalars]


def _assert_close(got, want, dtype, what):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (what, got.shape, want.shape)
    assert got.dtype == want.dtype, (what, got.dtype, want.dtype)
    tolerance = TOLERANCE[dtype]
    finite = want[np.isfinite(want)]
    magnitude = float(np.max(np.abs(finite), initial=1.0))
    np.testing.assert_allclose(
        got, want, rtol=tolerance, atol=tolerance * magnitude, equal_nan=True, err_msg=what
    )


def _magnitude_of(count: int) -> str:
    """``count`` rounded down to a power of ten, for the run's statistics."""
    return f"10^{len(str(count)) - 1}+"


def _check_results(results, expected, base, dtype):
    """Results equal NumPy's, share no memory with the caller's array or each other, and
    writing into them changes neither the caller's array nor a sibling."""
    assert len(results) == len(expected)
    for i, (got, want) in enumerate(zip(results, expected, strict=True)):
        _assert_close(got, want, dtype, f"result {i}")
    arrays = [r for r in results if isinstance(r, np.ndarray)]
    for i, value in enumerate(arrays):
        assert not np.shares_memory(value, base), f"result {i} aliases the caller's array"
        for j, other in enumerate(arrays[:i]):
            assert not np.shares_memory(value, other), f"result {i} aliases result {j}"
    kept, before = [a.copy() for a in arrays], base.copy()
    for i, value in enumerate(arrays):
        assert value.flags.writeable, f"result {i} is read-only"
        value[...] = SENTINEL
        for j in range(i + 1, len(arrays)):
            np.testing.assert_array_equal(arrays[j], kept[j], err_msg=f"result {i} wrote {j}")
    np.testing.assert_array_equal(base, before, err_msg="writing a result changed the argument")


@FUZZ
@given(drawn=programs())
def test_views_written_in_place_give_numpys_results_and_arguments(backend, drawn):
    source, dtype, base_shape, how, may_refuse, seed, pooled = drawn
    note(source)
    note(f"caller's array {dtype}{list(base_shape)}, argument, second, alpha and beta: {how}")
    note(f"every output pooled: {pooled}")
    event(f"caller's array of {_magnitude_of(math.prod(base_shape))} elements")
    fuzzed = _function(source)
    start = (np.random.default_rng(seed).standard_normal(base_shape) * 2.0).astype(dtype)
    expected, numpy_base = _numpy_answer(fuzzed, start, how, aliased=may_refuse)

    def call(jitted):
        """One call on a fresh copy of the caller's array: its results, or None where
        the call was refused as the rule allows (and wrote nothing)."""
        base = start.copy()
        try:
            with np.errstate(all="ignore"):
                results = backend.to_host(jitted(*_arguments(base, *how)))
        except InPlaceUpdateError as error:
            if not (may_refuse and "shares memory" in str(error)):
                raise
            np.testing.assert_array_equal(base, start, err_msg="a refused call wrote")
            return None, base
        _assert_close(base, numpy_base, dtype, "the caller's array")
        return results, base

    with pytest.MonkeyPatch.context() as patch:
        if pooled:  # the cpu backend writes every output into arrays the executable keeps
            patch.setattr(cpu_program, "POOLED_FROM_BYTES", 0)
        for tiered in (True, False):
            jitted = numbax.jit(fuzzed, backend=backend, tiered=tiered)
            for number in range(3 if tiered else 2):
                if number == 2:
                    jitted.wait_compiled()
                results, base = call(jitted)
                if tiered and number == 0 and jitted.interpreted_calls:
                    event("the tiered first call interpreted")
                if results is not None:
                    _check_results(results, expected, base, dtype)
        held, _ = call(jitted)  # not written into: the next call must leave it as it is
        call(jitted)
    if held is not None:
        for i, (got, want) in enumerate(zip(held, expected, strict=True)):
            _assert_close(got, want, dtype, f"held result {i} after the next call")
