"""``Unfusable``: the refusal of the cpu backend's kernel writers, raised where a kernel's
body is outside what one loop nest can write (``kernels``, ``index_maps``,
``reductions``); the program writer then writes its eqns one by one.
"""


class Unfusable(Exception):
    """The kernel's body is outside the contract; the caller emits its eqns one by one."""
