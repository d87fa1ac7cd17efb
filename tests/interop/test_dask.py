"""bcolzx.interop.dask: Dask arrays and dataframes over bcolzx, parallel writes, vm='dask'.

The cluster tests at the end run on a real ``distributed.LocalCluster`` (two
worker processes, one thread each), shared by the module.
"""

import json
import os
import pickle
import shutil
import subprocess
import sys
import threading
import time
from collections import OrderedDict

import numpy as np
import pytest

dask = pytest.importorskip("dask", reason="Dask interop needs dask: pip install 'bcolzx[dask]'")
da = pytest.importorskip("dask.array")
dd = pytest.importorskip("dask.dataframe")
pd = pytest.importorskip("pandas")
distributed = pytest.importorskip("distributed")

from pandas.testing import assert_frame_equal, assert_series_equal  # noqa: E402

import bcolzx  # noqa: E402
from bcolzx import carray, ctable  # noqa: E402
from bcolzx._format import layout  # noqa: E402
from bcolzx._format.meta import read_sizes  # noqa: E402
from bcolzx._storage import chunkcache  # noqa: E402
from bcolzx._storage import engine as engine_module  # noqa: E402
from bcolzx.errors import ConcurrentModificationError, ReadOnlyError  # noqa: E402
from bcolzx.interop import dask as bdask  # noqa: E402
from tests.conftest import LEGACY  # noqa: E402


def _data(n, seed=0):
    return np.random.default_rng(seed).normal(100, 5, n).round(2)


@pytest.fixture(params=["memory", "disk"])
def make(request, tmp_path):
    """A carray or ctable in memory or in a directory, made like the constructors."""
    def make(data, cls=carray, **kwargs):
        if request.param == "disk":
            kwargs["rootdir"] = str(tmp_path / f"ds{len(os.listdir(tmp_path))}")
        return cls(data, **kwargs)
    make.disk = request.param == "disk"
    return make


@pytest.fixture
def reads(monkeypatch):
    """The (rootdir, start, stop) of every read a task makes from the files."""
    seen = []
    original = bdask.ArraySource.read

    def read(self, start, stop):
        seen.append((os.path.basename(self.rootdir), start, stop))
        return original(self, start, stop)
    monkeypatch.setattr(bdask.ArraySource, "read", read)
    return seen


def _as_dask_gives(df):
    """`df` as Dask gives it back (Dask turns string columns into pyarrow strings)."""
    return dd.from_pandas(df, npartitions=1).compute()


def _table(n=5000, rootdir=None, chunklen=256):
    rng = np.random.default_rng(3)
    t = np.sort(rng.integers(0, n // 4, n))  # sorted, with runs of equal values
    return ctable([t, rng.integers(0, 7, n), rng.normal(size=n).round(3),
                   np.array(["ab", "c", "defg"])[np.arange(n) % 3]],
                  names=["t", "g", "v", "s"], rootdir=rootdir, chunklen=chunklen)


# -- carray -> dask.array --------------------------------------------------------------


def test_to_dask_gives_the_values(make):
    a = _data(10_007)
    ca = make(a, chunklen=500)
    x = ca.to_dask()
    assert x.shape == a.shape and x.dtype == a.dtype
    np.testing.assert_array_equal(x.compute(), a)
    assert x.sum().compute() == pytest.approx(a.sum())
    np.testing.assert_array_equal(ca.to_dask(chunks=777)[3:9000:7].compute(scheduler="sync"),
                                  a[3:9000:7])


def test_to_dask_of_rows_with_trailing_dimensions(make):
    a = np.arange(3000, dtype="i4").reshape(1000, 3)
    x = make(a, chunklen=64).to_dask(chunks=100)
    assert x.chunks[1] == (3,)
    np.testing.assert_array_equal(x.sum(axis=0).compute(), a.sum(axis=0))


def test_to_dask_blocks_are_whole_chunks_within_one_superchunk(tmp_path):
    ca = carray(_data(50_000), chunklen=100, rootdir=str(tmp_path / "c"))
    k = ca._engine.store.storage.chunks_per_superchunk
    with dask.config.set({"array.chunk-size": "9KiB"}):  # 11 chunks of 800 bytes ...
        x = ca.to_dask()
    sizes = x.chunks[0]
    assert set(sizes[:-1]) == {800}  # ... give 8: the largest divisor of K = 256 below 11
    starts = np.cumsum((0,) + sizes[:-1])
    for start, size in zip(starts, sizes):
        assert start % 100 == 0 and start // (100 * k) == (start + size - 1) // (100 * k)


def test_to_dask_of_an_empty_carray(make):
    x = make(np.empty(0, "f4")).to_dask()
    assert x.shape == (0,) and x.compute().dtype == np.float32


def test_to_dask_graph_holds_paths_not_data(tmp_path):
    a = _data(400_000)  # 3.2 MB of data
    x = carray(a, rootdir=str(tmp_path / "c")).to_dask(chunks=50_000)
    graph = pickle.dumps(dict(x.__dask_graph__()))
    assert len(graph) < 40_000
    np.testing.assert_array_equal(x.compute(), a)


def test_to_dask_reads_the_state_it_was_made_from(tmp_path):
    ca = carray(np.arange(1000.0), chunklen=64, rootdir=str(tmp_path / "c"))
    x = ca.to_dask(chunks=128)
    ca.append(np.arange(500.0))
    ca[:10] = -1
    ca.flush()
    np.testing.assert_array_equal(x.compute()[10:], np.arange(10.0, 1000.0))
    y = ca.to_dask()
    assert y.shape == (1500,) and y.name != x.name


def test_to_dask_flushes_pending_appends(tmp_path):
    ca = carray(np.arange(10), chunklen=4, rootdir=str(tmp_path / "c"))
    ca.append([10, 11, 12])  # not flushed: the leftover is in memory only
    np.testing.assert_array_equal(ca.to_dask().compute(), np.arange(13))


def test_to_dask_after_a_writer_shrank_the_dataset(tmp_path):
    ca = carray(np.arange(1000), chunklen=64, rootdir=str(tmp_path / "c"))
    x = ca.to_dask(chunks=128)
    ca.resize(100)
    # The index copy the graph reads is still the committed one of its state.
    np.testing.assert_array_equal(x.compute(scheduler="sync"), np.arange(1000))
    for value in (1, 2):  # two more commits overwrite it: the rows are gone
        ca.append([value])
        ca.flush()
    with pytest.raises(ConcurrentModificationError):
        x.compute(scheduler="sync")


def test_to_dask_of_a_legacy_bcolz_dataset(tmp_path):
    path = tmp_path / "legacy"
    shutil.copytree(LEGACY / "ca_float64_default", path)
    ca = carray(rootdir=str(path), mode="r")
    np.testing.assert_array_equal(ca.to_dask(chunks=10_000).compute(), ca[:])


def test_to_dask_refuses_bad_chunks(make):
    ca = make(np.arange(10))
    for bad in (0, -3, 2.5, True):
        with pytest.raises(ValueError):
            ca.to_dask(chunks=bad)


def test_from_array_with_explicit_chunks_and_no_lock(make):
    a = np.arange(60_000.0).reshape(20_000, 3)
    ca = make(a, chunklen=512)
    x = da.from_array(ca, chunks=(1000, 2), lock=False)
    np.testing.assert_array_equal(x.compute(scheduler="threads"), a)
    np.testing.assert_array_equal(x[5:17, 1:].compute(), a[5:17, 1:])
    np.testing.assert_array_equal(np.asarray(ca), a)


def test_shared_reader_cache_survives_concurrent_eviction(tmp_path, monkeypatch):
    # Regression: two threads reading through one carray (da.from_array with
    # lock=False) raced on the chunk cache: one found a chunk, the other
    # evicted it, the first's move_to_end raised KeyError.  Force that
    # interleaving; with the cache lock the evicting thread has to wait.
    ca = carray(_data(3000), chunklen=1000, rootdir=str(tmp_path / "c"))
    reader = carray(rootdir=ca.rootdir, mode="r")
    eng = reader._engine
    monkeypatch.setattr(chunkcache, "CACHE_BYTES", 1)  # one chunk at most
    found, evicted = threading.Event(), threading.Event()
    first = {}

    class Gate(OrderedDict):
        def get(self, key, default=None):
            value = super().get(key, default)
            if value is not None and threading.current_thread() is first.get("thread"):
                found.set()
                evicted.wait(1.0)  # without the lock, the other thread evicts meanwhile
            return value

        def popitem(self, last=True):
            item = super().popitem(last=last)
            evicted.set()
            return item

    eng._cache._entries = Gate()
    eng._entry(0)  # chunk 0 cached
    errors = []

    def hit():
        first["thread"] = threading.current_thread()
        try:
            eng._entry(0)
        except Exception as exc:  # noqa: BLE001 - the failure under test
            errors.append(exc)

    a = threading.Thread(target=hit)
    a.start()
    assert found.wait(5)
    b = threading.Thread(target=eng._entry, args=(1,))  # evicts chunk 0
    b.start()
    a.join()
    b.join()
    assert errors == []
    np.testing.assert_array_equal(reader[:], ca[:])


# -- tokens and pickling ---------------------------------------------------------------


def test_tokenize_on_disk_reads_no_data(tmp_path, monkeypatch):
    ca = carray(_data(10_000), chunklen=100, rootdir=str(tmp_path / "c"))

    def no_reads(*args, **kwargs):
        raise AssertionError("tokenizing read data")
    monkeypatch.setattr(engine_module.ChunkedArray, "read", no_reads)
    monkeypatch.setattr(engine_module.ChunkedArray, "read_row", no_reads)
    token = dask.base.tokenize(ca)
    assert token == dask.base.tokenize(ca) == dask.base.tokenize(carray(rootdir=ca.rootdir))
    ca.to_dask()  # building the graph reads nothing either


def test_tokenize_on_disk_follows_changes(tmp_path):
    path = str(tmp_path / "c")
    ca = carray(np.arange(1000), chunklen=100, rootdir=path)
    tokens = {dask.base.tokenize(ca)}
    ca.append([1, 2, 3])  # pending: tokenizing flushes
    tokens.add(dask.base.tokenize(ca))
    ca[0] = 7
    tokens.add(dask.base.tokenize(ca))
    # Replaced by another dataset of the same shape and dtype.
    carray(np.arange(1003)[::-1].copy(), chunklen=100, rootdir=path, mode="w")
    tokens.add(dask.base.tokenize(carray(rootdir=path, mode="r")))
    other = str(tmp_path / "d")
    shutil.copytree(path, other)
    tokens.add(dask.base.tokenize(carray(rootdir=other, mode="r")))
    assert len(tokens) == 5


def test_tokenize_in_memory_is_by_content():
    a = _data(5000)
    assert dask.base.tokenize(carray(a, chunklen=100)) == \
        dask.base.tokenize(carray(a.copy(), chunklen=100))
    b = a.copy()
    b[-1] += 1  # in the leftover
    c = a.copy()
    c[0] += 1  # in a full chunk
    tokens = {dask.base.tokenize(carray(x, chunklen=100)) for x in (a, b, c)}
    assert len(tokens) == 3


def test_tokenize_ctable_follows_columns_and_attrs(tmp_path):
    ct = _table(500, rootdir=str(tmp_path / "t"))
    first = dask.base.tokenize(ct)
    assert first == dask.base.tokenize(ctable(rootdir=ct.rootdir, mode="r"))
    ct.attrs["unit"] = "m"
    second = dask.base.tokenize(ct)
    ct["v"][3] = 99.0
    assert len({first, second, dask.base.tokenize(ct)}) == 3


def test_pickled_on_disk_objects_reopen_read_only(tmp_path):
    ca = carray(_data(100_000), rootdir=str(tmp_path / "c"))
    ca.append([1.0])  # pending: pickling flushes it
    blob = pickle.dumps(ca)
    assert len(blob) < 2000  # the path, not the data
    back = pickle.loads(blob)
    assert back.mode == "r" and len(back) == 100_001
    with pytest.raises(ReadOnlyError):
        back.append([2.0])
    ct = _table(300, rootdir=str(tmp_path / "t"))
    again = pickle.loads(pickle.dumps(ct))
    assert again.mode == "r"
    np.testing.assert_array_equal(again[:], ct[:])


# -- ctable -> dask.dataframe ----------------------------------------------------------


@pytest.mark.parametrize("disk", [False, True], ids=["memory", "disk"])
def test_ctable_to_dask_equals_todataframe(tmp_path, disk):
    ct = _table(5000, rootdir=str(tmp_path / "t") if disk else None)
    ddf = ct.to_dask(partition_rows=1024)
    assert ddf.npartitions == 5 and ddf.divisions == (0, 1024, 2048, 3072, 4096, 4999)
    assert_frame_equal(ddf.compute(), _as_dask_gives(ct.todataframe()))
    assert ddf.v.sum().compute() == pytest.approx(ct.cols["v"].sum())
    assert_frame_equal(ct.to_dask(columns="g,v", partition_rows=700).compute(),
                       ct.todataframe(columns=["g", "v"]))
    with dask.config.set({"dataframe.convert-string": False}):  # exactly todataframe()'s
        assert_frame_equal(ct.to_dask().compute(), ct.todataframe())


def test_ctable_to_dask_reads_only_the_columns_used(tmp_path, reads):
    ct = _table(3000, rootdir=str(tmp_path / "t"))
    ddf = ct.to_dask(partition_rows=1024)
    total = ddf["v"].sum().compute(scheduler="sync")
    assert total == pytest.approx(ct.cols["v"].sum())
    assert {name for name, _, _ in reads} == {"v"}
    reads.clear()
    means = ddf.groupby("g")["v"].mean().compute(scheduler="sync")
    assert {name for name, _, _ in reads} == {"g", "v"}
    expect = ct.todataframe().groupby("g")["v"].mean()
    assert_series_equal(means.sort_index(), expect, check_exact=False)


def test_sorted_index_column_gives_divisions_without_splitting_values(tmp_path):
    ct = _table(5000, rootdir=str(tmp_path / "t"), chunklen=128)
    ddf = ct.to_dask(index="t", partition_rows=512)
    assert ddf.known_divisions
    divisions = ddf.divisions
    assert all(a < b for a, b in zip(divisions[:-2], divisions[1:-1]))
    parts = [p.index.compute(scheduler="sync") for p in ddf.partitions]
    for left, right in zip(parts, parts[1:]):
        assert left.max() < right.min()  # a run of equal values is never split
    expect = _as_dask_gives(ct.todataframe().set_index("t"))
    assert_frame_equal(ddf.compute(), expect)
    value = int(ct.cols["t"][2500])
    assert_frame_equal(ddf.loc[value].compute(), expect.loc[[value]])


def test_unsorted_index_column_has_unknown_divisions():
    t = np.arange(2000.0)
    t[1500] = np.nan
    ct = ctable([t, t[::-1].copy()], names=["t", "u"], chunklen=128)
    assert not ct.to_dask(index="t").known_divisions  # NaN breaks the order
    assert not ct.to_dask(index="u").known_divisions
    assert not ctable([np.arange(10)], names=["t"]).to_dask(index="t",
                                                              sorted=False).known_divisions
    with pytest.raises(KeyError):
        ct.to_dask(index="nope")
    with pytest.raises(KeyError):
        ct.to_dask(columns=["nope"])
    with pytest.raises(ValueError):
        ct.to_dask(partition_rows=0)


def test_index_stored_by_fromdataframe_comes_back(tmp_path):
    idx = pd.date_range("2021-03-01", periods=3000, freq="min", tz="Europe/Paris", name="when")
    df = pd.DataFrame({"x": np.arange(3000) % 11,
                       "c": pd.Categorical(np.array(["lo", "hi"])[np.arange(3000) % 2])},
                      index=idx)
    ct = ctable.fromdataframe(df, rootdir=str(tmp_path / "t"), chunklen=256)
    ddf = ct.to_dask(partition_rows=1024)
    assert ddf.known_divisions and ddf.divisions[0] == idx[0] and ddf.divisions[-1] == idx[-1]
    assert_frame_equal(ddf.compute(), df, check_freq=False)
    assert_series_equal(ddf.groupby("c", observed=True).x.sum().compute(),
                        df.groupby("c", observed=True).x.sum())
    plain = ct.to_dask(index=False).compute()
    assert list(plain.columns) == ["when", "x", "c"] and plain.index.equals(pd.RangeIndex(3000))


def test_in_memory_partitions_pickle_only_their_rows():
    ct = _table(20_000, chunklen=1024)
    ddf = ct.to_dask(partition_rows=2048)
    tasks = dict(ddf.__dask_graph__())
    part = next(arg for task in tasks.values() for arg in getattr(task, "args", ())
                if isinstance(arg, bdask.MemoryPart))
    assert len(pickle.dumps(part)) < 2048 * 40 + 2000  # its rows (40 bytes each), no more
    again = pickle.loads(pickle.dumps(pickle.loads(pickle.dumps(part))))
    spec = next(arg for task in tasks.values() for arg in getattr(task, "args", ())
                if isinstance(arg, bdask.TableSpec))
    got = bdask.read_partition(again, spec)
    expect = ct.todataframe().iloc[part.start:part.stop]
    assert_frame_equal(got, expect.set_axis(pd.RangeIndex(part.start, part.stop)))


# -- from_dask ---------------------------------------------------------------------------


def _parent_entries(rootdir):
    return sorted(os.listdir(os.path.dirname(rootdir)))


@pytest.mark.parametrize("scheduler", ["threads", "sync", "processes"])
def test_from_dask_writes_superchunks_in_parallel(tmp_path, scheduler):
    a = _data(100_003)
    path = str(tmp_path / "w")
    ca = bcolzx.from_dask(da.from_array(a, chunks=7_000), path, chunklen=1000,
                          chunks_per_superchunk=8, scheduler=scheduler)
    np.testing.assert_array_equal(ca[:], a)
    assert _parent_entries(path) == ["w"]  # no hidden leftovers
    sizes = read_sizes(path)
    # One committed index generation per file (each file starts at its own).
    assert sizes.shape == (100_003,) and len(sizes.generations) == 13
    assert sorted(os.listdir(os.path.join(path, layout.DATA_DIR))) == \
        sorted(f"__{i}.bin" for i in range(13))
    assert bcolzx.verify(path).ok
    # The zone map is the one a sequential writer would have written.
    ref = carray(a, chunklen=1000)
    np.testing.assert_array_equal(ca._engine.chunk_stats(), ref._engine.chunk_stats())
    assert ca.nbytes == ref.nbytes and ca.cbytes == sizes.cbytes


def test_from_dask_result_is_an_ordinary_dataset(tmp_path):
    path = str(tmp_path / "w")
    ca = bcolzx.to_bcolzx(da.arange(10_000, chunks=3000), path, chunklen=256,
                          chunks_per_superchunk=4)
    ca.append(np.arange(10_000, 10_500))
    ca[7] = -7
    ca.flush()
    expect = np.arange(10_500)
    expect[7] = -7
    np.testing.assert_array_equal(carray(rootdir=path, mode="r")[:], expect)
    assert len(ca["(ca > 100) & (ca < 120)"]) == 19
    assert bcolzx.verify(path).ok


@pytest.mark.parametrize("data", [
    np.arange(12_345) % 3 == 0,
    (np.arange(5_000) * 7).astype("u2"),
    np.arange(4_000).astype("datetime64[s]"),
    np.array([b"x", b"yy", b"zzz"] * 1000),
    np.array(["é", "ab", "xyz!"] * 1000),
    np.arange(9_000, dtype="f4").reshape(3000, 3),
    np.full(5_000, np.nan),
    np.empty(0, "i8"),
], ids=["bool", "u2", "datetime", "bytes", "unicode", "rows", "nan", "empty"])
def test_from_dask_round_trips_dtypes(tmp_path, data):
    path = str(tmp_path / "w")
    ca = bcolzx.from_dask(da.from_array(data, chunks=max(1, len(data) // 3 + 1)), path,
                          chunklen=128, chunks_per_superchunk=3)
    assert ca.dtype == data.dtype and ca.shape == data.shape
    np.testing.assert_array_equal(ca[:], data)
    assert bcolzx.verify(path).ok


def test_from_dask_applies_cparams_and_dflt(tmp_path):
    a = _data(3000) + 0.123456789
    ca = bcolzx.from_dask(da.from_array(a, chunks=1000), str(tmp_path / "w"), chunklen=500,
                          cparams=bcolzx.cparams(clevel=9, cname="zstd", quantize=3), dflt=-1.0)
    ref = carray(a, chunklen=500, cparams=bcolzx.cparams(clevel=9, cname="zstd", quantize=3))
    np.testing.assert_array_equal(ca[:], ref[:])
    assert ca.cparams.cname == "zstd" and ca.cparams.quantize == 3 and ca.dflt == -1.0


def test_failed_task_leaves_nothing_visible(tmp_path):
    path = str(tmp_path / "w")

    def explode(block, block_info=None):
        if block_info[0]["chunk-location"][0] == 3:
            raise RuntimeError("disk on fire")
        time.sleep(0.02)  # the other tasks are still writing when the error arrives
        return block
    x = da.arange(50_000, chunks=5_000).map_blocks(explode, dtype="i8")
    with pytest.raises(RuntimeError, match="disk on fire"):
        bcolzx.from_dask(x, path, chunklen=500, chunks_per_superchunk=2)
    assert os.listdir(tmp_path) == []
    time.sleep(0.3)  # the tasks left running have finished (or failed) by now
    assert os.listdir(tmp_path) == []
    # Replacing (mode 'w') keeps the old dataset until the new one is complete.
    carray(np.arange(5), rootdir=path)
    with pytest.raises(RuntimeError, match="disk on fire"):
        bcolzx.from_dask(x, path, mode="w", chunklen=500, chunks_per_superchunk=2)
    assert os.listdir(tmp_path) == ["w"]
    np.testing.assert_array_equal(carray(rootdir=path, mode="r")[:], np.arange(5))
    ca = bcolzx.from_dask(da.arange(10, chunks=4), path, mode="w")
    np.testing.assert_array_equal(ca[:], np.arange(10))
    assert os.listdir(tmp_path) == ["w"]


def test_from_dask_never_replaces_a_dataset_another_writer_holds(tmp_path):
    path = str(tmp_path / "w")
    carray(np.arange(5), rootdir=path)
    busy = carray(rootdir=path, mode="a")
    busy.append([5])  # unsaved: this writer holds the lock
    with pytest.raises(bcolzx.errors.LockedError):
        bcolzx.from_dask(da.arange(10, chunks=4), path, mode="w")
    assert os.listdir(tmp_path) == ["w"]
    busy.flush()  # idle now: the lock may pass on
    np.testing.assert_array_equal(
        bcolzx.from_dask(da.arange(10, chunks=4), path, mode="w")[:], np.arange(10))


def test_from_dask_refuses_bad_input(tmp_path):
    path = str(tmp_path / "w")
    carray(np.arange(3), rootdir=path)
    with pytest.raises(FileExistsError):
        bcolzx.from_dask(da.arange(5, chunks=2), path)
    np.testing.assert_array_equal(carray(rootdir=path, mode="r")[:], np.arange(3))
    new = str(tmp_path / "n")
    with pytest.raises(ReadOnlyError):
        bcolzx.from_dask(da.arange(5, chunks=2), new, mode="r")
    with pytest.raises(ValueError):
        bcolzx.from_dask(da.arange(5, chunks=2), new, mode="x")
    with pytest.raises(ValueError):
        bcolzx.from_dask(da.arange(5, chunks=2), new, chunks_per_superchunk=0)
    with pytest.raises(TypeError):
        bcolzx.from_dask(np.arange(5), new)
    with pytest.raises(TypeError):
        bcolzx.from_dask(da.from_array(np.array([None, 1], dtype=object), chunks=1), new)
    with pytest.raises(ValueError):
        bcolzx.from_dask(da.from_array(np.float64(1.0)), new)
    x = da.arange(10, chunks=3)
    with pytest.raises(ValueError, match="compute_chunk_sizes"):
        bcolzx.from_dask(x[x > 3], new)
    assert sorted(os.listdir(tmp_path)) == ["w"]


def test_from_dask_dataframe_round_trips_pandas_dtypes(tmp_path):
    n = 5000
    df = pd.DataFrame({
        "i": np.arange(n),
        "s": [f"w{i % 37}" * (i % 5) for i in range(n)],  # widths differ per partition
        "b": pd.Series([b"k" * (i % 4 + 1) for i in range(n)], dtype=object),
        "f": np.linspace(0, 1, n),
        "c": pd.Categorical(np.array(["u", "v", "w"])[np.arange(n) % 3]),
        "t": pd.date_range("2020-01-01", periods=n, freq="h", tz="Europe/Paris"),
        "n": pd.array(np.arange(n) % 9, dtype="Int32"),
    })
    ddf = dd.from_pandas(df, npartitions=7)
    ct = bcolzx.from_dask(ddf, str(tmp_path / "t"), chunklen=256, chunks_per_superchunk=2,
                          strings="fixed")
    assert ct.names == list(df.columns) and ct.cols["s"].dtype == np.dtype("U12")
    assert_frame_equal(ct.todataframe(), ddf.compute())
    assert bcolzx.verify(str(tmp_path / "t")).ok


def test_from_dask_dataframe_index(tmp_path):
    df = pd.DataFrame({"k": np.arange(1000) * 3, "v": np.arange(1000) % 5})
    ddf = dd.from_pandas(df, npartitions=4)
    plain = bcolzx.from_dask(ddf, str(tmp_path / "a"))
    assert plain.names == ["k", "v"]  # an unnamed index is dropped by default
    named = bcolzx.from_dask(ddf.set_index("k"), str(tmp_path / "b"))
    assert named.names == ["k", "v"] and named.attrs["index:columns"] == ["k"]
    assert_frame_equal(named.todataframe(), df.set_index("k"))
    assert named.to_dask().known_divisions
    kept = bcolzx.from_dask(ddf, str(tmp_path / "c"), write_index=True)
    assert kept.names == ["index", "k", "v"]
    assert_frame_equal(kept.todataframe(), df)


def test_from_dask_dataframe_refuses_what_it_cannot_store(tmp_path):
    path = str(tmp_path / "t")
    gaps = dd.from_pandas(pd.DataFrame({"s": ["a", None, "c", "d"]}), npartitions=2)
    with pytest.raises(ValueError, match="missing values"):
        bcolzx.from_dask(gaps, path, strings="fixed")
    cats = dd.from_pandas(pd.DataFrame({"c": list("abcab")}), npartitions=2)
    with pytest.raises(ValueError, match="categorize"):
        bcolzx.from_dask(cats.astype({"c": "category"}), path)
    clash = dd.from_pandas(pd.DataFrame({"k": [1, 2], "v": [3, 4]}).set_index("k"),
                           npartitions=1)
    with pytest.raises(ValueError, match="clash"):
        bcolzx.from_dask(clash.assign(k=1), path)
    ints = pd.DataFrame({"a": np.arange(6)})
    lying = dd.from_pandas(ints, npartitions=2).map_partitions(lambda p: p / 2,
                                                               meta=ints.iloc[:0])
    with pytest.raises(TypeError, match="meta"):  # floats are never cast to its ints
        bcolzx.from_dask(lying, path)
    assert os.listdir(tmp_path) == []


def test_ctable_round_trip_through_dask(tmp_path):
    ct = _table(4000, rootdir=str(tmp_path / "t"))
    back = bcolzx.from_dask(ct.to_dask(partition_rows=1000), str(tmp_path / "back"))
    np.testing.assert_array_equal(back[:], ct[:])


# -- vm='dask' ---------------------------------------------------------------------------


def test_eval_with_the_dask_vm(make, tmp_path):
    # ca, b and empty are found by name in the caller's variables (as eval does)
    a, b = _data(20_000), np.arange(20_000.0)
    ca = make(a, chunklen=1000)  # noqa: F841 - read by name in the expressions
    expect = a * 2 + b
    np.testing.assert_allclose(bcolzx.eval("ca * 2 + b", vm="dask", out_flavor="numpy"),
                               expect)
    out = bcolzx.eval("ca * 2 + b", vm="dask", blen=3000, rootdir=str(tmp_path / "out"))
    assert isinstance(out, carray) and out.rootdir is not None
    np.testing.assert_allclose(out[:], expect)
    assert bcolzx.eval("2 * 3", vm="dask", out_flavor="numpy") == 6
    empty = carray(np.empty(0))  # noqa: F841 - read by name in the expression
    assert bcolzx.eval("empty + 1", vm="dask", out_flavor="numpy").shape == (0,)


def test_where_with_the_dask_vm_skips_blocks_by_zone_map(tmp_path, reads):
    n = 20_000
    ct = ctable([np.arange(n), np.arange(n) % 13], names=["t", "g"],
                rootdir=str(tmp_path / "t"), chunklen=1000)
    expr = "(t >= 4500) & (t < 6200) & (g == 3)"
    with dask.config.set(scheduler="sync"):
        got = list(ct.where(expr, outcols="t", vm="dask"))
        blocks = list(ct.whereblocks(expr, blen=100, vm="dask"))
    assert got == list(ct.where(expr, outcols="t", vm="python"))
    assert sum(len(b) for b in blocks) == len(got) > 0
    assert {start for _, start, _ in reads} == {4000, 5000, 6000}  # only those blocks
    np.testing.assert_array_equal(ct.fetchwhere("g == 12", vm="dask", out_flavor="numpy"),
                                  ct.fetchwhere("g == 12", vm="python", out_flavor="numpy"))
    assert len(ct.eval("t * 2", vm="dask")) == n


def test_dask_vm_as_the_default(monkeypatch):
    with bcolzx.defaults_ctx(vm="dask"):
        a = bcolzx.arange(1000)
        np.testing.assert_array_equal(bcolzx.eval("a + 1", out_flavor="numpy"),
                                      np.arange(1, 1001))
        np.testing.assert_array_equal(a["a > 995"], [996, 997, 998, 999])
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *args: None if name == "dask" else real(name, *args))
    with pytest.raises(ValueError, match="bcolzx\\[dask\\]"):
        bcolzx.defaults.vm = "dask"


def test_importing_bcolzx_imports_no_dask(tmp_path):
    code = "import sys, bcolzx; print(json.dumps(sorted(m for m in ('dask', 'distributed', " \
           "'pandas') if m in sys.modules)))"
    proc = subprocess.run(
        [sys.executable, "-c", "import json; " + code], cwd=str(tmp_path), capture_output=True,
        text=True, check=True,
        env={**os.environ, "PYTHONPATH": os.path.dirname(os.path.dirname(bcolzx.__file__))})
    assert json.loads(proc.stdout) == []


def test_docstring_examples_run(tmp_path, monkeypatch):
    import doctest
    import tempfile

    from bcolzx.interop import _dask_write

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    for module in (bdask, _dask_write):
        result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
        assert result.attempted > 0 and result.failed == 0, module.__name__


# -- on a real cluster -------------------------------------------------------------------


@pytest.fixture(scope="module")
def client():
    """A LocalCluster of two worker processes with one thread each."""
    with distributed.LocalCluster(processes=True, n_workers=2, threads_per_worker=1,
                                  dashboard_address=":0") as cluster:
        with distributed.Client(cluster, set_as_default=False) as c:
            yield c


def _workers(client, fn):
    """Run `fn`; the workers that ran tasks meanwhile."""
    with distributed.get_task_stream(client) as stream:
        result = fn()
    return result, {record["worker"] for record in stream.data}


def test_cluster_reads_and_reduces_a_carray(client, tmp_path):
    a = _data(300_000)
    ca = carray(a, chunklen=4096, rootdir=str(tmp_path / "c"))
    total, workers = _workers(client, lambda: client.compute(
        ca.to_dask(chunks=4096 * 8).sum()).result())
    assert total == pytest.approx(a.sum()) and len(workers) == 2
    # da.from_array pickles the carray itself: the workers reopen it read-only.
    x = da.from_array(ca, chunks=50_000, lock=False)
    assert client.compute(x.max()).result() == a.max()


def test_cluster_groupby_on_a_ctable_and_write_back(client, tmp_path):
    ct = _table(40_000, rootdir=str(tmp_path / "t"), chunklen=1024)
    df = ct.todataframe()
    ddf = ct.to_dask(partition_rows=4096)
    agg, workers = _workers(client, lambda: client.compute(
        ddf.groupby("g").agg({"v": ["sum", "mean", "max"], "t": "count"})).result())
    expect = df.groupby("g").agg({"v": ["sum", "mean", "max"], "t": "count"})
    assert_frame_equal(agg.sort_index(), expect, check_exact=False)
    assert len(workers) == 2
    sizes = client.compute(ddf.groupby("s").size()).result()
    assert sizes.sort_index().to_dict() == df.groupby("s").size().to_dict()
    # Write back from the workers: a filtered frame, and an array.
    hot = ddf[ddf.v > 1.0]
    out = bcolzx.from_dask(hot, str(tmp_path / "hot"), chunklen=512, scheduler=client)
    assert_frame_equal(out.todataframe(), _as_dask_gives(df[df.v > 1.0].reset_index(drop=True)))
    doubled = bcolzx.from_dask(ct.cols["v"].to_dask() * 2, str(tmp_path / "v2"),
                               chunklen=1024, chunks_per_superchunk=4, scheduler=client)
    np.testing.assert_array_equal(doubled[:], df.v.to_numpy() * 2)
    assert bcolzx.verify(str(tmp_path / "v2")).ok


def test_cluster_failed_write_leaves_nothing(client, tmp_path):
    path = str(tmp_path / "w")

    def explode(block, block_info=None):
        if block_info[0]["chunk-location"][0] == 2:
            raise ValueError("worker lost its disk")
        return block
    x = da.arange(40_000, chunks=4_000).map_blocks(explode, dtype="i8")
    with pytest.raises(ValueError, match="lost its disk"):
        bcolzx.from_dask(x, path, chunklen=1000, chunks_per_superchunk=1, scheduler=client)
    assert os.listdir(tmp_path) == []


def test_cluster_dask_vm(client, tmp_path):
    ct = _table(30_000, rootdir=str(tmp_path / "t"), chunklen=1024)
    v = ct.cols["v"]
    with client.as_current():
        (hits, out), workers = _workers(client, lambda: (
            list(ct.where("(g == 2) & (v > 0.5)", outcols="t", vm="dask")),
            bcolzx.eval("v * 10", vm="dask", out_flavor="numpy", user_dict={"v": v})))
    assert hits == list(ct.where("(g == 2) & (v > 0.5)", outcols="t", vm="python"))
    np.testing.assert_allclose(out, v[:] * 10)
    assert len(workers) == 2
