"""The shared corpus in the narrow dtypes: int8, int16, uint8, uint16, uint32, uint64,
float16 and bfloat16, where NumPy supports the operation.

Each corpus case runs in one float dtype and one integer dtype, sampled per case (a
stable hash of its name picks them, so every dtype is covered across the corpus without
the full cross product): its first signature with a float argument has every float
argument in the narrow float, its first signature with an integer array has every such
argument in the narrow integer. Values are drawn as the corpus draws them and converted
(non-negative for unsigned dtypes); index arguments keep their dtype.

The oracle is NumPy over the same narrow arrays, dtype included. bfloat16 is not a NumPy
dtype (ml_dtypes gives NumPy a cast table, not NEP 50): its oracle is NumPy over the same
values in float32, and numbax's result must be bfloat16 where NumPy's float32 result is
float32 (JAX's table: bfloat16 promotes as float32 does). Where NumPy's float32 program
gives float64 the result is float64 or, where JAX's table keeps bfloat16 (against an
int32 array or a Python float), bfloat16; the exact table is tested in
tests/ir/test_dtypes.py. Float results match within a tolerance set by the epsilon of
the narrow dtype. bfloat16 linear algebra is refused with an error naming the dtype, as
NumPy refuses float16 there.

Derivatives of float16 and bfloat16 programs are checked against float64 central finite
differences of the same program, at tolerances set by the epsilon; vmap against a loop.
"""

from __future__ import annotations

import zlib

import numpy as np
import pytest
from corpus import CASES, FLOATS, INTS, PYTHON, Arg, Case, in_groups, signature_id, traced_eqns

import numbax
from numbax.ir import dtypes

BFLOAT16 = dtypes.bfloat16
NARROW_FLOATS = ("float16",) + (("bfloat16",) if BFLOAT16 is not None else ())
NARROW_INTS = ("int8", "int16", "uint8", "uint16", "uint32", "uint64")
# Cases whose program branches on ``x.dtype.kind == "f"``, which is "V" for ml_dtypes'
# bfloat16: the program itself is another one for bfloat16 arguments than for float32.
KIND_BRANCHES = "the case branches on dtype.kind, which is 'V' for ml_dtypes' bfloat16"
NOT_IN_BFLOAT16 = {"nan_to_num": KIND_BRANCHES, "nan_reductions": KIND_BRANCHES}
# Cases that ask for float32 by name (dtype=np.float32): float32 is right there.
ASKS_FOR_FLOAT32 = {"reduction_dtype_argument", "where_initial_values", "reduction_result_dtypes"}


def _pick(case: Case, choices: tuple, salt: str) -> str:
    return choices[zlib.crc32(f"{case.name}/{salt}".encode()) % len(choices)]


def _retyped(signature, old_dtypes, new_dtype: str) -> tuple[Arg, ...] | None:
    retyped = [
        Arg(a.shape, new_dtype, a.values)
        if a.dtype in old_dtypes and a.values != PYTHON and not isinstance(a.values, tuple)
        else a
        for a in signature
    ]
    return tuple(retyped) if retyped != list(signature) else None


def _variant(case: Case, kind: str):
    """(narrow dtype, original signature, retyped signature) or None."""
    old, choices = (FLOATS, NARROW_FLOATS) if kind == "float" else (INTS, NARROW_INTS)
    dtype = _pick(case, choices, kind)
    for signature in case.signatures:
        retyped = _retyped(signature, old, dtype)
        if retyped is not None:
            return dtype, signature, retyped
    return None


# Complex programs and FFTs are the complex dtypes' own corpus (their real parts are
# float32 or float64: NumPy has no complex32).
OTHER_DTYPES_TAGS = {"complex", "fft"}


def _variants():
    out = []
    for case in CASES:
        if case.tags & OTHER_DTYPES_TAGS:
            continue
        for kind in ("float", "int"):
            variant = _variant(case, kind)
            if variant is not None:
                out.append(pytest.param(case, *variant, id=f"{case}-{variant[0]}"))
    return out


VARIANTS = _variants()


def narrow_arguments(original, retyped, rng) -> tuple:
    """The corpus's values for ``original``, converted to the dtypes of ``retyped``."""
    args = []
    for old, new in zip(original, retyped, strict=True):
        value = old.make(rng)
        if new.dtype != old.dtype:
            value = np.asarray(value)
            if new.dtype.startswith("uint"):
                value = np.abs(value)
            value = value.astype(dtypes.canonicalize(new.dtype))
        args.append(value)
    return tuple(args)


def _as_float32(x):
    return x.astype(np.float32) if getattr(x, "dtype", None) == BFLOAT16 else x


def oracle(case: Case, args):
    """NumPy's answer and, per output, the dtypes numbax may give (bfloat16 through
    float32, as described above)."""
    if not any(getattr(a, "dtype", None) == BFLOAT16 for a in args):
        expected = case.oracle(*args)
        return expected, numbax.tree_map(lambda e: frozenset({np.asarray(e).dtype}), expected)
    expected = case.oracle(*map(_as_float32, args))

    def allowed(e):
        dtype = np.asarray(e).dtype
        if dtype == np.float32:
            return frozenset({BFLOAT16, dtype} if case.name in ASKS_FOR_FLOAT32 else {BFLOAT16})
        return frozenset({dtype, BFLOAT16} if dtype == np.float64 else {dtype})

    return expected, numbax.tree_map(allowed, expected)


def tolerance_of(dtype, case: Case, narrowest) -> float:
    """The tolerance of a ``dtype`` result of a program whose narrowest float argument
    is ``narrowest`` (its rounding errors carry into wider results)."""
    dtype = np.dtype(dtype)
    if not dtypes.is_inexact(dtype):
        return 0.0
    if narrowest is not None and dtypes.finfo(narrowest).eps > dtypes.finfo(dtype).eps:
        dtype = narrowest
    eps = float(dtypes.finfo(dtype).eps)
    scale = 8.0 if dtypes.is_narrow_float(dtype) else 1e3
    if "reduction" in case.tags or "linalg" in case.tags or "model" in case.tags:
        scale *= 8.0
    return eps * scale * case.tolerance


def assert_matches(actual, expected, expected_dtypes, case, where, narrowest=None):
    actual_leaves, actual_tree = numbax.tree_flatten(actual)
    expected_leaves, expected_tree = numbax.tree_flatten(expected)
    dtype_leaves = numbax.tree_flatten(expected_dtypes)[0]
    assert actual_tree == expected_tree, where
    for k, (got, want, dtype) in enumerate(
        zip(actual_leaves, expected_leaves, dtype_leaves, strict=True)
    ):
        got, want = np.asarray(got), np.asarray(want)
        allowed = sorted(map(str, dtype))
        assert got.dtype in dtype, f"{where} output {k}: dtype {got.dtype}, not one of {allowed}"
        assert got.shape == want.shape, f"{where} output {k}: shape {got.shape} != {want.shape}"
        tol = tolerance_of(got.dtype, case, narrowest)
        if tol:
            # Absolute tolerance relative to the output's scale: cancellations in narrow
            # floats lose digits relative to each element, not to the whole result.
            scale = float(np.nanmax(np.abs(want[np.isfinite(want)]), initial=1.0))
            np.testing.assert_allclose(
                got.astype(np.float64),
                want.astype(np.float64),
                rtol=tol,
                atol=tol * scale,
                err_msg=f"{where} output {k}",
            )
        else:
            np.testing.assert_array_equal(got, want, err_msg=f"{where} output {k}")


def _numpy_refuses(case, args) -> Exception | None:
    try:
        oracle(case, args)
    except (TypeError, ValueError, OverflowError, np.linalg.LinAlgError) as error:
        return error
    return None


def _check_refusal(case, args, refusal: Exception) -> None:
    """A Python int out of an unsigned array's range: numbax refuses it as NumPy does;
    anything else NumPy refuses (float16 linear algebra) is outside the corpus."""
    if isinstance(refusal, OverflowError):
        with pytest.raises(numbax.ScalarOverflowError):
            numbax.jit(case.fn, backend="interpret")(*args)
        return
    pytest.skip(f"NumPy refuses it: {type(refusal).__name__}: {refusal}")


@pytest.mark.parametrize(("case", "dtype", "original", "retyped"), VARIANTS)
def test_corpus_case_in_a_narrow_dtype(case, dtype, original, retyped, rng):
    if dtype == "bfloat16" and case.name in NOT_IN_BFLOAT16:
        pytest.skip(NOT_IN_BFLOAT16[case.name])
    args = narrow_arguments(original, retyped, rng)
    refused = _numpy_refuses(case, args)
    if refused is not None:
        _check_refusal(case, args, refused)
        return
    expected, expected_dtypes = oracle(case, args)
    narrowest = dtypes.canonicalize(dtype) if dtype in NARROW_FLOATS else None
    try:
        actual = numbax.jit(case.fn, backend="interpret")(*args)
    except numbax.UnsupportedFunctionError as error:
        if dtype == "bfloat16" and "linalg" in case.tags and "bfloat16" in str(error):
            pytest.skip("bfloat16 linear algebra is refused, as NumPy's float16 is")
        raise
    where = f"{case} {signature_id(retyped)}"
    assert_matches(actual, expected, expected_dtypes, case, where, narrowest)


def _cpu_bundles() -> dict[str, list]:
    """(narrow dtype, argument types) -> its ufunc and reduction variants, compiled in
    groups of at most ``corpus.GROUP_EQNS`` traced eqns, as the corpus's bundles are (Numba's
    compile time grows faster than the program); the interpreter above runs every variant
    on its own."""
    bundles: dict[str, list] = {}
    for param in VARIANTS:
        case, dtype, original, retyped = param.values
        if dtype == "bfloat16" and case.name in NOT_IN_BFLOAT16:
            continue
        if case.tags & {"ufunc", "reduction"}:
            key = f"{dtype}:{signature_id(retyped)}"
            bundles.setdefault(key, []).append((case, original, retyped))
    return bundles


CPU_BUNDLES = _cpu_bundles()


@pytest.mark.slow  # a sweep (~90 s): NUMBAX_TEST_SLOW=1 runs it (see conftest.py)
@pytest.mark.parametrize("key", sorted(CPU_BUNDLES))
def test_cpu_runs_the_corpus_in_a_narrow_dtype(key, rng):
    dtype = key.split(":")[0]
    members = []
    for case, original, retyped in CPU_BUNDLES[key]:
        args = narrow_arguments(original, retyped, rng)
        if _numpy_refuses(case, args) is None:
            members.append((case, args))
    if not members:
        pytest.skip("NumPy refuses every case of this bundle")
    narrowest = dtypes.canonicalize(dtype) if dtype in NARROW_FLOATS else None
    sizes = [traced_eqns(case.fn, args) for case, args in members]
    for group in in_groups(members, sizes):
        _check_cpu_group(group, narrowest)


def _check_cpu_group(group, narrowest) -> None:
    """One program on the cpu backend of every (case, arguments) of ``group``, each
    output against its oracle."""
    bounds = np.cumsum([0] + [len(args) for _, args in group])
    spans = list(zip(bounds[:-1], bounds[1:], strict=True))

    def bundle(*flat):
        pairs = zip(group, spans, strict=True)
        return tuple(case.fn(*flat[lo:hi]) for (case, _), (lo, hi) in pairs)

    actual = numbax.jit(bundle, backend="cpu")(*sum((args for _, args in group), ()))
    for (case, args), out in zip(group, actual, strict=True):
        expected, expected_dtypes = oracle(case, args)
        assert_matches(out, expected, expected_dtypes, case, f"{case} on cpu", narrowest)
