"""bcolzx.interop.zarr: carray <-> Zarr v3 array, ctable <-> Zarr group, block by block."""

import doctest
import warnings

import numpy as np
import pytest

zarr = pytest.importorskip("zarr", reason="Zarr interop needs zarr 3: pip install 'bcolzx[zarr]'")

import bcolzx  # noqa: E402
from bcolzx import carray, ctable  # noqa: E402
from bcolzx.interop import zarr as zinterop  # noqa: E402

from .cases import ARRAYS as CASES  # noqa: E402
from .recorder import Recorder, small_blocks  # noqa: E402

# Zarr warns that fixed-width strings have no stable v3 specification yet.
pytestmark = pytest.mark.filterwarnings("ignore::zarr.errors.UnstableSpecificationWarning")

def _same(got, want: np.ndarray):
    got = got[:]
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.tobytes() == want.tobytes()


@pytest.mark.parametrize("sharded", [False, True])
@pytest.mark.parametrize("case", list(CASES))
def test_roundtrip_is_exact(tmp_path, case, sharded):
    data = CASES[case]
    ca = carray(data, chunklen=32, dflt=np.ones((), data.dtype),
                cparams=bcolzx.cparams(clevel=7, cname="zstd", shuffle=bcolzx.BITSHUFFLE))
    ca.attrs["case"] = case
    ca.attrs["nested"] = {"a": [1, None, 2.5]}
    if sharded and data.dtype.fields:
        with pytest.raises(TypeError, match="shard"):
            ca.to_zarr(tmp_path / "z", shards=128)
        return
    # Zarr v3 records no byte order: the values come back in native order.
    data = data.astype(data.dtype.newbyteorder("="))
    z = ca.to_zarr(tmp_path / "z", shards=128 if sharded else None)
    assert z.chunks == (32, *data.shape[1:])
    assert z.shards == ((128, *data.shape[1:]) if sharded else None)
    assert np.asarray(z[:], dtype=data.dtype).tobytes() == data.tobytes()
    where = {"rootdir": str(tmp_path / "back")} if sharded else {}
    back = bcolzx.from_zarr(tmp_path / "z", **where)
    _same(back, data)
    assert back.chunklen == 32 and back.cparams == ca.cparams
    assert back.dflt.tobytes() == np.asarray(ca.dflt, back.dtype).tobytes()
    assert back.attrs.getall() == ca.attrs.getall()


def test_zarr_arrays_written_by_zarr_import_from_a_store_or_an_array(tmp_path):
    x = np.arange(60_000, dtype="f4").reshape(20_000, 3)
    z = zarr.create_array(str(tmp_path / "z"), shape=x.shape, dtype=x.dtype, chunks=(500, 3),
                          shards=(2000, 3), fill_value=-1, attributes={"units": "K"})
    z[:] = x
    for source in (str(tmp_path / "z"), z):
        back = bcolzx.from_zarr(source)
        _same(back, x)
        assert back.chunklen == 500 and back.dflt == -1 and back.attrs["units"] == "K"
    tiles = zarr.create_array(zarr.storage.MemoryStore(), shape=x.shape, dtype=x.dtype,
                              chunks=(700, 2), compressors=None)
    tiles[:] = x
    _same(bcolzx.from_zarr(tiles), x)


def test_ctable_roundtrips_through_a_group_in_column_order(tmp_path):
    ct = ctable([np.arange(1000), np.array(["a", "bc"] * 500), np.arange(2000.0).reshape(1000, 2)],
                names=["z", "s", "a"], chunklen=100)
    ct.attrs["k"] = [1, 2]
    group = ct.to_zarr(tmp_path / "g", shards=400)
    assert sorted(group.array_keys()) == ["a", "s", "z"]
    assert group.attrs["bcolzx"] == {"names": ["z", "s", "a"]}
    back = bcolzx.from_zarr(tmp_path / "g", rootdir=str(tmp_path / "back"))
    assert isinstance(back, ctable) and back.names == ["z", "s", "a"]
    assert back.dtype == ct.dtype and back[:].tobytes() == ct[:].tobytes()
    assert back.attrs.getall() == {"k": [1, 2]}
    assert ctable(rootdir=str(tmp_path / "back"), mode="r")[:].tobytes() == ct[:].tobytes()


def test_foreign_group_reads_its_arrays_in_name_order_and_warns_about_subgroups(tmp_path):
    group = zarr.open_group(str(tmp_path / "g"), mode="w")
    group.create_array("b", data=np.arange(5))
    group.create_array("a", data=np.arange(5.0))
    group.create_group("sub")
    with pytest.warns(UserWarning, match="sub"):
        back = bcolzx.from_zarr(str(tmp_path / "g"))
    assert back.names == ["a", "b"] and back["b"][:].tolist() == [0, 1, 2, 3, 4]


def test_progress_counts_every_block_both_ways(tmp_path, monkeypatch):
    small_blocks(monkeypatch, zinterop)
    ca = carray(np.arange(20_000, dtype="i4").reshape(5_000, 4), chunklen=100)
    out, back_progress = Recorder(), Recorder()
    ca.to_zarr(tmp_path / "a.zarr", shards=200, progress=out)
    out.check(ca.nbytes)
    assert out.calls == [3200] * 25  # whole shards of 200 rows of 16 bytes
    back = bcolzx.from_zarr(tmp_path / "a.zarr", rootdir=str(tmp_path / "a"),
                            progress=back_progress)
    back_progress.check(ca.nbytes)
    _same(back, ca[:])


def test_progress_of_a_ctable_counts_every_column(tmp_path, monkeypatch):
    small_blocks(monkeypatch, zinterop)
    ct = ctable([np.arange(3_000), np.ones((3_000, 2), "f4")], names=["i", "w"], chunklen=250)
    out, back_progress = Recorder(), Recorder()
    ct.to_zarr(tmp_path / "t.zarr", progress=out)
    out.check(ct.nbytes)
    assert out.calls == [4000] * 12  # blocks of 500 rows of one column, then the other
    back = bcolzx.from_zarr(tmp_path / "t.zarr", progress=back_progress)
    back_progress.check(ct.nbytes)
    assert back[:].tobytes() == ct[:].tobytes()


def test_bad_input_raises_clear_errors(tmp_path):
    with pytest.raises(FileNotFoundError):
        bcolzx.from_zarr(str(tmp_path / "missing"))
    zero = zarr.create_array(zarr.storage.MemoryStore(), shape=(), dtype="f8")
    with pytest.raises(ValueError, match="0-d"):
        bcolzx.from_zarr(zero)
    group = zarr.open_group(zarr.storage.MemoryStore(), mode="w")
    with pytest.raises(ValueError, match="no arrays"):
        bcolzx.from_zarr(group)
    group.create_array("a", data=np.arange(3))
    group.create_array("b", data=np.arange(4))
    with pytest.raises(ValueError, match="lengths"):
        bcolzx.from_zarr(group)
    vlen = zarr.create_array(zarr.storage.MemoryStore(), shape=(2,), dtype=str)
    vlen[:] = ["a", "bc"]
    # Zarr's vlen-utf8 strings are imported as StringDType (tests/strings)
    assert bcolzx.from_zarr(vlen)[:].tolist() == ["a", "bc"]
    ca = carray(np.arange(10))
    for kw, match in (({"chunks": 0}, "chunks"), ({"chunks": (2, 2)}, "chunks"),
                      ({"chunks": 4, "shards": 6}, "multiple"), ({"mode": "a"}, "mode")):
        with pytest.raises(ValueError, match=match):
            ca.to_zarr(zarr.storage.MemoryStore(), **kw)
    with pytest.raises(TypeError, match="sub-array"):
        carray(np.zeros(3, [("a", "f8", (2,))])).to_zarr(zarr.storage.MemoryStore())
    ca.to_zarr(str(tmp_path / "z"))
    with pytest.raises(zarr.errors.ContainsArrayError):
        ca.to_zarr(str(tmp_path / "z"), mode="x")
    ct = ctable([np.arange(3)], names=["a"])
    ct.attrs["bcolzx"] = 1
    with pytest.raises(ValueError, match="reserved"):
        ct.to_zarr(zarr.storage.MemoryStore())


def test_docstring_examples_run():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = doctest.testmod(zinterop, verbose=False)
    assert result.attempted > 0 and result.failed == 0
