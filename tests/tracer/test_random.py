"""``numbax.random``: the same key gives the same numbers eagerly and on every backend;
JAX's bits where JAX is installed; independent streams; the distributions' moments and
Kolmogorov-Smirnov tests (SciPy); permutations and draws without replacement; shapes,
dtypes, vmap over keys; and ``np.random`` inside a traced function is an error naming
``numbax.random`` while other threads keep plain NumPy."""

from __future__ import annotations

import threading
from collections import Counter

import numpy as np
import pytest

import numbax
from numbax import random
from numbax.ir.threefry import OUTPUTS, threefry2x32_p
from numbax.numpy_lib.random import _next_below
from numbax.passes import optimize
from numbax.tracer.core import bind

N = 100_000  # samples for the moment and KS tests: seeded, so deterministic
KEY = random.key(1234)


LOGITS = np.log(np.array([0.1, 0.2, 0.3, 0.4]))

# Every kind of draw, as a function of its key and of a length. Each is compiled as a
# program of its own: compile time grows faster than the program, and all of them in one
# program compiled ~15% slower on the cpu, and ~2x slower under the CUDA simulator, than
# one by one (measured when the Threefry rounds were unrolled into each draw: 8014 traced
# eqns, where the threefry2x32 primitive now makes each draw one equation).
DRAWS = {
    "key": lambda key, n: random.key(7),
    "bits": lambda key, n: random.bits(key, (n,)),
    "split": lambda key, n: random.split(key, 3),
    "fold_in": lambda key, n: random.fold_in(key, 5),
    "uniform64": lambda key, n: random.uniform(key, (n,), np.float64, -2.0, 3.0),
    "uniform32": lambda key, n: random.uniform(key, (n,), np.float32),
    "randint64": lambda key, n: random.randint(key, (n,), -3, 1000),
    "randint32": lambda key, n: random.randint(key, (n,), 0, 7, np.int32),
    "bernoulli": lambda key, n: random.bernoulli(key, 0.3, (n,)),
    "permutation": lambda key, n: random.permutation(key, n),
    "choice": lambda key, n: random.choice(key, n, (3,), replace=False),
    "choice_p": lambda key, n: random.choice(key, 4, (n,), p=np.array([0.1, 0.0, 0.5, 0.4])),
    "categorical": lambda key, n: random.categorical(key, LOGITS, shape=(n,)),
    "normal": lambda key, n: random.normal(key, (n,)),
    "normal32": lambda key, n: random.normal(key, (n,), np.float32),
    "truncated": lambda key, n: random.truncated_normal(key, -1.0, 2.0, (n,)),
    "gumbel": lambda key, n: random.gumbel(key, (n,)),
}
DRAW_KEYS = dict(zip(DRAWS, random.split(KEY, len(DRAWS)), strict=True))

# Draws computed through log/cos/exp: equal to the last few bits (math libraries differ).
TRANSCENDENTAL = {"normal": 1e-13, "normal32": 1e-5, "truncated": 1e-13, "gumbel": 1e-13}


@pytest.mark.parametrize("name", DRAWS)
def test_same_numbers_on_every_backend(name, backend):
    n = backend.size(32, simulated=6)
    draw, key = DRAWS[name], DRAW_KEYS[name]
    want = draw(key, n)
    got = backend.to_host(numbax.jit(draw, static_argnums=1, backend=backend)(key, n))
    got = np.asarray(got)
    assert got.dtype == want.dtype and got.shape == want.shape, name
    if name in TRANSCENDENTAL:
        np.testing.assert_allclose(got, want, rtol=TRANSCENDENTAL[name], err_msg=name)
    else:
        np.testing.assert_array_equal(got, want, err_msg=name)


def test_matches_jax_bit_for_bit():
    jax = pytest.importorskip("jax", reason="JAX is the oracle of the Threefry bits")
    if not jax.config.jax_threefry_partitionable:
        pytest.skip("numbax follows JAX's partitionable Threefry layout (JAX >= 0.5)")
    with jax.enable_x64(True):
        for seed in [0, 1, 42, 2**31 + 7, 2**40 + 3, -5]:
            jkey, key = jax.random.PRNGKey(seed), random.key(seed)

            def same(theirs, ours, what, seed=seed):
                theirs = np.asarray(theirs)
                assert np.array_equal(theirs.astype(ours.dtype), ours), (seed, what)

            same(jax.random.key_data(jkey), key, "key")
            same(jax.random.bits(jkey, (7, 3), dtype=np.uint32), random.bits(key, (7, 3)), "bits")
            same(jax.random.split(jkey, 5), random.split(key, 5), "split")
            same(jax.random.fold_in(jkey, 12345), random.fold_in(key, 12345), "fold_in")
            for dtype in [np.float32, np.float64]:
                theirs = jax.random.uniform(jkey, (500,), dtype)
                assert np.asarray(theirs).dtype == dtype
                same(theirs, random.uniform(key, (500,), dtype), f"uniform {dtype}")
            for dtype in [np.int32, np.int64]:
                for low, high in [(0, 10), (-5, 7), (3, 2**31 - 1), (-(2**31), 2**31 - 1)]:
                    theirs = jax.random.randint(jkey, (300,), low, high, dtype)
                    same(theirs, random.randint(key, (300,), low, high, dtype), (dtype, low))
            wide = jax.random.randint(jkey, (300,), -(2**62), 2**62, np.int64)
            same(wide, random.randint(key, (300,), -(2**62), 2**62), "randint wide")
            theirs = jax.random.bernoulli(jkey, 0.3, (500,))
            same(theirs, random.bernoulli(key, 0.3, (500,)), "bernoulli")


# --- the threefry2x32 primitive ---------------------------------------------------------

# Known answers of Threefry-2x32 (20 rounds): key words, counter words -> cipher words, from
# the Random123 known-answer tests (as JAX's threefry tests use them).
KNOWN_ANSWERS = [
    ((0x00000000, 0x00000000), (0x00000000, 0x00000000), (0x6B200159, 0x99BA4EFE)),
    ((0xFFFFFFFF, 0xFFFFFFFF), (0xFFFFFFFF, 0xFFFFFFFF), (0x1CB996FC, 0xBB002BE7)),
    ((0x13198A2E, 0x03707344), (0x243F6A88, 0x85A308D3), (0xC4923A9C, 0x483DF7A0)),
]


def threefry_reference(key, count):
    """Threefry-2x32 in NumPy uint32 arithmetic, written from the paper's description
    (Salmon et al. 2011): the key schedule's third word is ``k0 ^ k1 ^ 0x1BD11BDA``, and
    twenty rounds of ``x0 += x1; x1 = rotl(x1, R) ^ x0``, a key injection after every fourth
    (the subkey ``s``: ks[s % 3], ks[(s + 1) % 3] + s)."""
    u32 = np.uint32
    ks = [u32(k) for k in key] + [u32(key[0]) ^ u32(key[1]) ^ u32(0x1BD11BDA)]
    x = [np.asarray(count[0], u32) + ks[0], np.asarray(count[1], u32) + ks[1]]
    rotations = [13, 15, 26, 6, 17, 29, 16, 24]
    for n in range(20):
        r = rotations[n % 8]
        x[0] = x[0] + x[1]
        x[1] = ((x[1] << u32(r)) | (x[1] >> u32(32 - r))) ^ x[0]
        if n % 4 == 3:
            s = n // 4 + 1
            x = [x[0] + ks[s % 3], x[1] + ks[(s + 1) % 3] + u32(s)]
    return x


def _threefry_program(keys, counts):
    """Every output of the primitive for one key and a vector of counters, the float
    uniforms ``numbax.random`` makes of them (fused with the primitive), and the same
    under vmap over a stack of keys."""

    def outputs(key, counts):
        words = [
            bind(threefry2x32_p, key[0], key[1], counts[0], counts[1], output=output)
            for output in OUTPUTS
        ]
        bits64, xor = words[OUTPUTS.index("bits64")], words[OUTPUTS.index("xor")]
        unit64 = ((bits64 >> 12) & (2**52 - 1)).astype(np.float64) * 2.0**-52
        unit32 = (xor >> 9).astype(np.float32) * np.float32(2.0**-23)
        return (*words, unit64, unit32)

    return outputs(keys[0], counts), numbax.vmap(outputs, in_axes=(0, None))(keys, counts)


def test_threefry2x32_primitive(backend):
    """The primitive's every output, against the NumPy reference and the known answers,
    on every backend: operands of one shape or rank 0, words beyond 32 bits taken modulo
    2**32, under vmap, and fused with the float arithmetic that consumes it."""
    n = backend.size(64, simulated=5)
    rng = np.random.default_rng(5)
    keys = np.array([k for k, _, _ in KNOWN_ANSWERS] + [[7, 2**32 - 3]], np.int64)
    counts = rng.integers(0, 2**32, (2, n), dtype=np.int64)
    counts[:, :3] = np.array([c for _, c, _ in KNOWN_ANSWERS], np.int64).T
    counts[0, -1] -= 2**32  # beyond 32 bits: only the low 32 bits count (the reference's too)
    single, batched = backend.to_host(numbax.jit(_threefry_program, backend=backend)(keys, counts))
    for key, words in [
        (keys[0], single),
        *((k, [w[i] for w in batched]) for i, k in enumerate(keys)),
    ]:
        x0, x1 = (x.astype(np.int64) for x in threefry_reference(key, counts))
        want = {"word0": x0, "word1": x1, "xor": x0 ^ x1, "bits64": (x0 << 32) | x1}
        for output, got in zip(OUTPUTS, words, strict=False):
            np.testing.assert_array_equal(got, want[output], err_msg=f"{backend} {output}")
        unit64, unit32 = words[len(OUTPUTS) :]
        np.testing.assert_array_equal(unit64, ((x0 << 20) | (x1 >> 12)) * 2.0**-52)
        np.testing.assert_array_equal(unit32, ((x0 ^ x1) >> 9).astype(np.float32) / 2**23)
    for i, (_, _, answer) in enumerate(KNOWN_ANSWERS):  # key i, counter i
        assert (batched[0][i][i], batched[1][i][i]) == answer, (backend, i)


def test_threefry2x32_fuses_with_its_float_consumers():
    """One kernel computes the cipher and the uniforms made of it: the primitive is
    elementwise for fusion."""
    keys, counts = np.zeros((2, 2), np.int64), np.zeros((2, 8), np.int64)
    fused, _ = optimize(numbax.make_jaxpr(_threefry_program)(keys, counts))
    bodies = [e.params["jaxpr"] for e in fused.jaxpr.eqns if e.prim.name == "kernel"]
    names = [{e.prim.name for e in body.eqns} for body in bodies]
    assert any({"threefry2x32", "convert_element_type", "mul"} <= kernel for kernel in names)


def test_a_draw_binds_the_cipher_not_its_rounds():
    """A draw is a threefry2x32 equation per cipher output it needs (split: two, and two
    keys' draws after it), never the rounds' xors, adds and rotations."""
    for name, draw in DRAWS.items():
        jaxpr = numbax.make_jaxpr(draw, static_argnums=1)(KEY, 4).jaxpr
        counted = Counter(e.prim.name for e in jaxpr.eqns)
        assert counted["threefry2x32"] <= 4 and counted["xor"] == 0, (name, counted)
        assert (counted["threefry2x32"] == 0) == (name == "key"), name
    assert len(numbax.make_jaxpr(lambda key: random.bits(key, (5,)))(KEY).eqns) < 10


def test_key_of_a_traced_seed_and_of_negative_seeds():
    assert np.array_equal(numbax.jit(random.key)(np.int64(2**40 + 5)), [256, 5])
    assert np.array_equal(random.key(np.int32(-1)), [2**32 - 1, 2**32 - 1])
    assert random.key(3).dtype == np.int64 and random.key(3).shape == (2,)


def test_split_streams_are_independent():
    keys = random.split(KEY, 8)
    assert len({tuple(k) for k in keys.tolist()} | {tuple(KEY.tolist())}) == 9
    streams = np.stack([random.uniform(k, (10_000,)) for k in keys])
    correlation = np.corrcoef(streams)
    off_diagonal = correlation[~np.eye(8, dtype=bool)]
    assert np.max(np.abs(off_diagonal)) < 5 / np.sqrt(10_000)
    assert len({row.tobytes() for row in streams}) == 8


def test_fold_in_gives_distinct_keys():
    folded = {tuple(random.fold_in(KEY, d).tolist()) for d in range(200)}
    folded |= {tuple(random.fold_in(KEY, -d - 1).tolist()) for d in range(200)}
    assert len(folded) == 400 and tuple(KEY.tolist()) not in folded
    # Data is taken modulo 2**32, as JAX takes it.
    assert np.array_equal(random.fold_in(KEY, -1), random.fold_in(KEY, 2**32 - 1))


def assert_moments(x, mean, var, where):
    """Sample mean and variance within five standard errors of the exact ones."""
    n = x.size
    fourth = np.mean((x - mean) ** 4)
    assert abs(np.mean(x) - mean) < 5 * np.sqrt(var / n), (where, np.mean(x), mean)
    assert abs(np.var(x) - var) < 5 * np.sqrt(max(fourth - var**2, 1e-300) / n), (where, np.var(x))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_uniform_and_normal_moments(dtype):
    u = random.uniform(KEY, (N,), dtype, -1.0, 3.0)
    assert u.dtype == dtype and u.min() >= -1.0 and u.max() < 3.0
    assert_moments(u.astype(np.float64), 1.0, 16 / 12, "uniform")
    z = random.normal(KEY, (N,), dtype)
    assert z.dtype == dtype
    assert_moments(z.astype(np.float64), 0.0, 1.0, "normal")


def test_discrete_moments():
    b = random.bernoulli(KEY, 0.3, (N,))
    assert b.dtype == np.bool_
    assert_moments(b.astype(np.float64), 0.3, 0.21, "bernoulli")
    r = random.randint(KEY, (N,), -2, 8)
    assert r.dtype == np.int64 and r.min() == -2 and r.max() == 7
    assert_moments(r.astype(np.float64), 2.5, (10**2 - 1) / 12, "randint")
    p = np.array([0.1, 0.2, 0.3, 0.4])
    for name, c in {
        "categorical": random.categorical(KEY, np.log(p), shape=(N,)),
        "choice": random.choice(KEY, 4, (N,), p=p),
    }.items():
        for k in range(4):
            assert_moments((c == k).astype(np.float64), p[k], p[k] * (1 - p[k]), (name, k))


def truncated_moments(a, b):
    """Mean and variance of the standard normal truncated to (a, b), in closed form."""
    from math import erf, exp, pi, sqrt

    pdf = lambda x: exp(-x * x / 2) / sqrt(2 * pi)  # noqa: E731
    mass = (erf(b / sqrt(2)) - erf(a / sqrt(2))) / 2
    mean = (pdf(a) - pdf(b)) / mass
    var = 1 + (a * pdf(a) - b * pdf(b)) / mass - mean**2
    return mean, var


@pytest.mark.parametrize("bounds", [(-1.0, 2.0), (0.5, 4.0), (-3.0, -2.5)])
def test_truncated_normal_moments(bounds):
    x = random.truncated_normal(KEY, *bounds, (N,))
    assert x.min() > bounds[0] and x.max() < bounds[1]
    assert_moments(x, *truncated_moments(*bounds), "truncated_normal")


def test_truncated_normal_with_infinite_bounds():
    x = random.truncated_normal(KEY, 1.0, np.inf, (N,))
    assert np.isfinite(x).all() and x.min() > 1.0
    mean, _ = truncated_moments(1.0, 40.0)
    assert abs(x.mean() - mean) < 0.01


def test_kolmogorov_smirnov():
    stats = pytest.importorskip("scipy.stats", reason="SciPy gives the reference CDFs")
    cases = {
        "uniform": (random.uniform(KEY, (N,)), stats.uniform.cdf),
        "uniform32": (random.uniform(KEY, (N,), np.float32).astype(float), stats.uniform.cdf),
        "normal": (random.normal(KEY, (N,)), stats.norm.cdf),
        "normal32": (random.normal(KEY, (N,), np.float32).astype(float), stats.norm.cdf),
        "truncated": (
            random.truncated_normal(KEY, -0.5, 1.5, (N,)),
            stats.truncnorm(-0.5, 1.5).cdf,
        ),
        "gumbel": (random.gumbel(KEY, (N,)), stats.gumbel_r.cdf),
    }
    for name, (sample, cdf) in cases.items():
        assert stats.kstest(sample, cdf).pvalue > 1e-3, name


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_uniform_never_reaches_maxval(dtype):
    # One ulp wide: the scaled value rounds up onto maxval for about half of the draws
    # (JAX returns maxval there); numbax keeps the half-open interval.
    one = dtype(1.0)
    top = np.nextafter(one, dtype(2.0))
    u = random.uniform(KEY, (1000,), dtype, one, top)
    assert np.all(u == one)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_next_below_is_numpys_nextafter(dtype):
    info = np.finfo(dtype)
    values = [
        0.0, 1.0, 1.5, 2.0, 3.0, 0.1, 1e-3, 1e10, float(info.max), float(info.tiny),
        float(info.smallest_subnormal), float(info.tiny) * 3.5, float(info.tiny) * 2**20,
        float(info.tiny) * 2**40 * 1.7, 2.0 ** (info.minexp + info.nmant + 1),
        2.0 ** (info.minexp + info.nmant + 1) * 1.25, np.pi,
    ]  # fmt: skip
    x = np.array(values + [-v for v in values], dtype)
    rng = np.random.default_rng(0)
    x = np.concatenate([x, (rng.standard_normal(1000) * 10.0 ** rng.integers(-30, 30, 1000))])
    x = x.astype(dtype)
    with np.errstate(over="ignore"):  # nextafter(-max) is -inf
        expected = np.nextafter(x, dtype(-np.inf))
    np.testing.assert_array_equal(_next_below(x), expected)
    assert _next_below(np.array([np.inf], dtype))[0] == info.max


@pytest.mark.parametrize("n", [0, 1, 2, 17, 500])
def test_permutation_is_a_permutation(n):
    perm = random.permutation(KEY, n)
    assert perm.dtype == np.int64 and np.array_equal(np.sort(perm), np.arange(n))
    if n == 500:
        assert not np.array_equal(perm, np.arange(n))


def test_permutation_of_an_array_along_an_axis():
    x = np.arange(24.0).reshape(4, 6)
    out = random.permutation(KEY, x, axis=1)
    order = random.permutation(KEY, 6)
    np.testing.assert_array_equal(out, x[:, order])


def test_permutation_positions_are_uniform():
    # Where 0 lands, over many keys: uniform over the 5 positions. The keys go through
    # vmap (one trace, where a Python loop traces 4000 times); a loop over a few of them
    # says the batched permutations are each key's own.
    keys = random.split(KEY, 4000)
    landing = numbax.vmap(lambda key: np.argmax(random.permutation(key, 5) == 0))(keys)
    one_by_one = [np.argmax(random.permutation(key, 5) == 0) for key in keys[:40]]
    np.testing.assert_array_equal(landing[:40], one_by_one)
    for k in range(5):
        assert_moments((landing == k).astype(float), 0.2, 0.16, ("position", k))


def test_choice_without_replacement_is_distinct():
    drawn = random.choice(KEY, 50, (4, 5), replace=False)
    assert drawn.shape == (4, 5) and len(set(drawn.ravel().tolist())) == 20
    p = np.array([0.0, 0.3, 0.1, 0.0, 0.2, 0.4])
    weighted = random.choice(KEY, 6, (4,), replace=False, p=p)
    assert len(set(weighted.tolist())) == 4 and set(weighted.tolist()) <= {1, 2, 4, 5}
    rows = random.choice(KEY, np.arange(12).reshape(6, 2), (3,), replace=False)
    assert rows.shape == (3, 2) and np.all(rows[:, 1] == rows[:, 0] + 1)
    with pytest.raises(numbax.ShapeError, match="replace=False"):
        random.choice(KEY, 3, (4,), replace=False)


@pytest.mark.parametrize(
    ("draw", "dtype", "shape"),
    [
        (lambda k: random.uniform(k, (2, 3), np.float32), np.float32, (2, 3)),
        (lambda k: random.uniform(k), np.float64, ()),
        (lambda k: random.normal(k, 4), np.float64, (4,)),
        (lambda k: random.bernoulli(k, np.full((3, 1), 0.5), (2, 3, 4)), np.bool_, (2, 3, 4)),
        (lambda k: random.bernoulli(k, np.array([0.2, 0.7])), np.bool_, (2,)),
        (lambda k: random.randint(k, (5,), 0, np.arange(1, 6), np.int32), np.int32, (5,)),
        (lambda k: random.categorical(k, np.zeros((3, 4)), axis=0), np.int64, (4,)),
        (lambda k: random.categorical(k, np.zeros((3, 4)), shape=(2, 3)), np.int64, (2, 3)),
        (lambda k: random.truncated_normal(k, np.zeros(3), 1.0), np.float64, (3,)),
        (lambda k: random.truncated_normal(k, 0.0, 1.0, (2,), np.float32), np.float32, (2,)),
        (lambda k: random.choice(k, np.arange(5.0)), np.float64, ()),
        (lambda k: random.split(k, (2, 3)), np.int64, (2, 3, 2)),
        (lambda k: random.bits(k, (3,)), np.int64, (3,)),
    ],
)
def test_shapes_and_dtypes(draw, dtype, shape):
    out = draw(KEY)
    assert out.dtype == dtype and out.shape == shape


def test_randint_per_element_bounds_and_empty_span():
    low = np.arange(10)
    out = random.randint(KEY, (10,), low, low + 3)
    assert np.all((out >= low) & (out < low + 3))
    assert np.all(random.randint(KEY, (10,), 5, 5) == 5)
    assert np.all(random.randint(KEY, (10,), 5, 2) == 5)


def test_vmap_over_keys():
    keys = random.split(KEY, 4)

    def draw(key):
        return (
            random.uniform(key, (3,)),
            random.normal(key, (2,)),
            random.randint(key, (3,), 0, 100),
            random.bernoulli(key, 0.5, (3,)),
            random.permutation(key, 5),
        )

    batched = numbax.vmap(draw)(keys)
    for i, key in enumerate(keys):
        for got, want in zip(batched, draw(key), strict=True):
            np.testing.assert_array_equal(got[i], want)


def test_a_bad_key_names_the_fix():
    with pytest.raises(numbax.NumbaxTypeError, match=r"key\(seed\)"):
        random.uniform(np.zeros(2), (3,))
    with pytest.raises(numbax.NumbaxTypeError, match="shape"):
        random.normal(random.split(KEY, 3), (3,))


# --- np.random inside a traced function --------------------------------------------

LEGACY_CALLS = {
    "normal": lambda: np.random.normal(size=3),
    "rand": lambda: np.random.rand(3),
    "randint": lambda: np.random.randint(0, 5, size=3),
    "seed": lambda: np.random.seed(0),
    "default_rng": lambda: np.random.default_rng().normal(size=3),  # fresh entropy
}


@pytest.mark.parametrize("name", list(LEGACY_CALLS))
def test_numpy_random_inside_jit_is_an_error(name):
    call = LEGACY_CALLS[name]

    def f(x):
        return x + call()

    with pytest.raises(numbax.UnsupportedFunctionError, match=f"np.random.{name}.*numbax.random"):
        numbax.jit(f)(np.zeros(3))
    with pytest.raises(numbax.UnsupportedFunctionError, match="numbax.random"):
        numbax.vmap(f)(np.zeros((2, 3)))
    call()  # plain NumPy again once the trace is over
    assert type(np.random.normal).__name__ == "method"


def _fixed_weights(x):
    rng = np.random.default_rng(1234)  # NumPy gives these numbers on every call
    k = x.shape[-1]
    return rng.standard_normal((k, k)) @ x + rng.integers(0, 5, size=k) + rng.uniform()


@pytest.mark.parametrize("tiered", [False, True])
def test_a_generator_seeded_inside_the_function_gives_numpys_numbers(tiered):
    x = np.arange(3.0)
    jitted = numbax.jit(_fixed_weights, tiered=tiered)
    for _ in range(2):
        np.testing.assert_allclose(jitted(x), _fixed_weights(x), rtol=1e-14)
    xs = np.arange(6.0).reshape(2, 3)
    np.testing.assert_allclose(
        numbax.vmap(_fixed_weights)(xs), np.stack([_fixed_weights(row) for row in xs]), rtol=1e-14
    )

    def created_in_the_body(x):
        return numbax.fori_loop(0, 3, lambda i, c: c + np.random.default_rng(1).normal(), x)

    want = x + 3 * np.random.default_rng(1).normal()
    np.testing.assert_allclose(numbax.jit(created_in_the_body, tiered=tiered)(x), want)


_OUTSIDE = np.random.default_rng(0)


def _drawn_in_a_loop_body(x):
    rng = np.random.default_rng(1)  # NumPy: each iteration draws a new number
    return numbax.fori_loop(0, 3, lambda i, c: c + rng.normal(), x)


@pytest.mark.parametrize(
    ("fn", "says"),
    [
        (lambda x: x + np.random.default_rng().normal(size=3), "without a seed"),
        (lambda x: x + np.random.default_rng(_OUTSIDE).normal(size=3), "from outside"),
        (lambda x: x + np.random.default_rng(_OUTSIDE.bit_generator).random(3), "from outside"),
        (lambda x: x + np.random.default_rng(x[0].astype(int)).random(3), "traced seed"),
        (lambda x: x + np.random.default_rng(np.random.SeedSequence(3)).random(3), "SeedSequence"),
        (_drawn_in_a_loop_body, "loop body"),
    ],
    ids="unseeded outside_generator outside_bits traced_seed seed_sequence loop_body".split(),
)
def test_default_rng_whose_numbers_would_change_between_calls_is_refused(fn, says):
    state = _OUTSIDE.bit_generator.state
    with pytest.raises(numbax.UnsupportedFunctionError, match=f"{says}(.|\n)*numbax.random"):
        numbax.jit(fn)(np.zeros(3))
    assert _OUTSIDE.bit_generator.state == state  # nothing drawn


def test_numpy_random_in_eager_grad_still_works():
    # A concrete trace runs the function on every call: NumPy draws afresh, nothing freezes.
    out = numbax.grad(lambda x: np.sum(x * np.random.normal()))(np.ones(2))
    assert out.shape == (2,) and out[0] == out[1]


def test_other_threads_keep_numpy_random_while_one_traces():
    inside, done = threading.Event(), threading.Event()
    results = {}

    def traced(x):
        inside.set()
        assert done.wait(30)
        return x * 2.0

    def other():
        assert inside.wait(30)
        try:
            results["other"] = np.random.normal(size=2)
        finally:
            done.set()

    thread = threading.Thread(target=other)
    thread.start()
    numbax.jit(traced)(np.ones(2))
    thread.join()
    assert results["other"].shape == (2,)
