"""The caches of chunks: an array's recently read compressed chunks, and the
process-wide cache of hot decompressed chunks (both LRU, bounded in bytes).

Small reads (one item, a short slice) of an array on disk would otherwise
read and verify a chunk from its file every time.  Entries are verified
chunks as stored (compressed), so a hit costs a decompression of the blocks
wanted and nothing else; in memory the store is its own cache.
"""

from __future__ import annotations

import threading
from collections import OrderedDict, deque

import numpy as np

from bcolzx._storage.base import Special

__all__ = ["CACHE_BYTES", "DECODED", "DECODED_BYTES", "ChunkCache", "DecodedCache"]

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


#: Decompressed bytes kept for repeated reads, for all arrays together
#: (``bcolzx.defaults.chunk_cache_bytes`` sets it; 0 turns the cache off).
DECODED_BYTES = 64 << 20

#: Chunk numbers remembered as read once (the second read of a chunk admits it).
_SEEN_KEYS = 8192


class DecodedCache:
    """The process-wide LRU of decompressed chunks that were read more than once.

    HDF5 keeps decompressed chunks too (its chunk cache), so that repeated
    reads of hot chunks copy memory instead of decompressing.  Here a chunk
    is admitted on its second read within :data:`_SEEN_KEYS` recent chunks,
    and only by reads of at most a quarter of the budget: a scan of a large
    array neither fills the cache nor evicts what small reads made hot, and
    a single cold item still decompresses one block, not its chunk.  A read
    of a whole array that small (``c[:]``) admits its full chunks at once:
    it is no part of a scan, and it decodes them whole anyway.

    Keys are ``(owner, chunk)``; an owner (an array's state, see
    :meth:`ChunkedArray.free_cache`) drops its entries when its chunks
    change.  Each drop moves the owner to a new epoch, and a chunk decoded
    before it (by a reader on another thread) is not admitted after it.
    Cached rows are read-only; readers copy out of them.
    """

    def __init__(self) -> None:
        self._entries: OrderedDict = OrderedDict()
        self._seen: OrderedDict = OrderedDict()
        self._epochs: dict[int, int] = {}
        self._bytes = 0
        self._lock = threading.Lock()
        # Owners whose state was garbage collected, noted without the lock
        # (see forget) and removed at the next locked use.
        self._gone: deque = deque()

    @property
    def limit(self) -> int:
        """Bytes kept at most (:data:`DECODED_BYTES`, read at each use)."""
        return DECODED_BYTES

    def admits(self, nbytes: int) -> bool:
        """Whether a read of `nbytes` may add chunks (at most a quarter of the budget)."""
        return 0 < nbytes <= self.limit // 4

    def get(self, owner: int, chunk: int) -> np.ndarray | None:
        """The cached rows of `chunk` of `owner` (now the most recently used), or None."""
        key = (owner, chunk)
        self._lock.acquire()  # a hit (the common case) looked up once, without a `with`
        try:
            self._entries.move_to_end(key)
            return self._entries[key]
        except KeyError:
            return None
        finally:
            self._lock.release()

    def hot(self, owner: int, chunk: int) -> bool:
        """Note a read of `chunk` that missed the cache; True if it was read before
        (the caller then offers it with :meth:`put`)."""
        key = (owner, chunk)
        with self._lock:
            if key in self._seen:
                del self._seen[key]
                return True
            self._seen[key] = None
            if len(self._seen) > _SEEN_KEYS:
                self._seen.popitem(last=False)
            return False

    def epoch(self, owner: int) -> int:
        """The number of drops of `owner`'s chunks so far (read before decoding
        what is offered to :meth:`put`)."""
        return self._epochs.get(owner, 0)

    def put(self, owner: int, chunk: int, rows: np.ndarray, epoch: int,
            own: bool = False) -> None:
        """Keep `rows` (a copy, unless the caller gives them up: `own`) as
        `chunk` of `owner`, read-only, unless `owner` dropped chunks since
        `epoch`; least recently used chunks are dropped beyond the limit."""
        if not self.admits(rows.nbytes) or self.epoch(owner) != epoch:
            return
        if not own:
            rows = rows.copy()
        rows.flags.writeable = False
        key = (owner, chunk)
        with self._lock:
            self._purge_gone()
            if self._epochs.get(owner, 0) != epoch:
                return
            old = self._entries.pop(key, None)
            if old is not None:
                self._bytes -= old.nbytes
            self._entries[key] = rows
            self._bytes += rows.nbytes
            while self._bytes > self.limit and self._entries:
                self._bytes -= self._entries.popitem(last=False)[1].nbytes

    def drop(self, owner: int, chunk: int) -> None:
        """Forget `chunk` of `owner` (it is being rewritten)."""
        with self._lock:
            self._epochs[owner] = self._epochs.get(owner, 0) + 1
            old = self._entries.pop((owner, chunk), None)
            if old is not None:
                self._bytes -= old.nbytes
            self._seen.pop((owner, chunk), None)

    def drop_owner(self, owner: int, gone: bool = False) -> None:
        """Forget every chunk of `owner` (and `owner` itself when it is `gone`)."""
        with self._lock:
            self._purge_gone()
            self._remove(owner, gone)

    def forget(self, owner: int) -> None:
        """`owner`'s state was garbage collected: its chunks go at the next use.

        The finalizer that calls this may run inside any locked section of
        this cache (a collection can start at any allocation), so it only
        notes the owner, without the lock (``deque.append`` is atomic).
        """
        self._gone.append(owner)

    def _purge_gone(self) -> None:
        """Remove the owners :meth:`forget` noted (the lock held)."""
        while self._gone:
            self._remove(self._gone.popleft(), True)

    def _remove(self, owner: int, gone: bool) -> None:
        if gone:
            self._epochs.pop(owner, None)
        else:
            self._epochs[owner] = self._epochs.get(owner, 0) + 1
        for key in [k for k in self._entries if k[0] == owner]:
            self._bytes -= self._entries.pop(key).nbytes
        for key in [k for k in self._seen if k[0] == owner]:
            del self._seen[key]

    def clear(self) -> None:
        """Forget everything (the limit changed to 0, or a test asks)."""
        with self._lock:
            self._gone.clear()
            self._entries.clear()
            self._seen.clear()
            self._bytes = 0  # the epochs stay: a drop before this is still a drop

    @property
    def nbytes(self) -> int:
        """Bytes held now."""
        with self._lock:
            self._purge_gone()
            return self._bytes


#: The one cache of decompressed chunks.
DECODED = DecodedCache()
