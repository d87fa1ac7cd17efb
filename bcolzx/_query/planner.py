"""A table's queries: a condition's operands, the blocks zone maps rule out, the matching rows.

What :meth:`bcolzx.ctable.where`, :meth:`~bcolzx.ctable.whereblocks`,
:meth:`~bcolzx.ctable.fetchwhere` and :meth:`~bcolzx.ctable.eval` (and a
ctable's condition keys) plan before any row is read.  Each function takes
the table's columns by name (``ctable.cols``), never the table itself:

* :func:`operands`: the columns a condition reads (the table's, then array
  variables of the caller's scope of the table's length) and its scalars;
* :func:`zone_skipper`: which blocks cannot match, from the chunk bounds of
  the columns (``column.engine.chunk_stats()``): every chunk at once with
  :func:`~bcolzx._query.zonemap.may_match_blocks`, or for strings with
  :func:`~bcolzx._query.zonemap.may_match`, narrowed range by range;
* :func:`matches`: the row numbers where a condition holds, block by block
  (:mod:`~bcolzx._query.blocks`, or Dask tasks for ``vm='dask'``), with the
  columns each block read so the output does not read them again;
* :func:`select`: the same with ``skip`` and ``limit`` applied.

Everything is lazy: the generators read nothing until the first row is
asked for.
"""

from __future__ import annotations

import functools
import math
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Protocol

import numpy as np

from bcolzx._format.zonemap import bounds_of
from bcolzx._query import blocks
from bcolzx._query.evaluate import engine_for, resolve_vm
from bcolzx._query.expr import Expression, check_operands, compile_expression
from bcolzx._query.scope import resolve_names, split_operands
from bcolzx._query.tree import Node, is_filter
from bcolzx._query.zonemap import (
    MAYBE,
    Decisions,
    decide_blocks,
    may_match,
    may_match_blocks,
    remaining,
)
from bcolzx.errors import RowConditionError

__all__ = ["matches", "operands", "select", "zone_skipper"]

#: Cells of the common grid a column's chunk may be cut into when the
#: columns' chunk lengths differ (a finer grid costs more than it prunes).
_MAX_CELLS_PER_CHUNK = 64
#: Zone-map analyses remembered (a repeated query on unchanged chunks skips
#: its analysis), and the most cells one may have.
_ANALYSES = 64
_ANALYSED_CELLS = 4096

class Table(Protocol):
    """The columns of a table by name, as a ctable's ``cols`` (or a dict) offers them."""

    def __getitem__(self, name: str) -> Any: ...

    def __contains__(self, name: object) -> bool: ...

    def values(self) -> Iterable[Any]: ...


#: One block of matching rows: ``(block_start, positions, block)``, where
#: ``block`` is None or ``(block_start, {column: the block's rows})`` for the
#: table's columns the condition read.
Match = tuple[int, np.ndarray, tuple | None]


def _length(table: Table) -> int:
    """Rows of the table: those of its first column (0 without columns)."""
    for column in table.values():
        return len(column)
    return 0


def operands(expression: str, table: Table, scope: Mapping[str, Any]
             ) -> tuple[Expression, dict, dict]:
    """Compile `expression`; its columns (the table's and array variables)
    and scalars, names looked up in `scope` when they are not columns.

    Parameters
    ----------
    expression : str
    table : mapping
        The table's columns by name.
    scope : mapping
        Where other names get their values
        (:func:`~bcolzx._query.scope.caller_scope`).

    Returns
    -------
    tuple
        ``(expr, columns, scalars)``.

    Raises
    ------
    ExpressionError
        For an invalid expression, an undefined name or a column of objects.
    ValueError
        For an array variable whose length is not the table's.
    """
    expr = compile_expression(expression)
    columns = {n: table[n] for n in expr.names if n in table}
    check_operands(columns)
    others = resolve_names([n for n in expr.names if n not in columns], scope)
    more, scalars = split_operands(others)
    length = _length(table)
    for name, value in more.items():
        if len(value) != length:
            raise ValueError(f"variable {name!r} has {len(value)} rows, the table "
                             f"{length}")
    columns.update(more)
    return expr, columns, scalars


def matches(expression: Any, table: Table, scope: Mapping[str, Any],
            vm: str | None) -> Iterator[Match]:
    """The rows where `expression` holds, block by block (a generator).

    Parameters
    ----------
    expression : str or boolean array-like
        A condition on the columns, or a mask of the table's length.
    table : mapping
        The table's columns by name.
    scope : mapping
        Where names that are not columns get their values.
    vm : {'python', 'numexpr', 'dask'}, optional
        Default ``defaults.vm``.

    Yields
    ------
    tuple
        ``(block_start, positions, block)`` (see :data:`Match`), for the
        blocks with at least one match (all of them at once, ``block``
        None, for a mask or a condition of scalars only).

    Raises
    ------
    ExpressionError
        As :func:`operands`, or when evaluation fails.
    ValueError
        For a mask of the wrong dtype or length, a condition that does not
        give booleans, or an unknown `vm`.
    RowConditionError
        For a condition that gives more than one boolean per row (over an
        N-D column).
    """
    length = _length(table)
    if not isinstance(expression, str):
        mask = np.asarray(expression)  # a carray's __array__ reads it whole
        if mask.dtype != np.bool_ or mask.shape != (length,):
            raise ValueError("the query must be a string expression or a boolean array "
                             f"of length {length}")
        yield 0, np.flatnonzero(mask), None
        return
    expr, columns, scalars = operands(expression, table, scope)
    engine, vm = engine_for(resolve_vm(vm))
    if not columns:
        value = expr.evaluate(scalars, vm)
        if value.shape != () or value.dtype != np.bool_:
            raise ValueError(f"{expression!r} is not a boolean condition on the columns")
        if bool(value):
            yield 0, np.arange(length), None
        return
    skip = zone_skipper(expr, columns, scalars)
    local = engine is blocks  # Dask tasks keep the blocks they read
    # Blocks of the shortest chunk where zone maps rule some out, else the
    # evaluator's (fewer, longer blocks for a scan).
    narrow = isinstance(skip, _Skipper) and skip.prunes
    results = engine.evaluate_blocks(expr, columns, scalars, vm=vm, skip_block=skip,
                                     **({"with_columns": True,
                                         "blen": _block_length(columns) if narrow else None,
                                         "tree_for": skip.tree_for
                                         if isinstance(skip, _Skipper) else None}
                                        if local else {}))
    for lo, mask, *read in results:
        if mask.dtype != np.bool_:
            raise ValueError(f"{expression!r} gives {mask.dtype} values, not a boolean "
                             "condition")
        if mask.ndim != 1:
            raise RowConditionError(f"{expression!r} gives booleans of shape {mask.shape[1:]} "
                                    "per row (it compares the items of an N-D column), not "
                                    "one per row: a query needs one boolean per row")
        hits = np.flatnonzero(mask)
        if len(hits):
            # Only the table's own columns may stand in for a later read.
            have = {n: v for n, v in read[0].items()
                    if n in table and table[n] is columns[n]} if read else {}
            yield lo, hits + lo, (lo, have)


def _block_length(columns: Mapping[str, Any]) -> int | None:
    """Rows per block of a query that zone maps narrow: the shortest chunk of
    the columns (None: the evaluator's default), so that a block kept reads
    no more of a column with longer chunks (int32 beside int64) than the
    chunk the zone maps kept."""
    chunklens = [getattr(c, "chunklen", None) for c in columns.values()]
    if chunklens and all(isinstance(c, int) and c > 0 for c in chunklens):
        return min(chunklens)
    return None


def select(expression: Any, table: Table, scope: Mapping[str, Any],
           vm: str | None, limit: int | None = None, skip: int = 0
           ) -> Iterator[tuple[np.ndarray, tuple | None]]:
    """The matching rows after skipping `skip` and up to `limit` (a generator).

    Parameters
    ----------
    expression, table, scope, vm
        As :func:`matches`.
    limit : int, optional
        At most this many rows in all.
    skip : int
        Matches left out first.

    Yields
    ------
    tuple
        ``(positions, block)``: the row numbers (non-empty, increasing) and
        the columns read for them (see :data:`Match`).

    Raises
    ------
    ExpressionError, ValueError
        As :func:`matches`.
    """
    yielded, left = 0, int(skip)
    for _, pos, block in matches(expression, table, scope, vm):
        if left:
            drop = min(left, len(pos))
            pos, left = pos[drop:], left - drop
        if limit is not None:
            pos = pos[: max(0, limit - yielded)]
        if not len(pos):
            if limit is not None and yielded >= limit:
                return
            continue
        yield pos, block
        yielded += len(pos)
        if limit is not None and yielded >= limit:
            return


def _chunk_stats(column: Any) -> np.ndarray | None:
    """The bounds of `column`'s full chunks, through its engine handle (a
    carray's ``engine``); None for a column without one, or without bounds.

    Raises
    ------
    CorruptDataError
        If the stored zone map is damaged.
    """
    engine = getattr(column, "engine", None)
    return None if engine is None else engine.chunk_stats()


def _span(stats: np.ndarray, a: int, b: int) -> tuple:
    """The bounds of chunks ``a .. b-1`` together (strings: bytes, None for none)."""
    if stats.dtype["min"] == np.dtype(object):  # strings (bcolzx._format.zonemap)
        los = [v for v in stats["min"][a:b].tolist() if v is not None]
        his = [v for v in stats["max"][a:b].tolist() if v is not None]
        return (min(los) if los else None, max(his) if his else None,
                bool(stats["nan"][a:b].any()))
    return (np.fmin.reduce(stats["min"][a:b]), np.fmax.reduce(stats["max"][a:b]),
            bool(stats["nan"][a:b].any()))


def zone_skipper(expr: Expression, columns: Mapping[str, Any], scalars: Mapping[str, Any]
                 ) -> Callable[[int, int], bool] | None:
    """A ``skip_block`` for :func:`~bcolzx._query.blocks.evaluate_blocks`, from
    the columns' chunk bounds; None when some column has none.

    Columns whose chunks differ in length (a table of int64 and int32
    columns) are compared on a common grid: cells of the greatest common
    divisor of their chunk lengths, each with the bounds of the chunk that
    holds it (None if that grid would be finer than :data:`_MAX_CELLS_PER_CHUNK`
    cells a chunk).

    Raises
    ------
    CorruptDataError
        If a stored zone map is damaged.
    """
    if not all(hasattr(c, "engine") for c in columns.values()):
        return None
    found = {n: _chunk_stats(c) for n, c in columns.items()}
    stats = {n: st for n, st in found.items() if st is not None}
    if len(stats) != len(found) or not stats:
        return None
    chunklens = {n: columns[n].chunklen for n in stats}
    cl = math.gcd(*chunklens.values())
    if max(chunklens.values()) // cl > _MAX_CELLS_PER_CHUNK:
        return None
    stats = {n: np.repeat(st, chunklens[n] // cl) if chunklens[n] != cl else st
             for n, st in stats.items()}
    if not any(st.dtype["min"] == np.dtype(object) for st in stats.values()):
        # numbers: every cell analysed at once, the rows past a column's full
        # chunks by their own bounds (read now), and what the bounds decide of
        # each part of a filter kept for the blocks evaluated
        length = _rows_of(columns)
        ncells = max(len(st) for st in stats.values()) if length is None else -(-length // cl)
        found = _ANALYSED.get(expr, {n: _padded(st, ncells) for n, st in stats.items()},
                              scalars)
        if length is not None:
            found = _tails(expr, columns, stats, found, cl, length, scalars)
        return _Skipper(found.maybe, cl, expr if found.parts is not None else None,
                        found.parts)
    nchunks = min(len(st) for st in stats.values())
    maybe = np.ones(nchunks, dtype=bool)

    def can_match(a: int, b: int) -> bool:
        bounds = {name: _span(st, a, b) for name, st in stats.items()}
        return may_match(expr, bounds, scalars)

    def narrow(a: int, b: int) -> None:
        """Clear `maybe` for the chunks of [a, b) that cannot match: whole
        ranges first, so a selective query needs few checks."""
        if not can_match(a, b):
            maybe[a:b] = False
        elif b - a > 4:
            mid = (a + b) // 2
            narrow(a, mid)
            narrow(mid, b)
        elif b - a > 1:
            for c in range(a, b):
                maybe[c] = can_match(c, c + 1)

    if nchunks:
        narrow(0, nchunks)
    return _Skipper(maybe, cl)


def _rows_of(columns: Mapping[str, Any]) -> int | None:
    """The columns' length (None for columns without one)."""
    try:
        return len(next(iter(columns.values())))
    except TypeError:
        return None


def _tails(expr: Expression, columns: Mapping[str, Any], stats: dict[str, np.ndarray],
           found: Decisions, cl: int, length: int, scalars: Mapping[str, Any]) -> Decisions:
    """`found` (cells past some column's full chunks analysed as holding
    anything there) with those cells analysed again by the bounds of the
    columns' rows past their full chunks (their leftovers), read one column
    after another, the shortest first, until none of those cells may match;
    not read for a condition that rules out none of the cells before them
    (a broad query would read them for nothing)."""
    first = min(len(st) for st in stats.values())
    if not found.maybe[first:].any() or (first and found.maybe[:first].all()):
        return found  # nothing to rule out, or a condition no chunk rules out
    ncells = len(found.maybe)
    bounds = {n: _padded(st[first:], ncells - first) for n, st in stats.items()}
    part = found
    for name in sorted((n for n, st in stats.items() if len(st) < ncells),
                       key=lambda n: length - len(stats[n]) * cl):
        st = stats[name]
        tail = _tail_bounds(columns[name], len(st) * cl, length, stats[name].dtype["min"])
        if tail is None:
            continue
        own = len(st) - first
        bounds[name] = tuple(np.concatenate([b[:own], np.full(ncells - len(st), v, b.dtype)])
                             for b, v in zip(bounds[name], tail))
        part = _ANALYSED.get(expr, bounds, scalars)
        if not part.maybe.any():
            break
    if part is found:
        return found
    maybe = np.concatenate([found.maybe[:first], part.maybe])
    parts = None if found.parts is None else np.concatenate([found.parts[:first], part.parts])
    return Decisions(maybe, parts)


def _tail_bounds(column: Any, start: int, length: int, dtype: np.dtype) -> tuple | None:
    """``(min, max, has_nan)`` of rows ``start .. length-1`` of `column` (its
    rows past its full chunks: read now), or None when they are more than a
    chunk."""
    if length - start > getattr(column, "chunklen", 0):
        return None
    rows = np.asarray(column[start:length])
    if rows.ndim != 1 or rows.dtype != dtype:
        return None
    lo, hi = rows.min(), rows.max()
    if lo != lo or hi != hi:  # NaN or NaT somewhere (min and max propagate them)
        return bounds_of(rows)
    return lo, hi, False


def _padded(stats: np.ndarray, ncells: int) -> tuple:
    """``(mins, maxs, has_nans)`` of `stats` (numbers), extended to `ncells`
    with bounds that hold any value of the dtype (NaN included)."""
    extra = ncells - len(stats)
    mins, maxs, nans = stats["min"], stats["max"], stats["nan"]
    if not extra:
        return mins, maxs, nans
    low, high = _anything(mins.dtype)
    return (np.concatenate([mins, np.full(extra, low)]),
            np.concatenate([maxs, np.full(extra, high)]),
            np.concatenate([nans, np.ones(extra, dtype=bool)]))


@functools.lru_cache(maxsize=64)
def _anything(dtype: np.dtype) -> tuple:
    """Bounds that hold any value of `dtype` (NumPy scalars of it)."""
    if dtype.kind == "b":
        low, high = np.array([False, True])
    elif dtype.kind in "iu":
        low, high = np.array([np.iinfo(dtype).min, np.iinfo(dtype).max], dtype)
    elif dtype.kind == "f":
        low, high = np.array([-np.inf, np.inf], dtype)
    else:  # datetime64, timedelta64: the int64 range but NaT (its minimum)
        low, high = np.array([np.iinfo(np.int64).min + 1, np.iinfo(np.int64).max]).view(dtype)
    return low, high


class _Analysed:
    """The last :data:`_ANALYSES` results of
    :func:`~bcolzx._query.zonemap.may_match_blocks`, by everything they
    depend on: the expression, the bounds' bytes and the scalars' values."""

    def __init__(self) -> None:
        self._results: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    def get(self, expr: Expression, bounds: dict[str, tuple],
            scalars: Mapping[str, Any]) -> Decisions:
        """:func:`~bcolzx._query.zonemap.decide_blocks` for a filter, else
        :func:`~bcolzx._query.zonemap.may_match_blocks` (``parts`` None),
        remembered (read-only)."""
        key = self._key(expr, bounds, scalars)
        if key is not None:
            with self._lock:
                found = self._results.get(key)
                if found is not None:
                    self._results.move_to_end(key)
                    return found
        if is_filter(expr.tree):
            found = decide_blocks(expr, bounds, scalars)
            found.parts.flags.writeable = False
        else:
            found = Decisions(may_match_blocks(expr, bounds, scalars), None)
        found.maybe.flags.writeable = False
        if key is not None:
            with self._lock:
                self._results[key] = found
                while len(self._results) > _ANALYSES:
                    self._results.popitem(last=False)
        return found

    @staticmethod
    def _key(expr: Expression, bounds: dict[str, tuple],
             scalars: Mapping[str, Any]) -> tuple | None:
        """What the result depends on, as bytes (None: not remembered)."""
        if any(len(b[0]) > _ANALYSED_CELLS for b in bounds.values()):
            return None
        values = []
        for name in sorted(n for n in expr.names if n in scalars):
            value = np.asarray(scalars[name])
            if value.dtype.hasobject:
                return None
            values.append((name, type(scalars[name]), value.dtype.str, value.shape,
                           value.tobytes()))
        columns = tuple((name, *(np.asarray(a).dtype.str for a in b),
                         *(np.asarray(a).tobytes() for a in b))
                        for name, b in sorted(bounds.items()))
        return expr.text, tuple(values), columns


_ANALYSED = _Analysed()


@functools.lru_cache(maxsize=_ANALYSES * 4)
def _remaining(expr: Expression, decided: bytes) -> Node | None:
    """:func:`~bcolzx._query.zonemap.remaining` of the filter `expr` where its
    parts are `decided` (a row of :attr:`~bcolzx._query.zonemap.Decisions.parts`
    as bytes), remembered by the expression's text; None when nothing is left out."""
    left = remaining(expr.tree, np.frombuffer(decided, dtype=np.uint8))
    return None if left is expr.tree else left


class _Skipper:
    """The ``skip_block`` of cells of `cl` rows, of which only those `maybe`
    holds can match (rows past the last cell may); with the filter `expr` and
    what zone maps decide of its parts in each cell (`parts`, see
    :class:`~bcolzx._query.zonemap.Decisions`), also the ``tree_for`` of the
    blocks: the filter left to evaluate on each."""

    def __init__(self, maybe: np.ndarray, cl: int, expr: Expression | None = None,
                 parts: np.ndarray | None = None):
        self.maybe, self.cl = maybe, cl
        self.expr, self.parts = expr, parts

    def __call__(self, lo: int, hi: int) -> bool:
        first, last = lo // self.cl, (hi - 1) // self.cl
        return last < len(self.maybe) and not self.maybe[first:last + 1].any()

    def tree_for(self, lo: int, hi: int) -> Node | None:
        """What is left of the filter on rows ``lo .. hi-1`` (a block not
        skipped) once zone maps decided what they can of it
        (:func:`~bcolzx._query.zonemap.remaining`); None: the filter whole."""
        first, last = lo // self.cl, (hi - 1) // self.cl
        if self.parts is None or self.expr is None or last >= len(self.maybe):
            return None
        rows = self.parts[first:last + 1]
        row = rows[0] if len(rows) == 1 else \
            np.where((rows == rows[0]).all(axis=0), rows[0], MAYBE).astype(np.uint8)
        if not row.any():
            return None
        return _remaining(self.expr, row.tobytes())

    @property
    def prunes(self) -> bool:
        """Whether some cell is ruled out."""
        return not self.maybe.all()
