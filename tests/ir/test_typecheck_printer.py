"""``typecheck`` rejects every kind of broken jaxpr; the printer's text form."""

from __future__ import annotations

import numpy as np
import pytest

import numbax
from numbax import ir
from numbax.api import closure_convert
from numbax.ir import ClosedJaxpr, Eqn, Jaxpr, Literal, ShapedArray, Var
from numbax.ir.primitive import PRIMITIVES

P = PRIMITIVES
F3 = ShapedArray((3,), np.float32)


def _ok_program():
    a, b = Var(F3), Var(F3)
    c, d = Var(F3), Var(F3)
    eqns = [Eqn(P["add"], [a, b], [c], {}), Eqn(P["mul"], [c, Literal(2.0, np.float32)], [d], {})]
    return a, b, c, d, eqns


def test_a_well_formed_program_typechecks():
    a, b, _, d, eqns = _ok_program()
    ir.typecheck(Jaxpr([], [a, b], eqns, [d]))
    ir.typecheck(Jaxpr([], [a, b], eqns, [Literal(1, np.int32)]))


def _broken():
    a, b, c, d, eqns = _ok_program()
    e = Var(ShapedArray((4,), np.float32))
    return {
        "use before definition": Jaxpr([], [a], eqns, [d]),
        "defined twice": Jaxpr([], [a, b], eqns + [Eqn(P["neg"], [a], [c], {})], [d]),
        "input defined twice": Jaxpr([], [a, a], [], [a]),
        "wrong recorded output": Jaxpr([], [a, b], [Eqn(P["add"], [a, b], [e], {})], [e]),
        "shape rule violated": Jaxpr([], [a, e], [Eqn(P["add"], [a, e], [c], {})], [c]),
        "dtype rule violated": Jaxpr(
            [], [a], [Eqn(P["sin"], [a], [Var(F3)], {}), Eqn(P["not"], [a], [Var(F3)], {})], [a]
        ),
        "undefined output": Jaxpr([], [a], [], [b]),
        "literal as binder": Jaxpr(
            [], [a], [Eqn(P["neg"], [a], [Literal(1.0, np.float32)], {})], [a]
        ),
    }


@pytest.mark.parametrize("name", list(_broken()))
def test_broken_programs_raise(name):
    with pytest.raises(numbax.TypecheckError):
        ir.typecheck(_broken()[name])


def test_error_names_the_equation():
    with pytest.raises(numbax.TypecheckError) as info:
        ir.typecheck(_broken()["shape rule violated"])
    assert "eqn 0 (add)" in str(info.value) and "f32[4]" in str(info.value)


def test_consts_must_match_constvars():
    a = Var(F3)
    jaxpr = Jaxpr([a], [], [], [a])
    ir.typecheck(ClosedJaxpr(jaxpr, [np.ones(3, np.float32)]))
    for consts in ([], [np.ones(4, np.float32)], [np.ones(3, np.float64)]):
        with pytest.raises(numbax.TypecheckError):
            ir.typecheck(ClosedJaxpr(jaxpr, consts))


def test_broken_sub_jaxpr_is_found():
    a, b, _, d, eqns = _ok_program()
    inner = Jaxpr([], [a], eqns, [d])  # uses b, which it does not bind
    x, y = Var(F3), Var(F3)
    outer = Jaxpr([], [x], [Eqn(P["jit_call"], [x], [y], {"jaxpr": inner, "name": "f"})], [y])
    with pytest.raises(numbax.TypecheckError):
        ir.typecheck(outer)


def test_typecheck_error_while_tracing_shows_the_line():
    def fn(x):
        return numbax.tracer.lax.add(x, np.ones(4))  # a lax op skips NumPy broadcasting

    with pytest.raises(numbax.TypecheckError) as info:
        numbax.make_jaxpr(fn)(np.ones(3))
    assert f"{__file__}:{fn.__code__.co_firstlineno + 1}" in str(info.value)


# The printer ------------------------------------------------------------------------


def test_short_program_prints_on_one_line():
    a, b, _, d, eqns = _ok_program()
    text = str(Jaxpr([], [a, b], eqns, [d]))
    assert text == (
        "{ lambda ; a:f32[3] b:f32[3]. let c:f32[3] = add a b; d:f32[3] = mul c 2.0:f32[] in (d,) }"
    )


def test_constvars_params_and_empty_programs():
    closed = numbax.make_jaxpr(lambda x: (x.reshape(2, 3) + np.arange(3.0), x))(np.ones(6))
    text = str(closed)
    assert text.startswith("{ lambda a:f64[3]; b:f64[6]. let")
    assert "reshape[new_sizes=(2, 3)] b" in text
    assert "broadcast_in_dim[shape=(2, 3) broadcast_dimensions=(1,)] a" in text
    assert text.endswith("  in (e, b) }")
    identity = numbax.make_jaxpr(lambda x: x)(np.ones(2, np.int32))
    assert str(identity) == "{ lambda ; a:i32[2]. let in (a,) }"
    scalar = numbax.make_jaxpr(lambda: 1.5)()
    assert str(scalar) == "{ lambda ; . let in (1.5:f64[],) }"


def test_long_program_prints_one_equation_per_line():
    closed = numbax.make_jaxpr(lambda x: np.tanh(np.exp(np.sin(x) * 2.0) + 1.0) - x)(np.ones(3))
    lines = str(closed).splitlines()
    assert lines[0] == "{ lambda ; a:f64[3]. let"
    assert lines[1].strip() == "b:f64[3] = sin a"
    assert lines[-1].strip() == "in (g,) }"
    assert len(lines) == 2 + len(closed.eqns)


def test_sub_jaxprs_print_indented():
    inner = numbax.jit(lambda x: x * 2.0, backend="interpret")
    text = str(numbax.make_jaxpr(lambda x: inner(x) + 1.0)(np.ones(2)))
    lines = text.splitlines()
    call = next(k for k, line in enumerate(lines) if "jit_call[" in line)
    assert lines[call + 1].startswith(" " * 8 + "{ lambda ; ")
    assert "name='<lambda>'" in text


def test_variable_names_go_past_z():
    def many(x):
        for _ in range(30):
            x = x + 1.0
        return x

    text = str(numbax.make_jaxpr(many)(np.ones(1)))
    assert "ba:f64[1] = add" in text and "be:f64[1] = add" in text


def test_printed_closure_converted_jaxpr():
    # An array captured from outside is a constant (one the function creates is traced).
    captured = np.ones(2)
    jaxpr, consts = closure_convert(numbax.make_jaxpr(lambda x: x + captured)(np.ones(2)))
    assert not jaxpr.constvars and len(jaxpr.invars) == 2 and len(consts) == 1
    assert str(jaxpr).startswith("{ lambda ; a:f64[2] b:f64[2]. let")
