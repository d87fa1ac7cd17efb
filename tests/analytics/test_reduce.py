"""Reductions of carrays and ctable columns: NumPy's results, dtypes, errors; zone maps."""

import os
import warnings

import numpy as np
import pytest

import bcolzx
from bcolzx._analytics.reduce import OPS
from bcolzx._format import zonemap

NAN_OPS = [n for n in OPS if n != "count"]


def numpy_count(a, axis=None):
    miss = np.isnan(a) if a.dtype.kind in "fc" else (np.isnat(a) if a.dtype.kind in "mM"
                                                      else np.zeros(a.shape, bool))
    return np.sum(~miss, axis=axis)


def expected(name, a, **kw):
    if name == "count":
        return numpy_count(a, kw.get("axis"))
    return OPS[name].numpy(a, **kw)


def outcome(fn):
    """The value (or the exception class) and the warning categories of ``fn()``."""
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        try:
            value = fn()
        except Exception as exc:  # noqa: BLE001 - compared with NumPy's
            value = type(exc)
    return value, sorted({w.category.__name__ for w in seen})


def same(got, want, rtol=1e-12):
    if isinstance(want, type):
        assert got is want
        return
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape
    if want.dtype.kind in "fc":
        np.testing.assert_allclose(got, want, rtol=rtol, equal_nan=True)
    else:
        np.testing.assert_array_equal(got, want)


@pytest.fixture(params=["memory", "disk"])
def make(request, tmp_path):
    def make(data, chunklen=100, **kw):
        if request.param == "memory":
            return bcolzx.carray(data, chunklen=chunklen, **kw)
        path = str(tmp_path / f"c{len(os.listdir(tmp_path))}")
        bcolzx.carray(data, chunklen=chunklen, rootdir=path, mode="w", **kw).flush()
        return bcolzx.carray(rootdir=path, mode="r")
    return make


def floats(n=1037, seed=0):
    a = np.random.default_rng(seed).normal(size=n)
    a[[3, 500]] = np.nan
    return a


@pytest.mark.parametrize("name", list(OPS))
@pytest.mark.parametrize("data", [
    floats(), floats()[~np.isnan(floats())], np.arange(-500, 537).astype(np.int8),
    np.random.default_rng(1).integers(0, 2, 1037).astype(bool),
    floats().astype(np.float32), np.full(1037, np.nan)], ids=[
    "nan", "float", "int8", "bool", "float32", "allnan"])
def test_reduction_equals_numpy(make, name, data):
    c = make(data)
    got, got_w = outcome(lambda: getattr(c, name)())
    want, want_w = outcome(lambda: expected(name, data))
    same(got, want, rtol=1e-5 if data.dtype == np.float32 else 1e-12)
    assert got_w == want_w


@pytest.mark.parametrize("name", list(OPS))
def test_condition_selects_rows(make, name):
    data = floats()
    c = make(data)
    got, _ = outcome(lambda: getattr(c, name)(where="c > lim", user_dict={"lim": 0.3}))
    want, _ = outcome(lambda: expected(name, data[data > 0.3]))
    if name.startswith(("arg", "nanarg")):  # positions in the whole carray
        want = np.flatnonzero(data > 0.3)[want]
    same(got, want)
    mask = data < -1
    got, _ = outcome(lambda: getattr(c, name)(where=bcolzx.carray(mask, chunklen=64)))
    want, _ = outcome(lambda: expected(name, data[mask]))
    if name.startswith(("arg", "nanarg")):
        want = np.flatnonzero(mask)[want]
    same(got, want)


@pytest.mark.parametrize("name", list(OPS))
def test_empty_selection_is_numpys_empty_array(make, name):
    c = make(floats())
    got = outcome(lambda: getattr(c, name)(where="c > 100"))
    want = outcome(lambda: expected(name, np.empty(0)))
    same(got[0], want[0])
    assert got[1] == want[1]
    empty = make(np.empty(0, np.int32))
    same(outcome(lambda: getattr(empty, name)())[0],
         outcome(lambda: expected(name, np.empty(0, np.int32)))[0])


@pytest.mark.parametrize("name", ["sum", "prod", "min", "max", "mean", "var", "std", "count",
                                  "any", "all", "nansum", "nanmax", "argmax", "nanargmin"])
@pytest.mark.parametrize("axis", [None, 0, 1, 2, (0, 2), -1])
def test_axis_of_nd_carray(make, name, axis):
    data = np.random.default_rng(2).normal(size=(250, 3, 4))
    data[7, 1, 2] = np.nan
    c = make(data, chunklen=32)
    if name in ("argmax", "nanargmin") and isinstance(axis, tuple):
        with pytest.raises(ValueError):
            getattr(c, name)(axis=axis)
        return
    got, _ = outcome(lambda: getattr(c, name)(axis=axis))
    want, _ = outcome(lambda: expected(name, data, axis=axis))
    same(got, want)


def test_dtypes_and_integer_wraparound_follow_numpy(make):
    big = np.full(1000, 2**62, dtype=np.int64)
    c = make(big)
    same(c.sum(), big.sum())  # wraps as NumPy's int64 accumulator does
    small = np.arange(1000, dtype=np.int8)
    c = make(small)
    same(c.sum(), small.sum())
    same(c.sum(np.int8), small.sum(dtype=np.int8))  # legacy bcolz: dtype first
    same(c.mean(), small.mean())
    same(c.prod(dtype=np.float64), small.prod(dtype=np.float64))
    u = np.arange(1000, dtype=np.uint32)
    same(make(u).sum(), u.sum())


def test_var_and_std_ddof_and_stability(make):
    data = 1e9 + np.random.default_rng(3).normal(size=5000)
    c = make(data)
    exact = data.astype(np.longdouble)
    for ddof in (0, 1, 2):
        truth = float(((exact - exact.mean()) ** 2).sum() / (len(data) - ddof))
        got, numpys = c.var(ddof=ddof), data.var(ddof=ddof)
        assert abs(got - truth) <= max(4 * abs(numpys - truth), 1e-12 * truth)
        same(c.std(ddof=ddof), data.std(ddof=ddof), rtol=1e-7)
    naive = float((data ** 2).mean() - data.mean() ** 2)  # what a one-pass sum of squares gives
    assert abs(naive - data.var()) > 1e3 * abs(c.var() - data.var())
    one = make(np.array([1.0]))
    got, w = outcome(lambda: one.var(ddof=1))
    want, ww = outcome(lambda: np.array([1.0]).var(ddof=1))
    same(got, want)
    assert "RuntimeWarning" in w and "RuntimeWarning" in ww
    z = np.array([1 + 2j, 3 - 1j, 0.5j] * 100)
    same(make(z).var(), z.var())


def test_datetimes_and_timedeltas(make):
    t = np.arange("2020-01-01", "2020-03-01", dtype="datetime64[h]")
    t[100] = np.datetime64("NaT")
    c = make(t)
    for name in ("min", "max", "nanmin", "nanmax", "argmax", "nanargmin"):
        same(getattr(c, name)(), expected(name, t))
    same(c.count(), len(t) - 1)
    d = np.arange(1000).astype("m8[s]")
    cd = make(d)
    same(cd.sum(), d.sum())
    same(cd.mean(), d.mean())
    with pytest.raises(TypeError):
        c.sum()  # NumPy cannot add datetimes


def test_strings_and_objects_are_refused(make):
    with pytest.raises(TypeError):
        make(np.array([b"a", b"b"])).sum()
    objs = bcolzx.carray([1, 2, 3], dtype=object, allow_pickle=True)
    assert objs.sum() == 6  # legacy: Python's +
    with pytest.raises(TypeError, match="fixed-size"):
        objs.max()


def test_ctable_reduce_with_condition_on_other_column(tmp_path):
    n = 5000
    i = np.arange(n)
    x = np.random.default_rng(4).normal(size=n)
    ct = bcolzx.ctable([i, x], names=["i", "x"], rootdir=str(tmp_path / "t"), chunklen=256)
    same(ct.reduce("x", "sum", where="(i > 1000) & (i < 1500)"),
         x[1001:1500].sum())
    same(ct.reduce("x", "var", where="x > 0", ddof=1), x[x > 0].var(ddof=1))
    same(ct.reduce("i", "argmax", where="x < 0"), np.flatnonzero(x < 0)[-1])
    same(ct.reduce("x", "min"), x.min())
    with pytest.raises(KeyError):
        ct.reduce("nope", "sum")
    with pytest.raises(ValueError, match="unknown reduction"):
        ct.reduce("x", "median")
    # A selective condition reads only the chunks its zone maps allow.
    before = sum(c.engine.decoded_bytes for c in ct.cols.values())
    same(ct.reduce("x", "sum", where="i < 100"), x[:100].sum())
    read = sum(c.engine.decoded_bytes for c in ct.cols.values()) - before
    assert 0 < read <= 2 * 256 * 8 * 2


# -- min and max from the zone maps ---------------------------------------------------


def on_disk(tmp_path, data, chunklen=1000):
    path = str(tmp_path / "z")
    bcolzx.carray(data, chunklen=chunklen, rootdir=path, mode="w").flush()
    return path


def test_max_of_fresh_dataset_reads_no_chunk(tmp_path):
    data = np.random.default_rng(5).normal(size=100_500)
    c = bcolzx.carray(rootdir=on_disk(tmp_path, data), mode="r")
    assert c.engine.exact_chunks().all()
    before = c.engine.decoded_bytes
    assert c.max() == data.max() and c.min() == data.min()
    assert c.nanmax() == data.max() and c.nanmin() == data.min()
    # Metadata, and the stored last short chunk (decoded once, on first use) only.
    assert c.engine.decoded_bytes == before + 500 * 8


def test_nan_propagates_from_zone_map(tmp_path):
    data = np.arange(10_000.0)
    data[4321] = np.nan
    c = bcolzx.carray(rootdir=on_disk(tmp_path, data), mode="r")
    assert np.isnan(c.max()) and np.isnan(c.min())
    assert c.nanmax() == 9999.0 and c.engine.decoded_bytes == 0
    allnan = np.full(3000, np.nan)
    c = bcolzx.carray(rootdir=on_disk(tmp_path, allnan), mode="r")
    got, w = outcome(c.nanmax)
    want, ww = outcome(lambda: np.nanmax(allnan))
    same(got, want)
    assert w == ww == ["RuntimeWarning"]


def test_rewritten_chunk_is_read_not_trusted(tmp_path):
    data = np.arange(10_000.0)
    path = on_disk(tmp_path, data)
    c = bcolzx.carray(rootdir=path, mode="a")
    c[9500] = 1e9
    c[9500] = 0.0  # the chunk's bounds stay wide (format rule): no longer exact
    c.flush()
    for arr in (c, bcolzx.carray(rootdir=path, mode="r")):
        assert not arr.engine.exact_chunks()[9]
        before = arr.engine.decoded_bytes
        assert arr.max() == 9999.0
        assert arr.engine.decoded_bytes - before == 1000 * 8  # that chunk only
    c = bcolzx.carray(rootdir=path, mode="a")
    c[9500] = 5.0  # within the bounds: still exact for old and new rows
    c.flush()
    assert not bcolzx.carray(rootdir=path, mode="r").engine.exact_chunks()[9]
    c[100] = 100.0  # the same value again: bounds unchanged, exact kept
    c.flush()
    assert bcolzx.carray(rootdir=path, mode="r").engine.exact_chunks()[0]


def test_leftover_completed_after_flush_is_exact(tmp_path):
    path = str(tmp_path / "g")
    c = bcolzx.carray(np.arange(1500.0), chunklen=1000, rootdir=path, mode="w")
    c.flush()  # chunk 1 stored short
    c.append(np.arange(1500.0, 2500.0))
    c.flush()
    r = bcolzx.carray(rootdir=path, mode="r")
    assert r.engine.exact_chunks().tolist() == [True, True]
    assert r.max() == 2499.0 and r.engine.decoded_bytes == 500 * 8  # the short last chunk


def test_zone_map_without_exact_flags_still_gives_numpys_answer(tmp_path):
    data = np.random.default_rng(6).normal(size=20_000)
    path = on_disk(tmp_path, data)
    stats = zonemap.read(path, data.dtype)
    zonemap.write(path, stats)  # as an older version wrote it: no flags
    c = bcolzx.carray(rootdir=path, mode="r")
    assert not c.engine.exact_chunks().any()
    assert c.max() == data.max() and c.min() == data.min()
    assert c.engine.decoded_bytes <= 2 * 1000 * 8  # the chunks the bounds point to


def test_damaged_exact_flags_are_reported(tmp_path):
    import json

    path = on_disk(tmp_path, np.arange(5000.0))
    zpath = os.path.join(path, "meta", "zonemap")
    with open(zpath) as f:
        obj = json.load(f)
    obj["exact_crc32c"] ^= 1
    # An unsealed copy with a bad flag crc: detected by the flags' own crc.
    with open(zpath, "w") as f:
        f.write(json.dumps({k: v for k, v in obj.items() if not k.startswith("__")}))
    with pytest.raises(bcolzx.errors.CorruptDataError, match="exact flags"):
        zonemap.load(path, np.dtype("f8"))


def test_zone_map_read_once_follows_later_changes(tmp_path):
    # The bounds read from meta/zonemap are kept as an array for readers; a
    # change (append, delete) must show in the next chunk_stats().
    path = str(tmp_path / "z")
    c = bcolzx.carray(np.arange(4000.0), chunklen=1000, rootdir=path)
    c.flush()
    c = bcolzx.carray(rootdir=path, mode="a")
    first = c.engine.chunk_stats()
    assert first["max"].tolist() == [999.0, 1999.0, 2999.0, 3999.0]
    first["max"][0] = -1.0  # the caller's copy: the engine's bounds stay
    assert c.engine.chunk_stats()["max"][0] == 999.0 and c.max() == 3999.0
    c.append(np.full(1000, -7.0))
    c.flush()
    assert c.engine.chunk_stats()["min"].tolist() == [0.0, 1000.0, 2000.0, 3000.0, -7.0]
    assert c.max() == 3999.0 and c.min() == -7.0
    c.delete(np.arange(1000, 2000))
    assert c.engine.chunk_stats()["max"].tolist() == [999.0, 2999.0, 3999.0, -7.0]
    assert c.max() == 3999.0 and c[:].max() == 3999.0


def test_partials_on_pool_threads_leave_the_warning_filters_alone(monkeypatch):
    """warnings.catch_warnings is process-wide and not thread-safe: entered
    and left by two pool threads at once, it can restore a stale filter list
    for good (RuntimeWarnings silenced in the user's program).  Reductions
    enter it on the calling thread only, and leave the filters as they were."""
    import threading

    entered = []
    real = warnings.catch_warnings

    class Recording(real):
        def __enter__(self):
            entered.append(threading.get_ident())
            return super().__enter__()

    monkeypatch.setattr(warnings, "catch_warnings", Recording)
    data = np.arange(200_000.0)
    data[::7] = np.nan
    data[:20_000] = np.nan  # all-NaN chunks: NumPy warns inside their partials
    c = bcolzx.carray(data, chunklen=4096)
    assert c.engine.nthreads >= 1
    before = list(warnings.filters)
    for name in ("sum", "nansum", "nanmax", "nanmin", "max", "mean", "nanmean", "var",
                 "argmax", "nanargmin"):
        for axis in (None, 0):
            getattr(c, name)(axis=axis)
    assert entered and set(entered) == {threading.get_ident()}
    assert warnings.filters == before
