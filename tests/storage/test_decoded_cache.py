"""The process-wide cache of decompressed chunks (``defaults.chunk_cache_bytes``).

A chunk read twice is kept decompressed, read-only; every change to an
array's chunks (append into a stored chunk, setitem, trim, resize, a new
handle) drops what it kept, and values read are always the array's current
ones.  A read through the cache decompresses nothing, which the tests see by
counting calls of the array's decompressor.
"""

from __future__ import annotations

import gc
import os
import threading

import numpy as np
import pytest

import bcolzx
from bcolzx._storage import chunkcache
from bcolzx._storage.chunkcache import DECODED
from bcolzx.errors import ChecksumError


@pytest.fixture(autouse=True)
def _fresh_cache():
    old = bcolzx.defaults.chunk_cache_bytes
    DECODED.clear()
    yield
    bcolzx.defaults.chunk_cache_bytes = old
    DECODED.clear()


class _Counting:
    """Counts the decompressions of an engine's own decompressor."""

    def __init__(self, dec):
        self._dec, self.calls = dec, 0

    def __getattr__(self, name):
        fn = getattr(self._dec, name)

        def counted(*args, **kwargs):
            self.calls += 1
            return fn(*args, **kwargs)
        return counted


def _counted(c):
    eng = c.engine
    eng._dec = _Counting(eng._dec)
    return eng._dec


@pytest.fixture(params=["memory", "disk"])
def arr(request, tmp_path):
    data = np.arange(40_000, dtype="i8")
    rootdir = str(tmp_path / "c") if request.param == "disk" else None
    c = bcolzx.carray(data, chunklen=1000, rootdir=rootdir, mode="w")
    c.flush()
    return c, data


def test_second_read_is_cached_and_third_decompresses_nothing(arr):
    c, data = arr
    dec = _counted(c)
    assert c[1500] == 1500                      # first read: one block, not kept
    assert DECODED.nbytes == 0
    assert c[1600] == 1600                      # second read of chunk 1: kept whole
    assert DECODED.nbytes == 1000 * 8
    before = dec.calls
    assert c[1700] == 1700 and list(c[1100:1900]) == list(data[1100:1900])
    assert dec.calls == before                  # served from the cache


def test_slices_and_sum_use_it(arr):
    c, data = arr
    np.testing.assert_array_equal(c[2000:9000], data[2000:9000])
    np.testing.assert_array_equal(c[2000:9000], data[2000:9000])
    assert DECODED.nbytes == 7 * 1000 * 8
    dec = _counted(c)
    np.testing.assert_array_equal(c[2500:8500], data[2500:8500])
    assert dec.calls == 0
    assert c.sum() == data.sum() and c.sum() == data.sum()


class _Reads:
    """Counts the chunks an engine's store is asked for."""

    def __init__(self, store):
        self._store, self.chunks = store, []

    def __getattr__(self, name):
        return getattr(self._store, name)

    def get(self, first, stop):
        self.chunks.extend(range(first, stop))
        return self._store.get(first, stop)


def test_cached_chunks_are_not_read_from_the_store_again(arr):
    c, data = arr
    c.sum(), c.sum()                             # every full chunk now cached
    assert DECODED.nbytes == 40 * 1000 * 8
    reads = c.engine._store = _Reads(c.engine.store)
    dec = _counted(c)
    assert c.sum() == data.sum()
    np.testing.assert_array_equal(c[500:39_500], data[500:39_500])
    assert reads.chunks == [] and dec.calls == 0
    DECODED.drop(c.engine._owner, 7)             # one chunk gone: only it is read
    assert c.sum() == data.sum()
    assert reads.chunks == [7]


def test_cached_rows_never_reach_the_user_writable_or_shared(arr):
    c, data = arr
    c[:5000], c[:5000]
    got = c[1000:2000]
    assert got.flags.writeable
    got[:] = -1                                  # the user's copy, not the cache's
    np.testing.assert_array_equal(c[1000:2000], data[1000:2000])
    row = c[1500]
    assert row == 1500


@pytest.mark.parametrize("change", ["setitem", "trim", "resize", "append", "reopen"])
def test_changes_drop_what_was_kept(arr, change):
    c, data = arr
    c.append(np.arange(500))                     # a leftover of 500 rows
    data = np.concatenate([data, np.arange(500)])
    for _ in range(2):
        np.testing.assert_array_equal(c[:], data)
    if change == "setitem":
        c[1234] = -7
        data[1234] = -7
        c[39_500:40_100] = -8                    # last full chunk and the leftover
        data[39_500:40_100] = -8
    elif change == "trim":
        c.trim(1200)
        data = data[:-1200]
    elif change == "resize":
        c.resize(20_500)
        c.resize(30_000)
        data = np.concatenate([data[:20_500], np.zeros(9_500, data.dtype)])
    elif change == "append":
        c.append(np.arange(1500) + 10**6)        # fills the leftover into chunk 40
        data = np.concatenate([data, np.arange(1500) + 10**6])
    else:
        if c.rootdir is None:
            pytest.skip("an in-memory array cannot be reopened")
        c.flush()
        other = bcolzx.carray(rootdir=c.rootdir, mode="a")
        other[5] = 99
        other.flush()
        data[5] = 99
        c = bcolzx.open(c.rootdir, mode="r")
    for _ in range(2):
        np.testing.assert_array_equal(c[:], data)
        assert c[1234] == data[1234] and c[len(data) - 1] == data[-1]
        assert c.sum() == data.sum()


def test_free_cachemem_drops_the_arrays_chunks(arr):
    c, _ = arr
    other = bcolzx.arange(10_000, chunklen=1000)
    other[:3000], other[:3000]
    c[:3000], c[:3000]
    assert DECODED.nbytes == 2 * 3000 * 8
    c.free_cachemem()
    assert DECODED.nbytes == 3000 * 8             # the other array's stay


def test_an_array_that_goes_takes_its_chunks_along(tmp_path):
    c = bcolzx.carray(np.arange(10_000), chunklen=1000, rootdir=str(tmp_path / "c"))
    c[:3000], c[:3000]
    assert DECODED.nbytes == 3000 * 8
    del c
    gc.collect()
    assert DECODED.nbytes == 0


def test_limit_zero_turns_it_off_and_shrinking_clears(arr):
    c, data = arr
    c[:3000], c[:3000]
    assert DECODED.nbytes == 3000 * 8
    bcolzx.defaults.chunk_cache_bytes = 1000
    assert DECODED.nbytes == 0
    bcolzx.defaults.chunk_cache_bytes = 0
    for _ in range(3):
        np.testing.assert_array_equal(c[:3000], data[:3000])
        assert c[10] == 10
    assert DECODED.nbytes == 0


def test_large_scans_are_not_admitted_and_lru_bound_holds(arr):
    c, data = arr
    bcolzx.defaults.chunk_cache_bytes = 4 * 8000 * 4   # reads of at most 4 chunks admitted
    for _ in range(2):
        np.testing.assert_array_equal(c[:10_000], data[:10_000])  # 10 chunks: too large
    assert DECODED.nbytes == 0
    for start in range(0, 40_000, 4000):                # 10 hot reads of 4 chunks each
        for _ in range(2):
            np.testing.assert_array_equal(c[start:start + 4000], data[start:start + 4000])
    assert DECODED.nbytes <= bcolzx.defaults.chunk_cache_bytes
    assert DECODED.nbytes == 16 * 8000                   # the 16 most recent chunks


def test_knob_checks_its_value():
    with pytest.raises(TypeError):
        bcolzx.defaults.chunk_cache_bytes = 1.5
    with pytest.raises(TypeError):
        bcolzx.defaults.chunk_cache_bytes = True
    with pytest.raises(ValueError):
        bcolzx.defaults.chunk_cache_bytes = -1
    bcolzx.defaults.chunk_cache_bytes = np.int64(1 << 20)
    assert bcolzx.defaults.chunk_cache_bytes == 1 << 20 == chunkcache.DECODED_BYTES
    assert "chunk_cache_bytes=1048576" in repr(bcolzx.defaults)


def test_a_chunk_decoded_before_a_change_is_not_admitted_after_it(arr):
    c, data = arr
    eng = c.engine
    epoch = DECODED.epoch(eng._owner)
    c[1500]                                              # seen once
    stale = eng.read(1000, 2000).copy()
    c[1500] = -1                                         # drops chunk 1: a new epoch
    DECODED.put(eng._owner, 1, stale, epoch)             # a slow reader's late offer
    assert DECODED.get(eng._owner, 1) is None
    assert c[1500] == -1


def test_reads_on_many_threads_agree(arr):
    c, data = arr
    errors = []

    def reader(seed):
        rng = np.random.default_rng(seed)
        try:
            for _ in range(300):
                i = int(rng.integers(0, len(data) - 2000))
                if c[i] != data[i]:
                    errors.append((i, c[i]))
                np.testing.assert_array_equal(c[i:i + 2000], data[i:i + 2000])
        except AssertionError as exc:
            errors.append(exc)

    threads = [threading.Thread(target=reader, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert DECODED.nbytes > 0


def test_an_array_collected_inside_the_caches_lock_does_not_deadlock(tmp_path):
    """A garbage collection can start at any allocation, also while the cache's
    lock is held (in a put, a drop): the finalizer of an engine collected
    then must not wait for that lock."""
    c = bcolzx.carray(np.arange(10_000), chunklen=1000)
    c[:3000], c[:3000]
    assert DECODED.nbytes == 3000 * 8
    done = threading.Event()

    def collect_while_locked():
        with DECODED._lock:         # as inside put() when a collection starts
            nonlocal c
            del c
            gc.collect()            # runs the engine's finalizer
        done.set()

    worker = threading.Thread(target=collect_while_locked, daemon=True)
    worker.start()
    worker.join(10)
    assert done.is_set(), "the finalizer waited for the cache's lock"
    assert DECODED.nbytes == 0      # its chunks went at the next use


def test_a_whole_array_read_is_kept_at_once(arr):
    """An array read whole, small enough to be admitted, is kept on its first
    read (as HDF5's chunk cache would): the second read copies memory."""
    c, data = arr
    np.testing.assert_array_equal(c[:], data)
    assert DECODED.nbytes == 40 * 1000 * 8
    dec = _counted(c)
    reads = c.engine._store = _Reads(c.engine.store)
    np.testing.assert_array_equal(c[:], data)
    np.testing.assert_array_equal(np.asarray(c), data)
    assert c.sum() == data.sum()
    assert reads.chunks == [] and dec.calls == 0


def test_a_partial_read_still_waits_for_its_second_read(arr):
    c, data = arr
    np.testing.assert_array_equal(c[:39_000], data[:39_000])
    np.testing.assert_array_equal(c[1000:], data[1000:])
    assert DECODED.nbytes == 38 * 1000 * 8              # the chunks read by both


def test_a_whole_array_too_large_for_the_cache_is_not_kept(arr):
    c, data = arr
    bcolzx.defaults.chunk_cache_bytes = 4 * 40 * 8000 - 8   # a quarter: one row short
    for _ in range(2):
        np.testing.assert_array_equal(c[:], data)
    assert DECODED.nbytes == 0


def test_corruption_raises_and_nothing_is_kept(tmp_path):
    rootdir = str(tmp_path / "c")
    data = np.arange(40_000, dtype="i8")
    c = bcolzx.carray(data, chunklen=1000, rootdir=rootdir, mode="w")
    c.flush()
    off, nb = c.engine.store._file(0).index.entry(3)      # chunk 3, in its file
    with open(os.path.join(rootdir, "data", "__0.bin"), "r+b") as f:
        f.seek(off + nb // 2)
        b = f.read(1)
        f.seek(off + nb // 2)
        f.write(bytes([b[0] ^ 0x10]))
    c = bcolzx.open(rootdir, mode="r")
    for _ in range(3):
        with pytest.raises(ChecksumError) as info:
            c[:]
        assert info.value.chunk == 3
        with pytest.raises(ChecksumError):
            c.sum()
        np.testing.assert_array_equal(c[:3000], data[:3000])  # the chunks before it
    assert DECODED.get(c.engine._owner, 3) is None


@pytest.mark.parametrize("dtype", ["f8", "i2", "u1", "?", "M8[s]", "M8[ns]", "m8[D]", "S3",
                                   "U2", "c16", [("a", "i4"), ("b", "f8")]])
def test_items_and_slices_are_numpys_cold_and_hot(dtype, tmp_path):
    data = np.zeros(5_500, dtype=dtype)
    raw = data.view(np.uint8).reshape(len(data), -1)
    raw[:] = np.random.default_rng(3).integers(0, 2, raw.shape, dtype=np.uint8)
    c = bcolzx.carray(data, chunklen=1000, rootdir=str(tmp_path / "c"))
    c.flush()
    c = bcolzx.open(str(tmp_path / "c"), mode="r")
    keys = [0, 999, 1000, 4999, 5000, 5499, -1, -5_500, np.int64(1234), np.uint16(7)]
    for _ in range(3):                       # cold, then hot (the chunks kept)
        for k in keys:
            got, want = c[k], data[k].item()  # NumPy's Python scalar (a tuple: a record)
            assert type(got) is type(want), (k, got, want)
            assert np.array(got, dtype=data.dtype).tobytes() == data[[k]].tobytes(), (k, got)
        for a, b in [(0, 1000), (10, 2500), (4990, 5500), (-700, -1), (5400, 5400)]:
            np.testing.assert_array_equal(c[a:b], data[a:b])
        np.testing.assert_array_equal(c[:], data)
    for k in (5_500, -5_501):
        with pytest.raises(IndexError):
            c[k]


def test_a_sum_keeps_chunks_on_its_second_pass_decoded_in_place(arr):
    c, data = arr
    assert c.sum() == data.sum()
    assert DECODED.nbytes == 0                           # a scan: read once, not kept
    assert c.sum() == data.sum()
    assert DECODED.nbytes == 40 * 1000 * 8
    for k in (0, 17, 39):
        rows = DECODED.get(c.engine._owner, k)
        assert not rows.flags.writeable
        np.testing.assert_array_equal(rows, data[k * 1000:(k + 1) * 1000])
    dec = _counted(c)
    assert c.sum() == data.sum() and c.max() == data.max() and c.mean() == data.mean()
    assert dec.calls == 0


@pytest.mark.parametrize("where", ["memory", "disk"])
@pytest.mark.parametrize("kind", ["str", "bytes"])
def test_rows_of_variable_length_items_come_from_the_decoded_chunks(tmp_path, where, kind):
    """A string or bytes column's chunk read twice is kept decompressed with
    its offsets (counted in the budget); random rows then decode nothing, and
    a write of the chunk drops it: the next read sees the new value."""
    rng = np.random.default_rng(5)
    words = ["", "a", "bb", "ccc", "ÄÖÜ", "𝄞x", "long" * 50]
    values = [words[k] for k in rng.integers(0, len(words), 6000)]
    if kind == "str":
        data = np.array(values, dtype=np.dtypes.StringDType())
    else:
        data = np.empty(len(values), dtype=bcolzx.vlen_dtype(bytes))
        data[:] = [v.encode() for v in values]
    rootdir = str(tmp_path / "s") if where == "disk" else None
    c = bcolzx.carray(data, chunklen=500, rootdir=rootdir, mode="w")
    c.flush()
    if rootdir is not None:
        c = bcolzx.open(rootdir, mode="a")
    dec = _counted(c)
    order = [5, 1700, 5, 1700]  # chunks 0, 3, 0, 3: each read twice, the one-chunk cache missed
    for i in order:
        assert c[i] == data[i]
    assert dec.calls == 4 and DECODED.nbytes > 0
    held = DECODED.nbytes
    assert held >= 2 * (500 + 1) * 8  # the offsets of two chunks are counted
    dec.calls = 0
    for i in rng.integers(0, 2000, 300).tolist():  # chunks 0..3
        if i // 500 in (0, 3):
            assert c[i] == data[i]
    assert dec.calls == 0
    new = "changed" if kind == "str" else b"changed"
    c[7] = new
    assert c[7] == new and c[6] == data[6]
    c.free_cachemem()
    assert DECODED.nbytes == 0
