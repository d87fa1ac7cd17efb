"""ctable: a table of carray columns of equal length (bcolz 1.2 ``ctable``).

A ctable is pure Python over :class:`~bcolzx.carray.carray` columns.  On disk
it keeps the legacy layout, so clients that open it piecewise keep working::

    rootdir/
        __rootdirs__     {"names": [...]}: the columns, in order
        __attrs__        user attributes (JSON)
        <name>/          one complete carray directory per column

Queries (:meth:`ctable.where`, :meth:`~ctable.whereblocks`,
:meth:`~ctable.fetchwhere`, :meth:`~ctable.eval`) are planned by
:mod:`bcolzx._query.planner` over the table's columns: evaluated block by
block, reading only the columns the expression and ``outcols`` name, and
skipping blocks whose per-chunk min/max (the columns' zone maps) prove they
cannot match.
"""

from __future__ import annotations

import keyword
import os
import shutil
import weakref
from collections import namedtuple
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from bcolzx import _table, _threads
from bcolzx import attrs as _attrs
from bcolzx._analytics import delete as _deletion
from bcolzx._format import jsonfile, layout
from bcolzx._format.seal import Seal, new_uid
from bcolzx._format.strings import field_dtype
from bcolzx._query import planner
from bcolzx._query.evaluate import evaluate, resolve_flavor
from bcolzx._query.scope import caller_scope
from bcolzx._storage import snapshot, writer
from bcolzx._storage.lock import WriterLock
from bcolzx._storage.objects import Objects, resolve
from bcolzx.carray import _is_sequence, as_objects, carray, conversion_error
from bcolzx.defaults import defaults
from bcolzx.errors import (
    ColumnNameError,
    ConcurrentModificationError,
    DatasetNotFoundError,
    NoColumnsError,
    ReadOnlyError,
    RowConditionError,
)
from bcolzx.params import cparams as _cparams

__all__ = ["ctable", "cols"]

_MODES = ("r", "a", "w")
#: The pseudo-column of row numbers accepted in ``outcols``.
NROW = "nrow__"
_CARRAY_KWARGS = ("cparams", "dflt", "expectedlen", "chunklen", "safe")


class cols:  # noqa: N801 - legacy name
    """The columns of a ctable, by name and in order (``ctable.cols``).

    ``cols[name]`` is the column's carray, ``cols.names`` the names;
    :meth:`insert` and :meth:`pop` add and remove columns (prefer
    :meth:`ctable.addcol` and :meth:`ctable.delcol`, which also manage the
    columns' directories).
    """

    def __init__(self, names: Sequence[str] = (), columns: Sequence = (),
                 table: "ctable | None" = None):
        # A column of a table opened in mode 'r' may be an _Unopened until
        # it is first used (_column opens it).
        self._cols: dict[str, Any] = dict(zip(names, columns))
        self._table = None if table is None else weakref.ref(table)

    def _column(self, name: str) -> carray:
        col = self._cols[name]
        if isinstance(col, _Unopened):
            col = self._cols[name] = col.open()
        return col

    def _length(self) -> int:
        """The rows of the first column (0 without columns), opening none."""
        for col in self._cols.values():
            return col.length if isinstance(col, _Unopened) else len(col)
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


class _Unopened:
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


def _lengths_without_opening(rootdir: str, names: list[str]) -> dict[str, int] | None:
    """Each column's committed length from its sealed ``meta/sizes`` alone, when
    that is the whole story: every column in the bcolzx format (sealed), no
    append journal, all the same length.  None otherwise (open them all)."""
    lengths = {}
    for name in names:
        path = os.path.join(rootdir, name)
        try:
            if os.stat(layout.meta_path(path, layout.JOURNAL_FILE)).st_size:
                return None
        except FileNotFoundError:
            pass
        except OSError:
            return None
        try:
            sizes, seal = jsonfile.read_json_sealed(layout.meta_path(path, layout.SIZES_FILE))
        except (OSError, ValueError):
            return None  # reported as it should be by opening the column
        shape = sizes.get("shape") if isinstance(sizes, dict) else None
        if not (seal.sealed and isinstance(shape, list) and shape
                and type(shape[0]) is int and shape[0] >= 0):
            return None
        lengths[name] = shape[0]
    return lengths if len(set(lengths.values())) <= 1 else None


def _remove_made(rootdir: str, existed: bool) -> None:
    """Remove what a failed constructor wrote in `rootdir`: the directory itself when
    it did not exist before, else everything in it but the lock file."""
    if not existed:
        shutil.rmtree(rootdir, ignore_errors=True)
        return
    for entry in os.listdir(rootdir):
        if entry != layout.LOCK_FILE:
            path = os.path.join(rootdir, entry)
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path, ignore_errors=True)
            else:
                os.unlink(path)


def _discard(objects) -> None:
    """Remove what a failed constructor uploaded (best effort: the store may be down)."""
    try:
        objects.remove_all()
    except Exception:  # noqa: BLE001 - without __rootdirs__ no reader sees them anyway
        pass


def _check_name(name: Any) -> str:
    if not isinstance(name, str):  # TypeError (constructor) and ValueError (addcol), as legacy
        raise ColumnNameError(f"column names must be strings, not {type(name).__name__} "
                              f"{name!r}")
    if not name:
        raise ValueError("column names must be non-empty strings")
    if name.startswith("__") or name == NROW or "/" in name or "\\" in name or \
            name in (".", ".."):
        raise ValueError(f"{name!r} cannot be a column name (reserved or a path)")
    return name


def _split_kwargs(kwargs: dict) -> dict:
    unknown = set(kwargs) - set(_CARRAY_KWARGS)
    if unknown:
        raise TypeError(f"unexpected keyword arguments {sorted(unknown)}")
    return kwargs


class ctable:  # noqa: N801 - legacy name
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
        # How __rootdirs__ and __attrs__ are sealed (docs/format/README.md §2c):
        # new tables are; an opened table keeps what its __rootdirs__ says.
        self._seal = Seal(True, new_uid()) if self._rootdir is not None else Seal()
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
            self._lock = writer.prepare_dir(self._rootdir, replace=(mode == "w"),
                                            timeout=self._lock_timeout)
            _table.bind_table(self)
        try:
            self._attrs: _attrs.attrs | None
            if self._remote is not None:
                from bcolzx._storage.remote import AttrsIO

                self._attrs = _attrs.attrs(None, mode, _new=True, _seal=self._seal,
                                           _io=AttrsIO(self._remote, None))
            else:
                self._attrs = _attrs.attrs(self._rootdir, mode, _new=True, _seal=self._seal)
            self._cols = cols(table=self)
            reuse = self._rootdir is None and not kwargs
            made = self._new_columns([(name, col) for name, col in zip(names, data)
                                      if not (reuse and isinstance(col, carray))], kwargs)
            for name, col in zip(names, data):
                self._cols.insert(name, len(self._cols), made.get(name, col))
            self.flush()
            if publish or self._remote is None:
                self._write_rootdirs()
            else:  # on object storage, by the caller's flush once it is filled (fromiter)
                self._unpublished = True
        except BaseException:
            if self._remote is not None:  # unpublished (no __rootdirs__): leave nothing
                _discard(self._remote)
            elif self._rootdir is not None:  # no half-made table is left behind
                _remove_made(self._rootdir, existed)
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

    def _prepare_remote(self, mode: str) -> None:
        """Check where a new table on object storage goes (emptied in mode 'w')."""
        from bcolzx._storage import remote

        objects = self._remote
        assert objects is not None
        kind, _ = remote.probe_published(objects)
        if kind is not None and mode == "a":
            raise FileExistsError(f"{self._rootdir} holds a {kind}; open it with "
                                  "bcolzx.open() or use mode='w' to replace it")
        if mode == "w":
            objects.remove_all()

    def _coldir(self, name: str):
        if self._remote is not None:
            return self._remote.child(name)
        return None if self._rootdir is None else os.path.join(self._rootdir, name)

    def _legacy(self) -> bool:
        """Whether this table's directory is legacy bcolz's (v1): its new
        columns must be v1 too, for legacy bcolz to keep opening it."""
        return self._rootdir is not None and any(
            not c.engine.store.native for c in self._cols.values())

    def _new_columns(self, todo: list, kwargs: dict) -> dict:
        """New unflushed columns ``{name: carray}`` from ``(name, data)`` pairs.

        On disk, several columns are filled at once (as many as
        ``nthreads``): one column's files are written while another is
        compressed.  They are created here, in order, so that their write
        locks belong to this thread.  Every column is filled (or has failed)
        before this returns or raises the first failure.
        """
        workers = min(len(todo), defaults.nthreads)
        if self._rootdir is None or workers < 2:
            return {name: self._new_column(name, data, kwargs, flush=False)
                    for name, data in todo}
        made = [(name, *self._empty_column(name, data, kwargs)) for name, data in todo]
        _threads.run_all(lambda job: job[1].append(job[2]), made, workers)
        return {name: col for name, col, _ in made}

    def _new_column(self, name: str, data, kwargs: dict, flush: bool = True,
                    allow_pickle=None) -> carray:
        """A new column holding `data` (flushed unless `flush` is False)."""
        col, data = self._empty_column(name, data, kwargs, allow_pickle)
        col.append(data)
        if flush and col.rootdir is not None:
            col.flush()
        return col

    def _empty_column(self, name: str, data, kwargs: dict, allow_pickle=None) -> tuple:
        """A new empty column for `data`, and `data` as it is to be appended."""
        rootdir = self._coldir(name)
        if isinstance(data, carray):
            kw = {"cparams": data.cparams, "chunklen": data.chunklen, "dflt": data.dflt,
                  **kwargs}
            if data.dtype == object and not data.engine.store.native and \
                    "chunklen" not in kwargs:
                del kw["chunklen"]  # a legacy object column's one row per chunk
        else:
            data = np.asarray(data)
            kw = {"expectedlen": len(data) if data.ndim else 1, **kwargs}
        allow = self._allow_pickle if allow_pickle is None else allow_pickle
        col = carray(np.empty((0, *data.shape[1:]), data.dtype), rootdir=rootdir, mode="w",
                     lock_timeout=self._lock_timeout, allow_pickle=allow, _v1=self._legacy(),
                     _publish=False, **kw)
        return col, data

    def _open_remote(self, fetched: dict | None) -> None:
        """Open a table on object storage: its small files, then its columns' (two batches)."""
        from bcolzx._storage import remote

        objects = self._remote
        assert objects is not None
        if fetched is None or fetched.get(remote.ROOTDIRS) is None:
            keys = [remote.ROOTDIRS, remote.ATTRS]
            fetched = dict(zip(keys, objects.fetch(keys)))
        if fetched.get(remote.ROOTDIRS) is None:
            raise DatasetNotFoundError(f"no ctable at {self._rootdir} (no "
                                       f"{layout.ROOTDIRS_FILE})")
        names, self._seal = remote.read_rootdirs(objects, fetched[remote.ROOTDIRS])
        keys = [f"{name}/{key}" for name in names for key in remote.CARRAY_KEYS]
        files = dict(zip(keys, objects.fetch(keys)))
        opened = {name: carray(rootdir=objects.child(name), mode=self._mode,
                               allow_pickle=self._allow_pickle,
                               _fetched={key: files[f"{name}/{key}"]
                                         for key in remote.CARRAY_KEYS})
                  for name in names}
        _table.even_columns(opened, self._mode)  # a crash between two columns' commits
        self._cols = cols(list(opened), list(opened.values()), table=self)
        self._attrs = _attrs.attrs(None, self._mode, _seal=self._seal,
                                   _io=remote.AttrsIO(objects, fetched.get(remote.ATTRS)))

    def _open(self, fetched: dict | None = None) -> None:
        if self._remote is not None:
            self._open_remote(fetched)
            return
        rootdir = self._rootdir
        assert rootdir is not None  # only tables on disk are opened
        path = os.path.join(rootdir, layout.ROOTDIRS_FILE)
        if self._mode == "r" and not os.path.lexists(rootdir):
            # legacy bcolz's words and KeyError, and a FileNotFoundError too
            raise DatasetNotFoundError(f"Disk-based ctable opened with `r`ead mode yet "
                                       f"`rootdir='{rootdir}'` does not exist")
        if self._mode == "a" and not os.path.lexists(rootdir):
            raise NoColumnsError(f"no ctable at {rootdir!r} to open, and no columns given to "
                                 "create one")
        if not os.path.isfile(path):
            raise FileNotFoundError(f"no ctable at {rootdir} (no {layout.ROOTDIRS_FILE})")
        meta, self._seal = jsonfile.read_json_sealed(path)
        names = layout.column_names(meta, path)
        # A recorded deletion leaves columns at two lengths (bcolzx._analytics.delete).
        deleting = os.path.exists(os.path.join(rootdir, _deletion.INTENT))
        if self._mode == "r" and not deleting:
            lengths = _lengths_without_opening(rootdir, names)
            if lengths is not None:  # each column opened (and checked in full) when used
                kwargs = {"lock_timeout": self._lock_timeout, "allow_pickle": self._allow_pickle}
                self._cols = cols(names, [_Unopened(os.path.join(rootdir, n), lengths[n], kwargs)
                                          for n in names], table=self)
                self._attrs = None
                return
        # A writer commits the columns one by one: open them until they agree.
        opened = snapshot.agreeing_columns(
            lambda: {name: carray(rootdir=self._coldir(name), mode=self._mode,
                                  lock_timeout=self._lock_timeout,
                                  allow_pickle=self._allow_pickle) for name in names},
            rootdir, wait=not deleting and not (self._lock is not None and self._lock.held))
        if deleting:
            opened = _deletion.resolve(rootdir, opened, self._lock, self._mode != "r")
        _table.even_columns(opened, self._mode)  # a crash between two columns' commits
        self._cols = cols(list(opened), list(opened.values()), table=self)
        self._attrs = _attrs.attrs(self._rootdir, self._mode, _seal=self._seal)

    def _write_rootdirs(self) -> None:
        if self._remote is not None:  # the table's publication: written last
            self._remote.put({layout.ROOTDIRS_FILE: jsonfile.dumps(
                {"names": self.names}, layout.ROOTDIRS_FILE, seal=self._seal.sealed,
                uid=self._seal.uid)})
        elif self._rootdir is not None:
            jsonfile.write_json(os.path.join(self._rootdir, layout.ROOTDIRS_FILE),
                                {"names": self.names}, seal=self._seal.sealed,
                                uid=self._seal.uid)

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
                if _is_sequence(value):
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
        on_disk = [c for c in self._cols.values() if c.rootdir is not None]
        if len(on_disk) < 2:  # in memory a flush stores nothing worth overlapping
            for col in self._cols.values():
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
        for col in self._cols.values():
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
        make = _row_maker(names, out_flavor)

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
        make = _row_maker(names, out_flavor)
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
        parts = list(self._query(expression, names, limit, skip, scope, vm))
        result = np.concatenate(parts) if parts else np.empty(0, self._dtype_of(names))
        if flavor == "numpy":
            return result
        # String columns come back as StringDType columns, not object fields.
        columns = [result[n].astype(self._cols[n].dtype) if n in self._cols and
                   field_dtype(self._cols[n].dtype) != self._cols[n].dtype else result[n]
                   for n in names]
        return ctable(columns, names=names, allow_pickle=self._allow_pickle)

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

    # -- analytics -----------------------------------------------------------------

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
        return ctable([*key_values, *results], names=[*keys, *names], **kwargs)

    def _sync_threads(self) -> None:
        for col in self._cols.values():
            col._sync_threads()

    # -- interop -------------------------------------------------------------------

    def todataframe(self, columns=None, orient: str = "columns"):
        """This table as a pandas DataFrame (see :func:`bcolzx.interop.pandas.to_dataframe`).

        Parameters
        ----------
        columns : sequence of str or str, optional
            The columns to read, in order (default: all but a stored index).
        orient : {'columns', 'index'}
            As in :meth:`pandas.DataFrame.from_dict`.

        Returns
        -------
        pandas.DataFrame

        Raises
        ------
        ImportError
            If pandas is not installed.
        KeyError
            For an unknown column in `columns`.
        ValueError
            For another `orient`, or a column whose rows are not scalars.
        """
        from bcolzx.interop.pandas import to_dataframe

        return to_dataframe(self, columns=columns, orient=orient)

    @staticmethod
    def fromdataframe(df, **kwargs) -> "ctable":
        """A new ctable from a pandas DataFrame.

        See :func:`bcolzx.interop.pandas.from_dataframe`.

        Parameters
        ----------
        df : pandas.DataFrame
        **kwargs
            For the constructor: ``rootdir``, ``mode``, ``cparams``,
            ``chunklen``, ``expectedlen``...

        Returns
        -------
        ctable

        Raises
        ------
        ImportError
            If pandas is not installed.
        TypeError
            For a column dtype that cannot be stored.
        ValueError
            For bad column or index names, or missing values in string or
            nullable columns.
        """
        from bcolzx.interop.pandas import from_dataframe

        return from_dataframe(df, **kwargs)

    def tohdf5(self, filepath, nodepath: str = "/ctable", mode: str = "w", cparams=None,
               cname: str | None = None, *, progress=None) -> None:
        """Write this table to a PyTables Table; see :func:`bcolzx.interop.pytables.to_hdf5`.

        Parameters
        ----------
        filepath : str or os.PathLike
        nodepath : str
            Where the table goes in the file (parents are created).
        mode : {'w', 'a', 'r+'}
            How the file is opened.
        cparams : cparams, optional
            Compression level and shuffle (default: this table's).
        cname : str, optional
            A PyTables ``complib`` such as ``'blosc2:zstd'`` or ``'zlib'``.
        progress : callable, optional
            Called with the uncompressed bytes of each block of rows written.

        Raises
        ------
        ImportError
            If PyTables is not installed.
        ValueError
            For a bad `mode` or `cname`.
        TypeError
            For a column dtype that HDF5 cannot hold.
        """
        from bcolzx.interop.pytables import to_hdf5

        to_hdf5(self, filepath, nodepath=nodepath, mode=mode, cparams=cparams, cname=cname,
                progress=progress)

    @staticmethod
    def fromhdf5(filepath, nodepath: str = "/ctable", **kwargs) -> "ctable":
        """A new ctable from a PyTables Table; see :func:`bcolzx.interop.pytables.from_hdf5`.

        Parameters
        ----------
        filepath : str or os.PathLike
        nodepath : str
        **kwargs
            For the constructor: ``rootdir``, ``mode``, ``cparams``...

        Returns
        -------
        ctable

        Raises
        ------
        ImportError
            If PyTables is not installed.
        FileNotFoundError
            If the file does not exist.
        TypeError
            If the node is not a Table.
        """
        from bcolzx.interop.pytables import from_hdf5

        return from_hdf5(filepath, nodepath=nodepath, **kwargs)

    def to_arrow(self, columns=None, batch_rows: int | None = None):
        """This table as a pyarrow Table (see :func:`bcolzx.interop.arrow.to_arrow`).

        Parameters
        ----------
        columns : sequence of str or str, optional
            The columns, in order (default: all).
        batch_rows : int, optional
            Rows per record batch (default: the shortest ``chunklen``).

        Returns
        -------
        pyarrow.Table

        Raises
        ------
        ImportError
            If pyarrow is not installed.
        KeyError
            For an unknown column.
        TypeError
            For a column dtype Arrow cannot hold.
        """
        from bcolzx.interop.arrow import to_arrow

        return to_arrow(self, columns=columns, batch_rows=batch_rows)

    def to_parquet(self, path, columns=None, compression: str | None = None,
                   row_group_rows: int | None = None, mode: str = "w", *, progress=None,
                   **writer_kwargs) -> None:
        """Write this table to a Parquet file by record batches.

        See :func:`bcolzx.interop.arrow.to_parquet`.

        Raises
        ------
        ImportError
            If pyarrow is not installed.
        KeyError
            For an unknown column.
        TypeError
            For a column dtype Arrow cannot hold.
        FileExistsError
            With ``mode='x'`` when `path` exists.
        """
        from bcolzx.interop.arrow import to_parquet

        to_parquet(self, path, columns=columns, compression=compression,
                   row_group_rows=row_group_rows, mode=mode, progress=progress,
                   **writer_kwargs)

    @staticmethod
    def from_arrow(data, rootdir=None, **kwargs) -> "ctable":
        """A new ctable from Arrow data (see :func:`bcolzx.interop.arrow.from_arrow`).

        Parameters
        ----------
        data : pyarrow.Table, RecordBatch, RecordBatchReader or Arrow C stream
        rootdir : str, optional
        **kwargs
            For the constructor: ``mode``, ``cparams``, ``chunklen``...

        Returns
        -------
        ctable

        Raises
        ------
        ImportError
            If pyarrow is not installed.
        TypeError
            For a column type a ctable cannot hold.
        ValueError
            For nulls where they are refused.
        """
        from bcolzx.interop.arrow import from_arrow

        return from_arrow(data, rootdir=rootdir, **kwargs)

    def to_zarr(self, store, chunks=None, shards=None, mode: str = "w", cparams=None, *,
                progress=None):
        """Write this table to a Zarr v3 group, one array per column.

        See :func:`bcolzx.interop.zarr.to_zarr`; ``bcolzx.from_zarr`` reads it back.

        Returns
        -------
        zarr.Group

        Raises
        ------
        ImportError
            If zarr is not installed.
        ValueError
            For bad `chunks`, `shards` or `mode`, or an attribute named ``bcolzx``.
        """
        from bcolzx.interop.zarr import to_zarr

        return to_zarr(self, store, chunks=chunks, shards=shards, mode=mode, cparams=cparams,
                       progress=progress)

    def to_dask(self, columns=None, index=None, sorted: bool | None = None,
                partition_rows: int | None = None):
        """A Dask DataFrame over this table; see :func:`bcolzx.interop.dask.to_dask_dataframe`.

        Built with ``dask.dataframe.from_map``: column selections are pushed
        into the reads, and ``divisions`` are known when the index is the
        row number or a sorted column.

        Returns
        -------
        dask.dataframe.DataFrame

        Raises
        ------
        ImportError
            If Dask or pandas is not installed.
        KeyError
            For an unknown column.
        ValueError
            For a non-positive `partition_rows`.
        """
        from bcolzx.interop.dask import to_dask_dataframe

        return to_dask_dataframe(self, columns=columns, index=index, sorted=sorted,
                                 partition_rows=partition_rows)

    def __dask_tokenize__(self) -> str:
        """Dask's token: paths and committed states on disk, never the data."""
        from bcolzx.interop.dask import tokenize

        return tokenize(self)

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


def _row_maker(names: list[str], out_flavor):
    if out_flavor is tuple or out_flavor == "tuple":
        return tuple
    if out_flavor is namedtuple or out_flavor == "namedtuple":
        valid = all(n.isidentifier() and not keyword.iskeyword(n) for n in names)
        row = namedtuple("row", names, rename=not valid)  # type: ignore[misc, arg-type]
        return lambda values: row(*values)
    raise ValueError(f"out_flavor must be namedtuple or tuple, not {out_flavor!r}")

