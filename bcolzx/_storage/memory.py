"""Chunks in memory."""

from __future__ import annotations

from bcolzx._format.meta import Sizes, Storage
from bcolzx._format.superchunk import SPECIAL_CBYTES
from bcolzx._storage.base import ChunkStore, Special


class MemoryStore(ChunkStore):
    """A :class:`ChunkStore` keeping compressed chunks in a list.

    Parameters
    ----------
    storage : Storage
        How chunks are made (chunk length, dtype, cparams).
    rowshape : tuple of int
        Trailing shape of a row.
    """

    def __init__(self, storage: Storage, rowshape: tuple = ()):
        self.storage = storage
        self.rowshape = tuple(rowshape)
        self.length = 0
        self._chunks: list = []
        self.cbytes = 0

    @property
    def nchunks(self) -> int:
        return len(self._chunks)

    def get(self, first: int, stop: int) -> list:
        if not 0 <= first <= stop <= len(self._chunks):
            raise IndexError(f"chunks {first}..{stop} outside 0..{len(self._chunks)}")
        return self._chunks[first:stop]

    def get_one(self, i: int):
        if not 0 <= i < len(self._chunks):
            raise IndexError(f"chunk {i} outside 0..{len(self._chunks)}")
        return self._chunks[i]

    @staticmethod
    def _size(entry) -> int:
        return SPECIAL_CBYTES if isinstance(entry, Special) else len(entry)

    def put(self, items: list[tuple[int, object, int]]) -> None:
        for i, entry, _ in items:
            if i == len(self._chunks):
                self._chunks.append(entry)
            elif 0 <= i < len(self._chunks):
                self.cbytes -= self._size(self._chunks[i])
                self._chunks[i] = entry
            else:
                raise IndexError(f"chunk {i} would leave a gap after {len(self._chunks)}")
            self.cbytes += self._size(entry)

    def truncate(self, nchunks: int, last_size: int, sizes: Sizes) -> None:
        for entry in self._chunks[nchunks:]:
            self.cbytes -= self._size(entry)
        del self._chunks[nchunks:]

    def commit(self, sizes: Sizes) -> None:
        pass
