"""Complex numbers through the front end and the compiled backends: entry and NEP 50
promotion, construction (``np.complex128(x)``, ``x + 1j * y``), the parts, NumPy's
special values (division by zero), the text and JSON forms, and the errors."""

from __future__ import annotations

import numpy as np
import pytest

import numbax
from numbax import ir

RNG = np.random.default_rng(3)
Z = RNG.standard_normal(6) + 1j * RNG.standard_normal(6)


def _jit(fn):
    return numbax.jit(fn, backend="cpu", tiered=False)


def test_complex_arrays_enter_with_their_dtype():
    for dtype in (np.complex64, np.complex128):
        z = Z.astype(dtype)
        out = _jit(lambda z: z * 2)(z)
        assert out.dtype == dtype
        np.testing.assert_allclose(out, z * 2, rtol=1e-6)


def test_promotion_is_nep_50():
    x32 = RNG.standard_normal(4).astype(np.float32)
    results = _jit(lambda x: (x * 1j, x + 1j * x, x * np.complex64(2j), x * np.complex128(1j)))(x32)
    assert [r.dtype for r in results] == [np.complex64, np.complex64, np.complex64, np.complex128]
    np.testing.assert_allclose(results[1], x32 + 1j * x32)


def test_construction_from_real_parts():
    def build(x, y):
        return np.complex128(x) + 1j * y, np.complex64(x), x.astype(np.complex128)

    x, y = RNG.standard_normal(3), RNG.standard_normal(3)
    got = _jit(build)(x, y)
    expected = build(x, y)
    for g, e in zip(got, expected, strict=True):
        assert g.dtype == e.dtype
        np.testing.assert_allclose(g, e, rtol=1e-6)


def test_parts_methods_and_predicates():
    def parts(z, x):
        return (z.real, z.imag, z.conj(), np.iscomplex(z), np.isreal(x), np.real(x),
                np.imag(x), np.angle(x), np.iscomplexobj(z), np.isrealobj(x))  # fmt: skip

    z = Z.copy()
    z[0] = 2.0
    x = RNG.standard_normal(6)
    for g, e in zip(_jit(parts)(z, x), parts(z, x), strict=True):
        np.testing.assert_array_equal(g, e)


def test_division_and_special_values_are_numpys():
    z = np.array([1 + 1j, 0j, np.inf + 0j, 1e300 + 1e300j, np.nan + 1j])
    w = np.array([0j, 0j, 1 + 1j, 1e300 - 1e300j, 1 + 0j])
    with np.errstate(all="ignore"):
        expected = z / w
    np.testing.assert_array_equal(_jit(lambda z, w: z / w)(z, w), expected)
    with np.errstate(all="ignore"):
        by_zero = z[:2] / 0  # inf + inf j and nan + nan j
    np.testing.assert_array_equal(_jit(lambda z: z / 0)(z[:2]), by_zero)


def test_text_and_json_forms_hold_complex_literals():
    closed = numbax.make_jaxpr(lambda z: z * (1 - 2j) + np.inf * 1j)(Z.astype(np.complex64))
    text = str(closed)
    assert "c64[6]" in text and "(1-2j):c64[]" in text
    assert str(ir.loads(ir.dumps(closed))) == text


def test_conversion_to_real_is_refused_by_the_ir():
    with pytest.raises(numbax.TypecheckError, match="take real first"):
        ir.PRIMITIVES["convert_element_type"].abstract_eval(
            ir.ShapedArray((3,), np.dtype(np.complex64)), new_dtype=np.dtype(np.float32)
        )


def test_ordering_complex_numbers_is_an_error():
    with pytest.raises(numbax.NumbaxError):
        numbax.jit(lambda z: z < 1)(Z)
