"""Chunks of another array seen through a copy-on-write layer: what ``carray.view()`` uses.

A view shares its base array's stored chunks as they were when it was made,
and keeps whatever it writes itself (appends, rewrites, truncations) in
memory: the base never sees a view's changes, as in legacy bcolz, where a
view had its own length.
"""

from __future__ import annotations

from bcolzx._format.superchunk import SPECIAL_CBYTES
from bcolzx._storage.base import ChunkStore, Special


def _size(entry) -> int:
    return SPECIAL_CBYTES if isinstance(entry, Special) else len(entry)


class OverlayStore(ChunkStore):
    """The first `nchunks` chunks of `base` (a :class:`ChunkStore`), with changes in memory.

    Parameters
    ----------
    base : ChunkStore
        The store of the array viewed; read, never written.
    nchunks : int
        Chunks of `base` the view starts with (its full chunks).
    """

    def __init__(self, base: ChunkStore, nchunks: int):
        self._base = base
        self.storage = base.storage
        self.rowshape = tuple(base.rowshape)
        self.native = base.native
        self._shared = nchunks  # chunks 0 .. shared-1 come from the base unless replaced
        self._own: dict[int, object] = {}
        self.nchunks = nchunks
        self.length = nchunks * base.storage.chunklen
        # The base's stored chunks, less a stored partial last chunk (the view
        # holds those rows as its own leftover).
        self.cbytes = base.cbytes - sum(_size(e) for e in base.get(nchunks, base.nchunks))

    def encoder(self, nthreads: int):
        return self._base.encoder(nthreads)

    def get(self, first: int, stop: int) -> list:
        if not 0 <= first <= stop <= self.nchunks:
            raise IndexError(f"chunks {first}..{stop} outside 0..{self.nchunks}")
        out, i = [], first
        while i < stop:
            if i in self._own:
                out.append(self._own[i])
                i += 1
                continue
            end = i + 1
            while end < stop and end not in self._own and end < self._shared:
                end += 1
            out.extend(self._base.get(i, end))
            i = end
        return out

    def put(self, items: list[tuple[int, object, int]]) -> None:
        for i, entry, _ in items:
            if not 0 <= i <= self.nchunks:
                raise IndexError(f"chunk {i} would leave a gap after {self.nchunks}")
            if i < self.nchunks:
                old = self._own[i] if i in self._own else self._base.get_one(i)
                self.cbytes -= _size(old)
            self._own[i] = entry
            self.cbytes += _size(entry)
            self.nchunks = max(self.nchunks, i + 1)

    def truncate(self, nchunks: int, last_size: int, sizes) -> None:
        for i in range(nchunks, self.nchunks):
            entry = self._own.pop(i) if i in self._own else self._base.get_one(i)
            self.cbytes -= _size(entry)
        self.nchunks = nchunks
        self._shared = min(self._shared, nchunks)

    def commit(self, sizes) -> None:
        pass  # a view lives in memory
