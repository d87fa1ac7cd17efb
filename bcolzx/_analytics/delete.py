"""Deleting rows: which rows, and a ctable's deletion as one change.

A carray deletes through its engine (:meth:`ChunkedArray.delete`): the
chunks from the first deleted row on are rewritten and committed at once.
A ctable's columns commit one after the other, so a table's deletion first
records its *intent* (docs/format/README.md §3, item 7):

1. the deleted row numbers, as a carray in ``__deleting__.rows/``, flushed;
2. ``__deleting__`` (sealed JSON: the table's length before and after, the
   count), written atomically: from here on the deletion will happen;
3. each column deletes those rows (a column is old or new, never between);
4. ``__deleting__`` is removed, then ``__deleting__.rows/``.

Whoever opens the table while ``__deleting__`` exists (a crash, or a
deletion under way in another process) sees the new table: a writer (mode
``'a'``/``'w'``) takes the locks and finishes the columns still at the old
length on disk (:func:`finish`); a reader, or a writer that cannot take the
locks, gets in-memory views of those columns with the rows deleted
(:func:`resolve`), reading only what the deletion rewrites.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from typing import Any

import numpy as np

from bcolzx._analytics import Columns, selection
from bcolzx._format import jsonfile
from bcolzx.errors import CorruptDataError, LockedError

__all__ = ["INTENT", "ROWS", "positions_of", "delete_rows", "finish", "resolve", "intent"]

#: The intent file, and the directory of the deleted row numbers.
INTENT = "__deleting__"
ROWS = "__deleting__.rows"


def positions_of(length: int, indices: Any = None, where: Any = None,
                 table: Columns | None = None,
                 scope: Mapping[str, Any] | None = None, vm: str | None = None) -> np.ndarray:
    """The sorted, distinct row numbers to delete: `indices` (ints, negative
    from the end, repeats allowed; or a boolean mask) or the rows where
    `where` holds (exactly one of them).

    Raises
    ------
    ValueError
        If neither or both are given, or for a mask of the wrong length.
    IndexError
        For an index out of range, or indices that are not integers.
    """
    if (indices is None) == (where is None):
        raise ValueError("give the rows to delete as indices or as where=, not both nor "
                         "neither")
    if where is not None:
        parts = [pos for _, pos, _ in selection.blocks(where, table or {}, scope or {}, vm)]
        return np.concatenate(parts).astype(np.int64) if parts else np.empty(0, np.int64)
    arr = indices[:] if hasattr(indices, "engine") else np.asarray(indices)
    if arr.dtype == np.bool_:
        if arr.shape != (length,):
            raise ValueError(f"a boolean mask of {arr.shape} rows for {length} rows")
        return np.flatnonzero(arr).astype(np.int64)
    arr = arr.reshape(-1) if arr.ndim == 0 else arr
    if arr.ndim != 1 or (arr.size and arr.dtype.kind not in "iu"):
        raise IndexError(f"indices must be integers (or a boolean mask), not {arr.dtype} of "
                         f"shape {arr.shape}")
    arr = arr.astype(np.int64)
    if arr.size and (arr.min() < -length or arr.max() >= length):
        raise IndexError(f"index out of range for length {length}")
    return np.unique(np.where(arr < 0, arr + length, arr))


# -- a ctable's deletion -----------------------------------------------------------------


def intent(rootdir: str) -> dict | None:
    """The recorded deletion of the table at `rootdir`: ``{"old", "new",
    "count"}`` and its ``rows`` (an int64 array), or None.

    Raises
    ------
    CorruptDataError
        If the intent or its rows are damaged or do not agree.
    """
    path = os.path.join(rootdir, INTENT)
    if not os.path.exists(path):
        return None
    from bcolzx.carray import carray

    obj = jsonfile.read_json(path)
    try:
        old, new, count = int(obj["old"]), int(obj["new"]), int(obj["count"])
        rows = carray(rootdir=os.path.join(rootdir, ROWS), mode="r")[:]
    except (KeyError, TypeError, ValueError, FileNotFoundError) as exc:
        raise CorruptDataError(f"invalid deletion record: {exc}", path=path) from None
    if len(rows) != count or old - count != new or (count and (
            rows.dtype != np.int64 or rows[0] < 0 or rows[-1] >= old
            or np.any(np.diff(rows) <= 0))):
        raise CorruptDataError("the deletion record does not match its rows", path=path)
    return {"old": old, "new": new, "count": count, "rows": rows}


def delete_rows(ct: Any, positions: np.ndarray) -> None:
    """Delete `positions` from every column of `ct` (its locks held), as one change."""
    columns = list(ct.cols.values())
    rootdir = ct.rootdir
    if rootdir is None or not len(positions):
        for col in columns:
            col.engine.delete(positions)
        return
    from bcolzx.carray import carray

    rows_dir = os.path.join(rootdir, ROWS)
    shutil.rmtree(rows_dir, ignore_errors=True)  # a stale one, never named by an intent
    rec = carray(positions, rootdir=rows_dir, mode="w", chunklen=1 << 16)
    rec.close()
    old = len(ct)
    jsonfile.write_json(os.path.join(rootdir, INTENT),
                        {"old": old, "new": old - len(positions), "count": len(positions)},
                        seal=ct._seal.sealed, uid=ct._seal.uid)
    finish(rootdir, dict(ct.cols.items()))


def finish(rootdir: str, columns: Columns) -> None:
    """Complete the recorded deletion on disk (the caller holds every lock):
    the columns still at the old length delete the rows, then the record goes.

    Raises
    ------
    CorruptDataError
        If a column is neither at the old nor at the new length.
    OSError
        If the file system refuses (the record stays: the next writer finishes).
    """
    rec = intent(rootdir)
    if rec is None:
        return
    for name, col in columns.items():
        n = len(col)
        if n == rec["old"]:
            col.engine.delete(rec["rows"])
        elif n != rec["new"]:
            raise CorruptDataError(f"column {name!r} has {n} rows; a deletion from "
                                   f"{rec['old']} to {rec['new']} rows is recorded",
                                   path=rootdir)
    os.unlink(os.path.join(rootdir, INTENT))
    jsonfile.fsync_dir(rootdir)
    shutil.rmtree(os.path.join(rootdir, ROWS), ignore_errors=True)


def resolve(rootdir: str, columns: dict, lock: Any, writable: bool) -> dict:
    """The columns of a table just opened, with a recorded deletion applied.

    A writer that can take the locks (`lock`, the table's; the columns'
    own) finishes it on disk; otherwise the columns still at the old length
    are replaced by in-memory views with the rows deleted.

    Raises
    ------
    CorruptDataError
        If the record is damaged or a column's length fits neither side.
    """
    rec = intent(rootdir)
    if rec is None:
        return columns
    if writable and lock is not None:
        from bcolzx._storage.writer import take

        had = lock.acquired
        taken = []
        try:
            if not had:
                lock.acquire()
            for col in columns.values():
                clock = col.engine.store.lock
                if clock is not None and not clock.acquired:
                    take(col.engine)
                    taken.append(clock)
            finish(rootdir, columns)
            return columns
        except LockedError:
            pass  # another writer holds the table: it finishes; show the new rows meanwhile
        finally:
            for clock in taken:
                clock.release()
            if not had:
                lock.release()
    out = {}
    for name, col in columns.items():
        if len(col) == rec["old"]:
            col = col.view()
            col.engine.delete(rec["rows"])
        elif len(col) != rec["new"]:
            raise CorruptDataError(f"column {name!r} has {len(col)} rows; a deletion from "
                                   f"{rec['old']} to {rec['new']} rows is recorded",
                                   path=rootdir)
        out[name] = col
    return out
