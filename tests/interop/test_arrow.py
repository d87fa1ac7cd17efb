"""bcolzx.interop.arrow: ctable <-> Arrow tables, streams and Parquet files."""

import doctest
import os

import numpy as np
import pytest

pa = pytest.importorskip("pyarrow", reason="Arrow interop needs pyarrow: "
                                           "pip install 'bcolzx[arrow]'")
import pyarrow.compute  # noqa: E402,F401
import pyarrow.parquet as pq  # noqa: E402

import bcolzx  # noqa: E402
from bcolzx import ctable  # noqa: E402
from bcolzx.interop import _arrow_in, arrow  # noqa: E402

from .recorder import Recorder, small_blocks  # noqa: E402

N = 1000


def _columns(n=N):
    rng = np.random.default_rng(1)
    days = np.arange(n).astype("M8[D]")
    days[3] = np.datetime64("NaT")
    return {
        "b": rng.random(n) < 0.3,
        "i1": rng.integers(-128, 127, n, dtype="i1"),
        "u8": np.arange(n, dtype="u8") + 2**63,
        "f2": rng.random(n).astype("f2"),
        "f8": np.r_[np.nan, np.inf, rng.random(n - 2)],
        "S": rng.choice([b"", b"ab", b"x\x00y"], n),
        "U": rng.choice(["", "é", "z€\x00zz"], n),
        "D": days,
        "ns": np.r_[[-2**63], np.arange(1, n) * 10**15].astype("M8[ns]"),
        "m": np.arange(n).astype("m8[us]"),
        "sec": np.arange(n).astype("M8[s]"),  # Parquet keeps ms at least
        "shaped": np.arange(n * 6, dtype="i4").reshape(n, 2, 3),
        "words": np.array([["a", "bb"]] * n),
        "big": np.arange(n, dtype=">i8"),
    }


def _table(n=N, **kwargs):
    cols = _columns(n)
    ct = ctable(list(cols.values()), names=list(cols), chunklen=300, **kwargs)
    ct.attrs["note"] = {"k": [1, None]}
    return ct


def _same(got: ctable, want: ctable):
    assert got.names == want.names and got.dtype == want.dtype and len(got) == len(want)
    for name in want.names:
        assert got.cols[name][:].tobytes() == want.cols[name][:].tobytes(), name
    assert got.attrs.getall() == want.attrs.getall()


@pytest.fixture(params=["memory", "disk"])
def where(request, tmp_path):
    """Constructor keywords for the ctable read back: in memory or on disk."""
    return {} if request.param == "memory" else {"rootdir": str(tmp_path / "back")}


# -- round trips -------------------------------------------------------------------------


def test_table_roundtrip_is_exact(where):
    ct = _table()
    t = ct.to_arrow()
    assert t.num_rows == N and [b.num_rows for b in t.to_batches()] == [300, 300, 300, 100]
    assert t.schema.field("S").type == pa.binary() and t.schema.field("U").type == pa.string()
    assert t.schema.field("shaped").type == pa.list_(pa.list_(pa.int32(), 3), 2)
    assert t.column("S").to_pylist()[:3] == [bytes(v) for v in ct["S"][:3]]
    assert t.column("ns").null_count == 1 and t.column("D").null_count == 1
    back = bcolzx.from_arrow(t, **where)
    _same(back, ct)
    if where:
        _same(ctable(rootdir=where["rootdir"], mode="r"), ct)


def test_parquet_roundtrip_is_exact_and_streams_row_groups(tmp_path, where):
    ct = _table()
    path = tmp_path / "t.parquet"
    ct.to_parquet(path, row_group_rows=400)
    meta = pq.ParquetFile(path).metadata
    assert [meta.row_group(i).num_rows for i in range(meta.num_row_groups)] == [400, 400, 200]
    _same(bcolzx.from_parquet(path, **where), ct)
    assert sorted(os.listdir(tmp_path)) == sorted(["t.parquet"] + (["back"] if where else []))


def test_parquet_progress_counts_every_batch_both_ways(tmp_path, monkeypatch):
    small_blocks(monkeypatch, _arrow_in, most=16 << 10)  # Parquet is read in blocks there
    ct = _table()
    out, back_progress = Recorder(), Recorder()
    ct.to_parquet(tmp_path / "t.parquet", row_group_rows=400, progress=out)
    out.check(ct.nbytes)
    assert out.calls == [rows * ct.nbytes // N for rows in (300, 300, 300, 100)]  # chunklen
    back = bcolzx.from_parquet(tmp_path / "t.parquet", rootdir=str(tmp_path / "t"),
                               progress=back_progress)
    back_progress.check(ct.nbytes)
    _same(back, ct)


def test_parquet_progress_of_a_foreign_file_counts_the_measured_widths(tmp_path, monkeypatch):
    small_blocks(monkeypatch, _arrow_in)
    words = ["a", "longest", ""] * 1000
    pq.write_table(pa.table({"w": words, "i": np.arange(3000)}), tmp_path / "f.parquet",
                   row_group_size=700)
    back_progress = Recorder()
    back = bcolzx.from_parquet(tmp_path / "f.parquet", progress=back_progress)
    assert back.dtype == np.dtype([("w", "<U7"), ("i", "<i8")])
    back_progress.check(back.nbytes)


def test_reader_streams_batches_and_reads_back(where):
    ct = _table()
    reader = arrow.to_reader(ct, batch_rows=128)
    back = bcolzx.from_arrow(reader, **where)
    _same(back, ct)


def test_columns_can_be_chosen(tmp_path):
    ct = _table()
    t = ct.to_arrow(columns="U, b")
    assert t.column_names == ["U", "b"]
    ct.to_parquet(tmp_path / "t.parquet")
    back = bcolzx.from_parquet(tmp_path / "t.parquet", columns=["m", "S"])
    assert back.names == ["m", "S"] and back["S"][:].tobytes() == ct["S"][:].tobytes()


def test_empty_table_roundtrips(tmp_path):
    ct = ctable([np.empty(0, "U3"), np.empty((0, 2), "f4")], names=["s", "v"])
    _same(bcolzx.from_arrow(ct.to_arrow()), ct)
    ct.to_parquet(tmp_path / "e.parquet")
    _same(bcolzx.from_parquet(tmp_path / "e.parquet"), ct)


def test_pandas_categories_and_time_zones_roundtrip(tmp_path):
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame({
        "c": pd.Categorical(["a", "b", None, "a"], categories=["b", "a"], ordered=True),
        "k": pd.Categorical([3, 1, 3, 3]),
        "t": pd.date_range("2024-03-30", periods=4, freq="12h", tz="Europe/Paris"),
        "x": [1.5, np.nan, 2.5, 3.0],
    })
    ct = ctable.fromdataframe(df)
    t = ct.to_arrow()
    assert t.schema.field("c").type == pa.dictionary(pa.int8(), pa.string(), ordered=True)
    unit = np.datetime_data(ct["t"].dtype)[0]
    assert t.schema.field("t").type == pa.timestamp(unit, tz="Europe/Paris")
    assert t.column("c").to_pylist() == ["a", "b", None, "a"]
    back = bcolzx.from_arrow(t)
    pd.testing.assert_frame_equal(back.todataframe(), df)
    ct.to_parquet(tmp_path / "p.parquet")
    pd.testing.assert_frame_equal(bcolzx.from_parquet(tmp_path / "p.parquet").todataframe(), df)
    # pyarrow's own conversion of the frame reads back the same, once the nulls it
    # makes of NaN are NaN again (a null is not a float: refused, not guessed).
    t = pa.Table.from_pandas(df, preserve_index=False)
    with pytest.raises(ValueError, match="'x' has 1 nulls"):
        bcolzx.from_arrow(t)
    t = t.set_column(3, "x", pa.compute.fill_null(t.column("x"), np.nan))
    pd.testing.assert_frame_equal(bcolzx.from_arrow(t).todataframe(), df)


# -- other Arrow data --------------------------------------------------------------------


def test_foreign_types_map_to_the_nearest_dtypes(where):
    t = pa.table({
        "ls": pa.array(["ab", "", "é€"], pa.large_string()),
        "sv": pa.array(["x", "yz", ""], pa.string_view()),
        "lb": pa.array([b"a\x00b", b"", b"c"], pa.large_binary()),
        "fb": pa.array([b"ab\x00", b"\x00\x00\x00", b"xyz"], pa.binary(3)),
        "d64": pa.array([0, 86_400_000, None], pa.date64()),
        "u16": pa.array([1, 2, 65535], pa.uint16()),
        "ud": pa.DictionaryArray.from_arrays(pa.array([0, 1, None], pa.uint8()),
                                             pa.array(["p", "q"])),
    })
    back = bcolzx.from_arrow(t, **where)
    assert back.dtype == np.dtype([("ls", "<U2"), ("sv", "<U2"), ("lb", "S3"), ("fb", "S3"),
                                   ("d64", "<M8[ms]"), ("u16", "<u2"), ("ud", "<i2")])
    assert back["ls"][:].tolist() == ["ab", "", "é€"]
    assert back["lb"][:].tolist() == [b"a\x00b", b"", b"c"]
    assert back["fb"][:].tobytes() == b"ab\x00\x00\x00\x00xyz"
    assert back["d64"][:].tolist()[:2] == [np.datetime64(0, "ms").item(),
                                           np.datetime64(86_400_000, "ms").item()]
    assert np.isnat(back["d64"][:][2])
    assert back["ud"][:].tolist() == [0, 1, -1]
    assert back.attrs["categories:ud"] == {"categories": ["p", "q"], "dtype": "str",
                                           "ordered": False}


def test_dictionaries_that_change_between_batches_are_unified():
    schema = pa.schema([("c", pa.dictionary(pa.int8(), pa.string()))])
    batches = [pa.record_batch([pa.DictionaryArray.from_arrays(pa.array(idx, pa.int8()),
                                                               pa.array(values))],
                               schema=schema)
               for idx, values in (([0, 1, 0], ["x", "y"]), ([1, 0, None], ["y", "z"]))]
    back = bcolzx.from_arrow(pa.RecordBatchReader.from_batches(schema, iter(batches)))
    cats = back.attrs["categories:c"]["categories"]
    assert [cats[i] if i >= 0 else None for i in back["c"][:].tolist()] == \
        ["x", "y", "x", "z", "y", None]


def test_streams_without_widths_are_spooled_and_get_the_longest_value(tmp_path, where):
    t = pa.table({"s": ["a", "bcd", "é"], "b": [b"", b"xy", b"z"], "i": [1, 2, 3]})
    back = bcolzx.from_arrow(pa.RecordBatchReader.from_batches(t.schema, t.to_batches(2)),
                             **where)
    assert back.dtype == np.dtype([("s", "<U3"), ("b", "S2"), ("i", "<i8")])
    assert back["s"][:].tolist() == ["a", "bcd", "é"]
    pq.write_table(t, tmp_path / "f.parquet", row_group_size=1)
    assert bcolzx.from_parquet(tmp_path / "f.parquet").dtype == back.dtype


def test_arrow_c_streams_are_read():
    t = pa.table({"x": [1.0, 2.0]})

    class Stream:
        def __arrow_c_stream__(self, requested_schema=None):
            return t.__arrow_c_stream__(requested_schema)

    assert bcolzx.from_arrow(Stream())["x"][:].tolist() == [1.0, 2.0]


# -- errors ------------------------------------------------------------------------------


@pytest.mark.parametrize("data,exc,match", [
    (pa.table({"i": pa.array([1, None], pa.int32())}), ValueError, "nulls"),
    (pa.table({"s": ["a", "b\x00"]}), ValueError, "NUL"),
    (pa.table({"d": pa.array([1], pa.decimal128(5, 2))}), TypeError, "decimal"),
    (pa.table({"l": pa.array([[1], [1, 2]])}), TypeError, "list"),
    (pa.table({"st": pa.array([{"a": 1}])}), TypeError, "struct"),
    (pa.table({"t": pa.array([1], pa.time32("s"))}), TypeError, "time32"),
    (pa.table({"c": pa.DictionaryArray.from_arrays(pa.array([0]), pa.array([b"x"]))}),
     TypeError, "dictionary"),
    (pa.table({"__x": [1]}), ValueError, "column name"),
    (pa.table({}), ValueError, "no columns"),
    ([1, 2], TypeError, "Table"),
])
def test_bad_arrow_data_raises_clear_errors(data, exc, match):
    with pytest.raises(exc, match=match):
        bcolzx.from_arrow(data)


def test_a_failed_import_leaves_no_partial_table_on_disk(tmp_path):
    t = pa.table({"i": pa.array([1, 2, None], pa.int64())})
    rootdir = tmp_path / "back"
    with pytest.raises(ValueError, match="nulls"):
        bcolzx.from_arrow(t, rootdir=str(rootdir))
    assert not rootdir.exists()


def test_recorded_dtypes_are_checked_not_trusted():
    t = pa.table({"s": ["abcdef"]})
    field = t.schema.field("s").with_metadata({arrow.FIELD_DTYPE: b"<U2"})
    with pytest.raises(ValueError, match="longer"):
        bcolzx.from_arrow(t.cast(pa.schema([field])))
    t = pa.table({"t": pa.array([1500], pa.timestamp("ms"))})
    field = t.schema.field("t").with_metadata({arrow.FIELD_DTYPE: b"<M8[s]"})
    with pytest.raises(ValueError, match="exactly"):
        bcolzx.from_arrow(t.cast(pa.schema([field])))


def test_unsupported_ctable_columns_and_arguments_raise(tmp_path):
    for data in (np.arange(3) * 1j, np.arange(3).astype("M8[h]"),
                 np.zeros(3, [("a", "i4")])):
        with pytest.raises(TypeError, match="Arrow"):
            ctable([data], names=["x"]).to_arrow()
    ct = _table(10)
    with pytest.raises(KeyError):
        ct.to_arrow(columns=["nope"])
    with pytest.raises(ValueError, match="positive"):
        ct.to_arrow(batch_rows=0)
    ct.attrs["categories:i1"] = {"categories": ["a"], "dtype": "str", "ordered": False}
    with pytest.raises(ValueError, match="codes outside"):
        ct.to_arrow()
    with pytest.raises(FileNotFoundError):
        bcolzx.from_parquet(tmp_path / "missing.parquet")
    _table(10).to_parquet(tmp_path / "t.parquet")
    with pytest.raises(FileExistsError):
        _table(10).to_parquet(tmp_path / "t.parquet", mode="x")
    with pytest.raises(KeyError):
        bcolzx.from_parquet(tmp_path / "t.parquet", columns=["nope"])


def test_docstring_examples_run():
    result = doctest.testmod(arrow, verbose=False)
    assert result.attempted > 0 and result.failed == 0
