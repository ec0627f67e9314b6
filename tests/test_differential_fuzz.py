"""The differential fuzzer: random NumPy programs under ``jit`` on every backend give
NumPy's answer, and their derivatives under ``jit`` give the reference interpreter's.

Programs come from ``tests/random_programs.py``: multi-output, matmul epilogues read by
several consumers, NaN/inf/-0.0 inputs, size-0 and size-1 dimensions, float32 and
float64. The default run is small; ``NUMBAX_FUZZ_EXAMPLES=N`` draws N programs per test
and backend (thousands for a soak run; Hypothesis prints the failing program's draws).
``NUMBAX_FUZZ_WIDE=1`` draws rows of up to 257 elements too and runs every cpu kernel on
all cores, so the loops of long rows and the parallel kernels are fuzzed.
``NUMBAX_FUZZ_LARGE=1`` draws real sizes too (``random_programs.LARGE_SHAPES``: hundreds
per side, 10^5 and 4 million elements), so the paths only large arrays take run at the
thresholds they have in use: parallel loops, matrix products on all threads (half of
the examples with the products split into blocks of rows, as where the BLAS has no
thread controls) and outputs written into pooled arrays.

Every jitted function runs both ways a user meets it: tiered (the default: its first
calls are interpreted while it compiles; called twice, then once more after
``wait_compiled`` so the compiled program answers too) and ``tiered=False``. After each
call every result is written into: a result that shares memory with an argument, a
constant of the program or another result shows as a changed argument, a wrong answer
of the next call or a changed sibling.
"""

from __future__ import annotations

import contextlib

import numpy as np
import pytest
import switches
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from random_programs import LARGE, WIDE, Choices, inputs, program

import numbax
from numbax.backends import cpu
from numbax.backends.cpu import blas

EXAMPLES = switches.count("NUMBAX_FUZZ_EXAMPLES", 6)
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,  # a soak run's failures are printed, not replayed by the next run
    print_blob=True,  # ... with the @reproduce_failure line that replays one exactly
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.function_scoped_fixture,
    ],
)


@pytest.fixture(autouse=True)
def _parallel_kernels_when_wide(monkeypatch):
    if WIDE:
        monkeypatch.setattr(cpu, "PARALLEL_MIN_WORK", 16)


# Written into every result after each call (any dtype holds it, as a value or a cast).
SENTINEL = -1234.5


def _leaves(results) -> list:
    return [r for r in numbax.tree_leaves(results) if isinstance(r, np.ndarray)]


def _write_into_results(results, arguments) -> None:
    """Write ``SENTINEL`` into every result after checking that no result shares memory
    with an argument or another result (a NumPy function's results never do), and that
    the siblings of each written result keep their values."""
    leaves = _leaves(results)
    for i, value in enumerate(leaves):
        for j, argument in enumerate(arguments):
            assert not np.shares_memory(value, argument), f"result {i} aliases argument {j}"
        for j, other in enumerate(leaves[:i]):
            assert not np.shares_memory(value, other), f"result {i} aliases result {j}"
    kept = [value.copy() for value in leaves]
    for i, value in enumerate(leaves):
        assert value.flags.writeable, f"result {i} is read-only"
        value[...] = SENTINEL
        for j in range(i + 1, len(leaves)):
            np.testing.assert_array_equal(leaves[j], kept[j], err_msg=f"result {i} wrote {j}")


def _calls_of_every_tier(jit_of, arguments, check) -> None:
    """Call the function made by ``jit_of(tiered)`` tiered (twice, then once more after
    ``wait_compiled``) and untiered (twice); ``check`` each call's results, write into
    them, and check that the arguments kept their values."""
    before = [np.copy(a) for a in arguments]
    for tiered in (True, False):
        jitted = jit_of(tiered)
        for call in range(3 if tiered else 2):
            if call == 2:
                jitted.wait_compiled()
            results = jitted(*arguments)
            if tiered and call == 0 and getattr(jitted, "interpreted_calls", 0):
                event("the tiered first call interpreted")
            check(results)
            _write_into_results(results, arguments)
            for k, (argument, entry) in enumerate(zip(arguments, before, strict=True)):
                np.testing.assert_array_equal(argument, entry, err_msg=f"argument {k} changed")


# Sums reassociate (vectorised and blocked accumulation); nothing else may differ. A
# reassociated sum's rounding error scales with its terms, not with its result: an entry
# that cancels to -17 out of terms near 8,000 carries the terms' error. So the absolute
# tolerance scales with the output's largest finite magnitude (a float32 gradient of
# that kind differed from the interpreter's by 0.024, both 0.35 from float64's).
TOLERANCE = {np.dtype(np.float64): 1e-9, np.dtype(np.float32): 2e-4}


def _oracle(compute, dtype):
    """``compute(cast)``, the oracle's answer with its inputs passed through ``cast``, and
    its own rounding error per output: how far each float32 output is from the same
    program computed in float64, largest over the entries finite in both (0.0 for
    float64 programs).

    A sum that cancels inside the program carries its terms' rounding error into every
    output downstream of it, whatever their magnitude: a 90,000-term product whose
    result is 300 from terms summing to 70,000 in magnitude, then squared and multiplied
    back, left a float32 gradient 0.63 from float64's on entries near 440 (numbax's
    answer was 0.04 from it). Two float32 computations of that program, each associating
    its sums its own way, may then differ by twice the oracle's own error."""
    want = compute(lambda array: array)
    if dtype != np.float32:
        return want, [0.0] * len(want)
    exact = compute(lambda array: np.asarray(array, np.float64))
    rounding = []
    for value, truth in zip(want, exact, strict=True):
        value, truth = np.asarray(value, np.float64), np.asarray(truth, np.float64)
        both = np.isfinite(value) & np.isfinite(truth)
        rounding.append(float(np.max(np.abs(value - truth)[both], initial=0.0)))
    return want, rounding


def _magnitude(array):
    """The largest finite magnitude in ``array``, at least 1."""
    return float(np.max(np.abs(array[np.isfinite(array)]), initial=1.0))


# The transforms' tests (grad, vmap) take inputs of up to this many elements: their
# programs hold many values of the inputs' size at once (the derivative's residuals, three
# examples stacked), too many of 32 MiB for a fuzzing machine's memory.
TRANSFORMED_MOST_ELEMENTS = 1 << 21


def _draw_program(data, most_elements: int | None = None):
    """A recorded program, its inputs, and how it runs again the same way."""
    dtype = np.dtype(data.draw(st.sampled_from([np.float64, np.float32]), label="dtype"))
    edges = data.draw(st.booleans(), label="edges")
    arrays = inputs(data, dtype, edge_shapes=edges, most_elements=most_elements)
    choices = Choices(data)
    run = program(choices, data.draw(st.integers(1, 8), label="steps"), max_outputs=3)

    def replayed(*args):
        choices.replay()
        return run(*args)

    with np.errstate(all="ignore"):
        expected = run(*arrays)  # records the draws
    largest = max(a.size for a in arrays)
    event(f"largest input of 10^{len(str(largest)) - 1}+ elements")
    return replayed, arrays, expected, dtype


def _assert_matches(got, expected, dtype, backend=None, rounding=None):
    """``backend`` (a test backend) brings device results back; None: they are NumPy's.
    ``rounding``: the oracle's own rounding error per output (``_oracle``); the answer
    may differ from it by twice that beyond the tolerance."""
    got = got if backend is None else backend.to_host(got)
    assert len(got) == len(expected)
    rounding = [0.0] * len(expected) if rounding is None else rounding
    for index, (value, want) in enumerate(zip(got, expected, strict=True)):
        value, want = np.asarray(value), np.asarray(want)
        assert value.shape == want.shape, (index, value.shape, want.shape)
        assert value.dtype == want.dtype, (index, value.dtype, want.dtype)
        tolerance = TOLERANCE[dtype]
        atol = tolerance * _magnitude(want)
        if 2 * rounding[index] > atol:
            event("the oracle's own rounding error exceeds the tolerance")
        np.testing.assert_allclose(
            value,
            want,
            rtol=tolerance,
            atol=atol + 2 * rounding[index],
            equal_nan=True,
            err_msg=f"output {index} (the oracle's own rounding: {rounding[index]:.3g})",
        )


@FUZZ
@given(data=st.data())
def test_random_programs_equal_numpy(backend, data):
    replayed, arrays, _, dtype = _draw_program(data)
    with np.errstate(all="ignore"), _real_sizes_paths(data):
        expected, rounding = _oracle(lambda cast: replayed(*map(cast, arrays)), dtype)
        _calls_of_every_tier(
            lambda tiered: numbax.jit(replayed, backend=backend, tiered=tiered),
            arrays,
            lambda got: _assert_matches(got, expected, dtype, backend, rounding),
        )


@contextlib.contextmanager
def _real_sizes_paths(data):
    """With ``NUMBAX_FUZZ_LARGE``, half the examples run large products split into blocks
    of rows (the BLAS without thread controls) instead of one threaded BLAS call."""
    with pytest.MonkeyPatch.context() as patch:
        if LARGE and data.draw(st.booleans(), label="products split into rows"):
            patch.setattr(blas, "AVAILABLE", False)
            event("large products split into rows")
        yield


@FUZZ
@given(data=st.data())
def test_random_programs_writing_every_output_into_pooled_arrays_equal_numpy(data, monkeypatch):
    """Each output the program makes goes to an array the executable keeps (the pool
    made for large ones, here for all): three calls, the first one's results held by
    the caller and the second's dropped, all give NumPy's answer, the held ones still
    after the third call reused the second's arrays."""
    from numbax.backends.cpu import program as cpu_program

    monkeypatch.setattr(cpu_program, "POOLED_FROM_BYTES", 0)
    replayed, arrays, _, dtype = _draw_program(data)
    with np.errstate(all="ignore"):
        expected, rounding = _oracle(lambda cast: replayed(*map(cast, arrays)), dtype)
        executable = cpu.backend.compile(numbax.make_jaxpr(replayed)(*arrays), "fuzzed")
        held = executable(*arrays)
        _assert_matches(executable(*arrays), expected, dtype, None, rounding)
        _assert_matches(executable(*arrays), expected, dtype, None, rounding)
        # Written into and dropped: the next call reuses those arrays and writes them whole.
        _write_into_results(executable(*arrays), arrays)
        _assert_matches(executable(*arrays), expected, dtype, None, rounding)
    _assert_matches(held, expected, dtype, None, rounding)


def _loss_reading_every_output(replayed, expected, dtype, seed):
    """A scalar loss of the program: each output times fixed random weights, summed."""
    rng = np.random.default_rng(seed)
    weights = [rng.standard_normal(np.shape(out)).astype(dtype) for out in expected]

    def loss(*args):
        outputs = replayed(*args)
        return sum(np.sum(out * w) for out, w in zip(outputs, weights, strict=True))

    return loss


@FUZZ
@given(data=st.data())
def test_random_program_gradients_equal_the_interpreter(compiled_backend, data):
    """``jit(grad)`` and ``grad(jit)`` on a compiled backend against ``grad`` evaluated
    eagerly by the reference implementations, for a loss reading every output."""
    replayed, arrays, expected, dtype = _draw_program(data, TRANSFORMED_MOST_ELEMENTS)
    loss = _loss_reading_every_output(replayed, expected, dtype, seed=len(arrays))
    argnums = tuple(range(len(arrays)))
    with np.errstate(all="ignore"):
        gradient = numbax.grad(loss, argnums=argnums)
        want, rounding = _oracle(lambda cast: gradient(*map(cast, arrays)), dtype)
        check = lambda got: _assert_matches(got, want, dtype, compiled_backend, rounding)  # noqa: E731
        _calls_of_every_tier(
            lambda tiered: numbax.jit(
                numbax.grad(loss, argnums=argnums), backend=compiled_backend, tiered=tiered
            ),
            arrays,
            check,
        )
        _calls_of_every_tier(
            lambda tiered: _GradThroughJit(loss, argnums, compiled_backend, tiered),
            arrays,
            check,
        )


class _GradThroughJit:
    """``grad(jit(loss))``, with the inner function's ``wait_compiled``."""

    def __init__(self, loss, argnums, backend, tiered):
        self.inner = numbax.jit(loss, backend=backend, tiered=tiered)
        self.gradient = numbax.grad(self.inner, argnums=argnums)

    def __call__(self, *arrays):
        return self.gradient(*arrays)

    def wait_compiled(self) -> None:
        self.inner.wait_compiled()


def _draw_batch(data, arrays, dtype):
    """Three examples of ``arrays`` for ``vmap``: each input batched along a random axis
    or shared (``in_axes=None``), the examples different from each other (the inputs, a
    scaled copy, fresh values). The in_axes, the batched arguments, and the arguments of
    each example."""
    shared = [data.draw(st.booleans(), label="shared") for _ in arrays]
    shared[data.draw(st.integers(0, len(arrays) - 1), label="batched input")] = False
    axes = [
        None if is_shared else data.draw(st.integers(0, array.ndim), label="batch axis")
        for array, is_shared in zip(arrays, shared, strict=True)
    ]
    rng = np.random.default_rng(len(arrays))
    examples = [
        [array, np.asarray(array * -0.5 + 0.25, dtype), rng.standard_normal(array.shape)]
        for array in arrays
    ]
    examples = [[np.asarray(example, dtype) for example in rows] for rows in examples]
    batched = [
        array if axis is None else np.stack(rows, axis=axis)
        for array, rows, axis in zip(arrays, examples, axes, strict=True)
    ]
    inputs = list(zip(arrays, examples, axes, strict=True))
    each = [[array if axis is None else rows[k] for array, rows, axis in inputs] for k in range(3)]
    return axes, batched, each


def _stacked(results):
    """The examples' results (tuples of arrays), each output stacked along a new axis 0."""
    return [np.stack(outputs) for outputs in zip(*results, strict=True)]


@FUZZ
@given(data=st.data())
def test_random_programs_under_vmap_equal_numpy_on_each_example(backend, data):
    """``jit(vmap(program))`` over three examples against NumPy running it on each."""
    replayed, arrays, _, dtype = _draw_program(data, TRANSFORMED_MOST_ELEMENTS)
    axes, batched, each = _draw_batch(data, arrays, dtype)
    with np.errstate(all="ignore"):
        expected, rounding = _oracle(
            lambda cast: _stacked([replayed(*map(cast, args)) for args in each]), dtype
        )
        _calls_of_every_tier(
            lambda tiered: numbax.jit(
                numbax.vmap(replayed, in_axes=axes), backend=backend, tiered=tiered
            ),
            batched,
            lambda got: _assert_matches(got, expected, dtype, backend, rounding),
        )


@FUZZ
@given(data=st.data())
def test_random_program_per_example_gradients_equal_the_interpreter(compiled_backend, data):
    """``jit(vmap(grad))`` over three examples against ``grad`` evaluated eagerly by the
    reference implementations on each, for a loss reading every output."""
    replayed, arrays, expected, dtype = _draw_program(data, TRANSFORMED_MOST_ELEMENTS)
    axes, batched, each = _draw_batch(data, arrays, dtype)
    loss = _loss_reading_every_output(replayed, expected, dtype, seed=len(arrays))
    gradient = numbax.grad(loss, argnums=tuple(range(len(arrays))))
    with np.errstate(all="ignore"):
        want, rounding = _oracle(
            lambda cast: _stacked([gradient(*map(cast, args)) for args in each]), dtype
        )
        _calls_of_every_tier(
            lambda tiered: numbax.jit(
                numbax.vmap(gradient, in_axes=axes), backend=compiled_backend, tiered=tiered
            ),
            batched,
            lambda got: _assert_matches(got, want, dtype, compiled_backend, rounding),
        )
