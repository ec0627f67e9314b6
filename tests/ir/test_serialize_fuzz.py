"""Mutation fuzzing of ``ir.loads``: every primitive's serialised form, damaged at random.

Each example program (one per primitive, plus real control flow, calls and fused
kernels) is dumped, and its JSON mutated with a fixed seed: keys deleted, values retyped
(int -> bool/str/float/list/None), numbers made negative or huge, var ids pointed
elsewhere, sub-jaxprs swapped for junk, and every string given newlines, quotes and a
payload that would create a marker file if it ever ran. ``loads`` must either raise
``SerializationError`` or return a jaxpr that typechecks and evaluates; its cpu module
(where injected text would run, at import) is generated and imported for every accepted
mutant, and a seeded sample is compiled by Numba and checked against the interpreter.

``NUMBAX_FUZZ_EXAMPLES`` (default 800) sets how many mutants are tried; the compiled
sample grows with it.
"""

from __future__ import annotations

import ast
import copy
import itertools
import json
import random
import tempfile
from pathlib import Path

import numpy as np
import pytest
import switches

import numbax
from numbax import ir, passes
from numbax.backends import get_backend
from numbax.backends.cpu import cache
from numbax.backends.cpu.program import write_program
from numbax.ir import dtypes
from numbax.ir.core import ClosedJaxpr, Eqn, Jaxpr, Literal, ShapedArray, Var
from numbax.ir.primitive import PRIMITIVES
from numbax.ir.serialize import SIGNATURES

MUTANTS = switches.count("NUMBAX_FUZZ_EXAMPLES", 800)
COMPILES = max(4, MUTANTS // 60)
F32, I32, BOOL = dtypes.float32, dtypes.int32, dtypes.bool_


def _aval(shape, dtype=F32) -> ShapedArray:
    return ShapedArray(shape, dtype)


def _single(name: str, *operands, **params) -> ClosedJaxpr:
    """A program of one ``name`` eqn; ShapedArray operands become inputs."""
    prim = PRIMITIVES[name]
    invars = [Var(a) for a in operands if isinstance(a, ShapedArray)]
    feed = iter(invars)
    inputs = [next(feed) if isinstance(a, ShapedArray) else a for a in operands]
    outputs = [Var(a) for a in prim.abstract_eval(*(x.aval for x in inputs), **params)]
    eqn = Eqn(prim, inputs, outputs, params, f"prog.py:{len(name)}")
    return ClosedJaxpr(Jaxpr([], invars, [eqn], outputs), [])


def _elementwise_examples():
    for name, (_, kinds, *_) in ir.elementwise.UNARY.items():
        yield _single(name, _aval((3,), F32 if "f" in kinds else I32))
    for name, (_, kinds, *_) in ir.elementwise.BINARY.items():
        dtype = F32 if "f" in kinds else I32
        yield _single(name, _aval((3,), dtype), Literal(2, dtype))
    for name in ir.elementwise.COMPARISONS:
        yield _single(name, _aval((3,)), Literal(0.5, F32))


def _structural_examples():
    x23, x3 = _aval((2, 3)), _aval((3,))
    index = _aval((), I32)
    yield _single("integer_pow", x3, y=3)
    yield _single("select", _aval((3,), BOOL), x3, Literal(-1.0, F32))
    yield _single("convert_element_type", x3, new_dtype=I32)
    yield _single("stop_gradient", x3)
    counts = _aval((3,), dtypes.int64)
    yield _single("threefry2x32", Literal(5, dtypes.int64), counts, counts, counts, output="xor")
    yield _single("broadcast_in_dim", x3, shape=(2, 3), broadcast_dimensions=(1,))
    yield _single("reshape", x23, new_sizes=(3, 2))
    yield _single("transpose", x23, permutation=(1, 0))
    yield _single("squeeze", _aval((1, 3)), dimensions=(0,))
    yield _single("expand_dims", x3, dimensions=(0,))
    yield _single("slice", _aval((5,)), start_indices=(1,), limit_indices=(4,), strides=(2,))
    yield _single("dynamic_slice", _aval((5,)), index, slice_sizes=(2,))
    yield _single("dynamic_update_slice", _aval((5,)), _aval((2,)), index)
    yield _single("gather", _aval((4,)), _aval((2,), I32), axis=0)
    yield _single("scatter", _aval((4,)), _aval((2,), I32), _aval((2,)), axis=0, mode="add")
    yield _single("concatenate", _aval((2,)), x3, dimension=0)
    yield _single("pad", x3, Literal(0.0, F32), padding_config=((1, 2),))
    yield _single("iota", dtype=I32, shape=(4,), dimension=0)
    for name in ir.reductions.REDUCTIONS:
        yield _single(name, x23, axes=(1,))
    yield _single("argmax", x23, axis=1, index_dtype=I32)
    yield _single("argmin", x23, axis=0, index_dtype=I32)
    yield _single("cumsum", _aval((4,)), axis=0, reverse=True)
    yield _single("sort", x23, _aval((2, 3), I32), dimension=1, is_stable=False, num_keys=2)
    dims = (((1,), (0,)), ((), ()))
    yield _single("dot_general", x23, _aval((3, 4)), dimension_numbers=dims)
    square = _aval((2, 3, 3))
    yield _single("cholesky", square)
    flags = {"lower": True, "transpose_a": False, "unit_diagonal": True}
    yield _single("triangular_solve", square, _aval((2, 3, 1)), **flags)
    yield _single("lu", square)
    yield _single("qr", x23, full_matrices=True)
    yield _single("eigh", square)
    yield _single("svd", x23, full_matrices=False, compute_uv=True)
    c3 = _aval((3,), dtypes.complex64)
    yield _single("real", c3)
    yield _single("imag", c3)
    yield _single("conj", _aval((3,), dtypes.complex128))
    yield _single("complex", x3, Literal(-1.5, F32))
    yield _single("mul", c3, Literal(np.complex64(1 - 2j), dtypes.complex64))
    yield _single("fft", x23, fft_type="rfft", fft_lengths=(2, 3))
    yield _single("fft", _aval((4, 2), dtypes.complex64), fft_type="irfft", fft_lengths=(2,))


def _square(x):
    return x * x


@numbax.custom_vjp
def _clipped_square(x):
    return x * x


_clipped_square.defvjp(lambda x: (x * x, x), lambda x, ct: (np.clip(2 * x * ct, -1, 1),))


@numbax.custom_jvp
def _clipped_cube(x):
    return x * x * x


_clipped_cube.defjvp(lambda p, t: (p[0] ** 3, np.clip(3 * p[0] * p[0] * t[0], -1, 1)))


def _control_flow(x):
    y = numbax.cond(x[0] > 0, lambda v: v * 2.0, lambda v: v - 1.0, x)
    total = numbax.fori_loop(0, 3, lambda i, acc: acc + np.sin(acc), y)
    carry, ys = numbax.scan(lambda c, v: (c + v, c * v), np.float32(0.0), x)
    count = numbax.while_loop(lambda c: c < 5.0, lambda c: c + 1.5, carry)
    called = numbax.jit(_square)(x) + numbax.checkpoint(np.tanh)(x) + _clipped_square(x)
    called = called + _clipped_cube(x)
    return total + ys + count, called


def _examples() -> list[ClosedJaxpr]:
    traced = numbax.make_jaxpr(_control_flow)(np.arange(1, 4, dtype=np.float32))
    fused, _ = passes.optimize(numbax.make_jaxpr(lambda x: np.exp(x).sum() + x)(np.ones(3)))
    return [*_elementwise_examples(), *_structural_examples(), traced, fused]


EXAMPLES = _examples()


def _primitives(jaxpr: Jaxpr) -> set[str]:
    found = set()
    for eqn in jaxpr.eqns:
        found.add(eqn.prim.name)
        for value in eqn.params.values():
            for sub in value if isinstance(value, tuple) else (value,):
                if isinstance(sub, Jaxpr):
                    found |= _primitives(sub)
    return found


def test_every_primitive_has_an_example_and_a_signature():
    covered = set().union(*(_primitives(closed.jaxpr) for closed in EXAMPLES))
    serialisable = {name for name, signature in SIGNATURES.items() if not signature.refused}
    assert set(PRIMITIVES) & serialisable <= covered
    assert set(PRIMITIVES) <= set(SIGNATURES)


# --- mutations -----------------------------------------------------------------------------


def _paths(node, path=()):
    yield path
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _paths(value, path + (key,))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _paths(value, path + (index,))


def _get(data, path):
    for key in path:
        data = data[key]
    return data


def _payloads(marker: Path) -> list[str]:
    """Texts that run ``code`` if they escape a comment, a docstring or a string."""
    code = f"__import__('pathlib').Path({str(marker)!r}).touch()"
    return [
        f"\n{code}\ndef _rest():  #",
        f"\r{code}\n#",
        f'"""\n{code}\n"""',
        f"'''; {code}; '''",
        f"'\n{code}\n#",
        f"\u2028{code}\x0c",
        f"\\\n{code}",
    ]


def _replacements(value, rng: random.Random, payloads, jaxprs) -> list:
    options = [None, True, False, [], {}, "", "1", 1.5, -1, 0, 2**31, 2**63, 10**30, [value]]
    if type(value) is int:
        options += [-value, value + 1, value - 1, -(10**20), float(value), str(value)]
    if isinstance(value, float):
        options += [-value, 1e300, -1e300, "nan", "inf", int(value), 3.4e39]
    if isinstance(value, str):
        options += [value + rng.choice(payloads), rng.choice(payloads) + value]
    if isinstance(value, dict) and ("jaxpr" in value or "closed_jaxpr" in value):
        options += [{"jaxpr": rng.choice(jaxprs)}, {"jaxpr": 5}, {"jaxpr": {}}]
    if isinstance(value, dict) and "var" in value and type(value["var"]) is int:
        options += [{"var": value["var"] + 1}, {"var": -1}, {"var": True}, {"lit": 1}]
    return options


def _mutate(data, rng: random.Random, payloads, jaxprs) -> None:
    paths = [p for p in _paths(data) if p]
    path = rng.choice(paths)
    parent, key = _get(data, path[:-1]), path[-1]
    if rng.random() < 0.15:
        del parent[key]
        return
    parent[key] = rng.choice(_replacements(parent[key], rng, payloads, jaxprs))


def _inject_text(data, rng: random.Random, payloads) -> None:
    """Every free text (source_info, call and kernel names) gets a payload: a file must
    load with it, and its code must not run."""
    for path in list(_paths(data)):
        if path and path[-1] in ("source_info", "name") and isinstance(_get(data, path), str):
            _get(data, path[:-1])[path[-1]] = _get(data, path) + rng.choice(payloads)


def _mutate_number(data, rng: random.Random) -> None:
    """A literal or an int param changed to another value of its type: often still a
    valid program, which must then compute what the interpreter computes."""
    paths = [p for p in _paths(data) if p and type(_get(data, p)) in (int, float)]
    paths = [p for p in paths if "params" in p or p[-1] == "lit"]
    if paths:
        path = rng.choice(paths)
        value = _get(data, path)
        options = [-value, value + 1, value - 1, 0, 2 * value]
        if isinstance(value, float):
            options += ["nan", "inf", "-inf", 1e30, -0.0]
        _get(data, path[:-1])[path[-1]] = rng.choice(options)


# --- what an accepted mutant must do ------------------------------------------------------


def _arguments(closed: ClosedJaxpr, rng: np.random.Generator) -> list[np.ndarray]:
    args = []
    for aval in closed.in_avals:
        if aval.dtype == BOOL:
            args.append(rng.random(aval.shape) < 0.5)
        elif dtypes.is_integer(aval.dtype):
            args.append(rng.integers(0, 3, aval.shape).astype(aval.dtype))
        else:
            args.append(rng.uniform(0.5, 2.0, aval.shape).astype(aval.dtype))
    return args


def _import_cpu_module(closed: ClosedJaxpr, name: str) -> None:
    """Generate the cpu module and import it (no Numba compile): injected text that
    escaped a comment or a docstring runs here."""
    fused, _ = passes.optimize(closed, name=name)
    generated = write_program(fused.jaxpr, name, 1 << 20, passes.plan_memory(fused))
    # The launcher and each kernel's own module, imported under names of the test's own
    # (the compile below must not find them in sys.modules, loaded without a file).
    for source in [generated.launcher, *(unit.source for unit in generated.units)]:
        tree = ast.parse(source)
        kinds = [type(node).__name__ for node in tree.body]
        functions = [node.name for node in tree.body if isinstance(node, ast.FunctionDef)]
        assert len(functions) == 1 or source is not generated.launcher, kinds
        assert functions and all(f.startswith(functions[-1]) for f in functions), functions
        assert set(kinds) <= {"Expr", "Import", "ImportFrom", "Assign", "FunctionDef"}, kinds
        assert isinstance(tree.body[0], ast.Expr) and kinds.count("Expr") == 1, kinds
        cache.load_module(source, f"numbax_fuzz_{cache.program_key(source)}", None)


def _assert_matches_interpreter(closed: ClosedJaxpr, name: str, rng) -> None:
    args = _arguments(closed, rng)
    expected = ir.eval_jaxpr(closed.jaxpr, closed.consts, *args)
    actual = get_backend("cpu").compile(closed, name)(*args)
    actual = actual if isinstance(actual, (list, tuple)) else [actual]
    assert len(actual) == len(expected)
    for got, want in zip(actual, expected, strict=True):
        want = np.asarray(want)
        assert np.asarray(got).dtype == want.dtype and np.shape(got) == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, equal_nan=True)


@pytest.fixture
def marker():
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "injected-code-ran"
        yield path
        assert not path.exists(), "text from a loaded jaxpr ran as code"


def test_mutated_files_are_rejected_or_safe_and_correct(marker):
    rng = random.Random(20240607)
    values = np.random.default_rng(7)
    payloads = _payloads(marker)
    originals = [json.loads(ir.dumps(closed)) for closed in EXAMPLES]
    jaxprs = [data["jaxpr"] for data in originals]
    accepted, compiled, seen = 0, 0, set()
    for number in range(MUTANTS):
        data = copy.deepcopy(rng.choice(originals))
        _inject_text(data, rng, payloads)
        if number % 3 == 1:
            _mutate_number(data, rng)
        elif number % 3 == 2:
            for _ in range(rng.randint(1, 3)):
                _mutate(data, rng, payloads, jaxprs)
        try:
            loaded = ir.loads(json.dumps(data))
        except numbax.SerializationError:
            continue
        accepted += 1
        ir.typecheck(loaded)
        ir.eval_jaxpr(loaded.jaxpr, loaded.consts, *_arguments(loaded, values))
        name = rng.choice(payloads) + "fuzz"  # the function's name is outside text too
        _import_cpu_module(loaded, name)
        assert not marker.exists(), f"mutant {number} ran injected code"
        program = str(loaded)
        if program not in seen and compiled < COMPILES and rng.random() < 0.5:
            seen.add(program)
            compiled += 1
            _assert_matches_interpreter(loaded, name, values)
            assert not marker.exists(), f"mutant {number} ran injected code"
    # The mutations must reach both outcomes, or the test proves nothing.
    assert MUTANTS // 20 < accepted < MUTANTS - MUTANTS // 20
    assert compiled >= min(COMPILES, 4)


@pytest.mark.parametrize("closed", EXAMPLES[:-2], ids=lambda c: c.eqns[0].prim.name)
def test_every_int_param_out_of_range_is_rejected_or_evaluates(closed):
    """Each int in each param (axes, dims, counts, sizes) set to 0, 1, the operand's rank
    and beyond, or repeated: a shape rule must refuse it (SerializationError), never trip
    over it (IndexError) or let through what the reference implementation cannot run."""
    data = json.loads(ir.dumps(closed))
    params = [p for p in _paths(data) if "params" in p and type(_get(data, p)) is int]
    args = _arguments(closed, np.random.default_rng(0))
    for path in params:
        for value, repeated in itertools.product((0, 1, 2, 3, 7), (False, True)):
            mutant = copy.deepcopy(data)
            siblings = _get(mutant, path[:-1])
            siblings[path[-1]] = value
            if repeated and isinstance(siblings, list):
                siblings[:] = [value] * len(siblings)
            try:
                loaded = ir.loads(json.dumps(mutant))
            except numbax.SerializationError:
                continue
            ir.eval_jaxpr(loaded.jaxpr, loaded.consts, *args)


def _unchecked(name: str, operands, outputs, **params) -> str:
    """The file of a one-eqn program, its output types asserted rather than derived."""
    invars = [Var(a) for a in operands]
    outvars = [Var(a) for a in outputs]
    eqn = Eqn(PRIMITIVES[name], invars, outvars, params, None)
    return ir.dumps(ClosedJaxpr(Jaxpr([], invars, [eqn], outvars), []))


# Programs each shape rule used to accept (or trip over with an IndexError) though the
# reference implementation cannot run them.
OUT_OF_RANGE = {
    "concatenate dimension": ("concatenate", [_aval((2,))] * 2, [_aval((4,))], {"dimension": 3}),
    "scatter axis": (
        "scatter",
        [_aval((3,)), _aval((2,), I32), _aval((3, 2))],
        [_aval((3,))],
        {"axis": 5, "mode": "add"},
    ),
    "scatter float indices": (
        "scatter",
        [_aval((3,)), _aval((2,)), _aval((2,))],
        [_aval((3,))],
        {"axis": 0, "mode": "add"},
    ),
    "expand_dims repeated": (
        "expand_dims",
        [_aval((3,))],
        [_aval((1, 1, 3))],
        {"dimensions": (0, 0)},
    ),
    "squeeze repeated": ("squeeze", [_aval((1, 3))], [_aval((3,))], {"dimensions": (0, 0)}),
    "dynamic_update_slice float start": (
        "dynamic_update_slice",
        [_aval((5,)), _aval((2,)), _aval(())],
        [_aval((5,))],
        {},
    ),
    "iota of bools": (
        "iota",
        [],
        [_aval((3,), BOOL)],
        {"dtype": BOOL, "shape": (3,), "dimension": 0},
    ),
    "dot_general dims": (
        "dot_general",
        [_aval((2, 3)), _aval((3, 4))],
        [_aval((2, 4))],
        {"dimension_numbers": (((5,), (0,)), ((), ()))},
    ),
}


@pytest.mark.parametrize("program", OUT_OF_RANGE.values(), ids=OUT_OF_RANGE.keys())
def test_params_out_of_range_for_the_operands_are_refused(program):
    name, operands, outputs, params = program
    with pytest.raises(numbax.SerializationError, match="does not typecheck"):
        ir.loads(_unchecked(name, operands, outputs, **params))
