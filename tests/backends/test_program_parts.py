"""Large programs as several njit functions, large kernels as several loops
(``backends/cpu/parts.py``): the same values as the interpreter and NumPy, the disk cache,
and generated code whose units stay bounded while the program grows."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import numbax
from numbax.backends import cpu
from numbax.backends.cpu import cache, parts
from numbax.config import config


def mixed_program(x, w, m):
    """A hundred and more ops of every kind: window reads, elementwise chains,
    reductions to scalars, contractions, in-place row updates and a loop, with values
    that later code reads long after they were made, and an argument returned as is."""
    acc = np.zeros(16)
    total = 0.0
    y = np.tanh(x @ w)
    for i in range(12):
        row = np.maximum(y[i % 8], 0.1) * 0.5 + m
        acc = acc + row * w[i % 16]
        total = total + row.sum()
        if i % 4 == 3:
            y = np.tanh(y @ w) + total * 1e-3
            y[i % 8] = acc
    acc = numbax.fori_loop(0, 3, lambda k, a: a * 0.5 + m, acc)
    return acc, total, y * m[0], x


def _arguments():
    rng = np.random.default_rng(0)
    return (
        rng.uniform(-1.0, 1.0, (8, 16)),
        rng.uniform(-0.3, 0.3, (16, 16)),
        rng.uniform(-1.0, 1.0, 16),
    )


@pytest.fixture
def small_units(monkeypatch):
    """Parts of 100 lines and loops of 24 ops: a program of a hundred ops is cut into
    several of each. Its launcher is code (a program of kernel calls alone would run as
    steps, ``steps.py``, and have no parts)."""
    monkeypatch.setattr(config, "steps", False)
    monkeypatch.setattr(parts, "PART_LINES", 100)
    monkeypatch.setattr(parts, "KERNEL_WEIGHT", 24)


def test_a_program_cut_into_parts_gives_the_interpreters_values(small_units):
    args = _arguments()
    closed = numbax.make_jaxpr(mixed_program)(*args)
    assert len(closed.jaxpr.eqns) > 100
    executable = cpu.backend.compile(closed, "mixed_program")
    program = executable.program
    assert program.parts >= 3
    # The launcher's functions (its kernels are units of their own, ``units``).
    assert program.launcher.count("@njit") == program.parts + 1
    # The chains were split into loops of at most the bound.
    assert all(parts.body_weight(k.jaxpr) <= parts.KERNEL_WEIGHT for k in program.kernels)
    got = executable(*args)
    want = numbax.jit(mixed_program, backend="interpret")(*args)
    numpy = mixed_program(*args)
    for g, i, n in zip(got, want, numpy, strict=True):
        np.testing.assert_allclose(g, i, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(g, n, rtol=1e-10, atol=1e-10)
    # What compiling cost is told as for one function: the parts' LLVM time included.
    stats = executable.compile_stats
    assert stats.llvm_s > 0 and "LLVM" in str(stats)


def test_a_view_that_several_pieces_read_is_recomputed_by_each(small_units):
    """A broadcast of an input that every piece of a split kernel reads is made again by
    each piece, never an output of one: every value keeps one producer, so the memory
    plan cannot give its buffer to another value while a piece still writes it."""

    def chain(x, b):
        y = x
        for _ in range(12):
            y = np.sin(y) * b + b * 0.5
        return y, x * 2.0

    x, b = np.linspace(-1.0, 1.0, 12).reshape(3, 4), np.linspace(0.5, 1.5, 4)
    closed = numbax.make_jaxpr(chain)(x, b)
    fused, _, _ = cpu._optimize(closed, "chain")
    made = [v for eqn in fused.jaxpr.eqns for v in eqn.outputs]
    assert len(fused.jaxpr.eqns) >= 4 and len(made) == len(set(made))
    got = cpu.backend.compile(closed, "chain")(x, b)
    for g, want in zip(got, chain(x, b), strict=True):
        np.testing.assert_allclose(g, want, rtol=1e-12, atol=1e-12)


def test_a_program_in_parts_loads_from_the_disk_cache(small_units, tmp_path, monkeypatch):
    monkeypatch.setattr(config, "cache_dir", str(tmp_path))
    monkeypatch.setattr(cache, "_LOADED", {})
    monkeypatch.setattr(parts, "PART_LINES", 20)

    def chain(x):
        for _ in range(48):  # enough kernel calls for a launcher in parts
            x = x * 0.5 + 0.25
        return x, x.sum()

    x = np.linspace(0.0, 1.0, 8)
    closed = numbax.make_jaxpr(chain)(x)
    first = cpu.backend.compile(closed, "chain_in_parts")
    assert first.program.parts >= 2 and first.compile_stats.cache == "disk miss"
    cache._LOADED.clear()  # as a new process: the module and its compiled code forgotten
    del sys.modules[first.function.py_func.__module__]
    second = cpu.backend.compile(closed, "chain_in_parts")
    assert second.compile_stats.cache == "disk hit"
    # The program function's machine code holds the parts: none is compiled again.
    module = sys.modules[second.function.py_func.__module__]
    part_functions = [getattr(module, f"chain_in_parts_part_{k}") for k in range(2)]
    assert part_functions[0].py_func.__module__ == module.__name__
    assert all(not f.overloads for f in part_functions)
    for a, b, c in zip(first(x), second(x), chain(x), strict=True):
        np.testing.assert_allclose(a, b, rtol=0, atol=0)
        np.testing.assert_allclose(a, c, rtol=1e-12)


def straight_line(x, ops: int):
    for _ in range(ops // 3):
        x = np.sin(x) * 0.5 + 0.25
    return x


def unrolled_loop(x, w, ops: int):
    acc = np.zeros(x.shape[1:])
    for i in range(ops // 6):
        acc = acc + x[i] * w[i]
    return acc


def _lowered(shape: str, ops: int):
    """The generated program of ``shape`` at ``ops`` operations (not compiled)."""
    if shape == "straight_line":
        closed = numbax.make_jaxpr(lambda x: straight_line(x, ops))(np.ones(64))
    else:
        terms = ops // 6
        closed = numbax.make_jaxpr(lambda x, w: unrolled_loop(x, w, ops))(
            np.ones((terms, 64)), np.ones(terms)
        )
    return cpu.backend.lower(closed, f"{shape}_{ops}")


def _function_sizes(program) -> list[int]:
    """The number of lines of each njit function of a generated launcher, then of each
    kernel it calls (``units``)."""
    functions = program.launcher.split("@njit(")[1:]
    functions += [unit.source for unit in program.units]
    return [sum(line.startswith("    ") for line in f.split("\n")) for f in functions]


@pytest.mark.parametrize("shape", ["straight_line", "unrolled_loop"])
def test_generated_code_grows_linearly_in_bounded_units(shape, monkeypatch):
    monkeypatch.setattr(config, "steps", False)  # the launcher's parts, as code
    monkeypatch.setattr(parts, "PART_LINES", 100)
    monkeypatch.setattr(parts, "KERNEL_WEIGHT", 40)
    sizes = (300, 600, 1200)
    programs = [_lowered(shape, ops) for ops in sizes]
    lines = [sum(_function_sizes(p)) for p in programs]
    counts = [p.parts for p in programs]
    for program in programs:
        # No njit function and no loop past its bound, however large the program.
        assert max(_function_sizes(program)) <= parts.PART_LINES + 1
        assert max(parts.body_weight(k.jaxpr) for k in program.kernels) <= parts.KERNEL_WEIGHT
    for before, after in zip(lines, lines[1:], strict=False):
        assert 1.8 <= after / before <= 2.2  # twice the ops: twice the code
    assert counts[0] >= 1 and counts[2] >= 3 * counts[0]


def test_a_small_program_is_one_function_as_before():
    closed = numbax.make_jaxpr(lambda x: np.tanh(x) * 2.0 + x.sum())(np.ones(8))
    fused, _, _ = cpu._optimize(closed, "small")
    assert parts.bounded_kernels(fused) is fused  # within the bound: the same program
    program = cpu.backend.lower(closed, "small")
    assert program.parts == 0 and program.source.count("@njit") == 1
    assert "_part_" not in program.source
