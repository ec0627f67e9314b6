"""The peers, numbax among them: how each library turns a workload into an `Implementation`.

Each peer is imported only if installed and only when selected; one that cannot run here
raises `PeerUnavailable` from its constructor and is listed with the reason instead.

numbax goes through `NumbaxPeer`, the one adapter between the suite and a compiler that is
still being written: it turns "not there yet" (ImportError, NotImplementedError,
AttributeError, an unknown backend) met while obtaining or compiling the numbax callable
into a "not supported yet" row. Anything else numbax raises, and any wrong answer, is a
FAILED row.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import tempfile
from collections.abc import Callable

import numpy as np

from . import cold_start
from .implementation import (
    COMPILED_FIRST_CALL,
    Implementation,
    PeerUnavailable,
    bind,
    first_calls,
    fresh_compiles,
    skipped,
    tree_map,
)
from .kernel_workloads import FIRST_CALL, NUMPY_IN_PLACE
from .kernels import library_loops
from .programs import python_scan
from .workloads import Workload, leaves


def _copy_into(copyto):
    def copy(src, dst):
        copyto(dst, src)
        return dst

    return copy


def numbax_unsupported_reason(error: BaseException, backend: str) -> str | None:
    """The reason to show if `error`, met obtaining or compiling numbax, means "not yet".

    None means a failure. The cold-start process asks the same question of its numbax.
    """
    if isinstance(error, ImportError):
        return f"numbax is not importable: {error}"
    if isinstance(error, NotImplementedError | AttributeError):
        return f"{type(error).__name__}: {error}"
    message = str(error)
    if isinstance(error, ValueError) and "backend" in message and backend in message:
        return f"backend {backend!r}: {message}"
    return None


class NumbaxPeer:
    label = "numbax"

    def __init__(self, backend: str, scratch_dir: str):
        self.backend, self.scratch_dir = backend, scratch_dir
        self._tiered: list = []  # tiered jitted functions whose compile may still run
        self.to_device, self.sync, self.to_numpy = _identity_transfers()
        if backend == "cuda":
            self.to_device, self.sync, self.to_numpy = _numba_cuda_transfers()

    @property
    def version(self) -> str:
        try:
            import numbax
        except ImportError as error:
            return f"not importable ({error})"
        return getattr(numbax, "__version__", "unknown")

    def unsupported_reason(self, error: BaseException) -> str | None:
        return numbax_unsupported_reason(error, self.backend)

    def jit(self, function, tiered: bool = False):
        """Steady-state rows time the compiled program: they wait for it (``tiered=False``).
        First-call rows are tiered, as a user's first call is."""
        return _numbax().jit(function, backend=self.backend, tiered=tiered)

    def tiered_jit(self, function):
        jitted = self.jit(function, tiered=True)
        self._tiered.append(jitted)
        return jitted

    def wait_compiled(self) -> None:
        """Wait for the compiles the tiered first calls left running in the background."""
        while self._tiered:
            self._tiered.pop().wait_compiled()

    def implement(self, workload: Workload) -> list[Implementation]:
        def row(label, build):
            return Implementation(
                label,
                build,
                self.to_device,
                self.sync,
                self.to_numpy,
                is_numbax=True,
                unsupported_reason=self.unsupported_reason,
                finish=self.wait_compiled,
            )

        program = workload.program
        if workload.style == "forward":
            return [row("numbax", lambda: self.jit(bind(program, _xnp())))]
        if workload.style == "grad":
            return [
                row("numbax jit(grad)", lambda: self.jit(_numbax().grad(bind(program, _xnp())))),
                row("numbax grad(jit)", lambda: _numbax().grad(self.jit(bind(program, _xnp())))),
            ]
        if workload.style == "train_step":
            return [row("numbax", lambda: self.jit(bind(program, _xnp(), _numbax().grad)))]
        if workload.style == "scan":
            return [row("numbax", lambda: self.jit(bind(program, _xnp(), _numbax().scan)))]
        if workload.style == "scan_grad":
            loss = lambda: bind(program, _xnp(), _numbax().scan)
            return [row("numbax jit(grad)", lambda: self.jit(_numbax().grad(loss())))]
        if workload.style == "compile":
            return [row("numbax", lambda: fresh_compiles(lambda c: self.jit(program(_xnp(), c))))]
        if workload.style == "cold_start":
            cache = cold_start.new_cache_dir(self.scratch_dir, "numbax")
            return [row("numbax", lambda: cold_start.process_call("numbax", self.backend, cache))]
        kernel = lambda: bind(program, _xnp(), library_loops(_numbax().fori_loop, _numbax().scan))
        if workload.style == "kernel":
            return [row("numbax", lambda: self.jit(kernel()))]
        if workload.style == "value_and_grad":
            return [row("numbax", lambda: self.jit(_numbax().value_and_grad(kernel())))]
        if workload.style == "per_example_grad":
            per_example = lambda: _numbax().vmap(_numbax().grad(kernel()), in_axes=(None, 0))
            return [row("numbax", lambda: self.jit(per_example()))]
        if workload.style == "first_call":
            return [
                row("numbax", lambda: first_calls(kernel(), self.tiered_jit)),
                row(COMPILED_FIRST_CALL, lambda: self.compiled_first_calls(kernel())),
            ]
        return []

    def compiled_first_calls(self, program) -> Callable:
        """Time to compiled code, issue #34: every call jits a new instance of ``program``
        (``first_calls``) untiered, after ``numbax.clear_caches`` and with a new, empty
        disk cache, so nothing compiled before is found: trace, passes, every kernel
        compiled, the result. The runtime is started first (``initialise``), as JAX's
        client is by its rows."""
        import numbax
        from numbax.config import config

        if self.backend == "cpu":
            from numbax.backends.cpu import backend

            backend.initialise()
        first = first_calls(program, self.jit)

        def call(*args):
            numbax.clear_caches()
            saved = config.cache_dir
            config.cache_dir = tempfile.mkdtemp(prefix="numbax-cold-", dir=self.scratch_dir)
            try:
                return first(*args)
            finally:
                config.cache_dir = saved

        return call


def _numbax():
    import numbax

    return numbax


def _xnp():
    import numbax.numpy

    return numbax.numpy


class NumPyPeer:
    label = "numpy"
    version = np.__version__

    def implement(self, workload: Workload) -> list[Implementation]:
        if workload.style == "forward":
            return [Implementation("numpy", lambda: bind(workload.program, np))]
        if workload.style == "scan":
            return [Implementation("numpy", lambda: bind(workload.program, np, python_scan))]
        if workload.style in ("grad", "train_step", "scan_grad"):
            return [Implementation("numpy", lambda: bind(workload.by_hand, np))]
        if workload.style == "copy":
            return [Implementation("numpy", lambda: _copy_into(np.copyto))]
        # A compile-latency workload has nothing to compile in NumPy; NumPy is its reference.
        return []


class NumbaPeer:
    """Hand-written Numba loops (CPU only): serial njit and njit(parallel=True)."""

    label = "numba"

    def __init__(self, scratch_dir: str):
        if importlib.util.find_spec("numba") is None:
            raise PeerUnavailable("not installed")
        import numba

        from . import numba_kernels

        self.numba, self.kernels, self.scratch_dir = numba, numba_kernels, scratch_dir
        self.version = f"{numba.__version__} ({numba.config.NUMBA_NUM_THREADS} threads)"

    def implement(self, workload: Workload) -> list[Implementation]:
        name, kernels = workload.name, self.kernels
        if name == "matmul_bias_relu" and importlib.util.find_spec("scipy") is None:
            reason = "np.dot inside njit needs SciPy, not installed"
            return [skipped("numba", reason), skipped("numba parallel", reason)]
        if name in kernels.HAND_WRITTEN_LOOPS:
            serial, parallel = kernels.HAND_WRITTEN_LOOPS[name]
            return [
                Implementation("numba", lambda: serial),
                Implementation("numba parallel", lambda: parallel),
            ]
        if name == "dispatch":
            return [Implementation("numba", lambda: kernels.ADD_ONE)]
        if workload.style == "copy":
            return [Implementation("numba parallel", lambda: kernels.PARALLEL_COPY)]
        if workload.style == "compile":
            njit = self.numba.njit
            return [
                Implementation(
                    "numba", lambda: fresh_compiles(lambda c: njit(workload.program(np, c)))
                )
            ]
        if workload.style == "cold_start":
            cache = cold_start.new_cache_dir(self.scratch_dir, "numba")
            return [Implementation("numba", lambda: cold_start.process_call("numba", "cpu", cache))]
        if workload.style == "kernel":
            return [Implementation("numba", lambda: workload.by_hand)]
        # The MLP step has no hand-written Numba peer (optional in the brief): NumPy's is the
        # hand-written backward, and its matmuls are BLAS either way.
        return []


class JaxPeer:
    label = "jax"

    def __init__(self, on_gpu: bool, scratch_dir: str):
        if importlib.util.find_spec("jax") is None:
            raise PeerUnavailable("not installed")
        # By default JAX takes 75% of GPU memory when it starts, leaving little to the numbax,
        # CuPy and PyTorch rows of the same process; read when JAX's GPU backend starts.
        os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
        import jax
        import jax.numpy as jnp

        # The grad workload is float64; without x64 JAX would silently compute it in float32.
        jax.config.update("jax_enable_x64", True)
        try:
            self.device = jax.devices("gpu" if on_gpu else "cpu")[0]
        except RuntimeError as error:
            # JAX's message lists every platform it knows; which one is missing is enough.
            raise PeerUnavailable(f"no {'GPU' if on_gpu else 'CPU'} backend in jaxlib") from error
        if on_gpu:
            # On a GPU JAX multiplies float32 in TF32 by default; the peers compared use float32.
            jax.config.update("jax_default_matmul_precision", "highest")
        self.jax, self.jnp, self.on_gpu, self.scratch_dir = jax, jnp, on_gpu, scratch_dir
        self.version = f"{jax.__version__} ({self.device.platform})"

    def implement(self, workload: Workload) -> list[Implementation]:
        jax, jnp, program = self.jax, self.jnp, workload.program

        def row(build):
            return Implementation(
                "jax",
                build,
                lambda a: jax.device_put(a, self.device),
                jax.block_until_ready,
                np.asarray,
            )

        if workload.style == "forward":
            return [row(lambda: jax.jit(bind(program, jnp)))]
        if workload.style == "grad":
            return [row(lambda: jax.jit(jax.grad(bind(program, jnp))))]
        if workload.style == "train_step":
            return [row(lambda: jax.jit(bind(program, jnp, jax.grad)))]
        if workload.style == "scan":
            return [row(lambda: jax.jit(bind(program, jnp, jax.lax.scan)))]
        if workload.style == "scan_grad":
            return [row(lambda: jax.jit(jax.grad(bind(program, jnp, jax.lax.scan))))]
        if workload.style == "compile":
            return [row(lambda: fresh_compiles(lambda c: jax.jit(program(jnp, c))))]
        if workload.style == "cold_start":
            backend = "cuda" if self.on_gpu else "cpu"
            cache = cold_start.new_cache_dir(self.scratch_dir, "jax")
            return [Implementation("jax", lambda: cold_start.process_call("jax", backend, cache))]
        kernel = lambda: bind(program, jnp, library_loops(jax.lax.fori_loop, jax.lax.scan))
        if workload.name.removesuffix(FIRST_CALL) in NUMPY_IN_PLACE:
            return [skipped("jax", "in-place NumPy: JAX's arrays are immutable")]
        if workload.style == "kernel":
            return [row(lambda: jax.jit(kernel()))]
        if workload.style == "value_and_grad":
            return [row(lambda: jax.jit(jax.value_and_grad(kernel())))]
        if workload.style == "per_example_grad":
            return [row(lambda: jax.jit(jax.vmap(jax.grad(kernel()), in_axes=(None, 0))))]
        if workload.style == "first_call":
            return [row(lambda: first_calls(kernel(), jax.jit))]
        return []


class CuPyPeer:
    """CuPy eager, on a GPU: the NumPy programs with `cupy` as the namespace."""

    label = "cupy"

    def __init__(self):
        if importlib.util.find_spec("cupy") is None:
            raise PeerUnavailable("not installed")
        import cupy

        self.cupy, self.version = cupy, cupy.__version__

    def implement(self, workload: Workload) -> list[Implementation]:
        cp = self.cupy

        def row(build):
            sync = lambda _: cp.cuda.get_current_stream().synchronize()
            return Implementation("cupy", build, cp.asarray, sync, cp.asnumpy)

        if workload.style == "forward":
            return [row(lambda: bind(workload.program, cp))]
        if workload.style == "scan":
            return [row(lambda: bind(workload.program, cp, python_scan))]
        if workload.style in ("grad", "train_step", "scan_grad"):
            return [row(lambda: bind(workload.by_hand, cp))]
        if workload.style == "copy":
            return [row(lambda: _copy_into(cp.copyto))]
        return []


class TorchPeer:
    """PyTorch eager on a GPU, through array-api-compat's NumPy-style namespace for torch."""

    label = "torch"

    def __init__(self):
        if importlib.util.find_spec("torch") is None:
            raise PeerUnavailable("not installed")
        import torch

        if not torch.cuda.is_available():
            raise PeerUnavailable("torch has no CUDA device")
        if importlib.util.find_spec("array_api_compat") is None:
            raise PeerUnavailable("needs array-api-compat for a NumPy-style torch namespace")
        import array_api_compat.torch as torch_xp

        # Compared in float32, as every peer: no TF32 (torch's default for matmul, said once).
        torch.backends.cuda.matmul.allow_tf32 = False
        self.torch, self.xp, self.version = torch, torch_xp, torch.__version__

    def implement(self, workload: Workload) -> list[Implementation]:
        torch = self.torch

        def row(build):
            to_device = lambda a: torch.from_numpy(np.ascontiguousarray(a)).to("cuda")
            sync = lambda _: torch.cuda.synchronize()
            return Implementation("torch", build, to_device, sync, lambda t: t.cpu().numpy())

        if workload.style == "forward":
            return [row(lambda: bind(workload.program, self.xp))]
        if workload.style == "scan":
            return [row(lambda: bind(workload.program, self.xp, python_scan))]
        if workload.style in ("grad", "train_step", "scan_grad"):
            return [row(lambda: bind(workload.by_hand, self.xp))]
        if workload.style == "copy":
            return [row(lambda: lambda src, dst: dst.copy_(src))]
        return []


class TorchCpuPeer:
    """PyTorch on the CPU for the models group: eager, and the same step under
    `torch.compile` (Inductor), each as a PyTorch user writes it. A training step is the
    loss with `torch.autograd.grad` of its parameters (under `torch.compile` the loss is
    compiled and AOTAutograd compiles its backward); per-example gradients are
    `torch.func.vmap(torch.func.grad(loss))`, PyTorch's recipe; the programs run on
    `torch_numpy`, the programs' NumPy calls in torch's spelling, with Python loops for
    `scan` and `fori_loop` (which `torch.compile` unrolls)."""

    label = "torch"
    LABELS = ("torch", "torch.compile")

    def __init__(self):
        if importlib.util.find_spec("torch") is None:
            raise PeerUnavailable("not installed")
        import torch

        from . import torch_numpy

        self.torch, self.xp, self.version = torch, torch_numpy, torch.__version__

    def implement(self, workload: Workload) -> list[Implementation]:
        torch, xp = self.torch, self.xp
        to_device = lambda a: torch.from_numpy(np.ascontiguousarray(a))  # noqa: E731
        to_numpy = lambda t: t.detach().numpy()  # noqa: E731
        program = bind(workload.program, xp, xp.LOOPS)

        def step(loss):
            def value_and_grad(params, batch):
                params = tree_map(lambda p: p.detach().requires_grad_(), params)
                value = loss(params, batch)
                flat = leaves(params)
                grads = iter(torch.autograd.grad(value, flat))
                return value.detach(), tree_map(lambda _: next(grads), params)

            return value_and_grad

        def per_example(loss):
            return torch.func.vmap(torch.func.grad(loss), in_dims=(None, 0))

        def compiled(function):
            # Dynamo keys what it compiled by the code object, which every workload's
            # `bind` shares: start each workload afresh, as in a process of its own (else
            # the eighth program falls back to eager, and the second of a size is compiled
            # for dynamic shapes).
            torch._dynamo.reset()
            return torch.compile(function)

        if workload.style == "value_and_grad":
            builds = (lambda: step(program), lambda: step(compiled(program)))
        elif workload.style == "per_example_grad":
            builds = (lambda: per_example(program), lambda: compiled(per_example(program)))
        elif workload.style == "kernel":
            builds = (lambda: program, lambda: compiled(program))
        else:
            return []
        return [
            Implementation(label, build, to_device, _no_sync_of_torch, to_numpy)
            for label, build in zip(self.LABELS, builds, strict=True)
        ]


def _no_sync_of_torch(_) -> None:
    """PyTorch's CPU operations have finished when they return."""


class CudaMemcpyPeer:
    """A device-to-device copy through Numba's CUDA driver: the GPU bandwidth ceiling."""

    label = "cuda memcpy"

    def __init__(self):
        try:
            from numba import cuda
        except ImportError as error:
            raise PeerUnavailable(f"numba.cuda: {error}") from error
        if not cuda.is_available():
            raise PeerUnavailable("Numba sees no CUDA GPU")
        version = _distribution_version("numba-cuda")
        self.version = f"via numba-cuda {version}" if version else "via Numba's built-in CUDA"

    def implement(self, workload: Workload) -> list[Implementation]:
        if workload.style != "copy":
            return []
        to_device, sync, to_numpy = _numba_cuda_transfers()
        copy = lambda src, dst: (dst.copy_to_device(src), dst)[1]
        return [Implementation("cuda memcpy", lambda: copy, to_device, sync, to_numpy)]


def _distribution_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def _identity_transfers():
    return (lambda a: a), (lambda _: None), (lambda a: a)


def _numba_cuda_transfers():
    from numba import cuda

    def to_numpy(result):
        if hasattr(result, "copy_to_host"):
            return result.copy_to_host()
        if hasattr(result, "__cuda_array_interface__"):
            return cuda.as_cuda_array(result).copy_to_host()
        return np.asarray(result)

    return cuda.to_device, lambda _: cuda.synchronize(), to_numpy


def make_peers(backend: str, scratch_dir: str) -> tuple[list, dict[str, str]]:
    """The peers to run, in table order (numbax first), and why any other is missing.

    `scratch_dir` holds the cold-start caches; the caller deletes it.
    """
    if backend == "cuda":
        constructors = [
            ("numpy", NumPyPeer),
            ("jax", lambda: JaxPeer(True, scratch_dir)),
            ("cupy", CuPyPeer),
            ("torch", TorchPeer),
            ("cuda memcpy", CudaMemcpyPeer),
        ]
    else:
        constructors = [
            ("numpy", NumPyPeer),
            ("numba", lambda: NumbaPeer(scratch_dir)),
            ("jax", lambda: JaxPeer(False, scratch_dir)),
        ]
    peers, missing = [NumbaxPeer(backend, scratch_dir)], {}
    for label, construct in constructors:
        try:
            peers.append(construct())
        except PeerUnavailable as error:
            missing[label] = str(error)
    return peers, missing
