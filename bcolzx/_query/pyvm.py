"""The python virtual machine: evaluate an expression tree on NumPy arrays, node by node.

Each node is one typed operation of :mod:`~bcolzx._query.kinds` (one NumPy
ufunc, or numexpr's formula for it), so the results have numexpr's dtypes
and values.  The same walk folds constant sub-trees at compile time
(:mod:`~bcolzx._query.parse`) and, recording the dtype of every node, tells
the numexpr VM what each node computes in (:mod:`~bcolzx._query.numexpr_vm`).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from bcolzx._query.kinds import (
    Literal,
    Operand,
    array_of,
    binary,
    call,
    cast,
    compare,
    kind_of,
    logical,
    unary,
)
from bcolzx._query.tree import Binary, Compare, Const, Logical, Name, Node, Unary

__all__ = ["Evaluator", "python_vm"]


class Evaluator:
    """Evaluate a tree on a namespace of arrays; optionally record node dtypes.

    Parameters
    ----------
    namespace : mapping
        Values of the names: arrays already cast to their kinds (see
        :func:`python_vm`).
    record : dict, optional
        Filled with ``id(node) -> dtype`` for every node evaluated.
    """

    def __init__(self, namespace: Mapping[str, np.ndarray],
                 record: dict[int, np.dtype] | None = None):
        self.namespace = namespace
        self.record = record

    def eval(self, node: Node) -> Operand:
        """The value of `node`: an array, or a :class:`~bcolzx._query.kinds.Literal`.

        Raises
        ------
        ExpressionError
            If an operation does not apply to its operands.
        KeyError
            If a name is not in the namespace.
        """
        result = self._eval(node)
        if self.record is not None:
            self.record[id(node)] = array_of(result).dtype
        return result

    def _eval(self, node: Node) -> Operand:
        if isinstance(node, Name):
            return self.namespace[node.id]
        if isinstance(node, Const):
            if isinstance(node.value, np.generic):
                return np.asarray(node.value)
            return Literal(node.value)
        if isinstance(node, Unary):
            return unary(node.op, self.eval(node.operand))
        if isinstance(node, Binary):
            return binary(node.op, self.eval(node.left), self.eval(node.right))
        if isinstance(node, Compare):
            return compare(node.op, self.eval(node.left), self.eval(node.right))
        if isinstance(node, Logical):
            return logical(node.op, [self.eval(o) for o in node.operands])
        return call(node.func, [self.eval(a) for a in node.args])


def python_vm(tree: Node, namespace: Mapping[str, np.ndarray],
              record: dict[int, np.dtype] | None = None) -> np.ndarray:
    """Evaluate `tree` on `namespace` (arrays by name), as the python VM does.

    Operands are cast to their numexpr kinds first; floating point warnings
    are silenced (NaN and infinities are values, as in numexpr).

    Parameters
    ----------
    tree : Node
        A folded tree (:attr:`Expression.tree <bcolzx._query.expr.Expression>`).
    namespace : mapping
        An array for each name of the tree.
    record : dict, optional
        Filled with ``id(node) -> dtype`` for every node.

    Returns
    -------
    numpy.ndarray

    Raises
    ------
    ExpressionError
        If an operation does not apply to its operands.
    KeyError
        If a name of the tree is not in `namespace`.

    Examples
    --------
    >>> import numpy as np
    >>> from bcolzx._query.tree import Binary, Const, Name
    >>> python_vm(Binary("mul", Name("a"), Const(2)), {"a": np.arange(3, dtype=np.int8)})
    array([0, 2, 4], dtype=int32)
    """
    env = {}
    for name, value in namespace.items():
        kind = kind_of(value.dtype)
        env[name] = value if kind is None else cast(value, kind)
    with np.errstate(all="ignore"):
        return np.asarray(array_of(Evaluator(env, record).eval(tree)))
