"""The reduction methods of :class:`bcolzx.carray` (``c.max()``, ``c.var(ddof=1)``...).

A mixin: each method names its NumPy counterpart and hands the work to
:func:`bcolzx._analytics.reduce.reduce_column`.  Every method takes
``where=``: a boolean array or carray of the carray's length, or a condition
string whose names are looked up as for a carray's condition keys (the
caller's variables, ``user_dict`` first), e.g. ``c.sum(where="c > 0")``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from bcolzx._analytics.reduce import reduce_column
from bcolzx._query.scope import caller_scope

if TYPE_CHECKING:
    from bcolzx._hosts import ArrayHost
else:
    ArrayHost = object

__all__ = ["Reductions"]


class Reductions(ArrayHost):
    """NumPy's reductions over a carray, chunk by chunk (see :mod:`bcolzx._analytics.reduce`).

    Results, dtypes, NaN propagation and errors are NumPy's for ``c[:]``;
    ``count`` counts the values that are not NaN/NaT (as pandas).  Memory
    stays flat: chunks are reduced on the shared pool of threads as they
    are decompressed.  ``min``/``max`` of a 1-D carray without `where`
    read the zone map's bounds and decompress only the chunks whose bounds
    are not exact.
    """

    def _reduce(self, name: str, *, axis: Any = None, dtype: Any = None, ddof: Any = 0,
                where: Any = None, user_dict: Mapping[str, Any] | None = None,
                vm: str | None = None) -> Any:
        self._check_reducible()
        scope = caller_scope(user_dict, 2) if isinstance(where, str) else {}
        return reduce_column(self, name, axis=axis, dtype=dtype, ddof=ddof, where=where,
                             scope=scope, vm=vm)

    def prod(self, axis=None, dtype=None, *, where=None, user_dict=None, vm=None):
        """Product of the items (``numpy.prod``), of the rows where `where` holds.

        Raises
        ------
        TypeError
            If NumPy cannot multiply this dtype.
        """
        return self._reduce("prod", axis=axis, dtype=dtype, where=where, user_dict=user_dict,
                            vm=vm)

    def nansum(self, axis=None, dtype=None, *, where=None, user_dict=None, vm=None):
        """Sum treating NaN as zero (``numpy.nansum``).

        Raises
        ------
        TypeError
            If NumPy cannot add this dtype.
        """
        return self._reduce("nansum", axis=axis, dtype=dtype, where=where,
                            user_dict=user_dict, vm=vm)

    def nanprod(self, axis=None, dtype=None, *, where=None, user_dict=None, vm=None):
        """Product treating NaN as one (``numpy.nanprod``).

        Raises
        ------
        TypeError
            If NumPy cannot multiply this dtype.
        """
        return self._reduce("nanprod", axis=axis, dtype=dtype, where=where,
                            user_dict=user_dict, vm=vm)

    def min(self, axis=None, *, where=None, user_dict=None, vm=None):
        """Smallest item (``numpy.min``; NaN/NaT propagate), from the zone map where exact.

        Raises
        ------
        ValueError
            If no row is selected (as NumPy for an empty array).

        Examples
        --------
        >>> import numpy as np, bcolzx
        >>> c = bcolzx.carray(np.arange(10.0))
        >>> c.min(), c.min(where="c > 4.5")
        (np.float64(0.0), np.float64(5.0))
        """
        return self._reduce("min", axis=axis, where=where, user_dict=user_dict, vm=vm)

    def max(self, axis=None, *, where=None, user_dict=None, vm=None):
        """Largest item (``numpy.max``; NaN/NaT propagate), from the zone map where exact.

        Raises
        ------
        ValueError
            If no row is selected (as NumPy for an empty array).
        """
        return self._reduce("max", axis=axis, where=where, user_dict=user_dict, vm=vm)

    def nanmin(self, axis=None, *, where=None, user_dict=None, vm=None):
        """Smallest item ignoring NaN (``numpy.nanmin``; NaN and a warning when all are).

        Raises
        ------
        ValueError
            If no row is selected.
        """
        return self._reduce("nanmin", axis=axis, where=where, user_dict=user_dict, vm=vm)

    def nanmax(self, axis=None, *, where=None, user_dict=None, vm=None):
        """Largest item ignoring NaN (``numpy.nanmax``; NaN and a warning when all are).

        Raises
        ------
        ValueError
            If no row is selected.
        """
        return self._reduce("nanmax", axis=axis, where=where, user_dict=user_dict, vm=vm)

    def mean(self, axis=None, dtype=None, *, where=None, user_dict=None, vm=None):
        """Mean (``numpy.mean``: float64 for integers; NaN and a warning for no rows).

        Raises
        ------
        TypeError
            If NumPy cannot average this dtype.

        Examples
        --------
        >>> import numpy as np, bcolzx
        >>> bcolzx.carray(np.arange(5)).mean()
        np.float64(2.0)
        """
        return self._reduce("mean", axis=axis, dtype=dtype, where=where, user_dict=user_dict,
                            vm=vm)

    def nanmean(self, axis=None, dtype=None, *, where=None, user_dict=None, vm=None):
        """Mean ignoring NaN (``numpy.nanmean``).

        Raises
        ------
        TypeError
            If NumPy cannot average this dtype.
        """
        return self._reduce("nanmean", axis=axis, dtype=dtype, where=where,
                            user_dict=user_dict, vm=vm)

    def var(self, axis=None, dtype=None, ddof=0, *, where=None, user_dict=None, vm=None):
        """Variance (``numpy.var``), in one pass over the chunks (Chan's merge).

        Raises
        ------
        TypeError
            If NumPy cannot compute it for this dtype.

        Examples
        --------
        >>> import numpy as np, bcolzx
        >>> bcolzx.carray(np.arange(4.0)).var(ddof=1)
        np.float64(1.6666666666666667)
        """
        return self._reduce("var", axis=axis, dtype=dtype, ddof=ddof, where=where,
                            user_dict=user_dict, vm=vm)

    def nanvar(self, axis=None, dtype=None, ddof=0, *, where=None, user_dict=None, vm=None):
        """Variance ignoring NaN (``numpy.nanvar``).

        Raises
        ------
        TypeError
            If NumPy cannot compute it for this dtype.
        """
        return self._reduce("nanvar", axis=axis, dtype=dtype, ddof=ddof, where=where,
                            user_dict=user_dict, vm=vm)

    def std(self, axis=None, dtype=None, ddof=0, *, where=None, user_dict=None, vm=None):
        """Standard deviation (``numpy.std``), in one pass over the chunks.

        Raises
        ------
        TypeError
            If NumPy cannot compute it for this dtype.
        """
        return self._reduce("std", axis=axis, dtype=dtype, ddof=ddof, where=where,
                            user_dict=user_dict, vm=vm)

    def nanstd(self, axis=None, dtype=None, ddof=0, *, where=None, user_dict=None, vm=None):
        """Standard deviation ignoring NaN (``numpy.nanstd``).

        Raises
        ------
        TypeError
            If NumPy cannot compute it for this dtype.
        """
        return self._reduce("nanstd", axis=axis, dtype=dtype, ddof=ddof, where=where,
                            user_dict=user_dict, vm=vm)

    def count(self, axis=None, *, where=None, user_dict=None, vm=None):
        """Items that are not NaN/NaT (every item for other dtypes), as pandas' ``count``.

        Raises
        ------
        ValueError
            For a bad `axis` or condition.
        """
        return self._reduce("count", axis=axis, where=where, user_dict=user_dict, vm=vm)

    def any(self, axis=None, *, where=None, user_dict=None, vm=None):
        """Whether any item is true (``numpy.any``).

        Raises
        ------
        ValueError
            For a bad `axis` or condition.
        """
        return self._reduce("any", axis=axis, where=where, user_dict=user_dict, vm=vm)

    def all(self, axis=None, *, where=None, user_dict=None, vm=None):
        """Whether every item is true (``numpy.all``).

        Raises
        ------
        ValueError
            For a bad `axis` or condition.
        """
        return self._reduce("all", axis=axis, where=where, user_dict=user_dict, vm=vm)

    def argmin(self, axis=None, *, where=None, user_dict=None, vm=None):
        """Index of the first smallest item (``numpy.argmin``: a flat index for
        ``axis=None``); with `where`, the index in the whole carray.

        Raises
        ------
        ValueError
            If no row is selected.
        """
        return self._reduce("argmin", axis=axis, where=where, user_dict=user_dict, vm=vm)

    def argmax(self, axis=None, *, where=None, user_dict=None, vm=None):
        """Index of the first largest item (``numpy.argmax``).

        Raises
        ------
        ValueError
            If no row is selected.
        """
        return self._reduce("argmax", axis=axis, where=where, user_dict=user_dict, vm=vm)

    def nanargmin(self, axis=None, *, where=None, user_dict=None, vm=None):
        """Index of the first smallest item ignoring NaN (``numpy.nanargmin``).

        Raises
        ------
        ValueError
            If no row is selected, or every selected item is NaN.
        """
        return self._reduce("nanargmin", axis=axis, where=where, user_dict=user_dict, vm=vm)

    def nanargmax(self, axis=None, *, where=None, user_dict=None, vm=None):
        """Index of the first largest item ignoring NaN (``numpy.nanargmax``).

        Raises
        ------
        ValueError
            If no row is selected, or every selected item is NaN.
        """
        return self._reduce("nanargmax", axis=axis, where=where, user_dict=user_dict, vm=vm)
