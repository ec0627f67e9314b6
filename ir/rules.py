"""The one type of every per-primitive rule table.

Each concern (a transform, a pass, a backend's code generator) keeps its rules in a
``RuleTable`` keyed by ``Primitive``, registered right under the rule with one
decorator shape, as Autodidax writes ``jvp_rules[sin_p] = sin_jvp``::

    JVP_RULES = RuleTable("jvp", not_applicable=lambda prim: not prim.differentiable)

    @JVP_RULES.rule("sin")
    def _sin(primals, tangents): ...

A primitive may be named by its name: ``RuleTable.primitive`` is the one lookup that
turns a name into the registered ``Primitive`` (``table["sin"]``, ``"sin" in table`` and
``table.rule("sin")`` all go through it), so a table never holds a string key.

A rule may be registered for a primitive that its module registers later
(``registered_later=True``: the collectives' primitives exist only once
``numbax.distributed`` or a collective is used); it is held under the name and keyed by
the primitive as soon as that is registered.

A table states which primitives it must cover (every primitive, except those its
``not_applicable`` predicate names); ``missing()`` lists the others, and a test walks
``RuleTable.TABLES`` so that a primitive added without its rule fails, naming the table.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from .primitive import PRIMITIVES, Primitive


def _nothing_excepted(prim: Primitive) -> bool:
    return False


class RuleTable:
    """Rules keyed by ``Primitive``: ``table[prim]``, ``table.get(prim)``, ``prim in
    table``; filled only through ``table.rule(*prims)``.

    ``not_applicable(prim)`` is true for the primitives this table needs no rule for (say
    why where the table is made). With ``multiple=True`` a primitive holds a tuple of
    rules, tried in registration order (the simplifier's rewrites), and a primitive
    with none reads as ``()``.
    """

    TABLES: list[RuleTable] = []

    def __init__(
        self,
        name: str,
        *,
        not_applicable: Callable[[Primitive], bool] = _nothing_excepted,
        multiple: bool = False,
    ):
        self.name = name
        self.not_applicable = not_applicable
        self.multiple = multiple
        self._rules: dict[Primitive, object] = {}
        self._later: dict[str, tuple] = {}  # name -> (function, build) of a future primitive
        RuleTable.TABLES.append(self)

    @staticmethod
    def primitive(prim: Primitive | str) -> Primitive:
        """The ``Primitive`` of ``prim`` or of the primitive named ``prim``: the one
        place a table accepts a name."""
        if isinstance(prim, Primitive):
            return prim
        try:
            return PRIMITIVES[prim]
        except KeyError:
            raise KeyError(f"no primitive is registered under the name {prim!r}") from None

    def rule(
        self,
        *prims: Primitive | str,
        build: Callable[[Primitive, Callable], Callable] | None = None,
        replace: bool = False,
        registered_later: bool = False,
    ):
        """Decorator: the decorated function is the rule of each of ``prims`` (or, with
        ``build``, ``build(prim, function)`` is: a rule made from a formula, such as a
        transpose wrapped into a VJP rule). Returns the function unchanged.

        A second rule for a primitive is an error unless ``replace`` is true (a rule that
        wraps the one registered before it, such as a complex case around the real one);
        ``replace`` with nothing to replace is an error too. ``table.rule(p)(fn)``
        registers a rule built by a helper.
        """
        if not prims:
            raise TypeError(f"{self.name}: rule() needs at least one primitive")
        if registered_later:
            later = [p for p in prims if isinstance(p, str) and p not in PRIMITIVES]
            prims = [p for p in prims if p not in later]
        keys = [self.primitive(p) for p in prims]

        def register(fn):
            for name in later if registered_later else ():
                self._later[name] = (fn, build)
            for key in keys:
                made = fn if build is None else build(key, fn)
                if self.multiple:
                    self._rules[key] = (*self._rules.get(key, ()), made)
                    continue
                if replace != (key in self._rules):
                    state = "has no rule to replace" if replace else "already has a rule"
                    raise ValueError(f"{self.name}: primitive {key.name!r} {state}")
                self._rules[key] = made
            return fn

        return register

    def _settle(self) -> None:
        """Key the rules held by name by their primitives, once those are registered."""
        if not self._later:
            return
        for name in [name for name in self._later if name in PRIMITIVES]:
            fn, build = self._later.pop(name)
            self.rule(name, build=build)(fn)

    def __getitem__(self, prim: Primitive | str):
        self._settle()
        key = self.primitive(prim)
        if key in self._rules:
            return self._rules[key]
        if self.multiple:
            return ()
        raise KeyError(f"{self.name}: no rule for primitive {key.name!r}")

    def get(self, prim: Primitive | str, default=None):
        return self[prim] if prim in self else default

    def __contains__(self, prim: object) -> bool:
        self._settle()
        if isinstance(prim, str):
            prim = PRIMITIVES.get(prim)
        return prim in self._rules

    def __iter__(self) -> Iterator[Primitive]:
        self._settle()
        return iter(self._rules)

    def __len__(self) -> int:
        self._settle()
        return len(self._rules)

    def names(self) -> set[str]:
        """The names of the primitives that have a rule."""
        return {prim.name for prim in self}

    def missing(self) -> list[Primitive]:
        """The registered primitives this table should have a rule for and has not."""
        self._settle()
        return [
            prim
            for prim in PRIMITIVES.values()
            if prim not in self._rules and not self.not_applicable(prim)
        ]

    def __repr__(self) -> str:
        return f"RuleTable({self.name!r}, {len(self._rules)} rules)"


def any_primitive(prim: Primitive) -> bool:
    """``not_applicable`` of a table of optional rules (an optimisation that most
    primitives do without): no primitive needs one."""
    return True
