"""Reading a dataset directory while a writer changes it.

A reader sees the dataset as the ``meta/sizes`` it read at opening describes
it: that many rows, each file through the index copy of the generation
recorded there.  The writer never writes over data an earlier commit
references (appends and rewrites go after all live data, docs/format §3), so
the reader's rows stay where its indexes say.  What can move under a reader:

* an index copy: the writer alternates between a file's two copies, so the
  copy of the generation the reader wants is overwritten two commits later.
  A file the reader opens after that is read through a later generation that
  ``meta/sizes`` names now, truncated to the reader's rows (appended rows
  stay invisible, rows rewritten meanwhile read as the new values, per
  chunk, as after a crash);
* a whole file, renamed over by ``compact`` or reused after a truncation:
  a read that fails its checks while the file or its committed generation
  changed is retried once on a fresh index;
* rows themselves, removed by a writer that shrinks the dataset: the reader
  gets :class:`~bcolzx.errors.ConcurrentModificationError` (open again).

Damage is never mistaken for a move: a failure is retried only if the
metadata or the file changed since the reader read them, and a second
failure raises.  The lock holder (the writer itself) never retries.
"""

from __future__ import annotations

import os
import time

from bcolzx._format import layout
from bcolzx._format.meta import read_sizes
from bcolzx._format.superchunk import SuperchunkFile
from bcolzx._storage.lock import writer_alive
from bcolzx.errors import ConcurrentModificationError, CorruptDataError, TruncatedDataError

__all__ = ["load_file", "read", "legacy_missing", "agreeing_columns"]

#: Later generations tried while a writer keeps committing (each try follows a
#: fresh ``meta/sizes``; a writer would have to commit twice between each).
_MAX_TRIES = 100


def _is_writer(store) -> bool:
    lock = store.lock
    return lock is not None and lock.held


def _identity(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return st.st_dev, st.st_ino


def _shrunk(store, sizes=None) -> bool:
    """Whether the dataset now has fewer rows than the reader's."""
    try:
        sizes = sizes or read_sizes(store.rootdir)
    except (OSError, CorruptDataError):
        return False
    return sizes.shape[0] < store.length


def _gone(store) -> ConcurrentModificationError:
    return ConcurrentModificationError(
        f"{store.rootdir} was shortened by a writer since this reader opened it (its rows "
        f"past the new end are gone); open it again")


def load_file(store, number: int) -> SuperchunkFile:
    """Superchunk `number` of a :class:`DirectoryStore`, with the store's rows only.

    Raises
    ------
    CorruptDataError, TruncatedDataError
        If the file is damaged, or misses chunks the metadata needs.
    ConcurrentModificationError
        If a writer shortened the dataset under this reader.
    """
    path = layout.data_path(store.rootdir, number)
    gens = store._generations
    recorded = gens[number] if number < len(gens) else None
    ident = _identity(path)
    needed, last = store._needed(number)
    try:
        sc = SuperchunkFile.load(path, number, store.geometry, recorded)
    except CorruptDataError as exc:
        if _is_writer(store):  # nothing moves under the lock holder: damage
            sc = _salvage(path, number, store, recorded, exc)
        else:
            sc = _load_later(store, number, path, recorded, exc)
    sc.identity = ident
    if sc.index.nchunks < needed:
        if not _is_writer(store) and _shrunk(store):
            raise _gone(store)
        raise TruncatedDataError(
            f"the index holds {sc.index.nchunks} chunks, the metadata needs {needed}",
            path=path)
    # Chunks past what the metadata describes were written after the last
    # complete flush (a crash), or after this reader's snapshot: they do not exist.
    sc.truncate(needed, last)
    return sc


def _load_later(store, number: int, path: str, tried, first: CorruptDataError):
    """Load `path` through the generation ``meta/sizes`` names now, while it moves on."""
    for _ in range(_MAX_TRIES):
        try:
            sizes = read_sizes(store.rootdir)
        except (OSError, CorruptDataError):
            raise first from None
        if _shrunk(store, sizes):
            raise _gone(store) from first
        gens = sizes.generations
        gen = gens[number] if number < len(gens) else None
        if gen == tried:  # the metadata still names what failed: damage, not a move
            return _salvage(path, number, store, gen, first)
        try:
            return SuperchunkFile.load(path, number, store.geometry, gen)
        except CorruptDataError:
            tried = gen
    raise first


def _salvage(path: str, number: int, store, generation, first: CorruptDataError):
    """The file read through what its damaged index still proves (docs/format §6), or
    `first` raised again when nothing can be proved."""
    if generation is None or isinstance(first, TruncatedDataError) and \
            not os.path.exists(path):
        raise first
    needed, last = store._needed(number)
    try:
        return SuperchunkFile.salvage(path, number, store.geometry, generation, needed, last)
    except CorruptDataError:
        raise first from None


def _moved(store, number: int, sc: SuperchunkFile) -> bool:
    """Whether the file or its committed generation changed since `sc` was loaded."""
    if _identity(sc.path) != getattr(sc, "identity", None):
        return True
    try:
        gens = read_sizes(store.rootdir).generations
    except (OSError, CorruptDataError):
        return False
    return number < len(gens) and gens[number] != sc.index.generation


def read(store, number: int, fn):
    """``fn(superchunk file number)``, retried once on a fresh index if the file moved.

    Raises
    ------
    CorruptDataError
        As `fn`, when the failure is not explained by a writer's change.
    ConcurrentModificationError
        If a writer shortened the dataset under this reader.
    """
    sc = store._file(number)
    try:
        return fn(sc)
    except CorruptDataError:
        if _is_writer(store) or not _moved(store, number, sc):
            raise
    store._files.pop(number, None)
    return fn(store._file(number))


def legacy_missing(store, i: int, path: str) -> Exception:
    """The exception for a missing chunk file `path` of a legacy (v1) store."""
    if not _is_writer(store) and _shrunk(store):
        return _gone(store)
    return CorruptDataError("chunk file missing", path=path, chunk=i)


#: How long a ctable reader waits for its columns' lengths to agree while the
#: lock file names a live writer on this host.
_AGREE_WHILE_WRITING = 30.0


def agreeing_columns(open_columns, rootdir: str, *, wait: bool = True) -> dict:
    """A ctable's columns, opened by ``open_columns()`` until their lengths agree.

    A writer commits a table's columns one after the other: a reader that
    opens them meanwhile finds some with the new rows and some without, and
    opens them again.  Lengths that disagree with no writer at work were
    left by a writer that died between two columns' commits: the columns are
    returned as they are, and the caller keeps the rows every column has
    (:func:`bcolzx._table.even_columns`).

    Parameters
    ----------
    open_columns : callable
        Returns a dict of column name to carray.
    rootdir : str
        The table directory (its lock file names the writer, if any).
    wait : bool
        False for a caller holding every lock (nobody else is writing).

    Raises
    ------
    CorruptDataError
        If the lengths still disagree after waiting for a live writer.
    """
    start = time.monotonic()
    pause = 0.001
    while True:
        columns = open_columns()
        lengths = {name: len(col) for name, col in columns.items()}
        if len(set(lengths.values())) <= 1 or not wait or not writer_alive(rootdir):
            return columns
        if time.monotonic() - start >= _AGREE_WHILE_WRITING:
            raise CorruptDataError(f"columns have different lengths {lengths}", path=rootdir)
        time.sleep(pause)
        pause = min(pause * 2, 0.05)
