"""The import layering of DESIGN.md's table, and no import ring, read from the source.

Each module's *module-level* imports (those that run when it is imported: at the top,
and inside a module-level ``if``/``try``) are read with ``ast``, without importing
anything. An import inside a function runs later, when the lower layer is called by a
higher one that is already loaded, and is how a layer reaches up at run time; it is not
checked here.
"""

from __future__ import annotations

import ast
import os
import sys
from dataclasses import dataclass

import pytest

import numbax

ROOT = os.path.dirname(os.path.abspath(numbax.__file__))
NOT_SHIPPED = {"tests", "benchmarks", "tools", "examples", "build", "docs"}
LAYERS = ("ir", "tracer", "numpy_lib", "transforms", "passes", "backends")

# DESIGN.md's table: the layers of the package each layer may import (itself always).
# Modules at the root (api.py, export.py, ...) wire the layers together and may import
# any of them; config.py is the one home of the options, imports nothing of numbax, and
# every layer may read it.
MAY_IMPORT = {
    "ir": set(),
    "tracer": {"ir"},
    "numpy_lib": {"ir", "tracer"},
    "transforms": {"ir", "tracer"},
    "passes": {"ir"},
    "backends": {"ir", "passes"},
}
EVERY_LAYER_MAY_IMPORT = {"config"}
# ``ir`` imports NumPy only (ml_dtypes, when installed, gives NumPy its bfloat16 dtype).
IR_THIRD_PARTY = {"numpy", "ml_dtypes"}


@dataclass(frozen=True)
class Import:
    module: str  # the numbax module (or outside package) imported
    line: int


def _module_files() -> dict[str, str]:
    """Every module of the package by its import name (``numbax.tracer.core``)."""
    files = {}
    for folder, subfolders, names in os.walk(ROOT):
        relative = os.path.relpath(folder, ROOT)
        parts = [] if relative == "." else relative.split(os.sep)
        if parts and (parts[0] in NOT_SHIPPED or parts[0].startswith(".")):
            subfolders[:] = []
            continue
        subfolders[:] = [s for s in subfolders if not s.startswith((".", "__"))]
        if parts and "__init__.py" not in names:
            subfolders[:] = []
            continue
        for name in names:
            if name.endswith(".py"):
                stem = name[:-3]
                dotted = ["numbax", *parts] + ([] if stem == "__init__" else [stem])
                files[".".join(dotted)] = os.path.join(folder, name)
    return files


MODULES = _module_files()


def _module_level_imports(name: str, path: str) -> list[Import]:
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    package = name if path.endswith("__init__.py") else name.rsplit(".", 1)[0]
    found: list[Import] = []

    def absolute(node: ast.ImportFrom) -> str:
        if not node.level:
            return node.module or ""
        base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
        return ".".join(base + ([node.module] if node.module else []))

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.Import):
                found.extend(Import(alias.name, node.lineno) for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                source = absolute(node)
                for alias in node.names:
                    submodule = f"{source}.{alias.name}"
                    found.append(Import(submodule if submodule in MODULES else source, node.lineno))
            elif isinstance(node, ast.If | ast.Try):
                visit(node.body)
                visit(node.orelse)
                for handler in getattr(node, "handlers", []):
                    visit(handler.body)
                visit(getattr(node, "finalbody", []))

    visit(tree.body)
    return found


IMPORTS = {name: _module_level_imports(name, path) for name, path in MODULES.items()}


def _layer(module: str) -> str | None:
    """The layer a numbax module belongs to; a root module's own name (``api``, ``config``)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def _violations(may_import: dict[str, set[str]]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for name, imports in IMPORTS.items():
        layer = _layer(name)
        if layer not in may_import:
            continue  # a module at the root: it wires the layers together
        allowed = may_import[layer] | {layer} | EVERY_LAYER_MAY_IMPORT
        for imported in imports:
            if imported.module == "numbax":
                found.setdefault(name, []).append(f"line {imported.line}: numbax (the public API)")
            elif imported.module.startswith("numbax."):
                target = _layer(imported.module)
                if target not in allowed:
                    found.setdefault(name, []).append(f"line {imported.line}: {imported.module}")
    return found


def test_the_package_is_found():
    assert {"numbax.api", "numbax.ir", "numbax.tracer", "numbax.backends.cpu"} <= set(MODULES)
    assert all(any(_layer(m) == layer for m in MODULES) for layer in LAYERS)


def test_each_layer_imports_only_the_layers_below_it():
    found = _violations(MAY_IMPORT)
    report = "\n".join(f"{module}: {', '.join(lines)}" for module, lines in sorted(found.items()))
    assert not found, f"imports against DESIGN.md's table (module: line: what):\n{report}"


def test_the_check_sees_an_import_against_the_table():
    # A table that forbids what the tracer does import must report it, by module and line.
    stricter = dict(MAY_IMPORT, tracer=set())
    found = _violations(stricter)
    assert "numbax.tracer.core" in found or any(m.startswith("numbax.tracer") for m in found)
    assert all(line.startswith("line ") for lines in found.values() for line in lines)


def test_config_imports_nothing_of_numbax():
    assert not [i for i in IMPORTS["numbax.config"] if i.module.startswith("numbax")]


def test_ir_imports_numpy_only():
    outside = {
        imported.module.split(".")[0]
        for name, imports in IMPORTS.items()
        if _layer(name) == "ir"
        for imported in imports
        if not imported.module.startswith("numbax")
    }
    third_party = {m for m in outside if m not in sys.stdlib_module_names and m != "__future__"}
    assert third_party <= IR_THIRD_PARTY, f"ir imports {sorted(third_party - IR_THIRD_PARTY)}"


# --- import rings ------------------------------------------------------------------------


def _graph() -> dict[str, set[str]]:
    return {
        name: {i.module for i in imports if i.module in MODULES and i.module != name}
        for name, imports in IMPORTS.items()
    }


def import_rings(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm,
    iterative): each is a ring of modules that import one another at import time."""
    index: dict[str, int] = {}
    lowest: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    rings = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = lowest[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            advanced = False
            for successor in successors:
                if successor not in index:
                    index[successor] = lowest[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(graph[successor]))))
                    advanced = True
                    break
                if successor in on_stack:
                    lowest[node] = min(lowest[node], index[successor])
            if advanced:
                continue
            work.pop()
            if work:
                lowest[work[-1][0]] = min(lowest[work[-1][0]], lowest[node])
            if lowest[node] == index[node]:
                ring = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    ring.append(member)
                    if member == node:
                        break
                if len(ring) > 1:
                    rings.append(sorted(ring))
    return rings


def test_the_ring_finder_finds_rings():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert import_rings(graph) == [["a", "b", "c"]]
    assert import_rings({"a": {"b"}, "b": set()}) == []


def test_no_import_ring():
    rings = import_rings(_graph())
    assert not rings, "modules that import one another at import time:\n" + "\n".join(
        " <-> ".join(ring) for ring in rings
    )


# The rings issue 35 broke, each as the one import that would close it again.
BROKEN_RINGS = {
    "tracer-numpy": ("numbax.numpy_lib.sorting", "numbax.numpy_lib.numpy_api"),
    "passes-memory": ("numbax.passes.window_stores", "numbax.passes.memory"),
    "cuda-complex": ("numbax.backends.cuda.complex", "numbax.backends.cuda.scalar"),
}


@pytest.mark.parametrize(("importer", "imported"), BROKEN_RINGS.values(), ids=BROKEN_RINGS)
def test_the_ring_check_sees_a_broken_ring_put_back(importer, imported):
    graph = _graph()
    assert imported not in graph[importer]
    graph[importer] = graph[importer] | {imported}
    assert any({importer, imported} <= set(ring) for ring in import_rings(graph))


# Issue 35: a module holds one concept; past this many lines it holds two.
MOST_LINES = 600


def test_no_module_is_over_the_line_limit():
    lines = {}
    for name, path in MODULES.items():
        with open(path, encoding="utf-8") as file:
            lines[name] = sum(1 for _ in file)
    over = {name: count for name, count in lines.items() if count > MOST_LINES}
    assert not over, f"modules over {MOST_LINES} lines (split each by concept): {over}"
    assert max(lines.values()) > MOST_LINES // 2  # the count reads the package's modules
