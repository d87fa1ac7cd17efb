"""Chunk-parallel encoding: the calling thread and pool threads share a call's
chunks; the stored bytes, specials, byte-delta choices and zone maps are those
of one thread, whatever the thread count and whichever thread takes a chunk."""

import threading

import numpy as np
import pytest

from bcolzx import _threads
from bcolzx._format import layout
from bcolzx._format.meta import Storage
from bcolzx._storage import ChunkedArray, MemoryStore, Special, encoding


def _data(dtype):
    rng = np.random.default_rng(11)
    smooth = np.linspace(0, 5e4, 19 * 256)
    noisy = rng.random(19 * 256) * 5e4
    data = np.concatenate([np.full(512, 3.0), smooth, noisy, smooth, noisy[:300]])
    # The first two chunks are specials: the first trial is the third chunk.
    if dtype.startswith("f"):
        data[1300:1400] = np.nan           # NaN inside a chunk
        data[2048:2304] = np.nan           # a whole chunk of NaN (a special)
    data[2560:2816] = 0                    # zeros (a special) ...
    data[2816:3072] = 7                    # ... and a constant chunk, at retrial points
    return data.astype(dtype)


def _entries(arr):
    return [e if isinstance(e, Special) else bytes(e) for e in arr.store.get(0, arr.nfull)]


@pytest.mark.parametrize("bytedelta", ["auto", "on", "off"])
@pytest.mark.parametrize("dtype", ["f8", "i8", "u2"])
@pytest.mark.parametrize("sample", [layout.BYTEDELTA_SAMPLE, 640])
def test_threads_store_the_bytes_one_thread_stores(dtype, bytedelta, sample, monkeypatch):
    monkeypatch.setattr(layout, "BYTEDELTA_RETRIAL", 3)
    monkeypatch.setattr(layout, "BYTEDELTA_SAMPLE", sample)  # whole chunks, or a part
    data = _data(dtype)
    arrays = {}
    for nthreads in (1, 2, 8):
        st = Storage(dtype=dtype, chunklen=256, blocksize=512, bytedelta=bytedelta)
        arr = ChunkedArray(MemoryStore(st, ()), nthreads=nthreads)
        arr.append(data[:100])             # a leftover first, then many chunks at once
        arr.append(data[100:], last=True)  # the short last chunk encoded with them
        np.testing.assert_array_equal(arr.read(0, len(data)), data)
        arrays[nthreads] = arr
    one = arrays[1]
    assert any(isinstance(e, Special) for e in _entries(one))
    for nthreads in (2, 8):
        other = arrays[nthreads]
        assert other.nfull == one.nfull and other.nleft == one.nleft
        assert _entries(other) == _entries(one)
        assert bytes(other.store.get(other.nfull, other.nfull + 1)[0]) == \
            bytes(one.store.get(one.nfull, one.nfull + 1)[0])
        stats = other.chunk_stats()
        for field in ("min", "max", "nan"):
            np.testing.assert_array_equal(stats[field], one.chunk_stats()[field])
        assert (other._encoder.comp is other._encoder.delta) == \
            (one._encoder.comp is one._encoder.delta)
        assert other._encoder.until_trial == one._encoder.until_trial


@pytest.mark.parametrize("nthreads", [1, 2])
def test_a_trial_decides_on_the_sample_of_its_chunk(nthreads, monkeypatch):
    """The leading BYTEDELTA_SAMPLE bytes pick the pipeline of the whole chunk (and of the
    chunks up to the next trial): here smooth, so byte-delta, although over the whole
    chunk, mostly noise, it saves less than 10%."""
    monkeypatch.setattr(layout, "BYTEDELTA_SAMPLE", 8 << 10)  # 1024 of the 4096 rows
    rng = np.random.default_rng(5)
    chunk = rng.integers(-2**62, 2**62, 4096)  # noise neither pipeline compresses
    chunk[:1024] = np.arange(0, 1024 * 37, 37)
    st = Storage(dtype="i8", chunklen=4096, blocksize=1024, bytedelta="auto")
    enc = encoding.Encoder(st, 8, True, 1)
    whole_delta = len(enc.delta.compress(chunk))
    assert enc.plain.compress(chunk, enc.plain_limit(whole_delta)) is not None  # plain wins
    data = np.concatenate([chunk, chunk[::-1]])
    arr = ChunkedArray(MemoryStore(st, ()), nthreads=nthreads)
    arr.append(data, last=True)
    np.testing.assert_array_equal(arr.read(0, len(data)), data)
    assert arr._encoder.comp is arr._encoder.delta
    assert bytes(arr.store.get(0, 1)[0]) == bytes(enc.delta.compress(chunk))


def _blocked_pool(nthreads):
    """Every thread of the pool busy until the returned event is set."""
    pool = _threads.pool(nthreads)
    release, started = threading.Event(), threading.Semaphore(0)

    def block():
        started.release()
        release.wait(30)

    blockers = [pool.submit(block) for _ in range(_threads._size)]
    for _ in blockers:
        assert started.acquire(timeout=10)
    return release, blockers


def test_a_large_append_never_waits_for_a_busy_pool():
    """With every pool thread busy elsewhere, the appending thread encodes
    every chunk itself instead of waiting for the pool."""
    data = np.linspace(0, 1, 40 * 256)
    arr = ChunkedArray(MemoryStore(Storage(dtype="f8", chunklen=256), ()), nthreads=2)
    release, blockers = _blocked_pool(2)
    try:
        appending = threading.Thread(target=arr.append, args=(data,))
        appending.start()
        appending.join(10)
        finished = not appending.is_alive()
    finally:
        release.set()
        for b in blockers:
            b.result(30)
    appending.join(30)
    assert finished
    np.testing.assert_array_equal(arr.read(0, len(data)), data)


def test_share_raises_what_a_pool_thread_raised_after_every_item():
    """An item failing on a pool thread is raised by the caller, in order,
    once every item is done."""
    worker_failed, done = threading.Event(), []

    def item(k):
        done.append(k)
        if _threads.in_worker():
            worker_failed.set()
            raise ValueError(f"item {k} failed on a pool thread")
        worker_failed.wait(10)  # the caller's first item lets a pool thread take one
        return k

    with pytest.raises(ValueError, match="pool thread"):
        _threads.share(item, range(6), 2)
    assert sorted(done) == list(range(6))


@pytest.mark.parametrize("nthreads", [2, 8])
def test_an_encoding_failure_on_any_thread_reaches_the_appender(nthreads, monkeypatch):
    real = encoding.encode_into

    def encode_into(batch, k, comp, itemsize, rows, want_bounds):
        if rows[0] == 20 * 256:
            raise MemoryError("out of memory compressing chunk 20")
        return real(batch, k, comp, itemsize, rows, want_bounds)

    monkeypatch.setattr(encoding, "encode_into", encode_into)
    arr = ChunkedArray(MemoryStore(Storage(dtype="f8", chunklen=256), ()), nthreads=nthreads)
    with pytest.raises(MemoryError, match="chunk 20"):
        arr.append(np.arange(40 * 256, dtype="f8"))


def test_the_plain_limit_keeps_the_ten_percent_rule():
    """A trial keeps plain exactly when byte-delta saves less than 10%."""
    for delta in range(32, 400):
        for plain in range(32, 500):
            assert (plain <= encoding.Encoder.plain_limit(delta)) == (not delta * 10 <= plain * 9)


def test_share_from_a_pool_thread_is_helped_by_an_idle_one():
    """A pool thread's share() is helped by the pool's idle threads."""
    first_taken, ran_on = threading.Event(), set()

    def item(k):
        ran_on.add(threading.get_ident())
        if k == 0:  # the caller waits here until a helper took another item
            assert first_taken.wait(10)
        else:
            first_taken.set()
        return k

    assert _threads.pool(2).submit(_threads.share, item, range(4), 2).result(30) == [0, 1, 2, 3]
    assert len(ran_on) == 2
