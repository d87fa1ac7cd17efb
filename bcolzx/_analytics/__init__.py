"""Analytics over compressed data: reductions, out-of-core groupby, deleting rows.

Everything here works chunk by chunk through the documented handle of a
column (``carray.engine``), on bcolzx's one pool of threads, with memory that
grows with the result (the number of groups), never with the rows:

:mod:`~bcolzx._analytics.reduce`
    ``carray.sum/min/max/mean/var/...`` and ``ctable.reduce``: per-chunk
    partial results merged in order (Chan's formula for var/std), min and
    max answered from the zone maps where those are exact.
:mod:`~bcolzx._analytics.selection`
    The rows a ``where=`` condition keeps, block by block (the query planner,
    zone maps included).
:mod:`~bcolzx._analytics.groupby`
    ``ctable.groupby``: keys factorized chunk by chunk into one table of
    groups, aggregates accumulated by the Cython kernels of
    :mod:`bcolzx._ext.groupby` (GIL released), partials merged.
:mod:`~bcolzx._analytics.delete`
    ``carray.delete`` and ``ctable.delete``: the chunks from the first
    deleted row on rewritten, committed as one change.
"""

from __future__ import annotations

from collections.abc import ItemsView, Iterator, ValuesView
from typing import Any, Protocol

__all__ = ["Columns"]


class Columns(Protocol):
    """What this package reads of a table's columns: a ctable's ``cols`` (whose
    columns of a table opened in mode 'r' open on first use) or a dict."""

    def __getitem__(self, name: str, /) -> Any: ...
    def __contains__(self, name: object, /) -> bool: ...
    def __iter__(self) -> Iterator[str]: ...
    def __len__(self) -> int: ...
    def values(self) -> ValuesView[Any]: ...
    def items(self) -> ItemsView[str, Any]: ...
