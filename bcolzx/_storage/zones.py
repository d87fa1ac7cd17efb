"""An array's zone map in memory: per stored chunk, the bounds of its values.

The bounds (min and max of the non-NaN values, and whether NaN/NaT occurs)
are loaded from ``meta/zonemap`` on first use, widened (never narrowed) as
chunks are stored, and written before each commit (docs/format/README.md
§2b), so that after a crash at any instant they still bound what the commit
describes.  Only 1-D datasets of the bcolzx format whose dtype has an order
(bool, integers, floats, datetimes, timedeltas) have one.
"""

from __future__ import annotations

import numpy as np

from bcolzx._format import zonemap
from bcolzx._format.zonemap import bounds_of

__all__ = ["ZoneMap", "bounds", "widen"]


def widen(old, new, pick):
    """The wider of two bounds; a NaN bound (no non-NaN values) gives way."""
    if old != old:
        return new
    if new != new:
        return old
    return pick(old, new)


def bounds(rows: np.ndarray) -> tuple:
    """Zone-map bounds ``(min, max, has_nan)`` of a non-empty run of rows."""
    lo, hi = rows.min(), rows.max()
    if lo != lo or hi != hi:  # NaN or NaT somewhere (min and max propagate them)
        return bounds_of(rows)
    return lo, hi, False


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
        self.bounds: list | None = [] if applies and empty else None
        self._loaded = not applies or empty
        self.dirty = False

    def active(self, stored_chunks: int) -> bool:
        """Whether bounds are kept (loading them first, if not done yet)."""
        if not self._loaded:
            self._load(stored_chunks)
        return self.bounds is not None

    def _load(self, stored_chunks: int) -> None:
        self._loaded = True
        rootdir = self._store.rootdir
        if rootdir is None:
            self.bounds = None
            return
        stats = self._store.load_zonemap(self._dtype)
        # A dataset written without one (an older version), or with fewer
        # entries than its chunks, has none.
        if stats is None or len(stats) < stored_chunks:
            self.bounds = None
        else:
            self.bounds = [tuple(r) for r in stats]

    def note(self, chunk: int, rows: np.ndarray, stored_chunks: int,
             computed: tuple | None = None) -> None:
        """Record the bounds of `rows` (or `computed`, from :func:`bounds`), now
        stored as `chunk` (widening, never narrowing)."""
        if not self.active(stored_chunks) or not len(rows):
            return
        zones = self.bounds
        lo, hi, nan = bounds(rows) if computed is None else computed
        if chunk < len(zones):
            olo, ohi, onan = zones[chunk]
            zones[chunk] = (widen(olo, lo, min), widen(ohi, hi, max), onan or nan)
        elif chunk == len(zones):
            zones.append((lo, hi, nan))
        else:  # pragma: no cover - chunks are stored in order
            self.bounds = None
        self.dirty = True

    def stats(self, nfull: int, stored_chunks: int) -> np.ndarray | None:
        """Bounds of the first `nfull` chunks as a record array, or None when unknown."""
        if not self.active(stored_chunks) or len(self.bounds) < nfull:
            return None
        return np.array(self.bounds[:nfull], dtype=zonemap.stats_dtype(self._dtype))

    def truncate(self, keep: int) -> None:
        """Drop the bounds of chunks ``keep`` and after (the kept last chunk
        keeps its wider bounds)."""
        if self.bounds is not None:
            del self.bounds[keep:]

    def save(self) -> None:
        """Write ``meta/zonemap`` (atomically) if it changed."""
        if self.dirty and self.bounds is not None and self._store.rootdir is not None:
            self._store.save_zonemap(
                np.array(self.bounds, dtype=zonemap.stats_dtype(self._dtype)))
        self.dirty = False
