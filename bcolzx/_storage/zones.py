"""An array's zone map in memory: per stored chunk, the bounds of its values.

The bounds (min and max of the non-NaN values, and whether NaN/NaT occurs)
are loaded from ``meta/zonemap`` on first use, widened (never narrowed) as
chunks are stored, and written before each commit (docs/format/README.md
§2b), so that after a crash at any instant they still bound what the commit
describes.  Only 1-D datasets of the bcolzx format whose dtype has an order
(bool, integers, floats, datetimes, timedeltas, and NumPy's StringDType)
have one.  The bounds of strings are byte strings, prefix-bounded
(:func:`bcolzx._format.strings.bounds`), None for a chunk whose rows are all
missing.

Each chunk's bounds also carry an *exact* flag: the bounds are values the
chunk holds, so reductions (``carray.max()``) answer from them without
reading the chunk.  A flag written before a commit must hold for the chunk
as the committed state has it too (a crash can leave that state): a chunk
stored for the first time is exact; a full chunk rewritten stays exact only
if its bounds did not change; the partial last chunk (whose flag readers
never use, :meth:`ZoneMap.exact`) is exact when its widened bounds are its
new rows' bounds.  (The prefix bounds of strings are never exact.)
"""

from __future__ import annotations

import numpy as np

from bcolzx._format import strings, zonemap
from bcolzx._format.zonemap import bounds_of

__all__ = ["ZoneMap", "bounds", "same_bounds", "widen"]


def widen(old, new, pick):
    """The wider of two bounds; a NaN (or, for strings, None) bound, no values, gives way."""
    if old is None or old != old:
        return new
    if new is None or new != new:
        return old
    return pick(old, new)


def bounds(rows: np.ndarray) -> tuple:
    """Zone-map bounds ``(min, max, has_nan)`` of a non-empty run of rows."""
    if strings.is_string(rows.dtype):
        return strings.bounds(rows)
    lo, hi = rows.min(), rows.max()
    if lo != lo or hi != hi:  # NaN or NaT somewhere (min and max propagate them)
        return bounds_of(rows)
    return lo, hi, False


def same_bounds(a: tuple, b: tuple) -> bool:
    """Whether two ``(min, max, has_nan)`` bounds are equal (NaN equal to NaN)."""
    return all(x == y or (x != x and y != y) for x, y in zip(a[:2], b[:2])) and \
        bool(a[2]) == bool(b[2])


class ZoneMap:
    """The bounds of an array's stored chunks, or None when it has none.

    Parameters
    ----------
    store : ChunkStore
        The array's store (its directory holds ``meta/zonemap``).
    dtype : numpy.dtype
        The items' dtype.
    applies : bool
        Whether the dataset can have a zone map (bcolzx format, 1-D, an
        ordered dtype).
    empty : bool
        The dataset stores nothing yet: the map starts empty here, whatever
        a stale file says (it is replaced at the first flush).
    """

    def __init__(self, store, dtype: np.dtype, applies: bool, empty: bool):
        self._store = store
        self._dtype = dtype
        # The bounds: a list of (min, max, has_nan) tuples, changed in place by
        # the writer, and/or the record array read from meta/zonemap (the list
        # is made from it at the first change; readers get copies of the array).
        self._list: list | None = [] if applies and empty else None
        self._array: np.ndarray | None = None
        #: Per chunk of :attr:`bounds`: whether they are values the chunk holds
        #: (never for strings, whose bounds are prefixes).
        self.exact: list[bool] = []
        self._can_be_exact = not strings.is_string(self._dtype)
        #: The chunk stored with fewer than ``chunklen`` rows (the last), if any.
        self.partial: int | None = None
        self._chunklen = store.storage.chunklen
        self._loaded = not applies or empty
        self.dirty = False

    @property
    def bounds(self) -> list | None:
        """The bounds of the stored chunks, a list to change in place (None:
        no zone map).  Taking it drops the array :meth:`stats` keeps."""
        if self._list is None and self._array is not None:
            self._list = [tuple(r) for r in self._array]
        self._array = None
        return self._list

    @bounds.setter
    def bounds(self, value: list | None) -> None:
        self._list, self._array = value, None

    def _count(self) -> int | None:
        """Chunks with bounds, without making the list; None without a zone map."""
        if self._array is not None:
            return len(self._array)
        return None if self._list is None else len(self._list)

    def active(self, stored_chunks: int) -> bool:
        """Whether bounds are kept (loading them first, if not done yet)."""
        if not self._loaded:
            self._load(stored_chunks)
        return self._count() is not None

    def _load(self, stored_chunks: int) -> None:
        self._loaded = True
        rootdir = self._store.rootdir
        if rootdir is None:
            self.bounds = None
            return
        stats, exact = self._store.load_zonemap(self._dtype)
        # A dataset written without one (an older version), or with fewer
        # entries than its chunks, has none.
        if stats is None or len(stats) < stored_chunks:
            self.bounds = None
        else:
            self._list, self._array = None, stats
            self._array.flags.writeable = False
            self.exact = [False] * len(stats) if exact is None or not self._can_be_exact \
                else exact.tolist()

    def note(self, chunk: int, rows: np.ndarray, stored_chunks: int,
             computed: tuple | None = None) -> None:
        """Record the bounds of `rows` (or `computed`, from :func:`bounds`), now
        stored as `chunk` (widening, never narrowing)."""
        if not self.active(stored_chunks) or not len(rows):
            return
        zones = self.bounds
        new = bounds(rows) if computed is None else computed
        lo, hi, nan = new
        if chunk < len(zones):
            old = zones[chunk]
            olo, ohi, onan = old
            zones[chunk] = wide = (widen(olo, lo, min), widen(ohi, hi, max), onan or nan)
            if chunk == self.partial:  # its flag is used only once it is full
                self.exact[chunk] = self._can_be_exact and same_bounds(wide, new)
            else:  # exact for the committed rows and the new ones alike
                self.exact[chunk] = self.exact[chunk] and same_bounds(old, new)
        elif chunk == len(zones):
            zones.append(new)
            self.exact.append(self._can_be_exact)
        else:  # pragma: no cover - chunks are stored in order
            self.bounds = None
        if len(rows) < self._chunklen:
            self.partial = chunk
        elif chunk == self.partial:
            self.partial = None
        self.dirty = True

    def stats(self, nfull: int, stored_chunks: int) -> np.ndarray | None:
        """Bounds of the first `nfull` chunks as a record array, or None when unknown."""
        if not self.active(stored_chunks) or (self._count() or 0) < nfull:
            return None
        if self._array is None:  # made once per change (a 1e9-row array has 7,600 chunks)
            self._array = np.array(self._list, dtype=zonemap.stats_dtype(self._dtype))
            self._array.flags.writeable = False
        return self._array[:nfull].copy()  # the caller's to change

    def reset(self, chunk: int, rows: np.ndarray) -> None:
        """After a commit: the bounds of `chunk` become exactly those of its
        committed `rows` (narrowing is safe once no commit describes the old
        rows; before the next save, a crash keeps the wider bounds)."""
        if self.bounds is None or not len(rows) or chunk >= len(self.bounds):
            return
        self.bounds[chunk] = bounds(rows)
        self.exact[chunk] = self._can_be_exact
        self.dirty = True

    def exact_flags(self, nfull: int, stored_chunks: int) -> np.ndarray | None:
        """Whether the bounds of each of the first `nfull` chunks (full ones)
        are values the chunk holds; None when there are no bounds."""
        if not self.active(stored_chunks) or (self._count() or 0) < nfull:
            return None
        return np.array(self.exact[:nfull], dtype=np.bool_)

    def truncate(self, keep: int, partial: bool) -> None:
        """Drop the bounds of chunks ``keep`` and after (the kept last chunk
        keeps its wider bounds; with `partial` it now holds fewer rows than a
        chunk)."""
        if self.bounds is not None:
            del self.bounds[keep:]
            del self.exact[keep:]
        self.partial = keep - 1 if partial and keep else None

    def save(self, staged: bool = False) -> None:
        """Write ``meta/zonemap`` (atomically) if it changed; `staged`: as part
        of the commit that follows (:meth:`ChunkStore.save_zonemap`)."""
        if self.dirty and self.bounds is not None and self._store.rootdir is not None:
            self._store.save_zonemap(
                np.array(self.bounds, dtype=zonemap.stats_dtype(self._dtype)),
                exact=np.array(self.exact, dtype=np.bool_), staged=staged)
        self.dirty = False
