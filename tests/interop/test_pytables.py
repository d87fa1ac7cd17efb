"""bcolzx.interop.pytables: ctable <-> PyTables Table round trips, filters, attrs, streaming."""

import doctest
import math

import numpy as np
import pytest

tables = pytest.importorskip("tables", reason="HDF5 interop needs PyTables: pip install tables")

import bcolzx  # noqa: E402
from bcolzx import ctable  # noqa: E402
from bcolzx.errors import CorruptDataError  # noqa: E402
from bcolzx.interop import pytables  # noqa: E402
from bcolzx.interop.pytables import from_hdf5, to_hdf5  # noqa: E402

from .recorder import Recorder  # noqa: E402

N = 1000


def _columns(n=N):
    rng = np.random.default_rng(1)
    days = np.arange(n).astype("M8[D]")
    days[3] = np.datetime64("NaT")
    return {
        "b": rng.random(n) < 0.3,
        "i1": rng.integers(-128, 127, n, dtype="i1"),
        "i8": np.arange(n, dtype="i8") - 2**62,
        "u2": np.arange(n, dtype="u2"),
        "u8": np.arange(n, dtype="u8") + 2**63,
        "f2": rng.random(n).astype("f2"),
        "f4": rng.random(n).astype("f4"),
        "f8": np.r_[np.nan, np.inf, rng.random(n - 2)],
        "c8": (rng.random(n) + 1j).astype("c8"),
        "c16": rng.random(n) * (1 - 2j),
        "S": rng.choice([b"", b"ab", b"x\x01y"], n),
        "U": rng.choice(["", "é", "z€€zz"], n),
        "M8D": days,
        "M8ns": (np.arange(n) * 10**15).astype("M8[ns]"),
        "m8": np.arange(n).astype("m8[ms]"),
        "shaped": np.arange(n * 6, dtype="i4").reshape(n, 2, 3),
    }


def _same(got: ctable, want: ctable):
    assert got.names == want.names and got.dtype == want.dtype and len(got) == len(want)
    for name in want.names:
        a, b = want.cols[name][:], got.cols[name][:]
        # Bytewise, so that NaN and NaT compare equal too.
        assert a.tobytes() == b.tobytes(), name


@pytest.fixture(params=["memory", "disk"])
def where(request, tmp_path):
    """Constructor keywords for the ctable read back: in memory or on disk."""
    return {} if request.param == "memory" else {"rootdir": str(tmp_path / "back")}


def test_every_dtype_roundtrips_exactly(tmp_path, where):
    cols = _columns()
    ct = ctable(list(cols.values()), names=list(cols), chunklen=300)
    to_hdf5(ct, tmp_path / "t.h5")
    back = from_hdf5(tmp_path / "t.h5", **where)
    _same(back, ct)
    if where:
        _same(ctable(rootdir=where["rootdir"], mode="r"), ct)


def test_unsupported_kinds_are_stored_as_documented(tmp_path):
    cols = _columns(10)
    ct = ctable([cols["U"], cols["M8D"], cols["m8"]], names=["U", "M", "m"])
    to_hdf5(ct, tmp_path / "t.h5", "/t")
    with tables.open_file(tmp_path / "t.h5") as h5:
        table = h5.get_node("/t")
        assert table.dtype["U"] == np.dtype("S20")  # UCS-4: 4 bytes per character
        assert table.dtype["M"] == np.dtype("i8") and table.dtype["m"] == np.dtype("i8")
        np.testing.assert_array_equal(table.col("M"), cols["M8D"].view("i8"))
        assert "bcolzx_dtypes" in table.attrs


def test_empty_table_roundtrips(tmp_path):
    ct = ctable([np.array([], "f8"), np.array([], "U3")], names=["x", "s"])
    to_hdf5(ct, tmp_path / "t.h5")
    _same(from_hdf5(tmp_path / "t.h5"), ct)


def test_attrs_roundtrip_native_and_json(tmp_path):
    ct = ctable([np.arange(3)], names=["a"])
    values = {"s": "héllo", "empty": "", "i": -3, "big": 2**70, "f": 1.5, "nan": math.nan,
              "t": True, "none": None, "list": [1, "a", [2.5]], "dict": {"k": {"n": None}},
              "categories:a": {"categories": ["x"], "ordered": False}}
    for key, value in values.items():
        ct.attrs[key] = value
    to_hdf5(ct, tmp_path / "t.h5")
    with tables.open_file(tmp_path / "t.h5") as h5:
        node = h5.get_node("/ctable")
        assert node.attrs["s"] == "héllo" and node.attrs["i"] == -3  # native HDF5 attributes
    back = from_hdf5(tmp_path / "t.h5").attrs.getall()
    assert math.isnan(back.pop("nan")) and math.isnan(values.pop("nan"))
    assert back == values


def test_reserved_attribute_names_are_refused(tmp_path):
    ct = ctable([np.arange(3)], names=["a"])
    ct.attrs["bcolzx_dtypes"] = "mine"
    with pytest.raises(ValueError, match="reserved"):
        to_hdf5(ct, tmp_path / "t.h5")


def test_foreign_attributes_json_cannot_hold_are_skipped_with_a_warning(tmp_path):
    with tables.open_file(tmp_path / "f.h5", "w") as h5:
        table = h5.create_table("/", "t", np.dtype([("x", "f8")]))
        table.append(np.zeros(2, [("x", "f8")]))
        table.attrs["ok"] = np.arange(3)
        table.attrs["text"] = np.bytes_(b"abc")
        table.attrs["z"] = np.complex128(1j)
    with pytest.warns(UserWarning, match="'z'"):
        back = from_hdf5(tmp_path / "f.h5", "/t")
    assert back.attrs.getall() == {"ok": [0, 1, 2], "text": "abc"}


def test_corrupt_bcolzx_attribute_is_reported(tmp_path):
    ct = ctable([np.array(["a"])], names=["s"])
    to_hdf5(ct, tmp_path / "t.h5")
    with tables.open_file(tmp_path / "t.h5", "a") as h5:
        h5.get_node("/ctable").attrs["bcolzx_dtypes"] = "{not json"
    with pytest.raises(CorruptDataError, match="bcolzx_dtypes"):
        from_hdf5(tmp_path / "t.h5")


@pytest.mark.parametrize("shuffle, expected", [
    (bcolzx.NOSHUFFLE, (False, False)), (bcolzx.SHUFFLE, (True, False)),
    (bcolzx.BITSHUFFLE, (False, True)),
])
def test_filters_follow_cparams(tmp_path, shuffle, expected):
    ct = ctable([np.arange(100)], names=["a"], cparams=bcolzx.cparams(7, shuffle, "zstd"))
    to_hdf5(ct, tmp_path / "t.h5")
    with tables.open_file(tmp_path / "t.h5") as h5:
        filters = h5.get_node("/ctable").filters
    assert filters.complevel == 7
    assert (filters.shuffle, filters.bitshuffle) == expected
    if tables.which_lib_version("blosc2") is not None:
        assert filters.complib == "blosc2:zstd"


def test_cparams_and_cname_override(tmp_path):
    ct = ctable([np.arange(100)], names=["a"])
    to_hdf5(ct, tmp_path / "t.h5", cparams={"clevel": 1}, cname="zlib")
    with tables.open_file(tmp_path / "t.h5") as h5:
        filters = h5.get_node("/ctable").filters
    assert (filters.complevel, filters.complib) == (1, "zlib")
    _same(from_hdf5(tmp_path / "t.h5"), ct)


def test_clevel_zero_writes_uncompressed(tmp_path):
    ct = ctable([np.arange(10)], names=["a"], cparams=bcolzx.cparams(clevel=0))
    to_hdf5(ct, tmp_path / "t.h5")
    with tables.open_file(tmp_path / "t.h5") as h5:
        assert h5.get_node("/ctable").filters.complevel == 0
    _same(from_hdf5(tmp_path / "t.h5"), ct)


@pytest.mark.parametrize("kwargs, error", [
    ({"cname": "snappy"}, ValueError), ({"cname": "lz4"}, ValueError),
    ({"mode": "r"}, ValueError), ({"nodepath": "relative"}, ValueError),
    ({"nodepath": "/"}, ValueError), ({"cparams": 5}, TypeError),
])
def test_bad_arguments_are_refused(tmp_path, kwargs, error):
    ct = ctable([np.arange(3)], names=["a"])
    with pytest.raises(error):
        to_hdf5(ct, tmp_path / "t.h5", **kwargs)


def test_nested_nodepath_and_append_mode(tmp_path):
    path = tmp_path / "t.h5"
    one = ctable([np.arange(5)], names=["a"])
    two = ctable([np.array(["x", "yy"])], names=["s"])
    to_hdf5(one, path, "/g/h/one")
    to_hdf5(two, path, "/g/two", mode="a")
    _same(from_hdf5(path, "/g/h/one"), one)
    _same(from_hdf5(path, "/g/two"), two)
    with pytest.raises(ValueError, match="already has a node"):
        to_hdf5(two, path, "/g/two", mode="a")
    to_hdf5(two, path, "/g/two")  # mode 'w' replaces the file
    with pytest.raises(KeyError, match="/g/h/one"):
        from_hdf5(path, "/g/h/one")


def test_reading_what_is_not_a_table_is_refused(tmp_path):
    with tables.open_file(tmp_path / "t.h5", "w") as h5:
        h5.create_array("/", "arr", np.arange(3))
    with pytest.raises(TypeError, match="not a Table"):
        from_hdf5(tmp_path / "t.h5", "/arr")
    with pytest.raises(TypeError, match="not a Table"):
        from_hdf5(tmp_path / "t.h5", "/")
    with pytest.raises(FileNotFoundError):
        from_hdf5(tmp_path / "missing.h5")


def test_nested_columns_are_refused(tmp_path):
    rowtype = np.dtype([("outer", [("a", "i4"), ("b", "f8")])])
    with tables.open_file(tmp_path / "t.h5", "w") as h5:
        h5.create_table("/", "t", rowtype)
    with pytest.raises(TypeError, match="nested"):
        from_hdf5(tmp_path / "t.h5", "/t")


def test_constructor_kwargs_are_passed(tmp_path):
    ct = ctable([np.arange(N)], names=["a"])
    to_hdf5(ct, tmp_path / "t.h5")
    back = from_hdf5(tmp_path / "t.h5", rootdir=tmp_path / "b", chunklen=64,
                     cparams=bcolzx.cparams(clevel=9))
    assert back.cols["a"].chunklen == 64 and back.cols["a"].cparams.clevel == 9
    with pytest.raises(FileExistsError):
        from_hdf5(tmp_path / "t.h5", rootdir=tmp_path / "b")


def test_writing_streams_whole_hdf5_chunks(tmp_path, monkeypatch):
    sizes = []
    append = tables.Table.append

    def spy(self, rows):
        sizes.append(len(rows))
        return append(self, rows)
    monkeypatch.setattr(tables.Table, "append", spy)
    monkeypatch.setattr(pytables, "BLOSC2_CHUNK_BYTES", 16 * 100)  # 100 rows of 16 bytes
    ct = ctable([np.arange(N), np.ones(N)], names=["a", "b"], chunklen=128)
    to_hdf5(ct, tmp_path / "t.h5", cname="blosc2:lz4")
    with tables.open_file(tmp_path / "t.h5") as h5:
        assert h5.get_node("/ctable").chunkshape == (100,)
    # Blocks of whole HDF5 chunks that cover a ctable chunk: 200 rows.
    assert sizes == [200] * (N // 200)
    _same(from_hdf5(tmp_path / "t.h5"), ct)


def test_reading_streams_by_row_ranges(tmp_path, monkeypatch):
    ct = ctable([np.arange(N), np.ones((N, 4), "f4")], names=["i", "w"])
    to_hdf5(ct, tmp_path / "t.h5")
    monkeypatch.setattr(pytables, "READ_BLOCK_BYTES", 24 * 100)  # 100 rows of 24 bytes
    ranges = []
    read = tables.Table.read

    def spy(self, start=None, stop=None, *args, **kwargs):
        ranges.append((start, stop))
        return read(self, start, stop, *args, **kwargs)
    monkeypatch.setattr(tables.Table, "read", spy)
    back = from_hdf5(tmp_path / "t.h5")
    assert ranges == [(lo, lo + 100) for lo in range(0, N, 100)]
    _same(back, ct)


def test_progress_counts_every_block_both_ways(tmp_path, monkeypatch):
    monkeypatch.setattr(pytables, "BLOSC2_CHUNK_BYTES", 4096)
    monkeypatch.setattr(pytables, "READ_BLOCK_BYTES", 4096)
    cols = _columns()
    ct = ctable(list(cols.values()), names=list(cols), chunklen=100)
    out, back_progress = Recorder(), Recorder()
    ct.tohdf5(tmp_path / "t.h5", "/t", cname="blosc2:lz4", progress=out)
    out.check(ct.nbytes)
    back = bcolzx.fromhdf5(tmp_path / "t.h5", "/t", progress=back_progress)  # via h5py too
    back_progress.check(ct.nbytes)
    _same(back, ct)


def test_ctable_methods_delegate(tmp_path):
    ct = ctable([np.arange(10), np.array(["é"] * 10)], names=["a", "s"])
    ct.attrs["unit"] = "m"
    ct.tohdf5(tmp_path / "t.h5", nodepath="/x/y", cname="blosc:lz4")
    back = ctable.fromhdf5(tmp_path / "t.h5", nodepath="/x/y")
    _same(back, ct)
    assert back.attrs["unit"] == "m"
    _same(bcolzx.ctable.fromhdf5(tmp_path / "t.h5", "/x/y"), ct)


def test_dataframe_through_hdf5_roundtrips(tmp_path):
    pd = pytest.importorskip("pandas", reason="needs pandas: pip install pandas")
    from pandas.testing import assert_frame_equal

    df = pd.DataFrame({
        "x": np.linspace(0, 1, 5), "s": ["a", "bc", "", "d", "é"],
        "c": pd.Categorical(list("abcab"), ordered=True),
        "t": pd.date_range("2020", periods=5, tz="Europe/Paris"),
    }, index=pd.Index(list("vwxyz"), name="k"))
    # PyTables tables hold fixed-width strings only
    with pytest.raises(TypeError, match="'s'.*variable-length strings"):
        ctable.fromdataframe(df).tohdf5(tmp_path / "vlen.h5")
    ctable.fromdataframe(df, strings="fixed").tohdf5(tmp_path / "t.h5")
    assert_frame_equal(ctable.fromhdf5(tmp_path / "t.h5").todataframe(), df)


def test_docstring_examples_run():
    import bcolzx.interop.pytables

    result = doctest.testmod(bcolzx.interop.pytables, verbose=False)
    assert result.attempted > 0 and result.failed == 0


def test_a_failed_import_leaves_no_half_written_table(tmp_path):
    """A failure part way (here: the reader's progress callback raising after the
    first block) removes the dataset the import created."""
    n = 1_200_000  # 19 MB: several 8 MiB read blocks
    ct = ctable([np.arange(n), np.linspace(0, 1, n)], names=["a", "b"])
    path = str(tmp_path / "t.h5")
    to_hdf5(ct, path)
    calls = []

    def progress(nbytes):
        calls.append(nbytes)
        if len(calls) == 2:
            raise KeyboardInterrupt

    dest = tmp_path / "t.bcolzx"
    with pytest.raises(KeyboardInterrupt):
        from_hdf5(path, rootdir=str(dest), progress=progress)
    assert not dest.exists()
    assert len(from_hdf5(path, rootdir=str(dest))) == n  # and the name is free again
