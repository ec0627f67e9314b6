"""Generated modules and their compiled code: in memory, and on disk under ``cache_dir``.

A program's key is a hash of its generated source without comments (``program_text``:
a comment's file:line moves with the user's code, the program does not) and of
everything else that decides the machine code: the numbax, Numba and Python versions,
and the source of the helper modules the generated code inlines or calls (``fastmath``,
``intrinsics``, ``mathlib``, ``linalg``, ``lapack``, ``sorting``, ``threefry``), which
Numba's own cache does not track. On disk the source
is a ``.py`` module named after the key, written once and atomically (temporary file +
``os.replace``), so concurrent processes never read half a file. It is imported under
that name and registered in ``sys.modules``, and its function is compiled for the
module's ``SIGNATURE`` with Numba's disk cache, whose object code sits next to it
(``__pycache__``): a later process loads it without compiling. Numba checks that the
module file is unchanged (a hash of its bytes), so a file that holds the program is
left as it is, whoever's comments it carries. A large program cut into parts
(``parts.py``) is still one module and one key: Numba links the parts into the program
function, whose cached machine code holds them, so a hit compiles none of them. An
entry that cannot be read or loaded is compiled afresh, with a warning, never an error.

Any number of threads may load at once: one compiles or loads each program, and each
generated module, while the others asking for it wait (``KeyedLock``), and a module
enters ``sys.modules`` only once it has run to its end.

A new process spends most of a cache hit inside Numba, so the cache is Numba's with one
change (``_LeanCache``): before loading object code, Numba imports every implementation
registry it has, and SciPy's linear algebra with them (a quarter of a second), which only
compiling needs; loading needs the runtime initialised and nothing more. A miss compiles,
and compiling loads the registries itself.
"""

from __future__ import annotations

import functools
import hashlib
import os
import platform
import sys
import types
import warnings
from pathlib import Path

from .. import compile_cache
from ..compile_cache import KeyedLock, helpers_text, numbax_version, program_text

_LOADED: dict[str, object] = {}  # key -> compiled function, for this process
# The program's machine code holds theirs (Numba links a callee into its caller's cache).
_HELPERS = (
    "fastmath.py",
    "fastmath_blocks.py",
    "intrinsics.py",
    "mathlib.py",
    "linalg.py",
    "lapack.py",
    "sorting.py",
)
_HELPERS += ("launch.py", "step_machine.py")  # how a launcher calls its kernels (``units.py``)
_HELPERS += ("gemm.py",)  # how a product kernel calls BLAS: inlined in its machine code
_HELPERS += ("mpi_calls.py",)  # a collective's MPI calls (``collectives.py``), linked by symbol
# threefry2x32's helpers and the IR's algorithm they compile (``backends/threefry.py``).
_HELPERS += ("threefry.py", "../threefry.py", "../../ir/threefry.py")
MATHLIB_PREFIX = "numbax_cpu_mathlib_"  # see mathlib.py
_ONE_THREAD = KeyedLock()  # per program key and per module name


@functools.cache
def _environment() -> str:
    import numba

    helpers = helpers_text(os.path.dirname(__file__), _HELPERS)
    return "\n".join(
        [
            numbax_version(),
            numba.__version__,
            platform.python_version(),
            platform.machine(),
            helpers,
        ]
    )


def program_key(source: str, comments: bool = True) -> str:
    """The key of generated ``source`` and the compiler's environment; ``comments=False``
    for a text whose comments hold no source position (a kernel's: keyed as it is,
    without reading it token by token)."""
    digest = _environment_digest().copy()
    digest.update((program_text(source) if comments else source).encode())
    return digest.hexdigest()[:24]


@functools.cache
def _environment_digest():
    """The digest of ``_environment()`` (numbax's helpers' text: hashed once, not once
    per kernel)."""
    return hashlib.sha256(_environment().encode())


def load(source: str, function_name: str, cache_dir: str | None):
    """The function ``function_name`` of the generated module ``source``, compiled."""
    key = program_key(source)
    with _ONE_THREAD(key):
        if key not in _LOADED:
            module_name = f"numbax_cpu_{function_name}_{key}"
            if cache_dir is None:
                function = getattr(load_module(source, module_name, None), function_name)
                _compile(function, function.py_func.__globals__["SIGNATURE"], cached=False)
            else:
                function = _load_compiled(source, module_name, function_name, Path(cache_dir))
            _LOADED[key] = function
        return _LOADED[key]


def forget() -> None:
    """This process's compiled launchers forgotten, with their generated modules
    (``CpuBackend.clear_caches``); numbax's math helpers stay."""
    _LOADED.clear()
    forget_modules("numbax_cpu_")


def forget_modules(prefix: str) -> None:
    """The generated modules whose names start with ``prefix`` dropped from
    ``sys.modules`` (the next load imports their file again); the math helpers' stay."""
    for name in [n for n in list(sys.modules) if n.startswith(prefix)]:
        if not name.startswith(MATHLIB_PREFIX):
            sys.modules.pop(name, None)


def is_loaded(source: str) -> bool:
    """Whether this process has compiled or loaded ``source``'s program already."""
    return program_key(source) in _LOADED


def llvm_seconds(function) -> float:
    """The seconds Numba spent in LLVM compiling ``function`` (its ``llvm_lock`` timer)."""
    timers = [(o.metadata or {}).get("timers", {}) for o in function.overloads.values()]
    return sum(t.get("llvm_lock", 0.0) for t in timers)  # loaded from disk: none


def outcome(function, cache_dir: str | None) -> str:
    """Where a newly loaded ``function``'s machine code came from (``CACHE_OUTCOMES``)."""
    if cache_dir is None:
        return "off"
    return "disk hit" if sum(function.stats.cache_hits.values()) else "disk miss"


def load_module(source: str, module_name: str, cache_dir: str | None) -> types.ModuleType:
    """Import generated ``source`` as ``module_name``, from ``cache_dir/cpu`` when given
    (``compile_cache.load_module``)."""
    folder = Path(cache_dir) / "cpu" if cache_dir is not None else None
    return compile_cache.load_module(source, module_name, folder, "cpu")


def write_module(source: str, module_name: str, cache_dir: str) -> None:
    """Write generated ``source`` as ``module_name``'s file under ``cache_dir/cpu``
    (``compile_cache.written``) for a compile worker to read, without importing it here:
    a kernel llvmlite compiles is never imported (a transformer step's 52 kernels under
    cProfile: 58 ms to import, 11 ms to write, on the thread writing the program)."""
    compile_cache.written(module_name, source, Path(cache_dir) / "cpu")


def _load_compiled(source: str, module_name: str, function_name: str, cache_dir: Path):
    path = compile_cache.written(module_name, source, cache_dir / "cpu")
    # Compiling the program loads the math functions it calls from the cache too.
    cached = _compiled_files(path.parent, (module_name, MATHLIB_PREFIX))

    def build():
        function = getattr(compile_cache.imported(module_name, path), function_name)
        _compile(function, function.py_func.__globals__["SIGNATURE"], cached=True)
        return function

    return built_again_if_damaged(build, cached, module_name, path.name)


def built_again_if_damaged(build, cached: list[Path], module_name: str, entry: str):
    """``build()``; where it fails on what the disk cache held (``cached``: the entry's
    compiled files, found before the attempt), a warning, the entry deleted and a second
    ``build()``. A failure with nothing cached, or Numba refusing the code, is a genuine
    error and raised."""
    try:
        return build()
    except Exception as err:  # noqa: BLE001 - any damage to the cache entry: compile again
        from numba.core.errors import NumbaError

        if not cached or isinstance(err, NumbaError):
            raise
        warnings.warn(
            f"numbax: the compile cache entry {entry} could not be loaded ({err!r}); "
            "recompiling it.",
            RuntimeWarning,
            stacklevel=4,
        )
        for path in cached:
            path.unlink(missing_ok=True)
        sys.modules.pop(module_name, None)
        return build()


def _compile(dispatcher, signature, cached: bool) -> None:
    """Compile for ``signature`` only: other argument types then raise ``TypeError``
    (the executable copies such arguments) instead of compiling a second version."""
    if cached:
        dispatcher._cache = lean_cache(dispatcher.py_func)
    dispatcher.compile(signature)
    dispatcher.disable_compile()


def load_lean(*dispatchers) -> None:
    """Load each of numbax's own ``njit`` helpers called from Python (``cache=True``)
    with the lean cache (``lean_cache``) where it is not compiled yet: loaded through
    Numba's, the first one re-imported every registry (0.5 s in a second process)."""
    for dispatcher in dispatchers:
        if not dispatcher.overloads and not isinstance(dispatcher._cache, _lean_cache_class()):
            dispatcher._cache = lean_cache(dispatcher.py_func)


def lean_cache(function):
    """Numba's disk cache of ``function``, loading without importing every registry."""
    return _lean_cache_class()(function)


@functools.cache
def _lean_cache_class():
    from numba.core.caching import FunctionCache
    from numba.core.runtime import rtsys

    class _LeanCache(FunctionCache):
        """Numba's function cache, loading without importing every registry (module doc)."""

        def load_overload(self, sig, target_context):
            rtsys.initialize(target_context)
            with self._guard_against_spurious_io_errors():
                return self._load_overload(sig, target_context)

    return _LeanCache


def _compiled_files(folder: Path, prefixes) -> list[Path]:
    """Numba's index and object files and Python's bytecode of the named modules."""
    return [p for prefix in prefixes for p in (folder / "__pycache__").glob(f"{prefix}*")]
