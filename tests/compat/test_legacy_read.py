"""bcolzx reads every dataset legacy bcolz wrote (format v1), exactly, or raises.

The fixtures (``tests/data/legacy_bcolz``, provenance in its README) were
written by legacy bcolz 1.2 over C-Blosc 1.21.  Their MANIFEST records, for
each dataset as legacy bcolz read it back, a SHA-256 of ``arr.tobytes()``,
the first and last items and the sum, the dtype, shape, chunk length,
cparams, default value and user attributes; per column and for the rows for
ctables.  These tests open every dataset through the public API (``open``,
``carray``, ``ctable``) and compare:

- contents and metadata with the MANIFEST, item types with legacy bcolz's
  (Python scalars for 1-D carrays, ``np.void`` rows for ctables);
- every way of reading (slices with steps, single items, fancy keys,
  ``iterblocks``, ``where``, ``wheretrue``, ctable queries) with NumPy on the
  full array;
- that mode ``'r'`` refuses writes with :class:`bcolzx.ReadOnlyError` (an
  ``IOError``) and changes no file, that ``bcolzx.walk`` finds the datasets,
  and that damaged files raise :class:`bcolzx.CorruptDataError` (a
  ``ValueError``) or ``FileNotFoundError`` instead of giving wrong values.

The object-dtype dataset (pickles) opens, but its values are refused with
:class:`bcolzx.PickleNotAllowedError` (an :class:`bcolzx.UnsupportedFormatError`)
unless ``allow_pickle`` is given (a documented choice; its reading is tested
in ``tests/api/test_object_dtype.py``).  Every test that could write works on
a copy in ``tmp_path``: the fixture files must never change.
"""

import hashlib
import json
import os
import shutil
import stat

import numpy as np
import pytest

import bcolzx

from ..conftest import LEGACY

MANIFEST = json.loads((LEGACY / "MANIFEST.json").read_text())
DATASETS = {ds["path"]: ds for ds in MANIFEST["datasets"]}
#: Top-level carrays of fixed-size items (the object one: tests/api/test_object_dtype.py).
CARRAYS = [p for p, ds in DATASETS.items() if ds["kind"] == "carray" and ds["dtype"] != "object"]
NONEMPTY = [p for p in CARRAYS if DATASETS[p]["len"]]
CTABLES = [p for p, ds in DATASETS.items() if ds["kind"] == "ctable"]
#: Every column of every ctable, by its path.
COLUMNS = {col["path"]: col for p in CTABLES for col in DATASETS[p]["columns"].values()}
#: Every carray directory: top-level and ctable columns.
ALL_CARRAYS = {**{p: DATASETS[p] for p in CARRAYS}, **COLUMNS}
OBJECT = "ca_object_optional"

#: The Python type legacy bcolz returns for ``ca[i]`` of a 1-D carray, by dtype kind
#: (datetime64[ns] items are ints, as ``ndarray.item()`` gives).
SCALAR_TYPES = {"b": bool, "i": int, "u": int, "f": float, "S": bytes, "U": str, "M": int}

OPENERS = {
    "open": lambda p: bcolzx.open(str(p), mode="r"),
    "class": lambda p: (bcolzx.ctable if (p / "__rootdirs__").exists() else bcolzx.carray)(
        rootdir=str(p), mode="r"),
}


def sha256(arr):
    return hashlib.sha256(np.ascontiguousarray(arr).tobytes()).hexdigest()


def tree_digest(root):
    """``{relative path: sha256}`` of every file under `root` (directories included as None)."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        out[rel] = None
        for name in filenames:
            with open(os.path.join(dirpath, name), "rb") as f:
                out[os.path.join(rel, name)] = hashlib.sha256(f.read()).hexdigest()
    return out


def writable_copy(name, dest):
    """Copy fixture `name` into `dest` and make it writable (fixture files may be read-only)."""
    target = dest / name.replace("/", "_")
    shutil.copytree(LEGACY / name, target)
    for dirpath, dirnames, filenames in os.walk(target):
        for entry in [dirpath] + [os.path.join(dirpath, n) for n in filenames]:
            os.chmod(entry, os.stat(entry).st_mode | stat.S_IWUSR)
    return target


def expected_item(value, dtype):
    """A MANIFEST first/last value as what ``arr[i].item()`` (or ``.tolist()``) gives."""
    if dtype.kind == "M":  # a dict for items, an int (nanoseconds) for dflt
        return value["int64"] if isinstance(value, dict) else value
    if dtype.kind == "S":
        return value.encode("latin-1")
    return value


def as_python(item, dtype):
    if dtype.kind == "M":
        return int(np.asarray(item).view(np.int64))
    return np.asarray(item).tolist()


def check_content(arr, ds):
    """`arr` (a carray's ``[:]``) against the MANIFEST entry `ds`."""
    dtype = np.dtype(ds["dtype"])
    assert arr.dtype == dtype
    assert arr.shape == tuple(ds["shape"])
    assert sha256(arr) == ds["content"]["sha256"]
    content = ds["content"]
    if not ds["len"]:
        return
    assert as_python(arr[0], dtype) == expected_item(content["first"], dtype)
    assert as_python(arr[-1], dtype) == expected_item(content["last"], dtype)
    if dtype.kind in "biu":
        assert int(arr.sum(dtype=np.int64)) == content["sum"]
    elif dtype.kind == "f":
        assert float(arr.sum(dtype=np.float64)) == pytest.approx(content["sum"], rel=1e-12,
                                                                 abs=1e-9)
    elif dtype.kind == "M":
        assert int(arr.view(np.int64).sum()) == content["sum_int64"]
        assert str(arr[0]) == content["first"]["iso"]
        assert str(arr[-1]) == content["last"]["iso"]


def check_carray_metadata(c, ds):
    dtype = np.dtype(ds["dtype"])
    assert isinstance(c, bcolzx.carray)
    assert c.mode == "r"
    assert len(c) == c.len == ds["len"]
    assert c.shape == tuple(ds["shape"])
    assert c.ndim == len(ds["shape"])
    assert c.dtype == dtype
    assert c.chunklen == ds["chunklen"]
    assert c.nchunks == ds["nchunks_full"]
    assert c.nleftover == ds["leftover_elements"]
    assert c.nbytes == ds["meta_sizes"]["nbytes"]
    assert c.expectedlen == ds["meta_storage"]["expectedlen"]
    cp = c.cparams
    assert (cp.clevel, cp.shuffle, cp.cname, cp.quantize) == (
        ds["cparams"]["clevel"], ds["cparams"]["shuffle"], ds["cparams"]["cname"],
        ds["cparams"]["quantize"])
    dflt = c.dflt
    assert isinstance(dflt, np.ndarray) and dflt.shape == () and dflt.dtype == dtype
    assert as_python(dflt, dtype) == expected_item(ds["dflt"], dtype)
    assert c.attrs.getall() == ds["attrs"]


# -- the datasets, whole -------------------------------------------------------------


def test_fixtures_are_intact_and_covered(legacy_manifest):
    """The fixture files are those the MANIFEST lists (nothing changed them), every
    dataset is covered by these tests, and only `.gitkeep` was added."""
    assert legacy_manifest == MANIFEST
    listed = {}
    for ds in MANIFEST["datasets"]:
        listed.update(ds["files"])
    on_disk = {}
    for dirpath, _, filenames in os.walk(LEGACY):
        for name in filenames:
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, LEGACY)
            if os.sep in rel:
                with open(full, "rb") as f:
                    on_disk[rel.replace(os.sep, "/")] = (os.path.getsize(full),
                                                        hashlib.sha256(f.read()).hexdigest())
    assert set(on_disk) - set(listed) == {"ca_float64_empty/data/.gitkeep"}
    assert set(listed) <= set(on_disk)
    for rel, info in listed.items():
        assert on_disk[rel] == (info["size"], info["sha256"]), rel
    assert len(DATASETS) == 22
    assert set(CARRAYS) | set(CTABLES) | {OBJECT} == set(DATASETS)


@pytest.mark.parametrize("opener", sorted(OPENERS))
@pytest.mark.parametrize("path", CARRAYS)
def test_carray_matches_manifest(path, opener):
    ds = DATASETS[path]
    c = OPENERS[opener](LEGACY / path)
    check_carray_metadata(c, ds)
    check_content(c[:], ds)
    if ds["len"]:
        assert as_python(c[0], c.dtype) == expected_item(ds["content"]["first"], c.dtype)
        assert as_python(c[-1], c.dtype) == expected_item(ds["content"]["last"], c.dtype)


@pytest.mark.parametrize("path", [p for p in NONEMPTY if "sum" in DATASETS[p]["content"]])
def test_carray_sum(path):
    """``carray.sum`` (block by block) agrees with the MANIFEST."""
    ds = DATASETS[path]
    c = bcolzx.open(str(LEGACY / path), mode="r")
    kind = c.dtype.kind
    if kind in "biu":
        total = c.sum(dtype=np.int64)
        assert isinstance(total, np.int64) and int(total) == ds["content"]["sum"]
    elif kind == "f":
        total = c.sum(dtype=np.float64)
        assert isinstance(total, np.float64)
        assert float(total) == pytest.approx(ds["content"]["sum"], rel=1e-9, abs=1e-6)
    else:
        raise AssertionError(f"a sum for dtype {c.dtype}")


@pytest.mark.parametrize("opener", sorted(OPENERS))
@pytest.mark.parametrize("path", CTABLES)
def test_ctable_matches_manifest(path, opener):
    ds = DATASETS[path]
    ct = OPENERS[opener](LEGACY / path)
    assert isinstance(ct, bcolzx.ctable)
    assert ct.mode == "r"
    assert len(ct) == ct.len == ds["len"]
    assert ct.shape == (ds["len"],)
    assert ct.names == ds["names"] == ds["rootdirs"]["names"]
    assert ct.dtype == np.dtype([tuple(x) for x in ds["dtype"]])
    assert ct.attrs.getall() == ds["attrs"]
    rows = ct[:]
    assert rows.dtype == ct.dtype and len(rows) == ds["len"]
    assert sha256(rows) == ds["rows_sha256"]
    for name, col in ds["columns"].items():
        column = ct.cols[name]
        check_carray_metadata(column, col)
        check_content(column[:], col)
        assert sha256(rows[name]) == col["content"]["sha256"]
    for i in (0, 1, ds["len"] // 2, -1, -ds["len"]):
        row = ct[i]
        assert type(row) is np.void
        assert row.dtype == ct.dtype
        assert row.tobytes() == rows[i].tobytes()


@pytest.mark.parametrize("path", sorted(COLUMNS))
def test_ctable_column_opens_alone(path):
    """A ctable column is a complete v1 carray directory of its own."""
    ds = COLUMNS[path]
    for opener in OPENERS.values():
        c = opener(LEGACY / path)
        check_carray_metadata(c, ds)
        check_content(c[:], ds)


def test_object_dtype_values_are_refused_without_the_switch():
    path = str(LEGACY / OBJECT)
    for mode in ("r", "a"):
        for c in (bcolzx.open(path, mode=mode), bcolzx.carray(rootdir=path, mode=mode)):
            assert (len(c), c.dtype, c.chunklen) == (5, np.dtype(object), 1)
            with pytest.raises(bcolzx.UnsupportedFormatError, match="allow_pickle") as info:
                c[0]
            assert isinstance(info.value, ValueError)
            assert isinstance(info.value, bcolzx.PickleNotAllowedError)
            if mode == "a":  # refused before anything is written
                with pytest.raises(bcolzx.PickleNotAllowedError):
                    c.append("x")
    c = bcolzx.open(path, mode="r", allow_pickle=True)
    assert [repr(v) for v in c] == DATASETS[OBJECT]["content"]["values_repr"]


def test_stale_chunk_file_is_ignored():
    """`ca_int32_trimmed_stale` holds a `__2.blp` left by legacy trim (500 rows of
    2000..2499); the length comes from the metadata, so none of it is read."""
    path = LEGACY / "ca_int32_trimmed_stale"
    assert (path / "data" / "__2.blp").exists()
    c = bcolzx.open(str(path), mode="r")
    assert len(c) == 2000 and c.nchunks == 2 and c.nleftover == 0
    assert np.array_equal(c[:], np.arange(2000, dtype=np.int32))
    assert c[-1] == 1999
    assert np.array_equal(c[1990:2010], np.arange(1990, 2000, dtype=np.int32))
    with pytest.raises(IndexError):
        c[2000]
    assert [len(b) for b in bcolzx.iterblocks(c, blen=700)] == [700, 700, 600]


def test_empty_dataset():
    path = LEGACY / "ca_float64_empty"
    assert not list((path / "data").glob("*.blp"))
    c = bcolzx.open(str(path), mode="r")
    assert len(c) == 0 and c.shape == (0,) and c.dtype == np.float64
    assert c.nchunks == 0 and c.nleftover == 0
    out = c[:]
    assert out.shape == (0,) and out.dtype == np.float64
    assert list(c) == [] and list(bcolzx.iterblocks(c)) == []
    assert c[::-1].shape == (0,) and c[[]].shape == (0,)
    assert float(c.sum()) == 0.0
    with pytest.raises(IndexError):
        c[0]
    with pytest.raises(IndexError):
        c[-1]


#: Metadata as older bcolz versions wrote it: change -> expected (shuffle, cname,
#: quantize, expectedlen, dflt).
OLD_METADATA = {
    "no cname, no quantize, shuffle true, no expectedlen": (
        lambda s: (s["cparams"].pop("cname"), s["cparams"].pop("quantize"),
                   s["cparams"].update(shuffle=True), s.pop("expectedlen")),
        (1, "blosclz", 0, 0, 0)),
    "shuffle false": (lambda s: s["cparams"].update(shuffle=False), (0, "lz4", 0, 12345, 0)),
    "no dflt": (lambda s: s.pop("dflt"), (1, "lz4", 0, 12345, 0)),
    "dflt null": (lambda s: s.update(dflt=None), (1, "lz4", 0, 12345, 0)),
    "unusable dflt (a string for ints)": (lambda s: s.update(dflt="x"), (1, "lz4", 0, 12345, 0)),
    "dflt 7": (lambda s: s.update(dflt=7), (1, "lz4", 0, 12345, 7)),
    "unknown key": (lambda s: s.update(whatever=[1]), (1, "lz4", 0, 12345, 0)),
}


@pytest.mark.parametrize("change", sorted(OLD_METADATA))
def test_old_metadata_quirks(change, tmp_path):
    edit, (shuffle, cname, quantize, expectedlen, dflt) = OLD_METADATA[change]
    target = writable_copy("ca_int32_leftover", tmp_path)
    storage = json.loads((target / "meta" / "storage").read_text())
    edit(storage)
    (target / "meta" / "storage").write_text(json.dumps(storage))
    c = bcolzx.open(str(target), mode="r")
    assert (c.cparams.clevel, c.cparams.shuffle, c.cparams.cname, c.cparams.quantize) == \
        (5, shuffle, cname, quantize)
    assert c.expectedlen == expectedlen
    assert c.dflt == dflt and c.dflt.dtype == np.int32
    check_content(c[:], DATASETS["ca_int32_leftover"])


def test_missing_attrs_file_reads_as_empty(tmp_path):
    target = writable_copy("ca_int32_leftover", tmp_path)
    (target / "__attrs__").unlink()
    before = tree_digest(target)
    c = bcolzx.open(str(target), mode="r")
    assert c.attrs.getall() == {}
    check_content(c[:], DATASETS["ca_int32_leftover"])
    assert tree_digest(target) == before, "mode 'r' created a file"


# -- every way of reading, against NumPy ------------------------------------------------


def slices_for(n, cl):
    return [
        slice(None), slice(1, None), slice(None, -1), slice(None, None, 2),
        slice(None, None, -1), slice(None, None, -3), slice(5, -5, 7), slice(-1, 0, -1),
        slice(max(0, cl - 3), cl + 3), slice(cl - 1, 3 * cl + 2, cl),
        slice(n - cl - 2, n, 5), slice(n - 1, n - cl - 5, -11), slice(10, 5),
        slice(n + 5, None), slice(-(n + 10), 3), slice(0, 1), slice(n - 1, None),
    ]


@pytest.mark.parametrize("path", NONEMPTY + sorted(COLUMNS))
def test_slices_items_and_fancy_keys(path):
    ds = ALL_CARRAYS[path]
    c = bcolzx.carray(rootdir=str(LEGACY / path), mode="r")
    full = c[:]
    assert sha256(full) == ds["content"]["sha256"]
    n, cl = len(c), c.chunklen
    for key in slices_for(n, cl):
        got = c[key]
        assert got.dtype == full.dtype
        assert np.array_equal(got, full[key]), key
    rng = np.random.default_rng(20240601)
    singles = sorted({0, 1, cl - 1, cl, n - 1, n // 2} & set(range(n)))
    singles += rng.integers(0, n, 200).tolist() + [-1, -n, -cl % n - n]
    kind = c.dtype.kind
    for i in singles:
        item = c[i]
        if c.ndim == 1:
            assert type(item) is SCALAR_TYPES[kind], (i, type(item))
            assert item == full[i].item(), i
        else:
            assert isinstance(item, np.ndarray) and item.shape == full.shape[1:]
            assert np.array_equal(item, full[i]), i
    with pytest.raises(IndexError):
        c[n]
    with pytest.raises(IndexError):
        c[-n - 1]
    idx = rng.integers(-n, n, 300)
    idx[:3] = [0, n - 1, -1]
    idx[10] = idx[11]  # repeats
    assert np.array_equal(c[idx], full[idx])
    assert np.array_equal(c[idx.tolist()], full[idx])
    mask = rng.random(n) < 0.05
    assert np.array_equal(c[mask], full[mask])
    if c.ndim > 1:
        assert np.array_equal(c[3, 1], full[3, 1])
        assert np.array_equal(c[2:9, 2], full[2:9, 2])


@pytest.mark.parametrize("blen", [None, 1, 777, "chunk+1", "3 chunks"])
@pytest.mark.parametrize("path", NONEMPTY)
def test_iterblocks(path, blen):
    c = bcolzx.open(str(LEGACY / path), mode="r")
    full = c[:]
    n, cl = len(c), c.chunklen
    size = {"chunk+1": cl + 1, "3 chunks": 3 * cl}.get(blen, blen)
    if size == 1:
        ranges = [(n - 40, None), (max(0, cl - 3), cl + 3)]  # one row per block: keep it short
    else:
        ranges = [(0, None), (1, n - 1), (cl - 3, 2 * cl + 5), (n // 3, n // 3)]
    for start, stop in ranges:
        blocks = list(bcolzx.iterblocks(c, blen=size, start=start, stop=stop))
        expect = full[start:stop]
        step = cl if size is None else size
        assert [len(b) for b in blocks[:-1]] == [step] * (len(blocks) - 1)
        assert all(0 < len(b) <= step for b in blocks)
        got = np.concatenate(blocks) if blocks else full[:0]
        assert np.array_equal(got, expect), (start, stop)
    if c.ndim == 1:
        assert list(c.iter(start=3, stop=n - 2, step=5, skip=2, limit=50)) == \
            full[3:n - 2:5][2:52].tolist()


def ds_sum(path):
    return DATASETS[path]["content"]["sum"]


@pytest.mark.parametrize("path", [p for p in NONEMPTY if DATASETS[p]["len"] == 30000])
def test_where_with_a_legacy_boolean_carray(path):
    """``where`` over a carray of 30000 rows, masked by the legacy boolean carray."""
    mask = bcolzx.open(str(LEGACY / "ca_bool"), mode="r")
    c = bcolzx.open(str(LEGACY / path), mode="r")
    full, m = c[:], mask[:]
    expect = full[m]
    got = list(c.where(mask))
    assert len(got) == len(expect) == ds_sum("ca_bool")
    if c.ndim == 1:
        assert got == expect.tolist()
        assert list(c.where(mask, limit=10, skip=7)) == expect[7:17].tolist()
        assert list(c.where(m, skip=len(expect) - 3)) == expect[-3:].tolist()
    else:
        assert np.array_equal(np.array(got), expect)


@pytest.mark.parametrize("path", ["ca_bool", "ct_mixed/b"])
def test_wheretrue(path):
    c = bcolzx.open(str(LEGACY / path), mode="r")
    full = c[:]
    expect = np.flatnonzero(full).tolist()
    assert len(expect) == ALL_CARRAYS[path]["content"]["sum"]
    assert list(c.wheretrue()) == expect
    assert list(c.wheretrue(limit=25, skip=4)) == expect[4:29]
    assert list(c.wheretrue(skip=len(expect) - 2)) == expect[-2:]
    assert list(c.wheretrue(limit=0)) == []
    other = bcolzx.open(str(LEGACY / "ca_int32_leftover"), mode="r")
    with pytest.raises(ValueError):
        other.wheretrue()


QUERIES = [
    ("(i4 > 0) & (f8 < 0)", lambda a: (a["i4"] > 0) & (a["f8"] < 0)),
    ("b & (i1 == 3)", lambda a: a["b"] & (a["i1"] == 3)),
    ("s10 == b's3'", lambda a: a["s10"] == b"s3"),
    ("(f4 > 0.5) | (i8 < 1000)", lambda a: (a["f4"] > 0.5) | (a["i8"] < 1000)),
    ("~b", lambda a: ~a["b"]),
    ("ts >= t0", lambda a: a["ts"] >= np.datetime64("2022-01-01", "ns")),
    ("i4 > 100000", lambda a: np.zeros(len(a), bool)),
]


@pytest.mark.parametrize("vm", ["python", "numexpr"])
@pytest.mark.parametrize("query", range(len(QUERIES)))
def test_ctable_queries(query, vm):
    expression, numpy_mask = QUERIES[query]
    ct = bcolzx.open(str(LEGACY / "ct_mixed"), mode="r")
    rows = ct[:]
    assert sha256(rows) == DATASETS["ct_mixed"]["rows_sha256"]
    scope = {"t0": np.datetime64("2022-01-01", "ns")}
    hits = np.flatnonzero(numpy_mask(rows))
    got = ct.fetchwhere(expression, out_flavor="numpy", vm=vm, user_dict=scope)
    assert got.dtype == ct.dtype
    assert got.tobytes() == rows[hits].tobytes()
    sub = ct.fetchwhere(expression, outcols=["nrow__", "i8", "s10"], limit=20, skip=5,
                        out_flavor="numpy", vm=vm, user_dict=scope)
    assert sub["nrow__"].tolist() == hits[5:25].tolist()
    assert sub["i8"].tolist() == rows["i8"][hits[5:25]].tolist()
    assert sub["s10"].tolist() == rows["s10"][hits[5:25]].tolist()
    named = list(ct.where(expression, outcols="nrow__, f8", vm=vm, user_dict=scope))
    assert [r.nrow__ for r in named] == hits.tolist()
    assert [r.f8 for r in named] == rows["f8"][hits].tolist()
    as_ctable = ct.fetchwhere(expression, out_flavor="bcolz", vm=vm, user_dict=scope)
    assert isinstance(as_ctable, bcolzx.ctable) and len(as_ctable) == len(hits)
    assert as_ctable[:].tobytes() == rows[hits].tobytes()


def test_ctable_query_with_string_key_and_eval():
    ct = bcolzx.open(str(LEGACY / "ct_mixed"), mode="r")
    rows = ct[:]
    assert ct["i4 > 4990"].tobytes() == rows[rows["i4"] > 4990].tobytes()
    total = ct.eval("i8 * 2 + i1", out_flavor="numpy")
    assert np.array_equal(total, rows["i8"] * 2 + rows["i1"])
    result = bcolzx.eval("x - 1", out_flavor="numpy", user_dict={"x": ct.cols["i8"]})
    assert np.array_equal(result, rows["i8"] - 1)


def test_ctable_rows_iteration():
    ct = bcolzx.open(str(LEGACY / "ct_attrs"), mode="r")
    rows = ct[:]
    got = list(ct.iter(start=10, stop=2900, step=7, outcols=["sym", "price"], limit=100,
                       skip=3))
    ref = rows[10:2900:7][3:103]
    assert [r.sym for r in got] == ref["sym"].tolist()
    assert [r.price for r in got] == ref["price"].tolist()
    assert np.array_equal(ct[5:2999:13], rows[5:2999:13])
    assert np.array_equal(ct[::-1], rows[::-1])
    idx = [0, 2999, 17, 17, -1]
    assert ct[idx].tobytes() == rows[idx].tobytes()


@pytest.mark.parametrize("path", CTABLES)
def test_iterblocks_ctable(path):
    """A ctable's blocks are structured arrays (default length: the shortest chunklen)."""
    ct = bcolzx.open(str(LEGACY / path), mode="r")
    rows = ct[:]
    n = len(ct)
    blocks = list(bcolzx.iterblocks(ct, blen=1000, start=5, stop=n - 2))
    assert [len(b) for b in blocks] == [min(1000, n - 2 - lo) for lo in range(5, n - 2, 1000)]
    assert all(b.dtype == ct.dtype for b in blocks)
    assert np.concatenate(blocks).tobytes() == rows[5:n - 2].tobytes()
    default = list(bcolzx.iterblocks(ct))
    cl = min(col["chunklen"] for col in DATASETS[path]["columns"].values())
    assert [len(b) for b in default[:-1]] == [cl] * (len(default) - 1)
    assert np.concatenate(default).tobytes() == rows.tobytes()


# -- read-only mode ----------------------------------------------------------------------


def carray_writes(c):
    n = len(c)
    row = np.zeros(c.shape[1:], c.dtype)
    return {
        "append": lambda: c.append(np.zeros((3, *c.shape[1:]), c.dtype)),
        "setitem int": lambda: c.__setitem__(0, row),
        "setitem slice": lambda: c.__setitem__(slice(0, 2), row),
        "setitem fancy": lambda: c.__setitem__([0, n - 1], row),
        "resize grow": lambda: c.resize(n + 5),
        "resize shrink": lambda: c.resize(max(0, n - 5)),
        "trim": lambda: c.trim(min(n, 1)),
        "attrs set": lambda: c.attrs.__setitem__("new", 1),
        "purge": lambda: c.purge(),
    }


@pytest.mark.parametrize("path", ["ca_int32_leftover", "ca_float64_attrs", "ca_2d_float64_Nx3",
                                  "ca_unicode_U6", "ca_float64_empty"])
def test_read_only_carray_refuses_writes(path, tmp_path):
    target = writable_copy(path, tmp_path)
    before = tree_digest(target)
    c = bcolzx.carray(rootdir=str(target), mode="r")
    for what, write in carray_writes(c).items():
        with pytest.raises(bcolzx.ReadOnlyError) as info:
            write()
        assert isinstance(info.value, IOError), what
    if c.attrs.getall():
        with pytest.raises(bcolzx.ReadOnlyError):
            del c.attrs["units"]
    c.flush()  # a no-op in mode 'r'
    assert tree_digest(target) == before
    check_content(c[:], DATASETS[path])
    assert c.attrs.getall() == DATASETS[path]["attrs"]


@pytest.mark.parametrize("path", CTABLES)
def test_read_only_ctable_refuses_writes(path, tmp_path):
    target = writable_copy(path, tmp_path)
    before = tree_digest(target)
    ct = bcolzx.ctable(rootdir=str(target), mode="r")
    row = ct[0]
    n = len(ct)
    writes = {
        "append": lambda: ct.append(ct[:3]),
        "setitem": lambda: ct.__setitem__(0, row),
        "resize": lambda: ct.resize(n + 2),
        "trim": lambda: ct.trim(2),
        "addcol": lambda: ct.addcol(np.zeros(n), name="extra"),
        "delcol": lambda: ct.delcol(ct.names[-1]),
        "attrs": lambda: ct.attrs.__setitem__("k", "v"),
        "column append": lambda: ct.cols[ct.names[0]].append(ct.cols[ct.names[0]][:1]),
        "column attrs": lambda: ct.cols[ct.names[0]].attrs.__setitem__("k", 1),
    }
    for what, write in writes.items():
        with pytest.raises(bcolzx.ReadOnlyError) as info:
            write()
        assert isinstance(info.value, IOError), what
    ct.flush()
    assert tree_digest(target) == before
    assert sha256(ct[:]) == DATASETS[path]["rows_sha256"]
    assert ct.names == DATASETS[path]["names"]


def test_read_only_opening_writes_nothing(tmp_path):
    """Opening and reading everything in mode 'r' leaves every file as it was."""
    root = tmp_path / "all"
    root.mkdir()
    for path in CARRAYS + CTABLES:
        writable_copy(path, root)
    before = tree_digest(root)
    for path in CARRAYS + CTABLES:
        obj = bcolzx.open(str(root / path), mode="r")
        obj[:]
        obj.attrs.getall()
        del obj
    assert tree_digest(root) == before


# -- walk ----------------------------------------------------------------------------------


def test_walk_finds_the_legacy_datasets(tmp_path):
    root = tmp_path / "tree"
    nested = root / "nested" / "deeper"
    nested.mkdir(parents=True)
    for i, path in enumerate(CARRAYS + CTABLES):
        writable_copy(path, nested if i % 2 else root)
    found = {os.path.basename(o.rootdir): o for o in bcolzx.walk(str(root), mode="r")}
    # Legacy walk skips empty containers and does not list a ctable's columns.
    assert set(found) == set(NONEMPTY) | set(CTABLES)
    for name, obj in found.items():
        assert obj.mode == "r"
        if name in CTABLES:
            assert isinstance(obj, bcolzx.ctable)
            assert sha256(obj[:]) == DATASETS[name]["rows_sha256"]
        else:
            assert isinstance(obj, bcolzx.carray)
            assert sha256(obj[:]) == DATASETS[name]["content"]["sha256"]
    carrays = {os.path.basename(o.rootdir) for o in bcolzx.walk(str(root), "carray", "r")}
    ctables = {os.path.basename(o.rootdir) for o in bcolzx.walk(str(root), "ctable", "r")}
    assert carrays == set(NONEMPTY) and ctables == set(CTABLES)


def test_walk_skips_unreadable_datasets_with_a_warning(tmp_path):
    root = tmp_path / "tree"
    root.mkdir()
    writable_copy("ca_object_optional", root)
    writable_copy("ca_int32_leftover", root)
    with pytest.warns(RuntimeWarning, match="ca_object_optional"):
        found = [os.path.basename(o.rootdir) for o in bcolzx.walk(str(root), mode="r")]
    assert found == ["ca_int32_leftover"]


# -- damage ------------------------------------------------------------------------------


def _patch(offset, data):
    def mutate(raw):
        raw[offset:offset + len(data)] = data
        return raw
    return mutate


def _u32(value):
    return int(value).to_bytes(4, "little")


#: Damage to one chunk file: name -> function(bytearray) -> bytes (None: delete the file).
CHUNK_DAMAGE = {
    "truncated by 5 bytes": lambda raw: raw[:-5],
    "truncated in the blosc header": lambda raw: raw[:20],
    "truncated in the blpk header": lambda raw: raw[:10],
    "empty file": lambda raw: b"",
    "bad magic": _patch(0, b"blpX"),
    "bad blpk version": _patch(4, b"\x02"),
    "two chunks in the blpk header": _patch(8, (2).to_bytes(8, "little")),
    "bytes after the chunk": lambda raw: raw + b"\0\0\0\0",
    "chunk cbytes too large": lambda raw: _patch(28, _u32(len(raw) - 16 + 1))(raw),
    "chunk cbytes too small": lambda raw: _patch(28, _u32(len(raw) - 16 - 1))(raw),
    "nbytes doubled": lambda raw: _patch(20, _u32(2 * int.from_bytes(raw[20:24], "little")))(raw),
    "nbytes halved": lambda raw: _patch(20, _u32(int.from_bytes(raw[20:24], "little") // 2))(raw),
    "memcpyed flag on a compressed chunk": lambda raw: _patch(18, bytes([raw[18] | 0x02]))(raw),
    "missing file": None,
}


@pytest.mark.parametrize("damage", sorted(CHUNK_DAMAGE))
@pytest.mark.parametrize("dataset,chunk", [("ca_int32_leftover", 3), ("ca_int32_leftover", 12),
                                           ("ca_bytes_S10", 1), ("ca_2d_float64_Nx3", 0),
                                           ("ct_mixed", 1)])
def test_damaged_chunk_raises(dataset, chunk, damage, tmp_path):
    """A damaged chunk file raises CorruptDataError (a ValueError) when it is read
    (the leftover is read at open), never gives wrong values; the other chunks
    still read right."""
    target = writable_copy(dataset, tmp_path)
    column = "f8" if dataset == "ct_mixed" else None
    cdir = target / column if column else target
    chunk_file = cdir / "data" / f"__{chunk}.blp"
    mutate = CHUNK_DAMAGE[damage]
    if mutate is None:
        chunk_file.unlink()
    else:
        chunk_file.write_bytes(bytes(mutate(bytearray(chunk_file.read_bytes()))))
    ds = COLUMNS[f"{dataset}/{column}"] if column else DATASETS[dataset]
    full = bcolzx.open(str(LEGACY / dataset), mode="r")
    full = full.cols[column][:] if column else full[:]
    cl = ds["chunklen"]
    lo, hi = chunk * cl, min((chunk + 1) * cl, ds["len"])

    def reads():
        obj = bcolzx.open(str(target), mode="r")
        c = obj.cols[column] if column else obj
        yield lambda: c[:]
        yield lambda: c[lo + 1]
        yield lambda: c[lo:lo + 2]
        yield lambda: list(bcolzx.iterblocks(c, blen=cl // 3 + 1))
        yield lambda: c.sum() if c.dtype.kind != "S" else c[hi - 1]
        if column:
            yield lambda: obj[:]
            yield lambda: obj[lo + 1]
        # the undamaged chunks read right
        other = 0 if chunk else 1
        assert np.array_equal(c[other * cl:other * cl + 5], full[other * cl:other * cl + 5])

    raised = 0
    try:
        for read in reads():
            with pytest.raises(bcolzx.CorruptDataError) as info:
                read()
            assert isinstance(info.value, ValueError)
            raised += 1
    except bcolzx.CorruptDataError as exc:  # raised when opening (the leftover)
        assert chunk == ds["nchunks_full"], "only the leftover is read at open"
        assert isinstance(exc, ValueError)
        raised = -1
    assert raised != 0


#: Damage to a metadata file: name -> (dataset, relative file, new content or None to delete,
#: the expected exception).
META_DAMAGE = {
    "storage not JSON": ("ca_int32_leftover", "meta/storage", b"garbage{", "corrupt"),
    "storage not UTF-8": ("ca_int32_leftover", "meta/storage", b"\xff\xfe\x00", "corrupt"),
    "storage a list": ("ca_int32_leftover", "meta/storage", b"[1, 2]", "corrupt"),
    "storage without keys": ("ca_int32_leftover", "meta/storage", b"{}", "corrupt"),
    "storage bad dtype": ("ca_int32_leftover", "meta/storage", {"dtype": "nope"}, "corrupt"),
    "storage chunklen 0": ("ca_int32_leftover", "meta/storage", {"chunklen": 0}, "corrupt"),
    "storage chunklen str": ("ca_int32_leftover", "meta/storage", {"chunklen": "1000"},
                             "corrupt"),
    "storage clevel 99": ("ca_int32_leftover", "meta/storage",
                          {"cparams": {"clevel": 99, "shuffle": 1, "cname": "lz4"}}, "corrupt"),
    "storage unknown codec": ("ca_int32_leftover", "meta/storage",
                              {"cparams": {"clevel": 5, "shuffle": 1, "cname": "nope"}},
                              "corrupt"),
    "storage shuffle 7": ("ca_int32_leftover", "meta/storage",
                          {"cparams": {"clevel": 5, "shuffle": 7, "cname": "lz4"}}, "corrupt"),
    "storage wider dtype": ("ca_int32_leftover", "meta/storage", {"dtype": "int64"}, "corrupt"),
    "storage narrower dtype": ("ca_bytes_S10", "meta/storage", {"dtype": "|S8"}, "corrupt"),
    "sizes not JSON": ("ca_int32_leftover", "meta/sizes", b"garbage", "corrupt"),
    "sizes negative": ("ca_int32_leftover", "meta/sizes",
                       b'{"shape": [-1], "nbytes": 0, "cbytes": 0}', "corrupt"),
    "sizes without shape": ("ca_int32_leftover", "meta/sizes", b'{"nbytes": 0, "cbytes": 0}',
                            "corrupt"),
    "sizes longer than the data": ("ca_int32_leftover", "meta/sizes",
                                   b'{"shape": [14000], "nbytes": 56000, "cbytes": 8356}',
                                   "corrupt"),
    "sizes wrong row shape": ("ca_2d_float64_Nx3", "meta/sizes",
                              b'{"shape": [30000, 4], "nbytes": 960000, "cbytes": 1}', "corrupt"),
    "attrs not JSON": ("ca_float64_attrs", "__attrs__", b"{'units'", "corrupt"),
    "rootdirs not JSON": ("ct_mixed", "__rootdirs__", b"names", "corrupt"),
    "rootdirs without names": ("ct_mixed", "__rootdirs__", b'{"columns": []}', "corrupt"),
    "column storage not JSON": ("ct_mixed", "i8/meta/storage", b"\0", "corrupt"),
    "sizes missing": ("ca_int32_leftover", "meta/sizes", None, "missing"),
    "storage missing": ("ca_int32_leftover", "meta/storage", None, "missing"),
    "data dir missing": ("ca_int32_leftover", "data", None, "missing"),
    "meta dir missing": ("ca_int32_leftover", "meta", None, "missing"),
    "column dir missing": ("ct_mixed", "s10", None, "missing"),
    "dataset missing": ("ca_int32_leftover", ".", None, "missing"),
}


def test_a_column_shorter_than_the_others_is_what_a_crash_leaves(tmp_path):
    """A writer killed between two columns' commits leaves one column shorter:
    the table is as long as its shortest column (docs/reliability.md); v1 has no
    checksum that could tell that from a shortened meta/sizes."""
    target = writable_copy("ct_mixed", tmp_path)
    want = bcolzx.open(str(target), mode="r")[:10000]
    (target / "f4" / "meta" / "sizes").write_bytes(
        b'{"shape": [10000], "nbytes": 40000, "cbytes": 30574}')
    for opener in OPENERS.values():
        ct = opener(target)
        assert len(ct) == 10000 and all(len(ct.cols[n]) == 10000 for n in ct.names)
        assert ct[:].tobytes() == want.tobytes()
    report = bcolzx.verify(target)
    assert report.ok and "different lengths" in str(report.notes[0])


@pytest.mark.parametrize("damage", sorted(META_DAMAGE))
def test_damaged_metadata_raises(damage, tmp_path):
    dataset, rel, content, expect = META_DAMAGE[damage]
    target = writable_copy(dataset, tmp_path)
    f = target / rel
    if content is None:
        if f.is_dir():
            shutil.rmtree(f)
        else:
            f.unlink()
    elif isinstance(content, dict):
        meta = json.loads(f.read_text())
        meta.update(content)
        f.write_text(json.dumps(meta))
    else:
        f.write_bytes(content)
    error = bcolzx.CorruptDataError if expect == "corrupt" else FileNotFoundError
    for opener in OPENERS.values():
        with pytest.raises(error) as info:
            obj = opener(target)
            obj[:]
            obj.attrs.getall()
        if expect == "corrupt":
            assert isinstance(info.value, ValueError)
