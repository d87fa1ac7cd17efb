"""Making and opening a ctable's columns, and writing its ``__rootdirs__``.

:class:`Opening` is a mixin of :class:`bcolzx.ctable`: it creates a new
table's columns (several filled at once on the shared pool), opens an
existing table from a directory (each column checked, or in mode 'r' left
:class:`~bcolzx._columns.Unopened` until used) or from object storage (in
two batches of requests), and writes the table's ``__rootdirs__``.  What a
failed constructor made is removed by :func:`remove_made` (on disk) or
:func:`discard` (on object storage).
"""

from __future__ import annotations

import os
import shutil
from typing import TYPE_CHECKING, cast

import numpy as np

from bcolzx import _table, _threads
from bcolzx import attrs as _attrs
from bcolzx._analytics import delete as _deletion
from bcolzx._columns import Unopened, cols
from bcolzx._format import files as _files
from bcolzx._format import jsonfile, layout
from bcolzx._format import meta as _meta
from bcolzx._storage import snapshot, writer
from bcolzx.carray import carray
from bcolzx.defaults import defaults
from bcolzx.errors import DatasetNotFoundError, NoColumnsError, UnsafeFileError

if TYPE_CHECKING:
    from bcolzx._hosts import TableHost
    from bcolzx.ctable import ctable
else:
    TableHost = object

__all__ = ["Opening", "discard", "remove_made"]


def remove_made(rootdir: str, existed: bool) -> None:
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


def discard(objects) -> None:
    """Remove what a failed constructor uploaded (best effort: the store may be down)."""
    try:
        objects.remove_all()
    except Exception:  # noqa: BLE001 - without __rootdirs__ no reader sees them anyway
        pass


class Opening(TableHost):
    """How a ctable makes, opens and names its columns (a mixin of :class:`bcolzx.ctable`)."""

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

        With several threads, the columns are filled at once, one
        pool task each (at most 8 at a time): one column's files are written
        while another is compressed, and columns that compress slowly (noise)
        do not wait behind others.  They are created here, in order, so that
        their write locks belong to this thread.  Every column is filled (or
        has failed) before this returns or raises the first failure.
        """
        if defaults.nthreads < 2 or len(todo) < 2:
            return {name: self._new_column(name, data, kwargs, flush=False)
                    for name, data in todo}
        made = [(name, *self._empty_column(name, data, kwargs)) for name, data in todo]
        _threads.run_all(lambda job: job[1]._append_first(job[2]), made, min(len(made), 8))
        return {name: col for name, col, _ in made}

    def _new_column(self, name: str, data, kwargs: dict, flush: bool = True,
                    allow_pickle=None) -> carray:
        """A new column holding `data` (flushed unless `flush` is False)."""
        col, data = self._empty_column(name, data, kwargs, allow_pickle)
        col._append_first(data)
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
        self._cols = cols(list(opened), list(opened.values()), table=cast("ctable", self))
        io = remote.AttrsIO(objects, fetched.get(remote.ATTRS))
        self._attrs: _attrs.attrs | None = _attrs.attrs(None, self._mode, _seal=self._seal, _io=io)

    def _open(self, fetched: dict | None = None) -> None:
        if self._remote is not None:
            self._open_remote(fetched)
            return
        rootdir = self._rootdir
        assert rootdir is not None  # only tables on disk are opened
        path = os.path.join(rootdir, layout.ROOTDIRS_FILE)
        try:  # the one look at the directory when it holds a table
            meta, self._seal = jsonfile.read_json_sealed(path)
        except (FileNotFoundError, NotADirectoryError, UnsafeFileError):
            if self._mode == "r" and not os.path.lexists(rootdir):
                # legacy bcolz's words and KeyError, and a FileNotFoundError too
                raise DatasetNotFoundError(f"Disk-based ctable opened with `r`ead mode yet "
                                           f"`rootdir='{rootdir}'` does not exist") from None
            if self._mode == "a" and not os.path.lexists(rootdir):
                raise NoColumnsError(f"no ctable at {rootdir!r} to open, and no columns given "
                                     "to create one") from None
            raise FileNotFoundError(f"no ctable at {rootdir} (no {layout.ROOTDIRS_FILE})"
                                    ) from None
        names = layout.column_names(meta, path)
        # A recorded deletion leaves columns at two lengths (bcolzx._analytics.delete).
        deleting = _files.exists(os.path.join(rootdir, _deletion.INTENT))
        if self._mode == "r" and not deleting:
            # each column's length from its sealed meta/sizes alone, when that is
            # the whole story (no journal, one length; else None: all opened)
            lengths = _meta.column_lengths(rootdir, names)
            if lengths is not None:  # each column opened (and checked in full) when used
                kwargs = {"lock_timeout": self._lock_timeout, "allow_pickle": self._allow_pickle}
                self._cols = cols(names, [Unopened(os.path.join(rootdir, n), lengths[n], kwargs)
                                          for n in names], table=cast("ctable", self))
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
        self._cols = cols(list(opened), list(opened.values()), table=cast("ctable", self))
        self._attrs = _attrs.attrs(self._rootdir, self._mode, _seal=self._seal)

    def _write_rootdirs(self) -> None:
        if self._remote is not None:  # the table's publication: written last
            self._remote.put({layout.ROOTDIRS_FILE: jsonfile.dumps(
                {"names": self.names}, layout.ROOTDIRS_FILE, seal=self._seal.sealed,
                uid=self._seal.uid)})
        elif self._rootdir is not None and self._unsynced:  # a new table, published
            writer.write_json_after(os.path.join(self._rootdir, layout.ROOTDIRS_FILE),
                                    {"names": self.names}, [*self._unsynced, self._rootdir],
                                    seal=self._seal.sealed, uid=self._seal.uid)
            self._unsynced.clear()
        elif self._rootdir is not None:
            jsonfile.write_json(os.path.join(self._rootdir, layout.ROOTDIRS_FILE),
                                {"names": self.names}, seal=self._seal.sealed,
                                uid=self._seal.uid)
