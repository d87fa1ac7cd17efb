"""Where chunks live: one interface, a memory and a directory implementation.

Everything above this package (the chunked-array engine, carray, ctable) has
one code path; only :class:`ChunkStore` implementations know about files.
"""

from bcolzx._storage.base import ChunkStore, Special
from bcolzx._storage.directory import DirectoryStore
from bcolzx._storage.engine import ChunkedArray
from bcolzx._storage.memory import MemoryStore
from bcolzx._storage.vlen import VlenArray

__all__ = ["ChunkStore", "Special", "MemoryStore", "DirectoryStore", "ChunkedArray",
           "VlenArray", "engine_for"]


def engine_for(store: ChunkStore, nthreads: int = 1) -> ChunkedArray:
    """The engine over `store`: a :class:`VlenArray` for variable-length items
    (object dtype), else a :class:`ChunkedArray`.

    Raises
    ------
    ValueError, CorruptDataError
        As the engine's constructor.
    """
    kind = VlenArray if store.storage.vlen else ChunkedArray
    return kind(store, nthreads=nthreads)
