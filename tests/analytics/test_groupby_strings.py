"""ctable.groupby with strings: StringDType, variable-length bytes and fixed-width
keys and values, against pandas' groupby of the same data."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bcolzx
from bcolzx._ext import groupby as kernels
from bcolzx._ext import strings as string_kernels
from bcolzx._storage.vlen import VlenArray

S = np.dtypes.StringDType()
SNAN = np.dtypes.StringDType(na_object=np.nan)
BYTES = bcolzx.vlen_dtype(bytes)

#: Names with empty strings, non-ASCII text, 4-byte characters, a NUL, a long one.
NAMES = ["", "AAPL", "é", "e", "日本語", "😀 emoji", "a\x00b", "\U0010ffff", "x" * 300,
         "Zürich", "zurich", "b", "ab"]
TEXT_FUNCS = ["count", "min", "max", "first", "last", "nunique"]
NUM_FUNCS = ["sum", "mean", "count", "min", "max", "std", "var", "first", "last", "nunique"]


def tickers(rng, n, pool=400):
    """`n` tickers of 1-5 capital letters drawn from `pool` distinct ones."""
    letters = np.array(list("ABCDEFGHIJKLMNOPQRSTUVWXYZ"))
    names = sorted({"".join(rng.choice(letters, rng.integers(1, 6))) for _ in range(pool)})
    return np.array(names, dtype=S)[rng.integers(0, len(names), n)]


def data(n=30_011, seed=0):
    rng = np.random.default_rng(seed)
    name = np.array(NAMES, dtype=S)[rng.integers(0, len(NAMES), n)]
    sn = np.array(NAMES, dtype=SNAN)[rng.integers(0, len(NAMES), n)]
    sn[rng.random(n) < 0.1] = np.nan
    sn[:50] = np.nan  # a group's first rows missing (first skips them)
    by = np.array([s.encode() for s in NAMES] + [b"\xff\x00", b"\x80"], dtype=object)[
        rng.integers(0, len(NAMES) + 2, n)].astype(BYTES)
    x = rng.normal(size=n)
    x[::17] = np.nan
    return {
        "tick": tickers(rng, n),
        "name": name,
        "sn": sn,
        "by": by,
        "u": rng.choice(np.array(["x", "y\u00e9", "zz", ""]), n),
        "i": rng.integers(-3, 4, n),
        "x": x,
    }


def frame(cols):
    """The pandas DataFrame of the same data: str columns (NaN missing), bytes as objects."""
    out = {}
    for name, values in cols.items():
        if isinstance(values.dtype, np.dtypes.StringDType):
            out[name] = pd.array(values, dtype=pd.StringDtype(na_value=np.nan))
        elif values.dtype == object:
            out[name] = pd.Series(values, dtype=object)
        else:
            out[name] = values
    return pd.DataFrame(out)


AGGS = {f"x_{f}": ("x", f) for f in NUM_FUNCS} | {
    f"{c}_{f}": (c, f) for c in ("tick", "name", "sn", "by", "u") for f in TEXT_FUNCS}


@pytest.fixture(params=["memory", "disk"])
def make(request, tmp_path):
    def make(cols, chunklen=None):
        kw = {"rootdir": str(tmp_path / f"t{len(list(tmp_path.iterdir()))}")} \
            if request.param == "disk" else {}
        arrays = [bcolzx.carray(v, chunklen=chunklen) if chunklen else v
                  for v in cols.values()]
        ct = bcolzx.ctable(arrays, names=list(cols), **kw)
        if kw:
            ct.flush()
            return bcolzx.open(kw["rootdir"], mode="r")
        return ct
    return make


def check(got, want):
    pd.testing.assert_frame_equal(got, want, check_exact=False, rtol=1e-9)


def without(aggs, key):
    """The aggregations not of a key column (pandas leaves those out)."""
    return {n: (c, f) for n, (c, f) in aggs.items() if c not in key}


@pytest.mark.parametrize("keys", [["tick"], ["name"], ["sn"], ["by"], ["tick", "i"],
                                  ["i", "name"], ["u", "sn"], ["by", "u", "i"]])
@pytest.mark.parametrize("nthreads", [1, 2])
def test_string_keys_equal_pandas(make, keys, nthreads, monkeypatch):
    monkeypatch.setattr(bcolzx.defaults, "nthreads", nthreads)
    cols = data()
    ct = make(cols)
    aggs = without(AGGS, keys)
    check(ct.groupby(keys, aggs, out_flavor="dataframe"),
          frame(cols).groupby(keys).agg(**aggs))


@pytest.mark.parametrize("nthreads", [1, 2])
def test_chunk_by_chunk_over_many_chunks(make, nthreads, monkeypatch):
    """Columns of one chunk length go chunk by chunk: no read spans more than a
    chunk, the keys' groups span every chunk."""
    monkeypatch.setattr(bcolzx.defaults, "nthreads", nthreads)
    cols = data(n=40_000, seed=3)
    ct = make({k: cols[k] for k in ("tick", "sn", "by")}, chunklen=512)
    spans = []
    real = VlenArray.read

    def read(self, start, stop, out=None):
        spans.append(stop - start)
        return real(self, start, stop, out)

    monkeypatch.setattr(VlenArray, "read", read)
    aggs = {f"{c}_{f}": (c, f) for c in ("sn", "by") for f in TEXT_FUNCS}
    got = ct.groupby("tick", aggs, out_flavor="dataframe")
    assert max(spans, default=0) <= 512
    monkeypatch.setattr(VlenArray, "read", real)
    check(got, frame({k: cols[k] for k in ("tick", "sn", "by")}).groupby("tick").agg(**aggs))
    assert ct["tick"].nchunks >= 70


def test_missing_string_keys_kept_with_dropna_false(make):
    cols = data(seed=4)
    ct = make(cols)
    aggs = {"n": ("x", "count"), "f": ("name", "first"), "m": ("by", "max")}
    got = ct.groupby("sn", aggs, dropna=False, out_flavor="dataframe")
    want = frame(cols).groupby("sn", dropna=False).agg(**aggs)
    check(got, want)
    assert pd.isna(got.index[-1]) and got["n"].sum() == cols["x"].size - np.isnan(
        cols["x"]).sum()
    both = ct.groupby(["sn", "i"], aggs, dropna=False, out_flavor="dataframe")
    check(both, frame(cols).groupby(["sn", "i"], dropna=False).agg(**aggs))


def test_where_on_string_tables(make):
    cols = data(seed=5)
    ct = make(cols)
    df = frame(cols)
    aggs = without(AGGS, ["tick"])
    check(ct.groupby("tick", aggs, where="(i > 0) & (x < 1)", out_flavor="dataframe"),
          df[(df.i > 0) & (df.x < 1)].groupby("tick").agg(**aggs))
    check(ct.groupby("name", without(AGGS, ["name"]), where="name >= 'b'",
                     out_flavor="dataframe"),
          df[df.name >= "b"].groupby("name").agg(**without(AGGS, ["name"])))
    mask = cols["i"] == 2
    check(ct.groupby(["by", "tick"], without(AGGS, ["by", "tick"]), where=mask,
                     out_flavor="dataframe"),
          df[mask].groupby(["by", "tick"]).agg(**without(AGGS, ["by", "tick"])))


def test_result_ctable_keeps_the_string_dtypes(make, tmp_path):
    cols = data(n=5000, seed=6)
    ct = make(cols)
    out = ct.groupby("sn", {"f": ("name", "first"), "m": ("sn", "max"), "b": ("by", "min"),
                            "n": ("tick", "nunique")}, rootdir=str(tmp_path / "out"))
    assert out.names == ["sn", "f", "m", "b", "n"]
    assert out["sn"].dtype == SNAN and out["f"].dtype == S and out["m"].dtype == SNAN
    assert out["b"].dtype == BYTES and out["n"].dtype == np.int64
    again = bcolzx.open(str(tmp_path / "out"), mode="r")
    want = frame(cols).groupby("sn").agg(f=("name", "first"))
    assert again["sn"][:].tolist() == want.index.tolist()
    assert again["f"][:].tolist() == want["f"].tolist()


def test_dataframe_output_has_pandas_strings(make):
    ct = make(data(n=2000, seed=7))
    got = ct.groupby(["tick", "by"], {"f": ("sn", "first"), "l": ("by", "last")},
                     out_flavor="dataframe")
    assert isinstance(got.index.levels[0].dtype, pd.StringDtype)
    assert isinstance(got["f"].dtype, pd.StringDtype) and got["f"].dtype.na_value is np.nan
    assert got.index.levels[1].dtype == object and got["l"].dtype == object
    assert all(isinstance(v, bytes) for v in got["l"])


def test_a_group_whose_strings_are_all_missing(make):
    k = np.array([1, 1, 2, 2, 3])
    v = np.array([np.nan, np.nan, "b", np.nan, ""], dtype=SNAN)
    ct = make({"k": k, "v": v})
    aggs = {f: ("v", f) for f in TEXT_FUNCS}
    got = ct.groupby("k", aggs, out_flavor="dataframe")
    check(got, frame({"k": k, "v": v}).groupby("k").agg(**aggs))
    assert pd.isna(got.loc[1, "first"]) and got.loc[1, "count"] == 0


def test_numeric_aggregations_of_strings_are_refused(make):
    ct = make(data(n=100))
    for col in ("tick", "sn", "by", "u"):
        for func in ("sum", "mean", "std", "var"):
            with pytest.raises(TypeError, match="count, min, max, first, last and nunique"):
                ct.groupby("i", {"a": (col, func)})


def test_pickled_objects_are_not_keys():
    ct = bcolzx.ctable([np.array([{1: 2}, 3], dtype=object), np.arange(2)], names=["o", "i"],
                       allow_pickle=True)
    with pytest.raises(TypeError, match="cannot be a key"):
        ct.groupby("o", {"n": ("i", "count")})
    with pytest.raises(TypeError, match="not supported"):
        ct.groupby("i", {"n": ("o", "count")})


texts = st.lists(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=6),
                 min_size=1, max_size=60)


@settings(max_examples=40, deadline=None)
@given(keys=texts, seed=st.integers(0, 2**16))
def test_any_unicode_keys_equal_pandas(keys, seed):
    rng = np.random.default_rng(seed)
    k = np.array(keys, dtype=S)
    v = np.array(keys, dtype=S)[rng.permutation(len(keys))]
    cols = {"k": k, "v": v, "x": rng.integers(0, 9, len(keys))}
    ct = bcolzx.ctable([bcolzx.carray(c, chunklen=4) for c in cols.values()], names=list(cols))
    aggs = {f: ("v", f) for f in TEXT_FUNCS} | {"s": ("x", "sum")}
    check(ct.groupby("k", aggs, out_flavor="dataframe"),
          frame(cols).groupby("k").agg(**aggs))


def test_var_bytes_table():
    t = kernels.VarBytesTable()
    data = np.frombuffer(b"abcabc", np.uint8)
    codes = np.empty(5, np.int64)
    t.factorize(data, np.array([0, 3, 3, 6, 6, 6]), codes, np.array([0, 0, 2, 1, 2], np.uint8))
    assert codes.tolist() == [0, 1, 2, -1, 2]
    raw, offsets, na = t.keys()
    assert raw.tobytes() == b"abc" and offsets.tolist() == [0, 3, 3, 3] and na == 2
    t.factorize(data, np.array([0, 3, 6]), codes[:2])
    assert codes[:2].tolist() == [0, 0] and t.ngroups == 3
    with pytest.raises(ValueError, match="outside"):
        t.factorize(data, np.array([0, 7]), codes[:1])
    with pytest.raises(ValueError, match="decreasing"):
        t.factorize(data, np.array([3, 1]), codes[:1])
    with pytest.raises(ValueError):
        t.factorize(data, np.array([0, 1]), codes[:2])
    many = np.frombuffer("".join(str(i) for i in range(50_000)).encode(), np.uint8)
    ends = np.cumsum([len(str(i)) for i in range(50_000)])
    out = np.empty(50_000, np.int64)
    t2 = kernels.VarBytesTable()
    t2.factorize(many, np.concatenate(([0], ends)), out)
    assert out.tolist() == list(range(50_000)) and t2.ngroups == 50_000


def test_flatten_kernel():
    rows = np.array(["", "é", np.nan, "😀"], dtype=SNAN)
    data, offsets, na = string_kernels.flatten(rows)
    assert data.tobytes() == "é😀".encode() and offsets.tolist() == [0, 0, 2, 2, 6]
    assert na.tolist() == [0, 0, 1, 0]
    assert string_kernels.flatten(np.array(["a"], dtype=S))[2] is None
    with pytest.raises(TypeError):
        string_kernels.flatten(np.array(["a"]))


@pytest.mark.parametrize("chunklen", [512, None])  # one chunk length / the columns' own
@pytest.mark.parametrize("dropna", [True, False])
@pytest.mark.parametrize("nthreads", [1, 2])
def test_string_keys_are_factorized_from_the_chunks_bytes(make, chunklen, dropna, nthreads,
                                                          monkeypatch):
    """Keys that are not values too are never decoded into strings (chunk by
    chunk, or block by block when the columns' chunks differ): the groups still
    equal pandas', missing keys, rows past the full chunks and all."""
    monkeypatch.setattr(bcolzx.defaults, "nthreads", nthreads)
    cols = data(n=20_011, seed=9)
    cols = {k: cols[k] for k in ("tick", "sn", "by", "i", "x")}
    ct = make(cols, chunklen=chunklen)
    assert len(ct) % ct["sn"].chunklen  # a partial last chunk
    aggs = {"n": ("x", "count"), "s": ("x", "sum"), "f": ("i", "first")}

    def no_strings(self, *args):
        raise AssertionError("a chunk of keys was decoded into strings")

    real = VlenArray.read

    def read(self, start, stop, out=None):  # the rows past the full chunks only
        if stop - start >= self.chunklen:
            no_strings(self)
        return real(self, start, stop, out)

    for keys in (["sn"], ["tick", "i"], ["by"], ["i", "sn", "by"]):
        with monkeypatch.context() as m:
            m.setattr(VlenArray, "decode_chunk", no_strings)
            m.setattr(VlenArray, "read", read)
            got = ct.groupby(keys, aggs, dropna=dropna, out_flavor="dataframe")
        check(got, frame(cols).groupby(keys, dropna=dropna).agg(**aggs))


def test_keys_that_are_not_utf8_are_corrupt_data(tmp_path, monkeypatch):
    """Keys factorized from their chunk's bytes are checked as a read checks them."""
    from bcolzx._format import strings, vlen
    from bcolzx.errors import CorruptDataError

    root = str(tmp_path / "t")
    with monkeypatch.context() as m:
        m.setattr(strings, "encode_rows", lambda rows, kind: vlen.encode_planar(
            [b"a", b"b", b"\xc3(", b"b"] if len(rows) == 4 else [s.encode() for s in rows]))
        bcolzx.ctable([np.array(["a", "b"] * 8, dtype=S), np.arange(16)], names=["k", "x"],
                      rootdir=root, chunklen=4).flush()
    ct = bcolzx.open(root, mode="r")
    with pytest.raises(CorruptDataError, match="UTF-8") as err:
        ct.groupby("k", {"n": ("x", "count")})
    assert err.value.chunk == 0
