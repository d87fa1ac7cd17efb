"""Fixtures: the same engine over a memory store and over a directory store."""

import pytest

from bcolzx._format.meta import CParams, Storage
from bcolzx._storage import ChunkedArray, DirectoryStore, MemoryStore


class Backend:
    """Makes a ChunkedArray on one kind of store, and reopens it (directory only)."""

    def __init__(self, kind, tmp_path):
        self.kind = kind
        self.tmp_path = tmp_path
        self.rootdir = str(tmp_path / "ds")

    def new(self, dtype="f8", chunklen=100, rowshape=(), k=4, checksum="crc32c", **cp):
        storage = Storage(dtype=dtype, chunklen=chunklen, chunks_per_superchunk=k,
                          checksum=checksum, cparams=CParams(**cp) if cp else CParams())
        if self.kind == "memory":
            self._mem = MemoryStore(storage, rowshape)
            return ChunkedArray(self._mem)
        return ChunkedArray(DirectoryStore.create(self.rootdir, storage, rowshape))

    def reopen(self, arr, readonly=False):
        """The same data seen afresh: from disk for a directory store."""
        if self.kind == "memory":
            return arr
        arr.close()
        return ChunkedArray(DirectoryStore.open(self.rootdir, readonly=readonly))


@pytest.fixture(params=["memory", "directory"])
def backend(request, tmp_path):
    return Backend(request.param, tmp_path)


@pytest.fixture()
def disk(tmp_path):
    return Backend("directory", tmp_path)
