"""Exports to other formats at URLs from Python (issue 25): ``ct.to_parquet(url,
storage_options=...)`` and the other exporters, against the local S3-compatible server.

Written locally, then uploaded: nothing is at the URL until the export is complete, a
failure (the exporter's, or the server dying mid-upload) publishes nothing, and what
cannot be done on object storage (changing an object in place, replacing a Zarr store)
raises AppendOnlyError saying what to do.  ``bcolzx export`` goes through these same
functions."""

import json

import numpy as np
import pytest

import bcolzx
from bcolzx.errors import AppendOnlyError, RemoteError
from bcolzx.interop import npy as _npy
from tests.remote import s3server
from tests.remote.test_transfer import _cli

N = 30_000


def _table():
    t = bcolzx.ctable([np.arange(N), np.arange(N) * 0.5], names=["i", "x"], chunklen=4096)
    t.attrs["unit"] = "m"
    return t


def _array():
    return bcolzx.carray(np.arange(N, dtype="f8") * 0.25, chunklen=4096)


def _key(url):
    return url[len("s3://"):]


def _download(s3, url, tmp_path, name):
    """The file or store at `url`, copied to a local path."""
    local = tmp_path / name
    s3.filesystem().get(_key(url), str(local), recursive=True)
    return str(local)


def _write_npy(obj, url, **kw):
    _npy.to_npy(obj, url, **kw)


def _write_b2frame(obj, url, **kw):
    pytest.importorskip("blosc2")
    obj.to_b2frame(url, **kw)


def _write_zarr(obj, url, **kw):
    pytest.importorskip("zarr")
    obj.to_zarr(url, **kw)


def _write_hdf5(obj, url, **kw):
    pytest.importorskip("h5py" if isinstance(obj, bcolzx.carray) else "tables")
    obj.tohdf5(url, **kw)


def _write_parquet(obj, url, **kw):
    pytest.importorskip("pyarrow")
    obj.to_parquet(url, **kw)


def _read_npy(path):
    return _npy.from_npy(path)


def _read_b2frame(path):
    return bcolzx.from_b2frame(path)


def _read_zarr(path):
    return bcolzx.from_zarr(path)


def _read_hdf5_array(path):
    return bcolzx.fromhdf5(path, "/carray")


def _read_hdf5_table(path):
    return bcolzx.ctable.fromhdf5(path, "/ctable")


def _read_parquet(path):
    return bcolzx.from_parquet(path)


#: (id, make the data, write it to a URL, its extension, read the downloaded copy)
CASES = [
    ("npy-carray", _array, _write_npy, ".npy", _read_npy),
    ("npy-ctable", _table, _write_npy, ".npy", _read_npy),
    ("b2frame", _array, _write_b2frame, ".b2frame", _read_b2frame),
    ("zarr-carray", _array, _write_zarr, ".zarr", _read_zarr),
    ("zarr-ctable", _table, _write_zarr, ".zarr", _read_zarr),
    ("hdf5-carray", _array, _write_hdf5, ".h5", _read_hdf5_array),
    ("hdf5-ctable", _table, _write_hdf5, ".h5", _read_hdf5_table),
    ("parquet", _table, _write_parquet, ".parquet", _read_parquet),
]


def _same(got, want):
    if isinstance(want, bcolzx.ctable):
        assert list(got.names)[:len(want.names)] == want.names
        for name in want.names:
            np.testing.assert_array_equal(got[name][:], want[name][:])
    else:
        np.testing.assert_array_equal(got[:], want[:])


@pytest.mark.parametrize("make, write, ext, read", [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_export_to_url_published_when_complete(s3, url, so, tmp_path, make, write, ext, read):
    """Every exporter takes a URL and storage_options; while it writes, nothing is at
    the URL; then the whole export is, and reads back as the source."""
    obj = make()
    dest = f"{url}/out{ext}"
    seen = []

    def progress(nbytes):
        seen.append(s3.filesystem().exists(_key(dest)))

    write(obj, dest, storage_options=so, progress=progress)
    assert seen and not any(seen)  # written block by block, and none of it visible
    _same(read(_download(s3, dest, tmp_path, f"copy{ext}")), obj)


def test_zarr_export_returns_the_published_node(s3, url, so):
    zarr = pytest.importorskip("zarr")
    t = _table()
    group = t.to_zarr(f"{url}/t.zarr", storage_options=so, chunks=1000)
    assert isinstance(group, zarr.Group) and group.read_only
    np.testing.assert_array_equal(group["x"][:], t["x"][:])
    assert bcolzx.from_zarr(group).names == ["i", "x"]


def test_modes_on_object_storage(s3, url, so, tmp_path):
    """'x' refuses what is there; 'w' replaces a file, but not a Zarr store; HDF5's 'a'
    and 'r+' never change an object in place: each refusal changes nothing."""
    pytest.importorskip("pyarrow")
    pytest.importorskip("zarr")
    pytest.importorskip("tables")
    t = _table()
    fs = s3.filesystem()
    dest = f"{url}/t.parquet"
    t.to_parquet(dest, storage_options=so, mode="x")
    before = fs.cat_file(_key(dest))
    with pytest.raises(FileExistsError) as info:
        t.to_parquet(dest, storage_options=so, mode="x", columns=["i"])
    assert dest in str(info.value)
    assert fs.cat_file(_key(dest)) == before
    t.to_parquet(dest, storage_options=so, columns=["i"])  # 'w': replaced
    assert bcolzx.from_parquet(_download(s3, dest, tmp_path, "a.parquet")).names == ["i"]

    store = f"{url}/t.zarr"
    t.to_zarr(store, storage_options=so)
    keys = sorted(fs.find(_key(store)))
    with pytest.raises(AppendOnlyError) as info:
        t.to_zarr(store, storage_options=so, mode="w")
    assert isinstance(info.value, PermissionError)
    assert store in str(info.value) and "delete it first" in str(info.value)
    with pytest.raises(FileExistsError):
        t.to_zarr(store, storage_options=so, mode="x")
    assert sorted(fs.find(_key(store))) == keys

    h5 = f"{url}/t.h5"
    t.tohdf5(h5, "/a", mode="a", storage_options=so)  # nothing there: written
    before = fs.cat_file(_key(h5))
    for mode in ("a", "r+"):
        with pytest.raises(AppendOnlyError) as info:
            t.tohdf5(h5, "/b", mode=mode, storage_options=so)
        assert "mode='w'" in str(info.value) and h5 in str(info.value)
    assert fs.cat_file(_key(h5)) == before
    with pytest.raises(FileNotFoundError):
        t.tohdf5(f"{url}/none.h5", "/b", mode="r+", storage_options=so)
    assert not fs.exists(f"{_key(url)}/none.h5")


def test_a_failed_export_publishes_nothing(s3, url, so):
    """The exporter fails half-way: nothing appears at the URL, and a file that was
    there stays as it was."""
    pytest.importorskip("pyarrow")
    t = _table()
    fs = s3.filesystem()

    def failing(nbytes):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        t.to_parquet(f"{url}/new.parquet", storage_options=so, progress=failing)
    assert not fs.exists(f"{_key(url)}/new.parquet")
    fs.pipe_file(f"{_key(url)}/old.npy", b"the old one")
    with pytest.raises(KeyboardInterrupt):
        _npy.to_npy(t, f"{url}/old.npy", storage_options=so, progress=failing)
    assert fs.cat_file(f"{_key(url)}/old.npy") == b"the old one"
    with pytest.raises(KeyboardInterrupt):
        t.cols["x"].to_zarr(f"{url}/new.zarr", storage_options=so, progress=failing)
    assert not fs.find(f"{_key(url)}/new.zarr")


def _big_table(n=600_000):
    """A table whose Parquet file is a few megabytes (random floats hardly compress)."""
    rng = np.random.default_rng(1)
    return bcolzx.ctable([np.arange(n), rng.random(n)], names=["i", "x"])


def test_server_dying_mid_upload_of_a_file_publishes_nothing(tmp_path):
    """The server goes away in the middle of the object's upload: RemoteError naming the
    URL, and the server holds the old object, unchanged."""
    pytest.importorskip("pyarrow")
    t = _big_table()
    local = tmp_path / "t.parquet"
    t.to_parquet(str(local))
    assert local.stat().st_size > 3 << 20
    dest = "s3://dying-file/t.parquet"
    with s3server.dying_mid_upload("dying-file", budget=1 << 20) as (server, via_proxy):
        server.filesystem().pipe_file("dying-file/t.parquet", b"the old one")
        with pytest.raises(RemoteError) as info:
            t.to_parquet(dest, storage_options=via_proxy)
        assert dest in str(info.value)
        assert server.filesystem().cat_file("dying-file/t.parquet") == b"the old one"


def test_server_dying_mid_upload_of_a_store_publishes_nothing():
    """The server goes away while a Zarr store's chunks go up: its zarr.json documents
    were never sent, so no reader finds a store (nor an array) at the URL."""
    zarr = pytest.importorskip("zarr")
    t = _big_table()
    dest = "s3://dying-store/t.zarr"
    with s3server.dying_mid_upload("dying-store", budget=1 << 20) as (server, via_proxy):
        with pytest.raises(RemoteError) as info:
            t.to_zarr(dest, storage_options=via_proxy, chunks=50_000)
        assert dest in str(info.value)
        found = server.filesystem().find("dying-store")
        assert not [p for p in found if p.endswith("zarr.json")]
        store = zarr.storage.FsspecStore.from_url(dest, storage_options=server.storage_options(),
                                                  read_only=True)
        with pytest.raises(FileNotFoundError):
            zarr.open(store, mode="r")


def test_http_urls_are_refused_before_writing():
    pytest.importorskip("aiohttp")
    calls = []
    with pytest.raises(RemoteError) as info:
        _npy.to_npy(_array(), "http://127.0.0.1:9/a.npy", progress=calls.append)
    assert "http://127.0.0.1:9/a.npy" in str(info.value) and "s3://" in str(info.value)
    assert calls == []


def test_local_paths_and_file_urls(tmp_path, so):
    pytest.importorskip("pyarrow")
    t = _table()
    with pytest.raises(ValueError, match="URL"):
        t.to_parquet(str(tmp_path / "a.parquet"), storage_options=so)
    assert not (tmp_path / "a.parquet").exists()
    t.to_parquet(f"file://{tmp_path / 'b.parquet'}")
    _same(bcolzx.from_parquet(str(tmp_path / "b.parquet")), t)
    _npy.to_npy(t, str(tmp_path / "c.npy"))
    with pytest.raises(FileExistsError):
        _npy.to_npy(t, str(tmp_path / "c.npy"), mode="x")


def test_cli_export_to_a_url_calls_the_exporter(s3, url, so, tmp_path, capsys, monkeypatch):
    """``bcolzx export`` hands the URL and its storage options to the exporter a Python
    program calls: one code path, the same rules."""
    pytest.importorskip("pyarrow")
    pytest.importorskip("tables")
    from bcolzx.interop import arrow

    src = tmp_path / "t"
    bcolzx.ctable([np.arange(N), np.arange(N) * 0.5], names=["i", "x"], rootdir=str(src))
    calls = []
    to_parquet = arrow.to_parquet

    def recorded(ct, path, *args, **kwargs):
        options = kwargs.get("storage_options") or {}
        calls.append((path, options.get("client_kwargs"), kwargs.get("mode")))
        return to_parquet(ct, path, *args, **kwargs)

    monkeypatch.setattr(arrow, "to_parquet", recorded)
    opts = ("--storage-options", json.dumps(so), "-q")
    code, out, err = _cli(capsys, "export", src, f"{url}/t.parquet", *opts)
    assert code == 0, err
    # the URL, then (the same function writing locally) the file it uploads
    assert calls[0] == (f"{url}/t.parquet", so["client_kwargs"], "x")
    assert len(calls) == 2 and calls[1][1] is None
    assert "1 object" in out
    got = bcolzx.from_parquet(_download(s3, f"{url}/t.parquet", tmp_path, "t.parquet"))
    np.testing.assert_array_equal(got["x"][:], np.arange(N) * 0.5)
    code, out, err = _cli(capsys, "export", src, f"{url}/t.parquet", *opts, "--force")
    assert code == 0, err
    assert calls[-2][2] == "w"
    # HDF5: without --force an existing file would be added to, which objects cannot be
    code, out, err = _cli(capsys, "export", src, f"{url}/t.h5", *opts)
    assert code == 0, err
    code, out, err = _cli(capsys, "export", src, f"{url}/t.h5", *opts, "--node", "/again")
    assert code != 0 and "cannot add to" in err
