"""What the backends' compile caches share: the text a generated module is keyed by, and
the locks that let one thread compile a program while the others wait for it.

A generated module's comments say which eqn each line computes and at which of the
user's lines it was written (``source_info``); they change when the user's file moves,
while the program does not. So caches key a module on ``program_text``: its source
without comments, which still holds everything it computes (names, literals, constants,
the helpers it calls). The helpers' own source is not in the module: a cache key adds it
(``helpers_text``), since a compiled program holds the helpers compiled into it.
"""

from __future__ import annotations

import contextlib
import functools
import io
import threading
import tokenize
from pathlib import Path


@functools.lru_cache(maxsize=16)  # a compile asks for its key text more than once
def program_text(source: str) -> str:
    """``source`` with every comment removed, its lines kept (line numbers still matter
    to Numba's cache, which names a function's entry after the line of its ``def``)."""
    lines = io.StringIO(source).readlines()  # split exactly as tokenize numbers rows
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type == tokenize.COMMENT:
                row, column = token.start
                lines[row - 1] = lines[row - 1][:column].rstrip() + "\n"
    except (tokenize.TokenError, SyntaxError):
        return source  # not Python (a damaged cache file): only equal to itself
    return "".join(lines)


@functools.cache
def helpers_text(folder: str, names: tuple[str, ...]) -> str:
    """The source of the helper files ``names`` (paths relative to ``folder``), read once
    per process: what a cache key adds for the code compiled into every program."""
    return "".join((Path(folder) / name).read_text(encoding="utf-8") for name in names)


def same_program(text: str, source: str) -> bool:
    """Whether a module file's ``text`` holds the program of ``source``: a file that
    differs in comments only is kept as it is, so Numba's cache of it stays valid."""
    return text == source or program_text(text) == program_text(source)


class KeyedLock:
    """One lock per key, held while the thing of that key is made: ``with locks(key):``.

    Threads asking for one key take turns (the first makes it, the others find it made),
    threads asking for different keys do not wait for each other. A key's lock lives while
    a thread holds it or waits for it. It is re-entrant, so a thread that asks again for a
    key it is making (a function tracing itself) fails as it would single-threaded, rather
    than wait for itself forever.
    """

    def __init__(self):
        self._guard = threading.Lock()
        self._locks: dict = {}  # key -> [lock, number of threads holding or waiting]

    @contextlib.contextmanager
    def __call__(self, key):
        with self._guard:
            held = self._locks.setdefault(key, [threading.RLock(), 0])
            held[1] += 1
        try:
            with held[0]:
                yield
        finally:
            with self._guard:
                held[1] -= 1
                if not held[1]:
                    del self._locks[key]
