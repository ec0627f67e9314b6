"""A call's results never share memory with the program's constants, its arguments or
each other (``backends/results.py``), on every backend and in the tiered first-call
interpreter: after each call every result is written into, and the other results, the
arguments and the next call's results must still be NumPy's.

NumPy itself returns its argument from ``x.reshape(...)``, ``x[1:]`` or ``lambda x: x``;
a jitted function's result is always an array of its own (as in JAX), so those programs
are checked the same way.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

import numbax
from numbax.backends.results import ResultCopies, compiled_storage
from numbax.dispatch import compiling
from numbax.passes import optimize

SENTINEL = -7.0


def _before(b):
    before = b.copy()
    b[...] = 0
    return before


def _before_increment(b):
    before = b.copy()
    b += 1
    return before, b


def _doubled_in_place(b):
    b *= 2
    return b


def _result_and_its_view(x):
    y = x * 2.0
    return y, y.reshape(3, 2), y[1:]


PROGRAMS = {
    # 1: results that constant folding made constants of the program.
    "eye": lambda x: (x + 1, np.eye(3)),
    "arange": lambda x: (x + 1, np.arange(4)),
    "arange_times_two": lambda x: (x + 1, np.arange(4.0) * 2),
    "linspace": lambda x: (x + 1, np.linspace(0.0, 1.0, 5)),
    "array_literal": lambda x: (x + 1, np.array([[1.0, 2.0], [3.0, 4.0]])),
    "scalar_constant": lambda x: (x + 1, 2.5),
    "constant_only": lambda x: np.ones((2, 2)),
    # 2: the argument's entry value, which the write-back of the argument overwrites.
    "copy_then_zero_argument": _before,
    "copy_then_increment_argument": _before_increment,
    "return_written_argument": _doubled_in_place,
    # 3: copies that trace as the argument itself, and results that are each other.
    "np_copy": lambda x: np.copy(x),
    "method_copy": lambda x: x.copy(),
    "np_array": lambda x: np.array(x),
    "astype_same_dtype": lambda x: x.astype(x.dtype),
    "times_one": lambda x: x * 1,
    "unary_plus": lambda x: +x,
    "flatten": lambda x: x.flatten(),
    "concatenate_one": lambda x: np.concatenate([x]),
    "where_true": lambda x: np.where(True, x, 0),
    "identity": lambda x: x,
    "argument_twice": lambda x: (x, x),
    "equal_expressions": lambda x: (x * 2.0, x * 2.0),
    "reshape": lambda x: x.reshape(3, 2),
    "transpose": lambda x: x.T,
    "row_slice": lambda x: x[1:],
    "column_slice": lambda x: x[:, 1:],
    "ravel": lambda x: x.ravel(),
    "new_axis": lambda x: x[None],
    "result_and_its_views": _result_and_its_view,
    "branch_returns_operand": lambda x: numbax.cond(x[0, 0] > 100, lambda v: v + 1, lambda v: v, x),
    "branch_returns_literal": lambda x: numbax.cond(
        x[0, 0] > 0, lambda v: np.float64(2.0), lambda v: np.float64(3.0), x
    ),
    "loop_never_runs": lambda x: numbax.while_loop(lambda c: c[0, 0] > 100, lambda c: c + 1, x),
}
WRITERS = {"copy_then_zero_argument", "copy_then_increment_argument", "return_written_argument"}


@pytest.fixture(params=[False, True], ids=["compiled", "tiered"])
def mode(request, backend):
    """(backend, tiered): compiled before the first call, or its first calls interpreted
    (only the cpu backend is tiered)."""
    if request.param and str(backend) != "cpu":
        pytest.skip("only the cpu backend interprets first calls")
    return str(backend), request.param


def _argument() -> np.ndarray:
    return np.arange(1.0, 7.0).reshape(2, 3)


def _leaves(out) -> list:
    return list(out) if isinstance(out, tuple) else [out]


def _host(value) -> np.ndarray:
    return value.copy_to_host() if hasattr(value, "copy_to_host") else np.asarray(value)


def _write(result) -> None:
    """Write into a result as a caller may: in place, every element."""
    if hasattr(result, "copy_to_device"):  # the cuda backend's device array
        result.copy_to_device(np.full(result.shape, SENTINEL, np.dtype(result.dtype)))
    else:
        result[...] = SENTINEL


@pytest.fixture
def interpreted_only(monkeypatch):
    """Tiered calls stay interpreted: the background compile waits until the test ends,
    then fails (no program is compiled for nothing)."""
    finished = threading.Event()

    def never_compiled(*args, **kwargs):
        finished.wait()
        raise RuntimeError("the test has ended")

    monkeypatch.setattr(compiling, "compile_closed", never_compiled)
    yield
    finished.set()


@pytest.mark.parametrize("name", PROGRAMS)
def test_writing_into_results_changes_nothing_else(request, mode, name):
    backend, tiered = mode
    if tiered:
        request.getfixturevalue("interpreted_only")
    fun = PROGRAMS[name]
    expected_argument = _argument()
    expected = [np.asarray(e) for e in _leaves(fun(expected_argument))]
    jitted = numbax.jit(fun, backend=backend, tiered=tiered)
    for call in range(2):  # a new signature, then the cached one (the fast path)
        argument = _argument()
        passed = argument
        if backend == "cuda" and name not in WRITERS:
            from numba import cuda

            passed = cuda.to_device(argument)  # the caller's device array
        results = _leaves(jitted(passed))
        if tiered:
            assert jitted.interpreted_calls == call + 1
        for k, result in enumerate(results):
            np.testing.assert_allclose(_host(result), expected[k], rtol=1e-15)
        np.testing.assert_array_equal(_host(passed), expected_argument)
        now = list(expected)
        for k, result in enumerate(results):
            _write(result)
            now[k] = np.full_like(expected[k], SENTINEL)
            for value, wanted in zip(results, now, strict=True):
                np.testing.assert_allclose(_host(value), wanted, rtol=1e-15)
            np.testing.assert_array_equal(_host(passed), expected_argument)


def _swap(a, b):
    saved = a.copy()
    np.copyto(a, b)
    np.copyto(b, saved)


def _rotate(a, b, c):
    saved = a.copy()
    np.copyto(a, b)
    np.copyto(b, c)
    np.copyto(c, saved)


@pytest.mark.parametrize("fun", [_swap, _rotate])
def test_arguments_written_from_each_other_hold_numpys_values(request, mode, fun):
    """The written-back value of ``b`` is ``a``'s entry value: the write-back into ``a``
    comes first, so that value is copied before it."""
    backend, tiered = mode
    if tiered:
        request.getfixturevalue("interpreted_only")
    count = fun.__code__.co_argcount
    jitted = numbax.jit(fun, backend=backend, tiered=tiered)
    for _ in range(2):
        expected = [np.arange(3.0) + 10 * k for k in range(count)]
        fun(*expected)
        arguments = [np.arange(3.0) + 10 * k for k in range(count)]
        jitted(*arguments)
        for got, wanted in zip(arguments, expected, strict=True):
            np.testing.assert_array_equal(got, wanted)


@pytest.mark.parametrize(
    "name", ["eye", "linspace", "np_copy", "identity", "argument_twice", "equal_expressions"]
)
def test_a_lowered_and_compiled_program_returns_arrays_of_its_own(name):
    fun = PROGRAMS[name]
    expected = [np.asarray(e) for e in _leaves(fun(_argument()))]
    compiled = numbax.jit(fun, backend="cpu").lower(_argument()).compile()
    for _ in range(2):
        argument = _argument()
        results = _leaves(compiled(argument))
        now = list(expected)
        for k, result in enumerate(results):
            np.testing.assert_allclose(result, expected[k], rtol=1e-15)
            _write(result)
            now[k] = np.full_like(expected[k], SENTINEL)
            for value, wanted in zip(results, now, strict=True):
                np.testing.assert_allclose(value, wanted, rtol=1e-15)
        np.testing.assert_array_equal(argument, _argument())


def test_new_results_are_not_copied():
    """Results a program makes in new memory cost nothing: nothing is decided per call."""
    fused, _ = optimize(
        numbax.make_jaxpr(lambda x: (x + 1.0, np.sin(x) @ x.T, x.sum()))(_argument())
    )
    assert not ResultCopies(fused.jaxpr, compiled_storage(fused.jaxpr))


def test_a_written_argument_returned_as_well_is_not_copied():
    """``b *= 2; return b``: the result and the argument's final value are one array;
    the caller copies the latter into ``b`` (``writes``), so neither is copied."""
    closed = numbax.make_jaxpr(_doubled_in_place)(_argument())
    fused, _ = optimize(closed)
    (result, written) = fused.jaxpr.outvars
    assert result is written
    assert not ResultCopies(fused.jaxpr, compiled_storage(fused.jaxpr), writes=(0,))
    assert ResultCopies(fused.jaxpr, compiled_storage(fused.jaxpr))


def test_only_a_result_that_may_be_the_argument_is_compared_at_run_time():
    """A branch that may return its operand is compared with the argument on each call,
    and copied only when it is the argument; a result that is the argument is always."""
    fun = lambda x: (numbax.cond(x[0, 0] > 3, lambda v: v * 2.0, lambda v: v, x), x + 1)  # noqa: E731
    fused, _ = optimize(numbax.make_jaxpr(fun)(_argument()))
    copies = ResultCopies(fused.jaxpr, compiled_storage(fused.jaxpr))
    argument, new = _argument(), np.zeros((2, 3))
    consts = fused.consts
    kept = copies.apply([new, new + 1], consts, [argument])
    assert kept[0] is new
    copied = copies.apply([argument, new], consts, [argument])
    assert copied[0] is not argument and not np.shares_memory(copied[0], argument)
