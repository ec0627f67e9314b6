"""The machinery behind ``numbax.jit``: the public surface is ``api.py``.

``arguments``: a call's arguments as cache keys and as the executable takes them;
``tracing``: a call traced to a closed jaxpr (``trace_to_jaxpr``, ``make_jaxpr``);
``compiling``: a program compiled by its backend (compile log, dumps, internal errors,
the size warning) and the eager implementation of ``jit_call``; ``cache_entry``: one
traced signature and its (tiered) executable; ``jit_function``: ``JitFunction``, its
dispatch cache and fast path; ``stages``: ``Lowered`` and ``Compiled``.
"""
