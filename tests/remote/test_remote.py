"""bcolzx datasets on object storage (issue 25), against a local S3-compatible server."""

import os
import subprocess
import sys

import numpy as np
import pytest

import bcolzx
from bcolzx._storage import objects as _objects
from bcolzx.errors import (
    AppendOnlyError,
    BcolzxError,
    ChecksumError,
    CorruptDataError,
    DatasetNotFoundError,
    RemoteError,
)
from tests.conftest import LEGACY
from tests.remote import s3server

#: The bcolzx under test: children run there (their cwd comes first on their path,
#: and must not be this source tree when bcolzx is installed, as in CI).
BCOLZX_PARENT = os.path.dirname(os.path.dirname(bcolzx.__file__))


def _data(n=300_000):
    return np.arange(n, dtype="f8") * 0.5


#: Rows per chunk, and per superchunk object (256 chunks, the format's default).
CL = 512
SC = CL * 256


def _write(url, so, a, **kw):
    kw.setdefault("chunklen", CL)
    return bcolzx.carray(a, rootdir=url, storage_options=so, mode="w", **kw)


class _Requests:
    """Counts the ranged requests and whole-object reads an ObjectStore issues."""

    def __init__(self, monkeypatch):
        self.ranges, self.wholes = [], []
        fetch_ranges, fetch = _objects.FsspecObjects.fetch_ranges, _objects.FsspecObjects.fetch

        def counted_ranges(objs, ranges):
            self.ranges.extend(ranges)
            return fetch_ranges(objs, ranges)

        def counted_fetch(objs, keys):
            self.wholes.extend(keys)
            return fetch(objs, keys)

        monkeypatch.setattr(_objects.FsspecObjects, "fetch_ranges", counted_ranges)
        monkeypatch.setattr(_objects.FsspecObjects, "fetch", counted_fetch)

    def reset(self):
        self.ranges.clear()
        self.wholes.clear()


def test_import_does_not_import_fsspec():
    code = "import sys, bcolzx; assert 'fsspec' not in sys.modules and 's3fs' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=BCOLZX_PARENT)


def test_carray_round_trip(url, so):
    a = _data()
    _write(url, so, a)
    r = bcolzx.open(url, storage_options=so)
    assert len(r) == len(a) and r.dtype == a.dtype
    np.testing.assert_array_equal(r[:], a)
    np.testing.assert_array_equal(r[1000:50_000:7], a[1000:50_000:7])
    idx = np.random.default_rng(1).integers(0, len(a), 500)
    np.testing.assert_array_equal(r[idx], a[idx])
    assert r[len(a) - 1] == a[-1] and r.sum() == a.sum()
    mask = bcolzx.eval("(r > 1000) & (r < 1002)", user_dict={"r": r})
    assert list(r.where(mask)) == [1000.5, 1001.0, 1001.5]


def test_ctable_round_trip_and_query(url, so):
    n = 100_000
    cols = [np.arange(n, dtype="i8"), np.arange(n, dtype="f8") / 3, np.arange(n) % 7 == 0]
    t = bcolzx.ctable(cols, names=["i", "x", "f"], rootdir=url, storage_options=so, mode="w",
                      chunklen=2048)
    t.attrs["unit"] = "m"
    t.flush()
    r = bcolzx.open(url, storage_options=so)
    assert isinstance(r, bcolzx.ctable) and r.names == ["i", "x", "f"] and len(r) == n
    assert r.attrs["unit"] == "m"
    for name, col in zip(r.names, cols):
        np.testing.assert_array_equal(r[name][:], col)
    got = r.where("(i > 500) & (i < 520) & f", outcols=["i"])
    assert [row.i for row in got] == [504, 511, 518]


def test_filesystem_object_and_mapper(s3, url, so):
    a = _data(20_000)
    fs = s3.filesystem()
    path = url[len("s3://"):]
    bcolzx.carray(a, rootdir=path, filesystem=fs, mode="w", chunklen=1000)
    np.testing.assert_array_equal(bcolzx.open(path, filesystem=fs)[:], a)
    np.testing.assert_array_equal(bcolzx.open(fs.get_mapper(path))[:], a)


def test_file_url_is_a_local_directory(tmp_path):
    a = _data(5000)
    bcolzx.carray(a, rootdir=f"file://{tmp_path}/x", mode="w")
    assert (tmp_path / "x" / "meta" / "sizes").is_file()
    np.testing.assert_array_equal(bcolzx.open(f"file://{tmp_path}/x")[:], a)


@pytest.mark.parametrize("name", ["ca_float64_default", "ca_int32_leftover", "ct_mixed",
                                  "ca_2d_float64_Nx3"])
def test_legacy_directories(s3, url, so, name):
    s3.filesystem().put(str(LEGACY / name), url[len("s3://"):], recursive=True)
    local = bcolzx.open(str(LEGACY / name))
    remote = bcolzx.open(url, storage_options=so)
    assert type(remote) is type(local) and len(remote) == len(local)
    np.testing.assert_array_equal(remote[:], local[:])


def test_reads_are_coalesced_and_heads_cached(url, so, monkeypatch):
    a = _data(SC * 4)  # 4 superchunk objects
    _write(url, so, a)
    count = _Requests(monkeypatch)
    r = bcolzx.open(url, storage_options=so)
    assert count.ranges == []  # opening: one batch of the small files
    count.reset()
    lo, hi = SC + CL * 9 + 5, SC + CL * 12 - 5
    np.testing.assert_array_equal(r[lo:hi], a[lo:hi])
    # chunks 9..11 of object 1: its head, then one request for the three chunks
    assert len(count.ranges) == 2, count.ranges
    assert {k for k, _, _ in count.ranges} == {"data/__1.bin"}
    count.reset()
    np.testing.assert_array_equal(r[SC + CL * 13:SC + CL * 14], a[SC + CL * 13:SC + CL * 14])
    assert len(count.ranges) == 1  # the head is cached
    count.reset()
    rows = [SC * 2 + 7, SC * 2 + CL * 5, SC * 2 + CL * 40 + 3]  # chunks 0, 5 and 40 of object 2
    np.testing.assert_array_equal(r[rows], a[rows])
    # its head, then one request: the chunks between are less than MAX_GAP bytes
    assert len(count.ranges) == 2 and count.ranges[1][0] == "data/__2.bin", count.ranges
    count.reset()
    np.testing.assert_array_equal(r[:], a)
    assert len(count.ranges) + len(count.wholes) <= 4 + 1  # one per object (head of 1 cached)


def test_appends_write_new_objects_only(s3, url, so):
    a = _data(SC + CL * 10 + 123)
    _write(url, so, a)
    fs = s3.filesystem()
    root = url[len("s3://"):]
    before = {p: fs.cat_file(p) for p in fs.find(f"{root}/data")}
    reader = bcolzx.open(url, storage_options=so)
    w = bcolzx.open(url, mode="a", storage_options=so)
    extra = np.arange(50_000, dtype="f8")
    w.append(extra)
    w.flush()
    # old objects untouched, new ones beside them
    after = {p: fs.cat_file(p) for p in fs.find(f"{root}/data")}
    assert all(after[p] == data for p, data in before.items())
    assert len(after) > len(before)
    # a reader opened before the commit keeps seeing what it opened
    assert len(reader) == len(a)
    np.testing.assert_array_equal(reader[:], a)
    whole = np.concatenate([a, extra])
    np.testing.assert_array_equal(bcolzx.open(url, storage_options=so)[:], whole)
    w.append(np.ones(10))
    w.flush()
    np.testing.assert_array_equal(bcolzx.open(url, storage_options=so)[-11:],
                                  np.concatenate([extra[-1:], np.ones(10)]))


def test_in_place_writes_refused_and_nothing_lost(url, so):
    a = _data(10_000)
    _write(url, so, a)
    w = bcolzx.open(url, mode="a", storage_options=so)
    for change in (lambda: w.__setitem__(3, 1.0), lambda: w.trim(10)):
        with pytest.raises(AppendOnlyError) as info:
            change()
        assert isinstance(info.value, PermissionError)
        assert url in str(info.value) and "copy" in str(info.value)
    np.testing.assert_array_equal(bcolzx.open(url, storage_options=so)[:], a)


def test_row_deletion_refused_and_nothing_lost(url, so):
    """Deleting rows rewrites stored chunks: refused on object storage, as trim is."""
    a = _data(10_000)
    _write(url, so, a)
    w = bcolzx.open(url, mode="a", storage_options=so)
    for indices in ([0], [len(a) - 1], np.arange(len(a)) % 2 == 0):
        with pytest.raises(AppendOnlyError) as info:
            w.delete(indices)
        assert isinstance(info.value, PermissionError)
        assert url in str(info.value) and "copy" in str(info.value)
    assert len(w) == len(a)
    np.testing.assert_array_equal(bcolzx.open(url, storage_options=so)[:], a)

    n = 5000
    cols = [np.arange(n, dtype="i8"), np.arange(n, dtype="f8") / 3]
    turl = f"{url}-table"
    bcolzx.ctable(cols, names=["i", "x"], rootdir=turl, storage_options=so, mode="w",
                  chunklen=1024).flush()
    t = bcolzx.open(turl, mode="a", storage_options=so)
    for kw in ({"indices": [0, 1]}, {"where": "i >= 4000"}):
        with pytest.raises(AppendOnlyError) as info:
            t.delete(**kw)
        assert isinstance(info.value, PermissionError)
        assert turl in str(info.value) and "copy" in str(info.value)
    with pytest.raises(AppendOnlyError):  # the engine refuses too, under any caller
        t["i"].engine.delete(np.array([0], dtype=np.int64))
    r = bcolzx.open(turl, storage_options=so)
    assert len(r) == n
    for name, col in zip(r.names, cols):
        np.testing.assert_array_equal(r[name][:], col)


def test_missing_dataset(url, so):
    with pytest.raises(DatasetNotFoundError) as info:
        bcolzx.open(url, storage_options=so)
    assert isinstance(info.value, FileNotFoundError)


def test_corrupted_object_names_url(s3, url, so):
    a = _data(CL * 8)
    _write(url, so, a)
    fs = s3.filesystem()
    key = f"{url[len('s3://'):]}/data/__0.bin"
    data = bytearray(fs.cat_file(key))
    data[-100] ^= 0xFF  # inside the last chunk, after the head
    fs.pipe_file(key, bytes(data))
    r = bcolzx.open(url, storage_options=so)
    np.testing.assert_array_equal(r[:CL], a[:CL])  # undamaged chunks still read
    with pytest.raises((ChecksumError, CorruptDataError)) as info:
        r[:]
    assert f"{url}/data/__0.bin" in str(info.value)


def test_missing_and_truncated_objects_name_url(s3, url, so):
    a = _data(SC + CL * 16)
    _write(url, so, a)
    fs = s3.filesystem()
    root = url[len("s3://"):]
    data = fs.cat_file(f"{root}/data/__1.bin")
    fs.pipe_file(f"{root}/data/__1.bin", data[: len(data) // 2])
    fs.rm(f"{root}/data/__0.bin")
    r = bcolzx.open(url, storage_options=so)
    for part in (slice(0, 10), slice(len(a) - 10, len(a))):
        with pytest.raises(CorruptDataError) as info:
            r[part]
        assert f"{url}/data/__" in str(info.value)


def test_unreachable_server_names_url(url, so):
    dead = dict(so, client_kwargs={"endpoint_url": "http://127.0.0.1:9", "region_name": "x"},
                connect_timeout=1, read_timeout=1)
    with pytest.raises(RemoteError) as info:
        bcolzx.open(url, storage_options=dead)
    assert isinstance(info.value, OSError) and isinstance(info.value, BcolzxError)
    assert url in str(info.value)


def test_server_killed_mid_upload_publishes_nothing(tmp_path, monkeypatch):
    """The server dies after the first superchunk object is uploaded: the writer gets a
    RemoteError naming the URL, and nothing is published.  The dead server is a loopback
    proxy in front of moto, so that what moto received can be looked at afterwards."""
    url = "s3://killed-bucket/x"
    dying = s3server.dying_after_first_upload(monkeypatch, "killed-bucket")
    with dying as (server, via_proxy, puts):
        so = server.storage_options()
        with pytest.raises(RemoteError) as info:
            _write(url, via_proxy, _data(SC * 3))
        assert "killed-bucket/x" in str(info.value)
        assert puts and all("meta/sizes" not in keys for keys in puts)
        monkeypatch.undo()
        with pytest.raises(DatasetNotFoundError):
            bcolzx.open(url, storage_options=so)


def test_writer_killed_mid_upload_publishes_nothing(s3, url, so):
    """A power cut of the writer: the objects it uploaded are not a dataset."""
    code = f"""
import os, numpy as np, bcolzx
from bcolzx._storage import objects
put = objects.FsspecObjects.put
def die(objs, items):
    put(objs, items)
    os._exit(9)
objects.FsspecObjects.put = die
bcolzx.carray(np.arange(400_000.), rootdir={url!r}, storage_options={so!r}, mode="w",
              chunklen=512)
"""
    proc = subprocess.run([sys.executable, "-c", code], cwd=BCOLZX_PARENT)
    assert proc.returncode == 9
    assert s3.filesystem().find(url[len("s3://"):])  # it did upload something
    with pytest.raises(DatasetNotFoundError):
        bcolzx.open(url, storage_options=so)


def test_http_url_reads(s3, url, so):
    """Any fsspec filesystem: the same dataset read over plain HTTP (moto serves the
    bucket's objects at http://host:port/bucket/key)."""
    pytest.importorskip("aiohttp")
    a = _data(SC + 1000)
    _write(url, so, a)
    http = f"{s3.endpoint}/{url[len('s3://'):]}"
    with pytest.raises(RemoteError) as info:  # the objects are private: HTTP 403
        bcolzx.open(http, mode="r")
    assert "403" in str(info.value) and http in str(info.value)
    fs = s3.filesystem()
    for path in fs.find(url[len("s3://"):]):
        fs.chmod(path, acl="public-read")
    r = bcolzx.open(http, mode="r")
    np.testing.assert_array_equal(r[:], a)
    np.testing.assert_array_equal(r[[5, SC + 999]], a[[5, SC + 999]])
    with pytest.raises(DatasetNotFoundError):
        bcolzx.open(f"{http}-missing", mode="r")


def test_synchronous_filesystem_memory(monkeypatch):
    """A filesystem without an asynchronous implementation (fsspec's memory://): its
    requests go out on the shared pool."""
    fsspec = pytest.importorskip("fsspec")
    a = _data(SC * 2 + 5)
    url = "memory://bcolzx-sync/x"
    fsspec.filesystem("memory").rm("/bcolzx-sync", recursive=True) \
        if fsspec.filesystem("memory").exists("/bcolzx-sync") else None
    bcolzx.carray(a, rootdir=url, mode="w", chunklen=CL)
    r = bcolzx.open(url, mode="r")
    np.testing.assert_array_equal(r[:], a)
    w = bcolzx.open(url, mode="a")
    w.append(a[:10])
    w.flush()
    np.testing.assert_array_equal(bcolzx.open(url)[-10:], a[:10])


def test_timeout_is_a_remote_timeout_error(url, so):
    """A server that accepts connections and never answers."""
    import socket

    from bcolzx.errors import RemoteTimeoutError

    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)
        port = silent.getsockname()[1]
        opts = dict(so, client_kwargs={"endpoint_url": f"http://127.0.0.1:{port}",
                                       "region_name": "eu-west-1"},
                    config_kwargs={"connect_timeout": 1, "read_timeout": 1,
                                   "retries": {"max_attempts": 1}})
        with pytest.raises(RemoteTimeoutError) as info:
            bcolzx.open(url, storage_options=opts)
    assert isinstance(info.value, TimeoutError) and url in str(info.value)


def test_what_the_refusal_says_to_do_works(tmp_path, url, so):
    """AppendOnlyError says: copy to a local directory, change it there, write it back."""
    a = _data(SC + 10)
    _write(url, so, a)
    local = bcolzx.open(url, storage_options=so).copy(rootdir=str(tmp_path / "l"))
    local[0] = -1.0
    local.trim(5)
    local.flush()
    back = local.copy(rootdir=f"{url}-fixed", storage_options=so)
    want = np.concatenate([[-1.0], a[1:-5]])
    np.testing.assert_array_equal(bcolzx.open(f"{url}-fixed", storage_options=so)[:], want)
    assert len(back) == len(want)


def test_ctable_copy_and_fromiter_publish_once(url, so):
    t = bcolzx.ctable([np.arange(5000), np.arange(5000) * 2.0], names=["a", "b"])
    t.copy(rootdir=url, storage_options=so)
    r = bcolzx.open(url, storage_options=so)
    np.testing.assert_array_equal(r["b"][:], np.arange(5000) * 2.0)
    f = bcolzx.fromiter(iter(range(3000)), dtype="i8", count=3000, rootdir=f"{url}-it",
                        storage_options=so, mode="w", chunklen=CL)
    assert len(f) == 3000
    np.testing.assert_array_equal(bcolzx.open(f"{url}-it", storage_options=so)[:],
                                  np.arange(3000))


def test_mode_w_never_empties_a_whole_bucket(s3, so):
    s3.make_bucket("bcolzx-whole")
    fs = s3.filesystem()
    fs.pipe("bcolzx-whole/precious.csv", b"a,b\n1,2\n")
    with pytest.raises(bcolzx.errors.InvalidParameterError, match="whole bucket"):
        bcolzx.carray(np.arange(10), rootdir="s3://bcolzx-whole", storage_options=so, mode="w")
    fs.invalidate_cache()
    assert fs.cat("bcolzx-whole/precious.csv") == b"a,b\n1,2\n"
    # a prefix inside that bucket is a dataset's place as any other
    c = bcolzx.carray(np.arange(10), rootdir="s3://bcolzx-whole/data", storage_options=so,
                      mode="w")
    np.testing.assert_array_equal(bcolzx.open("s3://bcolzx-whole/data",
                                              storage_options=so)[:], np.arange(10))
    del c
