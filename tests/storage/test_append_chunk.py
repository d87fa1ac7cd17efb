"""ChunkedArray.append_chunk: storing chunks that are already encoded (for imports)."""

import numpy as np
import pytest

from bcolzx._ext import codec
from bcolzx.errors import ReadOnlyError


def _encode(rows: np.ndarray) -> bytes:
    return codec.Compressor("zstd", 5, codec.SHUFFLE, rows.dtype.itemsize).compress(rows)


def test_encoded_chunks_are_stored_as_given_and_read_back(backend):
    arr = backend.new(dtype="i8", chunklen=100)
    data = np.arange(250, dtype="i8")
    chunks = [_encode(data[i:i + 100]) for i in (0, 100, 200)]
    for i, chunk in enumerate(chunks):
        arr.append_chunk(chunk, data[i * 100:(i + 1) * 100])
    assert (arr.nfull, arr.nleft) == (2, 50)
    arr.flush()
    assert [bytes(e) for e in arr.store.get(0, 3)] == chunks  # the short last one too
    arr = backend.reopen(arr)
    assert arr.read(0, 250).tolist() == data.tolist()
    assert arr.verify() == []
    stats = arr.chunk_stats()
    assert stats["min"].tolist() == [0, 100] and stats["max"].tolist() == [99, 199]


def test_rows_appended_after_a_short_encoded_chunk_complete_it(backend):
    arr = backend.new(dtype="f4", chunklen=100)
    data = np.arange(130, dtype="f4")
    arr.append_chunk(_encode(data[:60]), data[:60])
    arr.append(data[60:])
    arr.flush()
    arr = backend.reopen(arr)
    assert arr.read(0, 130).tolist() == data.tolist() and arr.verify() == []


def test_encoded_chunks_are_refused_after_a_leftover_or_when_too_long(backend):
    arr = backend.new(dtype="i8", chunklen=10)
    with pytest.raises(ValueError):
        arr.append_chunk(_encode(np.arange(11)), np.arange(11))
    with pytest.raises(ValueError):
        arr.append_chunk(b"", np.arange(0))
    arr.append(np.arange(5))
    with pytest.raises(ValueError, match="leftover"):
        arr.append_chunk(_encode(np.arange(10)), np.arange(10))
    assert arr.read(0, 5).tolist() == [0, 1, 2, 3, 4]


def test_read_only_arrays_refuse_encoded_chunks(disk):
    arr = disk.new(dtype="i8", chunklen=10)
    arr.append(np.arange(10))
    arr = disk.reopen(arr, readonly=True)
    with pytest.raises(ReadOnlyError):
        arr.append_chunk(_encode(np.arange(10)), np.arange(10))
