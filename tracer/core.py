"""Tracers, the trace stack and ``bind``.

There is one kind of trace: it records equations into a jaxpr. A ``Tracer`` holds an
abstract value and, when the trace is *concrete* (an eager transform such as
``grad(f)(x)`` on real arrays), also the value computed as each operation is recorded,
so Python control flow on array values works (define-by-run). Under ``jit`` the trace
is abstract and converting a tracer to a Python value raises ``ConcretizationError``.

Traces nest: an operation is always recorded into the innermost active trace; a tracer
of an enclosing trace used there is lifted in as a constvar whose value is the outer
tracer. A tracer of a trace that has ended is a leaked tracer.
"""

from __future__ import annotations

import sys
import threading
from contextlib import contextmanager, nullcontext

import numpy as np

from ..ir import dtypes
from ..ir.core import ClosedJaxpr, Eqn, Jaxpr, Literal, ShapedArray, Var, aval_of
from ..ir.errors import (
    ConcretizationError,
    InPlaceUpdateError,
    LeakedTracerError,
    NumbaxError,
    NumbaxTypeError,
    TypecheckError,
    at_line,
)
from ..ir.primitive import Primitive
from .numpy_random_guard import numpy_random_refused
from .source_info import user_frame_info


class Trace:
    """Records the equations of one function being traced."""

    def __init__(self, concrete: bool):
        self.concrete = concrete
        self.active = True
        self.invars: list[Var] = []
        self.constvars: list[Var] = []
        self.const_values: list = []
        self.eqns: list[Eqn] = []
        # id(outer value) -> (outer value, lifted tracer). The outer value is kept
        # alive here so its id cannot be reused while the trace runs.
        self._lifted: dict[int, tuple[object, Tracer]] = {}
        # Each NumPy array lifted: the array, the copy the program holds, its aval.
        self._read_arrays: list[tuple[np.ndarray, np.ndarray, ShapedArray]] = []
        # Equation output -> its concrete value, kept only when a transform sets this to
        # a dict before tracing: eager ``grad`` reads its residuals here instead of
        # computing the forward a second time.
        self.values: dict[Var, object] | None = None
        # The last conversion of one of this trace's tracers that was refused (see
        # ``new_trace``): the tracer's repr, the frame and line that asked, the error.
        self.refused_conversion: tuple | None = None

    def new_arg(self, aval: ShapedArray, value=None) -> Tracer:
        # An argument is an array the caller holds: a mutable handle, even when 0-d.
        tracer = Tracer(self, aval, value, mutable=True)
        self.invars.append(tracer._var)
        return tracer

    def lift(self, outer) -> Tracer:
        """A constvar of this trace standing for ``outer`` (an array or outer tracer)."""
        key = id(outer)
        if key not in self._lifted:
            if isinstance(outer, Tracer):
                aval, value, const = outer.aval, outer._value, outer
            else:
                aval, value = aval_of(outer), outer
                if isinstance(outer, np.ndarray):
                    # A global or closed-over array is read when the function is traced,
                    # as JAX reads it: a copy, so that what was folded from it and what
                    # the program reads agree when the caller later writes into it (a
                    # read-only array may be a view of a writeable one, or be made
                    # writeable again).
                    value = outer.copy()
                    self._read_arrays.append((outer, value, aval))
                const = value
            tracer = Tracer(self, aval, value)
            self.constvars.append(tracer._var)
            self.const_values.append(const)
            self._lifted[key] = (outer, tracer)
        return self._lifted[key][1]

    def atom(self, value):
        """The IR atom for an operand: a var of this trace, a lifted const, or a literal."""
        if isinstance(value, Tracer):
            if value._trace is self:
                return value._var
            if not value._trace.active:
                raise leaked_tracer_error(value)
            return self.lift(value)._var
        if isinstance(value, (bool, int, float, np.generic)) or (
            isinstance(value, np.ndarray) and value.shape == ()
        ):
            return Literal(value, aval_of(value).dtype)
        if isinstance(value, np.ndarray):
            return self.lift(value)._var
        raise NumbaxTypeError(
            at_line(
                f"cannot use a value of type {type(value).__name__} as an array operand",
                user_frame_info(),
            )
        )

    def value_of(self, value):
        """The concrete value of an operand, or None when it is abstract."""
        if isinstance(value, Tracer):
            if value._trace is self:
                return value._value
            return self.lift(value)._value
        return value

    def to_jaxpr(self, outputs) -> ClosedJaxpr:
        self._refuse_written_constants()
        outvars = [self.atom(out) for out in outputs]
        jaxpr = Jaxpr(list(self.constvars), list(self.invars), list(self.eqns), outvars)
        return ClosedJaxpr(jaxpr, list(self.const_values))

    def _refuse_written_constants(self) -> None:
        """Refuse a trace during which an array from outside it changed after it was read:
        the program holds the value read first (``lift``), so a later read would not see
        the write, as it does in NumPy."""
        for outer, snapshot, aval in self._read_arrays:
            if not np.array_equal(outer, snapshot, equal_nan=True):
                raise InPlaceUpdateError(
                    at_line(
                        f"an array from outside the traced function ({aval.str_short()}"
                        ": a global, a closure, or an argument that is not traced, as grad's "
                        "arguments outside argnums) was written into after the function read "
                        "it. numbax reads such an array once, when it first meets it, so a "
                        "later read would not see the write as it does in NumPy. Pass the "
                        "array as a traced argument (of jit, or among grad's argnums), or "
                        "write into a copy of it",
                        user_frame_info(),
                    )
                )


class _TraceStack(threading.local):
    def __init__(self):
        self.traces: list[Trace] = []


_stack = _TraceStack()


def current_trace() -> Trace | None:
    return _stack.traces[-1] if _stack.traces else None


@contextmanager
def recording_into(trace: Trace):
    """Record into ``trace`` for a while, even when traces nested in it are active: how a
    view of an array of an enclosing trace catches up with writes made there."""
    if current_trace() is trace:
        yield
        return
    _stack.traces.append(trace)
    try:
        yield
    finally:
        _stack.traces.pop()


def any_concrete_trace() -> bool:
    """Whether a concrete (eager) trace is active: known values may then be inputs'."""
    return any(trace.concrete for trace in _stack.traces)


@contextmanager
def new_trace(concrete: bool):
    trace = Trace(concrete)
    _stack.traces.append(trace)
    # An abstract trace would freeze np.random's numbers into the program (define-by-run
    # concrete traces draw afresh on every call, as NumPy does).
    guard = nullcontext() if concrete else numpy_random_refused()
    try:
        with guard:
            yield trace
    except (TypeError, ValueError) as err:
        refused = _refusal_replaced_by(trace, err)
        if refused is None:
            raise
        raise refused from None
    finally:
        _stack.traces.pop()
        trace.active = False


def _refusal_replaced_by(trace: Trace, err: Exception) -> NumbaxError | None:
    """NumPy's C converters (``np.zeros(n)``, ``ndarray.reshape(n)``) replace the
    TypeError that a tracer's ``__index__`` raised with their own, raised at the same
    line and naming the tracer by its repr; the user gets numbax's error, with its line
    and fix, back. ``ndarray.__setitem__`` turns a refused ``float(tracer)`` into a
    ValueError: a traced value was written into a NumPy array. An error raised anywhere
    else is left as it is."""
    if trace.refused_conversion is None or isinstance(err, NumbaxError):
        return None
    tracer_repr, frame, line, error = trace.refused_conversion
    innermost = err.__traceback__
    while innermost is not None and innermost.tb_next is not None:
        innermost = innermost.tb_next
    raised_there = innermost is not None and innermost.tb_frame is frame
    if not raised_there or innermost.tb_lineno != line:
        return None
    if isinstance(err, TypeError) and tracer_repr in str(err):
        return error
    if isinstance(err, ValueError) and "setting an array element" in str(err):
        return InPlaceUpdateError(
            at_line(
                "a traced value was written into a NumPy array (a[i] = traced) that comes "
                "from outside the traced function (a global, a closure, a helper in another "
                "module), and a NumPy array cannot hold traced values. Create the array "
                "inside the traced function (np.zeros(...)), or pass it in as an argument: "
                "a jitted function writes its arguments back to the caller",
                f"{frame.f_code.co_filename}:{line}",
            )
        )
    return None


def producer(value, var: Var | None = None) -> Eqn | None:
    """The equation of the trace being recorded that computed ``value`` (a tracer of it),
    or with ``var``, the one that computed ``var`` in ``value``'s trace; None for an
    argument, a constant, a value of another trace, or not a tracer. For structural facts
    a library function may use while tracing (``numpy.linalg.solve`` of a Cholesky
    factor); a value written into since is the write's, not the factor's."""
    if not isinstance(value, Tracer) or not value._trace.active:
        return None
    var = value._var if var is None else var
    for eqn in reversed(value._trace.eqns):
        if any(out is var for out in eqn.outputs):
            return eqn
    return None


def bind(prim: Primitive, *args, **params):
    """Apply ``prim``: record it in the innermost trace, or run it eagerly on arrays."""
    trace = current_trace()
    if trace is None:
        outs = _eager(prim, args, params)
    else:
        outs = _record(trace, prim, args, params)
    return outs if prim.multiple_results else outs[0]


def _eager(prim: Primitive, args, params):
    for arg in args:
        if isinstance(arg, Tracer):
            raise leaked_tracer_error(arg, prim.name)
    arrays = [np.asarray(a) for a in args]
    out_avals = prim.abstract_eval(*[aval_of(a) for a in arrays], **params)
    outs = prim.impl(*arrays, **params)
    return [np.asarray(o, dtype=a.dtype) for o, a in zip(outs, out_avals, strict=False)]


def _record(trace: Trace, prim: Primitive, args, params):
    source_info = user_frame_info()
    for arg in args:
        if isinstance(arg, Tracer) and not arg._trace.active:
            raise leaked_tracer_error(arg, prim.name)
    inputs = [trace.atom(a) for a in args]
    try:
        out_avals = prim.abstract_eval(*[a.aval for a in inputs], **params)
    except TypecheckError as err:
        raise TypecheckError(at_line(str(err), source_info)) from None
    values = [None] * len(out_avals)
    in_values = _known_values(trace, args)
    if in_values is not None and (trace.concrete or _folds_while_tracing(prim, params)):
        outs = prim.impl(*[np.asarray(v) for v in in_values], **params)
        values = [np.asarray(o, dtype=a.dtype) for o, a in zip(outs, out_avals, strict=False)]
    tracers = [Tracer(trace, aval, value) for aval, value in zip(out_avals, values, strict=False)]
    trace.eqns.append(Eqn(prim, inputs, [t._var for t in tracers], params, source_info))
    if trace.values is not None:
        trace.values.update((t._var, t._value) for t in tracers)
    return tracers


def _known_values(trace: Trace, args) -> list | None:
    """The values of ``args`` where every one is known, else None: asked first, as most
    operands of an abstract trace are not known and the first one answers."""
    values = []
    for arg in args:
        value = trace.value_of(arg)
        if value is None:
            return None
        values.append(value)
    return values


def _folds_while_tracing(prim: Primitive, params) -> bool:
    """Whether an abstract trace computes this equation's value when every input is
    known (arrays created inside the function, closure constants): Python code may then
    branch on it and index with it as with the NumPy array it stands for. Equations that
    run sub-programs (``jit_call`` compiles) or have side effects wait for run time."""
    return not prim.side_effects and not _holds_program(params.values())


def _holds_program(values) -> bool:
    return any(
        isinstance(v, (Jaxpr, ClosedJaxpr)) or (isinstance(v, tuple) and _holds_program(v))
        for v in values
    )


def trace_flat(fun, in_avals, values=None) -> tuple[ClosedJaxpr, list]:
    """Trace ``fun`` over flat arguments; return the closed jaxpr and the raw outputs.

    With ``values`` the trace is concrete: each tracer also carries its value.
    """
    with new_trace(concrete=values is not None) as trace:
        values = values if values is not None else [None] * len(in_avals)
        args = [trace.new_arg(aval, value) for aval, value in zip(in_avals, values, strict=False)]
        outs = fun(*args)
        return trace.to_jaxpr(outs), outs


def known_value(x):
    """The value of ``x`` if it is known while tracing (a NumPy value; a tracer of an eager
    trace, or one computed from constants), else None. A probe: unlike a conversion, an
    unknown value is no error."""
    if not isinstance(x, Tracer):
        return np.asarray(x)
    if not x._trace.active:
        raise leaked_tracer_error(x, "reading a value known while tracing")
    return None if x._value is None else np.asarray(x._value)


def leaked_tracer_error(tracer: Tracer, operation: str | None = None) -> LeakedTracerError:
    used = f"was used by {operation}" if operation else "was used"
    return LeakedTracerError(
        at_line(
            f"a traced value ({tracer.aval.str_short()}) {used} after the function that "
            "traced it returned. It probably escaped through a global variable, a closure "
            "or an attribute. Return it from the traced function instead, or pass it in "
            "as an argument.",
            user_frame_info(),
        )
    )


class Tracer:
    """An array value seen while tracing: its abstract value, and maybe its value."""

    # ``_mutable``: a handle on an array the program may write into (``x[i] = v``,
    # ``x += v``); 0-d results of operations are NumPy scalars, which are immutable.
    # ``_first_write``: the line of the first such write, for errors that name it.
    # ``_view``: for an array that is a view of another or has views of its own, where it
    # sits in the memory they share (``numpy_lib/views.py``); None for every other value.
    # ``_own_var``/``_own_value``: what ``_var``/``_value`` read, once a view is in sync.
    __slots__ = (
        "_trace", "aval", "_own_value", "_own_var", "weak_type", "_mutable", "_first_write",
        "_view",
    )  # fmt: skip
    # Higher than ndarray's so ``ndarray op tracer`` defers to the tracer.
    __array_priority__ = 1000
    __hash__ = None  # mutable-looking and array-like, as ndarray: not hashable

    def __init__(self, trace: Trace, aval: ShapedArray, value=None, mutable: bool | None = None):
        self._trace = trace
        self.aval = aval
        self._own_value = value
        self._own_var = Var(aval)
        self.weak_type = False
        self._mutable = aval.ndim > 0 if mutable is None else mutable
        self._first_write = None
        self._view = None

    @property
    def _var(self) -> Var:
        """The IR variable holding this array's value now (a view first catches up with
        writes into the memory it shares)."""
        if self._view is not None:
            self._view.sync(self)
        return self._own_var

    @property
    def _value(self):
        """The value known while tracing, or None."""
        if self._view is not None:
            self._view.sync(self)
        return self._own_value

    def alias(self, mutable: bool | None = None) -> Tracer:
        """A new handle on the same value: what NumPy's copies are, since a traced value
        never changes; a write into either handle rebinds only that one."""
        handle = Tracer(self._trace, self.aval, self._value, mutable)
        handle._own_var, handle.weak_type = self._var, self.weak_type
        return handle

    def rebind(self, new: Tracer, source_info: str | None) -> None:
        """Make this handle hold ``new``'s value: an in-place write, functionalized. Every
        reference to this object sees the write, as with a NumPy array; so does the
        array it is a view of, and every view of that array."""
        # Read ``new`` before the write: it may be a view of this same memory
        # (``np.copyto(x, x[::-1])``), which the write puts behind and would re-take.
        new = new.alias()
        if self._view is not None:
            self._view.write(new)
        self._own_var, self._own_value = new._var, new._value
        if self._first_write is None:
            self._first_write = source_info

    shape = property(lambda self: self.aval.shape)
    dtype = property(lambda self: self.aval.dtype)
    ndim = property(lambda self: self.aval.ndim)
    size = property(lambda self: self.aval.size)

    def __repr__(self):
        if self._value is not None:
            return f"Tracer<{self.aval.str_short()}>({self._value!r})"
        return f"Tracer<{self.aval.str_short()}>"

    def concrete_value(self, operation: str):
        """The value for a Python conversion, or a ConcretizationError naming the fix."""
        if self._value is not None and self._trace.active:
            return self._value
        if not self._trace.active:
            raise leaked_tracer_error(self, operation)
        error = ConcretizationError(
            at_line(
                f"{operation} needs a concrete value, but this is an abstract traced array "
                f"({self.aval.str_short()}) inside jit. Python control flow and conversions "
                "cannot depend on traced values. Use numpy.where(cond, a, b) (or "
                "numbax.cond) for a data-dependent choice, or mark the argument static with "
                "jit(f, static_argnums=...) if it is a configuration value.",
                user_frame_info(),
            )
        )
        # The frame that asked for the conversion (above the dunder method calling this).
        frame = sys._getframe(2)
        self._trace.refused_conversion = (repr(self), frame, frame.f_lineno, error)
        raise error

    def __bool__(self):
        return bool(self.concrete_value("bool() of a traced value (e.g. `if x > 0:`)"))

    def __int__(self):
        return int(self.concrete_value("int() of a traced value"))

    def __float__(self):
        return float(self.concrete_value("float() of a traced value"))

    def __complex__(self):
        return complex(self.concrete_value("complex() of a traced value"))

    def __index__(self):
        value = self.concrete_value("using a traced value as a Python index")
        if not dtypes.is_integer(np.asarray(value).dtype):
            raise NumbaxTypeError("only integer arrays can be used as an index")
        return int(value)

    def item(self):
        return self.concrete_value(".item() of a traced value").item()

    def tolist(self):
        return self.concrete_value(".tolist() of a traced value").tolist()


def replay(jaxpr: Jaxpr, consts, args) -> list:
    """Evaluate ``jaxpr`` by binding each equation: inside a trace this re-records the
    program (how transforms emit rewritten programs); outside, it runs eagerly.

    Into an abstract trace an equation whose operands have the types the jaxpr gives them
    is copied as it is (``_copied``): its output types are the jaxpr's, so the shape rules
    are not run again, and it keeps the line it was traced at. Transforms replay every
    program they make (``value_and_grad`` records a step's forward three times and its
    backward twice), and binding an equation is most of tracing's cost."""
    env = dict(zip(jaxpr.constvars, consts, strict=True))
    env.update(zip(jaxpr.invars, args, strict=True))
    trace = current_trace()
    copying = trace is not None and not trace.concrete and trace.values is None

    def read(atom):
        return atom.val if isinstance(atom, Literal) else env[atom]

    for eqn in jaxpr.eqns:
        operands = [read(a) for a in eqn.inputs]
        outs = _copied(trace, eqn, operands) if copying else None
        if outs is None:
            outs = bind(eqn.prim, *operands, **eqn.params)
            outs = outs if eqn.prim.multiple_results else [outs]
        env.update(zip(eqn.outputs, outs, strict=True))
    return [read(v) for v in jaxpr.outvars]


def _copied(trace: Trace, eqn: Eqn, operands) -> list | None:
    """``eqn`` recorded into the abstract ``trace`` on ``operands`` without its shape rule:
    new tracers of its output types; None where ``bind`` must record it (an operand of
    another type, an equation that folds on known values, a leaked tracer)."""
    inputs = []
    for operand, var in zip(operands, eqn.inputs, strict=True):
        if isinstance(operand, Tracer) and not operand._trace.active:
            return None
        atom = trace.atom(operand)
        if atom.aval != var.aval:
            return None
        inputs.append(atom)
    if _known_values(trace, operands) is not None and _folds_while_tracing(eqn.prim, eqn.params):
        return None
    tracers = [Tracer(trace, var.aval) for var in eqn.outputs]
    params = dict(eqn.params)  # its own, as bind's keywords make one
    trace.eqns.append(Eqn(eqn.prim, inputs, [t._var for t in tracers], params, eqn.source_info))
    return tracers
