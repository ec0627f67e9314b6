"""CPython's cyclic garbage collector paused while a program is traced and compiled.

A compile builds many small containers (variables, equations, jaxprs, the passes'
tables) and frees few of them until it ends. CPython starts a collection after every
700 net allocations of containers and a fuller one after every ten of those, and each
walks the objects that survived the last: the compile pays again and again for objects
that are all still alive. An 8-layer transformer's training step (1,838 equations) ran
188 young, 17 middle and one full collection in its trace and compile, 0.64-0.73 s with
them and 0.53-0.56 s without, where 2 layers (542 equations) lost nothing measurable: the
cost grows faster than the program. Mercurial pauses the collector around its large
builds of containers for the same reason (``util.nogc``).

``paused()`` disables the collector for the span of a trace or a compile and enables it
again when the last such span in the process ends, unless it was disabled when the first
began (the user's choice stands). Spans nest and may overlap across threads: a tiered
call's background compile pauses it for the whole process while the user's thread goes
on, so cyclic garbage made meanwhile waits until the compile ends (reference counting
frees everything else as usual). A compile's own garbage is collected by the next
collection after it.
"""

from __future__ import annotations

import contextlib
import gc
import threading

_LOCK = threading.Lock()
_spans = 0  # traces and compiles running now, in every thread
_enable_after = False  # whether the collector was enabled when the first of them began


@contextlib.contextmanager
def paused():
    """The collector disabled while the block runs (module doc)."""
    global _spans, _enable_after
    with _LOCK:
        if _spans == 0:
            _enable_after = gc.isenabled()
            gc.disable()
        _spans += 1
    try:
        yield
    finally:
        with _LOCK:
            _spans -= 1
            if _spans == 0 and _enable_after:
                gc.enable()
