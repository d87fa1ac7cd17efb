"""SQL over ctables from DuckDB (and Polars), streamed as an Arrow dataset with
projection and filter push-down: DuckDB's answers, and what was decompressed."""

import doctest
import os
import pickle
import subprocess
import sys

import numpy as np
import pytest

import bcolzx

duckdb = pytest.importorskip("duckdb", reason="SQL from DuckDB needs duckdb: "
                                              "pip install 'bcolzx[duckdb]'")
pa = pytest.importorskip("pyarrow", reason="DuckDB scans Arrow: pip install 'bcolzx[duckdb]'")
pc = pytest.importorskip("pyarrow.compute")

from bcolzx.interop import _arrow_dataset  # noqa: E402
from bcolzx.interop.arrow import to_dataset  # noqa: E402

N = 40_000
CL = 4096


def columns(n=N):
    rng = np.random.default_rng(1)
    return {
        "i": np.arange(n, dtype=np.int64),
        "k": rng.integers(0, 50, n),
        "x": rng.normal(size=n),
        "b": np.arange(n) % 3 == 0,
        "s": rng.choice(np.array([b"ab", b"c", b"dd"]), n),
        "d": np.datetime64("2024-01-01") + (np.arange(n) // 100).astype("m8[D]"),
    }


@pytest.fixture(params=["memory", "disk", "disk-r"])
def data(request, tmp_path):
    cols = columns()
    kw = {"rootdir": str(tmp_path / "t")} if request.param != "memory" else {}
    ct = bcolzx.ctable(list(cols.values()), names=list(cols), chunklen=CL, **kw)
    if request.param == "disk-r":
        ct.flush()
        ct = bcolzx.open(str(tmp_path / "t"), mode="r")
    return ct, cols


def query(ct, sql):
    con = duckdb.connect()
    ds = bcolzx.duckdb.register(con, "t", ct)
    return con.execute(sql).fetchall(), ds


def test_answers_equal_numpy(data):
    ct, c = data
    rows, _ = query(ct, "SELECT count(*), sum(x), min(k), max(i) FROM t")
    assert rows[0][0] == N and rows[0][2] == c["k"].min() and rows[0][3] == N - 1
    assert rows[0][1] == pytest.approx(c["x"].sum(), rel=1e-12)
    rows, _ = query(ct, "SELECT k, count(*), sum(i) FROM t WHERE b AND x > 0 "
                        "GROUP BY k ORDER BY k")
    sel = c["b"] & (c["x"] > 0)
    keys = np.unique(c["k"][sel])
    assert [r[0] for r in rows] == keys.tolist()
    assert [r[1] for r in rows] == [int(np.sum(c["k"][sel] == k)) for k in keys]
    assert [r[2] for r in rows] == [int(c["i"][sel][c["k"][sel] == k].sum()) for k in keys]


@pytest.mark.parametrize("where, mask", [
    ("i >= 30000 AND i < 30010", lambda c: (c["i"] >= 30000) & (c["i"] < 30010)),
    ("i < 5 OR i > 39990", lambda c: (c["i"] < 5) | (c["i"] > 39990)),
    ("s = 'dd' AND i BETWEEN 100 AND 120", lambda c: (c["s"] == b"dd") & (c["i"] >= 100)
     & (c["i"] <= 120)),
    ("d = DATE '2024-03-01'", lambda c: c["d"] == np.datetime64("2024-03-01")),
    ("i * 2 + 1 = 8001", lambda c: c["i"] * 2 + 1 == 8001),  # not translated: all read
    ("NOT b AND i <> 7 AND i <= 20", lambda c: ~c["b"] & (c["i"] != 7) & (c["i"] <= 20)),
    ("k IN (3, 4) AND x < -1", lambda c: np.isin(c["k"], [3, 4]) & (c["x"] < -1)),
])
def test_filters_equal_numpy(data, where, mask):
    ct, c = data
    rows, _ = query(ct, f"SELECT i, s FROM t WHERE {where} ORDER BY i")
    sel = mask(c)
    assert [r[0] for r in rows] == c["i"][sel].tolist()
    assert [r[1] for r in rows] == c["s"][sel].tolist()  # bytes: an Arrow binary column


def test_selective_filter_reads_only_the_chunks_zone_maps_allow(tmp_path):
    c = columns()
    bcolzx.ctable(list(c.values()), names=list(c), chunklen=CL,
                  rootdir=str(tmp_path / "t")).flush()

    def fresh(sql):  # each query on a table just opened: nothing decoded yet
        return query(bcolzx.open(str(tmp_path / "t"), mode="r"), sql)

    full = N * 8  # bytes of a whole int64 or float64 column
    # The stored last, short chunk has no zone map: the planner reads it for
    # its bounds (of i, the condition's column) where they may rule it out.
    left = (N % CL) * 8
    rows, ds = fresh("SELECT sum(x) FROM t WHERE i >= 8200 AND i < 8300")
    assert rows[0][0] == pytest.approx(c["x"][8200:8300].sum(), rel=1e-12)
    # Rows 8200..8299 are in chunk 2 only: one chunk of i and one of x, and the
    # short chunk of i, whose bounds rule it out (x's is not read).
    assert ds.decoded_bytes == 2 * CL * 8 + left
    rows, ds = fresh("SELECT sum(x) FROM t WHERE k >= 0")  # every chunk may match
    assert rows[0][0] == pytest.approx(c["x"].sum(), rel=1e-12)
    assert ds.decoded_bytes == 2 * full
    rows, ds = fresh("SELECT sum(x) FROM t WHERE i > 100000")  # none may match
    assert rows == [(None,)] and ds.decoded_bytes == left
    ct = bcolzx.open(str(tmp_path / "t"), mode="r")
    query(ct, "SELECT sum(x) FROM t WHERE i < 10")
    assert ct.cols["k"].engine.decoded_bytes == 0  # a column not asked for is not read


def test_projection_reads_only_named_columns(data):
    ct, c = data
    rows, ds = query(ct, "SELECT max(x) FROM t")
    assert rows[0][0] == c["x"].max()
    for name in ("i", "k", "b", "s", "d"):
        assert ct.cols[name].engine.decoded_bytes == 0, name
    # The full chunks; the last, short one too when it is read from disk (mode 'r').
    stored = N if ct.mode == "r" else N - N % CL
    assert ds.decoded_bytes == stored * 8


def test_a_carray_is_a_table_of_one_column():
    a = bcolzx.carray(np.arange(10_000) % 17, chunklen=1024)
    con = duckdb.connect()
    bcolzx.duckdb.register(con, "a", a, "v")
    assert con.execute("SELECT sum(v) FROM a WHERE v > 10").fetchall() == \
        [(int(a[:][a[:] > 10].sum()),)]
    bcolzx.duckdb.register(con, "b", a)
    assert con.execute("SELECT count(values) FROM b").fetchall() == [(10_000,)]


def test_bad_input_is_refused():
    ct = bcolzx.ctable([np.arange(3)], names=["a"])
    with pytest.raises(TypeError, match="ctable or a carray"):
        bcolzx.duckdb.register(duckdb.connect(), "t", np.arange(3))
    with pytest.raises(KeyError):
        bcolzx.duckdb.register(duckdb.connect(), "t", ct, ["nope"])
    ds = to_dataset(ct)
    with pytest.raises(KeyError, match="nope"):
        ds.to_table(columns=["nope"])
    with pytest.raises(TypeError, match="to_dataset"):
        type(ds)()
    with pytest.raises(TypeError, match="supports scans"):
        ds.get_fragments()


def test_dataset_calls(data):
    ct, c = data
    ds = to_dataset(ct, ["i", "x"])
    assert ds.schema.names == ["i", "x"]
    assert ds.count_rows() == N
    assert ds.count_rows(filter=pc.field("i") < 10) == 10
    assert ds.head(3, columns=["i"]).column("i").to_pylist() == [0, 1, 2]
    assert ds.take([5, 7], columns=["x"]).column("x").to_pylist() == c["x"][[5, 7]].tolist()
    got = pa.Table.from_batches(ds.to_batches(columns=["x"], filter=pc.field("i") >= N - 3))
    assert got.column("x").to_pylist() == c["x"][-3:].tolist()
    assert "40000 rows" in repr(ds)
    again = pickle.loads(pickle.dumps(ds))
    assert again.to_table().num_rows == N


def test_translation_is_exact_or_nothing():
    schema = pa.schema([("i", pa.int64()), ("x", pa.float64()), ("s", pa.string())])
    i, x, s = pc.field("i"), pc.field("x"), pc.field("s")
    zoned = {"i", "x", "s"}
    cond, scalars = _arrow_dataset.translate(pa, pc, (i > 3) & ((x <= 1.5) | (s == "a b")),
                                             schema, zoned)
    assert set(scalars.values()) == {3, 1.5, "a b"}
    assert "&" in cond and "|" in cond
    # Columns without a zone map count as True; unknown forms translate to nothing.
    cond, _ = _arrow_dataset.translate(pa, pc, (i > 3) & (x < 0.0), schema, {"i"})
    assert cond == "(i > v0_) & (True)"
    # A string that reads like an expression stays one constant.
    assert _arrow_dataset.translate(pa, pc, s == "a) or (i > 1", schema, zoned) == \
        ("s == v0_", {"v0_": "a) or (i > 1"})
    for odd in (i + 1 > 3, ~(i > 3), i.isin([3, 4]), x < 0,  # an int constant: not x's type
                (s == 'a" and "b') & (i > 1)):
        assert _arrow_dataset.translate(pa, pc, odd, schema, zoned) is None, str(odd)
    assert _arrow_dataset.translate(pa, pc, None, schema, zoned) is None


def test_polars_scans_the_dataset(data):
    pl = pytest.importorskip("polars", reason="Polars scans need polars")
    ct, c = data
    lf = pl.scan_pyarrow_dataset(to_dataset(ct))
    got = lf.filter(pl.col("i") >= 39_000).select(pl.col("x").sum()).collect()
    assert got.item() == pytest.approx(c["x"][39_000:].sum(), rel=1e-12)


def test_importing_bcolzx_imports_neither_duckdb_nor_pyarrow():
    # A fresh interpreter, finding the bcolzx under test first.
    here = os.path.dirname(os.path.dirname(os.path.abspath(bcolzx.__file__)))
    loaded = subprocess.check_output(
        [sys.executable, "-c", "import sys, bcolzx, bcolzx.interop; "
         "print(*sorted(m for m in ('duckdb', 'pyarrow', 'polars') if m in sys.modules))"],
        cwd=here, env={**os.environ, "PYTHONPATH": here}, text=True)
    assert loaded.split() == []


def test_docstring_examples_run():
    import bcolzx.interop.duckdb

    for module in (bcolzx.interop.duckdb, bcolzx.interop.arrow):
        result = doctest.testmod(module, verbose=False)
        assert result.attempted > 0 and result.failed == 0
