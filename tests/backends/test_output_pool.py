"""Large outputs written into arrays the executable keeps (``program.pooled_outputs``,
``executable.OutputPool``): the same values as NumPy; a returned array reused only once
nothing else holds it (no variable, container, view, buffer export or weak reference),
so no caller ever sees one change; the parts of a split program, control flow, narrow
floats and many threads; and the threshold that decides which outputs take part."""

from __future__ import annotations

import functools
import weakref

import numpy as np
import pytest
from test_program_parts import _arguments, mixed_program
from test_threads import _together

import numbax
import numbax.numpy as xnp
from numbax.backends import cpu
from numbax.backends.cpu import executable as executables
from numbax.backends.cpu import parts, program


@pytest.fixture
def pool_everything(monkeypatch):
    """Every output the program makes is pooled, small ones included."""
    monkeypatch.setattr(program, "POOLED_FROM_BYTES", 0)


def _compiled(function, *args):
    return cpu.backend.compile(numbax.make_jaxpr(function)(*args), function.__name__)


def chain(x, y):
    return np.tanh(x * 1.5 + 0.5) * 0.5 + y * y, x.sum(), x, (x * y).reshape(-1)


def chain_numpy(x, y):
    return np.tanh(x * 1.5 + 0.5) * 0.5 + y * y, x.sum(), x, (x * y).reshape(-1)


def _address(array) -> int:
    return array.__array_interface__["data"][0]


def _inputs(seed, shape=(64, 32)):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(shape), rng.standard_normal(shape)


def _assert_chain(got, x, y):
    for value, want in zip(got, chain_numpy(x, y), strict=True):
        np.testing.assert_allclose(value, want, rtol=1e-12, atol=1e-12)


def test_made_outputs_are_pooled_and_arguments_are_not(pool_everything):
    executable = _compiled(chain, *_inputs(0))
    # The elementwise result, the 0-d sum (an array the return statement makes is not
    # the kernel's) and the flat product; never the argument returned as it is.
    pooled = executable.program.pooled
    assert 0 in pooled and 2 not in pooled
    assert executable.program.source.count("the executable's array") == len(pooled)
    _assert_chain(executable(*_inputs(0)), *_inputs(0))


def test_a_held_result_never_changes_and_a_dropped_one_is_reused(pool_everything):
    executable = _compiled(chain, *_inputs(0))
    first = executable(*_inputs(1))
    second = executable(*_inputs(2))  # `first` is held: a new array
    assert _address(second[0]) != _address(first[0])
    _assert_chain(first, *_inputs(1))
    address = _address(first[0])
    del first
    third = executable(*_inputs(3))  # the first result's array, nothing holds it now
    assert _address(third[0]) == address
    assert executable._call.made == 2 * len(executable.program.pooled)
    _assert_chain(second, *_inputs(2))
    _assert_chain(third, *_inputs(3))


# What holds a result, how to read it back, and what it must read as.
HOLDERS = {
    "view": (lambda r: r[0][::2], lambda h: h, lambda want: want[::2]),
    "list": (lambda r: [r[0]], lambda h: h[0], lambda want: want),
    "memoryview": (lambda r: memoryview(r[0]), np.asarray, lambda want: want),
    "asarray": (lambda r: np.asarray(r[0]), lambda h: h, lambda want: want),
    "reshape": (lambda r: r[0].reshape(-1), lambda h: h, lambda want: want.reshape(-1)),
}


@pytest.mark.parametrize("holder", HOLDERS)
def test_what_holds_a_result_keeps_it_from_reuse(pool_everything, holder):
    hold, read, expect = HOLDERS[holder]
    executable = _compiled(chain, *_inputs(0))
    result = executable(*_inputs(1))
    first, held = result[0].copy(), hold(result)
    del result
    for seed in range(2, 6):
        _assert_chain(executable(*_inputs(seed)), *_inputs(seed))
    np.testing.assert_array_equal(read(held), expect(first))


def test_a_weakly_referenced_result_is_not_reused(pool_everything):
    executable = _compiled(chain, *_inputs(0))
    result = executable(*_inputs(1))[0]
    first, reference, address = result.copy(), weakref.ref(result), _address(result)
    del result
    for seed in range(2, 5):
        assert _address(executable(*_inputs(seed))[0]) != address
    np.testing.assert_array_equal(reference(), first)


def test_the_default_threshold_pools_outputs_from_32_mib():
    def scaled(x):
        return x * 2.0, x[: x.size // 2] + 1.0

    x = np.ones(program.POOLED_FROM_BYTES // 4, np.float32)  # 32 MiB, and half of it
    executable = _compiled(scaled, x)
    assert executable.program.pooled == [0]
    for _ in range(3):
        doubled, shifted = executable(x)
        np.testing.assert_array_equal(doubled, 2.0)
        np.testing.assert_array_equal(shifted, 2.0)


def test_a_program_in_parts_passes_the_pooled_array_to_the_part_that_writes_it(
    pool_everything, monkeypatch
):
    monkeypatch.setattr(parts, "PART_LINES", 100)
    args = _arguments()
    executable = _compiled(mixed_program, *args)
    assert executable.program.parts >= 2 and executable.program.pooled
    want = mixed_program(*args)
    results = [executable(*args) for _ in range(3)]
    for got in results:
        for value, expected in zip(got, want, strict=True):
            np.testing.assert_allclose(value, expected, rtol=1e-10, atol=1e-10)


def control_flow(x):
    def step(carry, row):
        carry = carry * 0.5 + row
        return carry, carry * 2.0

    last, stacked = numbax.scan(step, np.zeros(x.shape[1]), x)
    chosen = numbax.cond(x[0, 0] > 0, lambda v: v + 1.0, lambda v: v - 1.0, x)
    return last, stacked, chosen


def control_flow_numpy(x):
    carry, rows = np.zeros(x.shape[1]), []
    for row in x:
        carry = carry * 0.5 + row
        rows.append(carry * 2.0)
    return carry, np.stack(rows), x + 1.0 if x[0, 0] > 0 else x - 1.0


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_control_flow_results_are_right_when_pooled(pool_everything, sign):
    x = np.abs(_inputs(0)[0]) * sign
    executable = _compiled(control_flow, x)
    held = [executable(x * k) for k in (1.0, 2.0, 3.0)]
    for k, got in zip((1.0, 2.0, 3.0), held, strict=True):
        for value, want in zip(got, control_flow_numpy(x * k), strict=True):
            np.testing.assert_allclose(value, want, rtol=1e-12, atol=1e-12)


def test_narrow_float_outputs_are_pooled_as_their_bits(pool_everything):
    import ml_dtypes

    x = _inputs(0)[0].astype(ml_dtypes.bfloat16)
    executable = _compiled(lambda v: v * 2, x)
    assert executable.program.pooled == [0]
    first = executable(x)[0]
    for _ in range(3):
        (got,) = executable(x * 3)
        assert got.dtype == ml_dtypes.bfloat16
        np.testing.assert_array_equal(got, x * 3 * 2)
    np.testing.assert_array_equal(first, x * 2)


def test_threads_each_get_their_own_array(pool_everything):
    executable = _compiled(chain, *_inputs(0))

    def work(thread):
        kept = []
        for call in range(30):
            seed = 100 * thread + call
            result = executable(*_inputs(seed))
            if call % 3 == 0:  # some results held to the end, the others dropped at once
                kept.append((seed, result))
            else:
                _assert_chain(result, *_inputs(seed))
        for seed, result in kept:
            _assert_chain(result, *_inputs(seed))

    _together([functools.partial(work, thread) for thread in range(8)])


def test_the_unheld_count_is_what_a_list_alone_gives():
    array = np.empty(3)
    kept = [array]
    assert executables._unheld(kept, executables._UNHELD) is None  # `array` holds it too
    del array
    assert executables._unheld(kept, executables._UNHELD) == 0


def test_jit_returns_pooled_arrays_that_stay_right(pool_everything):
    @numbax.jit
    def f(x):
        return xnp.sin(x) * 2.0

    x = np.linspace(0.0, 1.0, 1000)
    results = [f(x + k) for k in range(4)]
    for k, got in enumerate(results):
        np.testing.assert_allclose(got, np.sin(x + k) * 2.0, rtol=1e-12)
    for k in range(4):
        np.testing.assert_allclose(f(x - k), np.sin(x - k) * 2.0, rtol=1e-12)


def test_a_call_whose_arguments_are_copied_first_still_reuses_arrays(pool_everything):
    """A strided argument fails the compiled signature and is copied; the arrays the
    failed attempt took stay in the pool."""
    executable = _compiled(chain, *_inputs(0))
    pool = executable._call
    wide = [np.repeat(a, 2, axis=1)[:, ::2] for a in _inputs(1)]  # strided views
    assert not wide[0].flags.c_contiguous
    for _ in range(4):
        _assert_chain(executable(*wide), *_inputs(1))
    assert pool.made == len(executable.program.pooled)  # one array per output, reused
