"""docs/: the generated pages match the code, and errors point at them.

api.md, numpy_support.md and configuration.md are written by ``python tools/gen_docs.py``;
each test regenerates one into a temporary folder and compares it with the committed file,
so a change to the public API, the dispatch tables or config.py that is not followed by a
regeneration fails here rather than leaving the docs behind.
"""

from __future__ import annotations

import difflib
import importlib.util
import os
import re
import sys

import numpy as np
import pytest

import numbax

ROOT = os.path.dirname(os.path.abspath(numbax.__file__))
DOCS = os.path.join(ROOT, "docs")
REGENERATE = "run `python tools/gen_docs.py` and commit docs/"


def _load_generator():
    spec = importlib.util.spec_from_file_location(
        "gen_docs", os.path.join(ROOT, "tools", "gen_docs.py")
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while being built
    spec.loader.exec_module(module)
    return module


gen_docs = _load_generator()


def _committed(name: str) -> str:
    with open(os.path.join(DOCS, name), encoding="utf-8") as f:
        return f.read()


def _assert_up_to_date(name: str, tmp_path) -> None:
    (written,) = [path for path in gen_docs.write_pages(tmp_path) if path.name == name]
    fresh, committed = written.read_text(encoding="utf-8"), _committed(name)
    if fresh != committed:
        diff = difflib.unified_diff(
            committed.splitlines(), fresh.splitlines(), f"docs/{name}", "regenerated", lineterm=""
        )
        shown = "\n".join(list(diff)[:40])
        pytest.fail(f"docs/{name} is out of date: {REGENERATE}\n{shown}")


def test_the_api_reference_is_up_to_date(tmp_path):
    _assert_up_to_date("api.md", tmp_path)


def test_the_configuration_table_is_up_to_date(tmp_path):
    _assert_up_to_date("configuration.md", tmp_path)


def test_the_numpy_support_table_is_up_to_date(tmp_path):
    recorded = re.search(r"public namespace of NumPy (\d+\.\d+)", _committed("numpy_support.md"))
    assert recorded, "docs/numpy_support.md does not say which NumPy it lists"
    if recorded.group(1) != gen_docs.numpy_version():
        pytest.skip(
            f"docs/numpy_support.md lists NumPy {recorded.group(1)}'s namespace and this is "
            f"NumPy {np.__version__}: the tables differ by NumPy's own changes"
        )
    _assert_up_to_date("numpy_support.md", tmp_path)


def test_every_option_has_its_variable_and_meaning():
    meanings = gen_docs.config_meanings()
    options = gen_docs.config_options()
    assert options, "no fields found in numbax.config.Config"
    for option in options:
        assert option.variables, f"config.{option.attribute} reads no NUMBAX_* variable"
        for variable in option.variables:
            assert variable in meanings, f"{variable} is missing from config.py's table"
    read = {variable for option in options for variable in option.variables}
    assert set(meanings) <= read, f"config.py's table names variables no option reads: {read}"


def test_the_support_table_agrees_with_what_tracing_does():
    status = {
        name: gen_docs.numpy_status(value)[1] for name, value in gen_docs._numpy_callables(np)
    }
    jit = lambda f: numbax.jit(f, backend="interpret")
    x = np.linspace(0.1, 0.9, 4)
    for name in ("sum", "tanh", "where", "concatenate"):
        assert status[name].startswith(gen_docs.TRACED)
    np.testing.assert_allclose(jit(lambda a: np.tanh(np.sum(a)))(x), np.tanh(np.sum(x)))
    for name in ("array2string", "array_str", "isnat"):
        assert status[name] == gen_docs.REFUSED
        with pytest.raises(numbax.UnsupportedFunctionError):
            jit(getattr(np, name))(x)
    assert status["zeros"] == gen_docs.CONSTANT
    np.testing.assert_array_equal(jit(lambda a: a + np.zeros(4))(x), x)


@pytest.mark.parametrize(
    "function, name",
    [
        (np.linalg.eig, "numpy.linalg.eig"),  # through __array_function__
        (np.isnat, "numpy.isnat"),  # through __array_ufunc__
        (lambda a: np.add(a, a, where=a > 0.5), "numpy.add with arguments ['where']"),
    ],
)
def test_an_unsupported_function_error_points_to_the_support_table(function, name):
    with pytest.raises(numbax.UnsupportedFunctionError) as caught:
        numbax.jit(function, backend="interpret")(np.linspace(0.1, 0.9, 4))
    message = str(caught.value)
    assert name in message and "docs/numpy_support.md" in message
    assert os.path.exists(os.path.join(DOCS, "numpy_support.md"))


def test_the_readme_links_the_docs():
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    assert "## Documentation" in readme
    for page in ("api.md", "numpy_support.md", "configuration.md", "reading_the_output.md"):
        assert f"docs/{page}" in readme, page
        assert os.path.exists(os.path.join(DOCS, page)), page
