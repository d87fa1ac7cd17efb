"""The chunk-store interface."""

from __future__ import annotations

import abc
from typing import TYPE_CHECKING

from bcolzx._format import zonemap
from bcolzx._format.meta import Sizes, Storage
from bcolzx._format.superchunk import Special

if TYPE_CHECKING:
    from bcolzx._storage.lock import WriterLock

__all__ = ["ChunkStore", "Special"]


class ChunkStore(abc.ABC):
    """Numbered chunks of one dataset: compressed bytes or constants.

    Chunk ``i`` holds ``storage.chunklen`` rows, except that the last one may
    be short (the persisted leftover).  An entry is the chunk's compressed
    bytes (any buffer) or a :class:`Special`.

    Attributes
    ----------
    storage : Storage
        The dataset's storage metadata.
    nchunks : int
        Chunks stored (including a short last one).
    cbytes : int
        Compressed bytes of the stored chunks.
    rowshape : tuple of int
        Trailing shape of a row.
    length : int
        Rows the store held when opened (0 for a new one).
    """

    #: Chunks in the bcolzx chunk format (C-Blosc2 chunks, special values and a
    #: zone map); False for a legacy store, whose chunks :meth:`encoder` makes.
    native: bool = True
    storage: Storage
    nchunks: int
    cbytes: int
    rowshape: tuple = ()
    length: int = 0
    rootdir: str | None = None
    #: The dataset's :class:`~bcolzx._storage.lock.WriterLock` when opened by a
    #: would-be writer (mode 'a' or 'w' on disk); None for readers and in memory.
    lock: WriterLock | None = None

    @abc.abstractmethod
    def get(self, first: int, stop: int) -> list:
        """Entries of chunks ``first .. stop-1``, verified.

        Raises
        ------
        IndexError
            If the range is not within ``0 .. nchunks``.
        CorruptDataError
            If a chunk is missing or damaged.
        """

    def get_one(self, i: int):
        """The verified entry of chunk `i` (the short path of :meth:`get`).

        Raises
        ------
        IndexError, CorruptDataError
            As :meth:`get`.
        """
        return self.get(i, i + 1)[0]

    @abc.abstractmethod
    def put(self, items: list[tuple[int, object, int]]) -> None:
        """Store ``(chunk number, entry, uncompressed bytes)`` items.

        A number equal to ``nchunks`` appends; a smaller one rewrites.

        Raises
        ------
        IndexError
            If a number would leave a gap.
        ReadOnlyError
            If the store was opened read-only.
        """

    @abc.abstractmethod
    def truncate(self, nchunks: int, last_size: int, sizes: Sizes) -> None:
        """Keep the first `nchunks` chunks; the last is `last_size` bytes.

        `sizes` is the metadata describing the shorter dataset: a persistent
        store makes it durable *before* freeing anything.
        """

    @abc.abstractmethod
    def commit(self, sizes: Sizes) -> None:
        """Make everything stored so far durable, then record `sizes`."""

    def encoder(self, nthreads: int):
        """What compresses new chunks (an object with ``compress(rows)``), or
        None for the engine's own C-Blosc2 compressors."""
        return None

    def compact(self, progress=None) -> int:
        """Reclaim space left by rewrites and truncations; returns bytes reclaimed.

        `progress`, when given, is called with 1 after each file compacted.
        """
        return 0

    def dead_bytes(self) -> int:
        """Bytes :meth:`compact` would reclaim now (read from the indexes only)."""
        return 0

    #: Whether the store keeps an append journal (docs/format/README.md §3b).
    journaling: bool = False
    #: A new dataset that its first commit makes visible (object storage): it
    #: is committed even with nothing stored.
    unpublished: bool = False
    #: Whether :meth:`get_many` fetches scattered chunks together (object storage).
    gathers: bool = False
    #: Stored rows can be neither rewritten nor removed, only appended to
    #: (object storage, docs/format/README.md §5).
    append_only: bool = False

    def get_many(self, chunks) -> list:
        """Verified entries of `chunks` (chunk numbers, in any order).

        Raises
        ------
        IndexError, CorruptDataError
            As :meth:`get`.
        """
        return [self.get_one(i) for i in chunks]

    def load_zonemap(self, dtype):
        """The stored zone map (``meta/zonemap``) for items of `dtype` and its
        exact flags, ``(stats, exact)`` as :func:`bcolzx._format.zonemap.load`
        returns them (each None when absent).

        Raises
        ------
        CorruptDataError
            If it is damaged.
        """
        return (None, None) if self.rootdir is None else \
            zonemap.load(self.rootdir, dtype, self.storage)

    def save_zonemap(self, stats, exact=None, staged: bool = False) -> None:
        """Store the zone map `stats` and its per-chunk `exact` flags (when given)
        before the next commit (atomically); `staged`: the next commit follows
        (a store may then write it as part of that commit)."""
        if self.rootdir is not None:
            zonemap.write(self.rootdir, stats, storage=self.storage, exact=exact)

    def journal_rows(self, max_rows: int) -> bytes:
        """The rows the journal adds to the committed state, at most `max_rows`
        (read once, at opening; empty without a journal)."""
        return b""

    def journal_append(self, first: int, rows: bytes) -> None:
        """Journal `rows` (bytes of whole rows) appended from row `first` on.

        Raises
        ------
        NotImplementedError
            If the store keeps no journal (check :attr:`journaling` first).
        """
        raise NotImplementedError(f"{type(self).__name__} keeps no journal")

    def unchanged(self) -> bool:
        """Whether the dataset is still as this store last knew it (False when
        the store cannot tell: it must then be read again)."""
        return False

    def journal_bytes(self) -> int:
        """Bytes the journal holds (0 without one)."""
        return 0

    def close(self) -> None:  # noqa: B027 - optional: most stores hold nothing open
        """Release what the store holds (it holds no file open between calls)."""

    @property
    def readonly(self) -> bool:
        return False
