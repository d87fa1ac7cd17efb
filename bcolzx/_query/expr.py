"""Compiled expressions: :func:`compile_expression`, the :class:`Expression`, the operand check.

An expression string is data, not code: :func:`compile_expression` parses
it, checks it against a whitelist and folds its constants
(:mod:`~bcolzx._query.parse`) into a small tree (:mod:`~bcolzx._query.tree`),
and caches the :class:`Expression`.  Nothing outside the whitelist
(:data:`FUNCTIONS`, :data:`REDUCTIONS`, names, numbers, strings in
comparisons, operators) is ever evaluated.

Two virtual machines evaluate it:

``'python'``
    Our own evaluator (:mod:`~bcolzx._query.pyvm`), one NumPy ufunc per node,
    with numexpr's typing rules (:mod:`~bcolzx._query.kinds`): legacy bcolz
    evaluated with numexpr, so those are the reference.

``'numexpr'``
    :func:`numexpr.evaluate` (imported on first use) on a translation of the
    tree (:mod:`~bcolzx._query.numexpr_vm`); where numexpr cannot give the
    python VM's result, the python VM evaluates instead, transparently.

Both VMs give the same dtype and the same values for arithmetic,
comparisons, logic, ``where`` and NaN placement; transcendental functions
(``sin``, ``exp``, ``**`` of floats...) come from different math libraries
and agree to within a few units in the last place.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import numpy as np

from bcolzx._format import strings
from bcolzx._query import numexpr_vm, parse
from bcolzx._query.parse import MAX_DEPTH, MAX_LENGTH
from bcolzx._query.pyvm import python_vm
from bcolzx._query.tree import FUNCTIONS, MODULES, REDUCTIONS, Node, Reduction
from bcolzx.errors import ExpressionError, UndefinedNameError

__all__ = ["FUNCTIONS", "MAX_DEPTH", "MAX_LENGTH", "MODULES", "REDUCTIONS", "VMS", "Expression",
           "Reduction", "check_operands", "compile_expression"]

#: The virtual machines of :meth:`Expression.evaluate`.
VMS = ("python", "numexpr")


class Expression:
    """A validated, compiled expression; build it with :func:`compile_expression`.

    Attributes
    ----------
    text : str
        The expression as given.
    names : tuple of str
        The variables it references, in order of first appearance (function
        names excluded).
    tree : Node
        The folded tree evaluated by the VMs (for a reduction, its argument's).
    reduction : Reduction or None
        The outermost ``sum``/``prod``, if any.
    inner : Expression
        The expression without its reduction (``self`` when there is none):
        what block-wise evaluation computes on each block before reducing.
    """

    __slots__ = ("inner", "names", "reduction", "text", "tree")

    def __init__(self, text: str, names: tuple[str, ...], tree: Node,
                 reduction: Reduction | None = None, inner: Expression | None = None):
        self.text = text
        self.names = names
        self.tree = tree
        self.reduction = reduction
        self.inner = self if inner is None else inner

    def __repr__(self) -> str:
        return f"Expression({self.text!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Expression) and other.text == self.text

    def __hash__(self) -> int:
        return hash((Expression, self.text))

    def _arrays(self, namespace: Mapping[str, Any]) -> dict[str, np.ndarray]:
        arrays = {}
        for name in self.names:
            try:
                arrays[name] = np.asarray(namespace[name])
            except KeyError:
                raise UndefinedNameError(f"name {name!r} in expression {self.text!r} is "
                                         "not defined") from None
        return arrays

    def evaluate(self, namespace: Mapping[str, Any], vm: str = "python") -> np.ndarray:
        """Evaluate on arrays (and scalars) that broadcast together.

        Parameters
        ----------
        namespace : mapping
            Values of the names: NumPy arrays or scalars (taken as
            ``numpy.asarray(value)``).  Extra entries are ignored.
        vm : {'python', 'numexpr'}
            The virtual machine; see the module documentation.

        Returns
        -------
        numpy.ndarray
            The result; 0-d when every value is a scalar.

        Raises
        ------
        ExpressionError
            If a name is missing, an operator does not apply to the dtypes,
            or `vm` is 'numexpr' and numexpr is not installed.
        ValueError
            If `vm` is unknown or the arrays do not broadcast.

        Examples
        --------
        >>> import numpy as np
        >>> e = compile_expression("(a < 3) & (b > 0.5)")
        >>> e.evaluate({"a": np.arange(5), "b": np.array([1., 0., 1., 1., 1.])})
        array([ True, False,  True, False, False])
        """
        if vm not in VMS:
            raise ValueError(f"unknown virtual machine {vm!r}; choose one of {VMS}")
        if self.reduction is not None:
            red = self.reduction
            return red.apply(self.inner.evaluate(namespace, vm), red.axis_for(vm))
        arrays = self._arrays(namespace)
        if vm == "numexpr":
            result = numexpr_vm.evaluate(self, arrays)
            if result is not None:
                return result
        return python_vm(self.tree, arrays)

    def dtype(self, dtypes: Mapping[str, np.dtype | str | type]) -> np.dtype:
        """The dtype of the result on inputs of `dtypes`, without evaluating data.

        Parameters
        ----------
        dtypes : mapping
            The dtype of each name.

        Returns
        -------
        numpy.dtype
            The same for both virtual machines.

        Raises
        ------
        ExpressionError
            If a name is missing or an operator does not apply to the dtypes.
        TypeError
            If a value is not a dtype.

        Examples
        --------
        >>> compile_expression("a / 2").dtype({"a": "int8"})
        dtype('float64')
        """
        empty = {}
        for name in self.names:
            if name not in dtypes:
                raise ExpressionError(f"name {name!r} in expression {self.text!r} has no "
                                      "dtype")
            empty[name] = np.empty(0, np.dtype(dtypes[name]))
        dtype = python_vm(self.tree, empty).dtype
        if self.reduction is not None:
            dtype = self.reduction.apply(np.zeros(1, dtype), None).dtype
        return dtype


def compile_expression(text: str) -> Expression:
    """Parse, validate and fold an expression (cached).

    Parameters
    ----------
    text : str
        The expression, e.g. ``"(a < 5) & (b > 1)"``.  Accepted: names,
        numbers, strings (for comparisons), the arithmetic, bitwise, shift and
        comparison operators (chained comparisons too), ``and``/``or``/``not``
        (element-wise), and calls of :data:`FUNCTIONS` with positional
        arguments.

    Returns
    -------
    Expression

    Raises
    ------
    ExpressionError
        If the text is not a valid expression or uses anything outside the
        whitelist (attributes, indexing, lambdas, comprehensions, keyword
        arguments, other functions, names starting with '_', ...), is longer
        than :data:`MAX_LENGTH` or deeper than :data:`MAX_DEPTH`, or compares
        a bare ``&``/``|``/``^`` expression (``a < 5 & b > 1``, which means
        ``a < (5 & b) > 1``).
    TypeError
        If `text` is not a str.

    Examples
    --------
    >>> compile_expression("0 < a < 5 and b != 0").names
    ('a', 'b')
    """
    if not isinstance(text, str):
        raise TypeError(f"an expression must be a str, not {type(text).__name__}")
    return _compile(text)


@functools.lru_cache(maxsize=512)
def _compile(text: str) -> Expression:
    body = parse.parse(text)
    outer = parse.outer_reduction(body, text)
    if outer is not None:
        reduction, argument = outer
        inner = _compile(argument)
        return Expression(text, inner.names, inner.tree, reduction, inner)
    names, tree = parse.build(body, text)
    return Expression(text, names, tree)


def check_operands(columns: Mapping[str, Any]) -> None:
    """Refuse operands an expression cannot compute on: columns of Python objects.

    Called before any block is read, so an object column (pickled) is never
    unpickled for a query.

    Parameters
    ----------
    columns : mapping
        The expression's array operands, by name.

    Raises
    ------
    ExpressionError
        If one of them has object dtype (or a structured dtype with objects).
    """
    for name, column in columns.items():
        dtype = getattr(column, "dtype", None)
        if dtype is not None and np.dtype(dtype).hasobject and not strings.is_string(dtype):
            raise ExpressionError(
                f"{name!r} holds Python objects (dtype {dtype}): expressions compute on numbers, "
                "booleans, strings and dates only; select rows with a condition on other "
                "columns and read the object column with the rows it returns")
