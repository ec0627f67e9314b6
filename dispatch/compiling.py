"""A traced program compiled by its backend: the compile log, source dumps, the clear
error for a backend that fails on numbax's own program, the warning for a program too
large to compile quickly, and the eager implementation of ``jit_call`` (registered into
``ir``'s table at import time, so the arrow in the code still points down)."""

from __future__ import annotations

import functools
import hashlib
import os
import warnings
from collections import Counter

import numpy as np

from .. import backends, compile_log
from ..backends.compile_cache import KeyedLock
from ..backends.source import identifier
from ..config import config
from ..ir.core import ClosedJaxpr, Jaxpr, first_source_info
from ..ir.errors import InternalCompilerError, NumbaxError, ProgramSizeWarning, at_line
from ..ir.higher_order import jit_call_p, set_impl
from ..tracer.promote import is_device_array


def compile_closed(
    closed: ClosedJaxpr,
    backend_name: str,
    name: str,
    why: str = "(lowered)",
    writes: tuple[int, ...] = (),
):
    """``why``: what the compile log says of the trace this program came from;
    ``writes``: the arguments the caller writes the last outputs into, in order (no
    result shares memory it should not: ``backends/results.py``)."""
    backend = backends.get_backend(backend_name)
    try:
        executable = backend.compile(closed, name=name, writes=writes)
    except (NumbaxError, MemoryError, ImportError):  # ImportError: what the machine lacks
        raise
    except Exception as error:  # noqa: BLE001 - a backend failing on numbax's own program
        raise _internal_error(closed, backend_name, name, error) from error
    if config.log_compiles:
        compile_log.log_compile(name, why, backend_name, executable)
    if config.dump_dir and hasattr(executable, "source"):
        _dump_source(config.dump_dir, name, backend_name, executable.source)
    return executable


def _internal_error(closed: ClosedJaxpr, backend_name: str, name: str, error: Exception):
    """The clear error for a backend that failed on the program numbax generated."""
    # Numba's first line names only the stage that failed: the two after it say what.
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    failure = f"{type(error).__name__}: {' '.join(lines[:3])}"[:300]
    traced_at = first_source_info(closed.jaxpr.eqns)
    return InternalCompilerError(
        at_line(
            f"numbax failed to compile {name!r} on the {backend_name} backend ({failure}). "
            "The program traced correctly: this is a bug in numbax, not in your code; "
            "please report it with the program (`f.lower(*args).source()` shows the code "
            "generated for it). Until then jit(..., backend='interpret') runs it.",
            traced_at,
        )
    )


def _dump_source(directory: str, name: str, backend_name: str, source: str) -> None:
    """Beside the passes' dumps: one file per distinct program, named after its function."""
    digest = hashlib.sha256(source.encode()).hexdigest()[:8]
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, f"{identifier(name)}_{backend_name}_{digest}.py")
    with open(path, "w", encoding="utf-8") as f:
        f.write(source)


# A traced program with more equations than this gets a ProgramSizeWarning: compile time
# grows with the program, and a Python loop over range(n) is unrolled n times.
LARGE_PROGRAM_EQNS = 5000


def warn_if_large(closed: ClosedJaxpr, name: str) -> None:
    count = len(closed.eqns)
    if count <= LARGE_PROGRAM_EQNS:
        return
    line, made = Counter(e.source_info for e in closed.eqns).most_common(1)[0]
    warnings.warn(
        at_line(
            f"{name}: the traced program has {count} operations ({made} of them from the "
            "line below), so compiling it takes long. A Python loop is unrolled while "
            "tracing, once per iteration: write it with numbax.fori_loop(lower, upper, "
            "body, carry) or numbax.scan, which keep the loop one operation",
            line,
        ),
        ProgramSizeWarning,
        stacklevel=4,
    )


_COMPILING_CALL = KeyedLock()


def _compiled_call(jaxpr: Jaxpr, backend_name: str):
    # lru_cache alone would let threads that miss together each compile the jaxpr.
    with _COMPILING_CALL((jaxpr, backend_name)):
        return _cached_call(jaxpr, backend_name)


@functools.lru_cache(maxsize=512)
def _cached_call(jaxpr: Jaxpr, backend_name: str):
    return compile_closed(ClosedJaxpr(jaxpr, []), backend_name, "jit_call", "(eager call)")


def _jit_call_impl(*args, jaxpr: Jaxpr, name: str = "jit_call"):
    outs = _compiled_call(jaxpr, backends.default_backend_name())(*args)
    # An eager call computes on the host: results on the device come back as NumPy arrays.
    return [np.asarray(out) if is_device_array(out) else out for out in outs]


set_impl(jit_call_p, _jit_call_impl)
