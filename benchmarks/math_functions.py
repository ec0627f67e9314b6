"""The math group (`--group math`): one elementwise function over a large array, compiled.

Issue #36 asks for float32 and float64 `tanh`, `exp`, `log`, the logistic function, `erf`,
`sin` and `cos` at XLA's throughput or better, each within its documented ulp bound (the
bounds are tested over every float32 input in `tests/backends/test_fastmath_*.py`). Each row
is `f(x)` alone over 2^22 elements, so the loop's cost per element and its stores are all
there is to time. `erf` and the logistic function are SciPy's (`scipy.special.erf`,
`expit`), so each library takes them from its own `scipy.special`.
"""

from __future__ import annotations

import numpy as np

from .workloads import Workload

SIZE = {"quick": 1 << 12, "full": 1 << 22}

# name: (the numpy-namespace function, or None for scipy.special's; inputs drawn from)
FUNCTIONS = {
    "tanh": ("tanh", (-4.0, 4.0)),
    "exp": ("exp", (-20.0, 20.0)),
    "log": ("log", None),  # log-uniform over [1e-6, 1e6]
    "logistic": (None, (-10.0, 10.0)),
    "erf": (None, (-4.0, 4.0)),
    "sin": ("sin", (-100.0, 100.0)),
    "cos": ("cos", (-100.0, 100.0)),
}
SPECIAL_NAMES = {"logistic": "expit", "erf": "erf"}
DTYPES = ("float32", "float64")
# The loosest documented bound is 6 float32 ulps (erf); float64's are at most 2 ulps.
TOLERANCE = {"float32": {"rtol": 1e-6, "atol": 1e-7}, "float64": {"rtol": 1e-14, "atol": 1e-15}}


def special(xp):
    """The `scipy.special` of the array namespace `xp`'s library."""
    module = xp.__name__
    if module == "numpy":
        import scipy.special as found
    elif module == "jax.numpy":
        import jax.scipy.special as found
    elif module.startswith("numbax."):  # numbax.numpy
        import numbax.scipy.special as found
    elif module == "cupy":
        import cupyx.scipy.special as found
    else:
        raise ValueError(f"no scipy.special known for the array namespace {module}")
    return found


def program_of(name: str):
    numpy_name, _ = FUNCTIONS[name]
    if numpy_name is not None:

        def program(xp, x):
            return getattr(xp, numpy_name)(x)

    else:

        def program(xp, x):
            return getattr(special(xp), SPECIAL_NAMES[name])(x)

    program.__name__ = name
    return program


def inputs_of(name: str, n: int, dtype: str, rng) -> np.ndarray:
    bounds = FUNCTIONS[name][1]
    if bounds is None:
        return np.exp(rng.uniform(np.log(1e-6), np.log(1e6), n)).astype(dtype)
    return rng.uniform(*bounds, n).astype(dtype)


def math_workload(name: str, dtype: str, scale: str, rng) -> Workload:
    n = SIZE["quick" if scale == "quick" else "full"]
    x = inputs_of(name, n, dtype, rng)
    title = SPECIAL_NAMES.get(name, name)
    return Workload(
        f"{name}_{dtype}",
        f"{'scipy.special.' if name in SPECIAL_NAMES else 'numpy.'}{title} elementwise",
        f"2^{n.bit_length() - 1} {dtype}",
        "forward",
        program_of(name),
        (x,),
        bytes_moved=2 * x.nbytes,
        **TOLERANCE[dtype],
    )


def _builder(name: str, dtype: str):
    return lambda scale, rng: math_workload(name, dtype, scale, rng)


MATH_WORKLOAD_BUILDERS = {
    f"{name}_{dtype}": _builder(name, dtype) for name in FUNCTIONS for dtype in DTYPES
}
