"""The cache of recently read compressed chunks of an array (LRU, bounded in bytes).

Small reads (one item, a short slice) of an array on disk would otherwise
read and verify a chunk from its file every time.  Entries are verified
chunks as stored (compressed), so a hit costs a decompression of the blocks
wanted and nothing else; in memory the store is its own cache.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from bcolzx._storage.base import Special

__all__ = ["CACHE_BYTES", "ChunkCache"]

#: Compressed bytes of verified stored chunks kept for small reads.  A chunk
#: compresses to a few KiB to 1 MiB, so this keeps the most recently read
#: 32 to thousands of chunks; random single items then cost one block.
CACHE_BYTES = 32 << 20


class ChunkCache:
    """Compressed chunk entries by chunk number, least recently used dropped first.

    Readers may share an array between threads (Dask's ``from_array`` with
    ``lock=False``): the bookkeeping is guarded by a lock, the reads are not.
    """

    def __init__(self, limit: int | None = None):
        self._limit = limit
        self._entries: OrderedDict = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    @property
    def limit(self) -> int:
        """Bytes kept at most (:data:`CACHE_BYTES` unless given)."""
        return CACHE_BYTES if self._limit is None else self._limit

    def get(self, chunk: int):
        """The cached entry of `chunk` (now the most recently used), or None."""
        with self._lock:
            entry = self._entries.get(chunk)
            if entry is not None:
                self._entries.move_to_end(chunk)
            return entry

    def put(self, chunk: int, entry) -> None:
        """Keep `entry` as `chunk`'s, dropping the least recently used beyond the limit."""
        with self._lock:
            self._drop(chunk)  # another thread may have cached it meanwhile
            self._entries[chunk] = entry
            if not isinstance(entry, Special):
                self._bytes += len(entry)
                while self._bytes > self.limit and len(self._entries) > 1:
                    old = self._entries.popitem(last=False)[1]
                    if not isinstance(old, Special):
                        self._bytes -= len(old)

    def drop(self, chunk: int) -> None:
        """Forget `chunk` (it is being rewritten)."""
        with self._lock:
            self._drop(chunk)

    def _drop(self, chunk: int) -> None:
        old = self._entries.pop(chunk, None)
        if old is not None and not isinstance(old, Special):
            self._bytes -= len(old)

    def clear(self) -> None:
        """Forget every chunk."""
        with self._lock:
            self._entries.clear()
            self._bytes = 0
