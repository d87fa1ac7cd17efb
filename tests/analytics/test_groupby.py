"""ctable.groupby: pandas' results, out of core, on one thread or several."""

import numpy as np
import pandas as pd
import pytest

import bcolzx
from bcolzx._ext import groupby as kernels

FUNCS = ["sum", "mean", "count", "min", "max", "std", "var", "first", "last", "nunique"]


def table(n=50_003, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n)
    x[::13] = np.nan
    x[5::97] = -0.0
    t = np.datetime64("2024-01-01") + rng.integers(0, 400, n).astype("m8[h]")
    t[::31] = np.datetime64("NaT")
    return {
        "k": rng.integers(-50, 50, n),
        "k8": rng.integers(0, 3, n).astype(np.int8),
        "b": rng.integers(0, 2, n).astype(bool),
        "s": rng.choice(np.array([b"a", b"bb", b"", b"ccc"]), n),
        "u": rng.choice(np.array(["x", "y\u00e9", "zz"]), n),
        "day": t.astype("M8[D]"),
        "x": x,
        "f4": x.astype(np.float32),
        "i": rng.integers(-1000, 1000, n),
        "big": rng.integers(0, 2**63, n, dtype=np.uint64) * np.uint64(2),
        "flag": rng.integers(0, 2, n).astype(bool),
        "t": t,
    }


@pytest.fixture(params=["memory", "disk"])
def ct(request, tmp_path):
    cols = table()
    kw = {"rootdir": str(tmp_path / "t")} if request.param == "disk" else {}
    return bcolzx.ctable(list(cols.values()), names=list(cols), chunklen=4096, **kw)


def frame(ct):
    return pd.DataFrame({n: ct.cols[n][:] for n in ct.names})


def check(got: pd.DataFrame, want: pd.DataFrame):
    assert list(got.columns) == list(want.columns)
    assert got.index.equals(want.index), (got.index[:5], want.index[:5])
    for c in want.columns:
        a, b = got[c].to_numpy(), want[c].to_numpy()
        assert a.dtype == b.dtype, (c, a.dtype, b.dtype)
        if a.dtype.kind == "f":
            tol = 1e-5 if a.dtype == np.float32 else 1e-9  # float32 sums: pandas adds in float32
            np.testing.assert_allclose(a, b, rtol=tol, atol=tol * 1e-3, equal_nan=True,
                                       err_msg=c)
        else:
            np.testing.assert_array_equal(a, b, err_msg=c)


AGGS = {f"x_{f}": ("x", f) for f in FUNCS} | {f"i_{f}": ("i", f) for f in FUNCS} | {
    "f4_first": ("f4", "first"), "f4_max": ("f4", "max"), "f4_sum": ("f4", "sum"),
    "big_sum": ("big", "sum"), "big_min": ("big", "min"), "big_max": ("big", "max"),
    "flag_sum": ("flag", "sum"), "flag_max": ("flag", "max"), "flag_mean": ("flag", "mean"),
    "t_min": ("t", "min"), "t_max": ("t", "max"), "t_count": ("t", "count"),
    "t_first": ("t", "first"), "t_last": ("t", "last"), "t_nunique": ("t", "nunique")}


@pytest.mark.parametrize("keys", [["k"], ["k8", "b"], ["s"], ["u", "k8"], ["day"],
                                  ["b", "s", "k8"]])
@pytest.mark.parametrize("nthreads", [1, 2])
def test_groupby_equals_pandas(ct, keys, nthreads, monkeypatch):
    monkeypatch.setattr(bcolzx.defaults, "nthreads", nthreads)
    want = frame(ct).groupby(keys).agg(**AGGS)
    got = ct.groupby(keys, AGGS, out_flavor="dataframe")
    check(got, want)


def test_result_ctable_and_list_specs(ct, tmp_path):
    out = ct.groupby("k8", [("x", "sum"), ("i", "max", "top")], rootdir=str(tmp_path / "g"))
    assert out.names == ["k8", "x_sum", "top"] and out.rootdir == str(tmp_path / "g")
    want = frame(ct).groupby("k8").agg(x_sum=("x", "sum"), top=("i", "max"))
    np.testing.assert_array_equal(out["k8"][:], want.index.to_numpy())
    np.testing.assert_allclose(out["x_sum"][:], want["x_sum"].to_numpy())
    np.testing.assert_array_equal(out["top"][:], want["top"].to_numpy())


def test_where_condition_and_mask(ct):
    df = frame(ct)
    want = df[(df.i > 0) & (df.k < 10)].groupby("k").agg(**AGGS)
    check(ct.groupby("k", AGGS, where="(i > 0) & (k < 10)", out_flavor="dataframe"), want)
    mask = df.b.to_numpy()
    check(ct.groupby("s", AGGS, where=mask, out_flavor="dataframe"),
          df[mask].groupby("s").agg(**AGGS))
    none = ct.groupby("k", {"n": ("x", "count")}, where="i > 10**6")
    assert len(none) == 0 and none.names == ["k", "n"]


def test_nat_keys_dropped_or_kept(ct):
    df = frame(ct)
    check(ct.groupby("t", {"n": ("i", "count")}, out_flavor="dataframe"),
          df.groupby("t").agg(n=("i", "count")))
    got = ct.groupby("t", {"n": ("i", "count")}, dropna=False, out_flavor="dataframe")
    want = df.groupby("t", dropna=False).agg(n=("i", "count"))
    assert len(got) == len(want) and got["n"].sum() == len(df)
    assert np.isnat(got.index.to_numpy()[-1]) and got["n"].iloc[-1] == want["n"].iloc[-1]


def test_ddof(ct):
    df = frame(ct)
    got = ct.groupby("k8", {"v": ("x", "var"), "s": ("i", "std")}, ddof=0,
                     out_flavor="dataframe")
    want = df.groupby("k8").agg(v=("x", lambda s: s.var(ddof=0)),
                                s=("i", lambda s: s.std(ddof=0)))
    check(got, want)


def test_columns_of_different_chunk_lengths(tmp_path):
    rng = np.random.default_rng(1)
    k = rng.integers(0, 7, 30_000).astype(np.int16)
    x = rng.normal(size=30_000)
    ct = bcolzx.ctable([bcolzx.carray(k, chunklen=1000), bcolzx.carray(x, chunklen=3000)],
                       names=["k", "x"])
    assert ct["k"].chunklen != ct["x"].chunklen
    want = pd.DataFrame({"k": k, "x": x}).groupby("k").agg(m=("x", "mean"), f=("x", "first"))
    check(ct.groupby("k", {"m": ("x", "mean"), "f": ("x", "first")}, out_flavor="dataframe"),
          want)


def test_empty_table():
    ct = bcolzx.ctable([np.empty(0, np.int64), np.empty(0)], names=["k", "x"])
    out = ct.groupby("k", {"s": ("x", "sum")})
    assert len(out) == 0 and out["s"].dtype == np.float64


def test_many_groups_grow_the_tables():
    rng = np.random.default_rng(2)
    k = rng.permutation(300_000) % 100_000
    ct = bcolzx.ctable([k, np.ones(len(k))], names=["k", "x"], chunklen=10_000)
    out = ct.groupby("k", {"n": ("x", "sum")})
    np.testing.assert_array_equal(out["k"][:], np.arange(100_000))
    assert (out["n"][:] == 3).all()


@pytest.mark.parametrize("bad, error", [
    ({"a": ("x", "median")}, ValueError), ({"a": ("nope", "sum")}, KeyError),
    ({"a": ("s", "sum")}, TypeError), ({"a": ("t", "mean")}, TypeError),
    ([("x",)], ValueError), ({"k": ("x", "sum")}, ValueError), ({}, ValueError)])
def test_bad_aggregations_are_refused(ct, bad, error):
    with pytest.raises(error):
        ct.groupby("k", bad)


def test_bad_keys_are_refused(ct):
    with pytest.raises(TypeError, match="cannot be a key"):
        ct.groupby("x", {"n": ("i", "count")})
    with pytest.raises(KeyError):
        ct.groupby("nope", {"n": ("i", "count")})
    with pytest.raises(ValueError):
        ct.groupby(["k", "k"], {"n": ("i", "count")})
    with pytest.raises(ValueError, match="out_flavor"):
        ct.groupby("k", {"n": ("i", "count")}, out_flavor="arrow")


def test_kernels_check_their_arguments():
    t = kernels.Int64Table()
    with pytest.raises(ValueError):
        t.factorize(np.arange(3), np.empty(2, np.int64))
    with pytest.raises(ValueError):
        kernels.sums_f8(np.zeros(3, np.int64), np.zeros(3), 5, np.zeros(2), np.zeros(5),
                        np.zeros(5, np.int64))
    with pytest.raises(ValueError):
        kernels.BytesTable(0)
    b = kernels.BytesTable(2)
    with pytest.raises(ValueError):
        b.factorize(np.array([b"abc"]), np.empty(1, np.int64))
    codes = np.empty(4, np.int64)
    t.factorize(np.array([5, -1, 5, 7]), codes, np.array([1, 1, 0, 1], np.uint8))
    assert codes.tolist() == [0, 1, -1, 2] and t.keys().tolist() == [5, -1, 7]
