"""numbax's benchmark suite: `python -m benchmarks --help`. Not shipped in the wheel.

programs.py        the programs, written once in NumPy style (plus hand-written derivatives)
workloads.py       each program with its inputs, sizes, bytes/FLOPs and check against NumPy
numba_kernels.py   the hand-written Numba loops
kernels.py         the kernels group (`--group kernels`): PolyBench-style kernels in NumPy/JAX
                   style; kernel_loops.py their Numba loops, kernel_workloads.py their inputs
implementation.py  what a peer hands the runner: one row
peers.py           how numbax (through one adapter) and each peer make those rows
cold_start.py      the new-process compile-latency workload (also the program it runs)
models.py          the models group (`--group models`): training losses and scientific
                   programs; model_workloads.py their inputs and float64 references,
                   first_compile.py the fresh process timing time to compiled code,
                   model_group.py the group's run (cold, steady, `--loaded`)
timing.py          the measuring method
runner.py          build, check against NumPy, time; then the derived figures
report.py          table, results.json, results.md, RESULTS.md; chart.py the PNG
machine.py         the machine and versions a run measured
"""
