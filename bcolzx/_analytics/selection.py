"""The rows a ``where=`` condition keeps, block by block, for reductions and groupby.

A condition is a string expression (evaluated by the query planner, which
skips the chunks whose zone maps prove that no row matches) or a boolean
mask (array or carray) of the table's length.  Both give blocks of row
numbers in increasing order, with the columns the condition already read, so
that a column both tested and reduced is read once.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from bcolzx._analytics import Columns
from bcolzx._query import planner

__all__ = ["SELF", "blocks", "values_at"]

#: The name a lone carray takes in the table of its own condition (not an
#: identifier, so no expression can name it).
SELF = "\0self"


def blocks(where: Any, table: Columns, scope: Mapping[str, Any],
           vm: str | None = None) -> Iterator[tuple[int, np.ndarray, dict]]:
    """``(block_start, positions, columns read)`` for each block with matching
    rows, in order; the columns read hold the block's rows from
    ``block_start`` on.

    Parameters
    ----------
    where : str or boolean array-like
        The condition, or a mask of the table's length (a carray mask is
        read a chunk at a time).
    table : mapping
        The columns by name (``ctable.cols``, or ``{SELF: carray}``).
    scope : mapping
        Where names that are not columns get their values.
    vm : str, optional
        The virtual machine (default ``bcolzx.defaults.vm``).

    Raises
    ------
    ExpressionError
        For an invalid condition or an unknown name.
    ValueError
        For a mask of the wrong dtype or length, or a condition that does
        not give booleans.
    """
    if not isinstance(where, str):
        yield from _mask_blocks(where, table)
        return
    for lo, pos, block in planner.matches(where, table, scope, vm):
        yield lo, pos, ({} if block is None else block[1])


def _mask_blocks(mask: Any, table: Columns
                 ) -> Iterator[tuple[int, np.ndarray, dict]]:
    length = next((len(table[name]) for name in table), 0)  # opens one column
    engine = getattr(mask, "engine", None)
    if engine is None:
        arr = np.asarray(mask)
        if arr.dtype != np.bool_ or arr.shape != (length,):
            raise ValueError(f"where must be a condition string or a boolean array of length "
                             f"{length}, not {arr.dtype} of shape {arr.shape}")
        step = 1 << 20
        for lo in range(0, length, step):
            pos = np.flatnonzero(arr[lo:lo + step])
            if len(pos):
                yield lo, pos + lo, {}
        return
    if engine.dtype != np.bool_ or tuple(mask.shape) != (length,):
        raise ValueError(f"where must be a condition string or a boolean array of length "
                         f"{length}, not {mask.dtype} of shape {mask.shape}")
    step = engine.chunklen
    for lo in range(0, length, step):
        pos = np.flatnonzero(engine.read(lo, min(length, lo + step)))
        if len(pos):
            yield lo, pos + lo, {}


def values_at(column: Any, start: int, pos: np.ndarray, have: Mapping[str, Any],
              name: str) -> np.ndarray:
    """The rows `pos` (increasing, non-empty) of `column`: taken from ``have[name]``
    (rows from `start` on that a condition read) when there, else read from
    the column's engine (only the chunks that hold them)."""
    if name in have:
        return np.asarray(have[name])[pos - start]
    first, last = int(pos[0]), int(pos[-1]) + 1
    rows = column.engine.read(first, last)
    return rows if len(pos) == last - first else rows[pos - first]
