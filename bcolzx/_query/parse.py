"""From text to tree: ast parsing, the whitelist, the precedence trap, constant folding.

An expression string is data, not code.  :func:`parse` parses it with
:func:`ast.parse` and accepts only an explicit whitelist of node types,
operators and functions (:data:`~bcolzx._query.tree.FUNCTIONS`); anything
else raises :class:`~bcolzx.errors.ExpressionError` before a single value is
computed.  :func:`build` turns the accepted syntax tree into the small
immutable form of :mod:`~bcolzx._query.tree`, with constant sub-expressions
folded as numexpr folds them: Python arithmetic for Python literals
(``2**40`` is an int64 constant, ``1/2`` is ``0.5``), the python VM's
typed operations once a NumPy scalar is involved.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from bcolzx._query.kinds import Literal
from bcolzx._query.pyvm import Evaluator
from bcolzx._query.tree import (
    BINARY_SYMBOLS,
    COMPARE_SYMBOLS,
    FUNCTIONS,
    MODULES,
    REDUCTIONS,
    Binary,
    Call,
    Compare,
    Const,
    Logical,
    Name,
    Node,
    Reduction,
    Unary,
)
from bcolzx.errors import ExpressionError

__all__ = ["MAX_DEPTH", "MAX_LENGTH", "build", "outer_reduction", "parse"]

#: Longest accepted expression, in characters.
MAX_LENGTH = 10_000
#: Deepest accepted nesting of the syntax tree.
MAX_DEPTH = 200

_UNARY_OPS = {ast.USub: "neg", ast.UAdd: "pos", ast.Invert: "invert", ast.Not: "not"}
_BINARY_OPS = {
    ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "truediv",
    ast.FloorDiv: "floordiv", ast.Mod: "mod", ast.Pow: "pow", ast.BitAnd: "and",
    ast.BitOr: "or", ast.BitXor: "xor", ast.LShift: "lshift", ast.RShift: "rshift",
}
_COMPARE_OPS = {ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge", ast.Eq: "eq",
                ast.NotEq: "ne"}
_BITWISE = (ast.BitAnd, ast.BitOr, ast.BitXor)
_ALLOWED_NODES = (ast.Expression, ast.Name, ast.Load, ast.Constant, ast.UnaryOp,
                  ast.BinOp, ast.BoolOp, ast.And, ast.Or, ast.Compare, ast.Call,
                  *_UNARY_OPS, *_BINARY_OPS, *_COMPARE_OPS)
_NUMBER_TYPES = (bool, int, float, complex)
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1

# -- parsing and validation ---------------------------------------------------------


def parse(text: str) -> ast.expr:
    """The syntax tree of `text`'s expression, checked against the whitelist.

    Raises
    ------
    ExpressionError
        If the text is not a valid expression or uses anything outside the
        whitelist, is longer than :data:`MAX_LENGTH` or deeper than
        :data:`MAX_DEPTH`.
    """
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
            isinstance(node, ast.Call) and _callee(node.func)[0] in _STRING_FUNCTIONS)
        stack.extend((child, depth + 1, strings) for child in _children(node))


#: The functions whose arguments may be strings.
_STRING_FUNCTIONS = ("contains", "startswith", "endswith")


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
                                      "searched with contains(), startswith() or "
                                      "endswith())")
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
            joins.append(BINARY_SYMBOLS[_BINARY_OPS[type(operand.op)]])
            groups.append([])
            add(operand.right)
        else:
            groups[-1].append(source.segment(operand))

    add(node.left)
    for op, right in zip(node.ops, node.comparators):
        groups[-1].append(COMPARE_SYMBOLS[_COMPARE_OPS[type(op)]])
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
        result = Evaluator({}).eval(node)
    return Const(result.value if isinstance(result, Literal) else result[()])


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


def outer_reduction(body: ast.expr, text: str) -> tuple[Reduction, str] | None:
    """The outermost ``sum``/``prod`` of `body` (parsed from `text`) and the
    source of its argument, or None when the expression is not a reduction.

    Raises
    ------
    ExpressionError
        If the ``axis=`` keyword is not an integer constant.
    """
    if not (isinstance(body, ast.Call) and _callee(body.func)[0] in REDUCTIONS):
        return None
    name, qualified = _callee(body.func)
    return (Reduction(name, _reduction_axis(body), qualified),
            _Source(text).segment(body.args[0]))


def build(body: ast.expr, text: str) -> tuple[tuple[str, ...], Node]:
    """The names and the folded tree of `body` (parsed from `text`, no reduction).

    Returns
    -------
    tuple
        ``(names, tree)``: the variables the tree still reads, in order of
        first appearance in the source (folding may drop some:
        ``where(True, a, b)``), and the tree.

    Raises
    ------
    ExpressionError
        For a comparison with a bare ``&``/``|``/``^`` operand (``a < 5 & b >
        1``, which means ``a < (5 & b) > 1``), a reduction that is not
        outermost, or constants that cannot be folded (an integer out of
        int64, strings in arithmetic...).
    """
    _check_precedence(body, text)
    names = _source_names(body)
    tree = _build(body)
    seen: dict[str, None] = {}
    _collect_names(tree, seen)
    return tuple(n for n in names if n in seen), tree
