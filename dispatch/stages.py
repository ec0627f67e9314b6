"""The stages of ``jit(f).lower(*args).compile()``: ``Lowered`` (the traced program,
optimised, fused, printed, drawn, its generated source) and ``Compiled``."""

from __future__ import annotations

from .. import backends, graph, passes
from ..ir.core import ClosedJaxpr
from ..ir.errors import NumbaxTypeError, ShapeError, UnsupportedOnBackendError, at_line
from ..ir.graph import jaxpr_to_dot
from ..tracer import functionalize, tree_flatten, tree_unflatten
from ..tracer.promote import argument_aval
from ..tracer.pytree import PyTreeDef
from ..tracer.source_info import user_frame_info
from . import compiling
from .arguments import as_executable_argument


class Lowered:
    """A traced program before compilation.

    ``jaxpr`` is the program as traced; ``as_text()`` prints it optimised and fused into
    kernels (``fused``), ``pass_log`` says what each pass changed and refused (the
    backend's own rewrites and refusals included: ``cuda_launch``, ``cpu_write``),
    ``memory_plan`` how intermediates share buffers, ``dump_passes(dir)`` writes the IR
    after every pass.
    ``compile()`` gives a ``Compiled``, called as the function is (static arguments left
    out) and returning the function's output structure.
    """

    def __init__(
        self,
        closed: ClosedJaxpr,
        backend_name: str,
        name: str,
        in_tree: PyTreeDef | None = None,
        out_tree: PyTreeDef | None = None,
        writes: tuple[int, ...] = (),
    ):
        self.jaxpr = closed
        self.backend_name = backend_name
        self.name = name
        # The structure of (dynamic args, kwargs) and of the result; the argument leaves
        # the function writes into (their final values are outputs after out_tree's).
        self.in_tree, self.out_tree, self.writes = in_tree, out_tree, writes
        self._optimized = None
        self._lowered = None  # (the backend's program, not compiled, or None,)

    def _optimize(self):
        if self._optimized is None:
            self._optimized = passes.optimize(self.jaxpr, name=self.name, **self._pipeline())
        return self._optimized

    def _pipeline(self) -> dict:
        """The backend's own rewrites of the fused program, run in the pipeline, and
        whether the pipeline plans memory (not for a backend that plans what it runs
        after rewriting the pipeline's result: ``plans_memory``)."""
        backend = backends.get_backend(self.backend_name)
        return {
            "backend_passes": getattr(backend, "passes", ()),
            "memory_plan": not getattr(backend, "plans_memory", False),
        }

    @property
    def fused(self) -> ClosedJaxpr:
        return self._optimize()[0]

    def _backend_program(self):
        """What the backend generates for this, not compiled (its ``source``, its pass
        log), or None for a backend that generates nothing (``interpret``)."""
        if self._lowered is None:
            backend = backends.get_backend(self.backend_name)
            lower = getattr(backend, "lower", None)
            self._lowered = (None if lower is None else lower(self.jaxpr, self.name),)
        return self._lowered[0]

    @property
    def pass_log(self) -> passes.PassLog:
        """The passes' log, and what the backend did to the fused program and refused,
        from the run that generated its program (``source()``), where it generates one."""
        log = getattr(self._backend_program(), "pass_log", None)
        return self._optimize()[1] if log is None else log

    @property
    def memory_plan(self) -> passes.MemoryPlan:
        return self.pass_log.memory_plan

    def dump_passes(self, directory: str) -> None:
        passes.optimize(self.jaxpr, dump_dir=directory, name=self.name, **self._pipeline())

    def as_text(self) -> str:
        return str(self.fused)

    def as_dot(self, optimized: bool = True) -> str:
        """The program as a Graphviz DOT graph: the fused one with its kernels as
        clusters, or with ``optimized=False`` the jaxpr as traced (see ir/graph.py)."""
        program, stage = (self.fused, "fused") if optimized else (self.jaxpr, "traced")
        return jaxpr_to_dot(program, name=self.name, title=f"{self.name} ({stage})")

    def as_svg(self, optimized: bool = True) -> str:
        """``as_dot`` drawn by Graphviz (needs ``pip install graphviz`` and ``dot``)."""
        return graph.render_svg(self.as_dot(optimized))

    def source(self) -> str:
        """The program the backend generates for this, not compiled: the Python module
        that Numba would compile (``cpu``), or the kernels' module (``cuda``)."""
        program = self._backend_program()
        if program is None:
            raise UnsupportedOnBackendError(
                f"the {self.backend_name} backend runs the jaxpr as traced and generates no "
                "source; lower with backend='cpu' or 'cuda' to see generated code."
            )
        return program.source

    def compile(self) -> Compiled:
        executable = compiling.compile_closed(
            self.jaxpr, self.backend_name, self.name, writes=self.writes
        )
        return Compiled(executable, self)


class Compiled:
    """A compiled program, from ``jit(f).lower(*args).compile()``.

    Called with arguments of the types it was lowered for (the static ones left out, as
    in JAX), it returns ``f``'s output structure and writes back into the arguments ``f``
    writes into, as the jitted function does. ``executable`` is the backend's program;
    its attributes (``source``, ``compile_stats``, ...) are read through this object.

    >>> import numpy as np, numbax
    >>> f = numbax.jit(lambda x, n: {"y": x * n}, static_argnums=1, backend="interpret")
    >>> f.lower(np.ones(2), 3).compile()(np.arange(2.0))
    {'y': array([0., 3.])}
    """

    def __init__(self, executable, lowered: Lowered):
        self.executable = executable
        self.lowered = lowered

    def __call__(self, *args, **kwargs):
        lowered = self.lowered
        leaves, in_tree = tree_flatten((args, kwargs))
        if in_tree != lowered.in_tree:
            raise NumbaxTypeError(
                at_line(
                    f"compiled {lowered.name} was lowered for arguments {lowered.in_tree}, "
                    f"got {in_tree} (the static arguments are left out of the call); lower "
                    "it again for these arguments",
                    user_frame_info(),
                )
            )
        avals = lowered.jaxpr.jaxpr.in_avals
        for k, (leaf, expected) in enumerate(zip(leaves, avals, strict=True)):
            aval, _ = argument_aval(leaf)
            if aval != expected:
                error = ShapeError if aval.shape != expected.shape else NumbaxTypeError
                raise error(
                    at_line(
                        f"compiled {lowered.name} was lowered for argument leaf {k} of type "
                        f"{expected.str_short()}, got {aval.str_short()}; lower it again for "
                        "these arguments, or call the jitted function, which compiles per type",
                        user_frame_info(),
                    )
                )
        if lowered.writes:
            functionalize.refuse_aliased_writes(leaves, lowered.writes, lowered.name)
        keep = getattr(self.executable, "accepts_device_arrays", False)
        arrays = [as_executable_argument(x, a, keep) for x, a in zip(leaves, avals, strict=True)]
        outs = functionalize.write_back_outputs(leaves, lowered.writes, self.executable(*arrays))
        return tree_unflatten(lowered.out_tree, outs)

    def __getattr__(self, name):
        return getattr(self.executable, name)
