"""What a call's results may share: never the program's constants, its arguments or each
other. Every backend's executable, and the tiered first-call interpreter, hands its
results through one ``ResultCopies`` built once from the program it runs.

A result is an array the caller owns, as a NumPy function's new array is: writing into
it changes no argument, no other result and no later call's result. Most results are
new arrays already (a kernel's output buffer, or a pooled one no caller can see any more:
``cpu/executable.OutputPool``) and cost nothing here. The others are found from what
memory each value of the program may be in (``compiled_storage``: the memory plan's own
proof, ``passes.memory.Liveness.storage``):

- a result that is an argument or a constant of the program, or a value returned at an
  earlier position, is copied on every call (``f(x) = x``, ``(x * 2, x * 2)`` after CSE,
  a folded ``np.eye(3)``);
- a result that may be in an argument's, a constant's or an earlier result's memory (a
  reshape or a row slice a backend makes as a view, a branch or a loop that may hand its
  operand back unchanged) is compared with those at run time (``may_share``) and copied
  where it does;
- every other result is returned as it is.

NumPy's reference implementations, which the interpreters run, may return a view of any
operand (``np.transpose``, a basic slice, ``np.asarray`` of the same dtype) and return a
literal's own array: there every value may be in its operands' memory, literals
included (``numpy_storage``).

The trailing ``written_back`` results are the final values of the arguments the function
writes into: the caller copies each into its argument and drops it, so they may share
anything. The copies above happen before that write-back, so a result that was the
argument's entry value (``before = B.copy(); B[...] = 0; return before``) is copied
before ``B`` is overwritten.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np

from ..ir.core import Jaxpr, Literal, Var
from ..passes.memory import Liveness

# A value (Var, or Literal for the interpreters) -> the memories it may be in: the
# program's constvars and invars, literals, and the outputs of eqns that made new memory.
Storage = Mapping[object, frozenset]


def compiled_storage(jaxpr: Jaxpr) -> Storage:
    """The memories a compiled program's values may be in: a backend makes a view only
    where the memory plan allows it (``passes.memory.makes_view``), and a literal result
    is a new array."""
    return Liveness(jaxpr).storage


def numpy_storage(jaxpr: Jaxpr) -> Storage:
    """The memories an interpreted program's values may be in: any operand's, literals
    included."""
    storage: dict = {var: frozenset([var]) for var in (*jaxpr.constvars, *jaxpr.invars)}

    def of(atom) -> frozenset:
        return storage.get(atom) or frozenset([atom])  # a literal is memory of its own

    for eqn in jaxpr.eqns:
        operands = frozenset().union(*map(of, eqn.inputs))
        for var in eqn.outputs:
            storage[var] = operands | {var}
    for atom in jaxpr.outvars:
        if isinstance(atom, Literal):
            storage[atom] = frozenset([atom])
    return storage


class ResultCopies:
    """Which results of ``jaxpr`` a call copies, always or where they share memory.

    ``apply(results, consts, args)`` returns the results the caller may own.
    """

    def __init__(self, jaxpr: Jaxpr, storage: Storage, written_back: int = 0):
        owned = jaxpr.outvars[: len(jaxpr.outvars) - written_back]
        literals = list(
            dict.fromkeys(
                root
                for atom in owned
                for root in storage.get(atom, ())
                if isinstance(root, Literal)
            )
        )
        outside = [*jaxpr.constvars, *jaxpr.invars, *literals]
        self._literal_values = [literal.val for literal in literals]
        # (result position, copied always, outside positions, earlier result positions)
        self._steps: list[tuple[int, bool, tuple[int, ...], tuple[int, ...]]] = []
        memories: list[frozenset] = []  # of each result as returned
        for position, atom in enumerate(owned):
            memory = storage.get(atom, frozenset())
            if (isinstance(atom, Var) and atom in owned[:position]) or atom in outside:
                self._steps.append((position, True, (), ()))
                memories.append(frozenset())  # a new copy
                continue
            sharing_outside = tuple(k for k, root in enumerate(outside) if root in memory)
            earlier = tuple(k for k, other in enumerate(memories) if other & memory)
            if sharing_outside or earlier:
                self._steps.append((position, False, sharing_outside, earlier))
            memories.append(memory)

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
        outside = (*consts, *args, *self._literal_values)
        for position, always, sharing_outside, earlier in self._steps:
            result = results[position]
            if (
                always
                or any(may_share(result, outside[k]) for k in sharing_outside)
                or any(may_share(result, results[k]) for k in earlier)
            ):
                results[position] = copy(result)
        return tuple(results) if returned is tuple else results
