"""Where chunks live: one interface, a memory and a directory implementation.

Everything above this package (the chunked-array engine, carray, ctable) has
one code path; only :class:`ChunkStore` implementations know about files.
"""

from bcolzx._storage.base import ChunkStore, Special
from bcolzx._storage.directory import DirectoryStore
from bcolzx._storage.engine import ChunkedArray
from bcolzx._storage.memory import MemoryStore

__all__ = ["ChunkStore", "Special", "MemoryStore", "DirectoryStore", "ChunkedArray"]
