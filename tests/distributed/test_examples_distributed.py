"""The distributed examples at 2 and 4 processes equal their single-process results:
the data-parallel MLP's loss curve (``pmean`` of shard gradients) that of one process on
the full minibatches, to float32 rounding; the strip-decomposed heat equation (halos by
``ppermute``) the whole grid stepped by NumPy."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from mpi_launch import ROOT, require_mpi, run, run_python

EXAMPLES = ROOT / "examples"


def _losses(done) -> list[float]:
    assert done.returncode == 0, done.stdout + done.stderr
    (line,) = [line for line in done.stdout.splitlines() if line.startswith("LOSSES ")]
    return json.loads(line.removeprefix("LOSSES "))


def test_data_parallel_mlp_follows_the_full_batch_run(tmp_path):
    require_mpi()
    pytest.importorskip("sklearn")
    script, epochs = EXAMPLES / "mlp_digits_distributed.py", 2
    alone = _losses(run_python(script, "--epochs", epochs, cache_dir=tmp_path, timeout=600))
    assert alone[-1] < alone[0] * 0.6  # it trains
    for processes in (2, 4):
        done = run(script, processes, "--epochs", epochs, cache_dir=tmp_path, timeout=600)
        np.testing.assert_allclose(_losses(done), alone, rtol=1e-5)


@pytest.mark.parametrize("processes", [2, 4])
def test_heat_equation_in_strips_equals_the_whole_grid(processes, tmp_path):
    script = EXAMPLES / "heat_halo.py"
    done = run(script, processes, "--steps", 50, cache_dir=tmp_path, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    (error,) = re.findall(r"MAX ERROR (\S+)", done.stdout)
    assert float(error) <= 1e-12, done.stdout
