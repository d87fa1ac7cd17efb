"""Reading a dataset directory while a writer changes it.

A reader sees the dataset as the ``meta/sizes`` it read at opening describes
it: that many rows, each file through the index copy of the generation
recorded there.  It returns exactly the values of that commit, or raises
:class:`~bcolzx.errors.ConcurrentModificationError`: never a value of
another commit for a row the writer removed, never one that no commit held.
Three rules make it so (docs/reliability-concurrency.md, "Readers across a
truncation"):

* bytes once written in a superchunk file are never written over: a writer
  appends chunks at the end of the file, also after a truncation freed
  space (docs/format §3), so an index that a commit named describes its
  bytes for as long as the file lives;
* a file keeps the descriptor it was loaded through (``keep_open``, within
  the budget of :mod:`bcolzx._storage.pins`) and is read through it: the
  reader reads the very file it loaded, whatever is renamed over its path,
  removed or created anew at it, at the price of no extra system call (one
  ``pread`` per read, instead of ``open``, ``pread``, ``close``);
* ``meta/sizes`` counts the truncations (``epoch``) and says how many rows
  the latest one kept (``cut``).  A file the reader loads later (first use,
  or after the budget made its store forget it) is loaded through the
  generation its snapshot names while that copy exists, else through the
  one ``meta/sizes`` names now, truncated to the reader's rows (appended rows
  stay invisible, rows rewritten meanwhile read as their new committed
  values, as after a crash); but when a truncation happened since the
  snapshot, the rows it may have removed (from ``cut`` on, or every row when
  more than one happened) are read from no later commit: they raise
  ConcurrentModificationError, as do rows of a file that is gone.

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
from bcolzx._storage import pins
from bcolzx._storage.lock import writer_alive
from bcolzx.errors import ConcurrentModificationError, CorruptDataError, TruncatedDataError

__all__ = ["load_file", "read", "legacy_missing", "agreeing_columns", "check_rows"]

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


def note_cuts(store, sizes) -> None:
    """Learn from `sizes`, a later ``meta/sizes``, which of the reader's rows a
    writer may have removed since its snapshot: from then on, reading the
    chunks that hold them raises (:func:`check_rows`)."""
    kept = store.length
    if sizes.epoch != store.epoch:  # a truncation since: the latest kept `cut` rows
        kept = sizes.cut if sizes.epoch == store.epoch + 1 else 0
    kept = min(kept, sizes.shape[0])  # a writer that counts no epochs (older bcolzx)
    if kept < store.length:
        store.lost_chunk = min(store.lost_chunk, kept // store.storage.chunklen)


def check_rows(store, stop_chunk: int) -> None:
    """Raise if chunks below `stop_chunk` hold rows a writer removed since the
    reader's snapshot (see :func:`note_cuts`).

    Raises
    ------
    ConcurrentModificationError
        If they do.
    """
    if stop_chunk > store.lost_chunk:
        raise _gone(store)


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
    keep = pins.enabled()
    try:
        sc = SuperchunkFile.load(path, number, store.geometry, recorded, keep_open=keep,
                                 past_end=store.epoch > 0)
    except CorruptDataError as exc:
        if _is_writer(store):  # nothing moves under the lock holder: damage
            sc = _salvage(path, number, store, recorded, exc)
        else:
            sc = _load_later(store, number, path, recorded, exc)
    sc.identity = ident
    needed, last = store._needed(number)
    k = store.geometry.nslots
    if store.lost_chunk < number * k + needed:  # only the chunks that are still the snapshot's
        needed = max(0, store.lost_chunk - number * k)
        last = store.chunk_bytes if needed else 0
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
        note_cuts(store, sizes)
        if store.lost_chunk <= number * store.geometry.nslots:
            raise _gone(store) from first  # none of the file's rows is the snapshot's
        gens = sizes.generations
        gen = gens[number] if number < len(gens) else None
        if gen == tried:  # the metadata still names what failed: damage, not a move
            return _salvage(path, number, store, gen, first)
        try:
            return SuperchunkFile.load(path, number, store.geometry, gen,
                                       keep_open=pins.enabled(), past_end=True)
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


def read(store, number: int, fn, stop_chunk: int):
    """``fn(superchunk file number)``, retried once on a fresh index if the file moved.

    `stop_chunk` is one past the last chunk `fn` reads: loading the file may
    teach the store that a writer removed rows from some chunk on
    (:func:`note_cuts`), and those are never read.

    Raises
    ------
    CorruptDataError
        As `fn`, when the failure is not explained by a writer's change.
    ConcurrentModificationError
        If a writer shortened the dataset under this reader.
    """
    check_rows(store, stop_chunk)
    sc = store._file(number)
    check_rows(store, stop_chunk)
    try:
        return fn(sc)
    except (CorruptDataError, FileNotFoundError):  # not found: a file read by its path
        if _is_writer(store) or not _moved(store, number, sc):
            raise
    if store._files.get(number) is sc:
        store._files.pop(number, None)
    sc = store._file(number)
    check_rows(store, stop_chunk)
    return fn(sc)


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
