"""Chunks an append completes are encoded by pool threads and stored later
(``ChunkedArray._hand_off``): readers, failures, budgets and fork()."""

import errno
import os
import signal

import numpy as np
import pytest

from bcolzx._format.meta import Storage
from bcolzx._storage import ChunkedArray, DirectoryStore, MemoryStore, engine, flight
from bcolzx._storage.base import Special


def _data(n, seed=0):
    rng = np.random.default_rng(seed)
    return np.cumsum(rng.normal(size=n)) * 100


def _new(kind, tmp_path, nthreads=2, chunklen=100, **storage):
    st = Storage(dtype="f8", chunklen=chunklen, chunks_per_superchunk=4, **storage)
    if kind == "memory":
        return ChunkedArray(MemoryStore(st, ()), nthreads=nthreads)
    return ChunkedArray(DirectoryStore.create(str(tmp_path / "ds"), st, ()), nthreads=nthreads)


def _append_in_batches(arr, data, batch=37):
    for i in range(0, len(data), batch):
        arr.append(data[i:i + batch])


READERS = {
    "read": lambda arr, data: np.testing.assert_array_equal(arr.read(0, len(data)), data),
    "read one chunk": lambda arr, data: np.testing.assert_array_equal(arr.read(1000, 1100),
                                                                      data[1000:1100]),
    "read_row": lambda arr, data: [arr.read_row(i) == data[i] or pytest.fail(str(i))
                                   for i in (0, 555, 1999)],
    "chunk_stats": lambda arr, data: np.testing.assert_array_equal(
        arr.chunk_stats()["max"], data[:arr.nfull * 100].reshape(-1, 100).max(axis=1)),
    "map_chunks": lambda arr, data: np.testing.assert_array_equal(
        np.concatenate(arr.map_chunks(lambda rows: rows.copy())), data),
    "verify": lambda arr, data: arr.verify() == [] or pytest.fail("verify found problems"),
    "store.get": lambda arr, data: len(arr.store.get(0, arr.nfull)) == arr.nfull or
    pytest.fail("store misses chunks"),
    "cbytes": lambda arr, data: arr.cbytes > 0 or pytest.fail("cbytes"),
}


@pytest.mark.parametrize("reader", sorted(READERS))
@pytest.mark.parametrize("kind", ["memory", "directory"])
def test_every_reader_sees_the_chunks_still_in_flight(tmp_path, kind, reader):
    arr = _new(kind, tmp_path)
    data = _data(2345)
    _append_in_batches(arr, data)
    assert arr._pending, "small appends left chunks in flight (the case under test)"
    READERS[reader](arr, data)
    assert not arr._pending
    arr.flush()
    if kind == "directory":
        arr.close()
        arr = ChunkedArray(DirectoryStore.open(str(tmp_path / "ds"), readonly=True))
    np.testing.assert_array_equal(arr.read(0, len(data)), data)


def test_one_thread_hands_nothing_off(tmp_path):
    arr = _new("memory", tmp_path, nthreads=1)
    _append_in_batches(arr, _data(1000))
    assert not arr._pending and arr.nfull == 10


@pytest.mark.parametrize("bytedelta", ["auto", "on", "off"])
def test_handed_off_chunks_are_what_one_thread_stores(tmp_path, bytedelta, monkeypatch):
    """Same entries (sizes and filter pipelines), zone map and byte-delta
    trials (the retrial period made short to cross several hand-offs)."""
    from bcolzx._format import layout

    monkeypatch.setattr(layout, "BYTEDELTA_RETRIAL", 3)
    rng = np.random.default_rng(3)
    data = np.concatenate([np.linspace(0, 5e4, 1500), rng.random(1500) * 5e4,
                           np.linspace(0, 5e4, 1500)])
    data[300:400] = 7          # a constant chunk: a special
    data[600:700] = np.nan     # a NaN chunk: a special with a NaN bound
    data[1234] = np.nan
    arrays = {}
    for nthreads in (1, 2):
        arr = _new("memory", tmp_path, nthreads=nthreads, bytedelta=bytedelta)
        _append_in_batches(arr, data, batch=61)
        np.testing.assert_array_equal(arr.read(0, len(data)), data)
        arrays[nthreads] = arr
    one, two = arrays[1], arrays[2]

    def shapes(arr):
        return [e if isinstance(e, Special) else (len(e), bytes(e)[16:22])
                for e in arr.store.get(0, arr.nfull)]

    assert shapes(two) == shapes(one)
    for field in ("min", "max", "nan"):
        np.testing.assert_array_equal(two.chunk_stats()[field], one.chunk_stats()[field])


def test_a_failed_background_encoding_rolls_back_to_the_last_flush(tmp_path, monkeypatch):
    arr = _new("directory", tmp_path)
    data = _data(3000)
    _append_in_batches(arr, data[:1050])
    arr.flush()
    calls = []
    real = engine.encode_in_pool

    def failing(*args):
        calls.append(1)
        if len(calls) == 3:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(*args)

    monkeypatch.setattr(engine, "encode_in_pool", failing)
    with pytest.raises(OSError) as info:
        _append_in_batches(arr, data[1050:])
        arr.flush()
    assert info.value.errno == errno.ENOSPC and "last flush" in str(info.value)
    assert len(arr) == 1050 and not arr._pending
    np.testing.assert_array_equal(arr.read(0, 1050), data[:1050])
    assert flight.in_flight() == 0
    monkeypatch.setattr(engine, "encode_in_pool", real)
    _append_in_batches(arr, data[1050:])  # usable again, from its last flush
    arr.flush()
    arr.close()
    again = ChunkedArray(DirectoryStore.open(str(tmp_path / "ds"), readonly=True))
    np.testing.assert_array_equal(again.read(0, 3000), data)


def test_a_failed_store_of_a_chunk_in_flight_rolls_back_when_read(tmp_path, monkeypatch):
    arr = _new("directory", tmp_path)
    data = _data(2000)
    _append_in_batches(arr, data[:500])
    arr.flush()
    _append_in_batches(arr, data[500:])
    assert arr._pending

    def full(items):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(arr._store, "put", full)
    with pytest.raises(OSError, match="last flush"):
        arr.read(0, 10)
    assert len(arr) == 500 and not arr._pending and flight.in_flight() == 0
    np.testing.assert_array_equal(arr.read(0, 500), data[:500])


def test_the_flight_budget_holds_for_all_arrays_together(tmp_path, monkeypatch):
    """Many arrays appended in turn (a wide table) keep at most FLIGHT_BYTES in
    flight; past it, chunks are encoded on the appending thread."""
    monkeypatch.setattr(flight, "FLIGHT_BYTES", 5 * 100 * 8)  # five chunks of 100 f8
    arrays = [_new("memory", tmp_path) for _ in range(6)]
    data = [_data(1500, seed=k) for k in range(6)]
    peak = 0
    for i in range(0, 1500, 37):
        for arr, d in zip(arrays, data):
            arr.append(d[i:i + 37])
            peak = max(peak, flight.in_flight())
            assert flight.in_flight() <= flight.FLIGHT_BYTES
    assert peak == flight.FLIGHT_BYTES  # the budget was used, not just respected
    for arr, d in zip(arrays, data):
        np.testing.assert_array_equal(arr.read(0, 1500), d)
    assert flight.in_flight() == 0


def test_an_array_keeps_at_most_its_window_in_flight(tmp_path):
    arr = _new("memory", tmp_path)
    most = 0
    for i in range(0, 5000, 37):
        arr.append(_data(37, seed=i))
        most = max(most, len(arr._pending))
    assert 1 < most <= arr._window


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork() does not exist here")
def test_a_forked_child_reads_chunks_its_parent_had_in_flight(tmp_path):
    arr = _new("directory", tmp_path)
    data = _data(2500)
    _append_in_batches(arr, data[:2000])
    assert arr._pending
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 1
        try:
            signal.alarm(60)  # never hang the test run
            ok = np.array_equal(arr.read(0, 2000), data[:2000])
            code = 0 if ok else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert not arr._pending  # stored by the parent before it forked
    _append_in_batches(arr, data[2000:])
    arr.flush()
    arr.close()
    again = ChunkedArray(DirectoryStore.open(str(tmp_path / "ds"), readonly=True))
    np.testing.assert_array_equal(again.read(0, 2500), data)
