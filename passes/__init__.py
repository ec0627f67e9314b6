"""Optimisation passes: inline, fold, simplify, CSE, DCE, fusion into kernels, memory
planning. ``optimize`` runs them all (see ``pipeline.py`` for the order)."""

from .kernels import KernelSpec, classify
from .manager import PassLog, PassRecord
from .memory import MemoryPlan, plan_memory
from .pipeline import PIPELINE, clean, optimize
from .verify import check_fused, check_kernel

__all__ = [
    "PIPELINE",
    "KernelSpec",
    "MemoryPlan",
    "PassLog",
    "PassRecord",
    "check_fused",
    "check_kernel",
    "classify",
    "clean",
    "optimize",
    "plan_memory",
]
