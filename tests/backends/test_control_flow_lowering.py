"""Random nested control flow, compiled, against the interpreter on the same program.

Programs are drawn while they are traced: a few steps, each an elementwise update, a
``cond`` (its branches drawn in turn), a ``scan`` over stacked values, a ``fori_loop``
or a counted ``while_loop``, nested up to a depth. Loop bodies return their carries
shuffled: swapped, passed through unchanged, recomputed, and as ``ys`` the carry they
received, which is what the backends' buffer reuse (memory plans, the CUDA loop pool)
must survive. Runs on every compiled backend (``compiled_backend``: CPU, and CUDA under
the simulator).
"""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import numbax
from numbax.backends import get_backend
from numbax.ir.interpret import eval_jaxpr

MAX_DEPTH = 2


def _pick(data, values, label="operand"):
    return values[data.draw(st.integers(0, len(values) - 1), label=label)]


def _elementwise(data, values):
    x, y = _pick(data, values), _pick(data, values)
    ops = ["tanh_add", "mul", "sin", "where", "scaled", "reversed"]
    op = data.draw(st.sampled_from(ops), label="op")
    if op == "tanh_add":
        return np.tanh(x + y)
    if op == "mul":
        return x * y * 0.5
    if op == "sin":
        return np.sin(x) + 1.0
    if op == "where":
        return np.where(x > y, x, y - 1.0)
    if op == "reversed":  # wrong, not just stale, if an output buffer aliases x
        return x[::-1] * 1.5 - y
    return x * 0.75 + y.sum() * 0.25  # a reduction inside the body


def _block(data, values, depth, steps=None):
    """A few steps over ``values`` (all of one shape); the values computed."""
    values = list(values)
    n = steps if steps is not None else data.draw(st.integers(1, 3), label="steps")
    for _ in range(n):
        kinds = ["elementwise"] + (["cond", "scan", "fori", "while"] if depth < MAX_DEPTH else [])
        kind = data.draw(st.sampled_from(kinds), label="kind")
        if kind == "elementwise":
            values.append(_elementwise(data, values))
        else:
            values.extend(_CONTROL[kind](data, values, depth + 1))
    return values


def _shuffled(data, carry, computed):
    """New carries: each one a computed value, or an incoming carry passed through or
    moved to another position (same shape and dtype throughout)."""
    choices = list(carry) + list(computed)
    return tuple(_pick(data, choices, "new carry") for _ in carry)


def _cond(data, values, depth):
    x = _pick(data, values, "predicate")
    operands = (_pick(data, values), _pick(data, values))

    def branch(a, b):
        return tuple(_block(data, [a, b], depth)[-2:])

    return list(numbax.cond(x.sum() > 0, branch, branch, *operands))


def _scan(data, values, depth):
    carry = (_pick(data, values), _pick(data, values))
    length = data.draw(st.integers(0, 3), label="length")
    xs = np.stack([_pick(data, values) for _ in range(max(length, 1))])[:length]
    reverse = data.draw(st.booleans(), label="reverse")

    def body(c, row):
        computed = _block(data, [*c, row], depth)[3:]
        y = _pick(data, [*c, *computed], "y")  # may be the incoming carry
        return _shuffled(data, c, computed), y

    final, ys = numbax.scan(body, carry, xs, reverse=reverse)
    return [*final, ys.sum(axis=0)]


def _fori(data, values, depth):
    carry = (_pick(data, values), _pick(data, values))
    steps = data.draw(st.integers(0, 4), label="trip count")

    def body(i, c):
        computed = _block(data, [*c, c[0] * i], depth)[3:]
        return _shuffled(data, c, computed)

    return list(numbax.fori_loop(0, steps, body, carry))


def _while(data, values, depth):
    carry = (_pick(data, values), _pick(data, values))
    limit = data.draw(st.integers(0, 3), label="trip count")

    def body(state):
        k, c = state
        computed = _block(data, list(c), depth)[2:]
        return k + 1, _shuffled(data, c, computed)

    return list(numbax.while_loop(lambda s: s[0] < limit, body, (0, carry))[1])


_CONTROL = {"cond": _cond, "scan": _scan, "fori": _fori, "while": _while}


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[  # the backend fixture is a name: nothing to reset
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.function_scoped_fixture,
    ],
)
@given(data=st.data())
def test_random_control_flow_matches_the_interpreter(compiled_backend, data):
    size = data.draw(st.sampled_from([1, 3, 5]), label="size")
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    inputs = [rng.standard_normal(size) for _ in range(2)]

    def program(a, b):
        values = _block(data, [a, b], 0, steps=data.draw(st.integers(1, 3), label="top"))
        return values[-1], _pick(data, values, "extra output")

    closed = numbax.make_jaxpr(program)(*inputs)
    expected = eval_jaxpr(closed.jaxpr, closed.consts, *inputs)
    actual = get_backend(compiled_backend).compile(closed, "random_control_flow")(*inputs)
    for got, want in zip(compiled_backend.to_host(list(actual)), expected, strict=True):
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-10, atol=1e-12)
