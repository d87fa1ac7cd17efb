"""A ctable's transactions: its write lock and its columns', and columns kept in step.

A ctable's columns are carrays committed one after the other (each column's
commit is atomic, docs/format/README.md §3), so a writer that dies or fails
while it changes a table can leave some columns with new rows and others
without.  The table is as long as its shortest column: the rows every
column holds.  Here:

* taking a table's locks (its own, then every column's: all or none), which
  re-reads the table and drops the rows only some columns hold
  (:func:`take_table`);
* rolling a table back in step after a failed write (:func:`table_guarded`);
* what opening a table does with columns of different lengths
  (:func:`even_columns`).

The columns are reached through their documented handle, ``carray.engine``.
"""

from __future__ import annotations

import functools
import os
import weakref

from bcolzx._format import jsonfile, layout
from bcolzx._storage.writer import changes_nothing, note, reload, take

__all__ = ["bind_table", "take_table", "release_table", "table_guarded", "even_columns",
           "torn_lengths"]


def bind_table(ct) -> None:
    """Tell a ctable's lock when the table may hand it over (no column has unsaved changes)."""
    lock = ct._lock
    if lock is None:
        return
    ref = weakref.ref(ct)

    def idle() -> bool:
        table = ref()
        return table is None or all(not c.engine.dirty for c in table.cols.values())
    lock.idle = idle


def take_table(ct) -> None:
    """Give a ctable its table lock and every column's, or none of them.

    When the table lock is newly taken the table is re-read: its columns
    (``__rootdirs__``), then each column (as :func:`take` does).

    Raises
    ------
    LockedError
        If another writer holds the table or one of its columns.
    OSError
        If the rows only some columns hold (an append a crash interrupted)
        cannot be dropped.
    """
    lock = ct._lock
    if lock is None:
        return
    newly = []
    try:
        if not lock.acquired:
            lock.acquire()
            newly.append(lock)
            names = jsonfile.read_json(os.path.join(ct._rootdir, layout.ROOTDIRS_FILE)).get(
                "names")
            if names != ct.names:
                ct._open()  # another writer added or removed columns
        for col in ct.cols.values():
            engine = col.engine
            clock = engine._store.lock
            if clock is not None and not clock.acquired:
                take(engine)
                newly.append(clock)
        if newly:  # rows only some columns hold (a crash between commits) are dropped
            _even(ct)
    except BaseException:
        for held in newly:
            held.release()
        raise


def release_table(ct) -> None:
    """Flush a ctable, then give up its columns' locks and its own."""
    try:
        ct._flush(journal=False)  # never another writer's journal rows (they are safe)
    finally:
        for col in ct.cols.opened():  # a column not opened yet holds no lock
            lock = col.engine.store.lock
            if lock is not None:
                lock.release()
        if ct._lock is not None:
            ct._lock.release()


def table_guarded(method):
    """Decorate a ctable method that writes: on failure, bring the columns back in step.

    A table's columns commit one by one, so a write that fails half-way (a
    full disk while the third column flushes) can leave some columns with
    the new rows committed and others without.  Every column is re-read from
    its last commit, then the longer ones are cut back to the shortest (for
    an append: the rows the table had; for a shrink: the new length), so the
    table is whole again, on disk too.  Values rewritten by a failed
    ``__setitem__`` may stay rewritten in some columns only.
    """
    @functools.wraps(method)
    def run(self, *args, **kwargs):
        had = self._lock is None or self._lock.acquired
        try:
            return method(self, *args, **kwargs)
        except BaseException as exc:
            if changes_nothing(exc):
                if not had:  # a refused call leaves the locks as it found them
                    _release_idle(self)
                raise
            if self._rootdir is None or getattr(exc, "_bcolzx_table_rolled_back", False):
                raise
            _table_rollback(self, exc)
    return run


def _release_idle(ct) -> None:
    """Give up the locks of a ctable whose columns hold nothing unsaved."""
    if any(col.engine.dirty for col in ct.cols.values()):
        return
    for col in ct.cols.values():
        if col.engine.store.lock is not None:
            col.engine.store.lock.release()
    ct._lock.release()


def _even(ct) -> int:
    """Cut every column of `ct` (whose locks are held) to the shortest one's length.

    Durable (a column's shrink commits its metadata first); returns the length.
    A recorded deletion is finished first (its columns are shorter on
    purpose: bcolzx._analytics.delete).
    """
    if ct._rootdir is not None:
        from bcolzx._analytics.delete import finish

        finish(ct._rootdir, dict(ct.cols.items()))
    n = min((len(col) for col in ct.cols.values()), default=0)
    for col in ct.cols.values():
        if len(col) > n:
            col.engine.resize(n)
    return n


def _table_rollback(ct, exc: BaseException):
    exc._bcolzx_table_rolled_back = True
    try:
        for col in ct.cols.values():
            if not col.engine.closed:
                reload(col.engine)
        n = _even(ct)
    except BaseException as again:
        note(exc, f"bcolzx: after the failed write, the columns of {ct._rootdir} could not be "
                   f"brought back in step ({again!r}); a writer that opens it later reports "
                   "columns of different lengths")
        raise exc from again
    note(exc, f"bcolzx: the table {ct._rootdir} was brought back to its last complete "
               f"commit ({n} rows in every column)")
    raise exc


def torn_lengths(lengths: dict) -> str | None:
    """A note on columns of different lengths (None when they agree)."""
    if len(set(lengths.values())) <= 1:
        return None
    n = min(lengths.values())
    longer = {name: m - n for name, m in lengths.items() if m > n}
    return (f"columns have different lengths {lengths}: the table has the {n} rows every "
            f"column holds; {longer} more rows (left by a write a crash interrupted, or "
            "appended to a column directly) are not part of it, and the next writer drops "
            "them")


def even_columns(columns: dict, mode: str) -> None:
    """Make the carrays of a ctable, just opened in `mode`, all as long as the shortest.

    In mode ``'r'`` the longer columns only stop showing their extra rows;
    otherwise those rows are removed (a durable trim of each longer column).

    Raises
    ------
    OSError
        If the file system refuses the trim; the table then still shows only
        the rows every column holds.
    """
    if not columns:
        return
    n = min(len(c) for c in columns.values())
    for col in columns.values():
        extra = len(col) - n
        if not extra:
            continue
        if mode == "r":
            col.engine.clip(n)
        else:
            col.trim(extra)
