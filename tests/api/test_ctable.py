"""bcolzx.ctable against a NumPy structured-array model, in memory and on disk."""

import os
import pickle
from collections import namedtuple

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import bcolzx
from bcolzx import carray, ctable
from bcolzx.errors import CorruptDataError, ExpressionError, NoColumnsError, ReadOnlyError

N = 3000


def _same(got, want):
    """Structured arrays equal field by field (NaN equal to NaN, as in NumPy's testing)."""
    assert got.dtype == want.dtype and got.shape == want.shape
    for name in want.dtype.names:
        np.testing.assert_array_equal(got[name], want[name])


def _model(n=N, seed=0):
    rng = np.random.default_rng(seed)
    out = np.empty(n, dtype=[("i", "i8"), ("x", "f8"), ("k", "i4"), ("s", "S4")])
    out["i"] = np.arange(n)
    out["x"] = rng.random(n)
    out["k"] = rng.integers(0, 1000, n)
    out["s"] = rng.choice([b"ab", b"cd", b"efgh"], n)
    return out


@pytest.fixture(params=["memory", "disk"])
def make(request, tmp_path):
    counter = iter(range(1000))

    def make(columns, **kwargs):
        if request.param == "disk":
            kwargs.setdefault("rootdir", str(tmp_path / f"t{next(counter)}"))
        return ctable(columns, **kwargs)
    make.disk = request.param == "disk"
    return make


def test_build_from_structured_array_and_read_back(make):
    data = _model()
    ct = make(data, chunklen=256)
    assert ct.names == ["i", "x", "k", "s"]
    assert ct.dtype == data.dtype
    assert len(ct) == ct.len == ct.size == N and ct.shape == (N,) and ct.ndim == 1
    np.testing.assert_array_equal(ct[:], data)
    np.testing.assert_array_equal(ct[10:2000:7], data[10:2000:7])
    np.testing.assert_array_equal(ct[::-3], data[::-3])
    assert ct[5] == data[5] and isinstance(ct[5], np.void)
    assert ct[-1] == data[-1]
    assert ct.nbytes == data.nbytes and 0 < ct.cbytes


def test_build_from_columns_with_default_names(make):
    ct = make([np.arange(5), [1.5] * 5, bcolzx.arange(5) * 0 if False else np.zeros(5, "i2")])
    assert ct.names == ["f0", "f1", "f2"]
    assert ct.dtype == np.dtype([("f0", "i8"), ("f1", "f8"), ("f2", "i2")])


@pytest.mark.parametrize("columns, names, exc", [
    ([np.arange(3), np.arange(4)], None, ValueError),
    ([np.arange(3)], ["a", "b"], ValueError),
    ([np.arange(3), np.arange(3)], ["a", "a"], ValueError),
    ([np.arange(3)], ["__x"], ValueError),
    ([np.arange(3)], ["a/b"], ValueError),
    ([], None, ValueError),
    (42, None, TypeError),
])
def test_bad_columns_raise(columns, names, exc):
    with pytest.raises(exc):
        ctable(columns, names=names)


def test_getitem_key_kinds(make):
    data = _model()
    ct = make(data, chunklen=256)
    assert isinstance(ct["x"], carray)
    np.testing.assert_array_equal(ct["x"][:], data["x"])
    sub = ct[["k", "i"]]
    assert isinstance(sub, ctable) and sub.names == ["k", "i"]
    np.testing.assert_array_equal(sub["i"][:], data["i"])
    idx = [5, 2999, 0, 5]
    np.testing.assert_array_equal(ct[idx], data[idx])
    np.testing.assert_array_equal(ct[np.array(idx)], data[idx])
    mask = data["k"] < 100
    np.testing.assert_array_equal(ct[mask], data[mask])
    np.testing.assert_array_equal(ct["(k < 100) & (x > 0.5)"],
                                  data[(data["k"] < 100) & (data["x"] > 0.5)])
    with pytest.raises(IndexError):
        ct[N]
    with pytest.raises(KeyError):
        ct[["i", "nope"]]


def test_setitem(make):
    data = _model()
    ct = make(data, chunklen=256)
    row = (-1, -1.0, -1, b"zz")
    ct[7] = row
    data[7] = row
    ct[100:110] = data[:10]
    data[100:110] = data[:10].copy()
    ct["k == 5"] = (0, 0.0, 5, b"k5")
    data[data["k"] == 5] = (0, 0.0, 5, b"k5")
    np.testing.assert_array_equal(ct[:], data)


def test_append_forms_and_atomicity(make):
    data = _model(10)
    ct = make(data[:4])
    ct.append(data[4:6])                                   # structured array
    ct.append([data["i"][6:8], data["x"][6:8], carray(data["k"][6:8]), data["s"][6:8]])
    ct.append(tuple(data[8]))                              # one record as a tuple
    ct.append(data[9])                                     # np.void
    np.testing.assert_array_equal(ct[:], data)
    ct.append([np.arange(2), 0.5, 7, b"q"])                # scalars broadcast
    assert len(ct) == 12 and ct[11]["x"] == 0.5 and ct[11]["s"] == b"q"
    other = ctable(data[:3])
    ct.append(other)
    assert len(ct) == 15
    with pytest.raises(ValueError):
        ct.append([np.arange(2), np.arange(3), 1, b"a"])   # lengths differ
    with pytest.raises((TypeError, ValueError)):
        ct.append([np.arange(2), ["x", "y"], 1, b"a"])     # not floats
    assert len(ct) == 15 and all(len(c) == 15 for c in ct.cols.values())


def test_trim_resize(make):
    data = _model(1000)
    ct = make(data, chunklen=64)
    ct.trim(100)
    np.testing.assert_array_equal(ct[:], data[:900])
    ct.resize(950)
    assert len(ct) == 950 and ct[949]["i"] == 0
    ct.resize(10)
    np.testing.assert_array_equal(ct[:], data[:10])
    with pytest.raises(ValueError):
        ct.trim(11)


def test_addcol_delcol(make):
    data = _model(100)
    ct = make(data)
    ct.addcol(data["x"] * 2, name="y")
    ct.addcol(np.arange(100, dtype="u2"), name="first", pos=0)
    assert ct.names == ["first", "i", "x", "k", "s", "y"]
    np.testing.assert_array_equal(ct["y"][:], data["x"] * 2)
    with pytest.raises(ValueError):
        ct.addcol(np.arange(3), name="bad")
    with pytest.raises(ValueError):
        ct.addcol(np.arange(100), name="y")
    ct.delcol("first")
    ct.delcol(pos=1)
    assert ct.names == ["i", "k", "s", "y"]
    ct.delcol()
    assert ct.names == ["i", "k", "s"]
    if make.disk:
        assert sorted(os.listdir(ct.rootdir)) == ["__attrs__", "__lock__", "__rootdirs__", "i",
                                                  "k", "s"]
        again = ctable(rootdir=ct.rootdir, mode="r")
        assert again.names == ["i", "k", "s"]


def test_addcol_move_an_on_disk_carray(tmp_path):
    ct = ctable(_model(50), rootdir=str(tmp_path / "t"))
    col = carray(np.arange(50.0), rootdir=str(tmp_path / "c"))
    ct.addcol(col, name="c", move=True)
    assert not os.path.exists(tmp_path / "c")
    np.testing.assert_array_equal(ctable(rootdir=str(tmp_path / "t"))["c"][:], np.arange(50.0))


def test_delcol_keep_leaves_the_directory(tmp_path):
    ct = ctable(_model(50), rootdir=str(tmp_path / "t"))
    ct.delcol("x", keep=True)
    np.testing.assert_array_equal(carray(rootdir=str(tmp_path / "t" / "x"))[:],
                                  _model(50)["x"])


def test_on_disk_layout_is_legacy_and_columns_open_alone(tmp_path):
    path = str(tmp_path / "t")
    data = _model()
    ct = ctable(data, rootdir=path)
    ct.attrs["owner"] = "me"
    ct.flush()
    import json
    with open(os.path.join(path, "__rootdirs__")) as f:
        meta = json.load(f)
    # What legacy clients read, plus the seal they ignore (docs/format/README.md §2c).
    assert meta["names"] == ["i", "x", "k", "s"]
    assert set(meta) == {"names", "__uid__", "__crc32c__"}
    for name in ct.names:
        np.testing.assert_array_equal(bcolzx.open(os.path.join(path, name), "r")[:], data[name])
    again = bcolzx.open(path, mode="r")
    assert isinstance(again, ctable) and again.attrs["owner"] == "me"
    np.testing.assert_array_equal(again[:], data)
    with pytest.raises(ReadOnlyError):
        again.append(data[:1])
    with pytest.raises(ReadOnlyError):
        again[0] = data[0]
    with pytest.raises(FileExistsError):
        ctable(data, rootdir=path)
    ctable(data[:5], rootdir=path, mode="w")
    assert len(ctable(rootdir=path)) == 5
    with pytest.raises(FileNotFoundError):
        ctable(rootdir=str(tmp_path / "nothing"))


def test_damaged_rootdirs_raises(tmp_path):
    path = str(tmp_path / "t")
    ctable(_model(10), rootdir=path)
    with open(os.path.join(path, "__rootdirs__"), "w") as f:
        f.write('{"names": 3}')
    with pytest.raises(CorruptDataError):
        ctable(rootdir=path)


def test_where_iter_and_outcols(make):
    data = _model()
    ct = make(data, chunklen=256)
    sel = data[(data["k"] < 50) & (data["x"] > 0.2)]
    rows = list(ct.where("(k < 50) & (x > 0.2)"))
    assert [r.i for r in rows] == sel["i"].tolist()
    assert type(rows[0]).__name__ == "row" and rows[0]._fields == ("i", "x", "k", "s")
    rows = list(ct.where("(k < 50) & (x > 0.2)", outcols=["nrow__", "x"], skip=2, limit=3))
    assert [r.nrow__ for r in rows] == sel["i"][2:5].tolist()
    assert [r.x for r in rows] == sel["x"][2:5].tolist()
    rows = list(ct.where("k < 50", outcols="i, k", out_flavor=tuple))
    assert rows == [tuple(r) for r in data[data["k"] < 50][["i", "k"]].tolist()]
    mask = data["k"] > 990
    assert [r.i for r in ct.where(mask)] == data["i"][mask].tolist()
    it = list(ct.iter(5, 50, 7, outcols=["x"], skip=1, limit=3))
    assert [r.x for r in it] == data["x"][5:50:7][1:4].tolist()
    assert [r.i for r in ct][:3] == [0, 1, 2]


def test_whereblocks_and_fetchwhere(make):
    data = _model()
    ct = make(data, chunklen=256)
    cond = (data["k"] % 3 == 0) & (data["x"] < 0.7)
    blocks = list(ct.whereblocks("(k % 3 == 0) & (x < 0.7)", blen=100, outcols=["i"]))
    assert all(len(b) == 100 for b in blocks[:-1]) and 0 < len(blocks[-1]) <= 100
    np.testing.assert_array_equal(np.concatenate(blocks)["i"], data["i"][cond])
    out = ct.fetchwhere("(k % 3 == 0) & (x < 0.7)")
    assert isinstance(out, ctable)
    np.testing.assert_array_equal(out[:], data[cond])
    arr = ct.fetchwhere("(k % 3 == 0) & (x < 0.7)", out_flavor="numpy", limit=5, skip=1)
    np.testing.assert_array_equal(arr, data[cond][1:6])
    empty = ct.fetchwhere("k > 5000", out_flavor="numpy")
    assert len(empty) == 0 and empty.dtype == data.dtype


def test_query_names_come_from_user_dict_then_the_callers_scope(make):
    data = _model()
    ct = make(data, chunklen=256)
    lo = 10
    got = ct.fetchwhere("(k > lo) & (k < hi)", user_dict={"hi": 20}, out_flavor="numpy")
    np.testing.assert_array_equal(got, data[(data["k"] > 10) & (data["k"] < 20)])
    ext = np.arange(N) % 2 == 0  # an array variable of the table's length
    got = ct.fetchwhere("ext & (k < 100)", out_flavor="numpy")
    np.testing.assert_array_equal(got, data[ext & (data["k"] < 100)])
    with pytest.raises(ExpressionError):
        ct.fetchwhere("nowhere > 1")


@pytest.mark.parametrize("expression", [
    "__import__('os').system('echo hacked')", "k.__class__", "[k for k in x]",
    "lambda: 1", "open('/etc/passwd')", "x[0]", "k < 5 & x > 1",
])
def test_unsafe_or_ambiguous_expressions_are_refused(make, expression):
    ct = make(_model(100))
    with pytest.raises(ValueError) as info:
        list(ct.where(expression))
    if "&" in expression:
        assert "parenthes" in str(info.value)


def test_eval(make):
    data = _model()
    ct = make(data, chunklen=256)
    res = ct.eval("x * 2 + k")
    assert isinstance(res, carray)
    np.testing.assert_allclose(res[:], data["x"] * 2 + data["k"])
    np.testing.assert_allclose(ct.eval("sqrt(x)", out_flavor="numpy"), np.sqrt(data["x"]))


@pytest.mark.parametrize("vm", ["python", "numexpr"])
def test_vms_agree_on_queries(vm):
    if vm == "numexpr":
        pytest.importorskip("numexpr")
    data = _model()
    data["x"][::17] = np.nan
    ct = ctable(data, chunklen=256)
    for expression in ["x > 0.5", "~(x > 0.5)", "(x != x) | (k == 3)", "where(k > 500, x, -x) < 0"]:
        got = ct.fetchwhere(expression, out_flavor="numpy", vm=vm)
        ref = ct.fetchwhere(expression, out_flavor="numpy", vm="python")
        _same(got, ref)
    _same(ct.fetchwhere("~(x > 0.5)", out_flavor="numpy", vm=vm), data[~(data["x"] > 0.5)])


def test_zone_maps_skip_chunks_and_stay_correct(tmp_path):
    n = 100_000
    data = np.empty(n, dtype=[("t", "i8"), ("v", "f8")])
    data["t"] = np.arange(n)
    data["v"] = np.random.default_rng(1).random(n)
    path = str(tmp_path / "t")
    ct = ctable(data, rootdir=path, chunklen=1000)
    stats = ct["t"]._engine.chunk_stats()
    assert len(stats) == 100 and stats["min"][3] == 3000 and stats["max"][3] == 3999
    ct = ctable(rootdir=path, mode="a")  # the zone map is persisted
    reads = []
    col = ct["t"]
    original = type(col._engine).read

    def counting(self, start, stop, out=None):
        reads.append((start, stop))
        return original(self, start, stop, out)
    type(col._engine).read = counting
    try:
        got = ct.fetchwhere("(t >= 41500) & (t < 41700)", out_flavor="numpy")
    finally:
        type(col._engine).read = original
    np.testing.assert_array_equal(got, data[41500:41700])
    assert len(reads) <= 3  # one block of the condition column, then the output rows
    # Rewrites widen the bounds: the zone map never hides a match.
    ct["t"][5] = 10**9
    ct.flush()
    again = ctable(rootdir=path, mode="r")
    np.testing.assert_array_equal(again.fetchwhere("t > 99999999", out_flavor="numpy")["v"],
                                  data["v"][5:6])


def test_damaged_zone_map_is_detected(tmp_path):
    path = str(tmp_path / "t")
    ctable(_model(5000), rootdir=path, chunklen=500)
    zpath = os.path.join(path, "k", "meta", "zonemap")
    with open(zpath) as f:
        text = f.read()
    with open(zpath, "w") as f:
        f.write(text.replace('"crc32c": ', '"crc32c": 1'))
    with pytest.raises(CorruptDataError):
        ctable(rootdir=path).fetchwhere("k < 3")


def test_pickle_context_manager_and_repr(make, tmp_path):
    data = _model(500)
    ct = make(data)
    again = pickle.loads(pickle.dumps(ct))
    np.testing.assert_array_equal(again[:], data)
    if make.disk:
        assert again.rootdir == ct.rootdir
    with make(data) as t:
        t.append(data[:1])
    assert "ctable((500,)" in repr(ct)
    assert str(ct)


def test_copy_with_new_parameters(make, tmp_path):
    data = _model(2000)
    ct = make(data)
    ct.attrs["a"] = 1
    cp = ct.copy(cparams=bcolzx.cparams(clevel=9, cname="zstd"),
                 rootdir=str(tmp_path / "copy"))
    np.testing.assert_array_equal(cp[:], data)
    assert cp.cparams.cname == "zstd" and cp.attrs["a"] == 1
    assert ctable(rootdir=str(tmp_path / "copy")).names == ct.names


def test_toplevel_constructors_with_structured_dtypes(tmp_path):
    z = bcolzx.zeros(10, dtype="i4,f8")
    assert isinstance(z, ctable) and len(z) == 10 and z[3]["f1"] == 0
    f = bcolzx.fromiter(((i, i / 2) for i in range(1000)), dtype="i4,f8", count=1000,
                        rootdir=str(tmp_path / "f"))
    assert isinstance(f, ctable) and f[999]["f1"] == 499.5
    assert isinstance(bcolzx.open(str(tmp_path / "f")), ctable)
    found = list(bcolzx.walk(str(tmp_path)))
    assert len(found) == 1 and isinstance(found[0], ctable)
    assert list(bcolzx.walk(str(tmp_path), classname="carray")) == []


def test_auto_flush_makes_appends_durable(tmp_path):
    path = str(tmp_path / "t")
    ct = ctable(_model(10), rootdir=path, auto_flush=True)
    ct.append(_model(5))
    assert len(ctable(rootdir=path, mode="r")) == 15


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=st.lists(st.tuples(st.sampled_from(["append", "trim", "set", "query"]),
                              st.integers(0, 300), st.integers(0, 999)), max_size=12))
def test_random_operations_match_a_structured_model(ops):
    model = _model(200)
    ct = ctable(model, chunklen=32)
    for op, n, k in ops:
        if op == "append":
            more = _model(n, seed=k)
            ct.append(more)
            model = np.concatenate([model, more])
        elif op == "trim":
            n = min(n, len(model))
            ct.trim(n)
            model = model[:len(model) - n]
        elif op == "set" and len(model):
            i = n % len(model)
            ct[i] = (k, k / 7, k, b"s")
            model[i] = (k, k / 7, k, b"s")
        elif op == "query":
            got = ct.fetchwhere(f"(k < {k}) & (x > 0.3)", out_flavor="numpy")
            np.testing.assert_array_equal(got, model[(model["k"] < k) & (model["x"] > 0.3)])
    np.testing.assert_array_equal(ct[:], model)


def test_namedtuple_is_the_default_row_type(make):
    ct = make(_model(3))
    row = next(iter(ct))
    assert isinstance(row, tuple) and hasattr(row, "_fields")
    assert namedtuple  # imported for readers of this test: rows are namedtuples


@pytest.mark.parametrize("on_disk", [False, True])
def test_zone_maps_are_built_by_small_appends(tmp_path, on_disk):
    """A table grown by appends smaller than a chunk still gets its zone map."""
    path = str(tmp_path / "t") if on_disk else None
    ct = ctable(np.empty(0, dtype=[("t", "i8")]), rootdir=path, chunklen=1000)
    for start in range(0, 10_000, 300):
        ct.append([np.arange(start, start + 300)])
    ct.flush()
    if on_disk:
        ct = ctable(rootdir=path, mode="r")
    stats = ct["t"]._engine.chunk_stats()
    assert stats is not None and len(stats) == 10
    assert stats["min"][4] == 4000 and stats["max"][4] == 4999
    np.testing.assert_array_equal(ct.fetchwhere("(t >= 4100) & (t < 4105)", out_flavor="numpy")["t"],
                                  np.arange(4100, 4105))


def test_streaming_constructors_flush_once_and_keep_auto_flush(tmp_path, monkeypatch):
    """fromiter into a persistent ctable flushes once at the end, not per block, and
    leaves the table with the default (legacy) auto_flush=True."""
    calls = []
    real = ctable.flush

    def counting(self):
        calls.append(1)
        return real(self)
    monkeypatch.setattr(ctable, "flush", counting)
    dt = np.dtype([("a", "i8"), ("b", "f4")])
    ct = bcolzx.fromiter(((i, i / 2) for i in range(50_000)), dtype=dt, count=50_000,
                         rootdir=str(tmp_path / "t"), chunklen=1000)
    assert len(calls) <= 2 and ct.auto_flush is True  # creation, end (not 50 blocks)
    assert bcolzx.open(str(tmp_path / "t"), mode="r")["a"][-1] == 49_999
    ct2 = bcolzx.fromiter(((i, i) for i in range(10)), dtype=dt, count=10,
                          rootdir=str(tmp_path / "u"), auto_flush=False)
    assert ct2.auto_flush is False


@pytest.mark.parametrize("vm", ["python", "numexpr"])
def test_query_output_reuses_the_blocks_its_condition_read_and_stays_exact(tmp_path, vm):
    """Output columns the condition already read come from its blocks; other
    columns, array variables shadowing nothing, nrow__ and N-D columns stay right."""
    pytest.importorskip("numexpr") if vm == "numexpr" else None
    n = 50_000
    rng = np.random.default_rng(11)
    a = rng.integers(0, 1000, n).astype(np.int32)      # its own chunklen (4-byte rows)
    b = rng.random(n)
    c = np.arange(n * 2, dtype=np.float32).reshape(n, 2)
    ct = bcolzx.ctable([a, b, c], names=["a", "b", "c"], rootdir=str(tmp_path / "t"),
                       chunklen=4096)
    w = rng.random(n)                                   # an array variable, not a column
    got = ct.fetchwhere("(a < 100) & (b > w)", outcols=["nrow__", "b", "c", "a"],
                        user_dict={"w": w}, vm=vm, out_flavor="numpy")
    want = np.flatnonzero((a < 100) & (b > w))
    np.testing.assert_array_equal(got["nrow__"], want)
    np.testing.assert_array_equal(got["a"], a[want])
    np.testing.assert_array_equal(got["b"], b[want])
    np.testing.assert_array_equal(got["c"], c[want])
    rows = [r.a for r in ct.where("(a < 100) & (b > w)", outcols="a", skip=3, limit=20,
                                  user_dict={"w": w}, vm=vm)]
    assert rows == a[want][3:23].tolist()


@pytest.fixture()
def two_threads(monkeypatch):
    monkeypatch.setattr(bcolzx.defaults, "nthreads", 2)


def test_columns_of_a_new_table_on_disk_are_filled_concurrently(tmp_path, monkeypatch,
                                                                two_threads):
    import threading

    fills, real_append = [], carray.append

    def append(self, data):
        fills.append(threading.current_thread().name)
        return real_append(self, data)

    monkeypatch.setattr(carray, "append", append)
    cols = [np.arange(5000), np.linspace(0, 1, 5000), np.arange(5000) % 7]
    t = ctable(cols, names=["a", "b", "c"], rootdir=str(tmp_path / "t"))
    assert len(fills) == 3 and threading.current_thread().name not in fills
    assert t.names == ["a", "b", "c"]
    t.append([[1], [0.5], [2]])  # the locks stayed with this thread: it writes on
    t.close()
    again = ctable(rootdir=str(tmp_path / "t"), mode="r")
    for name, col in zip("abc", cols):
        np.testing.assert_array_equal(again[name][:-1], col)
    assert again[-1].tolist() == (1, 0.5, 2)


def test_a_column_failing_while_others_fill_leaves_no_table_behind(tmp_path, monkeypatch,
                                                                  two_threads):
    import time

    real_append, filled = carray.append, []

    def append(self, data):
        if self.dtype == np.float32:
            raise MemoryError("no room for this column")
        time.sleep(0.2)  # the other columns are still filling when it fails
        real_append(self, data)
        filled.append(len(data))

    monkeypatch.setattr(carray, "append", append)
    path = tmp_path / "t"
    with pytest.raises(MemoryError, match="no room"):
        ctable([np.arange(10), np.ones(10, np.float32), np.arange(10.0)],
               names=["a", "b", "c"], rootdir=str(path))
    assert filled == [10, 10]  # every other column ended before the failure surfaced
    assert not path.exists()
    monkeypatch.setattr(carray, "append", real_append)
    ctable([np.arange(3)], names=["a"], rootdir=str(path))  # nothing holds it


def test_one_tuple_keys_are_their_item_as_in_legacy(make):
    model = _model(50)
    t = make(model)
    _same(t[(slice(3, 9),)], model[3:9])
    assert t[7,] == t[7]
    t[(slice(0, 2),)] = model[10:12]
    t[5,] = tuple(model[20])
    model[0:2], model[5] = model[10:12], model[20]
    _same(t[:], model)
    with pytest.raises(IndexError):
        t[1, 2]
    with pytest.raises(IndexError):
        t[1, 2] = tuple(model[0])


@pytest.fixture
def nd_table(make):
    return make([np.arange(8.0).reshape(4, 2), np.arange(4)], names=["a", "b"])


@pytest.mark.parametrize("query", [
    lambda t: t["a > 2"], lambda t: t.fetchwhere("a > 2"), lambda t: list(t.where("a > 2")),
    lambda t: list(t.where("a > 2", outcols=["nrow__", "a"])),
    lambda t: list(t.whereblocks("a > 2")), lambda t: t.__setitem__("a > 2", ([9, 9], 9)),
])
def test_a_condition_over_an_nd_column_is_refused_clearly(nd_table, query):
    # It gives booleans per item, not per row: it used to leak an internal IndexError (or
    # pick rows by flattened item positions). A NotImplementedError, as legacy.
    before = nd_table[:]
    with pytest.raises(ExpressionError, match="per row") as info:
        query(nd_table)
    assert isinstance(info.value, NotImplementedError)
    _same(nd_table[:], before)
    _same(nd_table["b > 1"], before[2:])  # conditions on 1-D columns still select rows


def test_an_expression_key_that_is_no_condition_assigns_nothing(make):
    model = _model(20)
    t = make(model)
    with pytest.raises(ValueError, match="not a boolean"):
        t["k + 1"] = tuple(model[0])
    _same(t[:], model)


def test_append_to_an_nd_column_checks_the_row_shape(nd_table):
    before = nd_table[:]
    for rows in ([7, 1], [np.zeros(3), [1]], [np.zeros((1, 3)), [1]], [np.zeros((1, 2, 1)), [1]]):
        with pytest.raises(ValueError, match="rows have shape"):
            nd_table.append(rows)
    _same(nd_table[:], before)
    nd_table.append([[1.5, 2.5], 5])  # one row broadcast over the others
    nd_table.append([np.ones((2, 2)), [6, 7]])
    assert len(nd_table) == 7 and nd_table["a"][4].tolist() == [1.5, 2.5]


def test_column_names_that_are_not_strings_raise_type_error():
    with pytest.raises(TypeError, match="must be strings"):  # as legacy
        ctable([np.arange(3), np.arange(3)], names=[1, "b"])
    with pytest.raises(ValueError, match="non-empty"):
        ctable([np.arange(3), np.arange(3)], names=["", "b"])
    # addcol raised ValueError in legacy bcolz (its own test suite checks it).
    t = ctable([np.arange(3)], names=["a"])
    for name in (np.arange(3), 7):
        with pytest.raises(ValueError, match="must be strings"):
            t.addcol(np.arange(3), name=name)
        with pytest.raises(TypeError, match="must be strings"):
            t.addcol(np.arange(3), name=name)
    assert t.names == ["a"]


def test_opening_a_missing_table_without_columns_in_mode_a(tmp_path):
    missing = str(tmp_path / "nosuchdir")
    with pytest.raises(NoColumnsError) as info:
        ctable(rootdir=missing)  # mode 'a', the default
    # legacy raised ValueError; FileNotFoundError says what is wrong
    assert isinstance(info.value, ValueError) and isinstance(info.value, FileNotFoundError)
    with pytest.raises(NoColumnsError):
        ctable(rootdir=missing, mode="a")
    assert not os.path.exists(missing)


def test_delcol_of_a_position_out_of_range_raises_index_error(make):
    t = make(_model(10))
    for pos in (4, -5):
        with pytest.raises(IndexError, match="out of range"):  # as legacy (a list index)
            t.delcol(pos=pos)
    assert t.names == ["i", "x", "k", "s"]
    t.delcol(pos=-4)
    assert t.names == ["x", "k", "s"]
