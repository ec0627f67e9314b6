"""Functional updates lowered as in-place writes: a ``dynamic_update_slice`` or
``scatter`` whose operand dies at it writes into the operand's memory, in straight-line
code and on loop carries, and nowhere else.

Every case runs on each backend and is compared with NumPy run on copies of the same
inputs (results and the arguments afterwards); the structural tests read the memory plan
(``Liveness.in_place``, ``loop_ownership``) and the CPU's generated source, where an
in-place update is marked ``# in place`` and a copy is ``.copy()``.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import numbax
from numbax.backends.cpu import backend as cpu_backend
from numbax.benchmarks import kernels as benchmark_kernels
from numbax.passes.memory import Liveness

rng = np.random.default_rng(7)


# --- programs --------------------------------------------------------------------------


def window_chain(x):
    """Updates of an intermediate, each reading the one before: all in place."""
    y = x * 2.0
    y[1:3] = y[0:2] + 1.0
    y[0] = -y[4]
    y[3:] += 5.0
    return y


def read_after_update(x):
    """The operand is read after the update: that read sees the old value."""
    y = x * 2.0
    z = y.at[1:3].set(0.0)
    return z, z + y


def view_read_after_update(x):
    """A reshape (a view on the CPU) of the operand outlives the update."""
    y = (x * 2.0).reshape(2, 3)
    flat = y.reshape(6)
    z = flat.at[0].set(100.0)
    return z, y


def operand_twice(x, order):
    """The operand is also the update: writing in place would read overwritten values."""
    y = x * 2.0
    return y.at[order].set(y)


def argument_update(x):
    """An update of an argument: the caller's array is never written."""
    return x.at[1:3].set(0.0), x.sum()


def mutated_argument(a, v):
    """In-place NumPy on an argument: written back, as NumPy leaves it."""
    a[1:3] = v
    a += 1.0


def scatter_chain(x, index, v):
    y = x * 1.5
    y = y.at[index].add(v)
    y = y.at[index].set(v * 2.0)
    return y.at[index].min(0.0) - 1.0


def carry_window(x):
    """fori_loop: a carry updated by a window write each iteration."""

    def body(i, a):
        return a.at[i].set(a[i - 1] * 0.5 + 1.0)

    return numbax.fori_loop(1, x.shape[0], body, x * 1.0)


def jacobi_swap(a, b):
    """The double buffer ``(src, dst) -> (dst', src)``: both carries written in turn."""

    def body(i, grids):
        src, dst = grids
        average = 0.25 * (src[1:-1, :-2] + src[1:-1, 2:] + src[:-2, 1:-1] + src[2:, 1:-1])
        return dst.at[1:-1, 1:-1].set(average), src

    return numbax.fori_loop(0, 5, body, (a, b))


def five_point(a):
    return 0.2 * (a[1:-1, 1:-1] + a[1:-1, :-2] + a[1:-1, 2:] + a[2:, 1:-1] + a[:-2, 1:-1])


def jacobi_inplace(a, b):
    """PolyBench's jacobi-2d in NumPy's in-place style inside a fori_loop."""

    def body(i, grids):
        a, b = grids
        b[1:-1, 1:-1] = 0.2 * (
            a[1:-1, 1:-1] + a[1:-1, :-2] + a[1:-1, 2:] + a[2:, 1:-1] + a[:-2, 1:-1]
        )
        a[1:-1, 1:-1] = 0.2 * (
            b[1:-1, 1:-1] + b[1:-1, :-2] + b[1:-1, 2:] + b[2:, 1:-1] + b[:-2, 1:-1]
        )
        return a, b

    return numbax.fori_loop(0, 4, body, (a, b))


def initial_needed_after(x):
    """The loop's initial value is read after the loop: copied once, before it."""
    y = x * 2.0
    out = numbax.fori_loop(0, 3, lambda i, a: a.at[i].add(1.0), y)
    return out, y


def carried_twice(x):
    """A body that returns one value as two carries: neither may be written in place."""

    def body(i, carries):
        a, b = carries
        a = a.at[i].add(b[i] + 1.0)
        return a, a

    return numbax.fori_loop(0, 3, body, (x * 1.0, x * 3.0))


def old_carry_returned(x):
    """The body returns its updated carry and the carry as it was."""

    def body(i, carries):
        a, previous = carries
        return a.at[i].set(10.0 + i), a

    return numbax.fori_loop(0, 3, body, (x * 1.0, x * 0.0))


def histogram(values, bins):
    """scatter_add on a carry inside a loop."""

    def body(i, counts):
        return counts.at[bins[i]].add(values[i])

    return numbax.fori_loop(0, values.shape[0], body, np.zeros(4))


def scan_rows(x):
    """scan whose carry is written in place and also emitted as the ys."""

    def step(a, row):
        a = a.at[0].set(a[0] + row.sum())
        return a, a

    return numbax.scan(step, x[0] * 1.0, x)


def while_fill(x):
    def cond(carry):
        i, _ = carry
        return i < x.shape[0]

    def body(carry):
        i, a = carry
        return i + 1, a.at[i].set(i * 2.0)

    return numbax.while_loop(cond, body, (0, x * 1.0))[1]


def refused_window_stores(x, w):
    """Updates whose loop kernel may not store into the destination's window, each for
    its own reason: the destination read again before the update, made after the
    kernel, read after the update, and the caller's."""
    y = np.tanh(x)
    v = np.sin(w) * 2.0
    read_before = np.concatenate([y, np.cos(w)])  # after v's kernel, before the update
    stored = y.at[1:3].set(v)
    late = np.sin(w) * 3.0  # one kernel with the cos the destination is made from
    made_after = np.concatenate([np.cos(w), x[2:]]).at[0:2].set(late)
    live = x * 5.0
    read_after = live.at[2:4].set(np.cos(w) + 1.0) + live
    return stored, read_before, made_after, read_after, x.at[3:5].set(np.sin(w) - 1.0)


def window_stores_in_a_loop(a, e, h, x):
    """Three carries of one loop. ``a``'s stencil reads ``a`` at other points than it
    writes (Gauss-Seidel-like: new values would be read back): through a temporary.
    ``e``'s updates read ``e`` only at the points they write (FDTD's field update, then a
    row through unit reshapes), and ``out``'s row is stored at a traced start, clamped
    where it runs past the last row: all three stored straight into the carry."""
    n = x.shape[0]

    def body(i, carries):
        a, e, out = carries
        a = a.at[1:-1].set(0.5 * (a[:-2] + a[2:]))
        e = e.at[1:].set(e[1:] - 0.5 * (h[1:] - h[:-1]))
        e = e.at[0].set(e[0] * 0.5 + h[0])
        out = out.at[i].set(0.5 * (x[i % n, :-2] + x[i % n, 2:]))
        return a, e, out

    initial = (a * 1.0, e * 1.0, np.zeros((n, x.shape[1] - 2)))
    return numbax.fori_loop(0, n + 2, body, initial)


def offset_stencil_windows() -> list[tuple]:
    """Per case: the update's window (start, width) and the offsets of the two windows of
    the destination its value reads. Half read the destination only where they write."""
    choices = np.random.default_rng(11)
    cases = []
    for k in range(12):
        width = int(choices.integers(1, 6))
        start = int(choices.integers(0, 9 - width))
        offsets = (start, start) if k % 2 else tuple(choices.integers(0, 9 - width, 2))
        cases.append((start, width, tuple(int(o) for o in offsets)))
    return cases


OFFSET_STENCIL_WINDOWS = offset_stencil_windows()


def offset_stencils(x, y):
    """Each case updates a destination of its own that dies there, with a stencil of the
    destination at the case's offsets and of ``y``."""
    results = []
    for k, (start, width, (first, second)) in enumerate(OFFSET_STENCIL_WINDOWS):
        destination = np.tanh(x + k)
        value = destination[first : first + width] * 0.5 + destination[second : second + width]
        value = value + y[start : start + width]
        results.append(destination.at[start : start + width].set(value))
    return results


def row_windows(a):
    """Rows of a carry read as views (``a[i - 1]``, ``a[i + 1]``: traced starts, the last
    one clamped), and windows of those rows, while the loop writes row ``i``; a row shifted
    into itself (its view read where the update writes); then a static block of rows, and
    a window of it, that outlive an update of their array."""

    def body(i, a):
        above, below = a[i - 1], a[i + 1]
        a = a.at[i, 1:-1].set(above[:-2] + above[2:] + below[1:-1] * 0.5)
        here = a[i]
        return a.at[i, 1:].set(here[:-1] * 0.25)

    a = numbax.fori_loop(1, a.shape[0], body, a * 1.0)
    block = a[1:3]
    first = block[:1]
    updated = a.at[1].set(-1.0)
    return updated, block * 2.0, first + a[2:].sum(axis=0)


def one_element_rows(x):
    """The derivative of a loop updating the row at its index of a (1, 1) carry: the
    backward loop's updates write into zeros of one element, a value the cpu backend
    holds as a scalar, where its kernels once stored as into an array."""

    def loss(x):
        def body(i, c):
            return c.at[i % c.shape[0]].set(c[i % c.shape[0]] * 0.5 + 1.0)

        return (numbax.fori_loop(0, 3, body, np.tanh(x)) * 1.5).sum()

    return numbax.grad(loss)(x)


def x5():
    return rng.standard_normal(5)


CASES = {
    "window_chain": (window_chain, lambda: (rng.standard_normal(6),)),
    "read_after_update": (read_after_update, lambda: (x5(),)),
    "view_read_after_update": (view_read_after_update, lambda: (rng.standard_normal(6),)),
    "operand_twice": (operand_twice, lambda: (x5(), np.array([4, 3, 2, 1, 0]))),
    "argument_update": (argument_update, lambda: (x5(),)),
    "mutated_argument": (mutated_argument, lambda: (x5(), np.array(3.0))),
    "scatter_chain": (scatter_chain, lambda: (x5(), np.array([0, 3, 3]), np.ones(3))),
    "carry_window": (carry_window, lambda: (x5(),)),
    "jacobi_swap": (jacobi_swap, lambda: (rng.random((6, 7)), rng.random((6, 7)))),
    "jacobi_inplace": (jacobi_inplace, lambda: (rng.random((6, 7)), rng.random((6, 7)))),
    "initial_needed_after": (initial_needed_after, lambda: (x5(),)),
    "carried_twice": (carried_twice, lambda: (x5(),)),
    "old_carry_returned": (old_carry_returned, lambda: (x5(),)),
    "histogram": (histogram, lambda: (rng.random(7), rng.integers(0, 4, 7))),
    "scan_rows": (scan_rows, lambda: (rng.standard_normal((4, 3)),)),
    "while_fill": (while_fill, lambda: (x5(),)),
    "refused_window_stores": (refused_window_stores, lambda: (rng.random(5), rng.random(2))),
    "offset_stencils": (offset_stencils, lambda: (rng.random(8), rng.random(8))),
    "row_windows": (row_windows, lambda: (rng.random((6, 5)),)),
    "one_element_rows": (one_element_rows, lambda: (rng.random((1, 1)),)),
    "window_stores_in_a_loop": (
        window_stores_in_a_loop,
        lambda: (rng.random(6), rng.random((4, 5)), rng.random((4, 5)), rng.random((3, 6))),
    ),
}


def reference(fn, args):
    """``fn`` run by the interpreter (NumPy's reference implementations) on copies of
    ``args``: its results and the arguments afterwards."""
    copies = [np.array(a, copy=True) for a in args]
    return numbax.jit(fn, backend="interpret")(*copies), copies


def as_tuple(results) -> tuple:
    if results is None:
        return ()
    return results if isinstance(results, tuple) else (results,)


def assert_same(got, want) -> None:
    got, want = as_tuple(got), as_tuple(want)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", CASES)
def test_values_and_arguments_match_the_interpreter(name, compiled_backend):
    fn, make = CASES[name]
    args = make()
    want, want_args = reference(fn, args)
    got_args = [np.array(a, copy=True) for a in args]
    got = compiled_backend.to_host(numbax.jit(fn, backend=compiled_backend)(*got_args))
    assert_same(got, want)
    assert_same(tuple(got_args), tuple(want_args))


def numpy_jacobi(a, b, steps):
    for _ in range(steps):
        b[1:-1, 1:-1] = 0.2 * (
            a[1:-1, 1:-1] + a[1:-1, :-2] + a[1:-1, 2:] + a[2:, 1:-1] + a[:-2, 1:-1]
        )
        a[1:-1, 1:-1] = 0.2 * (
            b[1:-1, 1:-1] + b[1:-1, :-2] + b[1:-1, 2:] + b[2:, 1:-1] + b[:-2, 1:-1]
        )
    return a, b


@pytest.mark.parametrize("name", ["window_chain", "mutated_argument"])
def test_in_place_numpy_matches_numpy(name, backend):
    fn, make = CASES[name]
    args = make()
    numpy_args = [np.array(a, copy=True) for a in args]
    want = fn(*numpy_args)
    got_args = [np.array(a, copy=True) for a in args]
    assert_same(backend.to_host(numbax.jit(fn, backend=backend)(*got_args)), want)
    assert_same(tuple(got_args), tuple(numpy_args))


def test_the_stencil_in_a_loop_matches_numpy(backend):
    a, b = rng.random((6, 7)), rng.random((6, 7))
    want = numpy_jacobi(a.copy(), b.copy(), 4)
    assert_same(backend.to_host(numbax.jit(jacobi_inplace, backend=backend)(a, b)), want)


# --- what the CPU program does --------------------------------------------------------


def cpu_source(fn, *args) -> str:
    """The program's launcher with each kernel it calls (``units``) written in place of
    its call, its parameters named as the arguments the launcher passes: the lines the
    program runs, in the order it runs them."""
    closed = numbax.make_jaxpr(fn)(*args)
    program = cpu_backend.lower(closed, fn.__name__)
    return re.sub(
        r"^(\s*)(?:(\w+) = )?nbx_launch\.call\(kernel_addresses\[(\d+)\], \S+, \((.*)\)\)  #.*$",
        lambda call: _kernel_lines(program.units[int(call[3])], call),
        program.code,
        flags=re.M,
    )


def _kernel_lines(unit, call) -> str:
    """The lines of ``unit``'s kernel that ``call`` runs, at the call's indentation."""
    indent, target, arguments = call[1], call[2], call[4].rstrip(",").split(", ")
    header = re.search(rf"^def {unit.name}\((.*)\):$", unit.source, flags=re.M)
    parameters = re.findall(r"^    (\w+) = carray\(args\[\d+\]", unit.source, flags=re.M)
    renamed = dict(zip(parameters, arguments, strict=True))
    loops = f"def {unit.name}_loops("
    start = unit.source.index(loops) if loops in unit.source else header.start()
    lines = []
    for line in unit.source[start:].splitlines()[1:]:
        if line.strip() and not line.startswith("    "):
            break  # the function's end
        stored = re.match(r"\s+carray\(args\[\d+\], \(1,\), [\w.]+\)\[0\] = (.*)$", line)
        if stored and target:  # a returned scalar (``units.KernelContext._function``)
            lines.append(f"{indent}{target} = {renamed.get(stored[1], stored[1])}")
            continue
        if not line.strip() or "carray(" in line:
            continue
        line = re.sub(r"\b\w+\b", lambda word: renamed.get(word[0], word[0]), line[4:])
        if target and line.startswith("return "):
            line = line.replace("return ", f"{target} = ", 1)
        lines.append(indent + line)
    return "\n".join(lines)


def update_lines(source: str) -> list[str]:
    """The lines that bind an update's output to its operand (or a copy of it)."""
    marks = ("dynamic_update_slice", "scatter")
    lines = source.splitlines()
    found = []
    for k, line in enumerate(lines):
        if line.strip().startswith("# kernel") and any(m in line for m in marks):
            found += [
                nxt.strip()
                for nxt in lines[k + 1 : k + 8]
                if "in place" in nxt or re.search(r"= \w+\.copy\(\)$|\[:\] = ", nxt.strip())
            ][:1]
    return found


def copies(line: str) -> bool:
    """Whether an update's line copies its operand: inline, or in its unit's kernel
    (``units.KernelContext.updated_copy``)."""
    return line.endswith(".copy()") or "[:] = " in line


def loop_body(source: str) -> str:
    """The generated lines inside the program's first loop."""
    lines = source.splitlines()
    start = next(k for k, line in enumerate(lines) if re.match(r"\s+(for step|while True)", line))
    indent = len(lines[start]) - len(lines[start].lstrip())
    body = []
    for line in lines[start + 1 :]:
        if line.strip() and len(line) - len(line.lstrip()) <= indent:
            break
        body.append(line)
    return "\n".join(body)


def test_straight_line_updates_of_an_intermediate_write_in_place():
    lines = update_lines(cpu_source(window_chain, rng.standard_normal(6)))
    assert len(lines) == 3 and all("in place" in line for line in lines), lines


def test_an_update_whose_operand_is_read_later_copies():
    (line,) = update_lines(cpu_source(read_after_update, x5()))
    assert copies(line)


def test_an_update_of_a_view_that_outlives_it_copies():
    (line,) = update_lines(cpu_source(view_read_after_update, rng.standard_normal(6)))
    assert copies(line)


def test_an_update_reading_its_operand_twice_copies():
    (line,) = update_lines(cpu_source(operand_twice, x5(), np.arange(5)))
    assert copies(line)


def test_an_update_of_an_argument_copies_once_then_writes_in_place():
    def twice(x):
        return x.at[0].set(1.0).at[1].set(2.0)

    first, second = update_lines(cpu_source(twice, x5()))
    assert copies(first) and "in place" in second


@pytest.mark.parametrize("name", ["carry_window", "jacobi_swap", "jacobi_inplace", "histogram"])
def test_a_loop_writes_its_carries_in_place_with_no_copy_per_iteration(name):
    fn, make = CASES[name]
    source = cpu_source(fn, *make())
    body = loop_body(source)
    assert ".copy()" not in re.sub(r"\[[^\]]*\]\.copy\(\)", "", body), body
    assert "in place" in body
    # The caller's arrays are copied once, before the loop, and only those.
    initial = next(line for line in source.splitlines() if re.match(r"\s+carry__?\d", line))
    carries = len(initial.split("=")[0].split(","))
    assert initial.count(".copy()") <= carries


def test_a_loop_over_a_dying_intermediate_copies_nothing():
    def fill(x):
        return numbax.fori_loop(0, 3, lambda i, a: a.at[i].set(1.0), x * 2.0)

    source = cpu_source(fill, x5())
    assert not re.search(r"= \w+\.copy\(\)$", source, flags=re.M), source


def test_a_loop_whose_initial_value_is_read_after_copies_it_once():
    source = cpu_source(initial_needed_after, x5())
    initial = next(line for line in source.splitlines() if re.match(r"\s+carry__?\d", line))
    assert initial.count(".copy()") == 1
    assert "in place" in loop_body(source)


@pytest.mark.parametrize("name", ["carried_twice", "old_carry_returned"])
def test_carries_that_share_memory_are_not_written_in_place(name):
    fn, make = CASES[name]
    closed = numbax.make_jaxpr(fn)(*make())
    fused, _ = numbax.passes.optimize(closed)
    liveness = Liveness(fused)
    ((index, ownership),) = liveness.loops.items()
    assert not ownership.reaching
    assert "in place" not in loop_body(cpu_source(fn, *make()))


def test_the_benchmark_stencil_has_no_copy_inside_its_loop():
    a, b = rng.random((12, 12)), rng.random((12, 12))
    source = cpu_source(jacobi_inplace, a, b)
    body = loop_body(source)
    assert body.count("in place") == 2
    assert not re.search(r"= \w+\.copy\(\)$", body, flags=re.M)


def numpy_row_windows(a):
    a = a.copy()
    for i in range(1, a.shape[0]):
        above, below = a[i - 1].copy(), a[min(i + 1, a.shape[0] - 1)].copy()
        a[i, 1:-1] = above[:-2] + above[2:] + below[1:-1] * 0.5
        a[i, 1:] = a[i, :-1] * 0.25  # NumPy reads the whole right side first
    block = a[1:3].copy()
    updated = a.copy()
    updated[1] = -1.0
    return updated, block * 2.0, block[:1] + a[2:].sum(axis=0)


def test_row_windows_match_numpy(backend):
    a = rng.random((6, 5))
    want = numpy_row_windows(a)
    assert_same(backend.to_host(numbax.jit(row_windows, backend=backend)(a)), want)


def test_rows_are_read_as_views_where_nothing_writes_them_while_read():
    """Slices of whole rows are views (``# a view``), never ``.copy()``; the block of rows
    read after its array's update makes that update copy instead."""
    source = cpu_source(row_windows, rng.random((6, 5)))
    views = [line for line in source.splitlines() if "# a view: whole rows" in line]
    assert len(views) == 3, views  # a[i - 1], a[i + 1], a[i]; kernels read a[1:3] in place
    assert not re.search(r"\[start__?\d+:start__?\d+ \+ 1[^\]]*\]\.copy\(\)", source)
    (update,) = [line for line in update_lines(source) if "in place" not in line]
    assert copies(update)


def test_seidel_reads_its_rows_in_place():
    """benchmarks' seidel-2d: the row loop reads the three rows as views; its one copy is
    the point loop's own row (the point loop writes it while the row update still reads
    the carry's old row)."""
    loops = benchmark_kernels.library_loops(numbax.fori_loop, numbax.scan)

    def seidel(a):
        return benchmark_kernels.seidel_2d(numbax.numpy, loops, a, steps=2)

    a = rng.random((8, 8))
    source = cpu_source(seidel, a)
    rows = loop_body(loop_body(source))
    assert rows.count("# a view: whole rows") == 3
    (copy,) = [line for line in rows.splitlines() if ".copy()" in line]
    assert re.match(r"\s+carry__?\d+, carry__?\d+ = _k\d+, \w+\.copy\(\)$", copy)
    want = benchmark_kernels.seidel_2d(np, benchmark_kernels.EAGER_NUMPY, a, steps=2)
    assert_same(numbax.jit(seidel, backend="cpu")(a), want)


def numpy_refused_window_stores(x, w):
    y = np.tanh(x)
    read_before = np.concatenate([y, np.cos(w)])
    y[1:3] = np.sin(w) * 2.0
    made_after = np.concatenate([np.cos(w), x[2:]])
    made_after[0:2] = np.sin(w) * 3.0
    live = x * 5.0
    updated = live.copy()
    updated[2:4] = np.cos(w) + 1.0
    argument = x.copy()
    argument[3:5] = np.sin(w) - 1.0
    return y, read_before, made_after, updated + live, argument


def numpy_window_stores_in_a_loop(a, e, h, x):
    n = x.shape[0]
    a, e, out = a.copy(), e.copy(), np.zeros((n, x.shape[1] - 2))
    for i in range(n + 2):
        a[1:-1] = 0.5 * (a[:-2] + a[2:])  # NumPy reads the whole right side first
        e[1:] = e[1:] - 0.5 * (h[1:] - h[:-1])
        e[0] = e[0] * 0.5 + h[0]
        if i < n:  # a traced index past the end drops the update, as JAX's
            out[i] = 0.5 * (x[i % n, :-2] + x[i % n, 2:])
    return a, e, out


@pytest.mark.parametrize(
    "name, numpy_fn",
    [
        ("refused_window_stores", numpy_refused_window_stores),
        ("window_stores_in_a_loop", numpy_window_stores_in_a_loop),
    ],
)
def test_window_stores_match_numpy(name, numpy_fn, backend):
    fn, make = CASES[name]
    args = make()
    want = numpy_fn(*[np.array(a, copy=True) for a in args])
    assert_same(backend.to_host(numbax.jit(fn, backend=backend)(*args)), want)


# Marks an update whose value its loop kernel stored straight into the operand's window.
STORED = "in place: the update's kernel stored the window"


def window_copies(source: str) -> int:
    """How many updates copy a value of their own into the operand's window."""
    copy = r"^\s*\w+\[(start__?\d+|\d+) \+ w__?\d+[^\]]*\] = \w+\[w__?\d+"
    return len(re.findall(copy, source, flags=re.M))


@pytest.mark.parametrize("name", ["jacobi_swap", "jacobi_inplace"])
def test_a_stencil_sweep_stores_straight_into_its_carrys_window(name):
    fn, make = CASES[name]
    source = cpu_source(fn, *make())
    body = loop_body(source)
    sweeps = 1 if name == "jacobi_swap" else 2
    assert body.count(STORED) == sweeps, body
    assert "np.empty" not in body and window_copies(body) == 0, body
    # The stencil's loop writes the carry at the interior point it computes.
    stores = re.findall(r"^\s+(carry__?\d+)\[1 \+ i0, 1 \+ i1\] = \w+$", body, flags=re.M)
    assert len(stores) == len(set(stores)) == sweeps, body


def test_an_update_whose_destination_may_be_read_keeps_its_temporary():
    source = cpu_source(refused_window_stores, rng.random(5), rng.random(2))
    assert STORED not in source
    assert window_copies(source) == 4, source


def test_only_kernels_reading_the_destination_where_they_write_store_into_it():
    source = cpu_source(offset_stencils, rng.random(8), rng.random(8))
    pointwise = [o == (s, s) for s, _, o in OFFSET_STENCIL_WINDOWS]
    # Every destination dies at its update: the others write their value in place.
    assert source.count(STORED) == sum(pointwise), source
    assert source.count("in place: the operand dies here") == pointwise.count(False), source


def test_a_loop_stores_the_windows_its_kernels_may_and_copies_the_other():
    fn, make = CASES["window_stores_in_a_loop"]
    body = loop_body(cpu_source(fn, *make()))
    assert body.count(STORED) == 3 and window_copies(body) == 1, body
    # The FDTD-like update and the row read and store ``e`` (carry 2) at one point; the
    # traced start of ``out``'s row (carry 3) is clamped before its loop.
    assert re.search(r"^\s+carry__2\[1 \+ i0, i1\] = \w+$", body, flags=re.M), body
    assert re.search(r"^\s+\w+\[0, i0\] = \w+$", body, flags=re.M), body
    assert re.search(r"^\s+carry__3\[start__?\d+, i0\] = \w+$", body, flags=re.M), body


# --- what the CUDA program does (under the simulator) ---------------------------------


def cuda_executable(fn, *args):
    from numbax.backends.cuda import CudaBackend

    return CudaBackend().compile(numbax.make_jaxpr(fn)(*args), fn.__name__)


def cuda_in_place(executable) -> list[dict]:
    """Per block of the CUDA program, the updates the launcher runs in place."""
    return [in_place for _, _, in_place in executable._plans.values()]


@pytest.fixture
def cuda(compiled_backend):
    if compiled_backend != "cuda":
        pytest.skip("needs the CUDA backend (NUMBA_ENABLE_CUDASIM=1)")


def test_cuda_updates_of_an_intermediate_write_in_place(cuda):
    executable = cuda_executable(window_chain, rng.standard_normal(6))
    (top,) = cuda_in_place(executable)
    block = executable.program.block
    # The last update makes the result, a new array on every call: it copies the
    # operand's planned buffer, which the next call writes again.
    assert len(block.liveness.in_place) == 3
    assert set(top) == set(block.liveness.in_place) - set(block.jaxpr.outvars)
    assert len(top) == 2


def test_cuda_update_whose_operand_lives_on_copies(cuda):
    executable = cuda_executable(read_after_update, x5())
    assert not any(cuda_in_place(executable))


def test_cuda_loop_carries_are_written_in_place(cuda):
    a, b = rng.random((6, 7)), rng.random((6, 7))
    executable = cuda_executable(jacobi_inplace, a, b)
    (loop,) = [s for s in executable.program.steps if getattr(s, "ownership", None)]
    assert loop.ownership.reaching == loop.ownership.copied == frozenset({0, 1})
    body = loop.bodies[-1]
    assert len(executable._plans[id(body)][2]) == 2
    assert_same(tuple(executable(a, b)), numpy_jacobi(a.copy(), b.copy(), 4))
