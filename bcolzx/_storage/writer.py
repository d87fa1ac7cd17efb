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
and the stores; a ctable's transactions (its lock and its columns' locks,
rolling its columns back in step) are in :mod:`bcolzx._table`.
"""

from __future__ import annotations

import errno
import functools
import os
import shutil
import weakref

from bcolzx._format import jsonfile, layout
from bcolzx._storage.lock import LOCK_FILE, WriterLock
from bcolzx._storage.opening import open_store
from bcolzx.errors import (
    BcolzxError,
    ConcurrentModificationError,
    LockedError,
    ReadOnlyError,
)

__all__ = ["bind", "take", "reload", "guarded", "roll_back", "prepare_dir", "create",
           "release_engine", "lock_tree", "release_all", "changes_nothing", "note"]


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
    reopen = getattr(old, "reopen", None)  # object storage re-reads its own way
    fresh = reopen() if reopen is not None else open_store(old.rootdir, old.readonly)
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
    """Give the engine its dataset's write lock, then re-read the dataset if
    another writer changed it since the engine read it.

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
        if not engine._store.unchanged():  # another writer changed it meanwhile
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


def changes_nothing(exc: BaseException) -> bool:
    """Whether `exc` was raised before a write changed anything (nothing to roll back)."""
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
            if changes_nothing(exc):
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
        text = (f"bcolzx: {rootdir} could not be re-read after the failed write ({again!r}); "
                "this object is closed, the dataset holds what its last flush stored")
        note(exc, text)
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
    note(exc, f"bcolzx: the write to {rootdir} was rolled back: {what}")
    exc._bcolzx_rolled_back = True
    raise exc


def note(exc: BaseException, text: str) -> None:
    """Add `text` to `exc`'s notes (shown under its traceback)."""
    if hasattr(exc, "add_note"):
        exc.add_note(text)


# -- new datasets ----------------------------------------------------------------------


def prepare_dir(rootdir: str, *, replace: bool, timeout: float,
                unsynced: list | None = None) -> WriterLock:
    """Lock `rootdir` for a new dataset, creating it, or emptying it if `replace`.

    The lock file is taken before anything is removed, so that a dataset
    another writer holds is never destroyed, and kept (never deleted).
    With `unsynced` (a list), the directories whose fsync makes the new ones
    durable are appended to it instead of fsynced
    (:func:`~bcolzx._format.jsonfile.make_dirs`).

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
    jsonfile.make_dirs(rootdir, unsynced)  # durable: a power cut keeps what is flushed in it
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


def create(rootdir: str, make, *, replace: bool, timeout: float,
           unsynced: list | None = None):
    """Lock `rootdir` (:func:`prepare_dir`, `unsynced` as there), then build a
    store in it with ``make()``.

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
    lock = prepare_dir(rootdir, replace=replace, timeout=timeout, unsynced=unsynced)
    try:
        store = make()
    except BaseException:
        if not existed:
            shutil.rmtree(rootdir, ignore_errors=True)
        lock.release()
        raise
    store.lock = lock
    return store


def write_json_after(path: str, obj, unsynced: list, *, seal: bool, uid: str | None) -> None:
    """Write the JSON file `path` atomically once the files and directories of
    `unsynced` are durable: the new file (under its temporary name) and all of
    them are fsynced at once, then it is renamed and its directory fsynced.
    `unsynced` is emptied."""
    from bcolzx._storage.directory import sync_all

    staged = jsonfile.stage_json(path, obj, seal=seal, uid=uid)
    try:
        sync_all(unsynced, [staged.fd])
        staged.publish()
    except BaseException:
        staged.discard()
        raise
    unsynced.clear()
    jsonfile.fsync_dir(os.path.dirname(path) or ".")


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
