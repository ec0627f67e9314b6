"""A script that ends while its program compiles in the background (a thread here, kernels
in compile workers) leaves the disk cache whole: the next process finds what was
finished, compiles the rest, and reads no damaged entry (backends/tiered.py,
backends/cpu/compile_workers.py). The exit itself is guarded by subprocess's timeout; the
tests of tiered execution and of the workers check it too."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

pytest.importorskip("numba")

_PROGRAM = textwrap.dedent(
    """
    import json, sys, time, warnings
    import numpy as np
    import numbax
    from numbax.backends.cpu import compile_workers

    warnings.filterwarnings("error", message="numbax: the compile cache entry")

    def layers(x, w):
        for k in range(6):  # distinct kernels: work for the compile worker
            x = np.tanh(x @ w + k) * (k + 1.0)
        return x

    x = np.linspace(-1.0, 1.0, 16).reshape(4, 4)
    w = np.eye(4) * 0.3 + 0.01
    if sys.argv[1] == "leave":  # interpreted; the script ends while the compile runs
        f = numbax.jit(layers, tiered=True)
        y = f(x, w)
        while not compile_workers._WORKERS:  # the background compile starts them
            time.sleep(0.01)
    else:  # a later process: compiled before its first call, from what the cache holds
        f = numbax.jit(layers, tiered=False)
        y = f(x, w)
        assert f.interpreted_calls == 0
    print(json.dumps(np.asarray(y).tolist()))
    """
)


def _run(stage: str, cache: str) -> np.ndarray:
    env = dict(os.environ, NUMBAX_CACHE_DIR=cache, NUMBAX_COMPILE_WORKERS="1")
    env["NUMBAX_LLVM_KERNELS"] = "0"  # Numba's kernels: enough work for a worker
    done = subprocess.run(
        [sys.executable, "-c", _PROGRAM, stage],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return np.array(json.loads(done.stdout.strip().splitlines()[-1]))


def test_the_next_process_finds_a_whole_cache_after_an_exit_mid_compile(tmp_path):
    x = np.linspace(-1.0, 1.0, 16).reshape(4, 4)
    w = np.eye(4) * 0.3 + 0.01
    expected = x
    for k in range(6):
        expected = np.tanh(expected @ w + k) * (k + 1.0)
    cache = str(tmp_path / "cache")
    np.testing.assert_allclose(_run("leave", cache), expected, rtol=1e-12)
    np.testing.assert_allclose(_run("compile", cache), expected, rtol=1e-12)
