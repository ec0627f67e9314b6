"""``numbax.optim``: each optimiser's first steps against the update rule written out in
NumPy, eagerly and under ``jit`` on every backend, and against optax when it is installed.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import numbax
from numbax import optim

STEPS = 3


def make_params(rng, dtype=np.float64):
    return {
        "w": rng.standard_normal((2, 3)).astype(dtype),
        "b": rng.standard_normal(3).astype(dtype),
        "layers": (rng.standard_normal(2).astype(dtype),),
    }


def make_grads(rng, params):
    return [
        numbax.tree_map(lambda p: rng.standard_normal(p.shape).astype(p.dtype), params)
        for _ in range(STEPS)
    ]


# The update rules, written out leaf by leaf for one array; ``lr(t)`` is the learning rate
# of the t-th update (t = 0, 1, ...).


def reference_sgd(p, grads, lr, momentum=0.0, nesterov=False):
    buffer = np.zeros_like(p)
    for t, g in enumerate(grads):
        buffer = g + momentum * buffer
        direction = g + momentum * buffer if nesterov else buffer
        p = p - lr(t) * direction
    return p


def reference_adam(p, grads, lr, b1=0.9, b2=0.999, eps=1e-8, weight_decay=0.0):
    m, v = np.zeros_like(p), np.zeros_like(p)
    for t, g in enumerate(grads):
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g**2
        m_hat, v_hat = m / (1 - b1 ** (t + 1)), v / (1 - b2 ** (t + 1))
        p = p - lr(t) * (m_hat / (np.sqrt(v_hat) + eps) + weight_decay * p)
    return p


def warmup_cosine(t, init=0.0, peak=0.1, warmup=2, total=6, end=0.01):
    if t < warmup:
        return init + (peak - init) * t / warmup
    done = min(t - warmup, total - warmup) / (total - warmup)
    return end + (peak - end) * 0.5 * (1 + math.cos(math.pi * done))


CASES = {
    "sgd": (
        lambda: optim.sgd(0.1),
        lambda p, gs: reference_sgd(p, gs, lambda t: 0.1),
    ),
    "sgd-momentum": (
        lambda: optim.sgd(0.1, momentum=0.9),
        lambda p, gs: reference_sgd(p, gs, lambda t: 0.1, momentum=0.9),
    ),
    "sgd-nesterov": (
        lambda: optim.sgd(0.1, momentum=0.9, nesterov=True),
        lambda p, gs: reference_sgd(p, gs, lambda t: 0.1, momentum=0.9, nesterov=True),
    ),
    "adam": (
        lambda: optim.adam(1e-2, b1=0.8, b2=0.99),
        lambda p, gs: reference_adam(p, gs, lambda t: 1e-2, b1=0.8, b2=0.99),
    ),
    "adamw": (
        lambda: optim.adamw(1e-2, weight_decay=0.1),
        lambda p, gs: reference_adam(p, gs, lambda t: 1e-2, weight_decay=0.1),
    ),
    "adam-warmup-cosine": (
        lambda: optim.adam(optim.warmup_cosine_decay_schedule(0.0, 0.1, 2, 6, end_value=0.01)),
        lambda p, gs: reference_adam(p, gs, warmup_cosine),
    ),
    "sgd-exponential-decay": (
        lambda: optim.sgd(optim.exponential_decay(0.5, transition_steps=2, decay_rate=0.3)),
        lambda p, gs: reference_sgd(p, gs, lambda t: 0.5 * 0.3 ** (t / 2)),
    ),
}


def train_step(opt):
    def step(params, state, grads):
        updates, state = opt.update(grads, state, params)
        return optim.apply_updates(params, updates), state

    return step


def run_steps(step, params, state, grads_seq):
    for grads in grads_seq:
        params, state = step(params, state, grads)
    return params, state


def expected_params(reference, params, grads_seq):
    leaves, treedef = numbax.tree_flatten(params)
    per_leaf = zip(*(numbax.tree_leaves(g) for g in grads_seq), strict=True)
    return numbax.tree_unflatten(
        treedef, [reference(p, list(gs)) for p, gs in zip(leaves, per_leaf, strict=True)]
    )


def assert_trees_close(actual, expected, rtol=1e-12, atol=1e-14):
    actual_leaves, actual_tree = numbax.tree_flatten(actual)
    expected_leaves, expected_tree = numbax.tree_flatten(expected)
    assert actual_tree == expected_tree
    for a, e in zip(actual_leaves, expected_leaves, strict=True):
        assert np.asarray(a).dtype == np.asarray(e).dtype
        np.testing.assert_allclose(a, e, rtol=rtol, atol=atol)


@pytest.mark.parametrize("case", CASES)
def test_eager_steps_match_the_update_rule(case, rng):
    make_opt, reference = CASES[case]
    opt = make_opt()
    params = make_params(rng)
    grads_seq = make_grads(rng, params)
    final, state = run_steps(train_step(opt), params, opt.init(params), grads_seq)
    assert_trees_close(final, expected_params(reference, params, grads_seq))
    assert all(isinstance(leaf, np.ndarray) for leaf in numbax.tree_leaves(state))


@pytest.mark.parametrize("case", CASES)
def test_jitted_steps_match_the_update_rule(case, backend, rng):
    make_opt, reference = CASES[case]
    opt = make_opt()
    params = make_params(rng)
    grads_seq = make_grads(rng, params)
    step = numbax.jit(train_step(opt), backend=backend)
    final, _ = run_steps(step, params, opt.init(params), grads_seq)
    assert step.cache_info().traces == 1  # the state keeps its types from step to step
    assert_trees_close(backend.to_host(final), expected_params(reference, params, grads_seq))


def test_step_count_is_an_int32_array_in_the_state():
    opt = optim.adam(optim.cosine_decay_schedule(1.0, 10))
    params = np.zeros(2)
    state = opt.init(params)
    for _ in range(2):
        _, state = numbax.jit(opt.update)(np.ones(2), state, params)
    counts = [leaf for leaf in numbax.tree_leaves(state) if leaf.dtype == np.int32]
    assert [(c.shape, int(c)) for c in counts] == [((), 2), ((), 2)]


def test_float32_parameters_stay_float32_with_a_schedule(rng):
    opt = optim.adamw(optim.exponential_decay(1e-2, 5, 0.5), weight_decay=0.1)
    params = make_params(rng, np.float32)
    grads_seq = make_grads(rng, params)
    final, state = run_steps(numbax.jit(train_step(opt)), params, opt.init(params), grads_seq)
    expected = expected_params(
        lambda p, gs: reference_adam(
            p.astype(np.float64),
            [g.astype(np.float64) for g in gs],
            lambda t: 1e-2 * 0.5 ** (t / 5),
            weight_decay=0.1,
        ).astype(np.float32),
        params,
        grads_seq,
    )
    assert_trees_close(final, expected, rtol=1e-5, atol=1e-6)
    moments = [leaf for leaf in numbax.tree_leaves(state) if leaf.dtype != np.int32]
    assert {leaf.dtype for leaf in moments} == {np.dtype(np.float32)}


SCHEDULES = {
    "constant": (optim.constant_schedule(0.3), lambda t: 0.3),
    "linear": (optim.linear_schedule(1.0, 0.2, 4, transition_begin=2), None),
    "exponential": (optim.exponential_decay(2.0, 3, 0.5), lambda t: 2.0 * 0.5 ** (t / 3)),
    "exponential-staircase-begin-end": (
        optim.exponential_decay(2.0, 3, 0.5, transition_begin=2, staircase=True, end_value=0.6),
        lambda t: max(2.0 * 0.5 ** (max(t - 2, 0) // 3), 0.6),
    ),
    "cosine": (
        optim.cosine_decay_schedule(1.0, 8, alpha=0.1),
        lambda t: 1.0 * (0.9 * 0.5 * (1 + math.cos(math.pi * min(t, 8) / 8)) + 0.1),
    ),
    "warmup-cosine": (
        optim.warmup_cosine_decay_schedule(0.0, 0.1, 2, 6, end_value=0.01),
        warmup_cosine,
    ),
}


def linear_reference(t):
    done = min(max(t - 2, 0), 4) / 4
    return 1.0 + (0.2 - 1.0) * done


@pytest.mark.parametrize("name", SCHEDULES)
def test_schedules_eagerly_and_under_jit(name):
    schedule, reference = SCHEDULES[name]
    reference = reference or linear_reference
    steps = range(12)
    expected = [reference(t) for t in steps]
    eager = [float(schedule(np.asarray(t, np.int32))) for t in steps]
    jitted_schedule = numbax.jit(lambda t: schedule(t) + 0.0 * t)
    jitted = [float(jitted_schedule(np.asarray(t, np.int32))) for t in steps]
    np.testing.assert_allclose(eager, expected, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(jitted, expected, rtol=1e-12, atol=1e-15)


def test_training_a_quadratic_under_jit_converges():
    target = {"a": np.array([1.0, -2.0]), "b": np.array(3.0)}

    def loss(params):
        return sum(np.sum((params[k] - target[k]) ** 2) for k in target)

    opt = optim.sgd(0.1, momentum=0.5)

    @numbax.jit
    def step(params, state):
        updates, state = opt.update(numbax.grad(loss)(params), state, params)
        return optim.apply_updates(params, updates), state

    params = {"a": np.zeros(2), "b": np.zeros(())}
    state = opt.init(params)
    for _ in range(100):
        params, state = step(params, state)
    assert_trees_close(params, target, rtol=1e-6, atol=1e-6)


def test_learning_rate_of_the_wrong_type_is_a_clear_error():
    with pytest.raises(numbax.NumbaxTypeError, match="learning_rate must be a float or a"):
        optim.adam("1e-3")


def test_nesterov_without_momentum_is_a_clear_error():
    with pytest.raises(numbax.NumbaxError, match="needs a momentum"):
        optim.sgd(0.1, nesterov=True)


def test_weight_decay_without_params_is_a_clear_error():
    opt = optim.adamw(1e-3)
    with pytest.raises(numbax.NumbaxTypeError, match=r"opt.update\(grads, state, params\)"):
        opt.update(np.ones(2), opt.init(np.ones(2)))


# --- against optax -----------------------------------------------------------------------


def _optax():
    return pytest.importorskip("optax", reason="optax is not installed (the oracle is optional)")


OPTAX_CASES = {
    "sgd": lambda ox: (optim.sgd(0.1), ox.sgd(0.1)),
    "sgd-nesterov": lambda ox: (
        optim.sgd(0.1, momentum=0.9, nesterov=True),
        ox.sgd(0.1, momentum=0.9, nesterov=True),
    ),
    "adam": lambda ox: (optim.adam(1e-2), ox.adam(1e-2)),
    "adamw": lambda ox: (optim.adamw(1e-2, weight_decay=0.1), ox.adamw(1e-2, weight_decay=0.1)),
    "adam-warmup-cosine": lambda ox: (
        optim.adam(optim.warmup_cosine_decay_schedule(0.0, 0.1, 2, 6, end_value=0.01)),
        ox.adam(ox.warmup_cosine_decay_schedule(0.0, 0.1, 2, 6, end_value=0.01)),
    ),
}


@pytest.mark.parametrize("case", OPTAX_CASES)
def test_matches_optax(case, rng):
    optax = _optax()
    ours, theirs = OPTAX_CASES[case](optax)
    params = make_params(rng, np.float32)
    grads_seq = make_grads(rng, params)
    final, _ = run_steps(numbax.jit(train_step(ours)), params, ours.init(params), grads_seq)

    def optax_step(params, state, grads):
        updates, state = theirs.update(grads, state, params)
        return optax.apply_updates(params, updates), state

    expected, _ = run_steps(optax_step, params, theirs.init(params), grads_seq)
    expected = numbax.tree_map(np.asarray, expected)
    assert_trees_close(final, expected, rtol=1e-5, atol=1e-6)
