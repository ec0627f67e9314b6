"""Every corpus program, jitted on every backend, equals plain NumPy on the same inputs:
same tree, dtypes, shapes and values.

On the interpreter every case runs every signature. On a compiled backend each new
signature is a compile, so the many small ufunc and reduction cases run bundled: all
the (case, signature) pairs whose arguments have the same shapes and dtypes become one
jitted program (each pair with its own argument values), over the signatures
``_compiled_signatures`` picks. Numba's compile time grows faster than the program (the
54 members of the ``float32[3, 4]`` bundle compile ~2.7x slower as one program than one by
one), so a bundle compiles in groups of at most ``corpus.GROUP_EQNS`` traced eqns, and a member
larger than that on its own. The other cases run their first signatures
(``backend.max_signatures``). ``--corpus-each`` runs every case on its own instead (slow;
for finding which case breaks a bundle).
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest
from corpus import CASES, assert_tree_matches, in_groups, signature_id, traced_eqns

import numbax

BUNDLED_TAGS = ("ufunc", "reduction")


def _bundled(case) -> bool:
    return any(tag in case.tags for tag in BUNDLED_TAGS)


def _compiled_signatures(case) -> list:
    """The signatures a compiled backend runs in bundles: every dtype at the case's main
    shapes, and the shapes with an empty or rank-0 argument (zero-trip loops, identities,
    scalar kernels). Size-1 and mixed-dtype variants change nothing a backend sees that
    the other cases do not already show it."""
    main = [a.shape for a in case.signatures[0]]
    return [
        s
        for s in case.signatures
        if [a.shape for a in s] == main or any(a.size == 0 or not a.shape for a in s)
    ]


def _bundles() -> dict[str, list]:
    """Bundle key (argument shapes and dtypes) -> the (case, signature) pairs in it."""
    bundles = defaultdict(list)
    for case in CASES:
        if _bundled(case):
            for signature in _compiled_signatures(case):
                key = ",".join(f"{a.dtype}{list(a.shape)}{a.values == 'python'}" for a in signature)
                bundles[key].append((case, signature))
    return dict(bundles)


BUNDLES = _bundles()


def _each(request) -> bool:
    return request.config.getoption("--corpus-each")


@pytest.mark.parametrize("case", CASES, ids=str)
def test_jit_matches_numpy(case, backend, rng, request):
    if backend.compiled and _bundled(case) and not _each(request):
        pytest.skip("runs in a bundle on compiled backends (see test_bundle_matches_numpy)")
    limit = None if _each(request) and not backend.simulated else backend.max_signatures
    for signature in case.signatures[:limit]:
        args = case.arguments(signature, rng)
        expected = case.oracle(*args)
        actual = backend.to_host(numbax.jit(case.fn, backend=backend)(*args))
        assert_tree_matches(actual, expected, case.tolerance, f"{case} {signature_id(signature)}")


@pytest.mark.parametrize("key", sorted(BUNDLES))
def test_bundle_matches_numpy(key, compiled_backend, rng, request):
    backend = compiled_backend
    if _each(request):
        pytest.skip("--corpus-each: every case runs on its own")
    members = BUNDLES[key]
    arguments = [case.arguments(signature, rng) for case, signature in members]
    for group in _groups(members, arguments):
        _check_group(group, backend, key)


def _groups(members, arguments) -> list[list]:
    """The (member, arguments) pairs in order, cut into groups of at most
    ``corpus.GROUP_EQNS`` traced eqns (a larger member is a group of its own)."""
    pairs = list(zip(members, arguments, strict=True))
    return in_groups(pairs, [traced_eqns(case.fn, args) for (case, _), args in pairs])


def _check_group(group, backend, key) -> None:
    """One jitted program of every member of ``group``, each output against its oracle."""
    bounds = np.cumsum([0] + [len(args) for _, args in group])
    spans = list(zip(bounds[:-1], bounds[1:], strict=True))

    def bundle(*flat):
        return tuple(
            case.fn(*flat[lo:hi]) for ((case, _), _), (lo, hi) in zip(group, spans, strict=True)
        )

    flat = sum((args for _, args in group), ())
    actual = backend.to_host(numbax.jit(bundle, backend=backend)(*flat))
    for ((case, signature), args), out in zip(group, actual, strict=True):
        where = f"{case} {signature_id(signature)} (bundle {key})"
        assert_tree_matches(out, case.oracle(*args), case.tolerance, where)
