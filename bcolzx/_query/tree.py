"""The expression language: tree nodes, operator names and the functions an expression may call.

An accepted expression becomes a small immutable tree of the nodes below
(:mod:`~bcolzx._query.parse` builds it from the text, with constants folded).
Operators are named by words (``'add'``, ``'lt'``...), mapped to the symbols
they are written with by :data:`BINARY_SYMBOLS` and :data:`COMPARE_SYMBOLS`;
calls name one of :data:`FUNCTIONS`, and an outermost ``sum``/``prod``
(:data:`REDUCTIONS`) is kept apart as a :class:`Reduction`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np

from bcolzx.errors import ExpressionError

__all__ = ["BINARY_SYMBOLS", "COMPARE_SYMBOLS", "FUNCTIONS", "MODULES", "REDUCTIONS", "Binary",
           "Call", "Compare", "Const", "Logical", "Name", "Node", "Reduction", "Unary",
           "conjuncts", "is_filter", "names_of"]

#: Accepted functions and their number of arguments: numexpr's documented set
#: (``where``, trigonometric and hyperbolic functions and their inverses,
#: ``arctan2``, ``log``, ``log10``, ``log1p``, ``exp``, ``expm1``, ``sqrt``,
#: ``abs``, ``conj``, ``real``, ``imag``, ``complex``, ``contains``) plus
#: ``fmod``, ``floor``, ``ceil``, ``isnan``, ``isinf`` and ``isfinite``, which
#: recent numexpr versions have too (with a numexpr that lacks one, expressions
#: using it run on the python VM), and the string predicates ``startswith``
#: and ``endswith``, which numexpr lacks (the python VM runs them).
FUNCTIONS: Mapping[str, int] = {
    **dict.fromkeys(
        ("sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh",
         "arcsinh", "arccosh", "arctanh", "log", "log10", "log1p", "exp", "expm1",
         "sqrt", "abs", "floor", "ceil", "conj", "real", "imag", "isnan", "isinf",
         "isfinite"), 1),
    **dict.fromkeys(("arctan2", "fmod", "complex", "contains", "startswith", "endswith"), 2),
    "where": 3,
}

#: Reductions, numexpr's: accepted only as the outermost call, with one
#: positional argument and an optional constant ``axis=`` keyword.
REDUCTIONS: tuple[str, ...] = ("sum", "prod")
#: Module prefixes accepted before a function name, as legacy bcolz's
#: documented expressions write them: ``np.sin(a)``, ``numpy.log(b)``,
#: ``da.sum(c)`` (dask.array).  The prefix only names the function; nothing
#: is looked up or imported.
MODULES: tuple[str, ...] = ("np", "numpy", "da")

#: The binary operators by name, and how they are written.
BINARY_SYMBOLS: Mapping[str, str] = {
    "add": "+", "sub": "-", "mul": "*", "truediv": "/", "floordiv": "//", "mod": "%",
    "pow": "**", "and": "&", "or": "|", "xor": "^", "lshift": "<<", "rshift": ">>",
}
#: The comparisons by name, and how they are written.
COMPARE_SYMBOLS: Mapping[str, str] = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==",
                                      "ne": "!="}

# -- the nodes -------------------------------------------------------------------


class Name(NamedTuple):
    """A variable."""

    id: str


class Const(NamedTuple):
    """A constant: a Python int, float, complex, bool, str or bytes (typed by
    numexpr's literal rules), or a NumPy scalar (typed by its dtype)."""

    value: Any


class Unary(NamedTuple):
    """``op`` is one of 'neg', 'pos', 'invert' (``~``) and 'not'."""

    op: str
    operand: Node


class Binary(NamedTuple):
    """``op`` is one of the keys of :data:`BINARY_SYMBOLS`."""

    op: str
    left: Node
    right: Node


class Compare(NamedTuple):
    """One comparison; a chained one becomes a ``Logical('and', ...)`` of these."""

    op: str
    left: Node
    right: Node


class Logical(NamedTuple):
    """Element-wise ``and`` / ``or`` (the keywords) of two or more operands."""

    op: str
    operands: tuple[Node, ...]


class Call(NamedTuple):
    """A call of one of :data:`FUNCTIONS`."""

    func: str
    args: tuple[Node, ...]


Node = Name | Const | Unary | Binary | Compare | Logical | Call


class Reduction(NamedTuple):
    """An outermost ``sum(...)`` or ``prod(...)``.

    ``axis`` is the ``axis=`` given, or None.  ``qualified`` tells whether
    the call named a module (``np.sum``, ``da.sum``): a qualified reduction,
    like numexpr's, reduces every item when no axis is given, while a bare
    ``sum(x)`` on the python and dask machines is Python's ``sum``, which
    adds up the rows (the first axis), as legacy bcolz evaluated it.
    """

    op: str
    axis: int | None
    qualified: bool

    def axis_for(self, vm: str) -> int | None:
        """The axis reduced on `vm` (None: every item).

        Raises
        ------
        None
        """
        if self.axis is not None or self.qualified or vm == "numexpr":
            return self.axis
        return 0

    def apply(self, value: np.ndarray, axis: int | None) -> np.ndarray:
        """Reduce `value` (a NumPy array) over `axis`.

        Raises
        ------
        ExpressionError
            If `value` has no such axis.
        """
        func = np.sum if self.op == "sum" else np.prod
        if np.ndim(value) == 0:
            axis = None
        try:
            return np.asarray(func(value, axis=axis))
        except np.exceptions.AxisError as exc:
            raise ExpressionError(f"{self.op}(): {exc}") from None


def is_filter(node: Node) -> bool:
    """Whether `node` is a *filter*: comparisons of names and constants joined
    by ``&``, ``|``, ``^``, ``~``, ``and``, ``or`` and ``not`` (booleans, one
    per row, at every node)."""
    if isinstance(node, Compare):
        return all(isinstance(side, (Name, Const)) for side in (node.left, node.right))
    if isinstance(node, Logical):
        return all(map(is_filter, node.operands))
    if isinstance(node, Unary) and node.op in ("invert", "not"):
        return is_filter(node.operand)
    if isinstance(node, Binary) and node.op in ("and", "or", "xor"):
        return is_filter(node.left) and is_filter(node.right)
    return False


def conjuncts(node: Node) -> list[Node]:
    """The parts a filter joins with ``&`` or ``and`` at its top (itself alone
    if it is not such a conjunction)."""
    if isinstance(node, Logical) and node.op == "and":
        return [part for o in node.operands for part in conjuncts(o)]
    if isinstance(node, Binary) and node.op == "and":
        return conjuncts(node.left) + conjuncts(node.right)
    return [node]


def names_of(node: Node) -> set[str]:
    """The names `node` reads."""
    if isinstance(node, Name):
        return {node.id}
    if isinstance(node, Unary):
        return names_of(node.operand)
    if isinstance(node, (Binary, Compare)):
        return names_of(node.left) | names_of(node.right)
    if isinstance(node, Logical):
        return set().union(*map(names_of, node.operands))
    if isinstance(node, Call):
        return set().union(*map(names_of, node.args))
    return set()
