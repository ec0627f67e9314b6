"""The CUDA kernels of the models group, assembled for sm_90 without a GPU: per program,
its kernels' registers per thread, spilled bytes and static shared memory, as ``ptxas``
reports them (``backends/cuda/ptx.py``).

    python -m benchmarks.cuda_kernels [--scale quick|full] [--only NAME,...]

Each program is the models group's (``model_workloads.py``), differentiated as its row
is, lowered by the CUDA backend with the GPU presets and compiled to PTX. The exit status
is 1 when a kernel spills (a spill is slow on every GPU), 2 when a program cannot be
assembled here (no PTX toolchain or no ``ptxas``: install the ``cuda`` extra).
"""

from __future__ import annotations

import argparse
import sys

from .model_workloads import MODEL_WORKLOAD_BUILDERS, _numbax_loss, model_workload

LAYER_ROWS = ("transformer_1", "transformer_4", "transformer_8")  # transformer_2 stands for them


def program_jaxpr(workload):
    """The jaxpr the models group's numbax row compiles for ``workload``."""
    import numbax

    loss = _numbax_loss(workload.program)
    if workload.style == "value_and_grad":
        function = numbax.value_and_grad(loss)
    elif workload.style == "per_example_grad":
        function = numbax.vmap(numbax.grad(loss), in_axes=(None, 0))
    else:
        function = loss
    return numbax.make_jaxpr(function)(*workload.inputs)


def kernel_reports(workload) -> list[tuple[str, object]]:
    """``[(kernel name, ptx.Assembled), ...]`` for one workload's CUDA program."""
    from numbax.backends.cuda.ptx import assembled, program_ptx

    kernels = program_ptx(program_jaxpr(workload), workload.name)
    return [(name, assembled(ptx)) for name, ptx in kernels]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", default="quick", choices=("quick", "full"))
    parser.add_argument("--only", default="", help="comma-separated workload names")
    args = parser.parse_args(argv)
    from numbax.backends.cuda.ptx import ptx_toolchain_problem, ptxas

    problem = ptx_toolchain_problem() or (None if ptxas() else "ptxas not found")
    if problem:
        print(f"cannot assemble CUDA kernels here: {problem}", file=sys.stderr)
        return 2
    names = [n for n in args.only.split(",") if n] or [
        n for n in MODEL_WORKLOAD_BUILDERS if n not in LAYER_ROWS
    ]
    print(
        f"{'program':<22} {'kernels':>7} {'registers max':>13} {'spilled bytes':>13} "
        f"{'shared max':>10}"
    )
    spilled = False
    for name in names:
        reports = kernel_reports(model_workload(name, args.scale))
        spills = sum(r.spill_stores + r.spill_loads for _, r in reports)
        spilled |= spills > 0
        registers = max((r.registers for _, r in reports), default=0)
        shared = max((r.shared for _, r in reports), default=0)
        print(f"{name:<22} {len(reports):>7} {registers:>13} {spills:>13} {shared:>10}")
        for kernel, report in reports:
            if report.spill_stores or report.spill_loads:
                print(f"  spills: {kernel} {report}")
    return 1 if spilled else 0


if __name__ == "__main__":
    sys.exit(main())
