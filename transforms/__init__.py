"""Transforms: functions from jaxprs to jaxprs, each an interpreter over per-primitive
rules (``JVP_RULES`` in ``jvp.py``, ``VJP_RULES`` in ``vjp_rules.py``), and the
user-facing derivatives built on them (``autodiff``, ``jacobians``, ``checkpoint``,
``custom_vjp``, ``custom_jvp``). The submodules are imported here so every rule table is complete;
the public functions are re-exported from ``numbax`` itself (a name like ``jvp`` here
would hide the submodule of the same name)."""

from . import (  # noqa: F401
    autodiff,
    callbacks,
    checkpoint,
    complex_rules,
    control_flow,
    custom_jvp,
    custom_vjp,
    fft_rules,
    jacobians,
    jvp,
    linalg_rules,
    vjp,
    vjp_rules,
)
