"""The package as a whole: one import name, no Numba at import, the public API, the
layout that keeps pytest from importing the package twice, and the README's promises."""

from __future__ import annotations

import importlib
import os
import pkgutil
import re
import subprocess
import sys

import pytest

import numbax

ROOT = os.path.dirname(os.path.abspath(numbax.__file__))
NOT_SHIPPED = ("tests", "benchmarks", "tools", "examples")


def _run(code: str, cwd: str = ROOT) -> str:
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


# The modules that register the MPI collectives: ``numbax.distributed``, what it loads, and
# its benchmark (the checkout's benchmarks/ is walked too).
COLLECTIVES = (
    "numbax.distributed",
    "numbax.ir.collectives",
    "numbax.transforms.collective_rules",
    "numbax.benchmarks.distributed",
)


def _modules(path, prefix: str):
    """The package's module names, as ``pkgutil.walk_packages`` finds them, without the
    backends (they import Numba; covered by their own tests) and the collectives (they
    register primitives, which tests/distributed checks in processes of their own: this
    process's every-primitive tables must not see them). Packages are imported to be
    walked into, so the skipped ones are not walked into either."""
    for info in pkgutil.iter_modules(path, prefix):
        name = info.name
        if ".backends." in name or name.endswith((".cpu", ".cuda")) or name.startswith(COLLECTIVES):
            continue
        yield name
        if info.ispkg:
            yield from _modules(importlib.import_module(name).__path__, name + ".")


def test_no_module_is_imported_under_a_second_name():
    # Import every module of the package, then look for any module from this folder
    # that lives under another name (`<checkout>.tracer` next to `numbax.tracer`).
    for name in _modules(numbax.__path__, "numbax."):
        importlib.import_module(name)
    doubles = []
    for name, module in list(sys.modules.items()):
        path = getattr(module, "__file__", None)
        if not path or name == "numbax" or name.startswith("numbax."):
            continue
        if not os.path.isabs(path):
            continue  # a module made at run time naming no file (torch.ops: "_ops.py")
        relative = os.path.relpath(os.path.abspath(path), ROOT)
        if relative.startswith((os.pardir, *NOT_SHIPPED)) or "site-packages" in relative:
            continue  # outside the package, or a virtual environment kept in the checkout
        if os.path.basename(path) == "conftest.py":
            continue
        doubles.append((name, relative))
    assert not doubles, f"modules of the package imported under a second name: {doubles}"


def test_layout_that_avoids_the_double_import():
    assert not os.path.exists(os.path.join(ROOT, "conftest.py"))
    for folder, _, files in os.walk(os.path.join(ROOT, "tests")):
        assert "__init__.py" not in files, f"{folder} must not be a package"


def test_import_does_not_import_numba():
    out = _run(
        "import sys, numpy as np, numbax\n"
        "numbax.make_jaxpr(lambda x: np.sin(x) @ x.T)(np.ones((2, 2)))\n"
        "numbax.jit(lambda x: x * 2, backend='interpret')(np.ones(2))\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('numba', 'llvmlite')))"
    )
    assert out.strip() == "[]"


def test_repository_root_does_not_shadow_numpy():
    # Scripts run from the checkout import the real NumPy, not a folder of ours.
    out = _run("import numpy, os; print(os.path.dirname(numpy.__file__))")
    assert os.path.dirname(os.path.abspath(out.strip())) != ROOT


def test_public_api():
    for name in numbax.__all__:
        assert hasattr(numbax, name), name
    # `numbax.numpy` and `numbax.nn` import like submodules, though they live in tracer/.
    assert importlib.import_module("numbax.numpy") is numbax.numpy
    assert importlib.import_module("numbax.nn") is numbax.nn
    assert callable(numbax.nn.softmax) and callable(numbax.numpy.einsum)
    assert numbax.__version__


def _pyproject() -> dict:
    tomllib = pytest.importorskip("tomllib")
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        return tomllib.load(f)


def test_pytest_configuration_guards_the_root_package():
    options = _pyproject()["tool"]["pytest"]["ini_options"]
    assert options["testpaths"] == ["tests"]
    assert "--confcutdir=tests" in options["addopts"]


def _readme_commands() -> list[str]:
    with open(os.path.join(ROOT, "README.md")) as f:
        text = f.read()
    first_section = re.split(r"\n## ", text, maxsplit=2)[1]
    return re.findall(r"```(?:bash|sh)?\n(.*?)```", first_section, re.S)


def test_readme_starts_with_the_two_set_up_commands():
    blocks = _readme_commands()
    commands = [line for block in blocks for line in block.strip().splitlines()]
    assert len(commands) == 2, commands
    extras = set(_pyproject()["project"]["optional-dependencies"])
    assert {"test", "bench", "cuda", "dev"} <= extras
    for command in commands:
        for used in re.findall(r"\.\[([\w,]+)\]", command):
            assert set(used.split(",")) <= extras, command
    assert any("python -m pytest" in c for c in commands)
    assert any("python -m benchmarks" in c for c in commands)


# README.md's code blocks run in tests/test_docs.py, with what they say they print.


def _listing() -> set[str]:
    """The checkout's files that git does not track, ignored ones included (a build's
    leftovers are ignored)."""
    out = subprocess.run(
        ["git", "status", "--porcelain", "--ignored", "--untracked-files=all"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    # numbax.egg-info is setuptools' metadata of the checkout (an editable install made it).
    skipped = ("__pycache__", "numbax.egg-info")
    untracked = [line[3:] for line in out.splitlines() if line.startswith(("??", "!!"))]
    return {path for path in untracked if not any(s in path for s in skipped)}


@pytest.mark.slow  # a build: pip fetches setuptools into an isolated environment
def test_a_wheel_build_leaves_the_checkout_as_it_was_and_ships_the_package(tmp_path):
    import zipfile

    if not os.path.isdir(os.path.join(ROOT, ".git")):
        pytest.skip("not a git checkout")
    before = _listing()
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", ".", "--no-deps", "-q", "-w", str(tmp_path)],
        cwd=ROOT,
        check=True,
        timeout=600,
    )
    assert _listing() == before, sorted(_listing() ^ before)
    (wheel,) = tmp_path.glob("numbax-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "numbax/__init__.py" in names and "numbax/backends/cpu/program.py" in names
    assert any(name.endswith(".dist-info/licenses/LICENSE") for name in names)
    shipped = {name.split("/")[1] for name in names if name.startswith("numbax/")}
    assert not shipped & {*NOT_SHIPPED, "build", "docs"}, shipped


def test_the_license_is_declared():
    project = _pyproject()["project"]
    assert project["license"] == "Apache-2.0" and project["license-files"] == ["LICENSE"]
    with open(os.path.join(ROOT, "LICENSE"), encoding="utf-8") as f:
        assert "Apache License" in f.read(200)
