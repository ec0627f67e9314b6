"""NumPy's joining and splitting functions with their keyword arguments: ``dtype=`` and
``casting=`` of concatenate/stack/hstack/vstack, and array_split's uneven sections."""

from __future__ import annotations

import numpy as np
import pytest

import numbax

INTS = np.arange(6, dtype=np.int32).reshape(2, 3)
FLOATS = np.linspace(-1.0, 1.0, 6).reshape(2, 3)

JOINS = {
    "concatenate": lambda xs, **kw: np.concatenate(xs, axis=1, **kw),
    "stack": lambda xs, **kw: np.stack(xs, axis=-1, **kw),
    "hstack": np.hstack,
    "vstack": np.vstack,
}
KEYWORDS = [
    {"dtype": np.float32},
    {"dtype": np.int64, "casting": "unsafe"},
    {"dtype": np.float64, "casting": "safe"},
    {"casting": "same_kind"},
]


@pytest.mark.parametrize("kwargs", KEYWORDS, ids=str)
@pytest.mark.parametrize("name", JOINS)
def test_joins_take_numpy_dtype_and_casting(backend, name, kwargs):
    join = JOINS[name]
    expected = join([INTS, FLOATS], **kwargs)
    got = backend.to_host(
        numbax.jit(lambda a, b: join([a, b], **kwargs), backend=backend)(INTS, FLOATS)
    )
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)


REFUSED = [{"dtype": np.int32}, {"casting": "no"}, {"dtype": np.float32, "casting": "safe"}]


@pytest.mark.parametrize("kwargs", REFUSED, ids=str)
@pytest.mark.parametrize("name", JOINS)
def test_joins_refuse_a_cast_the_rule_forbids(name, kwargs):
    join = JOINS[name]
    with pytest.raises(TypeError):
        join([INTS, FLOATS], **kwargs)  # the oracle refuses too
    rule = repr(kwargs.get("casting", "same_kind"))
    with pytest.raises(numbax.NumbaxTypeError, match=rule) as info:
        numbax.jit(lambda a, b: join([a, b], **kwargs))(INTS, FLOATS)
    assert f"{__file__}:" in str(info.value)


@pytest.mark.parametrize("size, sections", [(5, 3), (7, 4), (2, 5), (6, 3), (0, 2)])
def test_array_split_divides_unevenly_as_numpy(backend, size, sections):
    x = np.arange(float(size) * 2).reshape(2, size)
    expected = np.array_split(x, sections, axis=1)
    fn = numbax.jit(lambda x: np.array_split(x, sections, axis=1), backend=backend)
    got = backend.to_host(fn(x))
    assert len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        assert g.shape == e.shape
        np.testing.assert_array_equal(g, e)


def test_split_still_refuses_an_uneven_division():
    with pytest.raises(ValueError):
        np.split(np.arange(5.0), 3)
    with pytest.raises(numbax.ShapeError, match="array_split"):
        numbax.jit(lambda x: np.split(x, 3))(np.arange(5.0))
