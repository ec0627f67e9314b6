"""The documentation is true: README.md and docs/ run, and the generated pages match the code.

Code blocks. Every fenced block of README.md and docs/*.md is read by its label:

- ```` ```python ````: run. The blocks of one page run in order in one namespace, as a
  reader would type them into one interpreter (a block run alone first runs those above
  it). What the block prints (standard output and error, the ``numbax`` log included) is
  checked against what the text says it prints, in one of two ways:
  - a comment ``# prints TEXT`` (at the end of a line or on a line of its own): TEXT must
    appear in the output, the comments' texts in order;
  - an ```` ```output ```` block right after the block (nothing but blank lines between):
    the output must match it, whitespace-insensitively, where ``...`` stands for any text
    and a number followed by ``ms`` for any time.
- ```` ```pycon ````: run as a doctest (``>>>`` lines, their expected output below them).
- A block whose first line is ``# not run here: REASON`` is shown to readers as it is and
  skipped by the test with REASON (for a block that needs a GPU, ``mpiexec``, ...).
- ```` ```bash ````, ```` ```text ````, ```` ```output ```` and unlabelled blocks are not
  run as Python.

docs/api.md is generated from the docstrings: its ```` ```python ```` blocks are
signatures, and its ```` ```pycon ```` blocks are the docstrings' examples, which
``test_a_public_docstring_example`` runs from the code itself (so api.md is not run twice).

Generated pages. api.md, numpy_support.md and configuration.md are written by ``python
tools/gen_docs.py``; each test regenerates one into a temporary folder and compares it with
the committed file, so a change to the public API, the dispatch tables or config.py that is
not followed by a regeneration fails here rather than leaving the docs behind.
"""

from __future__ import annotations

import contextlib
import dataclasses
import difflib
import doctest
import glob
import importlib.util
import io
import logging
import os
import re
import sys
from dataclasses import dataclass

import numpy as np
import pytest

import numbax
from numbax.config import config as numbax_config

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
    pages = ("api.md", "numpy_support.md", "configuration.md", "reading_the_output.md")
    for page in (*pages, "testing.md"):
        assert f"docs/{page}" in readme, page
        assert os.path.exists(os.path.join(DOCS, page)), page


# --- every code block of README.md and docs/*.md runs, and prints what the text says ------

PAGES = ["README.md"] + sorted(
    os.path.relpath(path, ROOT) for path in glob.glob(os.path.join(DOCS, "*.md"))
)
GENERATED_FROM_DOCSTRINGS = "docs/api.md"
RUN = ("python", "pycon")
NOT_RUN = ("bash", "sh", "text", "output", "")
SKIP_MARKER = re.compile(r"#\s*not run here:\s*(?P<reason>.+)")
PRINTS = re.compile(r"#\s*prints\s+(?P<text>.+?)\s*$", re.M)
FENCE = re.compile(r"^```(?P<label>[\w-]*)[ \t]*\n(?P<code>.*?)^```[ \t]*$", re.M | re.S)
TIME = re.compile(r"\d+(?:\.\d+)?(?= ms\b)")


@dataclass(frozen=True)
class Block:
    page: str
    line: int
    label: str
    code: str
    output: str | None  # the ```output block right after it, if any

    @property
    def skip_reason(self) -> str | None:
        first = self.code.lstrip().splitlines()[0] if self.code.strip() else ""
        marker = SKIP_MARKER.fullmatch(first.strip())
        return marker.group("reason") if marker else None


def _blocks(page: str) -> list[Block]:
    with open(os.path.join(ROOT, page), encoding="utf-8") as f:
        text = f.read()
    fences = list(FENCE.finditer(text))
    blocks = []
    for i, fence in enumerate(fences):
        following = fences[i + 1] if i + 1 < len(fences) else None
        output = None
        if following and following.group("label") == "output":
            if not text[fence.end() : following.start()].strip():
                output = following.group("code")
        line = text.count("\n", 0, fence.start()) + 1
        blocks.append(Block(page, line, fence.group("label"), fence.group("code"), output))
    return blocks


def _runnable(page: str) -> list[Block]:
    if page == GENERATED_FROM_DOCSTRINGS:
        return []
    return [block for block in _blocks(page) if block.label in RUN]


RUNNABLE = [block for page in PAGES for block in _runnable(page)]


@contextlib.contextmanager
def _captured(options: dict | None = None):
    """Standard output and error, and the ``numbax`` logger (pytest holds the root
    logger's handlers, so the log would not reach standard error by itself). numbax's
    options are set to ``options`` (a page's, which its blocks change as the docs show)
    and given back afterwards; ``options`` is updated with the block's changes."""
    buffer = io.StringIO()
    handler = logging.StreamHandler(buffer)
    handler.setFormatter(logging.Formatter("%(message)s"))
    logger = logging.getLogger("numbax")
    propagate, logger.propagate = logger.propagate, False
    logger.addHandler(handler)
    saved = dataclasses.asdict(numbax_config)
    for name, value in (options or {}).items():
        setattr(numbax_config, name, value)
    try:
        with contextlib.redirect_stdout(buffer), contextlib.redirect_stderr(buffer):
            yield buffer
    finally:
        logger.removeHandler(handler)
        logger.propagate = propagate
        if options is not None:
            options.update(dataclasses.asdict(numbax_config))
        for name, value in saved.items():
            setattr(numbax_config, name, value)


def _run_block(block: Block, namespace: dict, options: dict) -> str:
    where = f"{block.page}:{block.line}"
    with _captured(options) as buffer:
        if block.label == "pycon":
            test = doctest.DocTestParser().get_doctest(block.code, namespace, where, where, 0)
            runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
            report = io.StringIO()
            runner.run(test, out=report.write, clear_globs=False)
            if runner.failures:
                pytest.fail(
                    f"the example at {where} does not give what it shows:\n{report.getvalue()}"
                )
        else:
            exec(compile(block.code, where, "exec"), namespace)
    return buffer.getvalue()


@dataclass
class Session:
    """A page read so far: its namespace, its options, the index of its next block."""

    namespace: dict
    options: dict
    next_index: int = 0


_SESSIONS: dict[str, Session] = {}


def _session_before(block: Block) -> Session:
    """The page's session with every block above ``block`` run (once, in order)."""
    blocks = _runnable(block.page)
    index = blocks.index(block)
    session = _SESSIONS.get(block.page)
    if session is None or session.next_index > index:
        session = Session({"__name__": "__docs__"}, dataclasses.asdict(numbax_config))
    for earlier in blocks[session.next_index : index]:
        if earlier.skip_reason is None:
            _run_block(earlier, session.namespace, session.options)
    session.next_index = index + 1
    _SESSIONS[block.page] = session
    return session


def _normalised(text: str) -> str:
    return TIME.sub("0", text)


def check_printed(block: Block, printed: str) -> None:
    """What ``block`` printed against its ``# prints`` comments and its ```output block."""
    where = f"{block.page}:{block.line}"
    position = 0
    for said in PRINTS.finditer(block.code):
        found = printed.find(said.group("text"), position)
        assert found >= 0, f"{where} says it prints {said.group('text')!r}; it printed:\n{printed}"
        position = found + len(said.group("text"))
    if block.output is not None:
        checker = doctest.OutputChecker()
        flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
        expected, got = _normalised(block.output), _normalised(printed)
        if not checker.check_output(expected, got, flags):
            example = doctest.Example("", expected)
            difference = checker.output_difference(example, got, flags)
            pytest.fail(f"the output shown after {where} is not what it prints:\n{difference}")


@pytest.mark.parametrize("block", RUNNABLE, ids=[f"{b.page}:{b.line}" for b in RUNNABLE])
def test_a_documented_code_block_runs_and_prints_what_the_text_says(block):
    if block.skip_reason is not None:
        pytest.skip(block.skip_reason)
    session = _session_before(block)
    check_printed(block, _run_block(block, session.namespace, session.options))


def test_every_page_is_read_and_its_blocks_labelled():
    assert "README.md" in PAGES and "docs/reading_the_output.md" in PAGES
    assert {b.page for b in RUNNABLE} >= {"README.md", "docs/reading_the_output.md"}
    for page in PAGES:
        for block in _blocks(page):
            assert block.label in RUN + NOT_RUN, (
                f"{page}:{block.line}: a block labelled {block.label!r}: label it python or "
                f"pycon (run), or one of {NOT_RUN[:-1]} (not run)"
            )
            if block.label in NOT_RUN and page != GENERATED_FROM_DOCSTRINGS:
                assert not block.code.lstrip().startswith(">>>"), (
                    f"{page}:{block.line} is a session: label it pycon so that it runs"
                )


def test_the_output_checks_can_fail():
    block = Block("page.md", 1, "python", "print('a 1.5 ms b')  # prints a\n", "a 2.0 ms b\n")
    check_printed(block, "a 1.5 ms b\n")
    with pytest.raises(pytest.fail.Exception):
        check_printed(block, "a 1.5 ms c\n")
    silent = dataclasses.replace(block, output=None)
    with pytest.raises(AssertionError):
        check_printed(silent, "b\n")
    skipped = dataclasses.replace(block, code="# not run here: needs mpiexec\nboom()\n")
    assert skipped.skip_reason == "needs mpiexec"


# --- the examples in the public API's docstrings run --------------------------------------


def _numpy_namesake_doc(name: str, value) -> bool:
    """A NumPy function's docstring that numbax's counterpart carries (its examples are
    NumPy's, printed as NumPy prints them)."""
    names = {name.rsplit(".", 1)[1], getattr(value, "__name__", None)} - {None}
    for namespace in (np, np.linalg, np.fft):
        for short in names:
            namesake = getattr(namespace, short, None)
            if namesake is not None and namesake is not value and namesake.__doc__ == value.__doc__:
                return True
    return False


def _docstring_examples() -> list[doctest.DocTest]:
    finder = doctest.DocTestFinder(recurse=True)
    seen: set[int] = set()
    found = []
    for module_name, module in gen_docs.public_modules():
        candidates = [(module_name, module)] + [
            (f"{module_name}.{name}", getattr(module, name))
            for name in gen_docs.public_names(module)
        ]
        for qualified, value in candidates:
            home = module.__name__ if value is module else getattr(value, "__module__", None)
            if id(value) in seen or not isinstance(home, str) or not home.startswith("numbax"):
                continue
            seen.add(id(value))
            if value is not module and _numpy_namesake_doc(qualified, value):
                continue
            globs = dict(vars(sys.modules[home]))
            tests = finder.find(value, qualified, module=False, globs=globs)
            if value is module:  # the module's own docstring, not every object in it
                tests = [t for t in tests if t.name == qualified]
            found += [t for t in tests if t.examples]
    return sorted(found, key=lambda t: t.name)


DOCSTRING_EXAMPLES = _docstring_examples()


def test_the_public_api_has_docstring_examples():
    names = {t.name for t in DOCSTRING_EXAMPLES}
    assert {"numbax", "numbax.jit"} <= names, sorted(names)[:20]


@pytest.mark.parametrize("test", DOCSTRING_EXAMPLES, ids=[t.name for t in DOCSTRING_EXAMPLES])
def test_a_public_docstring_example(test):
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    report = io.StringIO()
    with _captured():
        runner.run(test, out=report.write)
    assert not runner.failures, f"{test.name}'s example:\n{report.getvalue()}"


# --- the test switches are listed in one place --------------------------------------------


def _switches_module():
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    import switches

    return switches


def test_every_test_switch_is_read_through_one_helper_and_documented():
    switches = _switches_module()
    used = set()
    reads_elsewhere = []
    paths = glob.glob(os.path.join(ROOT, "tests", "**", "*.py"), recursive=True)
    paths += [os.path.join(ROOT, name) for name in (".ci/run", "pyproject.toml", "README.md")]
    for path in paths:
        if not os.path.exists(path):
            continue
        with open(path, encoding="utf-8") as f:
            text = f.read()
        used |= set(re.findall(r"NUMBAX_(?:TEST|FUZZ)_[A-Z_]+", text))
        if os.path.basename(path) != "switches.py" and re.search(
            r"environ(?:\.get\(|\[)\s*[\"']NUMBAX_(?:TEST|FUZZ)_", text
        ):
            reads_elsewhere.append(os.path.relpath(path, ROOT))
    assert not reads_elsewhere, f"read these through tests/switches.py: {reads_elsewhere}"
    assert used <= set(switches.SWITCHES), sorted(used - set(switches.SWITCHES))
    page = _committed("testing.md")
    for name, meaning in switches.SWITCHES.items():
        assert f"| `{name}` | {meaning} |" in page, (
            f"docs/testing.md does not list {name} as {meaning!r}"
        )
    with pytest.raises(KeyError, match="not a test switch"):
        switches.flag("NUMBAX_" + "TEST_UNKNOWN")  # spelt so that the scan above skips it


def test_help_of_jit_documents_every_argument_with_an_example():
    import inspect

    doc = inspect.getdoc(numbax.jit)
    # Each argument is a paragraph that starts with its name, followed by its example.
    chunks = dict(re.findall(r"^``(\w+)``: (.*?)(?=^``\w+``: |\Z)", doc, re.M | re.S))
    for name in inspect.signature(numbax.jit).parameters:
        assert name in chunks, f"help(numbax.jit) does not document {name}"
        assert ">>>" in chunks[name], f"help(numbax.jit) gives {name} no example"
    assert not re.search(r"\b[\w/]+\.py\b", doc), "help(numbax.jit) points at a source file"
