"""bcolzx.interop.pandas: DataFrame <-> ctable round trips, exact per assert_frame_equal."""

import doctest
import datetime
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pd = pytest.importorskip("pandas", reason="pandas interop needs pandas: pip install pandas")

from pandas.testing import assert_frame_equal  # noqa: E402

import bcolzx  # noqa: E402
from bcolzx import ctable  # noqa: E402
from bcolzx.interop.pandas import from_dataframe, to_dataframe  # noqa: E402

N = 7


@pytest.fixture(params=["memory", "disk"])
def roundtrip(request, tmp_path):
    """DataFrame -> ctable -> DataFrame, on disk also through a reopen."""
    def roundtrip(df, **kwargs):
        if request.param == "memory":
            return to_dataframe(from_dataframe(df, **kwargs))
        rootdir = str(tmp_path / "ct")
        from_dataframe(df, rootdir=rootdir, mode="w", **kwargs).flush()
        return to_dataframe(ctable(rootdir=rootdir, mode="r"))
    return roundtrip


NUMPY_COLUMNS = {
    "bool": np.arange(N) % 2 == 0,
    **{f"i{w}": np.arange(-3, N - 3, dtype=f"i{w}") for w in (1, 2, 4, 8)},
    **{f"u{w}": np.arange(N, dtype=f"u{w}") * 3 for w in (1, 2, 4, 8)},
    "f4": np.linspace(-1, 1, N, dtype="f4"),
    "f8": np.r_[np.nan, np.inf, -np.inf, np.linspace(0, 1, N - 3)],
    "c8": (np.arange(N) * (1 - 1j)).astype("c8"),
    "c16": np.arange(N) * (2 + 1j),
    "m8": pd.to_timedelta(np.arange(N), unit="s").to_numpy(),
}


@pytest.mark.parametrize("name", sorted(NUMPY_COLUMNS))
def test_numpy_dtypes_roundtrip_without_metadata(roundtrip, name):
    df = pd.DataFrame({name: NUMPY_COLUMNS[name]})
    ct = from_dataframe(df)
    assert ct.dtype[name] == df[name].dtype and ct.attrs.getall() == {}
    assert_frame_equal(roundtrip(df), df)


@pytest.mark.parametrize("unit", ["s", "ms", "us", "ns"])
def test_datetimes_roundtrip_in_their_unit(roundtrip, unit):
    values = pd.date_range("1999-12-31 23:00", periods=N, freq="37min", unit=unit)
    df = pd.DataFrame({"t": values.to_numpy(), "d": (values - values[0]).to_numpy()})
    df.loc[2, "t"] = pd.NaT
    assert from_dataframe(df).dtype["t"] == np.dtype(f"M8[{unit}]")
    assert_frame_equal(roundtrip(df), df)


def test_all_supported_columns_together_roundtrip(roundtrip):
    df = pd.DataFrame({
        **NUMPY_COLUMNS,
        "str": ["a", "bb", "", "dddd", "é€", "x", "y"],
        "int64": pd.array(range(N), dtype="Int64"),
        "cat": pd.Categorical(list("abcabca")),
        "tz": pd.date_range("2020-03-29", periods=N, freq="h", tz="Europe/Paris"),
    })
    assert_frame_equal(roundtrip(df), df)


@pytest.mark.parametrize("dtype", ["str", "string", object])
def test_strings_become_fixed_width_unicode_of_the_longest(roundtrip, dtype):
    df = pd.DataFrame({"s": pd.Series(["a", "héé", "", "xyzw€"], dtype=dtype)})
    ct = from_dataframe(df, strings="fixed")
    assert ct.dtype["s"] == np.dtype("U5")
    np.testing.assert_array_equal(ct.cols["s"][:], ["a", "héé", "", "xyzw€"])
    assert_frame_equal(roundtrip(df, strings="fixed"), df)


@pytest.mark.parametrize("values, dtype, stored", [
    ([], "str", "U1"), (["", ""], "str", "U1"), ([b"", b""], object, "S1"),
])
def test_empty_strings_still_get_one_character(values, dtype, stored):
    ct = from_dataframe(pd.DataFrame({"s": pd.Series(values, dtype=dtype)}), strings="fixed")
    assert ct.dtype["s"] == np.dtype(stored)


def test_object_bytes_become_fixed_width_bytes(roundtrip):
    df = pd.DataFrame({"b": pd.Series([b"x", b"\x00yz", b""], dtype=object)})
    ct = from_dataframe(df, strings="fixed")
    assert ct.dtype["b"] == np.dtype("S3")
    assert_frame_equal(roundtrip(df, strings="fixed"), df)


@pytest.mark.parametrize("dtype", ["str", "string", object])
def test_missing_strings_are_refused_naming_the_column(dtype):
    df = pd.DataFrame({"ok": [1, 2], "name": pd.Series(["a", None], dtype=dtype)})
    with pytest.raises(ValueError, match="'name'.*missing"):
        from_dataframe(df, strings="fixed")


@pytest.mark.parametrize("values", [["a", b"b"], [1, "a"], [datetime.date(2020, 1, 1)] * 2])
def test_object_columns_of_other_values_are_refused(values):
    with pytest.raises(TypeError, match="'o'"):
        from_dataframe(pd.DataFrame({"o": pd.Series(values, dtype=object)}))


@pytest.mark.parametrize("dtype, values, numpy_dtype", [
    ("Int64", [1, -2, 3], "i8"),
    ("Int8", [1, -2, 3], "i1"),
    ("UInt16", [1, 2, 3], "u2"),
    ("boolean", [True, False, True], "?"),
    ("Float64", [0.5, 1.5, 2.0], "f8"),
    ("Float32", [0.5, 1.5, 2.0], "f4"),
])
def test_nullable_dtypes_without_na_use_numpy_and_come_back(roundtrip, dtype, values,
                                                            numpy_dtype):
    df = pd.DataFrame({"n": pd.array(values, dtype=dtype)})
    ct = from_dataframe(df)
    assert ct.dtype["n"] == np.dtype(numpy_dtype)
    assert ct.attrs["dtype:n"] == dtype
    assert_frame_equal(roundtrip(df), df)


@pytest.mark.parametrize("dtype, values", [
    ("Int64", [1, None]), ("boolean", [True, None]), ("Float64", [0.5, None]),
])
def test_nullable_dtypes_with_na_are_refused_naming_the_column(dtype, values):
    df = pd.DataFrame({"nullable": pd.array(values, dtype=dtype)})
    with pytest.raises(ValueError, match="'nullable'.*missing"):
        from_dataframe(df)


@pytest.mark.parametrize("categories, ordered", [
    (["z", "a", "m"], True), ([10, 2, 7], False), ([0.5, -1.25], False), ([True, False], False),
])
def test_categoricals_store_codes_and_rebuild_exactly(roundtrip, categories, ordered):
    values = [categories[i % len(categories)] for i in range(N)]
    values[1] = None
    cat = pd.Categorical(values, categories=categories, ordered=ordered)
    df = pd.DataFrame({"c": cat})
    ct = from_dataframe(df)
    assert ct.dtype["c"].kind == "i"
    np.testing.assert_array_equal(ct.cols["c"][:], cat.codes)
    meta = ct.attrs["categories:c"]
    assert meta["categories"] == categories and meta["ordered"] is ordered
    assert_frame_equal(roundtrip(df), df)


def test_categories_json_cannot_hold_are_refused():
    df = pd.DataFrame({"c": pd.Categorical(pd.date_range("2020", periods=3))})
    with pytest.raises(TypeError, match="'c'.*categor"):
        from_dataframe(df)


@pytest.mark.parametrize("tz", ["UTC", "Europe/Paris", "America/New_York",
                                datetime.timezone.utc,
                                datetime.timezone(datetime.timedelta(hours=-3))])
def test_time_zones_store_utc_and_restore_the_zone(roundtrip, tz):
    times = pd.date_range("2021-03-27 22:00", periods=N, freq="3h", tz=tz, unit="ns")
    df = pd.DataFrame({"t": times})
    ct = from_dataframe(df)
    assert ct.dtype["t"] == np.dtype("M8[ns]")
    np.testing.assert_array_equal(ct.cols["t"][:], times.tz_convert("UTC").tz_localize(None))
    assert ct.attrs["tz:t"] == str(times.tz)
    assert_frame_equal(roundtrip(df), df)


def test_time_zone_without_a_name_pandas_finds_is_refused():
    df = pd.DataFrame({"t": pd.date_range("2020", periods=2, tz="dateutil/Europe/Paris")})
    with pytest.raises(ValueError, match="'t'.*time zone"):
        from_dataframe(df)


def test_unsupported_extension_dtypes_are_refused():
    df = pd.DataFrame({"p": pd.period_range("2020", periods=3, freq="D")})
    with pytest.raises(TypeError, match="'p'"):
        from_dataframe(df)


def test_default_index_is_dropped():
    df = pd.DataFrame({"x": [1, 2, 3]})
    ct = from_dataframe(df)
    assert ct.names == ["x"] and "index:columns" not in ct.attrs


@pytest.mark.parametrize("index, columns", [
    (pd.Index(list("abcdefg"), name="key"), ["key"]),
    (pd.Index(list("abcdefg"), dtype=object), ["index"]),
    (pd.RangeIndex(10, 10 + 2 * N, 2), ["index"]),
    (pd.RangeIndex(N, name="row"), ["row"]),
    (pd.date_range("2020", periods=N, freq="D", name="day"), ["day"]),
    (pd.date_range("2020", periods=N, freq="h", tz="Asia/Tokyo"), ["index"]),
    (pd.CategoricalIndex(list("aabbcca"), name="grp"), ["grp"]),
    (pd.MultiIndex.from_arrays([np.arange(N) // 3, list("abcdefg")], names=["g", None]),
     ["g", "level_1"]),
])
def test_other_indexes_are_stored_first_and_restored(roundtrip, index, columns):
    df = pd.DataFrame({"x": np.arange(N, dtype="f8")}, index=index)
    ct = from_dataframe(df)
    assert ct.names == [*columns, "x"]
    assert ct.attrs["index:columns"] == columns
    assert_frame_equal(roundtrip(df), df)


def test_index_clashing_with_a_column_is_refused():
    df = pd.DataFrame({"k": [1, 2]}, index=pd.Index([5, 6], name="k"))
    with pytest.raises(ValueError, match="'k'.*already exists"):
        from_dataframe(df)


@pytest.mark.parametrize("columns", [[0, 1], ["a", 1], [""], [("a", "b")]])
def test_non_string_column_names_are_refused(columns):
    df = pd.DataFrame([[1] * len(columns)], columns=columns)
    with pytest.raises(ValueError, match="column name"):
        from_dataframe(df)


def test_duplicate_or_reserved_names_are_refused():
    with pytest.raises(ValueError, match="duplicate"):
        from_dataframe(pd.DataFrame([[1, 2]], columns=["a", "a"]))
    with pytest.raises(ValueError, match="cannot be a column name"):
        from_dataframe(pd.DataFrame({"__x": [1]}))


def test_frame_without_anything_to_store_is_refused():
    with pytest.raises(ValueError, match="no columns"):
        from_dataframe(pd.DataFrame())
    with pytest.raises(TypeError, match="DataFrame"):
        from_dataframe({"a": [1]})


def test_zero_rows_roundtrip(roundtrip):
    df = pd.DataFrame({"i": np.array([], "i4"), "s": pd.Series([], dtype="str"),
                       "c": pd.Categorical([], categories=["a"])})
    assert_frame_equal(roundtrip(df), df)


def test_kwargs_go_to_the_constructor(tmp_path):
    df = pd.DataFrame({"x": np.arange(1000), "s": ["ab"] * 1000})
    ct = from_dataframe(df, rootdir=tmp_path / "t", chunklen=128,
                        cparams=bcolzx.cparams(clevel=9, cname="zstd"))
    assert ct.rootdir == str(tmp_path / "t") and ct.cols["x"].chunklen == 128
    assert ct.cols["s"].cparams.cname == "zstd"
    with pytest.raises(FileExistsError):
        from_dataframe(df, rootdir=tmp_path / "t")


def test_columns_select_and_order():
    ct = ctable([np.arange(3), np.ones(3), np.zeros(3, "i2")], names=["a", "b", "c"])
    assert list(to_dataframe(ct, columns=["c", "a"]).columns) == ["c", "a"]
    assert list(to_dataframe(ct, columns="b, a").columns) == ["b", "a"]
    frame = to_dataframe(ct, columns=[])
    assert frame.shape == (3, 0)
    with pytest.raises(KeyError, match="'nope'"):
        to_dataframe(ct, columns=["a", "nope"])


def test_columns_keep_the_stored_index():
    df = pd.DataFrame({"a": [1, 2], "b": [3.0, 4.0]}, index=pd.Index(["x", "y"], name="k"))
    assert_frame_equal(to_dataframe(from_dataframe(df), columns=["b"]), df[["b"]])


def test_orient_index_makes_columns_rows():
    ct = ctable([np.arange(3), np.arange(3) * 2], names=["a", "b"])
    expected = pd.DataFrame.from_dict({"a": np.arange(3), "b": np.arange(3) * 2},
                                      orient="index")
    assert_frame_equal(to_dataframe(ct, orient="index"), expected)


def test_other_orients_are_refused():
    ct = ctable([np.arange(3)], names=["a"])
    with pytest.raises(ValueError, match="orient"):
        to_dataframe(ct, orient="tight")


def test_columns_with_row_shapes_are_refused():
    ct = ctable([np.zeros((3, 2))], names=["m"])
    with pytest.raises(ValueError, match="'m'"):
        to_dataframe(ct)


def test_ctable_methods_delegate():
    df = pd.DataFrame({"a": [1, 2], "s": ["x", "yz"]})
    ct = ctable.fromdataframe(df, chunklen=16)
    assert isinstance(ct, ctable) and ct.cols["a"].chunklen == 16
    assert_frame_equal(ct.todataframe(), df)
    assert_frame_equal(bcolzx.ctable.fromdataframe(df).todataframe(columns=["s"]), df[["s"]])


@settings(max_examples=40, deadline=None)
@given(ints=st.lists(st.integers(-2**63, 2**63 - 1), min_size=0, max_size=20),
       # No lone surrogates: pandas' default (pyarrow) string dtype refuses them
       # before bcolzx is called.
       text=st.lists(st.text(st.characters(exclude_characters="\x00",
                                           exclude_categories=("Cs",)), max_size=6),
                     min_size=20, max_size=20))
def test_roundtrip_property(ints, text):
    df = pd.DataFrame({"i": np.array(ints, dtype="i8"), "s": text[:len(ints)],
                       "c": pd.Categorical(text[:len(ints)])})
    assert_frame_equal(to_dataframe(from_dataframe(df)), df)


def test_importing_bcolzx_imports_no_optional_dependency():
    code = ("import sys, bcolzx, bcolzx.interop, bcolzx.interop.pandas, bcolzx.interop.pytables; "
            "print(sorted({'pandas', 'tables', 'h5py'} & set(sys.modules)))")
    # Run where the bcolzx under test is found first (not an unbuilt source tree).
    import bcolzx

    parent = os.path.dirname(os.path.dirname(os.path.abspath(bcolzx.__file__)))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=parent, env=dict(os.environ, PYTHONPATH=parent))
    assert out.stdout.strip() == "[]"


def test_docstring_examples_run():
    import bcolzx.interop.pandas

    result = doctest.testmod(bcolzx.interop.pandas, verbose=False)
    assert result.attempted > 0 and result.failed == 0
