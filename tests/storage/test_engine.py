"""The chunked-array engine over memory and directory stores."""

import numpy as np
import pytest

from bcolzx._ext import codec, special
from bcolzx._format.superchunk import SPECIAL_CBYTES
from bcolzx._storage import Special, chunkcache, encoding


def _model(n, dtype="f8", seed=0):
    rng = np.random.default_rng(seed)
    return (np.cumsum(rng.normal(size=n)) * 100).astype(dtype)


@pytest.mark.parametrize("n", [0, 1, 99, 100, 101, 399, 400, 401, 1234])
def test_append_then_read_every_range(backend, n):
    arr = backend.new(chunklen=100)
    data = _model(n)
    arr.append(data[: n // 3])
    arr.append(data[n // 3:])
    arr = backend.reopen(arr)
    assert len(arr) == n
    np.testing.assert_array_equal(arr.read(0, n), data)
    for a, b in [(0, 1), (99, 101), (150, 399), (n - 1, n), (n // 2, n)]:
        if 0 <= a <= b <= n:
            np.testing.assert_array_equal(arr.read(a, b), data[a:b])
    for i in {0, n // 2, n - 1} - {-1}:
        if 0 <= i < n:
            assert arr.read_row(i) == data[i]


@pytest.mark.parametrize(
    "dtype, rowshape",
    [("i1", ()), ("u2", ()), ("i8", ()), ("f4", ()), ("c16", ()), ("?", ()), ("S10", ()),
     ("U6", ()), ("M8[ns]", ()), ("f8", (3,)), ("i4", (2, 5)), ("V300", ()),
     ([("a", "i4"), ("b", "f8"), ("s", "S3")], ())],
)
def test_dtypes_and_trailing_shapes_roundtrip(backend, dtype, rowshape):
    arr = backend.new(dtype=dtype, chunklen=64, rowshape=rowshape)
    n = 1000
    raw = np.random.default_rng(1).integers(0, 50, size=n * np.dtype(dtype).itemsize *
                                            int(np.prod(rowshape)), dtype=np.uint8)
    if np.dtype(dtype).kind == "b":
        raw %= 2
    if np.dtype(dtype).kind == "U":
        raw = np.random.default_rng(1).integers(65, 90, size=n * 6).astype("<u4").view("u1")
    data = raw.view(dtype).reshape((n, *rowshape))
    arr.append(data)
    arr = backend.reopen(arr)
    got = arr.read(0, n)
    assert got.dtype == np.dtype(dtype) and got.shape == (n, *rowshape)
    assert got.tobytes() == data.tobytes()
    assert arr.read_row(777).tobytes() == data[777].tobytes()


@pytest.mark.parametrize(
    "values, kind",
    [(np.zeros(300), special.SPECIAL_ZERO), (np.full(300, np.nan), special.SPECIAL_NAN),
     (np.full(300, 7.5), special.SPECIAL_VALUE)],
)
def test_constant_chunks_are_stored_as_specials(backend, values, kind):
    arr = backend.new(chunklen=100)
    arr.append(values)
    entries = arr.store.get(0, 3)
    assert all(isinstance(e, Special) and e.kind == kind for e in entries)
    assert arr.cbytes == 3 * SPECIAL_CBYTES  # index entries only
    arr = backend.reopen(arr)
    assert arr.read(0, 300).tobytes() == values.tobytes()
    assert arr.read_row(150).tobytes() == values[150].tobytes()


def test_write_across_chunks_and_leftover(backend):
    arr = backend.new(chunklen=100)
    data = _model(1050)
    arr.append(data)
    arr.flush()
    for start, n in [(0, 1), (95, 10), (199, 300), (990, 60), (1049, 1), (0, 1050)]:
        new = -np.arange(n, dtype="f8") - start
        arr.write(start, new)
        data[start:start + n] = new
    arr = backend.reopen(arr)
    np.testing.assert_array_equal(arr.read(0, 1050), data)


def test_resize_grows_with_fill_and_shrinks(backend):
    arr = backend.new(chunklen=100, k=2)
    data = _model(950)
    arr.append(data)
    arr.resize(1210, fill=np.float64(-1))
    arr = backend.reopen(arr)
    full = np.r_[data, np.full(260, -1.0)]
    np.testing.assert_array_equal(arr.read(0, 1210), full)
    for n in (1100, 1000, 950, 420, 400, 99, 0):
        arr.resize(n)
        arr = backend.reopen(arr)
        assert len(arr) == n
        np.testing.assert_array_equal(arr.read(0, n), full[:n])
    arr.append(data[:10])
    arr = backend.reopen(arr)
    np.testing.assert_array_equal(arr.read(0, 10), data[:10])


def test_bad_ranges_raise_index_error(backend):
    arr = backend.new()
    arr.append(np.arange(10.0))
    for a, b in [(-1, 3), (5, 11), (7, 6)]:
        with pytest.raises(IndexError):
            arr.read(a, b)
    with pytest.raises(IndexError):
        arr.read_row(10)
    with pytest.raises(IndexError):
        arr.write(8, np.zeros(3))
    with pytest.raises(ValueError):
        arr.append(np.zeros((3, 2)))
    with pytest.raises(ValueError):
        arr.resize(-1)


def _stored_sizes(arr):
    return [len(e) for e in arr.store.get(0, arr.nfull) if not isinstance(e, Special)]


@pytest.mark.parametrize("mode", ["auto", "on", "off"])
def test_bytedelta_policy_picks_the_pipeline_per_data(tmp_path, mode):
    from bcolzx._format.meta import Storage
    from bcolzx._storage import ChunkedArray, MemoryStore

    smooth = np.linspace(0, 1e6, 40 * 4096)
    noise = np.random.default_rng(3).random(40 * 4096)
    sizes = {}
    for name, data in [("smooth", smooth), ("noise", noise)]:
        for policy in ("on", "off", mode):
            st = Storage(dtype="f8", chunklen=4096, blocksize=8192, bytedelta=policy)
            arr = ChunkedArray(MemoryStore(st, ()))
            arr.append(data)
            np.testing.assert_array_equal(arr.read(0, len(data)), data)
            assert arr.read_row(12345) == data[12345]
            sizes[name, policy] = sum(_stored_sizes(arr))
    assert sizes["smooth", "on"] * 2 < sizes["smooth", "off"]
    if mode == "auto":  # keeps byte-delta where it pays, not where it does not
        assert sizes["smooth", "auto"] == sizes["smooth", "on"]
        assert sizes["noise", "auto"] == sizes["noise", "off"]


def test_chunk_cache_stays_within_its_byte_budget(disk, monkeypatch):
    from bcolzx._storage import engine

    arr = disk.new(chunklen=100)
    data = _model(5000)
    arr.append(data)
    arr = disk.reopen(arr, readonly=True)
    one = max(_stored_sizes(arr))
    monkeypatch.setattr(chunkcache, "CACHE_BYTES", 3 * one)
    for i in range(0, 5000, 37):
        assert arr.read_row(i) == data[i]
        assert arr._cache._bytes <= 3 * one
        assert arr._cache._bytes == sum(len(e) for e in arr._cache._entries.values())
    assert 1 <= len(arr._cache._entries) <= 3
    arr.free_cache()
    assert arr._cache._bytes == 0 and not arr._cache._entries


def test_rewritten_chunk_leaves_the_cache(disk):
    arr = disk.new(chunklen=100)
    data = _model(1000)
    arr.append(data)
    arr.flush()
    assert arr.read_row(150) == data[150]  # chunk 1 is now cached
    arr.write(150, np.array([-1.0]))
    assert arr.read_row(150) == -1.0
    assert arr._cache._bytes == sum(len(e) for e in arr._cache._entries.values())


@pytest.mark.parametrize("nthreads", [1, 2])
def test_map_chunks_visits_every_chunk_in_order_with_the_leftover_last(backend, nthreads):
    arr = backend.new(chunklen=100)
    data = _model(1050)
    data[300:400] = 0.0        # a constant chunk (stored as a special)
    data[500:600] = 2.5
    arr.append(data)
    arr.flush()
    arr = backend.reopen(arr)
    arr.set_nthreads(nthreads)
    parts = arr.map_chunks(lambda rows: rows.copy())
    assert [len(p) for p in parts] == [100] * 10 + [50]
    np.testing.assert_array_equal(np.concatenate(parts), data)
    sums = arr.map_chunks(np.sum)
    np.testing.assert_array_equal(sums, [data[i:i + 100].sum() for i in range(0, 1050, 100)])


def test_map_chunks_on_n_d_rows_and_an_empty_array(backend):
    arr = backend.new(chunklen=7, rowshape=(2, 3))
    assert arr.map_chunks(np.sum) == []
    data = np.arange(20 * 6, dtype="f8").reshape(20, 2, 3)
    arr.append(data)
    parts = arr.map_chunks(lambda rows: rows.copy())
    assert [p.shape for p in parts] == [(7, 2, 3), (7, 2, 3), (6, 2, 3)]
    np.testing.assert_array_equal(np.concatenate(parts), data)


def test_in_memory_arrays_alive_at_interpreter_exit_print_nothing(tmp_path):
    import os
    import subprocess
    import sys

    import bcolzx

    code = ("import numpy as np, bcolzx\n"
            "c = bcolzx.carray(np.zeros(10))\n"
            "c.append(np.ones(5))\n")
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(bcolzx.__file__)))
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stderr == ""


@pytest.mark.parametrize("nthreads", [1, 2])
def test_rows_appended_without_flush_are_stored_at_interpreter_exit(tmp_path, nthreads):
    """The interpreter's exit flushes what was never flushed (garbage collection
    at the very end cannot: imports and threads are gone by then)."""
    import os
    import subprocess
    import sys

    import bcolzx

    code = ("import numpy as np, bcolzx\n"
            f"bcolzx.set_nthreads({nthreads})\n"
            "c = bcolzx.carray(np.empty(0), rootdir='c', mode='w', chunklen=1000)\n"
            "for i in range(50):\n"
            "    c.append(np.arange(i * 333, (i + 1) * 333, dtype=float))\n"
            "t = bcolzx.ctable([np.arange(10.0)], names=['a'], rootdir='t', mode='w')\n"
            "t.append([np.arange(5.0)])\n")
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(bcolzx.__file__)))
    done = subprocess.run([sys.executable, "-W", "error::ResourceWarning", "-c", code],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stderr == ""
    np.testing.assert_array_equal(bcolzx.open(str(tmp_path / "c"), mode="r")[:],
                                  np.arange(50 * 333.0))
    np.testing.assert_array_equal(bcolzx.open(str(tmp_path / "t"), mode="r")["a"][:],
                                  np.r_[np.arange(10.0), np.arange(5.0)])


@pytest.mark.parametrize("bytedelta", ["auto", "on", "off"])
@pytest.mark.parametrize("dtype", ["f8", "i4", "u2", "M8[s]"])
def test_chunk_parallel_appends_store_what_one_thread_stores(tmp_path, dtype, bytedelta,
                                                             monkeypatch):
    """Two threads encode runs of chunks at once: same entries, same zone map,
    same byte-delta trials (the retrial period made short to cross several)."""
    from bcolzx._format import layout
    from bcolzx._format.meta import Storage
    from bcolzx._storage import ChunkedArray, MemoryStore

    monkeypatch.setattr(layout, "BYTEDELTA_RETRIAL", 3)
    rng = np.random.default_rng(7)
    smooth = np.linspace(0, 5e4, 23 * 256)
    noisy = rng.random(23 * 256) * 5e4
    data = np.concatenate([smooth, noisy, smooth])
    if dtype.startswith("f"):
        data[300:400] = np.nan           # NaN inside a chunk ...
        data[512:768] = np.nan           # ... and a whole chunk of NaN (a special)
    data[1024:1280] = 7                  # a constant chunk (a special)
    data = data.astype(dtype)
    arrays = {}
    for nthreads in (1, 2):
        st = Storage(dtype=dtype, chunklen=256, blocksize=512, bytedelta=bytedelta)
        arr = ChunkedArray(MemoryStore(st, ()), nthreads=nthreads)
        arr.append(data[:100])            # a leftover first, then many chunks at once
        arr.append(data[100:])
        np.testing.assert_array_equal(arr.read(0, len(data)), data)
        arrays[nthreads] = arr
    one, two = arrays[1], arrays[2]
    assert two.nfull == one.nfull == len(data) // 256
    # Same entries, up to the order of blocks inside a chunk (C-Blosc2 with
    # nthreads > 1 stores a chunk's blocks in the order they finish).
    assert _entry_shapes(two) == _entry_shapes(one)
    stats = two.chunk_stats()
    for field in ("min", "max", "nan"):  # field by field: NaN bounds compare equal
        np.testing.assert_array_equal(stats[field], one.chunk_stats()[field])
    if dtype.startswith("f"):
        assert stats["nan"][1] and stats["nan"][2] and not stats["nan"][0]
    assert stats["min"][4] == stats["max"][4] == np.array(7).astype(dtype)


def _entry_shapes(arr):
    """Per stored chunk: a special's kind and value, or a chunk's size and
    filter pipeline (the byte-delta flag lives in its extended header)."""
    out = []
    for entry in arr.store.get(0, arr.nfull):
        if isinstance(entry, Special):
            out.append(entry)
        else:
            out.append((len(entry), bytes(entry)[16:22]))
    return out


def test_our_chunks_keep_one_stream_per_block():
    """Chunks of our format are not split into byte streams (faster, smaller)."""
    from bcolzx._format.meta import Storage
    from bcolzx._storage import ChunkedArray, MemoryStore

    arr = ChunkedArray(MemoryStore(Storage(dtype="f8", chunklen=4096), ()))
    arr.append(np.linspace(0, 1, 3 * 4096))
    for entry in arr.store.get(0, arr.nfull):
        flags = bytes(entry)[2]
        assert flags & 0x10, "the no-split flag (0x10) is set in the chunk header"


def test_large_appends_are_stored_a_group_at_a_time(disk, monkeypatch):
    """An append of many chunks reaches the store in groups of PUT_BYTES; the
    result, on disk and after a reopen, is the same as one put."""
    from bcolzx._storage import engine

    monkeypatch.setattr(engine, "PUT_BYTES", 3 * 100 * 8)  # three chunks of 100 f8
    arr = disk.new(chunklen=100, k=4)
    puts = []
    real_put = arr.store.put
    monkeypatch.setattr(arr.store, "put", lambda items: (puts.append(len(items)),
                                                         real_put(items))[1])
    data = _model(1234)
    arr.append(data[:50])
    arr.append(data[50:])
    # 12 chunks: the one the leftover completes joins the first group of three
    assert puts == [4, 3, 3, 2]
    arr.flush()
    arr = disk.reopen(arr, readonly=True)
    np.testing.assert_array_equal(arr.read(0, len(data)), data)
    assert arr.chunk_stats() is not None and len(arr.chunk_stats()) == 12


def _two_thread_disk_array(tmp_path, chunklen=100):
    from bcolzx._format.meta import Storage
    from bcolzx._storage import ChunkedArray, DirectoryStore

    st = Storage(dtype="f8", chunklen=chunklen, chunks_per_superchunk=4)
    return ChunkedArray(DirectoryStore.create(str(tmp_path / "ds"), st, ()), nthreads=2)


def test_large_appends_on_disk_store_one_group_while_compressing_the_next(tmp_path,
                                                                          monkeypatch):
    import threading

    from bcolzx._storage import ChunkedArray, DirectoryStore, engine

    monkeypatch.setattr(engine, "PUT_BYTES", 3 * 100 * 8)  # three chunks of 100 f8
    arr = _two_thread_disk_array(tmp_path)
    puts = []
    real_put = arr._store.put
    monkeypatch.setattr(arr._store, "put", lambda items: (
        puts.append((len(items), threading.current_thread().name)), real_put(items))[1])
    data = _model(1234)
    arr.append(data)
    # the last group is stored by the appending thread, the others behind it
    assert [k for k, _ in puts] == [3, 3, 3, 3]
    assert all(name.startswith("bcolzx-writer") for _, name in puts[:-1])
    assert puts[-1][1] == threading.current_thread().name
    arr.flush()
    arr.close()
    again = ChunkedArray(DirectoryStore.open(str(tmp_path / "ds"), readonly=True))
    np.testing.assert_array_equal(again.read(0, len(data)), data)
    assert len(again.chunk_stats()) == 12


def test_a_put_failing_behind_a_large_append_rolls_it_back(tmp_path, monkeypatch):
    import errno

    from bcolzx._storage import engine

    monkeypatch.setattr(engine, "PUT_BYTES", 3 * 100 * 8)
    arr = _two_thread_disk_array(tmp_path)
    data = _model(2000)
    arr.append(data[:450])
    arr.flush()
    real_put, calls = arr._store.put, []

    def put(items):
        calls.append(len(items))
        if len(calls) == 2:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_put(items)

    monkeypatch.setattr(arr._store, "put", put)
    with pytest.raises(OSError, match="last flush") as info:
        arr.append(data[450:])
    assert info.value.errno == errno.ENOSPC
    assert len(arr) == 450
    np.testing.assert_array_equal(arr.read(0, 450), data[:450])


def test_an_append_failing_while_a_group_is_stored_waits_for_that_put(tmp_path, monkeypatch):
    """The exception leaves no put running behind it (the roll-back would race it)."""
    import time

    from bcolzx._storage import engine

    monkeypatch.setattr(engine, "PUT_BYTES", 3 * 100 * 8)
    arr = _two_thread_disk_array(tmp_path)
    data = _model(1500)
    real_put, finished = arr._store.put, []

    def slow_put(items):
        time.sleep(0.3)
        real_put(items)
        finished.append(len(items))

    real_runs, runs = encoding.encode_runs, []

    def failing_runs(*args):
        runs.append(1)
        if len(runs) == 2:  # the second group, while the first is being stored
            raise RuntimeError("codec failure")
        return real_runs(*args)

    monkeypatch.setattr(arr._store, "put", slow_put)
    monkeypatch.setattr(encoding, "encode_runs", failing_runs)
    with pytest.raises(RuntimeError, match="codec failure"):
        arr.append(data)
    assert finished == [3]  # the first group's put ended before the exception surfaced
    assert len(arr) == 0
