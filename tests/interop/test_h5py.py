"""bcolzx.interop.h5py: carray <-> any HDF5 dataset with h5py; bcolzx.fromhdf5 dispatch."""

import doctest

import numpy as np
import pytest

h5py = pytest.importorskip("h5py", reason="HDF5 datasets need h5py: pip install 'bcolzx[h5py]'")

import bcolzx  # noqa: E402
from bcolzx import carray, ctable  # noqa: E402
from bcolzx.errors import CorruptDataError  # noqa: E402
from bcolzx.interop import h5py as h5interop  # noqa: E402
from bcolzx.interop.h5py import from_hdf5, to_hdf5  # noqa: E402

from .cases import ARRAYS as CASES  # noqa: E402
from .recorder import Recorder, small_blocks  # noqa: E402


@pytest.fixture(params=["memory", "disk"])
def where(request, tmp_path):
    """Constructor keywords for the carray read back: in memory or on disk."""
    return {} if request.param == "memory" else {"rootdir": str(tmp_path / "back")}


def _same(got: carray, want: np.ndarray):
    got = got[:]
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.tobytes() == want.tobytes()


@pytest.mark.parametrize("case", list(CASES))
def test_roundtrip_is_exact(tmp_path, where, case):
    data = CASES[case]
    ca = carray(data, chunklen=64, dflt=np.ones((), data.dtype))
    ca.attrs["case"] = case
    ca.attrs["nested"] = {"a": [1, None, 2.5]}
    ca.tohdf5(tmp_path / "a.h5", f"/g/{case}")
    back = bcolzx.fromhdf5(tmp_path / "a.h5", f"/g/{case}", **where)
    _same(back, data)
    assert back.chunklen == 64 and back.dflt.tobytes() == ca.dflt.tobytes()
    assert back.attrs.getall() == ca.attrs.getall()
    if where:
        _same(carray(rootdir=where["rootdir"], mode="r"), data)


def test_dataset_is_chunked_like_the_carray_and_compressed_with_blosc2(tmp_path):
    hdf5plugin = pytest.importorskip("hdf5plugin")
    ca = carray(np.arange(10_000), chunklen=1000, cparams=bcolzx.cparams(clevel=7,
                                                                         cname="zstd"))
    to_hdf5(ca, tmp_path / "a.h5")
    with h5py.File(tmp_path / "a.h5", "r") as h5:
        dset = h5["/carray"]
        assert dset.chunks == (1000,) and dset.maxshape == (None,)
        dcpl = dset.id.get_create_plist()
        filters = [dcpl.get_filter(i)[0] for i in range(dcpl.get_nfilters())]
        assert hdf5plugin.Blosc2.filter_id in filters
        assert dset.id.get_storage_size() < ca.nbytes / 4
        assert dset[:].tolist() == list(range(10_000))


def test_other_compression_is_used_when_asked(tmp_path):
    ca = carray(np.arange(1000.0))
    to_hdf5(ca, tmp_path / "a.h5", compression="gzip")
    with h5py.File(tmp_path / "a.h5", "r") as h5:
        assert h5["/carray"].compression == "gzip"
    _same(from_hdf5(tmp_path / "a.h5"), ca[:])


def test_datasets_written_by_h5py_import_with_their_chunking(tmp_path, where):
    x = np.arange(50_000, dtype="f4").reshape(10_000, 5)
    with h5py.File(tmp_path / "x.h5", "w") as h5:
        dset = h5.create_dataset("a/b", data=x, chunks=(700, 5), compression="lzf",
                                 fillvalue=-1)
        dset.attrs["units"] = "K"
        dset.attrs["scale"] = np.float32(0.5)
        dset.attrs["ids"] = np.arange(3)
        h5.create_dataset("tiles", data=x, chunks=(300, 2))
        h5.create_dataset("flat", data=x)  # contiguous
    back = bcolzx.fromhdf5(tmp_path / "x.h5", "/a/b", **where)
    _same(back, x)
    assert back.chunklen == 700 and back.dflt == -1
    assert back.attrs.getall() == {"units": "K", "scale": 0.5, "ids": [0, 1, 2]}
    for node in ("tiles", "flat"):
        _same(from_hdf5(tmp_path / "x.h5", node), x)


def test_pytables_nodes_dispatch_to_ctable_or_carray(tmp_path):
    tables = pytest.importorskip("tables")
    ct = ctable([np.arange(10), np.linspace(0, 1, 10)], names=["i", "x"])
    ct.attrs["k"] = "v"
    ct.tohdf5(tmp_path / "t.h5", "/tables/ct")
    with tables.open_file(tmp_path / "t.h5", "a") as h5:
        h5.create_carray("/", "ca", obj=np.arange(6).reshape(3, 2), title="a title")
    back = bcolzx.fromhdf5(tmp_path / "t.h5", "/tables/ct")
    assert isinstance(back, ctable) and back.names == ["i", "x"] and back.attrs["k"] == "v"
    assert back[:].tobytes() == ct[:].tobytes()
    arr = bcolzx.fromhdf5(tmp_path / "t.h5", "/ca")
    assert isinstance(arr, carray) and arr[:].tolist() == [[0, 1], [2, 3], [4, 5]]
    assert arr.attrs.getall() == {}  # PyTables' own CLASS, TITLE... are not attrs


def test_compound_dataset_not_from_pytables_is_a_structured_carray(tmp_path):
    rows = np.array([(1, 2.0), (3, 4.0)], dtype=[("a", "i2"), ("b", "f8")])
    with h5py.File(tmp_path / "c.h5", "w") as h5:
        h5["rows"] = rows
    back = bcolzx.fromhdf5(tmp_path / "c.h5", "rows")
    assert isinstance(back, carray)
    _same(back, rows)


def test_unreadable_attributes_are_skipped_with_a_warning(tmp_path):
    with h5py.File(tmp_path / "w.h5", "w") as h5:
        dset = h5.create_dataset("d", data=np.arange(3))
        dset.attrs["ok"] = 1
        dset.attrs["ref"] = h5.ref
    with pytest.warns(UserWarning, match="ref"):
        back = bcolzx.fromhdf5(tmp_path / "w.h5", "/d")
    assert back.attrs.getall() == {"ok": 1}


def test_progress_counts_every_block_both_ways(tmp_path, monkeypatch):
    small_blocks(monkeypatch, h5interop)
    ca = carray(np.arange(4_000).astype("M8[s]"), chunklen=256)  # stored as int64
    out, back_progress = Recorder(), Recorder()
    ca.tohdf5(tmp_path / "a.h5", "/g/a", progress=out)
    out.check(ca.nbytes)
    assert out.calls[:2] == [4096, 4096]  # blocks of whole HDF5 chunks (256 rows)
    back = bcolzx.fromhdf5(tmp_path / "a.h5", "/g/a", rootdir=str(tmp_path / "a"),
                           progress=back_progress)
    back_progress.check(ca.nbytes)
    _same(back, ca[:])


def test_bad_input_raises_clear_errors(tmp_path):
    path = tmp_path / "b.h5"
    with h5py.File(path, "w") as h5:
        h5.create_group("grp")
        h5["scalar"] = 5.0
        h5.create_dataset("vlen", data=["a", "bc"], dtype=h5py.string_dtype())
        ragged = h5.create_dataset("ragged", shape=(2,), dtype=h5py.vlen_dtype(np.int32))
        ragged[0] = np.arange(3, dtype=np.int32)
        h5.create_dataset("null", dtype="f8", shape=None)
        h5["bad"] = np.arange(3)
        h5["bad"].attrs["bcolzx_dtype"] = "not a dtype"
    with pytest.raises(FileNotFoundError):
        bcolzx.fromhdf5(tmp_path / "missing.h5", "/d")
    with pytest.raises(KeyError):
        bcolzx.fromhdf5(path, "/nothere")
    with pytest.raises(TypeError, match="Group"):
        bcolzx.fromhdf5(path, "/grp")
    # variable-length strings are imported (tests/strings), other variable-length data not
    assert bcolzx.fromhdf5(path, "/vlen")[:].tolist() == ["a", "bc"]
    with pytest.raises(TypeError, match="variable-length"):
        bcolzx.fromhdf5(path, "/ragged")
    for node in ("scalar", "null"):
        with pytest.raises(ValueError, match="dimension"):
            bcolzx.fromhdf5(path, node)
    with pytest.raises(CorruptDataError):
        bcolzx.fromhdf5(path, "/bad")
    ca = carray(np.arange(3))
    with pytest.raises(ValueError, match="already has"):
        ca.tohdf5(path, "/bad", mode="a")
    with pytest.raises(ValueError, match="mode"):
        ca.tohdf5(path, "/x", mode="x")
    with pytest.raises(ValueError, match="nodepath"):
        ca.tohdf5(path, "relative", mode="a")
    with pytest.raises(TypeError, match="cannot be stored"):
        carray(np.zeros(3, dtype=[("u", "U2")])).tohdf5(path, "/u", mode="a")
    with pytest.raises(TypeError, match="cparams"):
        ca.tohdf5(path, "/y", mode="a", cparams=5)
    ca.attrs["bcolzx_x"] = 1
    with pytest.raises(ValueError, match="reserved"):
        ca.tohdf5(path, "/z", mode="a")
    with h5py.File(path, "r") as h5:
        assert sorted(h5) == ["bad", "grp", "null", "ragged", "scalar", "vlen"]


def test_docstring_examples_run():
    result = doctest.testmod(h5interop, verbose=False)
    assert result.attempted > 0 and result.failed == 0
