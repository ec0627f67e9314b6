"""What the backends' compile caches share: the text a generated module is keyed by, the
one loader of generated modules, and the locks that let one thread compile a program while
the others wait for it.

A generated module's comments say which eqn each line computes and at which of the
user's lines it was written (``source_info``); they change when the user's file moves,
while the program does not. So caches key a module on ``program_text``: its source
without comments, which still holds everything it computes (names, literals, constants,
the helpers it calls). The helpers' own source is not in the module: a cache key adds it
(``helpers_text``), since a compiled program holds the helpers compiled into it.

A generated module (a cpu launcher or kernel, a cuda program) is written to its backend's
cache folder, named by its key, via a temporary file and a rename, so a concurrent writer
never leaves half a file, and imported under that name in ``sys.modules``, which lets
Numba cache its compiled code beside it: a second process finds it on disk. A file that
differs from the source only in comments (the user's file:line) is kept, so Numba's cache
of it stays valid. Without a cache folder the source is executed in memory, registered
with ``linecache`` so tracebacks and Numba show it. An unwritable folder warns once and
the process writes under a temporary folder instead.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import io
import linecache
import os
import sys
import tempfile
import threading
import tokenize
import types
import warnings
from pathlib import Path


@functools.cache
def numbax_version() -> str:
    """The installed numbax's version ("unknown" run from a source tree): part of every
    key of what is kept on disk."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("numbax")
    except PackageNotFoundError:
        return "unknown"


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


_ONE_MODULE = KeyedLock()  # per module name: one thread writes and imports it


def load_module(source: str, module_name: str, folder: Path | None, label: str) -> types.ModuleType:
    """Import generated ``source`` as ``module_name``: from its file under ``folder``
    (``written``), or in memory without one; once per process. ``label`` names the
    backend in an in-memory module's file name (``<numbax-cpu name>``)."""
    with _ONE_MODULE(module_name):
        if module_name in sys.modules:
            return sys.modules[module_name]
        if folder is None:
            return _in_memory(module_name, source, label)
        return imported(module_name, written(module_name, source, folder))


def _in_memory(module_name: str, source: str, label: str) -> types.ModuleType:
    filename = f"<numbax-{label} {module_name}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    module = types.ModuleType(module_name)
    exec(compile(source, filename, "exec"), module.__dict__)
    # Registered once it has run to its end: no thread sees half a module. Code in a
    # ``numba.objmode`` block (a callback) finds its globals through it.
    sys.modules[module_name] = module
    return module


def written(module_name: str, source: str, folder: Path) -> Path:
    """The path of the module file holding ``source``'s program, (re)written if it does
    not (``same_program``)."""
    path = folder / f"{module_name}.py"
    try:
        existing = _read(path)
        if existing is None or not same_program(existing, source):
            _write_atomically(path, source)
    except OSError as err:
        fallback = _temporary_folder()
        warnings.warn(
            f"numbax: cannot write the compile cache at {folder} ({err}); using {fallback} "
            "for this process. Set NUMBAX_CACHE_DIR to a writable folder, or to 'off'.",
            RuntimeWarning,
            stacklevel=4,
        )
        return written(module_name, source, fallback)
    return path


@functools.cache
def _temporary_folder() -> Path:
    return Path(tempfile.mkdtemp(prefix="numbax-cache-"))


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def stored(path: Path, data: bytes) -> None:
    """Write ``data`` (compiled code) to ``path`` atomically; an unwritable folder warns as
    ``written`` does, and the code is then kept in this process only."""
    try:
        _write_atomically(path, data)
    except OSError as err:
        warnings.warn(
            f"numbax: cannot write the compile cache at {path.parent} ({err}); this code is "
            "not cached. Set NUMBAX_CACHE_DIR to a writable folder, or to 'off'.",
            RuntimeWarning,
            stacklevel=3,
        )


def _write_atomically(path: Path, text: str | bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=path.stem, suffix=".tmp")
    try:
        if isinstance(text, bytes):
            with os.fdopen(handle, "wb") as f:
                f.write(text)
        else:
            with os.fdopen(handle, "w", encoding="utf-8") as f:
                f.write(text)
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise


def imported(module_name: str, path: Path) -> types.ModuleType:
    """The module at ``path``, imported as ``module_name`` once per process."""
    with _ONE_MODULE(module_name):
        if module_name in sys.modules:
            return sys.modules[module_name]
        spec = importlib.util.spec_from_file_location(module_name, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        sys.modules[module_name] = module  # Numba's cache finds the function through it
        return module
