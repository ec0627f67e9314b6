"""The cpu backend's compile cache: in memory, on disk, across processes, and when damaged."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import numbax
from numbax.backends import cpu
from numbax.backends.cpu import cache, llvm_kernels, units
from numbax.config import config


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setattr(config, "cache_dir", str(tmp_path))
    monkeypatch.setattr(config, "steps", False)  # launchers compiled: what is cached here
    monkeypatch.setattr(cache, "_LOADED", {})
    monkeypatch.setattr(units, "_COMPILED", {})
    return tmp_path


def _compile(scale: float):
    """A program without transcendental functions: nothing but the program is compiled."""
    closed = numbax.make_jaxpr(lambda x: (x * scale + 1.0).sum(axis=0))(np.ones((3, 2)))
    return cpu.backend.compile(closed, "cached")


def _forget(executable) -> None:
    """Make this process forget the program, as a new process would not know it."""
    module = executable.function.py_func.__module__
    cache._LOADED.clear()
    del sys.modules[module]
    for unit in executable.program.units:  # and its kernels (``units``)
        units._COMPILED.pop(unit.key, None)
        sys.modules.pop(unit.module_name, None)


def _numba_files(cache_dir):
    return sorted(p.name for p in (cache_dir / "cpu" / "__pycache__").glob("*.nb*"))


def test_programs_are_cached_in_memory(cache_dir):
    first, second = _compile(2.0), _compile(2.0)
    assert first.function is second.function  # the same source is compiled once
    assert _compile(3.0).function is not first.function


def test_disk_cache_holds_the_module_and_numba_object_code(cache_dir, monkeypatch):
    monkeypatch.setattr(config, "llvm_kernels", False)  # the kernel's code Numba's too
    executable = _compile(11.0)
    # One module per program (its launcher) and one per distinct kernel (``units``).
    (module,) = (cache_dir / "cpu").glob("numbax_cpu_cached_*.py")
    assert module.read_text() == executable.program.launcher
    kernels = sorted(p.name for p in (cache_dir / "cpu").glob("numbax_kernel_*.py"))
    assert kernels == sorted(f"{unit.module_name}.py" for unit in executable.program.units)
    assert len(kernels) == 1  # the reduction
    for unit in executable.program.units:
        assert (cache_dir / "cpu" / f"{unit.module_name}.py").read_text() == unit.source
        assert unit.source in executable.source  # shown with the launcher
    assert not list((cache_dir / "cpu").glob("*.tmp"))  # written atomically
    assert any(name.endswith(".nbi") for name in _numba_files(cache_dir))
    _forget(executable)
    reloaded = _compile(11.0)
    assert sum(reloaded.function.stats.cache_hits.values()) == 1  # loaded, not compiled
    assert reloaded.compile_stats.kernels == {"disk": 1}  # the kernel too
    assert "define" in reloaded.llvm_ir()  # compiled again in memory to be shown
    np.testing.assert_allclose(reloaded(np.ones((3, 2)))[0], [36.0, 36.0])


def test_disk_cache_holds_llvmlite_object_code_of_a_kernel(cache_dir):
    executable = _compile(17.0)
    (unit,) = executable.program.units  # the reduction, which llvmlite compiles
    assert executable.compile_stats.kernels == {"compiled": 1}
    assert executable.compile_stats.llvmlite == 1
    assert not list((cache_dir / "cpu").glob("numbax_kernel_*.py"))  # no Numba module
    (code,) = (cache_dir / "cpu").glob(f"{llvm_kernels.CACHE_PREFIX}*.o")
    assert not list((cache_dir / "cpu").glob("*.tmp"))  # written atomically
    assert unit.source in executable.source  # its text is shown with the launcher
    _forget(executable)
    reloaded = _compile(17.0)
    assert reloaded.compile_stats.kernels == {"disk": 1}
    assert "define" in reloaded.llvm_ir()
    np.testing.assert_allclose(reloaded(np.ones((3, 2)))[0], [54.0, 54.0])
    code.write_bytes(b"damaged")  # a damaged entry: a warning, compiled again
    _forget(reloaded)
    with pytest.warns(RuntimeWarning, match="could not be loaded"):
        again = _compile(17.0)
    assert again.compile_stats.kernels == {"compiled": 1}
    np.testing.assert_allclose(again(np.ones((3, 2)))[0], [54.0, 54.0])


def test_a_new_process_loads_the_compiled_program(cache_dir):
    script = textwrap.dedent(
        """
        import numpy as np, numbax
        f = numbax.jit(lambda x: np.exp(x) * 2.0 + x)
        x = np.linspace(0.0, 1.0, 5)
        np.testing.assert_allclose(f(x), np.exp(x) * 2.0 + x, rtol=1e-12)
        hits = f.lower(x).compile().function.stats.cache_hits
        print(sum(hits.values()))
        """
    )
    env = dict(os.environ, NUMBAX_CACHE_DIR=str(cache_dir), NUMBAX_BACKEND="cpu", NUMBAX_STEPS="0")
    runs = [
        subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True)
        for _ in range(2)
    ]
    assert all(run.returncode == 0 for run in runs), runs[-1].stderr
    assert [run.stdout.split()[-1] for run in runs] == ["0", "1"]


def test_damaged_entries_are_recompiled_with_a_warning(cache_dir):
    executable = _compile(13.0)
    for name in _numba_files(cache_dir):
        (cache_dir / "cpu" / "__pycache__" / name).write_bytes(b"not a pickle")
    _forget(executable)
    with pytest.warns(RuntimeWarning, match="could not be loaded"):
        recompiled = _compile(13.0)
    np.testing.assert_allclose(recompiled(np.ones((3, 2)))[0], [42.0, 42.0])


def test_a_program_numba_refuses_is_compiled_once_beside_a_warm_cache(cache_dir, monkeypatch):
    """Numba refusing a program beside cached entries (here the first program's) is the
    program's error, raised as it comes: not taken for a damaged entry, warned about
    and compiled a second time."""
    from numba.core.errors import TypingError

    _compile(15.0)
    attempts = []

    def refuses(dispatcher, signature, cached):
        attempts.append(signature)
        raise TypingError("No implementation of function setitem")

    monkeypatch.setattr(cache, "_compile", refuses)
    monkeypatch.setattr(cache, "_compiled_files", lambda folder, prefixes: ["warm"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(TypingError):
            _compile(16.0)
    assert len(attempts) == 1


def test_a_damaged_module_file_is_rewritten(cache_dir):
    executable = _compile(14.0)
    (module,) = (cache_dir / "cpu").glob("numbax_cpu_cached_*.py")
    module.write_text("this is not python")
    _forget(executable)
    rewritten = _compile(14.0)
    assert module.read_text() == rewritten.program.launcher
    np.testing.assert_allclose(rewritten(np.ones((3, 2)))[0], [45.0, 45.0])


def test_no_cache_dir_compiles_in_memory(tmp_path, monkeypatch):
    monkeypatch.setattr(config, "cache_dir", None)
    executable = _compile(5.0)
    assert not list(tmp_path.iterdir())
    np.testing.assert_allclose(executable(np.ones((3, 2)))[0], [18.0, 18.0])


def test_an_unwritable_cache_dir_falls_back_to_a_temporary_folder(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setattr(config, "cache_dir", str(blocker / "cache"))
    with pytest.warns(RuntimeWarning, match="cannot write the compile cache"):
        executable = _compile(7.0)
    np.testing.assert_allclose(executable(np.ones((3, 2)))[0], [24.0, 24.0])


_SCRIPT = """
import os

import numpy as np
import numbax

SCALE = 2.5
OFFSETS = np.arange(7.0)


def helper(x):
    return np.exp(x) - x


@numbax.jit
def program(x):
    return helper(x) * SCALE + OFFSETS


x = np.linspace(0.0, 1.0, 7)
np.testing.assert_allclose(program(x), (np.exp(x) - x) * SCALE + OFFSETS, rtol=1e-12)
executable = program.lower(x).compile()
assert os.path.basename(__file__) + ":" in executable.source  # this file's lines
print(sum(executable.function.stats.cache_hits.values()))
"""


def _disk_hits(script: str, path, cache_dir) -> int:
    """Run ``script`` as the file ``path`` in a new process: how often it loaded the
    program's compiled code from the disk cache (0: it compiled)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(script)
    env = dict(os.environ, NUMBAX_CACHE_DIR=str(cache_dir), NUMBAX_BACKEND="cpu", NUMBAX_STEPS="0")
    run = subprocess.run([sys.executable, str(path)], env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    return int(run.stdout.split()[-1])


def test_moving_a_function_keeps_its_cache_and_editing_it_recompiles(tmp_path):
    cache_dir = tmp_path / "cache"
    assert _disk_hits(_SCRIPT, tmp_path / "first.py", cache_dir) == 0
    shifted = "# the same program, a few lines further down\n\n\n" + _SCRIPT
    assert _disk_hits(shifted, tmp_path / "elsewhere" / "second.py", cache_dir) == 1
    new_values = _SCRIPT.replace("np.arange(7.0)", "np.arange(7.0) ** 2")
    assert _disk_hits(new_values, tmp_path / "values.py", cache_dir) == 1  # constants are data
    edits = {
        "body": ("* SCALE + OFFSETS", "* SCALE - OFFSETS"),
        "global": ("SCALE = 2.5", "SCALE = 3.5"),
        "helper": ("np.exp(x) - x", "np.exp(x) + x"),
    }
    for what, (old, new) in edits.items():
        edited = _SCRIPT.replace(old, new)
        assert _disk_hits(edited, tmp_path / f"{what}.py", cache_dir) == 0, what


def test_programs_differing_only_in_comments_share_a_key():
    source = "def f(x):  # from a.py:3\n    # kernel 0\n    return x + 1  # '#' (b.py:9)\n"
    moved = "def f(x):  # from c.py:30\n    # kernel 0\n    return x + 1  # '#' (d.py:90)\n"
    assert cache.program_key(source) == cache.program_key(moved)
    assert cache.program_key(source) != cache.program_key(source.replace("+ 1", "+ 2"))
    literal = "def f(x):\n    return x + '#1'\n"
    assert cache.program_key(literal) != cache.program_key(literal.replace("#1", "#2"))


_VARIED_SCRIPT = """
import numpy as np, numbax
from numbax.tracer.control_flow import cond, fori_loop

def loss(x, y):
    s = numbax.nn.softmax(x / (1.0 + y * y), axis=0)
    def step(i, c):
        return c.at[i % 3].set(np.tanh(c[i % 3]) * 0.5 + s[i % 3])
    c = fori_loop(0, 4, step, x * 0.25)
    d = cond(np.sum(y) > 0.0, lambda a: a * 2.0, lambda a: a - 1.0, c)
    return np.sum(d * s) + np.max(np.sum(x @ y.T, axis=1))

x = np.linspace(-1.0, 1.0, 12).reshape(3, 4)
y = np.cos(np.arange(12.0)).reshape(3, 4)
program = numbax.jit(numbax.grad(loss, argnums=(0, 1)))
gx, gy = program(x, y)
want = numbax.grad(loss, argnums=(0, 1))(x, y)
np.testing.assert_allclose(gx, want[0], rtol=1e-9, atol=1e-12)
np.testing.assert_allclose(gy, want[1], rtol=1e-9, atol=1e-12)
print(sum(program.lower(x, y).compile().function.stats.cache_hits.values()))
"""


def test_a_program_generates_the_same_source_in_every_process(tmp_path, monkeypatch):
    """Generated code may not depend on string hashing or object addresses (the order of a
    set): the disk cache keys on the source, so a second process with another hash seed
    must find the first one's program."""
    cache_dir = tmp_path / "cache"
    hits = []
    for seed in ("1", "2"):
        monkeypatch.setenv("PYTHONHASHSEED", seed)
        hits.append(_disk_hits(_VARIED_SCRIPT, tmp_path / "varied.py", cache_dir))
    assert hits == [0, 1]
