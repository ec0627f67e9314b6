"""What a call's results may share: never the program's constants, its arguments or each
other. Every backend's executable, and the tiered first-call interpreter, hands its
results through this module's rule before the caller sees them (and before ``api``
writes mutated arguments back).

A result is an array the caller owns, as a NumPy function's new array is: writing into
it changes no argument, no other result and no later call's result. Where NumPy would
return the argument itself or a view of it (``lambda x: x``, ``x.reshape(...)``), the
result is a copy, as in JAX. Most results are new arrays already (a kernel's output
buffer, or a pooled one no caller can see any more: ``cpu/executable.OutputPool``) and
cost nothing here. The others:

- A compiled program (``ResultCopies``) is decided once, from what memory each of its
  values may be in (``compiled_storage``: the memory plan's own proof,
  ``passes.memory.Liveness.storage``). A result that is an argument or a constant of the
  program, or a value returned at an earlier position, is copied on every call
  (``f(x) = x``, ``(x * 2, x * 2)`` after CSE, a folded ``np.eye(3)``). A result that
  may be in an argument's, a constant's or an earlier result's memory (a reshape or a row
  slice a backend makes as a view, a branch or a loop that may hand its operand back
  unchanged) is compared with those at run time (``may_share``) and copied where it
  does. Every other result is returned as it is.
- The interpreters (``InterpreterResults``) run NumPy's reference implementations, which
  decide at run time whether they return a view (``np.transpose``, a basic slice,
  ``np.asarray`` of the same dtype) and return a literal's own array: each call looks at
  the array that owns each result's memory, and copies a result whose memory belongs to
  an argument, a constant, a literal or an earlier result.

The trailing ``len(writes)`` results are the final values of the arguments the function
writes into (``writes``: their positions, in the order ``api`` writes them back): the
caller copies each into its argument and drops it, so it may share anything but the
memory of an argument written back before it (``t = A.copy(); np.copyto(A, B);
np.copyto(B, t)``: ``B``'s final value is ``A``'s entry value, which the write-back into
``A`` overwrites first). The copies happen before that write-back, so a result that was
an argument's entry value (``before = B.copy(); B[...] = 0; return before``) is copied
before ``B`` is overwritten.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from ..ir.core import ClosedJaxpr, Jaxpr, Literal, Var
from ..passes.memory import Liveness

# A value -> the memories it may be in: the program's constvars and invars, and the
# outputs of the eqns that made new memory.
Storage = Mapping[Var, frozenset]


def compiled_storage(program: Jaxpr | Liveness) -> Storage:
    """The memories a compiled program's values may be in: a backend makes a view only
    where the memory plan allows it (``passes.memory.makes_view``), and a literal result
    is a new array. ``program`` is the jaxpr, or its liveness where the backend made it
    already (the memory plan's proof)."""
    liveness = program if isinstance(program, Liveness) else Liveness(program)
    return liveness.storage


class ResultCopies:
    """Which results of a compiled program ``jaxpr`` a call copies: always, or where
    they share memory at run time.

    ``apply(results, consts, args)`` returns the results the caller may own; a program
    whose results are all new memory has no steps (``bool(copies)`` is false).
    """

    def __init__(self, jaxpr: Jaxpr, storage: Storage, writes: Sequence[int] = ()):
        count = len(jaxpr.outvars) - len(writes)
        outside = {var: k for k, var in enumerate((*jaxpr.constvars, *jaxpr.invars))}
        # (result position, copied always, outside positions, earlier result positions)
        self._steps: list[tuple[int, bool, tuple[int, ...], tuple[int, ...]]] = []
        self._add_owned(jaxpr.outvars[:count], storage, outside)
        written = [jaxpr.invars[w] for w in writes]
        self._add_written(jaxpr.outvars[count:], written, count, storage, outside)

    def _add_owned(self, owned, storage: Storage, outside: dict) -> None:
        returned: set[Var] = set()
        holders: dict[Var, list[int]] = defaultdict(list)  # memory -> results in it
        for position, atom in enumerate(owned):
            if not isinstance(atom, Var):
                continue  # a literal result is a new array
            if atom in returned or atom in outside:
                self._steps.append((position, True, (), ()))
                continue  # the copy is new memory
            returned.add(atom)
            memory = storage.get(atom, frozenset())
            sharing_outside = tuple(sorted(outside[root] for root in memory if root in outside))
            earlier = tuple(sorted({k for root in memory for k in holders.get(root, ())}))
            if sharing_outside or earlier:
                self._steps.append((position, False, sharing_outside, earlier))
            for root in memory:
                holders[root].append(position)

    def _add_written(self, values, arguments, first: int, storage: Storage, outside) -> None:
        """A written-back value is copied only where it may be in the memory of an
        argument written back before it, which that write-back overwrites first."""
        overwritten: dict[Var, int] = {}  # argument -> its outside position
        for position, (atom, argument) in enumerate(
            zip(values, arguments, strict=True), start=first
        ):
            memory = storage.get(atom, frozenset()) if isinstance(atom, Var) else frozenset()
            sharing = tuple(sorted(overwritten[root] for root in memory if root in overwritten))
            if atom in overwritten:
                self._steps.append((position, True, (), ()))
            elif sharing:
                self._steps.append((position, False, sharing, ()))
            overwritten[argument] = outside[argument]

    def __bool__(self) -> bool:
        return bool(self._steps)

    def apply(
        self,
        results: Sequence,
        consts: Sequence,
        args: Sequence,
        copy: Callable = np.copy,
        may_share: Callable = np.may_share_memory,
    ) -> Sequence:
        """``results`` with each one that shares memory it should not replaced by a copy
        (``copy``: a device copy on the cuda backend, with its ``may_share``)."""
        if not self._steps:
            return results
        returned, results = type(results), list(results)
        outside = (*consts, *args)
        for position, always, sharing_outside, earlier in self._steps:
            result = results[position]
            if (
                always
                or any(may_share(result, outside[k]) for k in sharing_outside)
                or any(may_share(result, results[k]) for k in earlier)
            ):
                results[position] = copy(result)
        return tuple(results) if returned is tuple else results


class InterpreterResults:
    """The interpreters' rule: ``apply(results, args)`` copies each result whose memory
    belongs to an argument, a constant, a literal of ``closed`` (its sub-jaxprs'
    included: a branch may return one) or an earlier result, or to a buffer NumPy does
    not name (a strided view of another object), found by identity of the array that
    owns it."""

    def __init__(self, closed: ClosedJaxpr, writes: Sequence[int] = ()):
        self._owned = len(closed.jaxpr.outvars) - len(writes)
        self._writes = tuple(writes)
        held = [*closed.consts, *(literal.val for literal in _literals(closed.jaxpr))]
        held = [value for value in held if isinstance(value, np.ndarray)]
        self._program = {id(_memory_owner(value)) for value in held}
        self._held = held  # the ids above stay theirs while the program lives

    def apply(self, results: Sequence, args: Sequence) -> list:
        results = list(results)
        program = self._program
        taken = {id(_memory_owner(a)) for a in args if isinstance(a, np.ndarray)}
        for position in range(self._owned):
            owner = _memory_owner(results[position])
            shared = id(owner) in taken or id(owner) in program
            if shared or not isinstance(owner, np.ndarray):
                results[position] = owner = np.copy(results[position])
            taken.add(id(owner))
        overwritten: set[int] = set()  # the arguments written back before
        for position, argument in enumerate(self._writes, start=self._owned):
            owner = _memory_owner(results[position])
            if id(owner) in overwritten or not isinstance(owner, np.ndarray):
                results[position] = np.copy(results[position])
            if isinstance(args[argument], np.ndarray):
                overwritten.add(id(_memory_owner(args[argument])))
        return results


def _memory_owner(array):
    """The array owning ``array``'s memory (NumPy points a view's ``base`` at it), or the
    foreign object a view's ``base`` is (a buffer, a strided view's interface)."""
    while isinstance(array.base, np.ndarray):
        array = array.base
    return array if array.base is None else array.base


def _literals(jaxpr: Jaxpr):
    """Every literal of ``jaxpr`` and of the jaxprs its eqns hold."""
    for eqn in jaxpr.eqns:
        yield from (atom for atom in eqn.inputs if isinstance(atom, Literal))
        for value in eqn.params.values():
            for sub in value if isinstance(value, tuple | list) else (value,):
                if isinstance(sub, ClosedJaxpr):
                    sub = sub.jaxpr
                if isinstance(sub, Jaxpr):
                    yield from _literals(sub)
    yield from (atom for atom in jaxpr.outvars if isinstance(atom, Literal))
