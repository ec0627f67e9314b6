"""The machine and software a run measured, recorded beside every figure it produced."""

from __future__ import annotations

import ctypes
import os
import platform
import shutil
import subprocess
import sys

import numpy as np


def _cpuinfo_field(name: str) -> str | None:
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.split(":", 1)[0].strip() == name:
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def _cpu_model() -> str:
    return _cpuinfo_field("model name") or platform.processor() or platform.machine()


def _virtual_machine() -> bool:
    # A virtual CPU may share its physical core with another: parallel speed-ups mean less.
    return "hypervisor" in (_cpuinfo_field("flags") or "").split()


def _memory_gib() -> float | None:
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) / 2**20
    except OSError:
        pass
    return None


def _usable_cores() -> int:
    # The affinity mask, not the machine's count: a container may be given fewer cores.
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def _gpu() -> dict | None:
    """GPU name and driver: nvidia-smi when present, else Numba's CUDA driver."""
    if shutil.which("nvidia-smi"):
        query = ["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"]
        try:
            first = subprocess.run(query, capture_output=True, text=True, timeout=20).stdout
            name, driver = (part.strip() for part in first.splitlines()[0].split(","))
            return {"name": name, "driver": driver}
        except (OSError, ValueError, IndexError, subprocess.SubprocessError):
            pass
    try:
        from numba import cuda

        if not cuda.is_available():
            return None
        device = cuda.get_current_device()
        name = device.name.decode() if isinstance(device.name, bytes) else str(device.name)
        driver = ".".join(map(str, cuda.cudadrv.driver.driver.get_version()))
        return {"name": name, "driver": f"CUDA driver API {driver}"}
    except Exception:
        # Any driver trouble only costs the GPU line of the description, never the run.
        return None


def blas_kernels() -> dict:
    """Which kernels each OpenBLAS loaded in this process runs (its core type), and the
    ``OPENBLAS_CORETYPE`` that chose them if one was set: a matrix product's speed depends
    on it (a float32 product ran twice as fast with OpenBLAS's AVX-512 kernels as with its
    AVX2 ones on one machine). Read after the run, when NumPy's and SciPy's are loaded."""
    libraries = {}
    for path in _loaded_libraries():
        name = os.path.basename(path)
        if "openblas" not in name.lower():
            continue
        try:
            library = ctypes.CDLL(path, mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
        except OSError:
            continue
        corename = _openblas_corename(library)
        if corename is not None:
            libraries[name.split(".so")[0]] = corename
    return {"openblas": libraries, "OPENBLAS_CORETYPE": os.environ.get("OPENBLAS_CORETYPE")}


def _openblas_corename(library) -> str | None:
    """``openblas_get_corename`` under the names NumPy's and SciPy's builds give it."""
    from numbax.backends.cpu.blas import openblas_names  # loaded after the run: SciPy's BLAS

    for name in openblas_names("get_corename"):
        corename = getattr(library, name, None)
        if corename is not None:
            corename.restype = ctypes.c_char_p
            return corename().decode()
    return None


def _loaded_libraries() -> list[str]:
    """The shared libraries mapped into this process (Linux); none elsewhere."""
    try:
        with open("/proc/self/maps") as maps:
            paths = {line.split()[-1] for line in maps if ".so" in line}
    except OSError:
        return []
    return sorted(path for path in paths if path.startswith("/"))


def load_average() -> float | None:
    """The 1-minute load average: other work on the machine competing for its cores."""
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else None


def busy_warning(load: float | None, cores: int) -> str | None:
    """A warning when other processes already keep the cores busy: the figures will suffer."""
    if load is not None and load > 0.5 * cores:
        return (
            f"load average {load:.1f} on {cores} cores before the run: other processes "
            "compete for the cores, and the times will show it"
        )
    return None


def describe(backend: str, peer_versions: dict[str, str], missing: dict[str, str]) -> dict:
    import numba

    memory = _memory_gib()
    return {
        "cpu": _cpu_model(),
        "virtual_machine": _virtual_machine(),
        "cores_usable": _usable_cores(),
        "cores_total": os.cpu_count(),
        "load_average_start": load_average(),
        "memory_gib": round(memory, 1) if memory else None,
        "gpu": _gpu() if backend == "cuda" else None,
        "os": platform.platform(),
        "python": sys.version.split()[0],
        "numpy": np.__version__,
        "numba": numba.__version__,
        "backend": backend,
        "peers": peer_versions,
        "peers_missing": missing,
    }


def one_line(machine: dict) -> str:
    """CPU, cores, memory and GPU, short enough for a chart title."""
    cores = "virtual cores" if machine["virtual_machine"] else "cores"
    text = f"{machine['cpu']}, {machine['cores_usable']} {cores}"
    if machine["memory_gib"]:
        text += f", {machine['memory_gib']:.0f} GiB"
    if machine.get("load_average_start") is not None:
        text += f", load {machine['load_average_start']:.1f} at start"
        if machine.get("load_average_end") is not None:
            text += f", {machine['load_average_end']:.1f} at end"
    if machine["gpu"]:
        text += f"; {machine['gpu']['name']} (driver {machine['gpu']['driver']})"
    return text


def software_line(machine: dict) -> str:
    """Python, numbax's dependencies, then numbax and each peer: version, or why it is missing."""
    numba = machine["peers"].get("numba", machine["numba"])  # the peer's carries its thread count
    versions = [f"Python {machine['python']}", f"numpy {machine['numpy']}", f"numba {numba}"]
    shown = ("numpy", "numba")
    versions += [f"{label} {v}" for label, v in machine["peers"].items() if label not in shown]
    versions += [f"{label}: {why}" for label, why in machine["peers_missing"].items()]
    blas = machine.get("blas")
    if blas and blas["openblas"]:
        kernels = sorted(set(blas["openblas"].values()))
        text = f"OpenBLAS kernels {'/'.join(kernels)}"
        if blas["OPENBLAS_CORETYPE"]:
            text += f" (OPENBLAS_CORETYPE={blas['OPENBLAS_CORETYPE']} in the environment)"
        versions.append(text)
    return ", ".join(versions)
