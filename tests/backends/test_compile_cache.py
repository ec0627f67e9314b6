"""What the backends' compile caches share: the comment-free text a generated module is
keyed by, and the per-key locks that let one thread compile while the others wait."""

from __future__ import annotations

import threading

import numpy as np

import numbax
from numbax.backends.compile_cache import KeyedLock, program_text


def test_program_text_drops_comments_and_keeps_lines_and_strings():
    source = 'x = "# not a comment"  # a comment (a.py:3)\n# kernel 0\ny = 1\n'
    assert program_text(source) == 'x = "# not a comment"\n\ny = 1\n'


def test_a_damaged_module_is_its_own_text():
    assert program_text("def f(:\n  ) x") == "def f(:\n  ) x"


def _first(x):
    return np.sin(x) * 2.0 + x


def _same_program_further_down(x):
    return np.sin(x) * 2.0 + x


def _another_program(x):
    return np.sin(x) * 3.0 + x


def test_cuda_module_names_ignore_source_positions():
    from numbax.backends.cuda import CudaBackend, CudaOptions

    x = np.ones(4, np.float32)
    backend = CudaBackend(CudaOptions.for_gpu())
    first, moved, other = (
        backend.lower(numbax.make_jaxpr(f)(x), "fn")
        for f in (_first, _same_program_further_down, _another_program)
    )
    assert first.source != moved.source  # their comments name different lines
    assert first.module_name == moved.module_name
    assert first.module_name != other.module_name


def test_cuda_module_names_follow_the_device_functions_they_call(monkeypatch):
    # A kernel's cached code holds the device functions it calls (Threefry, complex
    # powers): changing one must name a new module, not load the stale kernels.
    from numbax.backends.cuda import loader

    assert "def threefry_functions" in loader._helpers_text()  # every helper file read
    before = loader.module_name("fn", "x = 1")
    monkeypatch.setattr(loader, "_helpers_text", lambda: "another device library")
    assert loader.module_name("fn", "x = 1") != before


def test_a_keyed_lock_holds_back_only_threads_of_the_same_key():
    locks = KeyedLock()
    holding, release = threading.Event(), threading.Event()
    order = []

    def hold_a():
        with locks("a"):
            holding.set()
            release.wait()
            order.append("first a")

    def second_a():
        with locks("a"):
            order.append("second a")

    holder = threading.Thread(target=hold_a)
    holder.start()
    holding.wait()
    with locks("b"):  # taken while "a" is held
        order.append("b")
    waiter = threading.Thread(target=second_a)
    waiter.start()
    release.set()
    holder.join()
    waiter.join()
    assert order == ["b", "first a", "second a"]
    with locks("a"), locks("a"):  # re-entrant
        pass
