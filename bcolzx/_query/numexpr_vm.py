"""The numexpr virtual machine: a tree translated to numexpr source, once per expression and dtypes.

:func:`evaluate` runs :func:`numexpr.evaluate` (numexpr is imported on first
use) on a fully parenthesised translation of the tree, with
``optimization='none'`` so that ``x / 3.0`` really divides.  Where numexpr
cannot give the python VM's result (:mod:`~bcolzx._query.pyvm`), it answers
None and the python VM evaluates instead: for dtypes numexpr does not
support or would convert lossily (uint64, longdouble, datetime64, str,
non-native byte order), for integer ``//``, ``%`` and ``**`` (numexpr kills
the process with SIGFPE on ``INT_MIN // -1`` and computes integer powers in
floating point), for complex ``**`` and complex functions (numexpr has its
own complex library), for ``and``/``or``/``not`` of non-booleans, for names
numexpr reserves (``sum``, ``max``...), for ``contains``, and for anything
the installed numexpr fails to compile or types differently.  A *filter*,
comparisons of names and constants joined by ``&``, ``|``, ``^``, ``~``,
``and``, ``or`` and ``not`` (a query's usual condition), goes to the python VM
too: it has no arithmetic for numexpr to fuse, and NumPy's comparisons and
boolean operations are the faster (3 to 15 times numexpr 2.14's on blocks of
131,072 rows, measured by ``bcolzx bench``'s query workloads).  The decision
(a :func:`plan`) is made once per expression and input dtypes, and cached.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from bcolzx._query.kinds import BOOL, COMPLEX, INT, LONG, Literal
from bcolzx._query.pyvm import python_vm
from bcolzx._query.tree import (
    BINARY_SYMBOLS,
    COMPARE_SYMBOLS,
    Binary,
    Call,
    Compare,
    Const,
    Logical,
    Name,
    Node,
    Unary,
    is_filter,
)
from bcolzx.errors import ExpressionError

if TYPE_CHECKING:
    from bcolzx._query.expr import Expression

__all__ = ["Plan", "evaluate", "plan"]

#: Input dtypes numexpr computes exactly as the python VM does (after its casts);
#: bytes strings too.
_NUMEXPR_DTYPES = frozenset(np.dtype(t) for t in (
    np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
    np.float16, np.float32, np.float64, np.complex64, np.complex128))


def _import_numexpr() -> Any:
    try:
        import numexpr
    except ImportError as exc:
        raise ExpressionError("the 'numexpr' virtual machine needs numexpr, which is not "
                              "installed; use vm='python'") from exc
    return numexpr


class Plan(NamedTuple):
    """What numexpr evaluates: the text and the constants it names."""

    text: str
    constants: dict[str, np.ndarray]


class _UntranslatableError(Exception):
    """The tree holds something numexpr would not compute as the python VM does."""


class _Translator:
    """Turn a tree into numexpr source, fully parenthesised."""

    def __init__(self, dtypes: Mapping[int, np.dtype], reserved: frozenset[str]):
        self.dtypes = dtypes
        self.reserved = reserved
        self.constants: dict[str, np.ndarray] = {}

    def kind(self, node: Node) -> np.dtype:
        return self.dtypes[id(node)]

    def source(self, node: Node) -> str:
        if isinstance(node, Name):
            if node.id in self.reserved:
                raise _UntranslatableError(node.id)
            return node.id
        if isinstance(node, Const):
            return self.constant(node.value)
        if isinstance(node, Unary):
            return self.unary(node)
        if isinstance(node, Binary):
            return self.binary(node)
        if isinstance(node, Compare):
            left, right = self.source(node.left), self.source(node.right)
            return f"({left} {COMPARE_SYMBOLS[node.op]} {right})"
        if isinstance(node, Logical):
            if any(self.kind(o) != BOOL for o in node.operands):
                raise _UntranslatableError(node.op)
            symbol = " & " if node.op == "and" else " | "
            return "(" + symbol.join(self.source(o) for o in node.operands) + ")"
        return self.call(node)

    def constant(self, value: Any) -> str:
        if isinstance(value, np.generic):
            array = np.asarray(value)
        elif isinstance(value, (bool, int)) or (isinstance(value, float)
                                                 and math.isfinite(value)):
            return f"({value!r})"
        elif isinstance(value, (str, bytes)):
            if isinstance(value, str) and not value.isascii():
                raise _UntranslatableError(value)
            array = np.asarray(value.encode("ascii") if isinstance(value, str) else value)
        else:
            array = Literal(value).typed()
        name = f"_c{len(self.constants)}"
        self.constants[name] = array
        return name

    def unary(self, node: Unary) -> str:
        operand = self.source(node.operand)
        if node.op == "pos":
            return operand
        if node.op == "not" and self.kind(node.operand) != BOOL:
            raise _UntranslatableError("not")
        return f"({'-' if node.op == 'neg' else '~'}{operand})"

    def binary(self, node: Binary) -> str:
        kinds = {self.kind(node.left), self.kind(node.right)}
        if node.op in ("floordiv", "mod", "pow") and kinds <= {BOOL, INT, LONG}:
            raise _UntranslatableError(node.op)  # SIGFPE on INT_MIN // -1; powers via double
        if node.op == "pow" and COMPLEX in kinds:
            raise _UntranslatableError(node.op)
        left, right = self.source(node.left), self.source(node.right)
        return f"({left} {BINARY_SYMBOLS[node.op]} {right})"

    def call(self, node: Call) -> str:
        if node.func in ("contains", "startswith", "endswith") or (
                node.func not in ("where", "real", "imag")
                and COMPLEX in map(self.kind, node.args)):
            raise _UntranslatableError(node.func)
        return f"{node.func}({', '.join(self.source(a) for a in node.args)})"


def _numexpr_reserved(numexpr: Any) -> frozenset[str]:
    functions = getattr(getattr(numexpr, "expressions", None), "functions", {})
    return frozenset(functions) | {"None", "True", "False"}


@functools.lru_cache(maxsize=256)
def plan(expr: Expression, signature: tuple[tuple[str, np.dtype], ...]) -> Plan | None:
    """How numexpr evaluates `expr` on inputs of `signature`, or None when the
    python VM must do it (cached).

    Parameters
    ----------
    expr : Expression
        A compiled expression without reduction.
    signature : tuple of (str, numpy.dtype)
        The dtype of each name.

    Returns
    -------
    Plan or None

    Raises
    ------
    ExpressionError
        If numexpr is not installed.
    """
    numexpr = _import_numexpr()
    if is_filter(expr.tree):
        return None
    if any((dtype not in _NUMEXPR_DTYPES and dtype.kind != "S") or not dtype.isnative
           for _, dtype in signature):
        return None
    empty = {name: np.empty(0, dtype) for name, dtype in signature}
    record: dict[int, np.dtype] = {}
    try:
        expected = python_vm(expr.tree, empty, record).dtype
        translator = _Translator(record, _numexpr_reserved(numexpr))
        text = translator.source(expr.tree)
    except (_UntranslatableError, ExpressionError):
        return None
    try:
        got = numexpr.evaluate(text, local_dict={**empty, **translator.constants},
                               optimization="none")
    except Exception:  # noqa: BLE001 - numexpr cannot compile it (any class): the python VM will
        return None
    if got.dtype != expected:
        return None
    return Plan(text, translator.constants)


def evaluate(expr: Expression, arrays: Mapping[str, np.ndarray]) -> np.ndarray | None:
    """`expr` evaluated by numexpr on `arrays`, or None when the python VM must do it.

    Parameters
    ----------
    expr : Expression
        A compiled expression without reduction.
    arrays : mapping
        An array for each name of `expr`.

    Returns
    -------
    numpy.ndarray or None

    Raises
    ------
    ExpressionError
        If numexpr is not installed.
    """
    signature = tuple((name, a.dtype) for name, a in arrays.items())
    how = plan(expr, signature)
    if how is None:
        return None
    return _import_numexpr().evaluate(how.text, local_dict={**arrays, **how.constants},
                                      optimization="none")
