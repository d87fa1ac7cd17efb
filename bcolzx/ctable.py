"""ctable: a table of carray columns of equal length (bcolz 1.2 ``ctable``).

A ctable is pure Python over :class:`~bcolzx.carray.carray` columns.  On disk
it keeps the legacy layout, so clients that open it piecewise keep working::

    rootdir/
        __rootdirs__     {"names": [...]}: the columns, in order
        __attrs__        user attributes (JSON)
        <name>/          one complete carray directory per column

Here: the constructor, the properties, writing rows and columns, reading
rows by key, the Python protocols.  Its other methods come from mixins, one
concern each: making and opening the columns (:mod:`bcolzx._table_open`),
iteration and queries (:mod:`bcolzx._table_query`: planned by
:mod:`bcolzx._query.planner` over the table's columns, evaluated block by
block, reading only the columns the expression and ``outcols`` name, and
skipping blocks whose per-chunk min/max prove they cannot match),
reductions, groups and deletions (:mod:`bcolzx._table_analytics`) and other
formats (:mod:`bcolzx._exchange`).  The columns are held by
:class:`~bcolzx._columns.cols`.
"""

from __future__ import annotations

import os
import shutil

import numpy as np

from bcolzx import _table, _threads
from bcolzx import attrs as _attrs
from bcolzx._columns import NROW, cols
from bcolzx._columns import check_name as _check_name
from bcolzx._exchange import TableExchange
from bcolzx._format import jsonfile
from bcolzx._format.seal import Seal, new_uid
from bcolzx._format.strings import field_dtype
from bcolzx._query.scope import caller_scope
from bcolzx._storage import writer
from bcolzx._storage.lock import WriterLock
from bcolzx._storage.objects import Objects, resolve
from bcolzx._table_analytics import Analytics
from bcolzx._table_open import Opening, discard, remove_made
from bcolzx._table_query import Queries
from bcolzx._values import as_objects, conversion_error, is_sequence
from bcolzx.carray import carray
from bcolzx.defaults import defaults
from bcolzx.errors import ReadOnlyError, RowConditionError
from bcolzx.params import cparams as _cparams

# _check_name is imported from here by interop's Dask writer.
__all__ = ["ctable", "cols"]

_MODES = ("r", "a", "w")
_CARRAY_KWARGS = ("cparams", "dflt", "expectedlen", "chunklen", "safe")


def _split_kwargs(kwargs: dict) -> dict:
    unknown = set(kwargs) - set(_CARRAY_KWARGS)
    if unknown:
        raise TypeError(f"unexpected keyword arguments {sorted(unknown)}")
    return kwargs


class ctable(Opening, Queries, Analytics, TableExchange):  # noqa: N801 - legacy name
    """A table of compressed columns, in memory or on disk (bcolz 1.2 ``ctable``).

    Parameters
    ----------
    columns : structured array, ctable, or sequence of array_like/carray, optional
        The initial columns.  None with an existing `rootdir` opens it.
    names : sequence of str, optional
        Column names (default: the structured dtype's, else ``f0, f1, ...``).
    **kwargs
        ``rootdir``, ``mode`` ('r', 'a' or 'w'; default 'a'), ``auto_flush``
        (flush after every change; default True on disk, as legacy),
        ``lock_timeout`` (seconds to wait for a table another writer holds, as
        for :class:`carray`), ``allow_pickle`` (object-dtype columns, whose
        values are pickled: see :class:`carray`; default
        ``bcolzx.defaults.allow_pickle``), and for new columns ``cparams``,
        ``dflt``, ``expectedlen``, ``chunklen``.

    Raises
    ------
    PickleNotAllowedError
        When creating object columns, or reading or writing their values,
        without ``allow_pickle``.
    LockedError
        (an ``IOError``) when creating or replacing a table another writer
        holds; later, at the first change, when another writer holds it.
    ValueError
        For columns of different lengths, bad or duplicate names, or a bad mode.
    FileNotFoundError
        When opening a `rootdir` that holds no ctable.
    FileExistsError
        When creating over an existing `rootdir` in mode 'a'.
    ReadOnlyError
        When creating or writing in mode 'r'.

    Examples
    --------
    >>> import numpy as np, bcolzx
    >>> ct = bcolzx.ctable([np.arange(5), np.linspace(0, 1, 5)], names=["i", "x"])
    >>> ct.names, len(ct)
    (['i', 'x'], 5)
    >>> ct[1]
    np.void((1, 0.25), dtype=[('i', '<i8'), ('x', '<f8')])
    >>> ct.fetchwhere("(i > 1) & (x < 1)", out_flavor="numpy")["i"]
    array([2, 3])
    """

    def __init__(self, columns=None, names=None, **kwargs):
        rootdir = kwargs.pop("rootdir", None)
        where = resolve(rootdir, kwargs.pop("storage_options", None),
                        kwargs.pop("filesystem", None)) if rootdir is not None else None
        fetched = kwargs.pop("_fetched", None)
        publish = kwargs.pop("_publish", True)
        # A query's result in memory (fetchwhere): its columns are kept as given.
        flush = kwargs.pop("_flush", True)
        self._unpublished = False
        self._remote = where if isinstance(where, Objects) else None
        rootdir = where.url if isinstance(where, Objects) else where
        mode = kwargs.pop("mode", "a")
        # As legacy: on disk, every change is flushed unless told otherwise;
        # in memory there is nothing to flush, so it is always False.
        self.auto_flush = rootdir is not None and bool(kwargs.pop("auto_flush", True))
        kwargs.pop("auto_flush", None)
        if mode not in _MODES:
            raise ValueError(f"mode must be one of {_MODES}, not {mode!r}")
        self._rootdir = os.fspath(rootdir) if rootdir is not None else None
        self._mode = mode
        self._lock_timeout = defaults.resolve_lock_timeout(kwargs.pop("lock_timeout", None))
        self._allow_pickle = defaults.resolve_allow_pickle(kwargs.pop("allow_pickle", None))
        self._lock = None  # the table's write lock (_storage/writer.py), on disk
        #: What a new table wrote without an fsync, made durable with __rootdirs__.
        self._unsynced: list = []
        # How __rootdirs__ and __attrs__ are sealed (docs/format/README.md §2c):
        # new tables are; an opened table keeps what its __rootdirs__ says.
        self._seal = Seal()
        kwargs = _split_kwargs(kwargs)
        if columns is None and self._rootdir is not None and mode != "w":
            if mode != "r" and self._remote is None:  # taken at the first change
                self._lock = WriterLock(self._rootdir, self._lock_timeout)
            self._open(fetched)
            _table.bind_table(self)
            return
        if mode == "r":
            raise ReadOnlyError("cannot create a ctable in mode 'r'")
        if columns is None:
            raise ValueError("a new ctable needs columns (a structured array or a list); "
                             "mode 'w' replaces a table by new columns")
        if self._rootdir is not None:
            self._seal = Seal(True, new_uid())
        names, data = self._columns_from(columns, names)
        existed = self._rootdir is None or self._remote is not None or \
            os.path.lexists(self._rootdir)
        if self._remote is not None:
            self._prepare_remote(mode)
        elif self._rootdir is not None:
            if os.path.exists(self._rootdir) and mode == "a":
                raise FileExistsError(
                    f"{self._rootdir} exists; open it with ctable(rootdir=...) or use "
                    "mode='w' to replace it")
            # The lock first: a table another writer holds is never replaced.
            # Nothing of the table itself is fsynced before __rootdirs__ is written.
            self._lock = writer.prepare_dir(self._rootdir, replace=(mode == "w"),
                                            timeout=self._lock_timeout,
                                            unsynced=self._unsynced)
            _table.bind_table(self)
        try:
            self._attrs: _attrs.attrs | None
            if self._remote is not None:
                from bcolzx._storage.remote import AttrsIO

                self._attrs = _attrs.attrs(None, mode, _new=True, _seal=self._seal,
                                           _io=AttrsIO(self._remote, None))
            else:
                self._attrs = _attrs.attrs(self._rootdir, mode, _new=True, _seal=self._seal,
                                           _unsynced=self._unsynced)
            self._cols = cols(table=self)
            reuse = self._rootdir is None and not kwargs
            made = self._new_columns([(name, col) for name, col in zip(names, data)
                                      if not (reuse and isinstance(col, carray))], kwargs)
            for name, col in zip(names, data):
                self._cols.insert(name, len(self._cols), made.get(name, col))
            if flush or self._rootdir is not None:
                self.flush()
            if publish or self._remote is None:
                self._write_rootdirs()
            else:  # on object storage, by the caller's flush once it is filled (fromiter)
                self._unpublished = True
        except BaseException:
            if self._remote is not None:  # unpublished (no __rootdirs__): leave nothing
                discard(self._remote)
            elif self._rootdir is not None:  # no half-made table is left behind
                remove_made(self._rootdir, existed)
                if self._lock is not None:
                    self._lock.release()
            raise

    # -- construction ------------------------------------------------------------

    @staticmethod
    def _columns_from(columns, names) -> tuple[list[str], list]:
        if isinstance(columns, ctable):
            data = [columns.cols[n] for n in columns.names]
            default = columns.names
        elif isinstance(columns, np.ndarray) and columns.dtype.names:
            data = [columns[n] for n in columns.dtype.names]
            default = list(columns.dtype.names)
        elif isinstance(columns, carray):
            if not columns.dtype.names:
                raise ValueError(f"a carray of dtype {columns.dtype} is one column: pass a "
                                 "list of columns (ctable([c]))")
            arr = columns[:]
            data = [arr[n] for n in arr.dtype.names]
            default = list(arr.dtype.names)
        elif isinstance(columns, (list, tuple)):
            data = list(columns)
            default = [f"f{i}" for i in range(len(data))]
        else:
            raise TypeError("columns must be a structured array, a ctable or a list of "
                            f"arrays/carrays, not {type(columns).__name__}")
        names = default if names is None else \
            ([names] if isinstance(names, str) else list(names))
        if len(names) != len(data):
            raise ValueError(f"{len(names)} names for {len(data)} columns")
        if not data:
            raise ValueError("a ctable needs at least one column")
        for name in names:
            _check_name(name)
        if len(set(names)) != len(names):
            raise ValueError(f"duplicate column names in {names}")
        data = [c if isinstance(c, carray) else np.asarray(c) for c in data]
        lengths = {len(c) if c.ndim else 1 for c in data}
        if len(lengths) > 1:
            raise ValueError(f"columns have different lengths {sorted(lengths)}")
        return names, data

    # -- properties --------------------------------------------------------------

    @property
    def cols(self) -> cols:
        """The columns (:class:`cols`)."""
        return self._cols

    @property
    def names(self) -> list[str]:
        """Column names, in order."""
        return self._cols.names

    @property
    def dtype(self) -> np.dtype:
        """The structured dtype of a row (a StringDType column is an object
        field holding ``str``: NumPy has no StringDType fields)."""
        return np.dtype([(n, field_dtype(c.dtype), c.shape[1:]) for n, c in self._cols.items()])

    @property
    def len(self) -> int:
        """Number of rows."""
        return len(self)

    def __len__(self) -> int:
        return self._cols._length()

    @property
    def shape(self) -> tuple[int]:
        """``(len(t),)``."""
        return (len(self),)

    @property
    def ndim(self) -> int:
        """Always 1."""
        return 1

    @property
    def size(self) -> int:
        """Number of rows, as a Python int."""
        return len(self)

    @property
    def nbytes(self) -> int:
        """Uncompressed bytes of all columns."""
        return sum(c.nbytes for c in self._cols.values())

    @property
    def cbytes(self) -> int:
        """Compressed bytes of all columns."""
        return sum(c.cbytes for c in self._cols.values())

    @property
    def cparams(self):
        """Compression parameters (of the first column; the defaults when the
        table has no column)."""
        for col in self._cols.values():
            return col.cparams
        return _cparams()

    @property
    def rootdir(self) -> str | None:
        """The directory of a persistent ctable; None in memory."""
        return self._rootdir

    @property
    def mode(self) -> str:
        """The mode: ``'r'``, ``'a'`` or ``'w'``."""
        return self._mode

    @property
    def attrs(self) -> _attrs.attrs:
        """User attributes (see :class:`bcolzx.attrs.attrs`)."""
        if self._attrs is None:  # a table opened in mode 'r' reads them on first use
            self._attrs = _attrs.attrs(self._rootdir, "r", _seal=self._seal)
        return self._attrs

    # -- writing -----------------------------------------------------------------

    def _check_writable(self) -> None:
        if self._mode == "r":
            raise ReadOnlyError("the ctable is opened read-only (mode 'r')")
        _table.take_table(self)  # the table's and the columns' locks, at the first change

    def _check_rewritable(self, what: str) -> None:
        """Refuse `what` (a change of stored rows or columns) on object storage."""
        if self._remote is not None:
            from bcolzx._storage.remote import append_only

            raise append_only(what, self._rootdir)

    def _rows_of(self, rows) -> list[np.ndarray]:
        """`rows` (any form append accepts) as one array per column, validated."""
        names = self.names
        if isinstance(rows, ctable):
            rows = [rows.cols[n][:] for n in (names if set(names) <= set(rows.names)
                                              else rows.names)]
        elif isinstance(rows, (np.ndarray, np.void)) and rows.dtype.names:
            fields = rows.dtype.names
            use = names if set(names) <= set(fields) else fields
            rows = [np.atleast_1d(rows[n]) if rows.ndim == 0 else rows[n] for n in use]
        elif isinstance(rows, tuple) and len(rows) == len(names) and \
                all(np.ndim(v) == 0 or self._cols[n].dtype == object
                    for n, v in zip(names, rows)):
            rows = [as_objects([v]) if self._cols[n].dtype == object else np.array([v])
                    for n, v in zip(names, rows)]
        elif not isinstance(rows, (list, tuple)):
            raise TypeError("append needs a list of columns, a structured array, a record "
                            f"or a ctable, not {type(rows).__name__}")
        if len(rows) != len(names):
            raise ValueError(f"{len(rows)} columns given for a ctable of {len(names)}")
        out = []
        for name, value in zip(names, rows):
            col = self._cols[name]
            if col.dtype == object:  # one object per row; a non-sequence is one object
                if is_sequence(value):
                    out.append(as_objects(value))
                else:
                    one = np.empty((), dtype=object)
                    one[()] = value
                    out.append(one)
                continue
            arr = value[:] if isinstance(value, carray) else value
            try:
                arr = np.asarray(arr, dtype=col.dtype)
            except (TypeError, ValueError) as exc:
                raise conversion_error(exc, f"column {name!r}") from None
            rowshape = self._cols[name].shape[1:]
            if not len(rowshape) <= arr.ndim <= len(rowshape) + 1 \
                    or arr.shape[arr.ndim - len(rowshape):] != rowshape:
                raise ValueError(f"column {name!r}: its rows have shape {rowshape}, the value "
                                 f"given has shape {arr.shape}")
            out.append(arr)
        n = max((len(a) if a.ndim > len(self._cols[nm].shape) - 1 else 1)
                for nm, a in zip(names, out))
        for i, (name, arr) in enumerate(zip(names, out)):
            rowdims = len(self._cols[name].shape) - 1
            if arr.ndim == rowdims:  # a scalar (or one row): broadcast
                out[i] = np.broadcast_to(arr, (n, *arr.shape))
            elif len(arr) != n:
                raise ValueError(f"column {name!r} has {len(arr)} rows, the others {n}")
        return out

    @_table.table_guarded
    def append(self, rows) -> None:
        """Append rows to every column.

        Parameters
        ----------
        rows : list, structured array, record or ctable
            A list with one array, carray or scalar per column (scalars
            broadcast), a structured array or record (fields matched by
            name), or another ctable.

        Raises
        ------
        ReadOnlyError
            In mode 'r'.
        TypeError, ValueError
            If the rows do not fit the columns; nothing is appended then.
        """
        self._check_writable()
        arrays = self._rows_of(rows)
        for col, arr in zip(self._cols.values(), arrays):
            col.append(arr)
        if self.auto_flush:
            # Safe against a crash of the process at once, cheaply (the
            # columns' append journals, docs/format/README.md §3b); flush()
            # and close() make the rows durable against power loss too.
            for col in self._cols.values():
                col.engine.flush_appends()

    @_table.table_guarded
    def trim(self, nitems: int) -> None:
        """Remove the last `nitems` rows (a negative `nitems` enlarges by
        ``-nitems`` rows of each column's ``dflt``, as legacy bcolz).

        Raises
        ------
        ValueError
            If `nitems` is more than the length.
        ReadOnlyError
            In mode 'r'.
        """
        self._check_writable()
        nitems = int(nitems)
        if nitems < 0:
            self.resize(len(self) - nitems)
            return
        if nitems > len(self):
            raise ValueError(f"cannot trim {nitems} rows from {len(self)} (at most {len(self)})")
        for col in self._cols.values():
            col.trim(nitems)
        if self.auto_flush:
            self.flush()

    @_table.table_guarded
    def resize(self, nitems: int) -> None:
        """Grow (with each column's ``dflt``) or shrink to `nitems` rows.

        Raises
        ------
        ValueError
            If `nitems` is negative.
        ReadOnlyError
            In mode 'r'.
        """
        self._check_writable()
        if nitems < 0:
            raise ValueError(f"nitems must be >= 0, not {nitems}")
        for col in self._cols.values():
            col.resize(nitems)
        if self.auto_flush:
            self.flush()

    def addcol(self, newcol, name: str | None = None, pos: int | None = None,
               move: bool = False, **kwargs) -> None:
        """Add a column.

        Parameters
        ----------
        newcol : array_like or carray
            The data: as many rows as the table.
        name : str, optional
            Its name (default ``f<number of columns>``).
        pos : int, optional
            Position among the columns (default: last).
        move : bool
            For an on-disk carray and an on-disk table: move its directory
            into the table instead of copying it.
        **kwargs
            ``cparams``, ``dflt``, ``expectedlen``, ``chunklen`` for the copy;
            ``allow_pickle`` for an object column (default: the table's).
            A new column of a legacy bcolz (v1) table is v1 too; an object
            one then stores one pickle per chunk file, as legacy bcolz did.

        Raises
        ------
        ValueError
            For a length mismatch, a bad or existing name, or a bad `pos`.
        ReadOnlyError
            In mode 'r'.
        PickleNotAllowedError
            For an object column without ``allow_pickle``.
        """
        self._check_writable()
        allow_pickle = defaults.resolve_allow_pickle(kwargs.pop("allow_pickle", None))
        kwargs = _split_kwargs(kwargs)
        name = f"f{len(self._cols)}" if name is None else _check_name(name)
        if name in self._cols:
            raise ValueError(f"column {name!r} already exists")
        pos = len(self._cols) if pos is None else int(pos)
        if not 0 <= pos <= len(self._cols):
            raise ValueError(f"pos must be in 0..{len(self._cols)}, not {pos}")
        data = newcol if isinstance(newcol, carray) else np.asarray(newcol)
        if not isinstance(data, carray):  # as legacy: compressed as the table is
            kwargs.setdefault("cparams", self.cparams)
        if self._cols and (len(data) if data.ndim else 1) != len(self):
            raise ValueError(f"the new column has {len(data)} rows, the table {len(self)}")
        moved = data if move and isinstance(data, carray) else None
        source = moved.rootdir if moved is not None else None
        if moved is not None and source and self._rootdir and \
                moved.engine.store.native != self._legacy():
            moved.flush()
            dest = os.path.join(self._rootdir, name)
            os.replace(source, dest)
            # Durable before __rootdirs__ names it (both directories: a rename
            # between two is durable once both are).
            jsonfile.fsync_dir(self._rootdir)
            jsonfile.fsync_dir(os.path.dirname(os.path.abspath(source)))
            col = carray(rootdir=dest, mode=self._mode, lock_timeout=self._lock_timeout,
                         allow_pickle=self._allow_pickle if allow_pickle is None else
                         allow_pickle)
        elif self._rootdir is None and isinstance(data, carray) and not kwargs:
            col = data
        else:
            col = self._new_column(name, data, kwargs, allow_pickle=allow_pickle)
        self._cols.insert(name, pos, col)
        self._write_rootdirs()
        if self.auto_flush:
            self.flush()

    def delcol(self, name: str | None = None, pos: int | None = None, keep: bool = False
               ) -> None:
        """Remove a column, by `name` or by `pos` (default: the last).

        Parameters
        ----------
        keep : bool
            Keep the column's directory on disk (default: delete it).

        Raises
        ------
        ValueError
            For both a name and a `pos`.
        IndexError
            For a `pos` out of range (as legacy).
        KeyError
            If there is no such column.
        ReadOnlyError
            In mode 'r'.
        """
        self._check_writable()
        self._check_rewritable("remove a column of")
        if name is not None and pos is not None:
            raise ValueError("give name or pos, not both")
        if name is None:
            names = self.names
            pos = len(names) - 1 if pos is None else int(pos)
            if not -len(names) <= pos < len(names):
                raise IndexError(f"pos {pos} out of range for {len(names)} columns")
            name = names[pos]
        col = self._cols.pop(name)
        self._write_rootdirs()
        if col.rootdir is not None and self._rootdir is not None and \
                os.path.dirname(os.path.abspath(col.rootdir)) == os.path.abspath(self._rootdir):
            col.engine.close(flush=keep)
            if not keep:
                shutil.rmtree(col.rootdir)
        if self.auto_flush:
            self.flush()

    def flush(self) -> None:
        """Make every column durable (see :meth:`carray.flush`), rows saved in the
        columns' append journals (``auto_flush``) included.

        Raises
        ------
        OSError
            If the file system refuses.
        LockedError
            If another writer holds the table and rows of its journals are
            not committed yet.
        """
        self._flush(journal=True)
        if self._unpublished:
            self._write_rootdirs()
            self._unpublished = False

    @_table.table_guarded
    def _flush(self, journal: bool) -> None:
        """Commit the columns; the journals' rows too with `journal` (else only when
        this table holds the lock: closing a table read in mode 'a' commits nothing)."""
        opened = self._cols.opened()  # a column not opened yet has nothing to save
        on_disk = [c for c in opened if c.rootdir is not None]
        if len(on_disk) < 2:  # in memory a flush stores nothing worth overlapping
            for col in opened:
                if col.mode != "r":
                    col.engine.flush(journal=journal)
            return
        # The columns' fsyncs overlap (each flush is mostly waiting for the disk).
        _threads.run_all(lambda c: c.engine.flush(journal=journal),
                         [c for c in on_disk if c.mode != "r"], min(len(on_disk), 8))

    def compact(self) -> int:
        """Flush, then reclaim the space rewrites left in every column's files.

        See :func:`bcolzx.compact`; legacy (v1) columns are left as they are.

        Returns
        -------
        int
            Bytes reclaimed (0 in memory).

        Raises
        ------
        ReadOnlyError
            In mode 'r'.
        UnsupportedFormatError
            If every column is in a legacy bcolz (v1) directory.
        """
        from bcolzx.compact import compact_ctable

        return compact_ctable(self)

    def free_cachemem(self) -> None:
        """Release the columns' caches."""
        for col in self._cols.opened():
            col.free_cachemem()

    def copy(self, **kwargs) -> "ctable":
        """A copy, with new ``rootdir``, ``mode``, ``cparams``... as keywords.

        As in legacy bcolz, the copy is compressed with the current defaults
        (``bcolzx.defaults.cparams``) unless `cparams` is given; each column
        keeps its chunk length and ``dflt``.

        Raises
        ------
        OSError
            If `rootdir` is this table's own directory.
        ValueError, FileExistsError
            As the constructor.
        """
        rootdir = kwargs.get("rootdir")
        if rootdir is not None and self._rootdir is not None and \
                os.path.abspath(os.fspath(rootdir)) == os.path.abspath(self._rootdir):
            raise OSError(f"cannot copy {self._rootdir} onto itself")
        kwargs.setdefault("cparams", _cparams())
        # Passing parameters makes the constructor copy carray columns.
        out = ctable([self._cols[n] for n in self.names], names=self.names,
                     **{"expectedlen": len(self), "allow_pickle": self._allow_pickle, **kwargs})
        for key, value in self.attrs.getall().items():
            out.attrs[key] = value
        return out

    # -- reading -----------------------------------------------------------------

    def _outcols(self, outcols) -> list[str]:
        if outcols is None:
            return self.names
        if isinstance(outcols, str):
            outcols = [c.strip() for c in outcols.split(",") if c.strip()]
        outcols = list(outcols)
        for name in outcols:
            if name != NROW and name not in self._cols:
                raise ValueError(f"no column {name!r} (outcols); columns are {self.names}")
        return outcols

    def _dtype_of(self, names: list[str]) -> np.dtype:
        return np.dtype([(n, np.int64) if n == NROW else
                         (n, field_dtype(self._cols[n].dtype), self._cols[n].shape[1:])
                         for n in names])

    def _read(self, names: list[str], start: int, stop: int, positions=None,
              block: tuple[int, dict] | None = None) -> np.ndarray:
        """Rows ``start..stop-1`` (or, within them, `positions`) of columns `names`.

        `block`, ``(first_row, {name: rows})``, holds columns already read
        for a block containing `positions`: those are taken from there.
        """
        n = stop - start if positions is None else len(positions)
        out = np.empty(n, dtype=self._dtype_of(names))
        first, have = block if block is not None else (0, {})
        for name in names:
            if name == NROW:
                out[name] = np.arange(start, stop) if positions is None else positions
            elif positions is not None and name in have:
                out[name] = have[name][positions - first]
            elif positions is None:
                out[name] = self._cols[name][start:stop]
            else:
                out[name] = self._cols[name][start:stop][positions - start]
        return out

    def __getitem__(self, key):
        n = len(self)
        if isinstance(key, tuple) and len(key) == 1:  # t[k,] is t[k], as legacy
            key = key[0]
        if isinstance(key, (int, np.integer)):
            i = int(key) + n if key < 0 else int(key)
            if not 0 <= i < n:
                raise IndexError(f"index {key} out of range for length {n}")
            return self._read(self.names, i, i + 1)[0]
        if isinstance(key, slice):
            start, stop, step = key.indices(n)
            if step == 1:
                return self._read(self.names, start, max(start, stop))
            out = np.empty(len(range(start, stop, step)), dtype=self.dtype)
            for name, col in self._cols.items():
                out[name] = col[key]
            return out
        if isinstance(key, str):
            if key in self._cols:
                return self._cols[key]
            return self.fetchwhere(key, out_flavor="numpy", _scope=caller_scope(None))
        if isinstance(key, list) and key and all(isinstance(k, str) for k in key):
            for name in key:
                self._cols[name]  # noqa: B018 - KeyError for an unknown name
            return ctable([self._cols[k] for k in key], names=key,
                          allow_pickle=self._allow_pickle)
        if isinstance(key, tuple):
            raise IndexError("a ctable is one-dimensional: index it with one key, not "
                             f"{len(key)}")
        if isinstance(key, (list, np.ndarray, carray)):
            first = next(iter(self._cols.values()))
            pos = first._positions(key)
            out = np.empty(len(pos), dtype=self.dtype)
            for name, col in self._cols.items():
                out[name] = col._take(pos)
            return out
        raise IndexError(f"unsupported key type {type(key).__name__}: index with an int, a "
                         "slice, a column name, a list of names, an array of positions or "
                         "booleans, or a condition string")

    @_table.table_guarded
    def __setitem__(self, key, value) -> None:
        self._check_writable()
        if isinstance(key, tuple) and len(key) == 1:  # t[k,] = v is t[k] = v, as legacy
            key = key[0]
        if isinstance(key, str):
            if key in self._cols:  # overwrite the column's values (legacy)
                self._cols[key] = value
                if self.auto_flush:
                    self.flush()
                return
            mask = self.eval(key, out_flavor="numpy", _scope=caller_scope(None))
            key = np.flatnonzero(self._row_condition(key, mask))
        elif isinstance(key, tuple):
            raise IndexError("a ctable is one-dimensional: index it with one key, not "
                             f"{len(key)}")
        value = _as_rows(value, self.dtype)
        for name, col in self._cols.items():
            col[key] = value[name]
        if self.auto_flush:
            self.flush()

    def _row_condition(self, expression: str, mask: np.ndarray) -> np.ndarray:
        """`mask`, the value of `expression`, checked to be one boolean per row."""
        if mask.dtype != np.bool_:
            raise ValueError(f"{expression!r} gives {mask.dtype} values, not a boolean "
                             "condition")
        if mask.shape != (len(self),):
            raise RowConditionError(f"{expression!r} gives booleans of shape {mask.shape}, "
                                    f"not one per row ({len(self)}; it compares the items "
                                    "of an N-D column)")
        return mask

    def _sync_threads(self) -> None:
        for col in self._cols.opened():
            col._sync_threads()

    # -- protocol ------------------------------------------------------------------

    def __enter__(self) -> "ctable":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Flush, then give up the write locks of the table and its columns.

        As :meth:`carray.close`: the ctable stays usable, and a later change
        takes the locks again (re-reading the table first).

        Raises
        ------
        OSError
            If the flush fails (the locks are given up all the same).
        """
        if self._rootdir is not None:
            _table.release_table(self)

    def __array__(self, dtype=None, copy=None):
        out = self[:]
        return out if dtype is None else out.astype(dtype)

    def __reduce__(self):
        # On disk: flush, then the copy reopens the directory read-only (a worker
        # process never becomes a second writer); in memory: carry the data.
        if self._rootdir is not None:
            self.flush()
            where = self._remote or self._rootdir  # object storage: its filesystem travels
            if self._allow_pickle is not None:  # the switch travels with the copy
                return (_reopen, (where, "r", self._allow_pickle))
            return (_reopen, (where, "r"))
        if any(c.dtype == object for c in self._cols.values()):
            # The values travel unpickled by the receiver's own pickle.loads: its consent.
            return (_rebuild, (self[:], True))
        return (ctable, (self[:],))

    def __sizeof__(self) -> int:
        return object.__sizeof__(self) + sum(c.__sizeof__() for c in self._cols.values())

    def __repr__(self) -> str:
        lines = [f"ctable({(len(self),)}, {self.dtype})",
                 f"  nbytes: {self.nbytes}; cbytes: {self.cbytes}; "
                 f"ratio: {self.nbytes / max(self.cbytes, 1):.2f}",
                 f"  cparams := {self.cparams!r}"]
        if self._rootdir is not None:
            lines.append(f"  rootdir := '{self._rootdir}'")
        lines.append(str(self))
        return "\n".join(lines)

    def _pickles_refused(self) -> bool:
        """Whether an object column's values may not be read now."""
        return any(c._pickles_refused() for c in self._cols.values())

    def __str__(self) -> str:
        n = len(self)
        if self._pickles_refused():  # printing must not raise nor unpickle
            return f"[{n} rows; object columns are pickled, not read: allow_pickle is off]"
        if n <= 20:
            return str(self[:])
        return f"{str(self[:10])[:-1]} ... {str(self[n - 10:])[1:]}"


def _as_rows(value, dtype: np.dtype):
    """`value` (a record, a tuple, a list of tuples, a structured array or a
    ctable) as a structured scalar or array of `dtype`.

    Raises
    ------
    ValueError
        If it cannot be converted.
    """
    if isinstance(value, ctable):
        value = value[:]
    if isinstance(value, (np.ndarray, np.void)) and value.dtype.names:
        return value
    try:
        if isinstance(value, tuple):
            return np.array([value], dtype=dtype)[0]
        if isinstance(value, list):
            return np.array([tuple(v) if isinstance(v, (list, np.ndarray)) else v
                             for v in value], dtype=dtype)
        return np.asarray(value, dtype=dtype)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"cannot convert {value!r} to rows of {dtype}: {exc}") from None


def _reopen(rootdir: str, mode: str, allow_pickle: bool | None = None) -> ctable:
    return ctable(rootdir=rootdir, mode=mode, allow_pickle=allow_pickle)


def _rebuild(rows: np.ndarray, allow_pickle: bool | None = None) -> ctable:
    return ctable(rows, allow_pickle=allow_pickle)


