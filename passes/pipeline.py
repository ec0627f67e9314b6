"""The optimisation pipeline: the compiler's table of contents, read top to bottom.

    inline          nested jit_call, checkpoint and custom call bodies spliced in
    narrow_floats   float16 and bfloat16 arithmetic computed in float32, results
                    rounded back (what NumPy's float16 loops do); moves stay narrow
    cleanup         to a fixed point:
      constant_fold   equations over constants evaluated now
      control_flow    control flow decided by constants: a cond's branch inlined, a
                      loop that never runs removed, literal operands written into bodies
      ranges          comparisons decided by the ranges of integer scalars (loop
                      counters, literals) folded to literals
      simplify        exact algebraic identities (x * 1, neg(neg x), reshape chains, ...)
      loop_invariants loop-invariant equations moved in front of their loop
      scan_products   a scan's products of scanned slices and constants computed
                      before it, and the products or sums a carry only accumulates
                      after it, each one product over all the iterations
      cse             repeated computations computed once
      dce             unread results and constants dropped
      loop_dce        unread loop carries, ys, constants and scanned operands dropped
    contractions    each dot_general in the form every backend runs as one GEMM over
                    folded dims (a sum over a product's batch dims contracts them)
    fusion          the program partitioned into kernels (elementwise, reduction,
                    contraction, opaque)
    fused_cleanup   CSE and DCE over the kernels
    (the backend's) its own rewrites of the fused program (``backend_passes``: the cpu
                    backend's bounded_kernels), so that the plan is of what it runs
    memory_plan     buffers assigned by liveness (an analysis: the program is unchanged;
                    left to a backend that rewrites the program after the pipeline and
                    plans what it runs, ``memory_plan=False``: cuda plans each block)

Every pass keeps the program's meaning: the fused program evaluates (``eval_jaxpr``)
to what the traced one does.
"""

from __future__ import annotations

import itertools
import logging
import os

from ..config import config
from ..ir.core import ClosedJaxpr
from . import (
    constant_fold,
    contractions,
    control_flow,
    cse,
    dce,
    fusion,
    inline,
    loop_dce,
    loop_invariants,
    narrow_floats,
    ranges,
    scan_products,
    simplify,
)
from .manager import Analysis, FixedPoint, Pass, PassLog, run_pipeline
from .memory import plan_memory
from .verify import check_fused

logger = logging.getLogger("numbax.passes")

PIPELINE = (
    Pass("inline", inline.run),
    Pass("narrow_floats", narrow_floats.run),
    FixedPoint(
        "cleanup",
        (
            Pass("constant_fold", constant_fold.run),
            Pass("control_flow", control_flow.run, acts_on=control_flow.acts_on()),
            Pass("ranges", ranges.run),
            Pass("simplify", simplify.run),
            Pass("loop_invariants", loop_invariants.run, acts_on=loop_invariants.acts_on()),
            Pass("scan_products", scan_products.run, acts_on=scan_products.acts_on()),
            Pass("cse", cse.run, idempotent=True),
            Pass("dce", dce.run, idempotent=True),
            Pass("loop_dce", loop_dce.run, acts_on=loop_dce.acts_on()),
        ),
    ),
    Pass("contractions", contractions.run),
    Pass("fusion", fusion.run, verify=check_fused),
    FixedPoint(
        "fused_cleanup",
        (
            Pass("cse", cse.run, verify=check_fused, idempotent=True),
            Pass("dce", dce.run, verify=check_fused, idempotent=True),
        ),
    ),
    Analysis("memory_plan", plan_memory),
)

_programs = itertools.count()

# The stages before fusion: the program made smaller and simpler, still one eqn per op.
_CLEANUP_END = next(i for i, stage in enumerate(PIPELINE) if stage.name == "cleanup") + 1
# Where a backend's own passes run: after the fused cleanup, before the memory plan.
_PLAN = next(i for i, stage in enumerate(PIPELINE) if stage.name == "memory_plan")


def clean(closed: ClosedJaxpr, *, debug_checks: bool | None = None) -> ClosedJaxpr:
    """``closed`` through the pipeline's stages before fusion (inline, narrow floats,
    cleanup): constants folded, decided control flow and comparisons resolved, repeated
    and dead work dropped, no kernels yet. What a tiered first call interprets: adi's
    first call executes 186,000 eqns of it against 442,000 of the traced program."""
    if debug_checks is None:
        debug_checks = config.debug_checks
    cleaned, _ = run_pipeline(
        PIPELINE[:_CLEANUP_END], closed, dump_dir=None, debug_checks=debug_checks
    )
    return cleaned


def optimize(
    closed: ClosedJaxpr,
    *,
    dump_dir: str | None = None,
    debug_checks: bool | None = None,
    name: str = "fn",
    backend_passes: tuple[Pass, ...] = (),
    memory_plan: bool = True,
) -> tuple[ClosedJaxpr, PassLog]:
    """Run the pipeline: the fused program (its equations are kernels, and control flow
    with fused bodies) and the log of what each pass changed.

    ``dump_dir`` (or ``NUMBAX_DUMP``, into a sub-folder per program) receives the IR
    after every pass, one file per pass in order (``03_simplify.txt``). ``debug_checks``
    (default ``NUMBAX_DEBUG_CHECKS``) typechecks after every pass. ``backend_passes``
    are a backend's rewrites of the fused program (its ``passes``), run before the
    memory plan: logged and dumped like the others, and planned once, as run.
    ``memory_plan=False`` stops before the plan, for a backend that rewrites the fused
    program further and plans what it runs itself (``PassLog.add_analysis``).

    >>> import numpy as np, numbax
    >>> traced = numbax.make_jaxpr(lambda x: np.tanh(x * 2.0) + 1.0)(np.ones(3))
    >>> fused, log = optimize(traced)
    >>> [eqn.params["name"] for eqn in fused.eqns]
    ['fused_mul_tanh_add']
    """
    if dump_dir is None and config.dump_dir:
        dump_dir = os.path.join(config.dump_dir, f"{next(_programs):03d}_{name}")
    if debug_checks is None:
        debug_checks = config.debug_checks
    planning = PIPELINE[_PLAN:] if memory_plan else ()
    pipeline = PIPELINE[:_PLAN] + tuple(backend_passes) + planning
    fused, log = run_pipeline(pipeline, closed, dump_dir=dump_dir, debug_checks=debug_checks)
    logger.debug("numbax: passes over %s\n%s", name, log)
    return fused, log
