"""A ctable's analytics methods: ``reduce``, ``groupby`` and ``delete``.

:class:`Analytics` is a mixin of :class:`bcolzx.ctable`; the work is done
chunk by chunk on the shared pool by :mod:`bcolzx._analytics` (reductions,
groupby, the durable deletion of rows) over the table's columns.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bcolzx import _table
from bcolzx._analytics import delete as _deletion
from bcolzx._query.scope import caller_scope
from bcolzx.defaults import defaults

if TYPE_CHECKING:
    from bcolzx._hosts import TableHost
else:
    TableHost = object

__all__ = ["Analytics"]


class Analytics(TableHost):
    """Reductions, groups and deletions over a ctable's rows (a mixin of :class:`bcolzx.ctable`)."""

    def reduce(self, column: str, how: str = "sum", where=None, *, user_dict=None, vm=None,
               **kwargs):
        """Reduce one column (``how``: ``'sum'``, ``'min'``, ``'var'``, ... as the
        carray methods of that name) over the rows where `where` holds.

        Parameters
        ----------
        column : str
            The column.
        how : str
            The reduction (see :data:`bcolzx._analytics.reduce.OPS`).
        where : str or boolean array/carray, optional
            A condition on the columns (zone maps skip the chunks that
            cannot match; a column both tested and reduced is read once).
        user_dict : dict, optional
            Values of names in `where` that are not columns.
        vm : str, optional
            The condition's virtual machine.
        **kwargs
            ``axis``, ``dtype``, ``ddof`` as NumPy.

        Returns
        -------
        NumPy scalar or array

        Raises
        ------
        KeyError
            For an unknown column.
        ValueError, TypeError
            As the carray method (an unknown `how`, an empty selection for
            ``min``...).

        Examples
        --------
        >>> import numpy as np, bcolzx
        >>> ct = bcolzx.ctable([np.arange(6), np.arange(6) * 1.5], names=["i", "x"])
        >>> ct.reduce("x", "mean", where="i >= 3")
        np.float64(6.0)
        """
        from bcolzx._analytics.reduce import reduce_column

        col = self._cols[column]
        col._check_reducible()
        scope = caller_scope(user_dict) if isinstance(where, str) else {}
        return reduce_column(col, how, where=where, table=self._cols, column_name=column,
                             scope=scope, vm=vm, **kwargs)

    @_table.table_guarded
    def delete(self, indices=None, where=None, *, user_dict=None, vm=None) -> int:
        """Delete rows, by index or by condition, durably and as one change.

        Only the chunks from the first deleted row on are rewritten.  On
        disk the deletion is recorded before any column changes, so a crash
        at any instant leaves the old table or the new one (whoever opens
        the table next finishes it; see :mod:`bcolzx._analytics.delete`).

        Parameters
        ----------
        indices : int, array of ints or boolean mask, optional
            The rows (negative from the end; repeats count once).
        where : str or boolean array/carray, optional
            A condition on the columns instead.
        user_dict : dict, optional
            Values of names in `where` that are not columns.
        vm : str, optional
            The condition's virtual machine.

        Returns
        -------
        int
            Rows deleted.

        Raises
        ------
        ReadOnlyError
            In mode 'r'.
        AppendOnlyError
            (a ReadOnlyError) On object storage, whose objects are never
            rewritten.
        ValueError
            If neither or both of `indices` and `where` are given.
        IndexError
            For an index out of range.

        Examples
        --------
        >>> import numpy as np, bcolzx
        >>> ct = bcolzx.ctable([np.arange(6), np.arange(6) * 10], names=["i", "x"])
        >>> ct.delete(where="x >= 30"), ct.delete([0])
        (3, 1)
        >>> ct["i"][:]
        array([1, 2])
        """
        self._check_writable()
        self._check_rewritable("delete rows of")  # before the deletion record is written
        scope = caller_scope(user_dict) if isinstance(where, str) else {}
        pos = _deletion.positions_of(len(self), indices, where, self._cols, scope, vm)
        _deletion.delete_rows(self, pos)
        return len(pos)

    def groupby(self, keys, aggregations, where=None, *, dropna: bool = True, ddof: int = 1,
                out_flavor: str = "ctable", user_dict=None, vm=None, **kwargs):
        """Aggregate the rows per group of key values, out of core (as pandas'
        ``df.groupby(keys).agg(...)``).

        Keys are factorized chunk by chunk and partial aggregates merged, on
        the shared pool of threads: memory grows with the number of groups,
        not with the rows.

        Parameters
        ----------
        keys : str or list of str
            Key columns: integers, bools, strings (fixed-width or
            StringDType), variable-length bytes, datetimes or timedeltas.
        aggregations : dict or list
            ``{name: (column, func)}``, or ``[(column, func), (column, func,
            name), ...]`` (default name ``column_func``), with `func` one of
            ``sum``, ``mean``, ``count``, ``min``, ``max``, ``std``, ``var``,
            ``first``, ``last``, ``nunique``.  NaN values are skipped (as
            pandas); ``count`` counts the values that are not NaN/NaT.
            Columns of strings or bytes take ``count``, ``min``, ``max``,
            ``first``, ``last`` and ``nunique``.
        where : str or boolean array/carray, optional
            Only the rows where this holds.
        dropna : bool
            Drop the rows whose key is NaT or a missing string (pandas'
            default); False keeps them as a group.
        ddof : int
            Delta degrees of freedom of ``std`` and ``var`` (pandas: 1).
        out_flavor : {'ctable', 'dataframe'}
            A ctable with the keys then the aggregates as columns, or a
            pandas DataFrame indexed by the keys.
        user_dict : dict, optional
            Values of names in `where` that are not columns.
        vm : str, optional
            The condition's virtual machine.
        **kwargs
            For the result ctable (``rootdir``, ``mode``, ``cparams``...).

        Returns
        -------
        ctable or pandas.DataFrame
            One row per group, sorted by the keys.

        Raises
        ------
        KeyError
            For an unknown column.
        TypeError
            For a key or value column of a dtype the operation does not take.
        ValueError
            For malformed aggregations or a bad `out_flavor`.

        Examples
        --------
        >>> import numpy as np, bcolzx
        >>> ct = bcolzx.ctable([np.array([1, 2, 1, 2, 1]), np.arange(5.0)], names=["k", "x"])
        >>> g = ct.groupby("k", {"total": ("x", "sum"), "n": ("x", "count")})
        >>> g["k"][:], g["total"][:], g["n"][:]
        (array([1, 2]), array([6., 4.]), array([3, 2]))
        """
        from bcolzx._analytics import groupby as _groupby

        if out_flavor not in ("ctable", "dataframe"):
            raise ValueError(f"out_flavor must be 'ctable' or 'dataframe', not {out_flavor!r}")
        keys = [keys] if isinstance(keys, str) else list(keys)
        if not keys or len(set(keys)) != len(keys):
            raise ValueError(f"keys must be one or more distinct column names, not {keys!r}")
        for key in keys:
            self._cols[key]  # noqa: B018 - KeyError for an unknown name
        specs = _groupby.parse_aggregations(aggregations, self._cols, keys)
        scope = caller_scope(user_dict) if isinstance(where, str) else {}
        self._sync_threads()
        key_values, results = _groupby.groupby(
            self._cols, keys, specs, where=where, scope=scope, vm=vm, dropna=dropna,
            ddof=int(ddof), nthreads=defaults.nthreads)
        names = [s.name for s in specs]
        if out_flavor == "dataframe":
            return _groupby.to_frame(key_values, results, keys, names)
        from bcolzx.ctable import ctable  # the class is built on this module

        return ctable([*key_values, *results], names=[*keys, *names], **kwargs)
