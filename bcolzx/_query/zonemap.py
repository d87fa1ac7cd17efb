"""Zone maps: can an expression be true anywhere in a block, given its column bounds?

A block's *bounds* for a column are ``(min, max)`` or ``(min, max, has_nan)``:

* ``min`` and ``max`` bound every value of the column in the block that is
  not NaN (or NaT); give them as NumPy scalars of the column's dtype (what
  :func:`bcolzx._format.zonemap.bounds_of` and ``ndarray.min`` return), since the dtype decides how
  the expression computes.  ``min > max``, or a NaN ``min`` or ``max``, means
  the block holds no non-NaN value;
* ``has_nan`` (default False) says the block may hold NaN (NaT for
  datetime64 and timedelta64); it is ignored for other dtypes.

:func:`may_match` runs the expression on intervals instead of arrays, with the
python VM's own operations on the interval ends (so with the same casts and
rounding, which are monotone), and answers False only when no row whose
values lie within the bounds can make the expression true.
:func:`may_match_blocks` answers the same for many blocks at once: the
bounds are arrays with one item per block, and every step is applied to
all the blocks together (a table's zone maps are analysed in one pass).  It understands
comparisons (chained too) of columns, scalars and constants; ``&``, ``|``,
``^``, ``~`` and ``and``/``or``/``not`` of those; ``isnan``; and ``+``,
``-``, ``*``, ``/`` and unary ``-`` of numbers (giving up on a possible
integer overflow or NaN).  Anything else is "maybe".  Where integer arithmetic may wrap around the
result is bounded by its dtype's whole range, and where a float corner is NaN
by ``[-inf, inf]`` with NaN possible.

NaN never satisfies ``<``, ``<=``, ``>``, ``>=`` or ``==`` but does satisfy
``!=``, so ``~(a < 5)`` and ``a != 5`` may be true in a block of NaNs.

A column of strings (NumPy's StringDType) has bounds ``(min, max, has_na)``
of ``bytes``: prefix bounds of the UTF-8 of its smallest and largest string
(:func:`bcolzx._format.strings.bounds`), None when the block holds no
string, `has_na` whether it holds a missing value.  Comparisons of such a
column with a ``str`` constant (``==``, ``!=``, ``<``, ``<=``, ``>``,
``>=``) and ``startswith(column, "prefix")`` are decided on the UTF-8 bytes
(code point order, NumPy's order for strings); anything else on strings is
"maybe".
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np

from bcolzx._format.strings import BOUND_BYTES as _BOUND_BYTES
from bcolzx._format.zonemap import KINDS as _ORDERED
from bcolzx._query import kinds
from bcolzx._query.expr import Expression
from bcolzx._query.tree import Binary, Call, Compare, Const, Logical, Name, Node, Unary, is_filter
from bcolzx.errors import ExpressionError

__all__ = ["Decisions", "decide_blocks", "may_match", "may_match_blocks", "remaining"]

# _ORDERED: the dtype kinds whose min/max mean something (those with a zone map).
_ARITHMETIC = "iuf"


class _Truth(NamedTuple):
    """Whether a boolean expression can be true, and whether it can be false
    (booleans, or boolean arrays with one item per block)."""

    true: Any
    false: Any


_MAYBE = _Truth(True, True)


class _Range(NamedTuple):
    """Every non-NaN value lies in [lo, hi] (none if `empty`); `nan`: NaN possible.

    `lo` and `hi` are arrays of the value's dtype (0-d, or one item per
    block), or the same :class:`~bcolzx._query.kinds.Literal` for a Python
    constant (typed as the python VM types it); `nan` and `empty` are boolean
    arrays that broadcast with them.
    """

    lo: Any
    hi: Any
    nan: Any
    empty: Any

    @property
    def dtype(self) -> np.dtype:
        return kinds.array_of(self.lo).dtype


class _Text(NamedTuple):
    """Prefix bounds of a block of strings: every string ``s`` (as UTF-8) has
    ``lo <= s <= hi``; `lo` and `hi` are None when the block holds no
    string; `nan`: a missing value is possible."""

    lo: bytes | None
    hi: bytes | None
    nan: bool


_Abstract = _Truth | _Range | _Text | None  # None: nothing known


def may_match(expr: Expression, bounds: Mapping[str, tuple],
              scalars: Mapping[str, Any] | None = None) -> bool:
    """Can `expr` be true for some row whose column values lie within `bounds`?

    Parameters
    ----------
    expr : Expression
        A compiled expression (see :func:`~bcolzx._query.expr.compile_expression`).
    bounds : mapping
        For each column name, ``(min, max)`` or ``(min, max, has_nan)`` (see
        the module documentation).
    scalars : mapping, optional
        Values of the names that are not columns.

    Returns
    -------
    bool
        False only if the expression is provably false on every such row
        (the block can be skipped); True otherwise.

    Raises
    ------
    ValueError
        If a bounds entry is not a 2- or 3-tuple.

    Examples
    --------
    >>> import numpy as np
    >>> from bcolzx._query.expr import compile_expression
    >>> e = compile_expression("(a > 10) & (b < 0)")
    >>> may_match(e, {"a": (np.int64(0), np.int64(5)), "b": (np.int64(-3), np.int64(3))})
    False
    """
    return bool(_may_be_true(expr, bounds, scalars))


def may_match_blocks(expr: Expression, bounds: Mapping[str, tuple],
                     scalars: Mapping[str, Any] | None = None) -> np.ndarray:
    """:func:`may_match` for many blocks at once: which of them may match.

    Parameters
    ----------
    expr : Expression
        A compiled expression.
    bounds : mapping
        For each column name, ``(mins, maxs)`` or ``(mins, maxs, has_nans)``:
        arrays with one item per block (a zone map's fields), of a dtype
        with a zone map other than strings.
    scalars : mapping, optional
        Values of the names that are not columns.

    Returns
    -------
    numpy.ndarray
        One boolean per block: False where :func:`may_match` of that block's
        bounds is False.

    Raises
    ------
    ValueError
        If a bounds entry is not a 2- or 3-tuple, or its arrays differ in length.
    """
    lengths = {len(np.asarray(entry[0])) for entry in bounds.values()}
    if len(lengths) != 1:
        raise ValueError(f"the bounds must have one item per block for every column, "
                         f"not {sorted(lengths)} items")
    return np.broadcast_to(_may_be_true(expr, bounds, scalars), (lengths.pop(),)).copy()


def _may_be_true(expr: Expression, bounds: Mapping[str, tuple],
                 scalars: Mapping[str, Any] | None,
                 record: dict[int, _Truth] | None = None) -> Any:
    """Whether `expr` can be true: a boolean, or one per block (`record`:
    filled with ``id(node) -> _Truth`` of the filter's boolean nodes)."""
    leaves: dict[str, Any] = {}
    for name in expr.names:
        if name in bounds:
            leaves[name] = _text_bounds(bounds[name]) or _bounds_range(name, bounds[name])
        elif scalars is not None and name in scalars:
            leaves[name] = _point(np.asarray(scalars[name]))
        else:
            return True  # an unknown name: nothing to say
    with np.errstate(all="ignore"):
        result = _Analyser(leaves, record).analyse(expr.tree)
    return np.asarray(_truth(result).true, dtype=bool)


#: A part of a filter (:func:`remaining`) that may be true or false in a block,
#: that holds on every row of it, that holds on none.
MAYBE, TRUE, FALSE = 0, 1, 2


class Decisions(NamedTuple):
    """What zone maps decide about a filter, block by block (:func:`decide_blocks`)."""

    #: One boolean per block: whether the filter may hold on a row of it.
    maybe: np.ndarray
    #: One row per block, one column per boolean part of the filter (its
    #: comparisons and logical operators, in :func:`filter_parts` order):
    #: :data:`MAYBE`, :data:`TRUE` or :data:`FALSE` (uint8).
    parts: np.ndarray


def filter_parts(tree: Node) -> list[Node]:
    """The boolean parts of a filter in prefix order: its comparisons, ``&``,
    ``|``, ``^``, ``~`` and ``and``/``or``/``not`` (the columns of
    :attr:`Decisions.parts`)."""
    found: list[Node] = []

    def visit(node: Node) -> None:
        if isinstance(node, Compare):
            found.append(node)
        elif isinstance(node, Logical):
            found.append(node)
            for operand in node.operands:
                visit(operand)
        elif isinstance(node, Unary):
            found.append(node)
            visit(node.operand)
        elif isinstance(node, Binary):
            found.append(node)
            visit(node.left)
            visit(node.right)
    visit(tree)
    return found


def decide_blocks(expr: Expression, bounds: Mapping[str, tuple],
                  scalars: Mapping[str, Any] | None = None) -> Decisions:
    """:func:`may_match_blocks`, and for each block which parts of the filter
    `expr` (:func:`~bcolzx._query.tree.is_filter`) its bounds decide.

    Parameters
    ----------
    expr, bounds, scalars
        As :func:`may_match_blocks`; `expr` must be a filter.

    Returns
    -------
    Decisions

    Raises
    ------
    ValueError
        As :func:`may_match_blocks`, or if `expr` is not a filter.
    """
    if not is_filter(expr.tree):
        raise ValueError(f"{expr.text!r} is not a filter (comparisons joined by logic)")
    lengths = {len(np.asarray(entry[0])) for entry in bounds.values()}
    if len(lengths) != 1:
        raise ValueError(f"the bounds must have one item per block for every column, "
                         f"not {sorted(lengths)} items")
    nblocks = lengths.pop()
    record: dict[int, _Truth] = {}
    maybe = np.broadcast_to(_may_be_true(expr, bounds, scalars, record), (nblocks,)).copy()
    parts = filter_parts(expr.tree)
    decided = np.zeros((nblocks, len(parts)), dtype=np.uint8)
    for k, node in enumerate(parts):
        truth = record.get(id(node), _MAYBE)
        true = np.broadcast_to(np.asarray(truth.true, dtype=bool), (nblocks,))
        false = np.broadcast_to(np.asarray(truth.false, dtype=bool), (nblocks,))
        decided[:, k] = np.where(~false, TRUE, np.where(~true, FALSE, MAYBE))
    return Decisions(maybe, decided)


def remaining(tree: Node, decided: np.ndarray) -> Node:
    """What is left of the filter `tree` to evaluate on a block where its parts
    are `decided` (a row of :attr:`Decisions.parts`): each decided part a
    constant, and ``&``, ``|``, ``^``, ``~`` of constants folded.  The result
    holds on the same rows of that block as `tree`; it is ``Const(True)``
    when every row matches and ``Const(False)`` when none does.

    Examples
    --------
    >>> import numpy as np
    >>> from bcolzx._query.expr import compile_expression
    >>> e = compile_expression("(a > 10) | (a < 0)")
    >>> d = decide_blocks(e, {"a": (np.array([0, 20]), np.array([5, 30]))})
    >>> [remaining(e.tree, row) for row in d.parts]
    [Const(value=False), Const(value=True)]
    """
    position = iter(range(len(decided)))

    def fold(node: Node) -> Node:
        k = next(position)
        if decided[k] != MAYBE:
            _skip(node)
            return Const(bool(decided[k] == TRUE))
        if isinstance(node, Compare):
            return node
        if isinstance(node, Unary):
            inner = fold(node.operand)
            return Const(not inner.value) if isinstance(inner, Const) else \
                Unary(node.op, inner)
        if isinstance(node, Binary):
            left, right = fold(node.left), fold(node.right)
            return _joined(node.op, [left, right], lambda ops: Binary(node.op, *ops))
        assert isinstance(node, Logical)
        operands = [fold(o) for o in node.operands]
        return _joined(node.op, operands, lambda ops: Logical(node.op, tuple(ops)))

    def _skip(node: Node) -> None:
        """Step over the parts below a decided `node`."""
        for _ in filter_parts(node)[1:]:
            next(position)

    return fold(tree)


def _joined(op: str, operands: list[Node], build: Any) -> Node:
    """``&``, ``|`` or ``^`` of `operands`, the constants among them folded."""
    consts = [o.value for o in operands if isinstance(o, Const)]
    rest = [o for o in operands if not isinstance(o, Const)]
    if op == "and":
        if not all(consts):
            return Const(False)
    elif op == "or":
        if any(consts):
            return Const(True)
    else:  # xor: an odd number of true constants turns the rest round
        flip = sum(map(bool, consts)) % 2 == 1
        if not rest:
            return Const(flip)
        if len(rest) == 1:
            return Unary("invert", rest[0]) if flip else rest[0]
        return Unary("invert", build(rest)) if flip else build(rest)
    if not rest:
        return Const(op == "and")
    return rest[0] if len(rest) == 1 else build(rest)


def _text_bounds(entry: Any) -> _Text | None:
    """The bounds of a block of strings (bytes or None ends), else None."""
    if not isinstance(entry, tuple) or len(entry) not in (2, 3) or not all(
            e is None or isinstance(e, bytes) for e in entry[:2]):
        return None
    lo, hi = entry[0], entry[1]
    if (lo is None) != (hi is None):
        return _Text(None, None, True)  # inconsistent: assume anything
    return _Text(lo, hi, bool(entry[2]) if len(entry) == 3 else False)


def _bounds_range(name: str, entry: tuple) -> _Range | None:
    if not isinstance(entry, tuple) or len(entry) not in (2, 3):
        raise ValueError(f"bounds of {name!r} must be (min, max) or (min, max, has_nan), "
                         f"not {entry!r}")
    lo, hi = np.asarray(entry[0]), np.asarray(entry[1])
    dtype = np.result_type(lo, hi)
    if lo.ndim > 1 or hi.ndim > 1 or dtype.kind not in _ORDERED:
        return None
    lo, hi = _to_kind(lo.astype(dtype)), _to_kind(hi.astype(dtype))
    has_nan = np.asarray(entry[2] if len(entry) == 3 and dtype.kind in "fcMm" else False,
                         dtype=bool)
    empty = _is_nan(lo) | _is_nan(hi) | (lo > hi)
    return _Range(lo, hi, has_nan, empty)


def _to_kind(value: np.ndarray) -> np.ndarray:
    kind = kinds.kind_of(value.dtype)
    return value if kind is None else value.astype(kind)


def _is_nan(value: np.ndarray) -> np.ndarray:
    """Which items of `value` are NaN (NaT), as a boolean array of its shape."""
    if value.dtype.kind in "fc":
        return np.isnan(value)
    if value.dtype.kind in "Mm":
        return np.isnat(value)
    return np.zeros(value.shape, dtype=bool)


def _point(value: np.ndarray) -> _Range | None:
    if value.ndim or value.dtype.kind not in _ORDERED:
        return None
    value = _to_kind(value)
    nan = _is_nan(value)
    return _Range(value, value, nan, nan)


def _truth(value: _Abstract) -> _Truth:
    if isinstance(value, _Truth):
        return value
    if isinstance(value, _Range) and value.dtype.kind == "b":  # empty: maybe
        hi, lo = kinds.array_of(value.hi), kinds.array_of(value.lo)
        return _Truth(value.empty | hi, value.empty | ~lo)
    return _MAYBE


class _Analyser:
    """Abstract evaluation of a tree on intervals."""

    def __init__(self, leaves: Mapping[str, _Range | None],
                 record: dict[int, _Truth] | None = None):
        self.leaves = leaves
        self.record = record

    def analyse(self, node: Node) -> _Abstract:
        result = self._analyse(node)
        if self.record is not None and isinstance(node, (Compare, Logical, Unary, Binary)):
            self.record[id(node)] = _truth(result)
        return result

    def _analyse(self, node: Node) -> _Abstract:
        if isinstance(node, Name):
            return self.leaves[node.id]
        if isinstance(node, Const):
            return self.constant(node.value)
        if isinstance(node, Compare):
            left, right = self.analyse(node.left), self.analyse(node.right)
            if isinstance(left, _Text) or isinstance(right, _Text):
                return _compare_text(node.op, left, right)
            return _compare(node.op, left, right)
        if isinstance(node, Logical):
            return _combine(node.op, [_truth(self.analyse(o)) for o in node.operands])
        if isinstance(node, Unary):
            return self.unary(node)
        if isinstance(node, Binary):
            return self.binary(node)
        if isinstance(node, Call) and node.func == "startswith":
            text, prefix = self.analyse(node.args[0]), _utf8_of(self.analyse(node.args[1]))
            if isinstance(text, _Text) and prefix is not None:
                return _startswith(text, prefix)
            return None
        if isinstance(node, Call) and node.func == "isnan":
            arg = self.analyse(node.args[0])
            if isinstance(arg, _Range):
                return _Truth(arg.nan, ~arg.empty)
        return None

    def constant(self, value: Any) -> _Range | None:
        if isinstance(value, np.generic):
            return _point(np.asarray(value))
        if isinstance(value, (str, bytes)):
            return _Range(kinds.Literal(value), kinds.Literal(value), False, False)
        literal = kinds.Literal(value)
        if literal.typed().dtype.kind not in _ORDERED:
            return None
        nan = _is_nan(literal.typed())
        return _Range(literal, literal, nan, nan)

    def unary(self, node: Unary) -> _Abstract:
        value = self.analyse(node.operand)
        if node.op == "not" or (node.op == "invert" and _is_boolean(value)):
            truth = _truth(value)
            return _Truth(truth.false, truth.true)
        if node.op == "pos":
            return value
        if node.op == "neg" and _is_number(value):
            ends = kinds.unary("neg", _ends(value, "lh"))
            negated = _from_ends(ends, lambda: -_exact(value, "lh"), value.nan, False)
            if negated is None:
                return None
            # a block without values stays one (its NaN, if any, stays NaN)
            return negated._replace(nan=np.where(value.empty, value.nan, negated.nan),
                                    empty=value.empty)
        return None

    def binary(self, node: Binary) -> _Abstract:
        left, right = self.analyse(node.left), self.analyse(node.right)
        if node.op in ("and", "or", "xor") and _is_boolean(left) and _is_boolean(right):
            return _combine(node.op, [_truth(left), _truth(right)])
        if node.op in ("add", "sub", "mul", "truediv"):
            return _arithmetic(node.op, left, right)
        return None


def _is_boolean(value: _Abstract) -> bool:
    return isinstance(value, _Truth) or (isinstance(value, _Range)
                                         and value.dtype.kind == "b")


def _is_number(value: _Abstract) -> bool:
    return isinstance(value, _Range) and value.dtype.kind in _ARITHMETIC


def _combine(op: str, truths: list[_Truth]) -> _Truth:
    result = truths[0]
    for other in truths[1:]:
        if op == "and":
            result = _Truth(np.logical_and(result.true, other.true),
                            np.logical_or(result.false, other.false))
        elif op == "or":
            result = _Truth(np.logical_or(result.true, other.true),
                            np.logical_and(result.false, other.false))
        else:  # xor
            result = _Truth((result.true & other.false) | (result.false & other.true),
                            (result.true & other.true) | (result.false & other.false))
    return result


def _holds(op: str, x: Any, y: Any) -> np.ndarray:
    """The python VM's comparison of interval ends (same casts as on data)."""
    return kinds.compare(op, x, y)


def _utf8_of(value: _Abstract) -> bytes | None:
    """The UTF-8 of a ``str`` constant's range, else None."""
    if isinstance(value, _Range) and isinstance(value.lo, kinds.Literal) and \
            isinstance(value.lo.value, str):
        try:
            return value.lo.value.encode("utf-8")
        except UnicodeError:  # a lone surrogate: no string equals it
            return None
    return None


_SWAPPED = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le", "eq": "eq", "ne": "ne"}


def _compare_text(op: str, x: _Abstract, y: _Abstract) -> _Truth:
    """A comparison of a block of strings with a ``str`` constant (else "maybe")."""
    if isinstance(y, _Text):
        x, y, op = y, x, _SWAPPED[op]
    value = _utf8_of(y)
    if not isinstance(x, _Text) or value is None:
        return _MAYBE
    if op == "ne":  # a missing value may compare unequal to anything
        if x.nan or x.lo is None:
            return _MAYBE if x.nan else _Truth(False, True)
        # lo == hi == value, shorter than a cut bound: every string is value
        only = x.lo == x.hi == value and len(value) < _BOUND_BYTES
        return _Truth(not only, True)
    if x.lo is None:  # no string: ==, <... are false for missing values
        return _Truth(False, True)
    lo, hi = x.lo, x.hi
    assert hi is not None
    true = {"eq": lo <= value <= hi, "lt": lo < value, "le": lo <= value,
            "gt": hi > value, "ge": hi >= value}[op]
    return _Truth(true, True)


def _startswith(x: _Text, prefix: bytes) -> _Truth:
    """``startswith`` of a block of strings: a string with `prefix` is at least
    `prefix`, and its first ``len(prefix)`` bytes are at least those of ``lo``."""
    if x.lo is None or x.hi is None:
        return _MAYBE if x.nan else _Truth(False, True)
    return _Truth(x.hi >= prefix and x.lo[:len(prefix)] <= prefix, True)


def _compare(op: str, x: _Abstract, y: _Abstract) -> _Truth:
    if not (isinstance(x, _Range) and isinstance(y, _Range)):
        return _MAYBE
    nan = x.nan | y.nan
    try:
        true, false = _compare_ranges(op, x, y)
    except ExpressionError:
        return _MAYBE
    if op == "ne":
        true = true | nan
    else:
        false = false | nan
    empty = x.empty | y.empty  # no value: only NaN compares, unequal to all
    return _Truth(np.where(empty, nan & (op == "ne"), true),
                  np.where(empty, nan & (op != "ne"), false))


def _compare_ranges(op: str, x: _Range, y: _Range) -> tuple[np.ndarray, np.ndarray]:
    """Whether some x, y (not NaN) make `op` true, and whether some make it false."""
    if op in ("gt", "ge"):
        x, y, op = y, x, {"gt": "lt", "ge": "le"}[op]
    if op == "lt":
        return _holds("lt", x.lo, y.hi), _holds("ge", x.hi, y.lo)
    if op == "le":
        return _holds("le", x.lo, y.hi), _holds("gt", x.hi, y.lo)
    overlap = _holds("le", x.lo, y.hi) & _holds("le", y.lo, x.hi)
    single = ~(_holds("ne", x.lo, y.hi) | _holds("ne", x.hi, y.lo))
    return (overlap, ~single) if op == "eq" else (~single, overlap)


def _ends(value: _Range, which: str) -> Any:
    """The ends of `value` picked by `which` ('l'/'h' letters), along a last axis."""
    if isinstance(value.lo, kinds.Literal):
        return value.lo
    return np.stack([value.lo if c == "l" else value.hi for c in which], axis=-1)


def _exact(value: _Range, which: str) -> np.ndarray:
    """The same ends as Python numbers (an object array), for exact integer arithmetic."""
    lo, hi = (kinds.array_of(v).astype(object) for v in (value.lo, value.hi))
    return np.stack([lo if c == "l" else hi for c in which], axis=-1)


_EXACT = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b}


def _arithmetic(op: str, x: _Abstract, y: _Abstract) -> _Range | None:
    if not (_is_number(x) and _is_number(y)):
        return None
    try:
        ends = np.asarray(kinds.binary(op, _ends(x, "llhh"), _ends(y, "lhlh")))
        unsound = False
        if op == "truediv":  # where the divisor may be zero nothing is known
            zero = kinds.Literal(0)
            unsound = _holds("le", y.lo, zero) & _holds("ge", y.hi, zero)
    except ExpressionError:
        return None
    nan = x.nan | y.nan
    if op == "mul":  # 0 * inf inside the box
        nan = nan | ~(_finite(x) & _finite(y))
    empty = x.empty | y.empty  # NaN in, NaN out
    if ends.dtype.kind != "f":
        unsound = unsound | empty  # (integers: never, but nothing is known then)
    result = _from_ends(ends, lambda: _EXACT[op](_exact(x, "llhh"), _exact(y, "lhlh")),
                        nan, unsound)
    if result is None or ends.dtype.kind != "f":
        return result
    return result._replace(nan=np.where(empty, x.nan | y.nan, result.nan), empty=empty)


def _finite(value: _Range) -> np.ndarray:
    """Whether both ends of `value` are finite."""
    return np.isfinite(kinds.array_of(value.lo)) & np.isfinite(kinds.array_of(value.hi))


def _from_ends(ends: np.ndarray, exact: Any, nan: Any, unsound: Any) -> _Range | None:
    """The range spanned by computed corner values (along the last axis of
    `ends`), except where they may be wrong: an integer overflow (the corners
    differ from ``exact()``, computed with Python numbers), a NaN corner, or
    where `unsound`.  There the range is the dtype's whole range (NaN
    possible for floats); None for a result neither integer nor float."""
    ends = np.asarray(ends)
    if ends.dtype.kind in "iu":
        wrong = np.asarray(ends.astype(object) != exact()).any(axis=-1) | unsound
        info = np.iinfo(ends.dtype)
        low, high = info.min, info.max
    elif ends.dtype.kind == "f":
        wrong = np.isnan(ends).any(axis=-1) | unsound
        low, high = -np.inf, np.inf
        nan = nan | wrong
    else:
        return None
    lo = np.where(wrong, ends.dtype.type(low), ends.min(axis=-1)).astype(ends.dtype)
    hi = np.where(wrong, ends.dtype.type(high), ends.max(axis=-1)).astype(ends.dtype)
    return _Range(lo, hi, np.asarray(nan, dtype=bool), np.zeros(lo.shape, dtype=bool))
