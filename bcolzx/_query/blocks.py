"""Evaluate an expression over columns, block by block, on the shared thread pool.

A *column* is anything with ``__len__``, ``dtype``, ``shape`` and slicing
``column[a:b]`` that returns a NumPy array: a :class:`bcolzx.carray`, a NumPy
array, a memory map.  Only the columns the expression names are read, one
block of rows at a time, so memory stays flat whatever the column length.

Blocks are read on the calling thread (columns need not be thread-safe) and
evaluated on bcolzx's one pool of worker threads (:mod:`bcolzx._threads`);
NumPy ufuncs and numexpr release the GIL, so evaluations overlap each other
and the reads of the next blocks.  At most ``2 * nthreads`` blocks are in
flight.  A query evaluated from one of the pool's own threads (a task that
queries) evaluates its blocks inline: a task never waits for the pool it
occupies.  So do up to :data:`_INLINE_BLOCKS` blocks (what a selective
query keeps after zone maps): handing them to other threads costs more than
it overlaps.
"""

from __future__ import annotations

import math
import operator
import threading
from collections import OrderedDict, deque
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future
from typing import Any, NamedTuple

import numpy as np

from bcolzx import _threads
from bcolzx._query.expr import Expression, compile_expression
from bcolzx._query.kinds import kind_of
from bcolzx._query.pyvm import python_vm
from bcolzx._query.textscan import Pending, Scan, rewrite
from bcolzx._query.tree import (
    Binary,
    Compare,
    Const,
    Logical,
    Name,
    Node,
    conjuncts,
    is_filter,
    names_of,
)
from bcolzx.errors import UndefinedNameError

__all__ = ["BLOCK_BYTES", "Operands", "evaluate", "evaluate_blocks", "operands"]

#: Bytes of the widest column read per block when no ``blen`` is given and the
#: columns have no ``chunklen``.
BLOCK_BYTES = 1 << 20
#: Blocks in flight per thread.
_IN_FLIGHT = 2
#: A conjunction whose first parts hold on at most one row in this many of a
#: block evaluates its other parts on those rows only.
_SPARSE = 16
#: Values of an isin-like part from which a sorted block is searched instead
#: of compared value by value (the check that it is sorted costs two passes).
_SORTED_SEARCH = 3
#: Blocks evaluated on the calling thread, however many threads: a few
#: blocks take ~0.1 ms each, about what waking a worker costs on a busy machine.
_INLINE_BLOCKS = 3


def _as_expression(expr: Expression | str) -> Expression:
    return expr if isinstance(expr, Expression) else compile_expression(expr)


def _split_names(expr: Expression, columns: Mapping[str, Any],
                 scalars: Mapping[str, Any]) -> tuple[list[str], dict[str, np.ndarray]]:
    """The column names the expression reads, and its scalars as arrays."""
    used_columns, used_scalars = [], {}
    for name in expr.names:
        if name in columns and name in scalars:
            raise ValueError(f"name {name!r} is both a column and a scalar")
        if name in columns:
            used_columns.append(name)
        elif name in scalars:
            used_scalars[name] = np.asarray(scalars[name])
        else:
            raise UndefinedNameError(f"name {name!r} in expression {expr.text!r} is neither a "
                                  "column nor a scalar")
    return used_columns, used_scalars


def _length(columns: Mapping[str, Any]) -> int | None:
    lengths = {name: len(col) for name, col in columns.items()}
    if len(set(lengths.values())) > 1:
        raise ValueError(f"columns must all have the same length, not {lengths}")
    return next(iter(lengths.values()), None)


def _check_positive(name: str, value: Any) -> int:
    if isinstance(value, bool):
        raise TypeError(f"{name} must be an int, not a bool")
    value = operator.index(value)
    if value < 1:
        raise ValueError(f"{name} must be at least 1, not {value}")
    return value


def _default_blen(columns: list[Any]) -> int:
    chunklens = [getattr(col, "chunklen", None) for col in columns]
    if chunklens and all(isinstance(c, int) and c > 0 for c in chunklens):
        return max(chunklens)
    row_bytes = max((col.dtype.itemsize * math.prod(col.shape[1:]) for col in columns),
                    default=1)
    return max(1, BLOCK_BYTES // max(1, row_bytes))


def _default_nthreads() -> int:
    from bcolzx.defaults import defaults

    return defaults.nthreads


def _rows(start: int, stop: int | None, length: int) -> tuple[int, int]:
    begin, end, _ = slice(start, stop).indices(length)
    return begin, max(begin, end)


class Operands(NamedTuple):
    """What evaluating an expression block by block needs to know first."""

    #: The compiled expression.
    expr: Expression
    #: The names of the columns it reads, in its order.
    names: list[str]
    #: Its scalars, as arrays.
    values: dict[str, np.ndarray]
    #: The columns' common length (None when there are no columns).
    length: int | None
    #: Rows per block: the given `blen`, checked, or the columns' default
    #: (0 when the expression reads no column).
    blen: int


def operands(expr: Expression | str, columns: Mapping[str, Any],
             scalars: Mapping[str, Any] | None = None, blen: int | None = None) -> Operands:
    """Compile `expr` if needed, split its names into columns and scalars, and
    settle the block length: the checks every block-wise evaluator (this
    module's, and Dask's in :mod:`bcolzx.interop.dask`) makes before reading.

    Raises
    ------
    ExpressionError, ValueError, TypeError
        As :func:`evaluate_blocks`.
    """
    expr = _as_expression(expr)
    names, values = _split_names(expr, columns, {} if scalars is None else scalars)
    used = [columns[n] for n in names]
    length = _length(dict(zip(names, used)))
    if not names:
        return Operands(expr, names, values, length, 0)
    blen = _check_positive("blen", blen if blen is not None else _default_blen(used))
    return Operands(expr, names, values, length, blen)


def evaluate_blocks(
    expr: Expression | str,
    columns: Mapping[str, Any],
    scalars: Mapping[str, Any] | None = None,
    start: int = 0,
    stop: int | None = None,
    blen: int | None = None,
    vm: str = "python",
    nthreads: int | None = None,
    skip_block: Callable[[int, int], bool] | None = None,
    with_columns: bool = False,
    tree_for: Callable[[int, int], Node | None] | None = None,
) -> Iterator[tuple]:
    """Evaluate `expr` on rows ``[start, stop)`` of `columns`, one block at a time.

    Parameters
    ----------
    expr : Expression or str
        The expression (a str is compiled with
        :func:`~bcolzx._query.expr.compile_expression`).
    columns : mapping
        Columns by name, all of the same length; only those the expression
        names are read.
    scalars : mapping, optional
        Values of the other names; they broadcast against the blocks.
    start, stop : int, optional
        The rows to evaluate, as in a slice (default: all).
    blen : int, optional
        Rows per block (default: the columns' ``chunklen`` if they have one,
        else about :data:`BLOCK_BYTES` of the widest column).
    vm : {'python', 'numexpr'}
        The virtual machine (see :mod:`bcolzx._query.expr`).
    nthreads : int, optional
        Threads of the shared pool evaluating blocks (default:
        ``bcolzx.defaults.nthreads``); 1 evaluates on the calling thread, as
        does a call from one of the pool's threads.
    skip_block : callable, optional
        ``skip_block(block_start, block_stop)`` returning True skips that
        block: it is neither read nor evaluated nor yielded.
    with_columns : bool
        Also yield the block's rows of the columns the expression read, as
        a dict by name (a third item), so that a caller needing them again
        (a query's output columns) does not read them twice.
    tree_for : callable, optional
        ``tree_for(block_start, block_stop)``: for a filter (comparisons
        joined by logic), what is left of it to evaluate on that block, a
        tree that holds on the same rows of the block (``Const(True)``: on
        all of them), or None for the whole filter; what the planner's zone
        maps decide of its parts (:func:`bcolzx._query.zonemap.remaining`).
        Only the columns it names are read.

    Yields
    ------
    tuple of (int, numpy.ndarray)
        ``(block_start, result)`` in increasing order of ``block_start``,
        skipped blocks left out; ``result`` has one row per row of the block.
        If the expression names no column it is evaluated once on the
        scalars, and the one item yielded is ``(start, result)`` with the
        unbroadcast (typically 0-d) result.

    Raises
    ------
    ExpressionError
        If a name is neither a column nor a scalar, or evaluation fails.
    ValueError
        If the columns differ in length, a name is both a column and a
        scalar, or `blen`, `nthreads` or `vm` are invalid.
    TypeError
        If `blen` or `nthreads` are not ints.

    Examples
    --------
    >>> import numpy as np
    >>> a = np.arange(10)
    >>> [(s, r.tolist()) for s, r in evaluate_blocks("a * k", {"a": a}, {"k": 2}, blen=4,
    ...                                               nthreads=1, start=2)]
    [(2, [4, 6, 8, 10]), (6, [12, 14, 16, 18])]
    """
    expr = _as_expression(expr)
    scalars = {} if scalars is None else scalars
    names, values = _split_names(expr, columns, scalars)
    length = _length(columns)
    begin, end = _rows(start, stop, length or 0)
    nthreads = _check_positive("nthreads", nthreads if nthreads is not None
                               else _default_nthreads())
    if not names:
        return _once(expr, values, begin, vm)
    used = [columns[n] for n in names]
    blen = _check_positive("blen", blen if blen is not None else _default_blen(used))
    ranges = [(a, min(a + blen, end)) for a in range(begin, end, blen)]
    if skip_block is not None:
        ranges = [(a, b) for a, b in ranges if not skip_block(a, b)]
    # Tests of string columns against strings: from the chunks' bytes.
    scanned, reads = rewrite(expr, dict(zip(names, used)), values)
    if scanned is not expr:
        tree_for = None  # what zone maps leave of a filter names the tests rewritten
    read = _Reader(scanned, reads, values, vm, with_columns)
    blocks = [(a, b, None if tree_for is None else tree_for(a, b)) for a, b in ranges]
    if nthreads == 1 or len(blocks) <= _INLINE_BLOCKS:
        return (read.evaluate(a, b, tree) for a, b, tree in blocks)
    return _pooled(read, blocks, nthreads)


def _once(expr: Expression, values: dict[str, np.ndarray], start: int, vm: str
          ) -> Iterator[tuple[int, np.ndarray]]:
    yield start, expr.evaluate(values, vm)


class _Reader:
    """Read one block of the named columns and evaluate the expression on it
    (or, where zone maps decided some of a filter, what is left of it)."""

    def __init__(self, expr: Expression, columns: dict[str, Any],
                 scalars: dict[str, np.ndarray], vm: str, with_columns: bool = False):
        if vm not in ("python", "numexpr"):
            raise ValueError(f"unknown virtual machine {vm!r}; choose 'python' or 'numexpr'")
        self.expr = expr
        self.columns = columns
        self.scalars = scalars
        self.vm = vm
        self.with_columns = with_columns
        self.one_per_row = all(len(c.shape) == 1 for c in columns.values())
        # A filter joined by & at its top, on columns of one value a row: its
        # parts one after another, each with the names it reads.
        filtering = is_filter(expr.tree)
        #: A filter as one part (evaluated so, as numexpr's VM would too).
        self.whole = self._plan(expr.tree)[2] if filtering else None
        self.parts = self._plan(expr.tree)[0] if filtering else None

    def _plan(self, tree: Node) -> tuple[list[_Part] | None, set[str], _Part]:
        """A filter's conjunction parts (None: not a conjunction of several, or
        not on columns of one value a row), names, and itself as one part."""
        plan = _PLANS.get(tree)
        parts = plan.parts if self.one_per_row else None
        return parts, plan.whole.names, plan.whole

    def read(self, start: int, stop: int, names: Any = None) -> dict[str, Any]:
        """Rows ``start .. stop-1`` of the columns (of `names` only, if given;
        a scan's only read, tested by :meth:`compute`), and the scalars."""
        namespace: dict[str, Any] = {
            name: col.defer(start, stop) if isinstance(col, Scan) else np.asarray(col[start:stop])
            for name, col in self.columns.items() if names is None or name in names}
        namespace.update(self.scalars)
        return namespace

    def compute(self, namespace: dict[str, Any], tree: Node | None = None) -> np.ndarray:
        for name, value in namespace.items():
            if isinstance(value, Pending):
                namespace[name] = value.run()
        if tree is not None:
            parts, _, whole = self._plan(tree)
            if parts is None:
                return whole.evaluate(namespace)
            return _conjunction(parts, _Block(self, 0, 0, namespace))
        if self.parts is None:
            if self.whole is not None:
                return self.whole.evaluate(namespace)
            return self.expr.evaluate(namespace, self.vm)
        return _conjunction(self.parts, _Block(self, 0, 0, namespace))

    def result(self, start: int, namespace: dict, value: np.ndarray) -> tuple:
        """What evaluate_blocks yields for a block (with the columns read whole)."""
        if not self.with_columns:
            return start, value
        return start, value, {name: namespace[name] for name, col in self.columns.items()
                              if name in namespace and not isinstance(col, Scan)}

    def evaluate(self, start: int, stop: int, tree: Node | None = None) -> tuple:
        if isinstance(tree, Const):  # zone maps decided every row
            return self.result(start, {}, np.full(stop - start, bool(tree.value)))
        parts, names = (self.parts, None) if tree is None else self._plan(tree)[:2]
        if parts is not None:  # on the calling thread: columns read as needed
            block = _Block(self, start, stop)
            return self.result(start, block.whole, _conjunction(parts, block))
        namespace = self.read(start, stop, names)
        return self.result(start, namespace, self.compute(namespace, tree))


class _Block:
    """The operands of rows ``start .. stop-1``: columns read whole as the
    parts of a conjunction need them, or only some rows of them; `namespace`
    gives them all at once (read before, on the calling thread)."""

    def __init__(self, reader: _Reader, start: int, stop: int,
                 namespace: dict[str, np.ndarray] | None = None):
        self.reader, self.start, self.stop = reader, start, stop
        self.whole = {} if namespace is None else namespace

    def all(self, names: set[str]) -> dict[str, np.ndarray]:
        """Every row of `names` (columns not read yet are read now)."""
        out = {}
        for name in names:
            if name in self.reader.scalars:
                out[name] = self.reader.scalars[name]
                continue
            if name not in self.whole:
                self.whole[name] = np.asarray(self.reader.columns[name][self.start:self.stop])
            out[name] = self.whole[name]
        return out

    def rows(self, names: set[str], hits: np.ndarray) -> dict[str, np.ndarray]:
        """Rows `hits` (increasing, of the block) of `names`: a column not read
        yet is read from the first to the last of them only."""
        out = {}
        for name in names:
            if name in self.reader.scalars:
                out[name] = self.reader.scalars[name]
            elif name in self.whole:
                out[name] = np.asarray(self.whole[name])[hits]
            elif not len(hits):
                out[name] = np.empty(0, dtype=self.reader.columns[name].dtype)
            else:
                lo, hi = self.start + int(hits[0]), self.start + int(hits[-1]) + 1
                span = np.asarray(self.reader.columns[name][lo:hi])
                out[name] = span[hits - hits[0]]
        return out


class _Plan(NamedTuple):
    """How a filter is evaluated: its conjunction's parts (None: not a
    conjunction of several) and itself as one part."""

    parts: list[_Part] | None
    whole: _Part


class _Plans:
    """The last :data:`_PLANS_KEPT` plans, by the tree's identity (each tree kept
    alive while its plan is: a compiled expression's, or what zone maps
    leave of it on some blocks, both remembered elsewhere too)."""

    def __init__(self) -> None:
        self._plans: OrderedDict[int, tuple[Node, _Plan]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, tree: Node) -> _Plan:
        with self._lock:
            found = self._plans.get(id(tree))
            if found is not None:
                self._plans.move_to_end(id(tree))
                return found[1]
        parts = conjuncts(tree)
        plan = _Plan([_Part.of(p) for p in parts] if len(parts) > 1 else None, _Part.of(tree))
        with self._lock:
            self._plans[id(tree)] = (tree, plan)
            while len(self._plans) > _PLANS_KEPT:
                self._plans.popitem(last=False)
        return plan


#: Filter plans remembered (a repeated query plans nothing again).
_PLANS_KEPT = 256
_PLANS = _Plans()


class _Part(NamedTuple):
    """A part of a filter, the names it reads, and, for a disjunction of
    equalities of one column with integer constants (``(a == 1) | (a == 5)``),
    that column and those constants (None otherwise): an isin-like part,
    evaluated by :func:`_in_set` on an integer column."""

    node: Node
    names: set[str]
    members: tuple[str, tuple[int, ...]] | None

    @classmethod
    def of(cls, node: Node) -> _Part:
        return cls(node, names_of(node), _members(node))

    def evaluate(self, namespace: Mapping[str, np.ndarray]) -> np.ndarray:
        """The part's booleans on `namespace`, as the python VM gives them."""
        if self.members is not None:
            name, values = self.members
            found = _in_set(np.asarray(namespace[name]), values)
            if found is not None:
                return found
        return python_vm(self.node, namespace)


def _members(node: Node) -> tuple[str, tuple[int, ...]] | None:
    """``(column, constants)`` of a disjunction of at least two equalities of
    one column with integer constants (in the int64 range), else None."""
    found: list[Node] = []

    def ors(n: Node) -> None:
        if isinstance(n, Logical) and n.op == "or":
            for o in n.operands:
                ors(o)
        elif isinstance(n, Binary) and n.op == "or":
            ors(n.left)
            ors(n.right)
        else:
            found.append(n)
    ors(node)
    name, values = None, []
    for n in found:
        if not isinstance(n, Compare) or n.op != "eq":
            return None
        side, const = (n.left, n.right) if isinstance(n.left, Name) else (n.right, n.left)
        if not isinstance(side, Name) or not isinstance(const, Const) or \
                name not in (None, side.id):
            return None
        value = const.value
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) \
                or not -2 ** 63 <= int(value) < 2 ** 63:
            return None
        name = side.id
        values.append(int(value))
    return (name, tuple(values)) if name is not None and len(values) > 1 else None


def _in_set(column: np.ndarray, values: tuple[int, ...]) -> np.ndarray | None:
    """Which items of `column` equal one of `values`: one pass per value into
    one buffer, or, for a sorted block and :data:`_SORTED_SEARCH` values or
    more, a binary search of each; None when the python VM must compare (not
    a 1-D column of integers it computes in exactly: int8..int64,
    uint8..uint32).  Integers compare exactly there, so the result is the
    python VM's ``|`` of ``==``."""
    if column.ndim != 1 or column.dtype.kind not in "iu" or kind_of(column.dtype) is None:
        return None
    info = np.iinfo(column.dtype)
    kept = [column.dtype.type(v) for v in values if info.min <= v <= info.max]
    out = np.zeros(len(column), dtype=bool)
    if len(kept) >= _SORTED_SEARCH and _ascending(column):
        # a sorted block (what zone maps prune best): each value's run found
        # by binary search, one pass (the check) instead of one per value
        found = np.array(kept, dtype=column.dtype)
        starts = np.searchsorted(column, found, "left").tolist()
        for start, stop in zip(starts, np.searchsorted(column, found, "right").tolist()):
            out[start:stop] = True
    elif kept:
        np.equal(column, kept[0], out=out)
        each = np.empty(len(column), dtype=bool)
        for value in kept[1:]:
            np.equal(column, value, out=each)
            np.logical_or(out, each, out=out)
    return out


def _ascending(column: np.ndarray) -> bool:
    """Whether the 1-D `column` is sorted (ascending): a sample first, so an
    unsorted column costs next to nothing."""
    step = max(1, len(column) // 256)
    sample = column[::step]
    return bool((sample[1:] >= sample[:-1]).all()) and bool((column[1:] >= column[:-1]).all())


def _conjunction(parts: list[_Part], block: _Block) -> np.ndarray:
    """A filter's conjunction of `parts` (each with its names) on `block`, by
    the python VM (numexpr's VM evaluates filters so too): once the parts so
    far hold on few rows (one in :data:`_SPARSE`), the others are evaluated
    on those rows only, reading no more of their columns than the rows from
    the first to the last.  Every part is evaluated (on no rows, if none is
    left), so an error is raised as evaluating the whole would."""
    mask = parts[0].evaluate(block.all(parts[0].names))
    for k, part in enumerate(parts[1:], 1):
        if mask.ndim != 1 or np.count_nonzero(mask) * _SPARSE > len(mask):
            mask = mask & part.evaluate(block.all(part.names))
            continue
        hits = np.flatnonzero(mask)
        rest = parts[k:]
        few = block.rows(set().union(*(p.names for p in rest)), hits)
        kept = np.ones(len(hits), dtype=bool)
        for other in rest:
            kept &= other.evaluate(few)
        mask = np.zeros(len(mask), dtype=bool)
        mask[hits[kept]] = True
        return mask
    return mask


def _pooled(read: _Reader, blocks: list[tuple[int, int, Node | None]], nthreads: int
            ) -> Iterator[tuple[int, np.ndarray]]:
    """Blocks read here, evaluated on the shared pool, yielded in order."""
    if _threads.in_worker():  # decided where the blocks are consumed
        yield from (read.evaluate(a, b, tree) for a, b, tree in blocks)
        return
    pool = _threads.pool(nthreads)
    pending: deque[tuple[int, dict, Future]] = deque()
    try:
        for a, b, tree in blocks:
            if isinstance(tree, Const):  # nothing to read or evaluate
                done: Future = Future()
                done.set_result(np.full(b - a, bool(tree.value)))
                pending.append((a, {}, done))
            else:
                namespace = read.read(a, b, None if tree is None else read._plan(tree)[1])
                pending.append((a, namespace, pool.submit(read.compute, namespace, tree)))
            if len(pending) >= _IN_FLIGHT * nthreads:
                first, namespace, future = pending.popleft()
                yield read.result(first, namespace, future.result())
        while pending:
            first, namespace, future = pending.popleft()
            yield read.result(first, namespace, future.result())
    finally:  # the consumer stopped early, or a block failed: drop what has not started
        for _, _, future in pending:
            future.cancel()


def evaluate(
    expr: Expression | str,
    columns: Mapping[str, Any],
    scalars: Mapping[str, Any] | None = None,
    blen: int | None = None,
    vm: str = "python",
    nthreads: int | None = None,
    out: np.ndarray | None = None,
) -> np.ndarray:
    """Evaluate `expr` on all rows of `columns` into one array.

    Parameters
    ----------
    expr, columns, scalars, blen, vm, nthreads
        As for :func:`evaluate_blocks`.
    out : numpy.ndarray, optional
        Where to write the result; it must have the result's shape and a
        dtype the result casts to (``same_kind``).

    Returns
    -------
    numpy.ndarray
        `out`, or a new array of ``expr.dtype(...)``: one row per column row
        (the scalars' result broadcast to the columns' length when the
        expression names no column), or 0-d when `columns` is empty.

    Raises
    ------
    ExpressionError, ValueError, TypeError
        As :func:`evaluate_blocks`; also ValueError if `out` has the wrong
        shape and TypeError if the result cannot be cast to its dtype.

    Examples
    --------
    >>> import numpy as np
    >>> evaluate("(a > 2) & (b < 8)", {"a": np.arange(6), "b": np.arange(6) * 2})
    array([False, False, False,  True, False, False])
    """
    expr = _as_expression(expr)
    scalars = {} if scalars is None else scalars
    names, values = _split_names(expr, columns, scalars)
    length = _length(columns)
    dtypes = {**{n: columns[n].dtype for n in names}, **{n: v.dtype for n, v in values.items()}}
    dtype = expr.dtype(dtypes)
    shapes = [tuple(columns[n].shape) for n in names] + [v.shape for v in values.values()]
    try:
        shape = np.broadcast_shapes(*shapes)
    except ValueError as exc:
        raise ValueError(f"the columns and scalars do not broadcast together: {exc}") from None
    if not names and length is not None:
        shape = (length, *shape)
    out = _check_out(out, shape, dtype)
    for first, block in evaluate_blocks(expr, columns, scalars, blen=blen, vm=vm,
                                        nthreads=nthreads):
        if names:
            out[first:first + len(block)] = block
        else:
            out[...] = block
    return out


def _check_out(out: np.ndarray | None, shape: tuple[int, ...], dtype: np.dtype
               ) -> np.ndarray:
    if out is None:
        return np.empty(shape, dtype)
    if out.shape != shape:
        raise ValueError(f"out has shape {out.shape}, the result has shape {shape}")
    if not np.can_cast(dtype, out.dtype, "same_kind"):
        raise TypeError(f"the result of dtype {dtype} cannot be written to out of dtype "
                        f"{out.dtype}")
    return out
