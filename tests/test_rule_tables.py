"""Every per-primitive rule table covers every primitive it applies to.

The tables are ``ir.rules.RuleTable``s; each states on itself which primitives need no
rule (``not_applicable``), so this test holds no list of exceptions: a primitive added
without its rule fails here, naming the table and the primitive. The collectives'
primitives exist only once ``numbax.distributed`` is imported, which this process's
other tests must not see: tests/distributed/single_process.py runs the same check over
every table in a fresh interpreter that imports it.
"""

import numpy as np
import pytest

# Every module that fills a table: the transforms and passes (through numbax), the cpu
# and cuda code generators.
import numbax
import numbax.backends.cpu.control
import numbax.backends.cpu.kernels
import numbax.backends.cpu.opaque
import numbax.backends.cpu.scalar
import numbax.backends.cpu.scalar_values
import numbax.backends.cuda.control
import numbax.backends.cuda.generators  # noqa: F401
from numbax.ir.primitive import PRIMITIVES, Pattern, Primitive
from numbax.ir.rules import RuleTable
from numbax.transforms.batching import BATCH_RULES
from numbax.transforms.jvp import JVP_RULES
from numbax.transforms.vjp_rules import VJP_RULES

TABLES = list(RuleTable.TABLES)


def test_the_tables_of_every_concern_are_found():
    names = {table.name for table in TABLES}
    expected = {"jvp", "vjp", "batching", "simplifications", "interpreter body rules"}
    expected |= {"cpu scalar emitters", "cpu scalar forms", "loop pruners"}
    expected |= {"cpu opaque emitters", "cpu control writers", "cpu reductions"}
    assert expected | {"cuda scalar rules", "cuda index maps", "cuda host runners"} <= names


@pytest.mark.parametrize("table", TABLES, ids=[table.name for table in TABLES])
def test_every_primitive_has_a_rule_in_every_table_that_applies_to_it(table):
    missing = [prim.name for prim in table.missing()]
    assert not missing, f"table {table.name!r} has no rule for {missing}"


@pytest.mark.parametrize("table", TABLES, ids=[table.name for table in TABLES])
def test_every_rule_is_keyed_by_a_registered_primitive(table):
    for prim in table:
        assert PRIMITIVES.get(prim.name) is prim, f"{table.name}: stale key {prim.name!r}"


def _fake_primitive(monkeypatch, pattern=Pattern.ELEMENTWISE) -> Primitive:
    prim = Primitive("fake_unary", pattern)
    prim.shape_rule = lambda x: x
    prim.impl_rule = np.negative
    monkeypatch.setitem(PRIMITIVES, prim.name, prim)
    return prim


def test_a_primitive_added_without_its_rules_is_missing_from_each_table(monkeypatch):
    prim = _fake_primitive(monkeypatch)
    lacking = {table.name for table in TABLES if prim in table.missing()}
    assert {"jvp", "vjp", "batching", "cpu scalar emitters", "cuda scalar rules"} <= lacking
    # Tables of optional rules and tables of other patterns do not ask for it.
    assert "simplifications" not in lacking


def test_a_table_does_not_ask_for_what_it_declares_not_applicable(monkeypatch):
    prim = _fake_primitive(monkeypatch)
    prim.differentiable = False
    lacking = {table.name for table in TABLES if prim in table.missing()}
    assert "jvp" not in lacking and "vjp" not in lacking
    assert "batching" in lacking


def test_an_opaque_primitive_no_kernel_computes_needs_a_cuda_host_runner(monkeypatch):
    prim = _fake_primitive(monkeypatch, Pattern.OPAQUE)
    lacking = {table.name for table in TABLES if prim in table.missing()}
    assert "cuda host runners" in lacking and "cuda scalar rules" not in lacking
    assert "cpu opaque emitters" in lacking and "cpu scalar emitters" not in lacking


@pytest.mark.parametrize(
    "pattern, table",
    [
        (Pattern.OPAQUE, "cpu opaque emitters"),
        (Pattern.INJECTIVE, "cpu opaque emitters"),
        (Pattern.REDUCTION, "cpu reductions"),
        (Pattern.CONTROL, "cpu control writers"),
    ],
)
def test_a_cpu_primitive_added_without_its_writer_is_missing_from_its_table(
    monkeypatch, pattern, table
):
    prim = _fake_primitive(monkeypatch, pattern)
    lacking = {t.name for t in TABLES if prim in t.missing()}
    cpu_tables = {"cpu opaque emitters", "cpu reductions", "cpu control writers"}
    assert lacking & cpu_tables == {table}


def test_the_cpu_collective_emitters_wait_for_their_primitives():
    """The collectives' cpu emitters are held by name until ``numbax.distributed``
    registers the primitives (tests/distributed/single_process.py checks them keyed)."""
    emitters = numbax.backends.cpu.opaque.EMITTERS
    if "psum" in PRIMITIVES:
        pytest.skip("the collectives are registered in this process")
    assert "psum" in emitters._later and "psum" not in emitters


def test_a_rule_for_a_primitive_registered_later_is_keyed_by_it_once_registered(monkeypatch):
    monkeypatch.setattr(RuleTable, "TABLES", [])
    table = RuleTable("later")
    runner = table.rule("fake_unary", registered_later=True)(lambda: "ran")
    assert "fake_unary" not in table and len(table) == 0
    with pytest.raises(KeyError, match="'not_yet'"):
        table.rule("not_yet")  # a misspelt name is still an error without the flag
    prim = _fake_primitive(monkeypatch)
    assert table.names() == {"fake_unary"}
    assert prim in table and table[prim] is runner and list(table) == [prim]


def test_a_name_is_looked_up_as_its_primitive():
    sin = PRIMITIVES["sin"]
    assert "sin" in JVP_RULES and sin in JVP_RULES
    assert JVP_RULES["sin"] is JVP_RULES[sin]
    assert "no_such_primitive" not in JVP_RULES
    with pytest.raises(KeyError, match="no primitive is registered under the name 'no_such'"):
        JVP_RULES.rule("no_such")


def test_a_second_rule_is_refused_unless_it_replaces_the_first(monkeypatch):
    monkeypatch.setattr(RuleTable, "TABLES", [])  # the scratch table is not left behind
    table = RuleTable("scratch")
    table.rule("sin")(lambda: "first")
    with pytest.raises(ValueError, match="scratch: primitive 'sin' already has a rule"):
        table.rule("sin")(lambda: "second")
    table.rule("sin", replace=True)(lambda: "second")
    assert table["sin"]() == "second"
    with pytest.raises(ValueError, match="scratch: primitive 'cos' has no rule to replace"):
        table.rule("cos", replace=True)(lambda: "third")
    with pytest.raises(KeyError, match="scratch: no rule for primitive 'cos'"):
        table["cos"]


def test_a_table_of_several_rules_keeps_their_order(monkeypatch):
    monkeypatch.setattr(RuleTable, "TABLES", [])
    table = RuleTable("ordered", multiple=True)
    first, second = (lambda: 1), (lambda: 2)
    table.rule("add", "mul")(first)
    table.rule("add")(second)
    assert table["add"] == (first, second) and table["mul"] == (first,)
    assert table["sub"] == ()


def test_deflinear_declares_the_jvp_and_the_transpose_together():
    reshape = PRIMITIVES["reshape"]
    assert reshape in JVP_RULES and reshape in VJP_RULES and reshape in BATCH_RULES
    x = np.arange(6.0)
    tangent = np.ones(6)
    _, jvp_out = numbax.jvp(lambda x: np.reshape(x, (2, 3)) * 2.0, (x,), (tangent,))
    np.testing.assert_array_equal(jvp_out, np.full((2, 3), 2.0))
    grad = numbax.grad(lambda x: (np.reshape(x, (2, 3)) * np.arange(6.0).reshape(2, 3)).sum())
    np.testing.assert_array_equal(grad(x), np.arange(6.0))
