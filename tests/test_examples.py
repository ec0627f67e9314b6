"""The scripts in ``examples/`` run (in quick mode) and do what they claim: the digits MLP
reaches 95% test accuracy and trains as JAX does from the same start, per-example
gradients match a loop of ``grad``, the RNN's loss goes down."""

from __future__ import annotations

import importlib.util
import os

import numpy as np
import pytest

EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples")


def load_example(name: str):
    """The script as a module, loaded by path: ``examples/`` is not a package, and the
    module stays out of ``sys.modules`` (the package's double-import check reads it)."""
    spec = importlib.util.spec_from_file_location(f"example_{name}", os.path.join(EXAMPLES, name))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_mlp_digits_reaches_95_percent_and_trains_as_jax_does(capsys):
    pytest.importorskip("sklearn", reason="the digits example needs scikit-learn")
    results = load_example("mlp_digits.py").main(quick=True)
    ours = results[0]
    assert ours.implementation == "numbax"
    assert ours.test_accuracy >= 0.95
    assert ours.losses[-1] < 0.1 * ours.losses[0]
    if len(results) > 1:  # JAX is installed: same weights, batches and Adam
        theirs = results[1]
        np.testing.assert_allclose(ours.losses, theirs.losses, rtol=1e-3)
        assert abs(ours.test_accuracy - theirs.test_accuracy) <= 0.01
    table = capsys.readouterr().out
    assert "test accuracy" in table and "numbax" in table


def test_per_example_grads_match_a_loop_of_grad(capsys):
    worst = load_example("per_example_grads.py").main(quick=True)
    assert worst < 1e-10
    assert "vmap(grad) vs a loop of grad" in capsys.readouterr().out


def test_rnn_scan_loss_goes_down():
    losses = load_example("rnn_scan.py").main(quick=True)
    assert np.all(np.isfinite(losses))
    assert np.mean(losses[-5:]) < 0.2 * np.mean(losses[:5])
