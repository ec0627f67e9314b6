"""The API a JAX user reaches for: ``numbax.tree_util`` and ``numbax.tree``,
``custom_jvp``, ``jit(f).lower(x).compile()`` returning ``f``'s structure,
``numbax.scipy.special``, ``numbax.numpy``'s scalar types and dtype helpers, and
``nn.one_hot``'s float32 default."""

from __future__ import annotations

import collections
import importlib

import numpy as np
import pytest

import numbax

Point = collections.namedtuple("Point", ["x", "y"])


# --- tree_util and tree ----------------------------------------------------------------


def test_tree_util_is_a_module_with_jax_names():
    tree_util = importlib.import_module("numbax.tree_util")
    from numbax.tree_util import (
        register_pytree_node,
        tree_flatten,
        tree_leaves,
        tree_map,
        tree_structure,
        tree_unflatten,
    )

    # The functions numbax already exports, not copies of them.
    assert tree_map is numbax.tree_map and tree_flatten is numbax.tree_flatten
    assert tree_unflatten is numbax.tree_unflatten and tree_leaves is numbax.tree_leaves
    assert tree_structure is numbax.tree_structure
    assert register_pytree_node is numbax.register_pytree_node
    assert numbax.tree_util is tree_util
    tree = {"w": np.ones(2), "b": (1.0, None), "p": Point(2.0, [3.0])}
    leaves, treedef = tree_flatten(tree)
    assert tree_unflatten(treedef, leaves)["p"] == Point(2.0, [3.0])
    assert treedef.unflatten(leaves)["b"] == (1.0, None)
    assert tree_util.tree_reduce(lambda a, b: a + b, [1, (2, 3)]) == 6
    assert tree_util.tree_reduce(lambda a, b: a + b, [1, (2, 3)], 10) == 16
    assert tree_util.tree_all([True, (1, np.True_)]) and not tree_util.tree_all([1, (0,)])


def test_tree_is_a_module_with_jax_short_names():
    tree = importlib.import_module("numbax.tree")
    from numbax.tree import flatten, leaves, map, structure, unflatten  # noqa: A004

    assert numbax.tree is tree
    assert map is numbax.tree_map and flatten is numbax.tree_flatten
    assert leaves({"a": 1, "b": (2, 3)}) == [1, 2, 3]
    assert unflatten(structure((0, [0])), [4, 5]) == (4, [5])
    assert tree.reduce(max, [3, (9, 4)]) == 9
    assert tree.all({"a": True, "b": [1]})
    outer, inner = structure([0, 0, 0]), structure((0, 0))
    assert tree.transpose(outer, inner, [(1, 2), (3, 4), (5, 6)]) == ([1, 3, 5], [2, 4, 6])


def test_is_leaf_stops_flattening():
    tree = {"a": (1, 2), "b": [(3, 4)]}
    is_pair = lambda node: isinstance(node, tuple)  # noqa: E731
    assert numbax.tree.leaves(tree, is_leaf=is_pair) == [(1, 2), (3, 4)]
    swapped = numbax.tree.map(lambda p: p[::-1], tree, is_leaf=is_pair)
    assert swapped == {"a": (2, 1), "b": [(4, 3)]}


def test_register_pytree_node_class_round_trips_through_jit_and_grad():
    @numbax.tree_util.register_pytree_node_class
    class Linear:
        def __init__(self, w, b):
            self.w, self.b = w, b

        def tree_flatten(self):
            return (self.w, self.b), None

        @classmethod
        def tree_unflatten(cls, aux, children):
            return cls(*children)

    model = Linear(np.array([1.0, 2.0]), np.float64(0.5))

    def loss(m, x):
        return np.sum((m.w * x + m.b) ** 2)

    x = np.array([0.3, -0.7])
    grads = numbax.jit(numbax.grad(loss))(model, x)
    assert isinstance(grads, Linear)
    residual = model.w * x + model.b
    np.testing.assert_allclose(grads.w, 2 * residual * x, rtol=1e-14)
    np.testing.assert_allclose(grads.b, 2 * residual.sum(), rtol=1e-14)


# --- lower().compile() -------------------------------------------------------------------


def test_compiled_returns_the_functions_output_structure(backend):
    def f(params, x, scale):
        return {"y": params["w"] * x * scale, "pair": (x.sum(), Point(x, x + 1.0))}

    params, x = {"w": np.array([1.0, 2.0])}, np.array([3.0, 4.0])
    jitted = numbax.jit(f, static_argnums=2, backend=backend)
    compiled = jitted.lower(params, x, 2.0).compile()
    got = backend.to_host(compiled(params, x))  # the static argument is left out
    want = f(params, x, 2.0)
    assert numbax.tree_structure(got) == numbax.tree_structure(want)
    for g, w in zip(numbax.tree_leaves(got), numbax.tree_leaves(want), strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-15)
    single = numbax.jit(np.sin, backend=backend).lower(x).compile()
    np.testing.assert_allclose(backend.to_host(single(x)), np.sin(x), rtol=1e-15)
    assert single.executable is not None and single.lowered.out_tree.kind == "leaf"


def test_compiled_reads_the_executables_attributes():
    compiled = numbax.jit(np.cos, backend="cpu").lower(np.ones(3)).compile()
    assert compiled.source is compiled.executable.source
    assert "def " in compiled.source


def test_compiled_writes_back_like_the_jitted_function():
    def scale_in_place(x):
        x *= 2.0
        return x.sum()

    compiled = numbax.jit(scale_in_place, backend="interpret").lower(np.ones(3)).compile()
    x = np.arange(3.0)
    np.testing.assert_allclose(compiled(x), 6.0)
    np.testing.assert_array_equal(x, [0.0, 2.0, 4.0])


def test_compiled_refuses_other_arguments_naming_them():
    compiled = numbax.jit(lambda x, y: x + y, backend="interpret").lower(np.ones(3), 1.0).compile()
    with pytest.raises(numbax.ShapeError, match=r"f64\[3\], got f64\[4\]; lower it again"):
        compiled(np.ones(4), 1.0)
    with pytest.raises(numbax.NumbaxTypeError, match=r"f64\[3\], got f32\[3\]"):
        compiled(np.ones(3, np.float32), 1.0)
    with pytest.raises(numbax.NumbaxTypeError, match="lowered for arguments"):
        compiled(np.ones(3))


# --- numbax.scipy ------------------------------------------------------------------------


def test_scipy_submodules_import_by_name():
    special = importlib.import_module("numbax.scipy.special")
    linalg = importlib.import_module("numbax.scipy.linalg")
    from numbax.scipy.special import expit  # noqa: F401

    assert numbax.scipy.special is special and numbax.scipy.linalg is linalg
    assert special.expit is expit and callable(linalg.solve_triangular)


SPECIAL_CASES = {
    "expit": (np.array([-800.0, -2.0, 0.0, 3.0, 800.0]),),
    "logit": (np.array([1e-9, 0.2, 0.5, 0.97]),),
    "erf": (np.array([-3.0, -0.4, 0.0, 1.1, 2.5]),),
    "erfc": (np.array([-3.0, -0.4, 0.0, 1.1, 6.0]),),
    "erfinv": (np.array([-0.99, -0.3, 0.0, 0.5, 0.999]),),
    "ndtr": (np.array([-9.0, -1.0, 0.0, 0.7, 4.0]),),
    "ndtri": (np.array([0.0, 1e-300, 1e-30, 1e-12, 1e-9, 0.1, 0.5, 0.999, 1.0]),),
    "xlogy": (np.array([0.0, 0.0, 2.0, 1.5]), np.array([0.0, 3.0, 0.5, 4.0])),
    "xlog1py": (np.array([0.0, 0.0, 2.0, 1.5]), np.array([-1.0, 3.0, 0.5, 4.0])),
    "entr": (np.array([-1.0, 0.0, 0.3, 2.0]),),
}


@pytest.mark.parametrize("name", sorted(SPECIAL_CASES))
def test_special_functions_match_scipy_traced_and_eager(name):
    scipy_special = pytest.importorskip("scipy.special")
    args = SPECIAL_CASES[name]
    ours = getattr(numbax.scipy.special, name)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        want = getattr(scipy_special, name)(*args)
        for got in (ours(*args), numbax.jit(ours, backend="interpret")(*args)):
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-300)


@pytest.mark.parametrize("name", sorted(SPECIAL_CASES))
def test_scipys_own_ufuncs_trace_in_a_plain_numpy_program(name):
    """``scipy.special.expit(x)`` inside a jitted function runs numbax's ``expit``."""
    scipy_special = pytest.importorskip("scipy.special")
    ufunc = getattr(scipy_special, name)
    args = SPECIAL_CASES[name]
    assert name in numbax.numpy_lib.scipy_special.UFUNC_NAMES
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        want = ufunc(*args)
        for options in ({}, {"tiered": False}, {"backend": "interpret"}):
            got = numbax.jit(lambda *a: ufunc(*a), **options)(*args)
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-300)
        narrow = [a.astype(np.float32) for a in args]
        got = numbax.jit(lambda *a: ufunc(*a))(*narrow)
        assert got.dtype == ufunc(*narrow).dtype == np.float32


def test_scipys_own_ufuncs_differentiate_and_write_out():
    scipy_special = pytest.importorskip("scipy.special")
    x = np.array([-1.5, 0.3, 2.0])
    grad = numbax.grad(lambda x: np.sum(scipy_special.expit(x) * scipy_special.erf(x)))(x)
    step = 1e-6
    central = [
        (
            np.sum(scipy_special.expit(x + e) * scipy_special.erf(x + e))
            - np.sum(scipy_special.expit(x - e) * scipy_special.erf(x - e))
        )
        / (2 * step)
        for e in np.eye(3) * step
    ]
    np.testing.assert_allclose(grad, central, rtol=1e-7)

    def written(x):
        out = np.zeros_like(x)
        scipy_special.ndtr(x, out=out)
        return out

    np.testing.assert_allclose(numbax.jit(written)(x), scipy_special.ndtr(x), rtol=1e-14)


def test_special_reductions_match_scipy():
    scipy_special = pytest.importorskip("scipy.special")
    x = np.array([[1000.0, 999.0, -5.0], [0.5, 0.25, -np.inf]])
    weights = np.array([[1.0, 2.0, 0.0], [3.0, 1.0, 1.0]])
    ours = numbax.scipy.special
    cases = [
        (ours.logsumexp(x), scipy_special.logsumexp(x)),
        (ours.logsumexp(x, axis=1, keepdims=True), scipy_special.logsumexp(x, 1, keepdims=True)),
        (ours.logsumexp(x, axis=0, b=weights), scipy_special.logsumexp(x, 0, b=weights)),
        (ours.softmax(x, axis=1), scipy_special.softmax(x, axis=1)),
        (ours.softmax(x[:, :2]), scipy_special.softmax(x[:, :2])),
        (ours.log_softmax(x[:, :2], axis=0), scipy_special.log_softmax(x[:, :2], axis=0)),
    ]
    for got, want in cases:
        np.testing.assert_allclose(got, want, rtol=1e-13)


def test_special_functions_differentiate_and_keep_float32():
    x = np.array([-1.5, 0.3, 2.0])
    grad = numbax.grad(lambda x: np.sum(numbax.scipy.special.expit(x)))(x)
    s = 1 / (1 + np.exp(-x))
    np.testing.assert_allclose(grad, s * (1 - s), rtol=1e-14)
    grad = numbax.grad(lambda x: np.sum(numbax.scipy.special.erf(x)))(x)
    np.testing.assert_allclose(grad, 2 / np.sqrt(np.pi) * np.exp(-x * x), rtol=1e-12)
    x32 = x.astype(np.float32)
    assert numbax.scipy.special.expit(x32).dtype == np.float32
    assert numbax.jit(numbax.scipy.special.logsumexp)(x32).dtype == np.float32


# --- numbax.numpy's scalar types and dtype helpers ---------------------------------------

SCALAR_TYPES = [
    "bool_", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64", "complex64", "complex128",
]  # fmt: skip


@pytest.mark.parametrize("name", SCALAR_TYPES)
def test_scalar_types_are_dtypes_and_convert_traced_arrays(name):
    xnp = numbax.numpy
    scalar_type = getattr(xnp, name)
    assert np.dtype(scalar_type) == np.dtype(name) and xnp.dtype(scalar_type) == np.dtype(name)
    assert xnp.zeros(2, scalar_type).dtype == np.dtype(name)
    assert np.ones(2).astype(scalar_type).dtype == np.dtype(name)
    assert xnp.issubdtype(np.dtype(name), scalar_type)
    x = np.array([0.0, 1.0, 2.0])
    converted = numbax.jit(lambda x: scalar_type(x), backend="interpret")(x)
    np.testing.assert_array_equal(converted, x.astype(name))
    assert converted.dtype == np.dtype(name)
    assert scalar_type(1) == getattr(np, name)(1)  # outside a trace: NumPy's scalar


def test_aliases_abstract_types_and_helpers():
    xnp = numbax.numpy
    assert np.dtype(xnp.bool) == np.bool_ and np.dtype(xnp.float_) == np.float64
    assert np.dtype(xnp.int_) == np.int64 and np.dtype(xnp.complex_) == np.complex128
    assert np.dtype(xnp.double) == np.float64 and np.dtype(xnp.single) == np.float32
    assert xnp.issubdtype(xnp.float32, xnp.floating)
    assert xnp.issubdtype(np.int8, xnp.signedinteger) and not xnp.issubdtype(np.int8, xnp.inexact)
    assert xnp.issubdtype(np.complex64, xnp.complexfloating)
    assert xnp.finfo(xnp.float32).eps == np.finfo(np.float32).eps
    assert xnp.finfo(np.ones(2, np.float16)).max == np.finfo(np.float16).max
    assert xnp.iinfo(xnp.int32).max == 2**31 - 1
    assert xnp.promote_types(xnp.int8, xnp.float32) == np.float32
    assert xnp.promote_types(np.uint8, np.int8) == np.int16


def test_bfloat16_when_ml_dtypes_is_installed():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    xnp = numbax.numpy
    assert np.dtype(xnp.bfloat16) == np.dtype(ml_dtypes.bfloat16)
    assert xnp.issubdtype(xnp.bfloat16, xnp.floating) and xnp.issubdtype(xnp.bfloat16, xnp.inexact)
    assert not xnp.issubdtype(xnp.bfloat16, xnp.integer)
    assert xnp.finfo(xnp.bfloat16).eps == ml_dtypes.finfo(ml_dtypes.bfloat16).eps
    assert xnp.promote_types(xnp.bfloat16, xnp.float16) == np.float32
    out = numbax.jit(lambda x: xnp.bfloat16(x) * 2, backend="interpret")(np.array([1.5, 3.0]))
    assert out.dtype == np.dtype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(out.astype(np.float32), [3.0, 6.0])


def test_mgrid_and_ogrid_build_constants_in_traced_functions():
    xnp = numbax.numpy

    def f(x):
        rows, cols = xnp.mgrid[0:2, 0:3]
        column, row = xnp.ogrid[0:2, 0:3]
        return x * rows + cols, column * row

    x = np.ones((2, 3))
    got = numbax.jit(f, backend="interpret")(x)
    want = (
        x * np.mgrid[0:2, 0:3][0] + np.mgrid[0:2, 0:3][1],
        np.ogrid[0:2, 0:3][0] * np.ogrid[0:2, 0:3][1],
    )
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)
    assert xnp.s_[1:3] == np.s_[1:3] and xnp.index_exp[2] == (2,)


# --- nn dtypes ---------------------------------------------------------------------------


def test_one_hot_is_float32_by_default_as_in_jax():
    labels = np.array([0, 2, 1])
    encoded = numbax.nn.one_hot(labels, 3)
    assert encoded.dtype == np.float32
    np.testing.assert_array_equal(encoded, np.eye(3, dtype=np.float32)[labels])
    assert numbax.nn.one_hot(labels, 3, dtype=np.float64).dtype == np.float64
    assert numbax.jit(lambda i: numbax.nn.one_hot(i, 4))(labels).dtype == np.float32


@pytest.mark.parametrize("name", ["relu", "sigmoid", "gelu", "softmax", "log_softmax", "logsumexp"])
def test_nn_functions_keep_a_float32_models_dtype(name):
    fn = getattr(numbax.nn, name)
    x = np.array([[0.5, -1.0, 2.0]], np.float32)
    assert fn(x).dtype == np.float32
    assert numbax.jit(fn, backend="interpret")(x).dtype == np.float32


def test_a_float32_loss_with_one_hot_labels_stays_float32():
    def loss(logits, labels):
        log_probs = numbax.nn.log_softmax(logits)
        return -np.mean(np.sum(log_probs * numbax.nn.one_hot(labels, 3), axis=-1))

    logits = np.array([[1.0, 2.0, 0.5], [0.1, -0.3, 0.2]], np.float32)
    labels = np.array([1, 2])
    assert numbax.jit(loss, backend="interpret")(logits, labels).dtype == np.float32
    assert numbax.grad(loss)(logits, labels).dtype == np.float32
