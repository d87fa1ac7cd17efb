"""A ctable's columns: the ``cols`` container, columns not opened yet, and column names.

:class:`cols` (``ctable.cols``, legacy ``bcolz.ctable.cols``) holds a
table's carrays by name and in order.  A table opened in mode 'r' holds an
:class:`Unopened` per column until the column is first used: its directory
and the length the table was opened with.  :func:`check_name` is what a
column may be called (a directory name, not a reserved one).
"""

from __future__ import annotations

import weakref
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from bcolzx.carray import carray
from bcolzx.errors import ColumnNameError, ConcurrentModificationError

if TYPE_CHECKING:
    from bcolzx.ctable import ctable

__all__ = ["NROW", "Unopened", "check_name", "cols"]

#: The pseudo-column of row numbers accepted in ``outcols``.
NROW = "nrow__"


class cols:  # noqa: N801 - legacy name
    """The columns of a ctable, by name and in order (``ctable.cols``).

    ``cols[name]`` is the column's carray, ``cols.names`` the names;
    :meth:`insert` and :meth:`pop` add and remove columns (prefer
    :meth:`ctable.addcol` and :meth:`ctable.delcol`, which also manage the
    columns' directories).
    """

    def __init__(self, names: Sequence[str] = (), columns: Sequence = (),
                 table: "ctable | None" = None):
        # A column of a table opened in mode 'r' may be an Unopened until
        # it is first used (_column opens it).
        self._cols: dict[str, Any] = dict(zip(names, columns))
        self._table = None if table is None else weakref.ref(table)

    def _column(self, name: str) -> carray:
        col = self._cols[name]
        if isinstance(col, Unopened):
            col = self._cols[name] = col.open()
        return col

    def _length(self) -> int:
        """The rows of the first column (0 without columns), opening none."""
        for col in self._cols.values():
            return col.length if isinstance(col, Unopened) else len(col)
        return 0

    def _owner(self) -> "ctable | None":
        return None if self._table is None else self._table()

    @property
    def rootdir(self) -> str | None:
        """The table's directory (None in memory), as legacy ``cols.rootdir``."""
        table = self._owner()
        return None if table is None else table.rootdir

    @property
    def mode(self) -> str:
        """The table's mode, as legacy ``cols.mode``."""
        table = self._owner()
        return "a" if table is None else table.mode

    def update_meta(self) -> None:
        """Write the column names to the table's ``__rootdirs__`` (legacy name;
        :meth:`ctable.addcol` and :meth:`ctable.delcol` do it themselves).

        Raises
        ------
        OSError
            If the file cannot be written.
        """
        table = self._owner()
        if table is not None:
            table._write_rootdirs()

    def read_meta_and_open(self) -> None:
        """Read the table's ``__rootdirs__`` again and reopen its columns (legacy name).

        Raises
        ------
        FileNotFoundError
            If the table has no ``__rootdirs__``.
        CorruptDataError
            If a column or the metadata is damaged.
        """
        table = self._owner()
        if table is not None and table.rootdir is not None:
            table._open()

    @property
    def names(self) -> list[str]:
        """Column names, in order."""
        return list(self._cols)

    def __getitem__(self, name: str) -> carray:
        try:
            return self._column(name)
        except KeyError:
            raise KeyError(f"no column {name!r}; columns are {self.names}") from None

    def __setitem__(self, name: str, column) -> None:
        """Overwrite the values of column `name` (converted to its dtype;
        written in place, on disk too)."""
        if name not in self._cols:
            raise KeyError(f"no column {name!r}; use ctable.addcol to add one")
        old = self._column(name)
        values = column[:] if isinstance(column, carray) else column
        try:
            values = np.asarray(values, dtype=old.dtype)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{column!r} cannot be converted into a column of "
                             f"{old.dtype}: {exc}") from None
        if values.shape[:1] != (len(old),):
            raise ValueError(f"column {name!r} must keep its length {len(old)}, not "
                             f"{values.shape[:1] or 'a scalar'}")
        # As legacy: the column keeps its dtype, cparams and directory.
        old[:] = values

    def insert(self, name: str, pos: int, column: carray) -> None:
        """Insert `column` under `name` at position `pos`.

        Raises
        ------
        ValueError
            If the name exists.
        """
        if name in self._cols:
            raise ValueError(f"column {name!r} already exists")
        items = list(self._cols.items())
        items.insert(pos, (name, column))
        self._cols = dict(items)

    def pop(self, name: str) -> carray:
        """Remove the column `name` and return it.

        Raises
        ------
        KeyError
            If there is no such column.
        """
        if name not in self._cols:
            raise KeyError(f"no column {name!r}; columns are {self.names}")
        col = self._column(name)
        del self._cols[name]
        return col

    def __iter__(self) -> Iterator[str]:
        return iter(self._cols)

    def __len__(self) -> int:
        return len(self._cols)

    def __contains__(self, name: object) -> bool:
        return name in self._cols

    def opened(self) -> list[carray]:
        """The columns opened so far, in order: those a flush, a close or a
        change of threads concerns (a column not opened yet has nothing to
        save, holds no lock and takes the current settings when it opens)."""
        return [col for col in self._cols.values() if not isinstance(col, Unopened)]

    def values(self):
        for name in self._cols:
            self._column(name)
        return self._cols.values()

    def items(self):
        self.values()
        return self._cols.items()

    def __repr__(self) -> str:
        lines = [f"{name} : {col.dtype} ({len(col)},)" for name, col in self.items()]
        return "\n".join(lines)


class Unopened:
    """A column of a table opened in mode 'r', not opened yet: its directory
    and the length the table was opened with (its sealed ``meta/sizes``)."""

    __slots__ = ("path", "length", "kwargs")

    def __init__(self, path: str, length: int, kwargs: dict):
        self.path, self.length, self.kwargs = path, length, kwargs

    def open(self) -> carray:
        """The column, as the table saw it when it was opened.

        Raises
        ------
        ConcurrentModificationError
            If a writer removed rows since.
        CorruptDataError
            If the column is damaged (its metadata is checked in full now).
        """
        col = carray(rootdir=self.path, mode="r", **self.kwargs)
        if len(col) < self.length:
            raise ConcurrentModificationError(
                f"{self.path} lost rows since its table was opened ({len(col)} rows, the "
                f"table {self.length}); open the table again")
        col.engine.clip(self.length)  # rows committed since stay invisible
        return col


def check_name(name: Any) -> str:
    """`name` if a column may be called so (a non-empty string, not reserved, not a path).

    Raises
    ------
    ColumnNameError
        (a ``TypeError`` and a ``ValueError``) For a name that is not a string.
    ValueError
        For an empty, reserved or path-like name.
    """
    if not isinstance(name, str):  # TypeError (constructor) and ValueError (addcol), as legacy
        raise ColumnNameError(f"column names must be strings, not {type(name).__name__} "
                              f"{name!r}")
    if not name:
        raise ValueError("column names must be non-empty strings")
    if name.startswith("__") or name == NROW or "/" in name or "\\" in name or \
            name in (".", ".."):
        raise ValueError(f"{name!r} cannot be a column name (reserved or a path)")
    return name
