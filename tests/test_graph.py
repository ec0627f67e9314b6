"""The picture of a program: ``Lowered.as_dot()`` / ``as_svg()`` and the ``.dot`` dumps.

The DOT text is read back with a small parser of its statements (one per line, as
ir/graph.py writes them), and checked against the jaxpr it draws: one node per
equation, input, constant and output; one edge per value read, labelled with its type;
kernels and control-flow bodies as nested clusters. Rendering is checked with Graphviz
itself when it is installed (the ``graph`` extra and the ``dot`` program).
"""

from __future__ import annotations

import html
import os
import re
import shutil
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

import numpy as np
import pytest
import switches

import numbax
from numbax.config import config
from numbax.ir import ClosedJaxpr, Jaxpr, Var
from numbax.ir.graph import dot_string, jaxpr_to_dot

try:
    import graphviz
except ImportError:
    graphviz = None


@pytest.fixture
def needs_graphviz():
    """Skip (or, with NUMBAX_TEST_GRAPHVIZ=1, set by ``.ci/run``, fail) without Graphviz."""
    if graphviz is not None and shutil.which("dot"):
        return
    problem = "as_svg() needs graphviz and dot: pip install graphviz; apt-get install graphviz"
    if switches.flag("NUMBAX_TEST_GRAPHVIZ"):
        pytest.fail(f"NUMBAX_TEST_GRAPHVIZ=1 but {problem}")
    pytest.skip(problem)


# ------------------------------------------------------------------ reading DOT back

_VALUE = r'"(?:[^"\\]|\\.)*"'
_ATTRS = rf"\[(\w+={_VALUE}(?:, \w+={_VALUE})*)\]"


def _unescape(value: str) -> str:
    """What Graphviz shows for a quoted DOT string: escapes, then entities, undone."""
    body = re.sub(r"\\(.)", lambda m: "\n" if m.group(1) == "n" else m.group(1), value[1:-1])
    return html.unescape(body)


def _attrs(text: str) -> dict[str, str]:
    return {k: _unescape(v) for k, v in re.findall(rf"(\w+)=({_VALUE})", text)}


@dataclass
class Cluster:
    label: str
    parent: Cluster | None
    nodes: list[str] = field(default_factory=list)
    clusters: list[Cluster] = field(default_factory=list)

    def all_nodes(self) -> list[str]:
        return self.nodes + [n for c in self.clusters for n in c.all_nodes()]


@dataclass
class Dot:
    nodes: dict[str, dict[str, str]]  # id -> attributes
    edges: list[tuple[str, str, dict[str, str]]]
    root: Cluster

    def labels(self, prefix: str) -> list[str]:
        return [a["label"] for n, a in self.nodes.items() if re.fullmatch(prefix + r"\d+", n)]

    def clusters(self, cluster: Cluster | None = None) -> list[Cluster]:
        cluster = cluster or self.root
        return [c for child in cluster.clusters for c in [child, *self.clusters(child)]]

    def cluster(self, label_start: str, inside: Cluster | None = None) -> Cluster:
        found = [c for c in self.clusters(inside) if c.label.startswith(label_start)]
        assert len(found) == 1, (label_start, [c.label for c in self.clusters(inside)])
        return found[0]

    def prims(self, cluster: Cluster, deep: bool = False) -> list[str]:
        """The primitives of the equation nodes in ``cluster``."""
        ids = cluster.all_nodes() if deep else cluster.nodes
        return sorted(_prim(self.nodes[n]["label"]) for n in ids if n.startswith("eqn"))


def _prim(label: str) -> str:
    return re.match(r"\w+", label).group(0)


def parse_dot(text: str) -> Dot:
    """Every statement of the DOT text, with the clusters each node sits in; a line that
    is not a well-formed statement fails the test."""
    lines = text.splitlines()
    assert re.fullmatch(rf"digraph {_VALUE} \{{", lines[0]) and lines[-1] == "}", text
    root = Cluster("", None)
    current = root
    nodes, edges = {}, []
    for line in (line.strip() for line in lines[1:-1]):
        if match := re.fullmatch(r"subgraph cluster_\d+ \{", line):
            current.clusters.append(Cluster("", current))
            current = current.clusters[-1]
        elif line == "}":
            current = current.parent
        elif match := re.fullmatch(rf"(graph|node|edge) {_ATTRS}", line):
            if match.group(1) == "graph":
                current.label = _attrs(match.group(2))["label"]
        elif match := re.fullmatch(rf"(\w+) -> (\w+) {_ATTRS}", line):
            edges.append((match.group(1), match.group(2), _attrs(match.group(3))))
        elif match := re.fullmatch(rf"(\w+) {_ATTRS}", line):
            assert match.group(1) not in nodes, f"node {match.group(1)} declared twice"
            nodes[match.group(1)] = _attrs(match.group(2))
            current.nodes.append(match.group(1))
        else:
            raise AssertionError(f"not a DOT statement: {line!r}")
    assert current is root, "unbalanced braces"
    for source, target, _ in edges:
        assert source in nodes and target in nodes, (source, target)
    return Dot(nodes, edges, root)


# ------------------------------------------------------------------ what should be drawn


def _subjaxprs(eqn) -> list[Jaxpr]:
    found = []
    for value in eqn.params.values():
        for item in value if isinstance(value, tuple) else (value,):
            if isinstance(item, ClosedJaxpr):
                item = item.jaxpr
            if isinstance(item, Jaxpr):
                found.append(item)
    return found


def expected(jaxpr: Jaxpr) -> tuple[list[str], int, int]:
    """(primitives drawn as nodes, other nodes, edges) for ``jaxpr``: a kernel is drawn
    as its body's equations; any other equation as a node, with its sub-jaxprs drawn
    each with its own inputs and outputs."""
    prims, others, edges = [], len(jaxpr.constvars) + len(jaxpr.invars), 0
    others += len(jaxpr.outvars)
    edges += sum(isinstance(v, Var) for v in jaxpr.outvars)
    for eqn in jaxpr.eqns:
        if eqn.prim.name == "kernel":
            body = eqn.params["jaxpr"]
            inner = expected(Jaxpr([], [], body.eqns, []))
        else:
            inner = ([eqn.prim.name], 0, sum(isinstance(a, Var) for a in eqn.inputs))
            for sub in _subjaxprs(eqn):
                sub_prims, sub_others, sub_edges = expected(sub)
                inner = (inner[0] + sub_prims, inner[1] + sub_others, inner[2] + sub_edges)
        prims, others, edges = prims + inner[0], others + inner[1], edges + inner[2]
    return sorted(prims), others, edges


# ------------------------------------------------------------------ programs


BIAS = np.linspace(0.0, 1.0, 5, dtype=np.float32)  # a captured array: a constant


def program(x, w):
    y = np.tanh(x @ w + 1.0) * BIAS  # a contraction kernel with its epilogue
    s = y.sum(axis=1)  # a reduction kernel

    def body(i, carry):
        return numbax.cond(carry.sum() > 0, lambda a: np.sin(a) * 2.0, lambda a: -a, carry)

    return numbax.fori_loop(0, 3, body, s) + 1.0


ARGS = (np.ones((3, 4), np.float32), np.ones((4, 5), np.float32))


@pytest.fixture(scope="module")
def lowered():
    return numbax.jit(program).lower(*ARGS)


@pytest.mark.parametrize("optimized", [False, True], ids=["traced", "fused"])
def test_one_node_per_equation_and_one_edge_per_value_read(lowered, optimized):
    closed = lowered.fused if optimized else lowered.jaxpr
    dot = parse_dot(lowered.as_dot(optimized=optimized))
    prims, others, edges = expected(closed.jaxpr)
    assert sorted(_prim(label) for label in dot.labels("eqn")) == prims
    assert len(dot.nodes) == len(prims) + others
    assert len(dot.edges) == edges
    for _, _, attrs in dot.edges:
        assert re.fullmatch(r"([a-z]+:)?(f32|i64|i32|bool)\[[0-9,]*\]", attrs["label"]), attrs


def test_edges_carry_names_and_types_as_the_printer_writes_them(lowered):
    dot = parse_dot(lowered.as_dot(optimized=False))
    (dot_general,) = [n for n, a in dot.nodes.items() if a["label"].startswith("dot_general")]
    into = sorted(a["label"] for _, target, a in dot.edges if target == dot_general)
    text = str(lowered.jaxpr)  # { lambda a:f32[5]; b:f32[3,4] c:f32[4,5]. let ...
    assert into == re.findall(r"[a-z]+:f32\[[\d,]*\]", text.splitlines()[0])[1:]
    (tanh,) = [n for n, a in dot.nodes.items() if a["label"].startswith("tanh")]
    (tanh_line,) = [line for line in text.splitlines() if " = tanh " in line]
    binder = tanh_line.split()[0]  # f:f32[3,5]
    assert [a["label"] for source, _, a in dot.edges if source == tanh] == [binder]
    assert any(label.startswith("add(·, 1.0:f32[])\n") for label in dot.labels("eqn"))
    (reduce_sum,) = [label for label in dot.labels("eqn") if "\naxes=(1,)\n" in label]
    assert reduce_sum.startswith("reduce_sum\n")  # its params, one per line
    assert reduce_sum.splitlines()[-1].startswith("test_graph.py:")  # the user's line


def test_the_fused_graph_draws_each_kernel_as_a_cluster_of_its_kind(lowered):
    traced = parse_dot(lowered.as_dot(optimized=False))
    assert not [c for c in traced.clusters() if c.label.startswith("kernel")]
    dot = parse_dot(lowered.as_dot())  # optimized is the default
    top_kernels = [e for e in lowered.fused.eqns if e.prim.name == "kernel"]
    assert len(top_kernels) >= 3
    for eqn in top_kernels:
        name, kind = eqn.params["name"], eqn.params["kind"]
        (cluster,) = [c for c in dot.root.clusters if c.label.startswith(f"kernel {name} ({kind})")]
        assert dot.prims(cluster) == sorted(e.prim.name for e in eqn.params["jaxpr"].eqns)
    kinds = {e.params["kind"] for e in top_kernels}
    assert {"contraction", "reduction", "elementwise"} <= kinds
    # Values internal to a kernel live in registers: a type, no name.
    contraction = dot.cluster("kernel fused_dot_general", inside=None)
    inside = set(contraction.nodes)
    internal = [a["label"] for s, t, a in dot.edges if s in inside and t in inside]
    assert internal == ["f32[3,5]"] * 4  # dot_general -> add -> tanh -> broadcast -> mul


def test_control_flow_bodies_nest_as_clusters(lowered):
    traced = parse_dot(lowered.as_dot(optimized=False))
    scan = traced.cluster("scan")
    assert scan.parent is traced.root
    body = traced.cluster("jaxpr", inside=scan)
    cond = traced.cluster("cond", inside=body)
    assert cond.parent is body
    branches = [traced.cluster(f"branches[{i}]", inside=cond) for i in range(2)]
    assert traced.prims(branches[0]) == ["neg"]
    assert traced.prims(branches[1]) == ["mul", "sin"]
    assert "scan" in traced.prims(scan) and "cond" in traced.prims(cond)

    fused = parse_dot(lowered.as_dot(optimized=True))
    fused_cond = fused.cluster("cond", inside=fused.cluster("jaxpr", fused.cluster("scan")))
    true_branch = fused.cluster("branches[1]", inside=fused_cond)
    kernel = fused.cluster("kernel fused_sin_mul (elementwise)", inside=true_branch)
    assert kernel.parent is true_branch and fused.prims(kernel) == ["mul", "sin"]


def _hostile_function(name: str, filename: str):
    """A jitted function whose name and source file hold what DOT must escape."""
    namespace = {"np": np, "numbax": numbax}
    code = compile(
        "def inner(x):\n"
        "    return np.sin(x) * 2.0\n"
        "def outer(x):\n"
        "    return jitted_inner(x) + 1.0\n",
        filename,
        "exec",
    )
    exec(code, namespace)
    namespace["inner"].__name__ = name
    namespace["jitted_inner"] = numbax.jit(namespace["inner"])
    namespace["outer"].__name__ = name
    return numbax.jit(namespace["outer"])


HOSTILE_NAME = 'evil "name" \\N \\ <b>&lt; &amp\nsecond line\\'
HOSTILE_FILE = os.path.join(os.sep + "tmp", 'dir "x"', 'we"ird\\\n<file>&lt;.py')


def test_hostile_names_and_source_positions_stay_text_in_the_dot(monkeypatch):
    lowered = _hostile_function(HOSTILE_NAME + "\udcff\x00\t", HOSTILE_FILE).lower(np.ones(3))
    for optimized in (False, True):
        dot = parse_dot(lowered.as_dot(optimized=optimized))
        assert dot.root.label.startswith(HOSTILE_NAME + "\\udcff\\x00\t")
        labels = dot.labels("eqn")
        short = 'we"ird\\\n<file>&lt;.py:'
        assert all(short in label for label in labels), labels
        tooltips = [a["tooltip"] for n, a in dot.nodes.items() if n.startswith("eqn")]
        assert all(tip.startswith(HOSTILE_FILE + ":") for tip in tooltips)
    traced = parse_dot(lowered.as_dot(optimized=False))
    (jit_call,) = [label for label in traced.labels("eqn") if label.startswith("jit_call")]
    assert "name='evil" in jit_call


def _svg_texts(svg: str) -> list[str]:
    root = ET.fromstring(svg)
    return [el.text for el in root.iter("{http://www.w3.org/2000/svg}text") if el.text]


def test_hostile_dot_renders_and_shows_the_text_verbatim(needs_graphviz):
    lowered = _hostile_function(HOSTILE_NAME, HOSTILE_FILE).lower(np.ones(3))
    for optimized in (False, True):
        texts = _svg_texts(lowered.as_svg(optimized=optimized))
        assert 'evil "name" \\N \\ <b>&lt; &amp' in texts
        assert "second line\\ (" + ("fused)" if optimized else "traced)") in texts
        assert 'we"ird\\' in texts and "<file>&lt;.py:2" in texts


@pytest.mark.parametrize("optimized", [False, True], ids=["traced", "fused"])
def test_svg_has_one_drawn_node_per_node_and_one_box_per_cluster(
    lowered, optimized, needs_graphviz
):
    dot = parse_dot(lowered.as_dot(optimized=optimized))
    svg = lowered.as_svg(optimized=optimized)
    ET.fromstring(svg)  # well-formed XML
    assert len(re.findall(r'<g id="node\d+" class="node">', svg)) == len(dot.nodes)
    assert len(re.findall(r'<g id="clust\d+" class="cluster">', svg)) == len(dot.clusters())
    assert len(re.findall(r'<g id="edge\d+" class="edge">', svg)) == len(dot.edges)


def test_as_svg_without_the_graphviz_package_names_the_install(lowered, monkeypatch):
    monkeypatch.setitem(sys.modules, "graphviz", None)  # import graphviz now fails
    with pytest.raises(numbax.MissingDependencyError, match="pip install graphviz") as info:
        lowered.as_svg()
    assert "apt-get install graphviz" in str(info.value) and "as_dot()" in str(info.value)
    assert isinstance(info.value, ImportError)


@pytest.mark.skipif(graphviz is None, reason="needs the graphviz package: pip install graphviz")
def test_as_svg_without_the_dot_program_names_the_install(lowered, monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # no dot on it
    with pytest.raises(numbax.MissingDependencyError, match="dot program") as info:
        lowered.as_svg()
    assert "apt-get install graphviz" in str(info.value)


def test_dump_writes_a_dot_file_next_to_each_pass_text(monkeypatch, tmp_path):
    monkeypatch.setattr(config, "dump_dir", str(tmp_path))
    numbax.jit(program).lower(*ARGS).as_text()
    (folder,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    texts = sorted(p.stem for p in folder.glob("*.txt") if not p.stem.endswith("memory_plan"))
    assert sorted(p.stem for p in folder.glob("*.dot")) == texts
    assert "00_input" in texts and any(stem.endswith("_fusion") for stem in texts)
    for stem in texts:
        dot = parse_dot((folder / f"{stem}.dot").read_text(encoding="utf-8"))
        kernels = [c for c in dot.clusters() if c.label.startswith("kernel")]
        fused = int(stem[:2]) >= int(next(s for s in texts if s.endswith("_fusion"))[:2])
        assert bool(kernels) == fused, stem
    (fusion,) = [s for s in texts if s.endswith("_fusion")]
    assert parse_dot((folder / f"{fusion}.dot").read_text()).root.label.startswith(fusion[:2])


@pytest.mark.parametrize(
    "text, shown",
    [
        ('a"b', 'a"b'),
        ("back\\slash\\", "back\\slash\\"),
        ("\\N\\G\\l", "\\N\\G\\l"),
        ("two\nlines\r\nthree", "two\nlines\nthree"),
        ("<lambda> &amp; &lt;", "<lambda> &amp; &lt;"),
        ("nul\x00esc\x1b", "nul\\x00esc\\x1b"),
        ("\udcff", "\\udcff"),
    ],
)
def test_dot_string_escapes_what_graphviz_would_read(text, shown):
    quoted = dot_string(text)
    assert re.fullmatch(_VALUE, quoted) and "\n" not in quoted
    assert _unescape(quoted) == shown


def test_constants_are_nodes_and_an_undefined_value_is_drawn_not_fatal(lowered):
    dot = parse_dot(lowered.as_dot(optimized=False))
    (const,) = dot.labels("const")
    assert const == "const a:f32[5]"  # the printer's name for the first constvar
    sin = numbax.ir.PRIMITIVES["sin"]
    a, undefined, out = (Var(numbax.ShapedArray((3,), np.float32)) for _ in range(3))
    broken = Jaxpr([], [a], [numbax.ir.Eqn(sin, [undefined], [out], {})], [out])
    dot = parse_dot(jaxpr_to_dot(broken))  # as a dump after a broken pass would draw it
    assert dot.labels("undefined") == ["undefined f32[3]"]
    assert len(dot.edges) == 2
