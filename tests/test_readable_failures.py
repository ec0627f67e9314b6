"""What a user sees when something goes wrong or is slow: tracebacks without numbax's
frames, one compile-log line per compile, a warning for a function that keeps
retracing, a readable ``repr`` of jitted functions, and the generated source through
``Lowered.source()`` and ``NUMBAX_DUMP``."""

from __future__ import annotations

import inspect
import logging
import os
import subprocess
import sys
import textwrap
import traceback
import warnings

import numpy as np
import pytest

import numbax
from numbax.config import config

PACKAGE_ROOT = os.path.dirname(os.path.abspath(numbax.__file__))


def numbax_frames(tb) -> list[str]:
    """The frames of ``tb`` in numbax's own modules (not in this checkout's tests)."""
    files = {
        os.path.abspath(m.__file__)
        for name, m in list(sys.modules.items())
        if (name == "numbax" or name.startswith("numbax.")) and getattr(m, "__file__", None)
    }
    return [f"{f.filename}:{f.lineno}" for f in traceback.extract_tb(tb) if f.filename in files]


def frames_after(tb, caller) -> list[tuple[str, int]]:
    """(file, line) of every frame after ``caller``'s (the test's call site)."""
    frames = traceback.extract_tb(tb)
    assert frames[0].name == caller.__name__, frames
    return [(f.filename, f.lineno) for f in frames[1:]]


def line_of(fn, snippet: str) -> tuple[str, int]:
    lines, first = inspect.getsourcelines(fn)
    offset = next(k for k, line in enumerate(lines) if snippet in line)
    return inspect.getsourcefile(fn), first + offset


def mismatched_add(x):
    return x + np.ones(4)  # the shape error


def sums_through_jit(x):
    return numbax.jit(mismatched_add)(x).sum()  # a user frame in the middle


# --- tracebacks ----------------------------------------------------------------------------


def test_shape_error_under_jit_shows_the_users_frame_first(backend):
    with pytest.raises(numbax.ShapeError) as info:
        numbax.jit(mismatched_add, backend=backend)(np.ones(3))
    after = frames_after(
        info.value.__traceback__, test_shape_error_under_jit_shows_the_users_frame_first
    )
    assert after == [line_of(mismatched_add, "the shape error")]
    assert numbax_frames(info.value.__traceback__) == []
    assert "NUMBAX_TRACEBACK_FILTERING=off" in "".join(info.value.__notes__)


def test_filtering_off_keeps_numbax_frames(monkeypatch):
    monkeypatch.setattr(config, "traceback_filtering", False)
    with pytest.raises(numbax.ShapeError) as info:
        numbax.jit(mismatched_add, backend="interpret")(np.ones(3))
    frames = numbax_frames(info.value.__traceback__)
    assert any(f.startswith(os.path.join(PACKAGE_ROOT, "dispatch", "")) for f in frames), frames
    assert any(os.sep + "tracer" + os.sep in f for f in frames), frames
    assert not getattr(info.value, "__notes__", None)


def test_nested_transforms_keep_every_user_frame_in_order(backend):
    """jit(grad(jit(g))): the inner boundaries leave the error to the outermost, which
    keeps the user's frames of g and of the function g jits, and nothing of numbax's."""
    program = numbax.jit(numbax.grad(numbax.jit(sums_through_jit)), backend=backend)
    with pytest.raises(numbax.ShapeError) as info:
        program(np.ones(3))
    after = frames_after(
        info.value.__traceback__, test_nested_transforms_keep_every_user_frame_in_order
    )
    assert after == [
        line_of(sums_through_jit, "a user frame in the middle"),
        line_of(mismatched_add, "the shape error"),
    ]
    assert len(info.value.__notes__) == 1


def test_nested_transforms_unfiltered_hold_every_boundary(monkeypatch):
    monkeypatch.setattr(config, "traceback_filtering", False)
    program = numbax.jit(numbax.grad(numbax.jit(sums_through_jit)), backend="interpret")
    with pytest.raises(numbax.ShapeError) as info:
        program(np.ones(3))
    names = [f.name for f in traceback.extract_tb(info.value.__traceback__)]
    assert names.count("__call__") >= 3  # the outer jit, the inner jit, g's jit
    assert "sums_through_jit" in names and "mismatched_add" in names


@pytest.mark.parametrize(
    "transform",
    [numbax.grad, numbax.vmap, numbax.jacrev, numbax.jacfwd, numbax.make_jaxpr],
    ids=lambda t: t.__name__,
)
def test_every_transform_is_a_boundary(transform):
    def summed(x):
        return mismatched_add(x).sum()

    with pytest.raises(numbax.ShapeError) as info:
        transform(summed)(np.ones((2, 3)))
    after = frames_after(info.value.__traceback__, test_every_transform_is_a_boundary)
    assert after == [line_of(summed, "mismatched_add(x)"), line_of(mismatched_add, "shape error")]


def test_control_flow_is_a_boundary():
    with pytest.raises(numbax.ShapeError) as info:
        numbax.cond(True, mismatched_add, lambda x: x, np.ones(3))
    assert numbax_frames(info.value.__traceback__) == []


def test_a_users_own_exception_keeps_its_traceback():
    def fails(x):
        raise KeyError("the user's own")

    with pytest.raises(KeyError) as info:
        numbax.jit(fails, backend="interpret")(np.ones(3))
    assert numbax_frames(info.value.__traceback__)
    assert not getattr(info.value, "__notes__", None)


def test_a_backend_failing_on_a_traced_program_is_a_numbax_error(compiled_backend, monkeypatch):
    """A backend that fails on a program that traced (Numba's lowering once asserted on
    two locals' names) raises numbax's error: it names the function, the backend, the
    failure, the user's line and the way round it, and chains the backend's error."""
    backend = numbax.backends.get_backend(compiled_backend)

    def fails(closed, name="fn", **options):
        raise AssertionError("key already in dictionary: 'p_2'")

    monkeypatch.setattr(backend, "compile", fails)

    def scaled_sine(x):
        return np.sin(x) * 2.0  # the program's first line

    with pytest.raises(numbax.InternalCompilerError) as info:
        numbax.jit(scaled_sine, backend=compiled_backend)(np.ones(3))
    message = str(info.value)
    assert f"'scaled_sine' on the {compiled_backend} backend" in message
    assert "AssertionError: key already in dictionary: 'p_2'" in message
    assert "backend='interpret'" in message and ".source()" in message
    file, line = line_of(scaled_sine, "the program's first line")
    assert f"{file}:{line}" in message
    assert isinstance(info.value.__cause__, AssertionError)


def test_filtering_option_reads_the_environment(monkeypatch):
    monkeypatch.setenv("NUMBAX_TRACEBACK_FILTERING", "off")
    assert not type(config)().traceback_filtering
    monkeypatch.setenv("NUMBAX_TRACEBACK_FILTERING", "")
    assert type(config)().traceback_filtering


# --- the compile log -----------------------------------------------------------------------


def compile_lines(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "numbax"]


def test_one_log_line_per_compile_with_its_stages(compiled_backend, monkeypatch, caplog):
    monkeypatch.setattr(config, "log_compiles", True)

    def scaled(x):
        return np.tanh(x) * 3.0

    f = numbax.jit(scaled, backend=compiled_backend)
    with caplog.at_level(logging.WARNING, logger="numbax"):
        f(np.ones(3))
        f(np.ones(3))
        f(np.ones(4))
    first, second = compile_lines(caplog)
    assert first.startswith("numbax: scaled (first call): tracing ")
    assert "f64[4] (was f64[3])" in second
    for line in (first, second):
        for stage in ("tracing", "optimise", "codegen", "backend"):
            assert f"{stage} " in line and " ms" in line, line
        assert compiled_backend.name + ":" in line
        outcomes = ("disk cache", "no disk cache", "this process", "none to compile")
        assert any(text in line for text in outcomes)


def test_a_signature_traced_inside_another_trace_says_so(monkeypatch, caplog):
    monkeypatch.setattr(config, "log_compiles", True)
    inner = numbax.jit(lambda x: (x * 2.0).sum(), backend="interpret")
    with caplog.at_level(logging.WARNING, logger="numbax"):
        numbax.jit(numbax.grad(inner), backend="interpret")(np.ones(2))
    lines = compile_lines(caplog)
    assert any("compiled within the enclosing program" in line for line in lines), lines


def test_disk_cache_hit_in_a_second_process(tmp_path):
    pytest.importorskip("numba")
    script = textwrap.dedent(
        """
        import numpy as np, numbax
        numbax.jit(lambda x: x * 2.0 + 1.0, backend="cpu")(np.ones(3))
        """
    )
    # The compile log alone: a compile slowed past 2 s by a loaded machine also shows progress.
    env = dict(os.environ, NUMBAX_CACHE_DIR=str(tmp_path), NUMBAX_LOG_COMPILES="1")
    env["NUMBAX_PROGRESS"] = "0"

    def run() -> str:
        done = subprocess.run(
            [sys.executable, "-c", script], env=env, cwd=tmp_path, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
        (line,) = [line for line in done.stderr.splitlines() if line.startswith("numbax:")]
        return line

    first, second = run(), run()
    assert "1 new, 0 from memory, 0 from disk" in first  # the program's one loop kernel
    # One kernel call: a launcher of steps (``backends/cpu/steps.py``).
    assert "launcher of steps: none to compile)" in first  # the machine runs it
    assert "0 new, 0 from memory, 1 from disk" in second
    assert "launcher of steps: none to compile)" in second


# --- retracing -----------------------------------------------------------------------------


def retrace_warnings(record) -> list:
    return [w for w in record if issubclass(w.category, numbax.RetraceWarning)]


def test_one_warning_after_ten_retraces_names_the_argument():
    def step(params, x):
        return params["w"] * x.sum()

    f = numbax.jit(step, backend="interpret")
    params = {"w": np.ones(2)}
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        for n in range(1, 11):  # the first trace and 9 retraces
            f(params, np.ones(n))
        assert retrace_warnings(record) == []
        f(params, np.ones(11))  # the 10th retrace
        for n in range(12, 15):
            f(params, np.ones(n))
    (warning,) = retrace_warnings(record)
    message = str(warning.message)
    assert "step has been retraced 10 times because x keeps changing" in message
    assert "f64[11] (was f64[10])" in message
    assert warning.filename == __file__  # it points at the user's call


def test_retrace_warning_names_a_changing_static_argument_and_a_pytree_leaf():
    scaled = numbax.jit(lambda x, factor: x * factor, static_argnames="factor", backend="interpret")
    weighted = numbax.jit(lambda params, x: params["w"] * x, backend="interpret")
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        for k in range(11):
            scaled(np.ones(2), factor=k)
            weighted({"w": np.ones(k + 1)}, np.ones(1))
    static, leaf = (str(w.message) for w in retrace_warnings(record))
    assert "because factor keeps changing" in static and "factor=10 (was 9)" in static
    assert "because params['w'] keeps changing" in leaf


# --- what a jitted function shows ----------------------------------------------------------


def documented(x, scale: float = 2.0, *, shift=0.0):
    """Scale and shift."""
    return x * scale + shift


def test_jit_keeps_the_signature_and_docstring():
    for f in (numbax.jit(documented), numbax.jit(documented, static_argnames="scale")):
        assert inspect.signature(f) == inspect.signature(documented)
        assert f.__doc__ == documented.__doc__
        assert f.__name__ == "documented" and f.__wrapped__ is documented


def test_repr_names_the_function_backend_and_compiled_signatures(backend):
    f = numbax.jit(documented, backend=backend)
    where = f"{__name__}.documented"
    assert repr(f) == f"<numbax.jit of {where} (backend {backend}, 0 signatures compiled)>"
    f(np.ones(2))
    f(np.ones(3))
    assert repr(f) == f"<numbax.jit of {where} (backend {backend}, 2 signatures compiled)>"


# --- generated source ----------------------------------------------------------------------


def test_lowered_source_is_the_compiled_programs_without_compiling(compiled_backend, monkeypatch):
    def shifted(x):
        return np.exp(x) - 1.0

    lowered = numbax.jit(shifted, backend=compiled_backend).lower(np.ones(3))
    backend_object = numbax.backends.get_backend(compiled_backend)
    compile = backend_object.compile

    def refuse(*args, **kwargs):
        raise AssertionError("Lowered.source() compiled the program")

    monkeypatch.setattr(backend_object, "compile", refuse)
    source = lowered.source()
    monkeypatch.setattr(backend_object, "compile", compile)
    assert "def " in source and "shifted" in source
    assert source == lowered.compile().source


def test_lowered_source_on_the_interpreter_is_a_clear_error():
    lowered = numbax.jit(documented, backend="interpret").lower(np.ones(2))
    with pytest.raises(numbax.UnsupportedOnBackendError, match="generates no source"):
        lowered.source()


def test_dump_writes_the_generated_source_beside_the_passes(
    compiled_backend, monkeypatch, tmp_path
):
    monkeypatch.setattr(config, "dump_dir", str(tmp_path))

    def dumped(x):
        return np.sin(x) * 2.0

    f = numbax.jit(dumped, backend=compiled_backend)
    f(np.ones(3))
    (executable,) = [entry.executable("dumped") for entry in f._cache.values()]
    sources = sorted(tmp_path.glob(f"dumped_{compiled_backend}_*.py"))
    assert [path.read_text() for path in sources] == [executable.source]
    assert any(path.is_dir() and path.name.endswith("_dumped") for path in tmp_path.iterdir())


def test_the_cuda_backend_without_a_gpu_says_what_is_missing():
    """On a machine with no NVIDIA driver (and Numba's simulator off), ``backend='cuda'``
    is a missing dependency, naming the way to run on the CPU, not a numbax bug."""
    script = textwrap.dedent(
        """
        import numpy as np, numbax
        from numba import cuda
        if cuda.is_available():
            print("gpu")
        else:
            try:
                numbax.jit(lambda x: x * 2.0, backend="cuda")(np.ones(3))
            except numbax.MissingDependencyError as error:
                print("missing:", error)
        """
    )
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    run = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    if run.stdout.strip() == "gpu":
        pytest.skip("this machine has a GPU: the cuda backend runs")
    assert run.stdout.startswith("missing: the cuda backend needs an NVIDIA GPU"), run.stdout
    assert "backend='cpu'" in run.stdout and "NUMBA_ENABLE_CUDASIM=1" in run.stdout
