"""String tests answered from chunks: a string column compared with a string, without its strings.

The chunks of a StringDType carray hold each row's UTF-8 bytes
(docs/format/strings.md).  A test of such a column against one string,

* a comparison, ``s == "AAPL"``, ``s != v``, ``s < "M"``, ``"M" <= s``...
  (UTF-8 bytes order as code points do, NumPy's order of strings);
* ``startswith(s, "A")``, ``endswith(s, v)``, ``contains(s, "rose")``;

is computed from those bytes by a kernel, GIL released, without building
the block's StringDType array (``column.engine.string_matcher``, the
carray's engine handle).  :func:`rewrite` finds such tests in an
expression and replaces each by a boolean operand, a :class:`Scan`: the
expression left evaluates as before, on the tests' booleans instead of the
strings, and a column no longer named is not read at all.

Each rewritten test gives exactly what NumPy gives (:mod:`~bcolzx._query.kinds`):
its value for a missing row is the python VM's own result on that row, and
a test the python VM would refuse on a missing row (``<`` with
``na_object=None``), or a string NumPy would change first (one holding
U+0000, whose trailing ones NumPy's fixed-width strings drop), is left to
the python VM.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import numpy as np

from bcolzx._format import strings
from bcolzx._query.expr import Expression
from bcolzx._query.pyvm import python_vm
from bcolzx._query.tree import Binary, Call, Compare, Const, Logical, Name, Node, Unary, names_of
from bcolzx.errors import ExpressionError

__all__ = ["Pending", "Scan", "rewrite"]

#: A comparison with the column on the right, as the same test with it on the left.
_FLIPPED = {"eq": "eq", "ne": "ne", "lt": "gt", "le": "ge", "gt": "lt", "ge": "le"}
#: The string predicates a column may be tested with (its first argument).
_PREDICATES = ("startswith", "endswith", "contains")


class Pending(NamedTuple):
    """A block of a :class:`Scan` read but not computed yet: ``run()`` computes
    it (on any thread, once)."""

    run: Callable[[], np.ndarray]


class Scan:
    """The booleans of one test of a string column against one string, as a
    column of its own (``len``, ``dtype``, ``shape``, slices).

    Parameters
    ----------
    column : carray
        A one-dimensional StringDType column with an ``engine`` that has
        ``string_matcher``.
    op : str
        The test (a comparison's name, or one of the predicates).
    needle : bytes
        The UTF-8 of the string.
    na_result : bool
        What a missing row gives.
    """

    dtype = np.dtype(np.bool_)

    def __init__(self, column: Any, op: str, needle: bytes, na_result: bool):
        self.column, self.op, self.needle, self.na_result = column, op, needle, na_result

    def __len__(self) -> int:
        return len(self.column)

    @property
    def shape(self) -> tuple[int]:
        return (len(self.column),)

    def defer(self, start: int, stop: int) -> Pending:
        """Rows ``start .. stop-1``: their chunks read now, tested by ``run()``.

        Raises
        ------
        CorruptDataError, ChecksumError
            If a chunk is damaged.
        """
        return Pending(self.column.engine.string_matcher(start, stop, self.op, self.needle,
                                                         self.na_result))

    def __getitem__(self, key: slice) -> np.ndarray:
        start, stop, step = key.indices(len(self))
        if step != 1:
            raise IndexError("a scan is read by contiguous slices only")
        return self.defer(start, max(start, stop)).run()


def _scannable(column: Any) -> bool:
    """Whether `column` is a string column whose engine tests rows from its chunks."""
    engine = getattr(column, "engine", None)
    return strings.is_string(getattr(column, "dtype", None)) and \
        len(getattr(column, "shape", ())) == 1 and \
        getattr(engine, "kind", None) == "utf8" and callable(
            getattr(engine, "string_matcher", None))


def _text(node: Node, scalars: Mapping[str, np.ndarray]) -> str | None:
    """The string `node` stands for (a str constant, or a name bound to a 0-d
    string), as NumPy compares it; None if it is no such string, or one this
    module leaves to the python VM."""
    if isinstance(node, Const) and isinstance(node.value, str):
        text: Any = node.value
    elif isinstance(node, Name) and node.id in scalars:
        value = np.asarray(scalars[node.id])
        if value.ndim or value.dtype.kind not in "UT":
            return None
        text = value.item()
    else:
        return None
    if not isinstance(text, str) or "\x00" in text:
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: NumPy's business
        return None
    return text


class _Rewriter:
    """Replace the tests :func:`rewrite` handles, naming their scans ``_s0``, ``_s1``..."""

    def __init__(self, columns: Mapping[str, Any], scalars: Mapping[str, np.ndarray]):
        self.columns, self.scalars = columns, scalars
        self.scans: dict[str, Scan] = {}
        self.keys: dict[tuple, str] = {}
        self.described: list[str] = []

    def test(self, node: Node, name: str, op: str, text: str) -> Node:
        """The boolean operand of test `node` (`name` `op` `text`), or `node`
        itself when the python VM must evaluate it."""
        column = self.columns[name]
        # The python VM's own result on a missing row and on a string: the
        # result a row of either kind gives, or an error left to it.
        na = getattr(column.dtype, "na_object", None) if hasattr(column.dtype, "na_object") \
            else ""
        try:
            probe = python_vm(node, {**self.scalars, name: np.array([na, text], column.dtype)})
        except (ExpressionError, ValueError, TypeError):
            return node
        if probe.dtype != np.bool_ or probe.shape != (2,):
            return node
        key = (name, op, text, bool(probe[0]))
        scan = self.keys.get(key)
        if scan is None:
            scan = self.keys[key] = f"_s{len(self.keys)}"
            self.scans[scan] = Scan(column, op, text.encode("utf-8"), bool(probe[0]))
            self.described.append(f"{scan} = {op}({name}, {text!r})")
        return Compare("eq", Name(scan), Const(True))  # a filter still, as the test was

    def visit(self, node: Node) -> Node:
        if isinstance(node, Compare):
            for side, other, op in ((node.left, node.right, node.op),
                                    (node.right, node.left, _FLIPPED[node.op])):
                if isinstance(side, Name) and side.id in self.columns and \
                        _scannable(self.columns[side.id]):
                    text = _text(other, self.scalars)
                    if text is not None:
                        return self.test(node, side.id, op, text)
            return Compare(node.op, self.visit(node.left), self.visit(node.right))
        if isinstance(node, Call):
            if node.func in _PREDICATES and isinstance(node.args[0], Name) and \
                    node.args[0].id in self.columns and _scannable(self.columns[node.args[0].id]):
                text = _text(node.args[1], self.scalars)
                if text is not None:
                    return self.test(node, node.args[0].id, node.func, text)
            return Call(node.func, tuple(self.visit(a) for a in node.args))
        if isinstance(node, Unary):
            return Unary(node.op, self.visit(node.operand))
        if isinstance(node, Binary):
            return Binary(node.op, self.visit(node.left), self.visit(node.right))
        if isinstance(node, Logical):
            return Logical(node.op, tuple(self.visit(o) for o in node.operands))
        return node


def rewrite(expr: Expression, columns: Mapping[str, Any], scalars: Mapping[str, np.ndarray]
            ) -> tuple[Expression, dict[str, Any]]:
    """`expr` with its tests of string columns against strings replaced by
    :class:`Scan` operands, and the columns it then reads (scans included).

    Parameters
    ----------
    expr : Expression
        Without a reduction (one with is returned as it is).
    columns : mapping
        The columns `expr` reads, by name.
    scalars : mapping
        Its scalars, as arrays.

    Returns
    -------
    tuple
        ``(expression, columns)``: `expr` and `columns` themselves when no
        test is rewritten.

    Raises
    ------
    None
    """
    if expr.reduction is not None or not any(map(_scannable, columns.values())):
        return expr, dict(columns)
    rewriter = _Rewriter(columns, scalars)
    tree = rewriter.visit(expr.tree)
    if not rewriter.scans:
        return expr, dict(columns)
    used = names_of(tree)
    names = tuple(n for n in expr.names if n in used) + tuple(rewriter.scans)
    # Its own text (numexpr's plans are cached by text): what each scan tests.
    rewritten = Expression(f"{expr.text}  [{', '.join(rewriter.described)}]", names, tree)
    kept: dict[str, Any] = {n: c for n, c in columns.items() if n in used}
    kept.update(rewriter.scans)
    return rewritten, kept
