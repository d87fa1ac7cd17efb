"""Expressions over columns: parse, validate, fold and evaluate on NumPy blocks.

An expression string is data, not code.  :func:`compile_expression` parses it
with :func:`ast.parse` and accepts only an explicit whitelist of node types,
operators and functions; anything else raises
:class:`~bcolzx.errors.ExpressionError` before a single value is computed.
The accepted tree is turned into a small immutable form (the ``Name``,
``Const``, ``Unary``, ``Binary``, ``Compare``, ``Logical`` and ``Call``
nodes below) with constant sub-expressions folded, as numexpr folds them.

Two virtual machines evaluate it:

``'python'``
    Our own evaluator, one NumPy ufunc per node.  It follows numexpr's typing
    rules (legacy bcolz evaluated with numexpr, so those are the reference):

    * operands are first cast to numexpr's *kinds*: bool; int8, int16,
      uint8, uint16 and int32 become int32; uint32 and int64 become int64;
      float16 and float32 become float32; float64; complex64 and complex128
      become complex128;
    * a binary operation computes in the higher kind of its operands, in
      the order bool < int32 < int64 < float32 < float64 < complex128 (so
      int64 with float32 gives float32, unlike NumPy);
    * a literal integer is int32 when it fits, else int64; a literal float is
      float64 (so ``f32 * 2.0`` is float64 and ``f32 > 0.1`` compares in
      float64); a name bound to a Python scalar is ``numpy.asarray(value)``
      (so ``5`` is int64);
    * ``/`` of booleans or integers gives float64; ``+`` and ``*`` of booleans
      are ``|`` and ``&``; float ``%`` is ``a - floor(a / b) * b`` and float
      ``//`` is ``floor(a / b)``, numexpr's formulas; complex ``*`` and ``/``
      use the textbook formulas numexpr uses;
    * a function of an integer gives float64 and of a boolean float32;
      ``abs`` of a complex is complex; ``real``/``imag`` give float64;
      ``conj`` of a boolean or float gives complex128;
    * constant sub-expressions are folded with Python arithmetic (as numexpr's
      parser does): ``2**40`` is an int64 constant, ``1/2`` is ``0.5``.

    Dtypes numexpr has no kind for (uint64, longdouble, datetime64,
    timedelta64, bytes and str) follow NumPy's own rules, with literals as
    Python scalars.  Strings can only be compared (and searched with
    ``contains``); a ``str`` literal compared with a bytes column is encoded
    as ASCII, and compared with a datetime64 column is parsed as a date.

``'numexpr'``
    :func:`numexpr.evaluate` (imported on first use) on a fully
    parenthesised translation of the tree, with ``optimization='none'`` so
    that ``x / 3.0`` really divides.  Where numexpr cannot give the python
    VM's result, the expression is transparently evaluated by the python VM
    instead: for dtypes numexpr does not support or would convert lossily
    (uint64, longdouble, datetime64, str, non-native byte order), for integer
    ``//``, ``%`` and ``**`` (numexpr kills the process with SIGFPE on
    ``INT_MIN // -1`` and computes integer powers in floating point), for
    complex ``**`` and complex functions (numexpr has its own complex
    library), for ``and``/``or``/``not`` of non-booleans, for names numexpr
    reserves (``sum``, ``max``...), for ``contains``, and for anything the
    installed numexpr fails to compile or types differently.  The decision is made once per
    expression and input dtypes (cached).

Both VMs give the same dtype and the same values for arithmetic,
comparisons, logic, ``where`` and NaN placement; transcendental functions
(``sin``, ``exp``, ``**`` of floats...) come from different math libraries
and agree to within a few units in the last place.
"""

from __future__ import annotations

import ast
import functools
import math
import operator
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import numpy as np

from bcolzx.errors import ExpressionError, UndefinedNameError

__all__ = ["FUNCTIONS", "MAX_DEPTH", "MAX_LENGTH", "MODULES", "REDUCTIONS", "VMS", "Expression",
           "Reduction", "check_operands", "compile_expression"]

#: Longest accepted expression, in characters.
MAX_LENGTH = 10_000
#: Deepest accepted nesting of the syntax tree.
MAX_DEPTH = 200
#: The virtual machines of :meth:`Expression.evaluate`.
VMS = ("python", "numexpr")

#: Accepted functions and their number of arguments: numexpr's documented set
#: (``where``, trigonometric and hyperbolic functions and their inverses,
#: ``arctan2``, ``log``, ``log10``, ``log1p``, ``exp``, ``expm1``, ``sqrt``,
#: ``abs``, ``conj``, ``real``, ``imag``, ``complex``, ``contains``) plus
#: ``fmod``, ``floor``, ``ceil``, ``isnan``, ``isinf`` and ``isfinite``, which
#: recent numexpr versions have too (with a numexpr that lacks one, expressions
#: using it run on the python VM).
FUNCTIONS: Mapping[str, int] = {
    **dict.fromkeys(
        ("sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh",
         "arcsinh", "arccosh", "arctanh", "log", "log10", "log1p", "exp", "expm1",
         "sqrt", "abs", "floor", "ceil", "conj", "real", "imag", "isnan", "isinf",
         "isfinite"), 1),
    **dict.fromkeys(("arctan2", "fmod", "complex", "contains"), 2),
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

# -- the tree --------------------------------------------------------------------


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
    """``op`` is one of the keys of ``_BINARY_SYMBOLS``."""

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
        """The axis reduced on `vm` (None: every item)."""
        if self.axis is not None or self.qualified or vm == "numexpr":
            return self.axis
        return 0

    def apply(self, value: np.ndarray, axis: int | None) -> np.ndarray:
        """Reduce `value` (a NumPy array) over `axis`."""
        func = np.sum if self.op == "sum" else np.prod
        if np.ndim(value) == 0:
            axis = None
        try:
            return np.asarray(func(value, axis=axis))
        except np.exceptions.AxisError as exc:
            raise ExpressionError(f"{self.op}(): {exc}") from None

_UNARY_OPS = {ast.USub: "neg", ast.UAdd: "pos", ast.Invert: "invert", ast.Not: "not"}
_BINARY_OPS = {
    ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "truediv",
    ast.FloorDiv: "floordiv", ast.Mod: "mod", ast.Pow: "pow", ast.BitAnd: "and",
    ast.BitOr: "or", ast.BitXor: "xor", ast.LShift: "lshift", ast.RShift: "rshift",
}
_BINARY_SYMBOLS = {
    "add": "+", "sub": "-", "mul": "*", "truediv": "/", "floordiv": "//", "mod": "%",
    "pow": "**", "and": "&", "or": "|", "xor": "^", "lshift": "<<", "rshift": ">>",
}
_COMPARE_OPS = {ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge", ast.Eq: "eq",
                ast.NotEq: "ne"}
_COMPARE_SYMBOLS = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!="}
_BITWISE = (ast.BitAnd, ast.BitOr, ast.BitXor)
_ALLOWED_NODES = (ast.Expression, ast.Name, ast.Load, ast.Constant, ast.UnaryOp,
                  ast.BinOp, ast.BoolOp, ast.And, ast.Or, ast.Compare, ast.Call,
                  *_UNARY_OPS, *_BINARY_OPS, *_COMPARE_OPS)
_NUMBER_TYPES = (bool, int, float, complex)
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1

# -- parsing and validation ---------------------------------------------------------


def _parse(text: str) -> ast.expr:
    if len(text) > MAX_LENGTH:
        raise ExpressionError(f"expression of {len(text)} characters is longer than the "
                              f"limit of {MAX_LENGTH}")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise ExpressionError(f"invalid expression {text!r}: {exc.msg}") from exc
    except (RecursionError, MemoryError, ValueError) as exc:
        raise ExpressionError(f"expression {text!r} cannot be parsed: {exc}") from exc
    _check_nodes(tree)
    return tree.body


def _children(node: ast.AST) -> list[ast.AST]:
    """The child nodes to validate; a call's callee is a function name, not a value,
    and its only keyword (a reduction's ``axis``) is checked with the call."""
    if isinstance(node, ast.Call):
        return list(node.args)
    return list(ast.iter_child_nodes(node))


def _callee(func: ast.expr) -> tuple[str, bool]:
    """The function a call names, and whether a module prefix named it.

    Raises
    ------
    ExpressionError
        If the callee is anything but ``name`` or ``module.name`` with a
        module of :data:`MODULES`.
    """
    if isinstance(func, ast.Name):
        return func.id, False
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) \
            and func.value.id in MODULES:
        return func.attr, True
    raise ExpressionError("only calls of the functions "
                          f"{', '.join(sorted(FUNCTIONS))} (optionally written "
                          f"{'/'.join(m + '.' for m in MODULES)}name) and of the reductions "
                          f"{', '.join(REDUCTIONS)} are allowed")


def _check_nodes(tree: ast.Expression) -> None:
    """Walk `tree` without recursion; reject unknown nodes and excessive depth."""
    stack: list[tuple[ast.AST, int, bool]] = [(tree, 0, False)]
    while stack:
        node, depth, string_ok = stack.pop()
        if depth > MAX_DEPTH:
            raise ExpressionError(f"expression is nested deeper than {MAX_DEPTH} levels")
        if not isinstance(node, _ALLOWED_NODES):
            raise ExpressionError(f"{_describe(node)} is not allowed in an expression")
        _check_node(node, string_ok)
        # Strings are data only where they are compared or searched.
        strings = isinstance(node, ast.Compare) or (
            isinstance(node, ast.Call) and _callee(node.func)[0] == "contains")
        stack.extend((child, depth + 1, strings) for child in _children(node))


def _describe(node: ast.AST) -> str:
    names = {ast.Attribute: "attribute access", ast.Subscript: "indexing",
             ast.Lambda: "lambda", ast.IfExp: "a conditional expression",
             ast.NamedExpr: "assignment (:=)", ast.JoinedStr: "an f-string",
             ast.Starred: "unpacking (*)", ast.MatMult: "the @ operator",
             ast.In: "the 'in' operator", ast.NotIn: "the 'not in' operator",
             ast.Is: "the 'is' operator", ast.IsNot: "the 'is not' operator"}
    for kind, text in names.items():
        if isinstance(node, kind):
            return text
    if isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
        return "a comprehension"
    return f"{type(node).__name__!r}"


def _check_node(node: ast.AST, string_ok: bool) -> None:
    if isinstance(node, ast.Name):
        _check_name(node.id)
    elif isinstance(node, ast.Constant):
        if isinstance(node.value, (str, bytes)):
            if not string_ok:
                raise ExpressionError(f"string {node.value!r} can only be compared (or "
                                      "searched with contains())")
        elif not isinstance(node.value, _NUMBER_TYPES):
            raise ExpressionError(f"constant {node.value!r} is not allowed in an expression")
    elif isinstance(node, ast.Call):
        _check_call(node)


def _check_name(name: str) -> None:
    if name.startswith("_"):
        raise ExpressionError(f"name {name!r} is not allowed: names may not start with '_'")
    if name in FUNCTIONS:
        raise ExpressionError(f"{name!r} is a function and cannot be used as a value")


def _check_call(node: ast.Call) -> None:
    name, _ = _callee(node.func)
    if name in REDUCTIONS:
        _reduction_axis(node)
        nargs = 1
    elif name in FUNCTIONS:
        if node.keywords:
            raise ExpressionError(f"{name}() takes positional arguments only")
        nargs = FUNCTIONS[name]
    else:
        raise ExpressionError(f"function {name!r} is not allowed; allowed functions are "
                              f"{', '.join(sorted(FUNCTIONS))} and the reductions "
                              f"{', '.join(REDUCTIONS)}")
    if any(isinstance(arg, ast.Starred) for arg in node.args):
        raise ExpressionError(f"unpacking (*) is not allowed in the arguments of {name}()")
    if len(node.args) != nargs:
        raise ExpressionError(f"{name}() takes {nargs} argument(s), not {len(node.args)}")


def _reduction_axis(node: ast.Call) -> int | None:
    """The ``axis=`` of a reduction call: a constant int (may be negative), or None."""
    name = _callee(node.func)[0]
    axis = None
    for keyword in node.keywords:
        if keyword.arg != "axis":
            raise ExpressionError(f"{name}() takes one argument and the keyword axis= only")
        value = keyword.value
        negative = isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.USub)
        if negative:
            value = value.operand
        if not (isinstance(value, ast.Constant) and type(value.value) is int):
            raise ExpressionError(f"the axis of {name}() must be an integer constant")
        axis = -value.value if negative else value.value
    return axis


# -- the precedence trap ------------------------------------------------------------


class _Source:
    """Source positions of a parsed expression (ast offsets are UTF-8 byte offsets)."""

    def __init__(self, text: str):
        self.data = text.strip().encode("utf-8")
        starts, pos = [0], 0
        for line in self.data.split(b"\n"):
            pos += len(line) + 1
            starts.append(pos)
        self.starts = starts

    def span(self, node: ast.AST) -> tuple[int, int]:
        return (self.starts[node.lineno - 1] + node.col_offset,
                self.starts[node.end_lineno - 1] + node.end_col_offset)

    def segment(self, node: ast.AST) -> str:
        """The source of `node` with the parentheses directly around it."""
        start, end = self.span(node)
        while True:
            before = self.data[:start].rstrip()
            after = self.data[end:].lstrip()
            if not (before.endswith(b"(") and after.startswith(b")")):
                return self.data[start:end].decode("utf-8")
            start, end = len(before) - 1, len(self.data) - len(after) + 1

    def parenthesised(self, node: ast.AST) -> bool:
        start, end = self.span(node)
        before = self.data[:start].rstrip()
        after = self.data[end:].lstrip()
        return before.endswith(b"(") and after.startswith(b")")


def _check_precedence(tree: ast.expr, text: str) -> None:
    """Reject comparisons with an unparenthesised ``&``, ``|`` or ``^`` operand."""
    source = _Source(text)
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            if any(_is_bare_bitwise(op, source) for op in operands):
                raise ExpressionError(_precedence_message(node, source))


def _is_bare_bitwise(node: ast.AST, source: _Source) -> bool:
    return (isinstance(node, ast.BinOp) and isinstance(node.op, _BITWISE)
            and not source.parenthesised(node))


def _precedence_message(node: ast.Compare, source: _Source) -> str:
    groups: list[list[str]] = [[]]
    joins: list[str] = []

    def add(operand: ast.AST) -> None:
        if _is_bare_bitwise(operand, source):
            add(operand.left)
            joins.append(_BINARY_SYMBOLS[_BINARY_OPS[type(operand.op)]])
            groups.append([])
            add(operand.right)
        else:
            groups[-1].append(source.segment(operand))

    add(node.left)
    for op, right in zip(node.ops, node.comparators):
        groups[-1].append(_COMPARE_SYMBOLS[_COMPARE_OPS[type(op)]])
        add(right)
    parts = [f"({' '.join(g)})" if len(g) > 1 else g[0] for g in groups]
    suggestion = parts[0] + "".join(f" {j} {p}" for j, p in zip(joins, parts[1:]))
    whole = source.data[slice(*source.span(node))].decode("utf-8")
    return (f"ambiguous precedence in {whole!r}: '&', '|' and '^' bind "
            f"more tightly than comparisons; add parentheses, e.g. write {suggestion!r}")


# -- from the ast to our tree, folding constants -----------------------------------------


def _build(node: ast.expr) -> Node:
    if isinstance(node, ast.Name):
        return Name(node.id)
    if isinstance(node, ast.Constant):
        return Const(_check_constant(node.value))
    if isinstance(node, ast.UnaryOp):
        return _fold_unary(_UNARY_OPS[type(node.op)], _build(node.operand))
    if isinstance(node, ast.BinOp):
        return _fold_binary(_BINARY_OPS[type(node.op)], _build(node.left), _build(node.right))
    if isinstance(node, ast.BoolOp):
        op = "and" if isinstance(node.op, ast.And) else "or"
        return _fold_logical(op, tuple(_build(v) for v in node.values))
    if isinstance(node, ast.Compare):
        return _build_compare(node)
    if isinstance(node, ast.Call):
        name = _callee(node.func)[0]
        if name in REDUCTIONS:
            raise ExpressionError(f"{name}() must be the outermost operation of the "
                                  "expression (as in numexpr)")
        return _fold_call(name, tuple(_build(a) for a in node.args))
    raise ExpressionError(f"{_describe(node)} is not allowed in an expression")


def _build_compare(node: ast.Compare) -> Node:
    operands = [_build(node.left), *(_build(c) for c in node.comparators)]
    parts = tuple(_fold_compare(_COMPARE_OPS[type(op)], left, right)
                  for op, left, right in zip(node.ops, operands, operands[1:]))
    return parts[0] if len(parts) == 1 else _fold_logical("and", parts)


def _is_literal(node: Node) -> bool:
    """A constant folded with Python arithmetic: a plain Python value."""
    return isinstance(node, Const) and not isinstance(node.value, np.generic)


def _check_constant(value: Any) -> Any:
    if isinstance(value, int) and not _INT64_MIN <= value <= _INT64_MAX:
        raise ExpressionError(f"integer constant {value} does not fit in int64")
    return value


def _guard_int_op(op: str, left: Any, right: Any) -> None:
    """Refuse Python integer operations whose result could be huge (``10**10**10``)."""
    if not (isinstance(left, int) and isinstance(right, int)):
        return
    if op == "pow" and abs(left) > 1 and right > 64:
        raise ExpressionError(f"integer constant {left}**{right} does not fit in int64")
    if op == "lshift" and left != 0 and right > 64:
        raise ExpressionError(f"integer constant {left}<<{right} does not fit in int64")


_PYTHON_BINARY: dict[str, Callable[[Any, Any], Any]] = {
    "add": operator.add, "sub": operator.sub, "mul": operator.mul,
    "truediv": operator.truediv, "floordiv": operator.floordiv, "mod": operator.mod,
    "pow": operator.pow, "and": operator.and_, "or": operator.or_, "xor": operator.xor,
    "lshift": operator.lshift, "rshift": operator.rshift,
}
_PYTHON_COMPARE: dict[str, Callable[[Any, Any], Any]] = {
    "lt": operator.lt, "le": operator.le, "gt": operator.gt, "ge": operator.ge,
    "eq": operator.eq, "ne": operator.ne,
}


def _python_fold(func: Callable[..., Any], *values: Any) -> Const:
    if any(isinstance(v, (str, bytes)) for v in values) and func not in _PYTHON_COMPARE.values():
        raise ExpressionError("strings can only be compared")
    try:
        return Const(_check_constant(func(*values)))
    except (ArithmeticError, TypeError, ValueError) as exc:
        raise ExpressionError(f"cannot fold constants {values}: {exc}") from exc


def _typed_fold(node: Node) -> Node:
    """Fold a node of typed constants with the python VM (numexpr's typing)."""
    with np.errstate(all="ignore"):
        result = _Evaluator({}).eval(node)
    return Const(result.value if isinstance(result, _Literal) else result[()])


def _fold_unary(op: str, operand: Node) -> Node:
    if op == "pos" and isinstance(operand, Const) and not isinstance(operand.value,
                                                                      (str, bytes)):
        return operand
    if not _is_literal(operand):
        node = Unary(op, operand)
        return _typed_fold(node) if isinstance(operand, Const) else node
    value = operand.value
    if isinstance(value, (str, bytes)):
        raise ExpressionError("strings can only be compared")
    if op == "not" or (op == "invert" and isinstance(value, bool)):
        return Const(not value)  # ~ of a boolean is logical not, as for arrays
    func = {"neg": operator.neg, "pos": operator.pos, "invert": operator.invert}[op]
    return _python_fold(func, value)


def _fold_binary(op: str, left: Node, right: Node) -> Node:
    if _is_literal(left) and _is_literal(right):
        _guard_int_op(op, left.value, right.value)
        return _python_fold(_PYTHON_BINARY[op], left.value, right.value)
    node = Binary(op, left, right)
    if isinstance(left, Const) and isinstance(right, Const):
        return _typed_fold(node)
    return node


def _fold_compare(op: str, left: Node, right: Node) -> Node:
    if _is_literal(left) and _is_literal(right):
        return _python_fold(_PYTHON_COMPARE[op], left.value, right.value)
    node = Compare(op, left, right)
    if isinstance(left, Const) and isinstance(right, Const):
        return _typed_fold(node)
    return node


def _fold_logical(op: str, operands: tuple[Node, ...]) -> Node:
    if all(isinstance(o, Const) for o in operands):
        values = [bool(o.value) for o in operands]
        return Const(all(values) if op == "and" else any(values))
    return Logical(op, operands)


def _fold_call(func: str, args: tuple[Node, ...]) -> Node:
    if func == "where" and isinstance(args[0], Const):
        return args[1] if args[0].value else args[2]  # as numexpr does
    node = Call(func, args)
    if all(isinstance(a, Const) for a in args):
        return _typed_fold(node)
    return node


def _collect_names(node: Node, seen: dict[str, None]) -> None:
    if isinstance(node, Name):
        seen.setdefault(node.id)
    elif isinstance(node, Const):
        return
    elif isinstance(node, Unary):
        _collect_names(node.operand, seen)
    elif isinstance(node, (Binary, Compare)):
        _collect_names(node.left, seen)
        _collect_names(node.right, seen)
    else:
        for child in node.operands if isinstance(node, Logical) else node.args:
            _collect_names(child, seen)


def _source_names(tree: ast.expr) -> tuple[str, ...]:
    """Variable names in order of first appearance in the source."""
    found, stack = [], [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Name):
            found.append((node.lineno, node.col_offset, node.id))
        stack.extend(_children(node))
    return tuple(dict.fromkeys(name for _, _, name in sorted(found)))


# -- kinds (numexpr's types) ----------------------------------------------------------

BOOL = np.dtype(np.bool_)
INT = np.dtype(np.int32)
LONG = np.dtype(np.int64)
FLOAT = np.dtype(np.float32)
DOUBLE = np.dtype(np.float64)
COMPLEX = np.dtype(np.complex128)
#: numexpr's kinds, lowest first.
KINDS = (BOOL, INT, LONG, FLOAT, DOUBLE, COMPLEX)
_INTEGERS = (INT, LONG)


def kind_of(dtype: np.dtype) -> np.dtype | None:
    """The numexpr kind `dtype` is computed in, or None for a dtype numexpr lacks.

    Parameters
    ----------
    dtype : numpy.dtype
        A column or scalar dtype.

    Returns
    -------
    numpy.dtype or None
        One of :data:`KINDS`, or None (uint64, longdouble, datetime64, strings...).
    """
    code, size = dtype.kind, dtype.itemsize
    if code == "b":
        return BOOL
    if code == "i":
        return INT if size <= 4 else LONG
    if code == "u":
        return INT if size <= 2 else LONG if size == 4 else None
    if code == "f":
        return FLOAT if size <= 4 else DOUBLE if size == 8 else None
    if code == "c":
        return COMPLEX if size <= 16 else None
    return None


def common_kind(*dtypes: np.dtype) -> np.dtype:
    """The highest of some kinds (all of them members of :data:`KINDS`)."""
    return KINDS[max(KINDS.index(d) for d in dtypes)]


def literal_kind(value: Any) -> np.dtype:
    """The kind numexpr gives a Python literal: int32 when an int fits, else int64."""
    if isinstance(value, bool):
        return BOOL
    if isinstance(value, int):
        return INT if _INT32_MIN <= value <= _INT32_MAX else LONG
    if isinstance(value, float):
        return DOUBLE
    if isinstance(value, complex):
        return COMPLEX
    return np.asarray(value).dtype  # str, bytes


# -- the python VM ---------------------------------------------------------------------


class _Literal(NamedTuple):
    """A Python constant during evaluation: typed by numexpr's literal rules in
    kind arithmetic, a weak Python scalar in NumPy arithmetic."""

    value: Any

    def typed(self) -> np.ndarray:
        return np.asarray(self.value, dtype=literal_kind(self.value))


Operand = np.ndarray | _Literal


def _typed(x: Operand) -> np.ndarray:
    return x.typed() if isinstance(x, _Literal) else x


def _weak(x: Operand) -> Any:
    return x.value if isinstance(x, _Literal) else x


def _kinds(*operands: Operand) -> tuple[np.ndarray, ...] | None:
    """The operands as arrays of numexpr kinds, or None if one has no kind."""
    arrays = tuple(_typed(x) for x in operands)
    if all(a.dtype in KINDS for a in arrays):
        return arrays
    return None


def _cast(a: np.ndarray, dtype: np.dtype) -> np.ndarray:
    return a.astype(dtype, copy=False)


def _complex_mul(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    out = np.empty(np.broadcast_shapes(x.shape, y.shape), COMPLEX)
    out.real = x.real * y.real - x.imag * y.imag
    out.imag = x.real * y.imag + x.imag * y.real
    return out


def _complex_div(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    out = np.empty(np.broadcast_shapes(x.shape, y.shape), COMPLEX)
    den = y.real * y.real + y.imag * y.imag
    out.real = (x.real * y.real + x.imag * y.imag) / den
    out.imag = (x.imag * y.real - x.real * y.imag) / den
    return out


def _unsupported(op: str, kind: np.dtype) -> ExpressionError:
    return ExpressionError(f"operator {_BINARY_SYMBOLS.get(op, op)!r} is not supported "
                           f"for {kind} operands")


def _int_power(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    if np.any(y < 0):
        raise ExpressionError("integers to negative integer powers are not allowed")
    return np.power(x, y)


def _float_floordiv(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.floor(x / y)  # numexpr's formula, not NumPy's floor_divide


def _float_mod(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return x - np.floor(x / y) * y  # numexpr's formula, not NumPy's remainder


_Binary = Callable[[np.ndarray, np.ndarray], np.ndarray]
_ARITHMETIC: dict[str, _Binary] = {"add": np.add, "sub": np.subtract, "mul": np.multiply,
                                   "truediv": np.true_divide}
#: The binary operators of each kind; those missing do not apply.
_KIND_BINARY: dict[str, dict[str, _Binary]] = {
    "bool": {"add": np.logical_or, "mul": np.logical_and, "and": np.logical_and,
             "or": np.logical_or, "xor": np.logical_xor},
    "int": {**_ARITHMETIC, "floordiv": np.floor_divide, "mod": np.remainder,
            "pow": _int_power, "and": np.bitwise_and, "or": np.bitwise_or,
            "xor": np.bitwise_xor, "lshift": np.left_shift, "rshift": np.right_shift},
    "float": {**_ARITHMETIC, "floordiv": _float_floordiv, "mod": _float_mod,
              "pow": np.power},
    "complex": {**_ARITHMETIC, "mul": _complex_mul, "truediv": _complex_div,
                "pow": np.power},
}


def _kind_binary(op: str, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """`op` on operands of numexpr kinds, typed as numexpr types it."""
    kind = common_kind(x.dtype, y.dtype)
    if op == "truediv" and kind in (BOOL, *_INTEGERS):
        kind = DOUBLE
    funcs = _KIND_BINARY["bool" if kind == BOOL else "int" if kind in _INTEGERS
                         else "complex" if kind == COMPLEX else "float"]
    if op not in funcs:
        raise _unsupported(op, kind)
    return np.asarray(funcs[op](_cast(x, kind), _cast(y, kind)), dtype=kind)


_NUMPY_BINARY: dict[str, np.ufunc] = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "truediv": np.true_divide,
    "floordiv": np.floor_divide, "mod": np.remainder, "pow": np.power,
    "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor,
    "lshift": np.left_shift, "rshift": np.right_shift,
}
_NUMPY_COMPARE: dict[str, np.ufunc] = {
    "lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal,
    "eq": np.equal, "ne": np.not_equal,
}


def binary(op: str, x: Operand, y: Operand) -> np.ndarray:
    """Apply binary operator `op` (a key of ``_BINARY_SYMBOLS``) as the python VM does.

    Raises
    ------
    ExpressionError
        If the operator does not apply to these operands.
    """
    arrays = _kinds(x, y)
    if arrays is not None:
        return _kind_binary(op, *arrays)
    if any(_typed(v).dtype.kind in "SU" for v in (x, y)):
        raise ExpressionError(f"strings can only be compared, not combined with "
                              f"{_BINARY_SYMBOLS[op]!r}")
    return _numpy_call(_NUMPY_BINARY[op], _weak(x), _weak(y))


def _numpy_call(func: Callable[..., Any], *args: Any) -> np.ndarray:
    try:
        return np.asarray(func(*args))
    except (TypeError, ValueError, OverflowError) as exc:
        types = ", ".join(str(np.asarray(a).dtype) for a in args)
        raise ExpressionError(f"{getattr(func, '__name__', func)} cannot be applied to "
                              f"({types}): {exc}") from exc


def compare(op: str, x: Operand, y: Operand) -> np.ndarray:
    """Apply comparison `op` ('lt', 'le', 'gt', 'ge', 'eq' or 'ne') as the python VM does.

    Raises
    ------
    ExpressionError
        If the operands cannot be compared.
    """
    arrays = _kinds(x, y)
    if arrays is not None:
        kind = common_kind(arrays[0].dtype, arrays[1].dtype)
        if kind == COMPLEX and op not in ("eq", "ne"):
            raise ExpressionError("complex numbers can only be compared with '==' and '!='")
        a, b = (_cast(v, kind) for v in arrays)
    else:
        a, b = _coerce_foreign(x, y)
    return np.asarray(_numpy_call(_NUMPY_COMPARE[op], a, b), dtype=BOOL)


def _coerce_foreign(x: Operand, y: Operand) -> tuple[Any, Any]:
    """Make strings comparable: str literals become ASCII bytes for bytes columns
    and dates for datetime64 ones."""
    a, b = _weak(x), _weak(y)
    ta, tb = _typed(x), _typed(y)
    a = _coerce_to(a, ta, tb.dtype)
    b = _coerce_to(b, tb, ta.dtype)
    strings = [t.dtype.kind in "SU" for t in (np.asarray(a), np.asarray(b))]
    if any(strings) and not all(strings):
        raise ExpressionError(f"cannot compare {ta.dtype} with {tb.dtype}")
    return a, b


def _coerce_to(value: Any, typed: np.ndarray, other: np.dtype) -> Any:
    code = typed.dtype.kind
    try:
        if code == "U" and other.kind == "S" and typed.ndim == 0:
            return np.asarray(typed.item().encode("ascii"))
        if code == "S" and other.kind == "U" and typed.ndim == 0:
            return np.asarray(typed.item().decode("ascii"))
        if code in "SU" and other.kind in "Mm" and typed.ndim == 0:
            text = typed.item()
            text = text.decode("ascii") if isinstance(text, bytes) else text
            return np.asarray(text, dtype=other)
    except (UnicodeError, ValueError) as exc:
        raise ExpressionError(f"cannot compare {typed.item()!r} with {other}: {exc}") from exc
    return value


def unary(op: str, x: Operand) -> np.ndarray:
    """Apply unary operator `op` ('neg', 'pos', 'invert' or 'not') as the python VM does.

    Raises
    ------
    ExpressionError
        If the operator does not apply to the operand.
    """
    a = _typed(x)
    if a.dtype.kind in "SU":
        raise ExpressionError("strings can only be compared")
    if op == "pos":
        return a
    if op == "not":
        return np.asarray(_numpy_call(np.logical_not, a), dtype=BOOL)
    if a.dtype == BOOL:
        if op == "invert":
            return np.logical_not(a)
        raise ExpressionError("unary '-' is not supported for booleans")
    if op == "invert" and a.dtype.kind not in "iu":
        raise ExpressionError(f"'~' is not supported for {a.dtype} operands")
    func = np.negative if op == "neg" else np.invert
    return _numpy_call(func, a)


def logical(op: str, operands: list[Operand]) -> np.ndarray:
    """Element-wise ``and``/``or`` of truth values, as the python VM does.

    Raises
    ------
    ExpressionError
        If an operand is a string.
    """
    func = np.logical_and if op == "and" else np.logical_or
    arrays = [_typed(x) for x in operands]
    if any(a.dtype.kind in "SU" for a in arrays):
        raise ExpressionError(f"'{op}' needs numbers or booleans, not strings")
    return functools.reduce(lambda a, b: np.asarray(_numpy_call(func, a, b)), arrays)


_FLOAT_FUNCS: dict[str, np.ufunc] = {
    "sin": np.sin, "cos": np.cos, "tan": np.tan, "arcsin": np.arcsin, "arccos": np.arccos,
    "arctan": np.arctan, "sinh": np.sinh, "cosh": np.cosh, "tanh": np.tanh,
    "arcsinh": np.arcsinh, "arccosh": np.arccosh, "arctanh": np.arctanh, "log": np.log,
    "log10": np.log10, "log1p": np.log1p, "exp": np.exp, "expm1": np.expm1,
    "sqrt": np.sqrt, "floor": np.floor, "ceil": np.ceil, "arctan2": np.arctan2,
    "fmod": np.fmod,
}
_PREDICATES: dict[str, np.ufunc] = {"isnan": np.isnan, "isinf": np.isinf,
                                     "isfinite": np.isfinite}


def call(func: str, args: list[Operand]) -> np.ndarray:
    """Apply function `func` of :data:`FUNCTIONS` as the python VM does.

    Raises
    ------
    ExpressionError
        If the function does not apply to the arguments.
    """
    if func == "where":
        return _where(*args)
    if func == "contains":
        return _contains(*args)
    arrays = _kinds(*args)
    if arrays is None:
        return _foreign_call(func, args)
    kind = common_kind(*(a.dtype for a in arrays))
    if func in _PREDICATES:
        arg = arrays[0] if kind in (FLOAT, DOUBLE, COMPLEX) else _cast(arrays[0], DOUBLE)
        return np.asarray(_PREDICATES[func](arg), dtype=BOOL)
    if func in ("real", "imag"):
        part = np.real if func == "real" else np.imag
        return np.asarray(part(arrays[0]), dtype=DOUBLE)
    if func == "complex":
        return _complex(kind, *arrays)
    kind = _function_kind(func, kind)
    arrays = tuple(_cast(a, kind) for a in arrays)
    if func == "abs":
        return np.asarray(np.abs(arrays[0]), dtype=kind)  # complex stays complex
    if func == "conj":
        return np.conj(arrays[0])
    return np.asarray(_numpy_call(_FLOAT_FUNCS[func], *arrays), dtype=kind)


def _function_kind(func: str, kind: np.dtype) -> np.dtype:
    """numexpr's result kind of a floating point function of `kind` arguments."""
    if kind in _INTEGERS:
        return DOUBLE
    if func == "conj":
        return COMPLEX
    if kind == BOOL:
        return FLOAT
    if kind == COMPLEX and func in ("floor", "ceil", "arctan2", "fmod"):
        raise ExpressionError(f"{func}() is not defined for complex numbers")
    return kind


def _complex(kind: np.dtype, real: np.ndarray, imag: np.ndarray) -> np.ndarray:
    if kind == COMPLEX:
        raise ExpressionError("complex() takes real arguments")
    out = np.empty(np.broadcast_shapes(real.shape, imag.shape), COMPLEX)
    out.real = real
    out.imag = imag
    return out


def _where(cond: Operand, x: Operand, y: Operand) -> np.ndarray:
    c = _typed(cond)
    if c.dtype.kind in "SU":
        raise ExpressionError("the condition of where() cannot be a string")
    arrays = _kinds(x, y)
    if arrays is None:
        return _numpy_call(np.where, c, *_coerce_foreign(x, y))
    kind = common_kind(arrays[0].dtype, arrays[1].dtype)
    return np.where(c, _cast(arrays[0], kind), _cast(arrays[1], kind))


def _contains(x: Operand, y: Operand) -> np.ndarray:
    a, b = _coerce_foreign(x, y)
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype.kind not in "SU" or b.dtype.kind not in "SU":
        raise ExpressionError("contains() takes two strings")
    return np.asarray(np.char.find(a, b) >= 0, dtype=BOOL)


def _foreign_call(func: str, args: list[Operand]) -> np.ndarray:
    arrays = [_typed(a) for a in args]
    if any(a.dtype.kind in "SU" for a in arrays):
        raise ExpressionError(f"{func}() does not take strings")
    if func in _PREDICATES:
        return np.asarray(_numpy_call(_PREDICATES[func], arrays[0]), dtype=BOOL)
    numpy_funcs = {**_FLOAT_FUNCS, "abs": np.abs, "conj": np.conj, "real": np.real,
                   "imag": np.imag, "complex": lambda a, b: a + 1j * b}
    return _numpy_call(numpy_funcs[func], *[_weak(a) for a in args])


class _Evaluator:
    """Evaluate a tree on a namespace of arrays; optionally record node dtypes."""

    def __init__(self, namespace: Mapping[str, np.ndarray],
                 record: dict[int, np.dtype] | None = None):
        self.namespace = namespace
        self.record = record

    def eval(self, node: Node) -> Operand:
        result = self._eval(node)
        if self.record is not None:
            self.record[id(node)] = _typed(result).dtype
        return result

    def _eval(self, node: Node) -> Operand:
        if isinstance(node, Name):
            return self.namespace[node.id]
        if isinstance(node, Const):
            if isinstance(node.value, np.generic):
                return np.asarray(node.value)
            return _Literal(node.value)
        if isinstance(node, Unary):
            return unary(node.op, self.eval(node.operand))
        if isinstance(node, Binary):
            return binary(node.op, self.eval(node.left), self.eval(node.right))
        if isinstance(node, Compare):
            return compare(node.op, self.eval(node.left), self.eval(node.right))
        if isinstance(node, Logical):
            return logical(node.op, [self.eval(o) for o in node.operands])
        return call(node.func, [self.eval(a) for a in node.args])


# -- the numexpr VM --------------------------------------------------------------------

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


class _Plan(NamedTuple):
    """What numexpr evaluates: the text and the constants it names."""

    text: str
    constants: dict[str, np.ndarray]


class _Untranslatable(Exception):
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
                raise _Untranslatable(node.id)
            return node.id
        if isinstance(node, Const):
            return self.constant(node.value)
        if isinstance(node, Unary):
            return self.unary(node)
        if isinstance(node, Binary):
            return self.binary(node)
        if isinstance(node, Compare):
            left, right = self.source(node.left), self.source(node.right)
            return f"({left} {_COMPARE_SYMBOLS[node.op]} {right})"
        if isinstance(node, Logical):
            if any(self.kind(o) != BOOL for o in node.operands):
                raise _Untranslatable(node.op)
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
                raise _Untranslatable(value)
            array = np.asarray(value.encode("ascii") if isinstance(value, str) else value)
        else:
            array = _Literal(value).typed()
        name = f"_c{len(self.constants)}"
        self.constants[name] = array
        return name

    def unary(self, node: Unary) -> str:
        operand = self.source(node.operand)
        if node.op == "pos":
            return operand
        if node.op == "not" and self.kind(node.operand) != BOOL:
            raise _Untranslatable("not")
        return f"({'-' if node.op == 'neg' else '~'}{operand})"

    def binary(self, node: Binary) -> str:
        kinds = {self.kind(node.left), self.kind(node.right)}
        if node.op in ("floordiv", "mod", "pow") and kinds <= {BOOL, INT, LONG}:
            raise _Untranslatable(node.op)  # SIGFPE on INT_MIN // -1; powers via double
        if node.op == "pow" and COMPLEX in kinds:
            raise _Untranslatable(node.op)
        left, right = self.source(node.left), self.source(node.right)
        return f"({left} {_BINARY_SYMBOLS[node.op]} {right})"

    def call(self, node: Call) -> str:
        if node.func == "contains" or (node.func not in ("where", "real", "imag")
                                       and COMPLEX in map(self.kind, node.args)):
            raise _Untranslatable(node.func)
        return f"{node.func}({', '.join(self.source(a) for a in node.args)})"


def _numexpr_reserved(numexpr: Any) -> frozenset[str]:
    functions = getattr(getattr(numexpr, "expressions", None), "functions", {})
    return frozenset(functions) | {"None", "True", "False"}


@functools.lru_cache(maxsize=256)
def _numexpr_plan(expr: Expression, signature: tuple[tuple[str, np.dtype], ...]
                  ) -> _Plan | None:
    """How numexpr evaluates `expr` on inputs of `signature`, or None when the
    python VM must do it."""
    numexpr = _import_numexpr()
    if any((dtype not in _NUMEXPR_DTYPES and dtype.kind != "S") or not dtype.isnative
           for _, dtype in signature):
        return None
    empty = {name: np.empty(0, dtype) for name, dtype in signature}
    record: dict[int, np.dtype] = {}
    try:
        expected = _python_vm(expr.tree, empty, record).dtype
        translator = _Translator(record, _numexpr_reserved(numexpr))
        text = translator.source(expr.tree)
    except (_Untranslatable, ExpressionError):
        return None
    try:
        got = numexpr.evaluate(text, local_dict={**empty, **translator.constants},
                               optimization="none")
    except Exception:  # numexpr cannot compile it: the python VM will
        return None
    if got.dtype != expected:
        return None
    return _Plan(text, translator.constants)


def _python_vm(tree: Node, namespace: Mapping[str, np.ndarray],
               record: dict[int, np.dtype] | None = None) -> np.ndarray:
    env = {}
    for name, value in namespace.items():
        kind = kind_of(value.dtype)
        env[name] = value if kind is None else _cast(value, kind)
    with np.errstate(all="ignore"):
        return np.asarray(_typed(_Evaluator(env, record).eval(tree)))


# -- the public class ---------------------------------------------------------------------


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

    __slots__ = ("text", "names", "tree", "reduction", "inner")

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
            signature = tuple((name, a.dtype) for name, a in arrays.items())
            plan = _numexpr_plan(self, signature)
            if plan is not None:
                numexpr = _import_numexpr()
                return numexpr.evaluate(plan.text, local_dict={**arrays, **plan.constants},
                                        optimization="none")
        return _python_vm(self.tree, arrays)

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
        dtype = _python_vm(self.tree, empty).dtype
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
    body = _parse(text)
    if isinstance(body, ast.Call) and _callee(body.func)[0] in REDUCTIONS:
        name, qualified = _callee(body.func)
        inner = _compile(_Source(text).segment(body.args[0]))
        return Expression(text, inner.names, inner.tree,
                          Reduction(name, _reduction_axis(body), qualified), inner)
    _check_precedence(body, text)
    names = _source_names(body)
    tree = _build(body)
    seen: dict[str, None] = {}
    _collect_names(tree, seen)
    # Folding may drop names (where(True, a, b)); keep source order of the rest.
    return Expression(text, tuple(n for n in names if n in seen), tree)


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
        if dtype is not None and np.dtype(dtype).hasobject:
            raise ExpressionError(
                f"{name!r} holds Python objects (dtype {dtype}): expressions compute on numbers, "
                "booleans, strings and dates only; select rows with a condition on other "
                "columns and read the object column with the rows it returns")
