"""Variable-length strings and bytes through pandas, Arrow/Parquet, Zarr v3, h5py and Dask:
exact round trips, no padding."""

import warnings

import numpy as np
import pytest

import bcolzx

S = np.dtypes.StringDType()
SNAN = np.dtypes.StringDType(na_object=np.nan)
BYTES = bcolzx.vlen_dtype(bytes)
TEXT = ["", "AAPL", "é", "日本語", "😀 emoji", "a\x00b", "\U0010ffff", "x" * 40_000] * 25
#: HDF5 variable-length strings cannot hold NUL characters.
NO_NUL = [t for t in TEXT if "\x00" not in t]


def _bytes(values):
    out = np.empty(len(values), dtype=BYTES)
    out[:] = values
    return out


def _table(text=TEXT, **kwargs):
    n = len(text)
    return bcolzx.ctable([np.array(text, dtype=S),
                          np.array([t if i % 3 else np.nan for i, t in enumerate(text)],
                                   dtype=SNAN),
                          _bytes([t.encode() for t in text]), np.arange(n)],
                         names=["s", "na", "b", "i"], chunklen=16, **kwargs)


def _same(got, want):
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    g, w = got.tolist(), want.tolist()
    assert len(g) == len(w)
    for x, y in zip(g, w):
        assert x == y or (x != x and y != y), (x, y)


def _same_table(got, want, names=None):
    for name in names or want.names:
        _same(got[name][:], want[name][:])


# -- pandas ------------------------------------------------------------------------------


def test_pandas_str_columns_stay_variable_length(tmp_path):
    pd = pytest.importorskip("pandas")
    from pandas.testing import assert_frame_equal

    df = pd.DataFrame({
        "str": pd.Series(TEXT, dtype="str"),
        "str_na": pd.Series([t if i % 3 else None for i, t in enumerate(TEXT)], dtype="str"),
        "string": pd.Series(TEXT, dtype="string"),
        "pyarrow": pd.Series([t if i % 3 else None for i, t in enumerate(TEXT)],
                             dtype="string[pyarrow]"),
        "object": pd.Series(TEXT, dtype=object),
        "bytes": pd.Series([t.encode() for t in TEXT], dtype=object),
    })
    root = str(tmp_path / "t")
    ct = bcolzx.ctable.fromdataframe(df, rootdir=root)
    assert ct["str"].dtype == S and ct["str_na"].dtype == SNAN and ct["bytes"].dtype == BYTES
    # no padding: the 40 000-character row costs its own bytes, not 4 × 40 000 per row
    assert ct["str"].cbytes < 0.1 * len(TEXT) * 40_000
    back = bcolzx.open(root, mode="r").todataframe()
    assert_frame_equal(back, df)
    fixed = bcolzx.ctable.fromdataframe(df[["str", "object"]], strings="fixed")
    assert fixed["str"].dtype == np.dtype("U40000")
    with pytest.raises(ValueError, match="strings must be"):
        bcolzx.ctable.fromdataframe(df, strings="padded")


def test_to_dataframe_of_a_stringdtype_column_gives_pandas_str():
    pd = pytest.importorskip("pandas")
    ct = _table()
    df = ct.todataframe()
    assert df["s"].dtype == pd.StringDtype(na_value=np.nan)
    assert df["s"].tolist() == TEXT
    assert df["na"].isna().sum() == (len(TEXT) + 2) // 3


# -- Arrow / Parquet ---------------------------------------------------------------------


def test_arrow_and_parquet_round_trips(tmp_path):
    pa = pytest.importorskip("pyarrow")
    ct = _table()
    table = ct.to_arrow()
    assert [str(t) for t in table.schema.types] == ["string", "string", "binary", "int64"]
    assert table.column("na").null_count == (len(TEXT) + 2) // 3
    _same_table(bcolzx.from_arrow(table), ct)
    path = str(tmp_path / "t.parquet")
    ct.to_parquet(path)
    _same_table(bcolzx.from_parquet(path), ct)
    import pyarrow.parquet as pq

    assert pa.types.is_string(pq.read_schema(path).field("s").type)


def test_arrow_strings_from_elsewhere_on_request():
    pa = pytest.importorskip("pyarrow")
    values = [t if i % 4 else None for i, t in enumerate(TEXT)]
    table = pa.table({"s": pa.array(values).slice(3),
                      "l": pa.array(values[3:], type=pa.large_string()),
                      "v": pa.array(values[3:], type=pa.string_view()),
                      "b": pa.array([t.encode() for t in TEXT[3:]], type=pa.large_binary())})
    ct = bcolzx.from_arrow(table, strings="vlen")
    want = np.array([np.nan if v is None else v for v in values[3:]], dtype=SNAN)
    for name in ("s", "l", "v"):
        _same(ct[name][:], want)
    _same(ct["b"][:], _bytes([t.encode() for t in TEXT[3:]]))
    with pytest.raises(ValueError, match="nulls"):  # fixed width (the default) refuses nulls
        bcolzx.from_arrow(table.select(["s"]))


# -- Zarr v3 -----------------------------------------------------------------------------


def test_zarr_vlen_utf8_and_bytes(tmp_path):
    zarr = pytest.importorskip("zarr")
    ct = _table()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Zarr: variable_length_bytes has no stable spec
        with pytest.raises(ValueError, match="missing"):
            ct.to_zarr(str(tmp_path / "with_na"))
        sub = bcolzx.ctable([ct["s"], ct["b"], ct["i"]], names=["s", "b", "i"])
        sub.to_zarr(str(tmp_path / "z"))
        group = zarr.open_group(str(tmp_path / "z"), mode="r")
        assert group["s"].metadata.data_type.to_json(zarr_format=3) == "string"
        assert [c.to_dict()["name"] for c in group["s"].metadata.codecs][0] == "vlen-utf8"
        back = bcolzx.from_zarr(str(tmp_path / "z"))
    _same_table(back, sub)


# -- h5py --------------------------------------------------------------------------------


def test_h5py_variable_length_strings(tmp_path):
    h5py = pytest.importorskip("h5py")
    path = str(tmp_path / "a.h5")
    text = bcolzx.carray(np.array(NO_NUL, dtype=S), chunklen=16)
    text.tohdf5(path, "/s")
    raw = bcolzx.carray(_bytes([t.encode() for t in NO_NUL]), chunklen=16)
    raw.tohdf5(path, "/b", mode="a")
    with h5py.File(path, "r") as h5:
        assert h5py.check_string_dtype(h5["s"].dtype).encoding == "utf-8"
        assert h5py.check_string_dtype(h5["s"].dtype).length is None
        assert h5["s"].asstr()[5] == NO_NUL[5]
    _same(bcolzx.fromhdf5(path, "/s")[:], text[:])
    _same(bcolzx.fromhdf5(path, "/b")[:], raw[:])
    with pytest.raises(ValueError, match="missing"):
        bcolzx.carray(np.array(["a", np.nan], dtype=SNAN)).tohdf5(path, "/n", mode="a")


# -- Dask --------------------------------------------------------------------------------


def test_dask_reads_strings(tmp_path):
    pytest.importorskip("dask")
    root = str(tmp_path / "t")
    ct = _table(rootdir=root)
    ct.flush()
    x = ct["s"].to_dask()
    assert x.dtype == S
    _same(x.compute(), ct["s"][:])
    memory = _table()
    _same(memory["na"].to_dask().compute(), memory["na"][:])
    import dask

    df = bcolzx.open(root, mode="r").to_dask().compute()
    assert df["s"].tolist() == TEXT
    # Dask turns object columns into strings unless told not to (its own setting)
    with dask.config.set({"dataframe.convert-string": False}):
        df = bcolzx.open(root, mode="r").to_dask().compute()
    assert df["b"].tolist() == [t.encode() for t in TEXT]
    got = bcolzx.eval("s == 'AAPL'", user_dict={"s": ct["s"]}, vm="dask", out_flavor="numpy")
    np.testing.assert_array_equal(got, np.array(TEXT) == "AAPL")


def _text_array(dtype, n=3001):
    values = [t if i % 7 or not hasattr(dtype, "na_object") else np.nan
              for i, t in enumerate(TEXT * (n // len(TEXT) + 1))][:n]
    return np.array(values, dtype=dtype)


@pytest.mark.parametrize("where", ["disk", "objects"])
@pytest.mark.parametrize("dtype", [S, SNAN, BYTES])
def test_from_dask_writes_string_and_bytes_arrays(tmp_path, where, dtype):
    da = pytest.importorskip("dask.array")
    values = _text_array(dtype) if dtype != BYTES else \
        _bytes([t.encode() + b"\xff" * (i % 2) for i, t in enumerate(TEXT * 16)])
    url = str(tmp_path / "a") if where == "disk" else f"memory://strings2/{tmp_path.name}/a"
    # Blocks that are not superchunks (rechunked), a short last chunk.
    ca = bcolzx.from_dask(da.from_array(values, chunks=333), url, chunklen=64,
                          chunks_per_superchunk=3)
    back = bcolzx.open(url, mode="r")
    assert back.dtype == dtype and back.nchunks == bcolzx.carray(values, chunklen=64).nchunks
    _same(back[:], values)
    _same(ca[:], values)
    if where == "disk":
        assert bcolzx.verify(url).ok
    if dtype != BYTES:  # a zone map of prefix bounds: equality queries skip chunks
        stats = back.engine.chunk_stats()
        assert stats is not None and len(stats) == back.nchunks
        want = np.flatnonzero(np.array([v == "AAPL" for v in values.tolist()]))
        got = bcolzx.eval("s == 'AAPL'", user_dict={"s": back}, out_flavor="numpy")
        np.testing.assert_array_equal(np.flatnonzero(got), want)


def test_from_dask_refuses_pickled_objects(tmp_path):
    da = pytest.importorskip("dask.array")
    objects = np.array([{"a": 1}, 2], dtype=object)
    with pytest.raises(TypeError, match="do not pickle"):
        bcolzx.from_dask(da.from_array(objects, chunks=1), str(tmp_path / "o"))
    assert not (tmp_path / "o").exists() and list(tmp_path.iterdir()) == []
    with pytest.raises(ValueError, match="strings must be"):
        bcolzx.from_dask(da.from_array(objects, chunks=1), str(tmp_path / "o"),
                         strings="wide")


@pytest.mark.parametrize("convert", [True, False])
@pytest.mark.parametrize("where", ["disk", "objects"])
def test_from_dask_dataframe_strings_stay_variable_length(tmp_path, convert, where):
    pd = pytest.importorskip("pandas")
    dd = pytest.importorskip("dask.dataframe")
    import dask

    n = len(TEXT)
    gaps = pd.Series(TEXT, dtype="str")
    gaps[n - 3] = np.nan  # in the last partition only: NaN for the whole column
    df = pd.DataFrame({
        "s": pd.Series(TEXT, dtype="str"),
        "gaps": gaps,
        "arrow": pd.Series(TEXT, dtype="string[pyarrow]"),
        "obj": pd.Series(TEXT, dtype=object),
        "b": pd.Series([t.encode() for t in TEXT], dtype=object),
        "i": np.arange(n),
    })
    url = str(tmp_path / "t") if where == "disk" else f"memory://strings2/{tmp_path.name}/t"
    with dask.config.set({"dataframe.convert-string": convert}):
        ddf = dd.from_pandas(df, npartitions=5)
        ddf = ddf[ddf.i % 40 < 39]  # rows dropped in every partition
        ddf = ddf[(ddf.i < 40) | (ddf.i >= 80)]  # an empty partition
        ct = bcolzx.from_dask(ddf, url, chunklen=16)
        want = ddf.compute().reset_index(drop=True)  # an unnamed index is not stored
    assert ct["s"].dtype == S and ct["gaps"].dtype == SNAN and ct["arrow"].dtype == S
    assert ct["obj"].dtype == S
    assert ct["b"].dtype == (S if convert else BYTES)  # Dask's own setting: bytes as str
    back = bcolzx.open(url, mode="r")
    pd.testing.assert_frame_equal(back.todataframe(), want)
    if where == "disk":
        assert bcolzx.verify(url).ok
    fixed = bcolzx.from_dask(dd.from_pandas(df.drop(columns="gaps"), npartitions=3),
                             str(tmp_path / "fixed"), strings="fixed")
    assert fixed["s"].dtype.kind == "U"
