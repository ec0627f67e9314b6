"""``numbax.debug.print`` / ``numbax.debug.callback`` and ``numbax.pure_callback``: the
printed values and the callbacks' results, on every backend, under ``jit``, control
flow, ``vmap`` and ``grad``, and what the passes may (not) do with them.

Output printed from the cpu backend's compiled code goes through Python's
``sys.stdout`` (the call runs in a ``numba.objmode`` block), so ``capsys`` sees it.
"""

from __future__ import annotations

import numpy as np
import pytest

import numbax
from numbax import ir, passes
from numbax.ir.errors import GradientError, NumbaxTypeError, SerializationError, ShapeError

F64 = np.float64


def _lines(capsys) -> list[str]:
    return capsys.readouterr().out.splitlines()


def _names(jaxpr) -> list[str]:
    found = []
    for eqn in jaxpr.eqns:
        found.append(eqn.prim.name)
        for value in eqn.params.values():
            for sub in value if isinstance(value, tuple) else (value,):
                if isinstance(sub, ir.Jaxpr):
                    found += _names(sub)
    return found


# --- debug.print ---------------------------------------------------------------------


def test_print_inside_scan_prints_every_iteration(backend, capsys):
    def f(xs):
        def step(total, x):
            numbax.debug.print("total={} x={x}", total, x=x)
            return total + x, total * x

        return numbax.scan(step, F64(0.0), xs)

    xs = np.array([1.0, 2.0, 3.0])
    total, ys = backend.to_host(numbax.jit(f, backend=backend)(xs))
    assert _lines(capsys) == ["total=0.0 x=1.0", "total=1.0 x=2.0", "total=3.0 x=3.0"]
    assert total == 6.0
    np.testing.assert_array_equal(ys, [0.0, 2.0, 9.0])
    numbax.jit(f, backend=backend)(xs)  # each run prints again, from the cached program
    assert len(_lines(capsys)) == 3


def test_prints_come_in_program_order(backend, capsys):
    def f(x):
        a = np.sin(x)
        numbax.debug.print("first {}", a)
        # Fusion puts sin in one kernel with the add below, after the cumsum: the first
        # print waits for it, while this one could run at once.
        numbax.debug.print("second {}", x)
        y = a + np.cumsum(x)
        numbax.debug.print("third {}", y.max())
        return y

    x = np.array([0.5, -1.0])
    out = backend.to_host(numbax.jit(f, backend=backend)(x))
    want = np.sin(x) + np.cumsum(x)
    np.testing.assert_allclose(out, want)
    assert _lines(capsys) == [f"first {np.sin(x)}", f"second {x}", f"third {want.max()}"]


def test_the_same_print_twice_prints_twice(backend, capsys):
    show = numbax.jit(lambda x: numbax.debug.print("x={}", x))  # one eqn, inlined twice

    def f(x):
        show(x)
        show(x)
        return x + 1.0

    numbax.jit(f, backend=backend)(np.array([2.0]))
    assert _lines(capsys) == ["x=[2.]", "x=[2.]"]


def test_print_in_fori_loop_and_while_loop(backend, capsys):
    def f(x):
        def body(i, acc):
            numbax.debug.print("i={}", i)
            numbax.debug.print("w={}", x)  # reads only a loop constant: not hoisted
            return acc + x

        acc = numbax.fori_loop(0, 3, body, np.zeros(2))

        def halve(v):
            numbax.debug.print("v={}", v)
            return v * 0.5

        return numbax.while_loop(lambda v: v > 1.0, halve, acc.sum())

    out = backend.to_host(numbax.jit(f, backend=backend)(np.array([1.0, 2.0])))
    assert out == 0.5625
    halved = ["v=9.0", "v=4.5", "v=2.25", "v=1.125"]
    w = f"w={np.array([1.0, 2.0])}"
    assert _lines(capsys) == [line for i in range(3) for line in (f"i={i}", w)] + halved


def test_only_the_taken_branch_prints(backend, capsys):
    def f(x):
        def positive(v):
            numbax.debug.print("positive {}", v)
            return v * 2.0

        def negative(v):
            numbax.debug.print("negative {}", v)
            return -v

        return numbax.cond(x.sum() > 0, positive, negative, x)

    g = numbax.jit(f, backend=backend)
    np.testing.assert_array_equal(backend.to_host(g(np.array([1.0]))), [2.0])
    np.testing.assert_array_equal(backend.to_host(g(np.array([-3.0]))), [3.0])
    assert _lines(capsys) == ["positive [1.]", "negative [-3.]"]


def test_print_under_vmap_prints_once_per_example(backend, capsys):
    def f(x, scale):
        numbax.debug.print("x={} scale={}", x, scale)
        return x * scale

    xs = np.arange(6.0).reshape(3, 2)
    batched = numbax.jit(numbax.vmap(f, in_axes=(0, None)), backend=backend)
    np.testing.assert_array_equal(backend.to_host(batched(xs, 2.0)), xs * 2.0)
    assert _lines(capsys) == [f"x={row} scale=2.0" for row in xs]


def test_print_under_grad_prints_the_primal(backend, capsys):
    def f(x):
        numbax.debug.print("x={}", x)
        y = np.sin(x)
        numbax.debug.print("y={}", y)
        return y.sum()

    x = np.array([0.25, 1.0])
    grad = backend.to_host(numbax.jit(numbax.grad(f), backend=backend)(x))
    np.testing.assert_allclose(grad, np.cos(x))
    assert _lines(capsys) == [f"x={x}", f"y={np.sin(x)}"]
    np.testing.assert_allclose(numbax.grad(f)(x), np.cos(x))  # eager: printed once too
    assert _lines(capsys) == [f"x={x}", f"y={np.sin(x)}"]


def test_print_under_jvp_prints_the_primal(capsys):
    def f(x):
        numbax.debug.print("{}", x)
        return x * x

    _, tangent = numbax.jit(lambda x, t: numbax.jvp(f, (x,), (t,)))(np.ones(2), np.ones(2))
    np.testing.assert_array_equal(tangent, [2.0, 2.0])
    assert _lines(capsys) == ["[1. 1.]"]


def test_debug_callback_passes_static_arguments_through(capsys):
    seen = []
    numbax.jit(lambda x: numbax.debug.callback(lambda tag, x: seen.append((tag, x)), "t", x))(
        np.arange(2)
    )
    assert len(seen) == 1 and seen[0][0] == "t"
    np.testing.assert_array_equal(seen[0][1], [0, 1])


def test_a_print_whose_result_nothing_reads_survives_the_passes(capsys):
    def f(x):
        numbax.debug.print("const {}", 2.0)  # constants only: not folded away either
        numbax.debug.print("x {}", x)
        numbax.scan(lambda c, v: (numbax.debug.print("{}", v), (c, v))[1], 0.0, x)
        return x + 1.0

    closed = numbax.make_jaxpr(f)(np.ones(2))
    fused, _ = passes.optimize(closed)
    assert _names(fused.jaxpr).count("debug_callback") == 3
    out = numbax.jit(f)(np.ones(2))
    np.testing.assert_array_equal(out, [2.0, 2.0])
    assert _lines(capsys) == ["const 2.0", "x [1. 1.]", "1.0", "1.0"]


def test_a_print_keeps_the_loop_carry_it_reads():
    def f(x):
        def step(carry, v):
            numbax.debug.print("{}", carry)  # the final carry is unread: still live
            return carry * 2.0, v + 1.0

        return numbax.scan(step, F64(1.0), x)[1]

    fused, _ = passes.optimize(numbax.make_jaxpr(f)(np.ones(3)))
    (scan,) = [e for e in fused.eqns if e.prim.name == "scan"]
    assert scan.params["num_carry"] == 1


def test_callbacks_are_refused_by_serialisation():
    closed = numbax.make_jaxpr(lambda x: numbax.debug.print("{}", x) or x)(np.ones(2))
    with pytest.raises(SerializationError, match="debug_callback cannot be serialised"):
        ir.dumps(closed)


# --- pure_callback ----------------------------------------------------------------------


def _numpy_stats(x, y):
    return {"sorted": np.sort(x), "dot": np.asarray(x @ y)}


STATS = {"sorted": numbax.ShapeDtypeStruct((4,), F64), "dot": np.zeros((), F64)}


def test_pure_callback_returns_what_numpy_computes(backend):
    def f(x, y):
        stats = numbax.pure_callback(_numpy_stats, STATS, x * 2.0, y)
        return stats["sorted"] + 1.0, stats["dot"] * 3.0

    x, y = np.array([3.0, -1.0, 2.0, 0.5]), np.array([1.0, 2.0, 3.0, 4.0])
    sorted_plus, dot = backend.to_host(numbax.jit(f, backend=backend)(x, y))
    np.testing.assert_array_equal(sorted_plus, np.sort(x * 2.0) + 1.0)
    np.testing.assert_allclose(dot, (x * 2.0) @ y * 3.0)


def test_pure_callback_under_vmap_calls_once_per_example(backend):
    calls = []

    def row_median(v):
        calls.append(v.shape)
        return np.median(v).astype(np.float32)

    def f(v):
        return numbax.pure_callback(row_median, numbax.ShapeDtypeStruct((), np.float32), v)

    xs = np.arange(12, dtype=np.float32).reshape(3, 4) ** 2
    medians = backend.to_host(numbax.jit(numbax.vmap(f), backend=backend)(xs))
    np.testing.assert_array_equal(medians, np.median(xs, axis=1))
    assert calls == [(4,)] * 3


def test_an_unread_pure_callback_is_not_called():
    calls = []

    def f(x):
        numbax.pure_callback(lambda v: calls.append(v) or v, numbax.ShapeDtypeStruct((2,), F64), x)
        return x * 2.0

    np.testing.assert_array_equal(numbax.jit(f)(np.ones(2)), [2.0, 2.0])
    assert calls == []


def test_grad_of_pure_callback_names_custom_vjp():
    def f(x):
        return numbax.pure_callback(np.sin, numbax.ShapeDtypeStruct((2,), F64), x).sum()

    with pytest.raises(GradientError, match="pure_callback.*custom_vjp"):
        numbax.grad(f)(np.ones(2))
    with pytest.raises(GradientError, match="custom_vjp"):
        numbax.jit(numbax.grad(f))(np.ones(2))


def test_pure_callback_with_custom_vjp_is_differentiable():
    @numbax.custom_vjp
    def sin(x):
        return numbax.pure_callback(np.sin, numbax.ShapeDtypeStruct((2,), F64), x)

    sin.defvjp(lambda x: (sin(x), x), lambda x, ct: (ct * np.cos(x),))
    x = np.array([0.3, 1.2])
    np.testing.assert_allclose(numbax.jit(numbax.grad(lambda x: sin(x).sum()))(x), np.cos(x))


def test_pure_callback_results_must_match_the_declaration(backend):
    declared = numbax.ShapeDtypeStruct((3,), F64)
    wrong_shape = numbax.jit(lambda x: numbax.pure_callback(lambda v: v[:2], declared, x))
    with pytest.raises(ShapeError, match=r"shape \(2,\).*declares \(3,\)"):
        wrong_shape(np.ones(3))
    wrong_dtype = numbax.jit(
        lambda x: numbax.pure_callback(lambda v: v.astype(np.float32), declared, x),
        backend=backend,
    )
    with pytest.raises(NumbaxTypeError, match="dtype float32.*declares float64"):
        wrong_dtype(np.ones(3))


def test_result_shape_dtypes_must_describe_arrays():
    with pytest.raises(NumbaxTypeError, match="ShapeDtypeStruct"):
        numbax.jit(lambda x: numbax.pure_callback(np.sin, (3, "f8"), x))(np.ones(3))
