"""What the mixins of carray and ctable use of their class, declared for the type checker.

A carray's methods are spread over mixins (``_values``, ``_keys``,
``_iteration``, ``_exchange``, ``_analytics.methods``), a ctable's over
``_table_open``, ``_table_query``, ``_table_analytics`` and ``_exchange``.
A mixin's methods use attributes that its class defines (``self.engine``,
``self._cols``...).  Each mixin derives, for the type checker only, from the
protocol below that lists them, so that mypy checks the mixins' bodies
against the real types; at run time the mixins derive from ``object``::

    if TYPE_CHECKING:
        from bcolzx._hosts import ArrayHost
    else:
        ArrayHost = object

A member a mixin starts to use goes here, with the type its class gives it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

if TYPE_CHECKING:
    from bcolzx._columns import cols
    from bcolzx._storage import ChunkedArray
    from bcolzx._storage.lock import WriterLock
    from bcolzx._storage.objects import Objects
    from bcolzx.carray import carray
    from bcolzx.params import cparams

__all__ = ["ArrayHost", "TableHost"]


class ArrayHost(Protocol):
    """What the mixins of :class:`bcolzx.carray` use of it."""

    _allow_pickle: bool | None
    _rootdir: str | None

    @property
    def _cparams(self) -> cparams: ...
    @property
    def engine(self) -> ChunkedArray: ...
    @property
    def _objects(self) -> bool: ...
    @property
    def _texts(self) -> bool: ...
    @property
    def chunklen(self) -> int: ...
    @property
    def dtype(self) -> np.dtype: ...
    @property
    def ndim(self) -> int: ...
    @property
    def shape(self) -> tuple: ...
    @property
    def dflt(self) -> Any: ...
    def __len__(self) -> int: ...
    def _alias(self) -> carray: ...
    def _check_writable(self) -> None: ...
    def _check_rewritable(self, what: str) -> None: ...
    def _check_reducible(self) -> None: ...
    def _sync_threads(self) -> None: ...
    # defined by the mixin _values.Values, used by the others
    def _out(self, rows: np.ndarray) -> np.ndarray: ...
    def _rows(self, values: Any, n: int | None = None, single: bool = False) -> np.ndarray: ...
    def _require_pickle(self, action: str) -> None: ...


class TableHost(Protocol):
    """What the mixins of :class:`bcolzx.ctable` use of it."""

    _cols: cols
    _rootdir: str | None
    _mode: str
    _remote: Objects | None
    _unsynced: list  # a new table's files and directories not yet fsynced
    _lock: WriterLock | None
    _lock_timeout: float
    _allow_pickle: bool | None

    @property
    def names(self) -> list[str]: ...
    def __len__(self) -> int: ...
    def _outcols(self, outcols: Any) -> list[str]: ...
    def _dtype_of(self, names: list[str]) -> np.dtype: ...
    def _read(self, names: list[str], start: int, stop: int, positions: Any = None,
              block: tuple[int, dict] | None = None) -> np.ndarray: ...
    def _check_writable(self) -> None: ...
    def _check_rewritable(self, what: str) -> None: ...
    def _sync_threads(self) -> None: ...
