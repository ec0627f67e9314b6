"""Rendering the picture of a program (``Lowered.as_svg``) with Graphviz.

The DOT text itself comes from ``ir/graph.py`` and needs nothing installed; drawing it
needs the ``graphviz`` Python package (``pip install 'numbax[graph]'``) and Graphviz's
``dot`` program, which the package runs.
"""

from __future__ import annotations

from .ir.errors import MissingDependencyError

_INSTALL = (
    "Install both: `pip install graphviz` (or `pip install 'numbax[graph]'`) and the dot "
    "program (`apt-get install graphviz`, `brew install graphviz`, `conda install "
    "graphviz`). as_dot() needs neither: it returns the DOT text to render elsewhere."
)


def render_svg(dot: str) -> str:
    """The SVG drawing of the DOT text ``dot``, laid out by Graphviz's ``dot``."""
    try:
        import graphviz
    except ImportError:
        raise MissingDependencyError(
            "as_svg() draws the program with Graphviz, but the graphviz Python package is "
            f"not installed. {_INSTALL}"
        ) from None
    try:
        return graphviz.Source(dot).pipe(format="svg", encoding="utf-8")
    except graphviz.ExecutableNotFound:
        raise MissingDependencyError(
            "as_svg() draws the program with Graphviz, but its dot program is not on the "
            f"PATH. {_INSTALL}"
        ) from None
