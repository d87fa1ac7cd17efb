"""convert, compact and export to and from object storage (issue 25), against the local
S3-compatible server: written in one go, published last, never seen half-written."""

import importlib
import io
import json

import numpy as np
import pytest

import bcolzx
from bcolzx.__main__ import main
from bcolzx._storage import objects as _objects
from bcolzx._storage import remote
from bcolzx.errors import (
    AppendOnlyError,
    CorruptDataError,
    DatasetNotFoundError,
    RemoteError,
)
from tests.conftest import LEGACY
from tests.remote import s3server
from tests.remote.test_remote import CL, SC

#: Where a copy is written and verified.
_conv = importlib.import_module("bcolzx._publish")


def _keys(s3, url):
    """The keys stored under `url`, relative to it."""
    root = url[len("s3://"):]
    return sorted(p[len(root) + 1:] for p in s3.filesystem().find(root))


def _same(a, b):
    """Two opened datasets hold the same rows (and, for tables, columns)."""
    assert type(a) is type(b) and len(a) == len(b)
    if isinstance(a, bcolzx.ctable):
        assert a.names == b.names
        for name in a.names:
            np.testing.assert_array_equal(a[name][:], b[name][:])
    else:
        np.testing.assert_array_equal(a[:], b[:])


# -- convert ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["ca_float64_default", "ct_mixed", "ca_float64_quantize2",
                                  "ca_float64_attrs", "ct_attrs"])
def test_convert_legacy_to_url(url, so, name):
    local = bcolzx.open(str(LEGACY / name), mode="r")
    assert bcolzx.convert(str(LEGACY / name), url, storage_options=so) == url
    new = bcolzx.open(url, storage_options=so, mode="r")
    _same(new, local)
    columns = [new] if isinstance(new, bcolzx.carray) else [new[n] for n in new.names]
    assert all(c.engine.store.native for c in columns)  # bcolzx format, not v1
    assert new.attrs.getall() == local.attrs.getall()
    if name == "ca_float64_quantize2":  # kept for later appends
        assert new.cparams.quantize == 2


@pytest.mark.parametrize("name", ["ca_int32_leftover", "ct_mixed"])
def test_convert_from_url_to_url_and_to_disk(s3, url, so, tmp_path, name):
    s3.filesystem().put(str(LEGACY / name), url[len("s3://"):], recursive=True)
    local = bcolzx.open(str(LEGACY / name), mode="r")
    out = bcolzx.convert(url, f"{url}-new", storage_options=so, cparams={"cname": "zstd"})
    _same(bcolzx.open(out, storage_options=so), local)
    on_disk = bcolzx.convert(url, str(tmp_path / "d"), storage_options=so)
    assert on_disk == str(tmp_path / "d")
    _same(bcolzx.open(on_disk), local)


def test_convert_local_bcolzx_to_url_with_new_parameters(tmp_path, url, so):
    a = np.arange(100_000, dtype="i8") % 1000
    src = bcolzx.carray(a, rootdir=str(tmp_path / "a"), chunklen=4096)
    src.attrs["unit"] = "mm"
    src.flush()
    with pytest.raises(bcolzx.UnsupportedFormatError):  # nothing to convert: nothing written
        bcolzx.convert(str(tmp_path / "a"), url, storage_options=so)
    with pytest.raises(DatasetNotFoundError):
        bcolzx.open(url, storage_options=so)
    bcolzx.convert(str(tmp_path / "a"), url, storage_options=so, chunklen=1000,
                   cparams={"cname": "zstd", "clevel": 3})
    new = bcolzx.open(url, storage_options=so)
    np.testing.assert_array_equal(new[:], a)
    assert new.chunklen == 1000 and new.cparams.cname == "zstd" and new.cparams.clevel == 3
    assert new.attrs["unit"] == "mm"


def test_convert_table_of_strings_to_url_and_back(tmp_path, url, so):
    n = 5000
    words = np.array([f"w{i % 97}" * (i % 5) for i in range(n)], dtype=np.dtypes.StringDType())
    t = bcolzx.ctable([np.arange(n), words], names=["i", "s"], rootdir=str(tmp_path / "t"),
                      chunklen=512)
    t.attrs["source"] = "test"
    t.flush()
    bcolzx.convert(str(tmp_path / "t"), url, storage_options=so, chunklen=1000)
    r = bcolzx.open(url, storage_options=so)
    assert r.attrs["source"] == "test" and r["s"].chunklen == 1000
    np.testing.assert_array_equal(r["s"][:], words)
    back = bcolzx.convert(url, str(tmp_path / "back"), storage_options=so, chunklen=512)
    np.testing.assert_array_equal(bcolzx.open(back)["s"][:], words)


def test_convert_on_object_storage_needs_a_destination(s3, url, so):
    s3.filesystem().put(str(LEGACY / "ca_int8_default"), url[len("s3://"):], recursive=True)
    before = {k: s3.filesystem().cat_file(f"{url[5:]}/{k}") for k in _keys(s3, url)}
    with pytest.raises(AppendOnlyError) as info:
        bcolzx.convert(url, storage_options=so)
    assert isinstance(info.value, PermissionError) and url in str(info.value)
    assert "new location" in str(info.value)
    assert {k: s3.filesystem().cat_file(f"{url[5:]}/{k}") for k in _keys(s3, url)} == before


def test_convert_refuses_an_occupied_destination(s3, url, so):
    s3.filesystem().pipe_file(f"{url[5:]}/notes.txt", b"someone else's")
    with pytest.raises(FileExistsError):
        bcolzx.convert(str(LEGACY / "ca_int8_default"), url, storage_options=so)
    assert _keys(s3, url) == ["notes.txt"]


def test_storage_options_need_a_url(tmp_path, so):
    with pytest.raises(ValueError, match="URL"):
        bcolzx.convert(str(LEGACY / "ca_int8_default"), str(tmp_path / "x"),
                       storage_options=so)


@pytest.mark.parametrize("name", ["ca_float64_default", "ct_mixed"])
def test_nothing_is_published_before_verification(s3, url, so, monkeypatch, name):
    """While the copy is checked, a reader finds no dataset at the URL; a copy that
    fails the check is never published and its objects are deleted."""
    verify = _conv._verify_carray
    seen = []

    def verify_and_look(col, where, progress=None, *, held=None):
        with pytest.raises(DatasetNotFoundError):
            bcolzx.open(url, storage_options=so)
        seen.append(where)
        verify(col, where, progress, held=held)

    monkeypatch.setattr(_conv, "_verify_carray", verify_and_look)
    bcolzx.convert(str(LEGACY / name), url, storage_options=so)
    assert seen
    _same(bcolzx.open(url, storage_options=so), bcolzx.open(str(LEGACY / name)))

    def wrong(col, where, progress=None, *, held=None):
        raise CorruptDataError("verification of the converted dataset failed: row 7",
                               path=where.url)

    monkeypatch.setattr(_conv, "_verify_carray", wrong)
    with pytest.raises(CorruptDataError, match="row 7"):
        bcolzx.convert(str(LEGACY / name), f"{url}-bad", storage_options=so)
    with pytest.raises(DatasetNotFoundError):
        bcolzx.open(f"{url}-bad", storage_options=so)
    assert _keys(s3, f"{url}-bad") == []


def test_verification_reads_what_was_uploaded(s3, url, so, monkeypatch):
    """The check reads the uploaded objects, not the writer's memory: an object damaged
    on its way up fails it, and nothing is published."""
    put = _objects.FsspecObjects.put

    def damaging_put(objs, items):
        items = {k: (v[:-20] + bytes(20) if k.startswith("data/") and len(v) > 4096 else v)
                 for k, v in items.items()}
        put(objs, items)

    monkeypatch.setattr(_objects.FsspecObjects, "put", damaging_put)
    with pytest.raises(CorruptDataError) as info:
        bcolzx.convert(str(LEGACY / "ca_float64_default"), url, storage_options=so)
    assert url in str(info.value)
    monkeypatch.undo()
    with pytest.raises(DatasetNotFoundError):
        bcolzx.open(url, storage_options=so)
    assert _keys(s3, url) == []


@pytest.mark.parametrize("name", ["ca_float64_default", "ct_mixed"])
def test_server_killed_mid_convert_publishes_nothing(monkeypatch, name):
    """The server dies after the first upload of a conversion: RemoteError naming the URL,
    and the server holds no published dataset (looked at through a proxy that died)."""
    url = "s3://killed-convert/x"
    dying = s3server.dying_after_first_upload(monkeypatch, "killed-convert")
    with dying as (server, via_proxy, puts):
        so = server.storage_options()
        with pytest.raises(RemoteError) as info:
            bcolzx.convert(str(LEGACY / name), url, storage_options=via_proxy)
        assert "killed-convert/x" in str(info.value)
        assert puts and all(remote.SIZES not in keys and remote.ROOTDIRS not in keys
                            for keys in puts)
        monkeypatch.undo()
        with pytest.raises(DatasetNotFoundError):
            bcolzx.open(url, storage_options=so)
        fs = server.filesystem()
        assert not [p for p in fs.find("killed-convert") if p.endswith(("/meta/sizes",
                                                                        "__rootdirs__"))]


# -- compact ------------------------------------------------------------------------------


def _appended(url, so, a, times=4):
    """A dataset at `url` written, then appended to `times` times: its last superchunk is
    continued in part objects, the short chunk re-stored each time (dead bytes)."""
    bcolzx.carray(a, rootdir=url, storage_options=so, mode="w", chunklen=CL)
    w = bcolzx.open(url, storage_options=so, mode="a")
    for i in range(times):
        w.append(np.full(100, float(i)))
        w.flush()
    return bcolzx.open(url, storage_options=so)[:]


def test_compact_url_in_place_refused(s3, url, so):
    whole = _appended(url, so, np.arange(SC + 1000, dtype="f8"))
    before = _keys(s3, url)
    with pytest.raises(AppendOnlyError) as info:
        bcolzx.compact(url, storage_options=so)
    assert isinstance(info.value, PermissionError) and "dst" in str(info.value)
    assert _keys(s3, url) == before
    np.testing.assert_array_equal(bcolzx.open(url, storage_options=so)[:], whole)


def test_compact_url_to_url_one_object_per_superchunk(s3, url, so):
    whole = _appended(url, so, np.arange(SC + 1000, dtype="f8"))
    before = _keys(s3, url)
    assert len([k for k in before if k.startswith("data/")]) > 2  # parts
    reclaimed = bcolzx.compact(url, f"{url}-c", storage_options=so)
    assert reclaimed > 0
    assert _keys(s3, url) == before  # the source is left as it was
    data = [k for k in _keys(s3, f"{url}-c") if k.startswith("data/")]
    assert data == ["data/__0.bin", "data/__1.bin"]
    new = bcolzx.open(f"{url}-c", storage_options=so)
    old = bcolzx.open(url, storage_options=so)
    np.testing.assert_array_equal(new[:], whole)
    assert new.chunklen == old.chunklen and new.cparams == old.cparams
    assert not new.engine.store.sizes.parts
    with pytest.raises(FileExistsError):  # it is there now
        bcolzx.compact(url, f"{url}-c", storage_options=so)


def test_compact_between_disk_and_url(s3, url, so, tmp_path):
    whole = _appended(url, so, np.arange(3000, dtype="f8"))
    bcolzx.compact(url, str(tmp_path / "c"), storage_options=so)
    np.testing.assert_array_equal(bcolzx.open(str(tmp_path / "c"))[:], whole)
    t = bcolzx.ctable([np.arange(5000), np.arange(5000) * 0.5], names=["i", "x"],
                      rootdir=str(tmp_path / "t"), chunklen=1000)
    t["x"][3] = -1.0  # the chunk is stored again: dead bytes
    t.flush()
    bcolzx.compact(str(tmp_path / "t"), f"{url}-t", storage_options=so)
    _same(bcolzx.open(f"{url}-t", storage_options=so), bcolzx.open(str(tmp_path / "t")))


def test_compact_to_a_destination_refuses_legacy(tmp_path, url, so):
    with pytest.raises(bcolzx.UnsupportedFormatError):
        bcolzx.compact(str(LEGACY / "ca_int8_default"), url, storage_options=so)
    with pytest.raises(DatasetNotFoundError):
        bcolzx.open(url, storage_options=so)


# -- the command line -----------------------------------------------------------------------


def _cli(capsys, *words):
    capsys.readouterr()
    try:
        code = main([str(w) for w in words])
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_convert_compact_export_with_urls(s3, url, so, tmp_path, capsys):
    opts = ("--storage-options", json.dumps(so), "-q")
    code, out, err = _cli(capsys, "convert", LEGACY / "ct_mixed", url, *opts)
    assert code == 0, err
    assert "legacy-v1 ctable" in out and url in out and "verified" in out
    _same(bcolzx.open(url, storage_options=so), bcolzx.open(str(LEGACY / "ct_mixed")))
    code, out, err = _cli(capsys, "convert", url, *opts, "--cname", "zstd")
    assert code != 0 and "in place" in err
    (tmp_path / "so.json").write_text(json.dumps(so))
    code, out, err = _cli(capsys, "compact", url, f"{url}-c", "--storage-options",
                          f"@{tmp_path / 'so.json'}", "-q")
    assert code == 0, err
    assert f"{url}-c" in out and "reclaimed" in out
    code, out, err = _cli(capsys, "compact", url, *opts)
    assert code != 0 and "in place" in err
    # export from a URL to a URL: a file, and a Zarr store
    code, out, err = _cli(capsys, "export", url, f"{url}-x/t.npy", *opts)
    assert code == 0, err
    got = np.load(io.BytesIO(s3.filesystem().cat_file(f"{url[5:]}-x/t.npy")))
    np.testing.assert_array_equal(got["f8"], bcolzx.open(url, storage_options=so)["f8"][:])
    code, out, err = _cli(capsys, "export", url, f"{url}-x/t.npy", *opts)
    assert code != 0 and "exists" in err
    code, out, err = _cli(capsys, "export", url, f"{url}-x/t.npy", *opts, "--force")
    assert code == 0, err


def test_cli_export_zarr_to_url_metadata_last(s3, url, so, capsys, monkeypatch):
    zarr = pytest.importorskip("zarr")
    a = np.arange(50_000, dtype="f8")
    bcolzx.carray(a, rootdir=url, storage_options=so, mode="w", chunklen=CL)
    fs_type = type(s3.filesystem())
    order = []
    put_file = fs_type._put_file

    async def recorded(fs, lpath, rpath, *args, **kwargs):
        order.append(rpath.rsplit("/", 1)[1])
        return await put_file(fs, lpath, rpath, *args, **kwargs)

    monkeypatch.setattr(fs_type, "_put_file", recorded)
    code, out, err = _cli(capsys, "export", url, f"{url}-z.zarr", "--storage-options",
                          json.dumps(so), "-q")
    assert code == 0, err
    assert order[-1] == "zarr.json" and len(order) > 1  # the store's document last
    assert order.count("zarr.json") == 1
    z = zarr.open_array(zarr.storage.FsspecStore.from_url(f"{url}-z.zarr", storage_options=so,
                                                          read_only=True), mode="r")
    np.testing.assert_array_equal(z[:], a)
    code, out, err = _cli(capsys, "export", url, f"{url}-z.zarr", "--storage-options",
                          json.dumps(so), "-q", "--force")
    assert code != 0 and "delete it first" in err


def test_failed_upload_of_a_store_leaves_nothing(s3, url, so, tmp_path, monkeypatch):
    store = tmp_path / "s.zarr"
    (store / "c" / "0").mkdir(parents=True)
    (store / "c" / "0" / "0").write_bytes(b"x" * 100)
    (store / "zarr.json").write_text("{}")
    fs_type = type(s3.filesystem())
    put_file = fs_type._put_file
    uploaded = []

    async def broken_at_the_end(fs, lpath, rpath, *args, **kwargs):
        if rpath.endswith("zarr.json"):
            raise OSError("connection reset")
        uploaded.append(rpath)
        return await put_file(fs, lpath, rpath, *args, **kwargs)

    monkeypatch.setattr(fs_type, "_put_file", broken_at_the_end)
    with pytest.raises(RemoteError) as info:
        _objects.upload(str(store), _objects.resolve(f"{url}.zarr", so))
    assert f"{url}.zarr" in str(info.value)
    assert uploaded  # the chunk went up, then the store's document failed
    monkeypatch.undo()
    assert not s3.filesystem().find(f"{url[5:]}.zarr")
