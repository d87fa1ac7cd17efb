"""A ctable's rows by iteration and by query: ``iter``, ``where``, ``fetchwhere``, ``eval``...

:class:`Queries` is a mixin of :class:`bcolzx.ctable`.  A query is planned
by :mod:`bcolzx._query.planner` over the table's columns (zone maps skip
the blocks that cannot match) and the rows it selects are read with the
table's ``_read``, reusing the blocks the condition already read.
"""

from __future__ import annotations

import keyword
from collections import namedtuple
from collections.abc import Iterator
from typing import TYPE_CHECKING

import numpy as np

from bcolzx._columns import NROW
from bcolzx._query import planner
from bcolzx._query.evaluate import evaluate, resolve_flavor
from bcolzx._query.scope import caller_scope
from bcolzx.carray import carray

if TYPE_CHECKING:
    from bcolzx._hosts import TableHost
else:
    TableHost = object

__all__ = ["Queries", "row_maker"]


class Queries(TableHost):
    """Iterating over a ctable's rows and querying them (a mixin of :class:`bcolzx.ctable`)."""

    def __iter__(self) -> Iterator:
        return self.iter()

    def iter(self, start: int = 0, stop: int | None = None, step: int = 1, outcols=None,
             limit: int | None = None, skip: int = 0, out_flavor=namedtuple) -> Iterator:
        """Iterate over rows ``start:stop:step`` as named tuples (or tuples).

        Parameters
        ----------
        outcols : list of str or str, optional
            Columns to return (comma-separated string accepted), ``nrow__``
            for the row number.
        limit, skip : int, optional
            At most `limit` rows, after skipping `skip`.
        out_flavor : namedtuple or tuple
            The row type.

        Raises
        ------
        ValueError
            For an unknown column or a non-positive `step`.
        """
        if step <= 0:
            raise ValueError("step must be positive in iter()")
        names = self._outcols(outcols)
        start, stop, step = slice(start, stop, step).indices(len(self))
        make = row_maker(names, out_flavor)

        def gen():
            yielded, left = 0, skip
            blen = max(next(iter(self._cols.values())).chunklen, step)
            blen -= blen % step
            for lo in range(start, stop, blen):
                hi = min(stop, lo + blen)
                pos = np.arange(lo, hi, step)
                block = self._read(names, lo, hi, pos)
                if left:
                    drop = min(left, len(block))
                    block, left = block[drop:], left - drop
                if limit is not None:
                    block = block[: max(0, limit - yielded)]
                for row in block.tolist():
                    yield make(row)
                yielded += len(block)
                if limit is not None and yielded >= limit:
                    return
        return gen()

    # -- queries -----------------------------------------------------------------

    def _query(self, expression, outcols, limit, skip, scope, vm) -> Iterator[np.ndarray]:
        """Structured arrays of the rows the planner selects, block by block."""
        names = self._outcols(outcols)
        for pos, block in planner.select(expression, self._cols, scope, vm, limit, skip):
            yield self._read(names, int(pos[0]), int(pos[-1]) + 1, pos, block)

    def where(self, expression, outcols=None, limit: int | None = None, skip: int = 0,
              out_flavor=namedtuple, user_dict: dict | None = None, vm: str | None = None,
              ) -> Iterator:
        """Iterate over the rows where `expression` holds.

        Parameters
        ----------
        expression : str or boolean array/carray
            A condition on the columns (see :func:`bcolzx.eval`), or a mask.
        outcols : list of str or str, optional
            Columns to return, ``nrow__`` for the row number.
        limit, skip : int, optional
            At most `limit` rows, after skipping `skip` matches.
        out_flavor : namedtuple or tuple
            The row type.
        user_dict : dict, optional
            Values of names that are not columns (then the caller's locals
            and globals are searched).
        vm : {'numexpr', 'python', 'dask'}, optional
            Default ``bcolzx.defaults.vm``.  'dask' evaluates the blocks as
            Dask tasks with Dask's current scheduler (see
            :func:`bcolzx.interop.dask.evaluate_blocks`).

        Yields
        ------
        namedtuple or tuple

        Raises
        ------
        ExpressionError
            For a malformed or unsafe expression, or an unknown name.
        ValueError
            For an unknown column or a non-boolean expression.
        """
        names = self._outcols(outcols)
        make = row_maker(names, out_flavor)
        blocks = self._query(expression, names, limit, skip, caller_scope(user_dict), vm)

        def gen():
            for block in blocks:
                for row in block.tolist():
                    yield make(row)
        return gen()

    def whereblocks(self, expression, blen: int | None = None, outcols=None,
                    limit: int | None = None, skip: int = 0, user_dict: dict | None = None,
                    vm: str | None = None) -> Iterator[np.ndarray]:
        """Iterate over the matching rows in structured arrays of `blen` rows.

        Parameters
        ----------
        blen : int, optional
            Rows per block (default: the smallest chunk length of the
            columns, as legacy bcolz); the last is shorter.
        expression, outcols, limit, skip, user_dict, vm
            As :meth:`where`.

        Yields
        ------
        numpy.ndarray

        Raises
        ------
        ExpressionError, ValueError
            As :meth:`where`; ValueError for a non-positive `blen`.
        """
        if blen is None:  # the smallest chunk length of the columns, as legacy
            blen = min((c.chunklen for c in self._cols.values()), default=1)
        blen = int(blen)
        if blen <= 0:
            raise ValueError(f"blen must be positive, not {blen}")
        blocks = self._query(expression, outcols, limit, skip, caller_scope(user_dict), vm)

        def gen():
            pending, count = [], 0
            for block in blocks:
                pending.append(block)
                count += len(block)
                while count >= blen:
                    merged = np.concatenate(pending)
                    yield merged[:blen]
                    pending, count = [merged[blen:]], count - blen
            if count:
                yield np.concatenate(pending)
        return gen()

    def fetchwhere(self, expression, outcols=None, limit: int | None = None, skip: int = 0,
                   out_flavor: str | None = None, user_dict: dict | None = None,
                   vm: str | None = None, _scope=None):
        """All the matching rows at once: a ctable or a NumPy structured array.

        Parameters
        ----------
        out_flavor : {'bcolz', 'carray', 'numpy'}, optional
            A new in-memory ctable ('bcolz', 'carray') or a structured array
            ('numpy'); default ``bcolzx.defaults.out_flavor``.
        expression, outcols, limit, skip, user_dict, vm
            As :meth:`where`.

        Returns
        -------
        ctable or numpy.ndarray

        Raises
        ------
        ExpressionError, ValueError
            As :meth:`where`; ValueError for an unknown `out_flavor`.
        """
        flavor = resolve_flavor(out_flavor)
        names = self._outcols(outcols)
        scope = caller_scope(user_dict) if _scope is None else _scope
        selected = list(planner.select(expression, self._cols, scope, vm, limit, skip))
        total = sum(len(pos) for pos, _ in selected)
        if flavor == "numpy":
            result = np.empty(total, self._dtype_of(names))
            self._gather(selected, {n: result[n] for n in names})
            return result
        # Each output column filled in one pass from the blocks' rows (string
        # columns as StringDType, not object fields), then the table made of
        # them as a new table makes its columns, but not flushed: its last,
        # partial chunks stay leftovers, not compressed before they are used.
        columns = {n: np.empty(total, np.int64) if n == NROW else
                   np.empty((total, *self._cols[n].shape[1:]), self._cols[n].dtype)
                   for n in names}
        self._gather(selected, columns)
        from bcolzx.ctable import ctable  # the class is built on this module

        made = []
        for name in names:  # as a new table makes its columns in memory
            rows = columns[name]
            col = carray(np.empty((0, *rows.shape[1:]), rows.dtype), mode="w",
                         expectedlen=total, allow_pickle=self._allow_pickle)
            col._append_first(rows)
            made.append(col)
        return ctable(made, names=names, allow_pickle=self._allow_pickle, _flush=False)

    def _gather(self, selected: list, outs: dict[str, np.ndarray]) -> None:
        """Fill `outs` (an array of every selected row by column name) with the
        rows `selected` by :func:`~bcolzx._query.planner.select`, block after
        block, from the columns the condition read where it did."""
        done = 0
        for pos, block in selected:
            first, have = block if block is not None else (0, {})
            start, stop = int(pos[0]), int(pos[-1]) + 1
            dense = stop - start == len(pos)
            for name, out in outs.items():
                dest = out[done:done + len(pos)]
                if name == NROW:
                    dest[...] = pos
                elif name in have:
                    rows = have[name]
                    dest[...] = rows[start - first:stop - first] if dense else rows[pos - first]
                elif dense:
                    dest[...] = self._cols[name][start:stop]
                else:
                    dest[...] = self._cols[name][start:stop][pos - start]
            done += len(pos)

    def eval(self, expression: str, **kwargs):
        """Evaluate `expression` over the columns (see :func:`bcolzx.eval`).

        Parameters
        ----------
        expression : str
        **kwargs
            ``vm``, ``out_flavor``, ``user_dict``, ``blen`` and carray
            parameters for the result.

        Returns
        -------
        carray or numpy.ndarray

        Raises
        ------
        ExpressionError, ValueError
            As :func:`bcolzx.eval`.
        """
        scope = kwargs.pop("_scope", None)
        if scope is None:
            scope = caller_scope(kwargs.pop("user_dict", None))
        else:
            kwargs.pop("user_dict", None)
        expr, columns, scalars = planner.operands(expression, self._cols, scope)
        return evaluate(expr, columns, scalars, new_carray=carray, length=len(self), **kwargs)


def row_maker(names: list[str], out_flavor):
    """What makes a row of `names` from a tuple of values: `out_flavor` (namedtuple or tuple).

    Raises
    ------
    ValueError
        For another `out_flavor`.
    """
    if out_flavor is tuple or out_flavor == "tuple":
        return tuple
    if out_flavor is namedtuple or out_flavor == "namedtuple":
        valid = all(n.isidentifier() and not keyword.iskeyword(n) for n in names)
        row = namedtuple("row", names, rename=not valid)  # type: ignore[misc, arg-type]
        return lambda values: row(*values)
    raise ValueError(f"out_flavor must be namedtuple or tuple, not {out_flavor!r}")


