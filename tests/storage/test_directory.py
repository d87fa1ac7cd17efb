"""The directory store: layout, durability order, damage detection, resources."""

import gc
import json
import os
import shutil

import numpy as np
import pytest

from bcolzx._format.meta import Storage
from bcolzx._storage import ChunkedArray, DirectoryStore, pins
from bcolzx.errors import (
    BcolzxError,
    ChecksumError,
    CorruptDataError,
    ReadOnlyError,
    TruncatedDataError,
    UnsupportedFormatError,
)


def _data(n, seed=0):
    return np.cumsum(np.random.default_rng(seed).normal(size=n))


def _open(rootdir, readonly=False):
    return ChunkedArray(DirectoryStore.open(rootdir, readonly=readonly))


@pytest.fixture()
def dataset(disk):
    """A flushed dataset of 1050 float64 rows: chunks of 100, 4 per superchunk."""
    arr = disk.new(chunklen=100, k=4)
    data = _data(1050)
    arr.append(data)
    arr.flush()
    return disk.rootdir, data


def test_layout_is_legacy_meta_plus_superchunk_files(dataset):
    rootdir, data = dataset
    assert sorted(os.listdir(rootdir)) == ["__attrs__", "data", "meta"]
    assert sorted(os.listdir(os.path.join(rootdir, "data"))) == ["__0.bin", "__1.bin", "__2.bin"]
    sizes = json.load(open(os.path.join(rootdir, "meta", "sizes")))
    assert sizes["shape"] == [1050] and sizes["nbytes"] == 8400
    assert 0 < sizes["cbytes"] <= 8400 + 11 * 32
    storage = json.load(open(os.path.join(rootdir, "meta", "storage")))
    assert storage["dtype"] == "float64" and storage["chunklen"] == 100
    assert storage["format"] == "bcolzx" and storage["format_version"] == 1
    assert storage["chunks_per_superchunk"] == 4 and storage["checksum"] == "crc32c"
    attrs = json.load(open(os.path.join(rootdir, "__attrs__")))
    # No attributes; the seal of docs/format/README.md §2c, naming this dataset.
    assert set(attrs) == {"__uid__", "__crc32c__"}
    assert attrs["__uid__"] == storage["__uid__"] == sizes["__uid__"]


def test_appends_are_flushed_at_garbage_collection_and_on_with_exit(dataset):
    rootdir, data = dataset
    arr = _open(rootdir)
    more = _data(500, seed=9)
    arr.append(more)  # flush() forgotten
    del arr
    again = _open(rootdir)
    np.testing.assert_array_equal(again.read(0, 1550), np.r_[data, more])
    with _open(rootdir) as arr:
        arr.append(more[:7])
    assert len(_open(rootdir)) == 1557


def test_close_without_flush_drops_unflushed_rows(dataset):
    rootdir, data = dataset
    arr = _open(rootdir)
    arr.append(_data(500, seed=9))
    arr.close(flush=False)
    with pytest.raises(ValueError, match="closed"):
        arr.append(np.zeros(1))
    again = _open(rootdir)
    assert len(again) == 1050
    np.testing.assert_array_equal(again.read(0, 1050), data)


def test_read_only_refuses_every_write(dataset):
    rootdir, _ = dataset
    arr = _open(rootdir, readonly=True)
    for call in (lambda: arr.append(np.zeros(3)), lambda: arr.write(0, np.zeros(1)),
                 lambda: arr.resize(10), lambda: arr.compact()):
        with pytest.raises(ReadOnlyError):
            call()
    assert issubclass(ReadOnlyError, PermissionError)


def test_rewrites_leave_dead_space_that_compact_reclaims(dataset):
    rootdir, data = dataset
    arr = _open(rootdir)
    for _ in range(3):
        arr.write(0, data[:1050] + 1)
        arr.flush()
    before = sum(os.path.getsize(p) for p in arr.store.files())
    reclaimed = arr.compact()
    after = sum(os.path.getsize(p) for p in arr.store.files())
    assert reclaimed > 0 and after == before - reclaimed
    np.testing.assert_array_equal(_open(rootdir).read(0, 1050), data + 1)
    arr = _open(rootdir)
    arr.append(np.arange(7.0))
    arr.flush()
    np.testing.assert_array_equal(_open(rootdir).read(1050, 1057), np.arange(7.0))


def test_shrinking_removes_superchunk_files(dataset):
    rootdir, data = dataset
    arr = _open(rootdir)
    arr.resize(350)
    assert sorted(os.listdir(os.path.join(rootdir, "data"))) == ["__0.bin"]
    np.testing.assert_array_equal(_open(rootdir).read(0, 350), data[:350])


def test_kept_descriptors_stay_within_the_budget_and_go_with_their_datasets(dataset,
                                                                            monkeypatch):
    """Loaded superchunk files keep their descriptor (a reader's snapshot reads the
    files it loaded, pins.py), at most pins.BUDGET for the whole process; the
    datasets' objects gone, none is left."""
    rootdir, _ = dataset
    monkeypatch.setattr(pins, "BUDGET", 8)
    gc.collect()
    fds = len(os.listdir("/proc/self/fd"))
    arrays = [_open(rootdir) for _ in range(20)]
    for arr in arrays:
        arr.read(0, 1050)
        arr.append(np.ones(10))
        arr.flush()
        assert pins.kept() <= 8 + 1  # the budget, and the file a writer holds dirty
        assert len(os.listdir("/proc/self/fd")) <= fds + 8 + 1
    np.testing.assert_array_equal(arrays[0].read(0, 1050), _open(rootdir).read(0, 1050))
    del arr, arrays
    gc.collect()
    assert len(os.listdir("/proc/self/fd")) == fds


def test_reading_one_row_opens_one_data_file(dataset, monkeypatch):
    rootdir, data = dataset
    arr = _open(rootdir)
    opened = []
    real_open = os.open
    monkeypatch.setattr(os, "open", lambda p, *a, **k: (opened.append(p), real_open(p, *a, **k))[1])
    assert arr.read_row(777) == data[777]
    # Header and index, then the chunk; once its index is cached, only the chunk.
    assert {os.path.basename(p) for p in opened} == {"__1.bin"}
    opened.clear()
    assert arr.read_row(450) == data[450]  # another chunk of the same file
    assert opened == []  # through the descriptor the loaded file keeps (pins.py)
    opened.clear()
    assert arr.read_row(701) == data[701]  # chunk 7 again: from the chunk cache
    assert opened == []


def test_file_count_is_chunks_over_superchunk_size(tmp_path):
    storage = Storage(dtype="f8", chunklen=10, chunks_per_superchunk=8)
    arr = ChunkedArray(DirectoryStore.create(str(tmp_path / "d"), storage))
    arr.append(np.arange(10 * 8 * 5 + 3, dtype="f8"))
    arr.flush()
    assert len(os.listdir(tmp_path / "d" / "data")) == 6  # ceil(41 chunks / 8)


# --- damage --------------------------------------------------------------------

def _read_all(rootdir):
    arr = _open(rootdir, readonly=True)
    return arr.read(0, len(arr))


def _flip_chunk_byte(rootdir, superchunk, slot, bit):
    """Flip one bit in the middle of a stored chunk; returns its file's path."""
    path = os.path.join(rootdir, "data", f"__{superchunk}.bin")
    off, nb = _open(rootdir).store._file(superchunk).index.entry(slot)
    with open(path, "r+b") as f:
        f.seek(off + nb // 2)
        b = f.read(1)
        f.seek(off + nb // 2)
        f.write(bytes([b[0] ^ bit]))
    return path


def test_flipped_chunk_byte_raises_checksum_error_naming_file_and_chunk(dataset):
    rootdir, _ = dataset
    path = _flip_chunk_byte(rootdir, 1, 2, 0x10)  # chunk 6
    with pytest.raises(ChecksumError) as info:
        _read_all(rootdir)
    assert info.value.path == path and info.value.chunk == 6


def test_every_single_byte_flip_of_a_superchunk_file_is_detected_or_harmless(dataset):
    rootdir, data = dataset
    path = os.path.join(rootdir, "data", "__2.bin")  # chunks 8, 9 and the leftover
    original = open(path, "rb").read()
    detected = harmless = 0
    for pos in range(len(original)):
        damaged = bytearray(original)
        damaged[pos] ^= 0x5A
        with open(path, "wb") as f:
            f.write(damaged)
        try:
            got = _read_all(rootdir)
        except BcolzxError:
            detected += 1
            continue
        assert got.tobytes() == data.tobytes(), f"wrong values after flipping byte {pos}"
        harmless += 1
    with open(path, "wb") as f:
        f.write(original)
    assert detected > len(original) // 2
    np.testing.assert_array_equal(_read_all(rootdir), data)


@pytest.mark.parametrize("cut", [0, 10, 40, 300, -5, -1])
def test_truncated_superchunk_file_raises(dataset, cut):
    rootdir, _ = dataset
    path = os.path.join(rootdir, "data", "__0.bin")
    raw = open(path, "rb").read()
    with open(path, "wb") as f:
        f.write(raw[:cut] if cut >= 0 else raw[:len(raw) + cut])
    with pytest.raises(CorruptDataError):
        _read_all(rootdir)


def test_missing_superchunk_file_raises_truncated(dataset):
    rootdir, _ = dataset
    os.unlink(os.path.join(rootdir, "data", "__1.bin"))
    with pytest.raises(TruncatedDataError):
        _read_all(rootdir)


def test_swapped_superchunk_files_are_detected(dataset):
    rootdir, _ = dataset
    d = os.path.join(rootdir, "data")
    os.rename(os.path.join(d, "__0.bin"), os.path.join(d, "tmp"))
    os.rename(os.path.join(d, "__1.bin"), os.path.join(d, "__0.bin"))
    os.rename(os.path.join(d, "tmp"), os.path.join(d, "__1.bin"))
    with pytest.raises(CorruptDataError, match="superchunk_number"):
        _read_all(rootdir)


def test_stale_index_copy_is_never_used_for_committed_data(dataset):
    """Damage to the current index copy never falls back to the older values of the
    other copy: one damaged byte is corrected through the copy's crc, heavier damage
    loses chunks (they raise), never reads them old (docs/format/superchunk.md §6)."""
    rootdir, data = dataset
    arr = _open(rootdir)
    arr.write(0, data[:400] * 2)  # superchunk 0 rewritten: its other copy holds old values
    arr.flush()
    sc = arr.store._file(0)
    from bcolzx._ext import index as ix
    base = ix.index_offset(4, sc._current)
    path = os.path.join(rootdir, "data", "__0.bin")
    with open(path, "r+b") as f:
        f.seek(base + 20)
        f.write(b"\xff")
    np.testing.assert_array_equal(_read_all(rootdir)[:400], data[:400] * 2)
    with open(path, "r+b") as f:  # several bytes: entries of slots 0 and 1
        f.seek(base + 16)
        f.write(bytes(range(1, 25)))
    reader = _open(rootdir, readonly=True)
    lost = 0
    for c in range(4):
        try:
            got = reader.read(c * 100, (c + 1) * 100)
        except CorruptDataError:
            lost += 1
            continue
        np.testing.assert_array_equal(got, data[c * 100:(c + 1) * 100] * 2)
    assert lost >= 1


@pytest.mark.parametrize("name", ["sizes", "storage"])
def test_damaged_or_missing_metadata(dataset, name):
    rootdir, _ = dataset
    path = os.path.join(rootdir, "meta", name)
    with open(path, "w") as f:
        f.write('{"shape": [10')
    with pytest.raises(CorruptDataError):
        _read_all(rootdir)
    os.unlink(path)
    with pytest.raises(FileNotFoundError):
        _read_all(rootdir)


def test_newer_format_version_is_refused(dataset):
    rootdir, _ = dataset
    path = os.path.join(rootdir, "meta", "storage")
    meta = json.load(open(path))
    meta["format_version"] = 4  # this reader knows 1, 2 (variable-length items) and 3 (parts)
    json.dump(meta, open(path, "w"))
    with pytest.raises(UnsupportedFormatError):
        _read_all(rootdir)


def test_index_shorter_than_metadata_raises_truncated(dataset, tmp_path):
    rootdir, _ = dataset
    old = str(tmp_path / "old")
    shutil.copytree(rootdir, old)
    arr = _open(old)
    arr.resize(100)  # an older, shorter state of the files ...
    sizes = os.path.join(rootdir, "meta", "sizes")
    shutil.copy(sizes, os.path.join(old, "meta", "sizes"))  # ... with the longer metadata
    with pytest.raises(CorruptDataError):
        _read_all(old)


def test_creating_over_a_non_empty_directory_is_refused(dataset):
    rootdir, _ = dataset
    with pytest.raises(FileExistsError):
        DirectoryStore.create(rootdir, Storage(dtype="f8", chunklen=10))


@pytest.mark.parametrize("nthreads", [1, 2])
def test_map_chunks_raises_naming_the_damaged_chunk(dataset, nthreads):
    rootdir, _ = dataset
    path = _flip_chunk_byte(rootdir, 1, 1, 0x01)  # chunk 5
    arr = _open(rootdir, readonly=True)
    arr.set_nthreads(nthreads)
    with pytest.raises(ChecksumError) as info:
        arr.map_chunks(np.sum)
    assert info.value.path == path and info.value.chunk == 5


def test_a_new_carray_writes_each_metadata_file_once_and_syncs_before_its_commit(
        tmp_path, monkeypatch):
    """A carray created with its rows writes meta/storage and meta/sizes once (no
    empty commit first), and everything the first meta/sizes relies on is fsynced
    before it is renamed into place; the dataset directory in its parent too."""
    import bcolzx

    events = []
    real_replace, real_fsync = os.replace, os.fsync

    def replace(src, dst, **kw):
        events.append(("rename", os.path.basename(dst)))
        return real_replace(src, dst, **kw)

    def fsync(fd):
        events.append(("fsync", os.readlink(f"/proc/self/fd/{fd}")
                       if os.path.exists("/proc/self/fd") else fd))
        return real_fsync(fd)

    monkeypatch.setattr(os, "replace", replace)
    monkeypatch.setattr(os, "fsync", fsync)
    rootdir = str(tmp_path / "sub" / "c")
    bcolzx.carray(np.arange(300_000), rootdir=rootdir, mode="w", chunklen=100_000)
    renames = [name for kind, name in events if kind == "rename"]
    assert renames.count("sizes") == 1 and renames.count("storage") == 1
    if not os.path.exists("/proc/self/fd"):
        return
    at = events.index(("rename", "sizes"))
    synced = {what for kind, what in events[:at] if kind == "fsync"}
    for path in (str(tmp_path), str(tmp_path / "sub"), rootdir, f"{rootdir}/meta",
                 f"{rootdir}/data", f"{rootdir}/data/__0.bin", f"{rootdir}/meta/storage",
                 f"{rootdir}/meta/zonemap", f"{rootdir}/__attrs__"):
        assert path in synced, (path, events)
    assert ("fsync", f"{rootdir}/meta") in events[at:]
    np.testing.assert_array_equal(bcolzx.open(rootdir, mode="r")[:], np.arange(300_000))


@pytest.mark.parametrize("nthreads", [1, 2])
def test_a_new_carray_stores_its_last_short_chunk_as_a_flush_would(tmp_path, nthreads):
    """The constructor encodes the rows after the last full chunk together with the
    full chunks: the chunks, their sizes and the zone map are those of an append
    followed by a flush."""
    import bcolzx
    from bcolzx._format import zonemap

    data = np.concatenate([np.linspace(0, 1, 2500), np.zeros(1000), np.arange(1234.0)])
    with _nthreads(nthreads):
        made = bcolzx.carray(data, rootdir=str(tmp_path / "made"), mode="w", chunklen=1000)
        grown = bcolzx.carray(np.empty(0), rootdir=str(tmp_path / "grown"), mode="w",
                              chunklen=1000)
        grown.append(data)
        grown.flush()
    a, b = made.engine.store, grown.engine.store
    assert a.nchunks == b.nchunks == 5
    assert a.get(0, a.nchunks) == b.get(0, b.nchunks)
    assert a.cbytes == b.cbytes and made.cbytes == grown.cbytes
    stats = [zonemap.load(str(tmp_path / name), np.dtype(float), c.engine.store.storage)
             for name, c in (("made", made), ("grown", grown))]
    assert stats[0][0] is not None
    np.testing.assert_array_equal(stats[0][0], stats[1][0])
    np.testing.assert_array_equal(stats[0][1], stats[1][1])
    np.testing.assert_array_equal(bcolzx.open(str(tmp_path / "made"), mode="r")[:], data)


@pytest.mark.parametrize("nthreads", [1, 2])
def test_a_new_ctable_in_memory_stores_its_columns_as_append_and_flush_would(nthreads):
    """A new ctable's columns (in memory too) encode their last short chunk with the
    full ones: the same chunks, sizes and values as columns appended then flushed."""
    import bcolzx

    cols = [np.arange(3234, dtype=np.int64), np.linspace(0, 1, 3234),
            np.concatenate([np.zeros(2000, np.int32), np.arange(1234, dtype=np.int32)])]
    with _nthreads(nthreads):
        made = bcolzx.ctable(cols, names=["a", "b", "c"], chunklen=1000)
        grown = []
        for data in cols:
            col = bcolzx.carray(data[:0], chunklen=1000)
            col.append(data)
            col.flush()
            grown.append(col)
    for name, col, data in zip(["a", "b", "c"], grown, cols):
        a, b = made[name].engine.store, col.engine.store
        assert a.nchunks == b.nchunks == 4, name
        assert a.get(0, a.nchunks) == b.get(0, b.nchunks), name
        assert made[name].cbytes == col.cbytes, name
        np.testing.assert_array_equal(made[name][:], data)
        assert made[name].leftover_elements == col.leftover_elements == 234


def _nthreads(n):
    import contextlib

    import bcolzx

    @contextlib.contextmanager
    def ctx():
        old = bcolzx.defaults.nthreads
        bcolzx.set_nthreads(n)
        try:
            yield
        finally:
            bcolzx.set_nthreads(old)
    return ctx()
