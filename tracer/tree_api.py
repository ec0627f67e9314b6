"""``numbax.tree``: the pytree functions under ``jax.tree``'s short names
(``numbax.tree.map`` is ``numbax.tree_util.tree_map``).

>>> import numbax
>>> numbax.tree.map(lambda x: x + 1, (1, [2]))
(2, [3])
>>> numbax.tree.leaves({"a": 1, "b": (2, 3)})
[1, 2, 3]
"""

from .pytree import tree_all as all  # noqa: A004 - jax.tree's names
from .pytree import tree_flatten as flatten
from .pytree import tree_leaves as leaves
from .pytree import tree_map as map  # noqa: A004
from .pytree import tree_reduce as reduce
from .pytree import tree_structure as structure
from .pytree import tree_transpose as transpose
from .pytree import tree_unflatten as unflatten

__all__ = ["all", "flatten", "leaves", "map", "reduce", "structure", "transpose", "unflatten"]
