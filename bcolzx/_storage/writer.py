"""One writer at a time: taking the lock, re-reading the dataset, rolling back.

The concurrency model (docs/reliability-concurrency.md):

* Readers (mode ``'r'``, and objects in mode ``'a'``/``'w'`` that have not
  changed anything) take no lock.  They see the dataset as its last commit
  (``meta/sizes``) was when they opened it.
* An object takes the dataset's :class:`~bcolzx._storage.lock.WriterLock` at
  its first change (creating a dataset is one) and keeps it until it is
  closed or garbage-collected, or its process ends.  Taking it always
  re-reads the dataset (:func:`take`), so changes another writer committed
  meanwhile are never overwritten.
* A write that fails half-way (a full disk, an I/O error, an interrupt) is
  rolled back (:func:`guarded`): the object re-reads what the last commit left,
  which is intact, and the exception says so.

This module knows the engine (:class:`~bcolzx._storage.engine.ChunkedArray`)
and the stores; ctables use :func:`take_table` with their own lock and their
columns' engines.
"""

from __future__ import annotations

import errno
import functools
import os
import shutil
import weakref

from bcolzx._format import jsonfile, layout
from bcolzx._format import legacy as _legacy
from bcolzx._storage.directory import DirectoryStore
from bcolzx._storage.legacy import LegacyStore
from bcolzx._storage.lock import LOCK_FILE, WriterLock
from bcolzx.errors import (
    BcolzxError,
    ConcurrentModificationError,
    LockedError,
    ReadOnlyError,
)

__all__ = ["bind", "take", "reload", "guarded", "roll_back", "prepare_dir", "create",
           "take_table", "bind_table", "table_guarded", "release_table", "release_engine",
           "lock_tree", "release_all"]


def _engine_idle(ref):
    def idle() -> bool:
        engine = ref()
        return engine is None or not engine.dirty
    return idle


def bind(engine) -> None:
    """Tell the engine's lock (if any) when the engine may hand it over."""
    lock = engine._store.lock
    if lock is not None:
        lock.idle = _engine_idle(weakref.ref(engine))


def _open_store(rootdir: str, readonly: bool):
    opener = LegacyStore if _legacy.is_legacy(rootdir) else DirectoryStore
    return opener.open(rootdir, readonly=readonly)


def reload(engine) -> None:
    """Re-read the engine's dataset from its last commit, dropping unsaved changes.

    Raises
    ------
    ConcurrentModificationError
        If the dataset was replaced by one of another kind (dtype, row
        shape, chunk length or format).
    CorruptDataError, OSError
        If the dataset cannot be read.
    """
    engine._abandon()  # its changes are dropped, the background chunk too
    old = engine._store
    fresh = _open_store(old.rootdir, old.readonly)
    st, fst = old.storage, fresh.storage
    if (type(fresh), fst.dtype, fst.chunklen, tuple(fresh.rowshape)) != \
            (type(old), st.dtype, st.chunklen, tuple(old.rowshape)):
        raise ConcurrentModificationError(
            f"{old.rootdir} was replaced by another writer with a dataset of another kind "
            f"(dtype {fst.dtype}, rows {tuple(fresh.rowshape)}, chunklen {fst.chunklen}); "
            "open it again")
    fresh.lock = old.lock
    old.close()
    # Everything the engine knows derives from its store: start it again on
    # the fresh one (same thread count).
    engine.__init__(fresh, engine.nthreads)


def take(engine) -> None:
    """Give the engine its dataset's write lock, then re-read the dataset.

    Raises
    ------
    LockedError
        If another writer holds the lock.
    ConcurrentModificationError
        If the engine has unsaved changes but lost the lock (an object
        copied into a child by ``os.fork()``): they cannot be applied.
    """
    lock = engine._store.lock
    if engine.dirty:
        raise ConcurrentModificationError(
            f"this object's unsaved changes to {engine._store.rootdir} cannot be written: it "
            + ("was copied into a child process by fork(), and the lock stayed with the parent"
               if lock.forked else "no longer holds the dataset's write lock")
            + "; open the dataset again in this process")
    lock.acquire()
    try:
        reload(engine)
    except BaseException:
        lock.release()
        raise


def release_engine(engine) -> None:
    """Flush the engine, then give its lock up (if it holds one)."""
    try:
        engine.flush()
    finally:
        lock = engine.store.lock
        if lock is not None:
            lock.release()


# -- rolling back a failed write -------------------------------------------------------

#: Raised before a write changes anything: nothing to roll back.
_BEFORE_ANY_CHANGE = (LockedError, ReadOnlyError, ConcurrentModificationError)


def _changes_nothing(exc: BaseException) -> bool:
    if isinstance(exc, _BEFORE_ANY_CHANGE):
        return True
    # Plain argument errors are raised while validating, before any change.
    return isinstance(exc, (ValueError, TypeError, IndexError)) and \
        not isinstance(exc, BcolzxError)


def guarded(method):
    """Decorate an engine method that writes: on failure, roll the engine back.

    The dataset on disk is never changed by a failed write beyond what its
    last commit references; the engine, though, may be half-way through
    (chunks counted but not stored, an index copy written but not
    committed).  It is re-read from disk, and the exception re-raised: an
    ``OSError`` (full disk, I/O error) as an ``OSError`` of the same errno
    naming the dataset, anything else (an interrupt, a codec failure) with a
    note.
    """
    @functools.wraps(method)
    def run(self, *args, **kwargs):
        lock = self._store.lock
        had = lock is None or lock.acquired
        try:
            return method(self, *args, **kwargs)
        except BaseException as exc:
            if _changes_nothing(exc):
                if not had and not self.dirty:
                    lock.release()  # a refused call leaves the lock as it found it
                raise
            roll_back(self, exc)
    return run


def roll_back(engine, exc: BaseException):
    """Re-raise `exc`, a write of `engine` that failed part way, after
    re-reading the dataset from its last commit (on disk; in memory there is
    nothing to re-read)."""
    if engine._store.rootdir is None or getattr(exc, "_bcolzx_rolled_back", False):
        raise exc
    _rollback(engine, exc)


def _rollback(engine, exc: BaseException):
    rootdir = engine._store.rootdir
    try:
        reload(engine)
    except BaseException as again:
        engine._closed = True  # unusable: nothing more may be written from it
        note = (f"bcolzx: {rootdir} could not be re-read after the failed write ({again!r}); "
                "this object is closed, the dataset holds what its last flush stored")
        _note(exc, note)
        raise exc from again
    what = (f"the dataset holds what its last flush stored ({len(engine)} rows), this object's "
            "changes since then were dropped")
    if isinstance(exc, OSError) and not isinstance(exc, BcolzxError):
        reason = exc.strerror or str(exc)
        if exc.errno:
            new = OSError(exc.errno, f"{reason} while writing {rootdir}; {what}", exc.filename)
        else:
            new = OSError(f"{reason} while writing {rootdir}; {what}")
        new._bcolzx_rolled_back = True
        raise new from exc
    _note(exc, f"bcolzx: the write to {rootdir} was rolled back: {what}")
    exc._bcolzx_rolled_back = True
    raise exc


def _note(exc: BaseException, text: str) -> None:
    if hasattr(exc, "add_note"):
        exc.add_note(text)


# -- new datasets ----------------------------------------------------------------------


def prepare_dir(rootdir: str, *, replace: bool, timeout: float) -> WriterLock:
    """Lock `rootdir` for a new dataset, creating it, or emptying it if `replace`.

    The lock file is taken before anything is removed, so that a dataset
    another writer holds is never destroyed, and kept (never deleted).

    Returns
    -------
    WriterLock
        Acquired; the caller owns it.

    Raises
    ------
    LockedError
        If another writer holds the directory.
    FileExistsError
        If `rootdir` holds a dataset and `replace` is False.
    OSError
        If the directory cannot be created or emptied.
    """
    rootdir = os.fspath(rootdir)
    os.makedirs(rootdir, exist_ok=True)
    lock = WriterLock(rootdir, timeout)
    lock.acquire()
    try:
        others = [n for n in os.listdir(rootdir) if n != LOCK_FILE]
        if others and not replace:
            raise FileExistsError(errno.EEXIST, "a dataset was created meanwhile at", rootdir)
        for name in others:
            path = os.path.join(rootdir, name)
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path)
            else:
                os.unlink(path)
    except BaseException:
        lock.release()
        raise
    return lock


def create(rootdir: str, make, *, replace: bool, timeout: float):
    """Lock `rootdir` (:func:`prepare_dir`), then build a store in it with ``make()``.

    On failure a directory that did not exist before is removed again and
    the lock released, so that nothing half-made is left behind.

    Returns
    -------
    ChunkStore
        What `make` returned, holding the lock (``store.lock``).

    Raises
    ------
    LockedError, FileExistsError, OSError
        As :func:`prepare_dir`, and whatever `make` raises.
    """
    existed = os.path.lexists(rootdir)
    lock = prepare_dir(rootdir, replace=replace, timeout=timeout)
    try:
        store = make()
    except BaseException:
        if not existed:
            shutil.rmtree(rootdir, ignore_errors=True)
        lock.release()
        raise
    store.lock = lock
    return store


def lock_tree(rootdir: str, timeout: float) -> list[WriterLock]:
    """The write locks of a dataset directory and, for a ctable, of its columns: all or none.

    For whole-dataset operations outside the containers (conversion).  The
    table's lock comes first, as a ctable writer takes them.

    Raises
    ------
    LockedError
        If another writer holds one of them (none is kept then).
    """
    paths = [rootdir]
    try:
        names = jsonfile.read_json(os.path.join(rootdir, layout.ROOTDIRS_FILE)).get("names")
    except (OSError, ValueError):
        names = None  # a carray (or damage that the caller reports)
    if isinstance(names, list):
        paths += [os.path.join(rootdir, n) for n in names
                  if isinstance(n, str) and os.path.isdir(os.path.join(rootdir, n))]
    locks: list[WriterLock] = []
    try:
        for path in paths:
            lock = WriterLock(path, timeout)
            lock.acquire()
            locks.append(lock)
    except BaseException:
        release_all(locks)
        raise
    return locks


def release_all(locks: list[WriterLock]) -> None:
    """Release `locks`, last taken first."""
    for lock in reversed(locks):
        lock.release()


# -- ctables ---------------------------------------------------------------------------


def bind_table(ct) -> None:
    """Tell a ctable's lock when the table may hand it over (no column has unsaved changes)."""
    lock = ct._lock
    if lock is None:
        return
    ref = weakref.ref(ct)

    def idle() -> bool:
        table = ref()
        return table is None or all(not c._engine.dirty for c in table.cols.values())
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
            engine = col._engine
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
        for col in ct.cols.values():
            lock = col._engine.store.lock
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
            if _changes_nothing(exc):
                if not had:  # a refused call leaves the locks as it found them
                    _release_idle(self)
                raise
            if self._rootdir is None or getattr(exc, "_bcolzx_table_rolled_back", False):
                raise
            _table_rollback(self, exc)
    return run


def _release_idle(ct) -> None:
    """Give up the locks of a ctable whose columns hold nothing unsaved."""
    if any(col._engine.dirty for col in ct.cols.values()):
        return
    for col in ct.cols.values():
        if col._engine.store.lock is not None:
            col._engine.store.lock.release()
    ct._lock.release()


def _even(ct) -> int:
    """Cut every column of `ct` (whose locks are held) to the shortest one's length.

    Durable (a column's shrink commits its metadata first); returns the length.
    """
    n = min((len(col) for col in ct.cols.values()), default=0)
    for col in ct.cols.values():
        if len(col) > n:
            col._engine.resize(n)
    return n


def _table_rollback(ct, exc: BaseException):
    exc._bcolzx_table_rolled_back = True
    try:
        for col in ct.cols.values():
            if not col._engine._closed:
                reload(col._engine)
        n = _even(ct)
    except BaseException as again:
        _note(exc, f"bcolzx: after the failed write, the columns of {ct._rootdir} could not be "
                   f"brought back in step ({again!r}); a writer that opens it later reports "
                   "columns of different lengths")
        raise exc from again
    _note(exc, f"bcolzx: the table {ct._rootdir} was brought back to its last complete "
               f"commit ({n} rows in every column)")
    raise exc
