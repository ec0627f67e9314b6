"""Export: a jitted function traced once, written as JSON, run in another process.

``export(f, *args)`` traces ``f`` for these arguments into an ``Exported``: the program
(its jaxpr, written by ``ir.dumps``), the pytree structures of its arguments and results,
the weak types of its inputs, and the static arguments it was traced with, which are
baked into the program. The text names no Python object, so a process without the
defining source loads it and runs it on any backend, compiled by the normal pipeline.
Loading never evaluates anything: every field is checked, and a malformed or edited file
raises ``SerializationError``.

>>> import numpy as np, numbax
>>> exported = numbax.export(numbax.jit(lambda x: np.sin(x) * 2.0), np.zeros(3))
>>> numbax.deserialize(exported.dumps()).call(np.zeros(3), backend="interpret")
array([0., 0., 0.])
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable

from . import backends
from .api import BoundJitMethod, JitFunction, Lowered, as_executable_argument, jit, trace_to_jaxpr
from .backends.compile_cache import KeyedLock
from .ir.core import ClosedJaxpr, ShapedArray
from .ir.errors import NumbaxTypeError, SerializationError, ShapeError, at_line
from .ir.higher_order import jit_call_p
from .ir.serialize import brief as _short
from .ir.serialize import dumps as dumps_jaxpr
from .ir.serialize import expect
from .ir.serialize import loads as loads_jaxpr
from .tracer import Tracer, bind, tree_flatten, tree_unflatten
from .tracer.closure import closure_convert
from .tracer.core import current_trace
from .tracer.promote import argument_aval
from .tracer.pytree import LEAF, PyTreeDef
from .tracer.source_info import user_frame_info

FORMAT = "numbax.exported"
VERSION = 1
MAX_DEPTH = 64

# A static argument or dict key must come back as the value it was, of the same type.
_STATIC_TYPES = "None, bool, int, float, str and tuples of them"


def export(fun: Callable, *args, **kwargs) -> Exported:
    """Trace ``fun`` (a ``jit`` function; a plain one is jitted) for these arguments.

    Static arguments are baked in: the ``Exported`` is called with the others only.

    >>> import numpy as np, numbax
    >>> scale = numbax.jit(lambda x, k: x * k, static_argnums=1)
    >>> exported = numbax.export(scale, np.ones(2), 3.0)
    >>> exported.static_args, exported.in_avals
    ({1: 3.0}, (ShapedArray(f64[2]),))
    """
    bound = isinstance(fun, BoundJitMethod)
    if bound:
        fun, args = fun.__func__, (fun.__self__, *args)
    elif not isinstance(fun, JitFunction):
        fun = jit(fun)
    call, dynamic, dyn_kwargs, statics = fun._split(args, kwargs, bound)
    closed, in_tree, out_tree, weak_types = trace_to_jaxpr(call, dynamic, dyn_kwargs)
    static_args = {where: static.value for where, static in statics}
    exported = Exported(fun.__name__, closed, in_tree, out_tree, weak_types, static_args)
    exported.dumps()  # refuse what cannot be written now, at the user's export call
    return exported


class Exported:
    """A program traced by ``export``: call it like the function (without its static
    arguments), write it with ``dumps``/``save``, read it with ``loads``/``load``.

    ``call(*args, backend=...)`` checks every argument against the exported structure,
    shapes and dtypes, compiles once per backend and runs; under a trace (``jit``,
    ``grad``, ``vmap``) it is one ``jit_call`` of the exported program.
    """

    def __init__(
        self,
        name: str,
        jaxpr: ClosedJaxpr,
        in_tree: PyTreeDef,
        out_tree: PyTreeDef,
        in_weak_types,
        static_args: dict,
        numbax_version: str | None = None,
    ):
        self.name = name
        self.jaxpr = jaxpr
        self.in_tree, self.out_tree = in_tree, out_tree
        self.in_weak_types = tuple(in_weak_types)
        self.static_args = dict(static_args)
        self.numbax_version = numbax_version or _numbax_version()
        self._executables: dict = {}
        self._compiling = KeyedLock()
        self._text = None

    @property
    def in_avals(self) -> tuple[ShapedArray, ...]:
        return tuple(v.aval for v in self.jaxpr.jaxpr.invars)

    @property
    def out_avals(self) -> tuple[ShapedArray, ...]:
        return tuple(a.aval for a in self.jaxpr.jaxpr.outvars)

    def __repr__(self) -> str:
        ins = ", ".join(a.str_short() for a in self.in_avals)
        outs = ", ".join(a.str_short() for a in self.out_avals)
        return f"Exported({self.name}: ({ins}) -> ({outs}))"

    # --- calling ------------------------------------------------------------------------

    def __call__(self, *args, **kwargs):
        return self.call(*args, **kwargs)

    def call(self, *args, backend: str | None = None, **kwargs):
        leaves, in_tree = tree_flatten((args, kwargs))
        if in_tree != self.in_tree:
            raise NumbaxTypeError(self._refusal(_structure_difference(self.in_tree, in_tree)))
        for path, leaf, expected, weak in zip(
            _leaf_paths(self.in_tree), leaves, self.in_avals, self.in_weak_types, strict=True
        ):
            self._check_argument(path, leaf, expected, weak)
        if current_trace() is not None and any(isinstance(x, Tracer) for x in leaves):
            jaxpr, consts = closure_convert(self.jaxpr)
            outs = bind(jit_call_p, *consts, *leaves, jaxpr=jaxpr, name=self.name)
        else:
            executable = self._executable(backend or backends.default_backend_name())
            keep = getattr(executable, "accepts_device_arrays", False)
            arrays = [
                as_executable_argument(x, a, keep)
                for x, a in zip(leaves, self.in_avals, strict=True)
            ]
            outs = executable(*arrays)
        return tree_unflatten(self.out_tree, outs)

    def _check_argument(self, path: str, leaf, expected: ShapedArray, weak: bool) -> None:
        aval, _ = argument_aval(
            leaf, error=lambda m: NumbaxTypeError(self._refusal(f"argument {path}: {m}"))
        )
        if aval == expected:
            return
        wanted = expected.str_short() + (" (a Python scalar at export)" if weak else "")
        message = f"argument {path} must be {wanted}, got {aval.str_short()}"
        if aval.shape != expected.shape:
            raise ShapeError(self._refusal(f"{message}; export again for these shapes"))
        raise NumbaxTypeError(
            self._refusal(f"{message}; convert it with np.asarray(x, np.{expected.dtype.name})")
        )

    def _refusal(self, message: str) -> str:
        return at_line(f"exported function {self.name}: {message}", user_frame_info())

    def _executable(self, backend_name: str):
        with self._compiling(backend_name):
            if backend_name not in self._executables:
                lowered = Lowered(self.jaxpr, backend_name, self.name)
                self._executables[backend_name] = lowered.compile().executable
        return self._executables[backend_name]

    # --- writing and reading ------------------------------------------------------------

    def dumps(self) -> str:
        """The program as JSON text; ``Exported.loads`` (or ``numbax.deserialize``)
        reads it back."""
        if self._text is None:
            self._text = json.dumps(
                {
                    "format": FORMAT,
                    "version": VERSION,
                    "numbax_version": self.numbax_version,
                    "name": self.name,
                    "in_tree": _dump_tree(self.in_tree, "the arguments"),
                    "out_tree": _dump_tree(self.out_tree, "the results"),
                    "in_weak_types": list(self.in_weak_types),
                    "static_args": [
                        [where, _dump_value(value, f"static argument {where!r} of {self.name}")]
                        for where, value in self.static_args.items()
                    ],
                    "jaxpr": json.loads(dumps_jaxpr(self.jaxpr)),
                }
            )
        return self._text

    @classmethod
    def loads(cls, text: str) -> Exported:
        """The program ``dumps`` wrote; anything else raises ``SerializationError``."""
        try:
            data = json.loads(text)
        except (json.JSONDecodeError, TypeError, UnicodeDecodeError, RecursionError) as err:
            raise SerializationError(f"not an exported numbax program: {err}") from None
        return _load_exported(data)

    def save(self, path: str | os.PathLike) -> None:
        with open(path, "w", encoding="utf-8") as f:
            f.write(self.dumps())

    @classmethod
    def load(cls, path: str | os.PathLike) -> Exported:
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except UnicodeDecodeError as err:
            raise SerializationError(
                f"{os.fspath(path)} is not an exported program: {err}"
            ) from None
        return cls.loads(text)


def deserialize(text: str) -> Exported:
    """The ``Exported`` that ``dumps`` wrote as ``text``."""
    return Exported.loads(text)


def load(path: str | os.PathLike) -> Exported:
    """The ``Exported`` that ``save`` wrote to ``path``."""
    return Exported.load(path)


def _numbax_version() -> str:
    from . import __version__  # the package's __init__ imports this module

    return __version__


# --- argument paths, for the refusals ------------------------------------------------------


def _child_paths(treedef: PyTreeDef, path: str) -> list[str]:
    if not path:  # the root: (args, kwargs)
        return ["args", "kwargs"]
    if treedef.kind is dict:
        return [f"{path}[{key!r}]" for key in treedef.aux]
    return [f"{path}[{i}]" for i in range(len(treedef.children))]


def _leaf_paths(treedef: PyTreeDef, path: str = "") -> list[str]:
    if treedef.kind == "leaf":
        return [path]
    paths = zip(_child_paths(treedef, path), treedef.children, strict=True)
    return [leaf for child_path, child in paths for leaf in _leaf_paths(child, child_path)]


def _describe(treedef: PyTreeDef) -> str:
    if treedef.kind == "leaf":
        return "an array"
    if treedef.kind is None:
        return "None"
    if treedef.kind is dict:
        return f"a dict with keys {list(treedef.aux)}"
    name = getattr(treedef.kind, "__name__", str(treedef.kind))
    return f"a {name} of {len(treedef.children)}"


def _structure_difference(expected: PyTreeDef, got: PyTreeDef, path: str = "") -> str:
    """Where two argument structures first differ, and how."""
    same_node = (
        expected.kind == got.kind
        and expected.aux == got.aux
        and len(expected.children) == len(got.children)
    )
    if not same_node:
        if path == "args":
            return f"takes {len(expected.children)} positional arguments, got {len(got.children)}"
        if path == "kwargs":
            return f"takes the keyword arguments {list(expected.aux)}, got {list(got.aux)}"
        return f"argument {path} must be {_describe(expected)}, got {_describe(got)}"
    for child_path, e, g in zip(
        _child_paths(expected, path), expected.children, got.children, strict=True
    ):
        if e != g:
            return _structure_difference(e, g, child_path)
    raise AssertionError("the structures are equal")


# --- JSON forms of trees and static values ------------------------------------------------
#
# A tree is "*" (a leaf), null (None), {"tuple": [...]}, {"list": [...]} or
# {"dict": [[key, child], ...]} with keys in sorted order, as tree_flatten orders them.
# A value is null, a bool, an int, a str, {"float": x} (x a number, "nan", "inf" or
# "-inf": JSON has no literal for those, and the tag keeps 2.0 from coming back as 2)
# or {"tuple": [...]}.


def _dump_tree(treedef: PyTreeDef, path: str):
    if treedef.kind == "leaf":
        return "*"
    if treedef.kind is None:
        return None
    if treedef.kind is dict:
        return {
            "dict": [
                [_dump_value(key, f"the dict key {key!r} in {path}"), _dump_tree(child, path)]
                for key, child in zip(treedef.aux, treedef.children, strict=True)
            ]
        }
    if treedef.kind in (tuple, list):
        return {treedef.kind.__name__: [_dump_tree(child, path) for child in treedef.children]}
    name = getattr(treedef.kind, "__name__", str(treedef.kind))
    raise SerializationError(
        at_line(
            f"{path} contain a {name}, a registered pytree class or namedtuple, which a file "
            "cannot rebuild without its source; export supports tuples, lists, dicts and "
            "None: pass or return a dict (or tuple) of its fields instead",
            user_frame_info(),
        )
    )


def _dump_value(value, what: str):
    if value is None or type(value) in (bool, int, str):
        return value
    if type(value) is float:
        return {"float": value if math.isfinite(value) else repr(value)}
    if type(value) is tuple:
        return {"tuple": [_dump_value(v, what) for v in value]}
    raise SerializationError(
        at_line(
            f"{what} has type {type(value).__name__} ({value!r:.60}), which JSON cannot hold "
            f"exactly; an exported program records {_STATIC_TYPES}: pass one of those",
            user_frame_info(),
        )
    )


def _expect(condition: bool, message: str) -> None:
    expect(condition, message, "exported program")


_KEYS = {
    "format",
    "version",
    "numbax_version",
    "name",
    "in_tree",
    "out_tree",
    "in_weak_types",
    "static_args",
    "jaxpr",
}


def _load_exported(data) -> Exported:
    _expect(isinstance(data, dict), f"the top level must be an object, not {_short(data)}")
    _expect(data.get("format") == FORMAT, f"format must be {FORMAT!r}")
    version = data.get("version")
    _expect(
        type(version) is int and version == VERSION,
        f"unsupported format version {_short(version)} (this numbax reads version {VERSION})",
    )
    _expect(not _KEYS - data.keys(), f"the top level lacks {sorted(_KEYS - data.keys())}")
    _expect(not data.keys() - _KEYS, f"unknown fields {sorted(data.keys() - _KEYS)}")
    for key in ("numbax_version", "name"):
        _expect(isinstance(data[key], str), f"{key} must be a string, not {_short(data[key])}")
    _expect(isinstance(data["jaxpr"], dict), "jaxpr must be an object")
    closed = loads_jaxpr(json.dumps(data["jaxpr"]))
    in_tree, out_tree = _load_tree(data["in_tree"], 0), _load_tree(data["out_tree"], 0)
    _expect(
        in_tree.kind is tuple
        and len(in_tree.children) == 2
        and in_tree.children[0].kind is tuple
        and in_tree.children[1].kind is dict,
        "in_tree must be a tuple of the positional arguments' tuple and the keywords' dict",
    )
    invars, outvars = closed.jaxpr.invars, closed.jaxpr.outvars
    _expect(
        in_tree.num_leaves == len(invars),
        f"in_tree has {in_tree.num_leaves} leaves, the program {len(invars)} inputs",
    )
    _expect(
        out_tree.num_leaves == len(outvars),
        f"out_tree has {out_tree.num_leaves} leaves, the program {len(outvars)} outputs",
    )
    weak_types = data["in_weak_types"]
    _expect(
        isinstance(weak_types, list)
        and len(weak_types) == len(invars)
        and all(type(w) is bool for w in weak_types),
        f"in_weak_types must be a list of {len(invars)} bools",
    )
    return Exported(
        data["name"],
        closed,
        in_tree,
        out_tree,
        weak_types,
        _load_static_args(data["static_args"]),
        data["numbax_version"],
    )


def _load_static_args(items) -> dict:
    _expect(isinstance(items, list), "static_args must be a list")
    static_args = {}
    for item in items:
        _expect(isinstance(item, list) and len(item) == 2, f"bad static argument {_short(item)}")
        where, value = item
        _expect(
            (type(where) is int and where >= 0) or isinstance(where, str),
            f"a static argument is named by a position or a name, not {_short(where)}",
        )
        _expect(where not in static_args, f"static argument {where!r} is given twice")
        static_args[where] = _load_value(value, 0)
    return static_args


def _load_value(data, depth: int):
    _expect(depth <= MAX_DEPTH, "values nested too deeply")
    if data is None or type(data) in (bool, int, str):
        return data
    _expect(isinstance(data, dict) and len(data) == 1, f"bad value {_short(data)}")
    ((tag, body),) = data.items()
    if tag == "float":
        if isinstance(body, str):
            _expect(body in ("nan", "inf", "-inf"), f"bad float {_short(body)}")
            return float(body)
        _expect(type(body) is float and math.isfinite(body), f"bad float {_short(body)}")
        return body
    _expect(tag == "tuple" and isinstance(body, list), f"bad value {_short(data)}")
    return tuple(_load_value(v, depth + 1) for v in body)


def _load_tree(data, depth: int) -> PyTreeDef:
    _expect(depth <= MAX_DEPTH, "trees nested too deeply")
    if data == "*":
        return LEAF
    if data is None:
        return PyTreeDef(None, None, ())
    _expect(isinstance(data, dict) and len(data) == 1, f"bad tree {_short(data)}")
    ((tag, body),) = data.items()
    _expect(isinstance(body, list), f"bad tree {_short(data)}")
    if tag in ("tuple", "list"):
        children = tuple(_load_tree(child, depth + 1) for child in body)
        return PyTreeDef(tuple if tag == "tuple" else list, None, children)
    _expect(tag == "dict", f"unknown tree node {_short(tag)}")
    _expect(all(isinstance(p, list) and len(p) == 2 for p in body), "bad dict node")
    keys = tuple(_load_value(key, depth + 1) for key, _ in body)
    try:
        ordered = list(keys) == sorted(keys) and len(set(keys)) == len(keys)
    except TypeError:  # keys of types that do not compare (1 and "a")
        ordered = False
    _expect(ordered, f"dict keys {_short(keys)} are not distinct and sorted")
    children = tuple(_load_tree(child, depth + 1) for _, child in body)
    return PyTreeDef(dict, keys, children)
