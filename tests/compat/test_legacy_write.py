"""bcolzx modifies legacy bcolz (format v1) datasets in place, keeping them v1.

Every fixture of ``tests/data/legacy_bcolz`` (but the object-dtype one, which
``test_legacy_objects.py`` covers) is copied to a temporary directory and
modified in mode ``'a'``: appends that cross chunk boundaries, ``__setitem__`` with ints,
slices (with steps), fancy and boolean keys, ``resize`` up (rows filled with
the dataset's ``dflt``) and down, ``trim``, attributes; ctables also get
rows, row assignments, column attributes, ``delcol`` and ``addcol``.  Each
result is compared with a NumPy model built independently of bcolzx (the
default value comes from the MANIFEST, quantization follows legacy bcolz's
formula), and the directory is checked to still be exactly v1: the same
``meta/storage``, a right ``meta/sizes``, ``data/__N.blp`` chunk files that
C-Blosc 1.x (python-blosc) decodes to the model, nothing else.

Legacy bcolz itself (``bcolz``, from ``bcolz-zipline``) then reads each
modified copy in a subprocess, appends to it, and bcolzx reads that back
(and the other way round once more); applying the same operations with both
libraries gives the same bytes.  Without python-blosc new chunks are
"memcpyed" Blosc 1.x chunks, which both read; with it they are compressed
with the dataset's own codec and filters.  Finally, what a writer did
without flushing (appends, assignments) is not visible after a crash,
simulated by copying the directory before the flush or by ``os._exit`` in a
subprocess; assignments to already committed chunks give, per chunk, the
old or the new rows, as docs/format/legacy-v1.md states.

Legacy bcolz runs only in subprocesses started in a temporary directory, a
few for the whole module; the tests that need it are skipped when it is not
installed.
"""

import hashlib
import importlib.util
import json
import math
import os
import re
import shutil
import stat
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import bcolzx
from bcolzx._ext import codec
from bcolzx._format import jsonfile
from bcolzx._format.layout import LOCK_FILE
from bcolzx._storage import legacy as legacy_store

from ..conftest import LEGACY

try:  # python-blosc: C-Blosc 1.x, what legacy bcolz decodes chunks with
    import blosc as pyblosc
except ImportError:  # pragma: no cover - depends on the environment
    pyblosc = None

MANIFEST = json.loads((LEGACY / "MANIFEST.json").read_text())
DATASETS = {ds["path"]: ds for ds in MANIFEST["datasets"]}
OBJECT = "ca_object_optional"
EMPTY = "ca_float64_empty"
CARRAYS = [p for p, ds in DATASETS.items() if ds["kind"] == "carray" and p != OBJECT]
MODIFIABLE = [p for p in CARRAYS if p != EMPTY]
CTABLES = [p for p, ds in DATASETS.items() if ds["kind"] == "ctable"]
#: Compression codes in the flags byte of a C-Blosc 1.x chunk header (bits 5-7).
COMPCODES = {"blosclz": 0, "lz4": 1, "lz4hc": 1, "snappy": 2, "zlib": 3, "zstd": 4}
CHUNK_NAME = re.compile(r"__(0|[1-9][0-9]*)\.blp\Z")
BLPK = 16


# -- helpers -----------------------------------------------------------------------------


def _legacy_bcolz_missing():
    """Why legacy bcolz cannot be used, or None.  Never imports it here."""
    spec = importlib.util.find_spec("bcolz")
    if spec is None:
        return "legacy bcolz is not installed (pip install bcolz-zipline; in the 'test' extra)"
    places = list(spec.submodule_search_locations or [])
    if not any(name.startswith("carray_ext") for place in places
               for name in os.listdir(place)):
        return f"the 'bcolz' found at {spec.origin} is not legacy bcolz (no bcolz.carray_ext)"
    return None


LEGACY_MISSING = _legacy_bcolz_missing()
needs_legacy = pytest.mark.skipif(LEGACY_MISSING is not None, reason=str(LEGACY_MISSING))


def sha256(arr):
    return hashlib.sha256(np.ascontiguousarray(arr).tobytes()).hexdigest()


def file_sha(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def writable_copy(name, dest, as_name=None):
    """Copy fixture `name` to ``dest/as_name`` (fixture files may be read-only), writable."""
    target = dest / (as_name or name)
    shutil.copytree(LEGACY / name, target)
    for dirpath, _, filenames in os.walk(target):
        for entry in [dirpath] + [os.path.join(dirpath, n) for n in filenames]:
            os.chmod(entry, os.stat(entry).st_mode | stat.S_IWUSR)
    return target


def column_dirs(path):
    """The carray directories of a dataset: itself, or a ctable's columns."""
    rootdirs = path / "__rootdirs__"
    if rootdirs.exists():
        return [path / n for n in json.loads(rootdirs.read_text())["names"]]
    return [path]


def values(dtype, n, rowshape=(), seed=0):
    """`n` deterministic rows of `dtype` (no NaN), different for each seed."""
    dtype = np.dtype(dtype)
    rng = np.random.default_rng(seed)
    shape = (n, *rowshape)
    kind = dtype.kind
    if kind == "b":
        return rng.random(shape) < 0.3
    if kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(max(info.min, -10**6), min(info.max, 10**6), shape,
                            endpoint=True).astype(dtype)
    if kind == "f":
        return (rng.standard_normal(shape) * 1000).astype(dtype)
    if kind == "M":
        steps = rng.integers(0, 10**15, shape).astype("m8[ns]")
        return (np.datetime64("2023-03-01", "ns") + steps).astype(dtype)
    if kind in "SU":
        width = dtype.itemsize // (4 if kind == "U" else 1)
        words = [f"w{x}"[:width] for x in rng.integers(0, 10**9, math.prod(shape))]
        return np.array(words, dtype=dtype).reshape(shape)
    raise TypeError(f"no test values for {dtype}")


def different(dtype, current, rowshape=(), seed=0):
    """A row of `dtype` that differs from `current` (so that assigning it changes bytes)."""
    for candidate in values(dtype, 16, rowshape, seed):
        if not np.array_equal(candidate, current):
            return np.asarray(candidate, dtype)
    raise AssertionError("no different value found")


def max_chunklen(name):
    ds = DATASETS[name]
    return max([ds.get("chunklen", 0)] + [c["chunklen"] for c in ds.get("columns", {}).values()])


def compressible(dtype, n, rowshape=(), seed=0):
    """`n` rows repeating a short pattern (C-Blosc compresses them well)."""
    return np.resize(values(dtype, 64, rowshape, seed), (n, *rowshape))


def legacy_quantize(arr, digits):
    """Legacy bcolz's ``utils.quantize``, transcribed (it runs when chunks are compressed)."""
    if not digits or arr.dtype.kind != "f":
        return arr
    exp = math.log(10.0 ** -digits, 10)
    exp = int(math.floor(exp)) if exp < 0 else int(math.ceil(exp))
    bits = math.ceil(math.log(10.0 ** -exp, 2))
    scale = 2.0 ** bits
    return (np.around(scale * arr) / scale).astype(arr.dtype)


def manifest_dflt(ds):
    """The default value of a carray as the MANIFEST gives it, as a 0-d array."""
    dtype = np.dtype(ds["dtype"])
    value = ds["dflt"]
    if dtype.kind == "M":
        return np.array(value, np.int64).view(dtype)
    if dtype.kind == "S":
        return np.array(value.encode("latin-1"), dtype)
    return np.array(value, dtype)


def model_rows(ds, rows):
    """`rows` as legacy bcolz stores them in carray `ds` (converted, quantized)."""
    dtype = np.dtype(ds["dtype"])
    return legacy_quantize(np.asarray(rows, dtype), ds["cparams"]["quantize"])


def read_back(path):
    """A fresh read-only bcolzx view of `path`: ``[:]``."""
    return bcolzx.open(str(path), mode="r")[:]


def assert_same(got, model, what=""):
    assert got.dtype == model.dtype, what
    assert got.shape == model.shape, what
    if not np.array_equal(got, model):
        flat_got = got.reshape(len(got), -1) if got.dtype.names is None else got
        flat_model = model.reshape(len(model), -1) if model.dtype.names is None else model
        diff = flat_got != flat_model
        bad = np.flatnonzero(diff.any(axis=1) if diff.ndim > 1 else diff)
        raise AssertionError(f"{what}: {len(bad)} rows differ, first {bad[:5].tolist()}: "
                             f"{got[bad[:3]]!r} != {model[bad[:3]]!r}")


def decode_blosc1(chunk):
    """Decode one C-Blosc 1.x chunk as legacy bcolz does (python-blosc), else with bcolzx."""
    if pyblosc is not None:
        return pyblosc.decompress(bytes(chunk))
    return codec.Decompressor().decompress(chunk)


def chunk_header(path):
    """``(flags, typesize, nbytes, blocksize, cbytes)`` of the Blosc chunk in a .blp file."""
    raw = path.read_bytes()
    assert raw[:4] == b"blpk" and raw[4] == 1 and raw[5:8] == b"\0\0\0", path
    assert int.from_bytes(raw[8:16], "little") == 1, path
    head = raw[BLPK:BLPK + 16]
    assert head[0] == 2, f"{path}: Blosc chunk format version {head[0]}, C-Blosc 1.x wrote 2"
    nbytes, blocksize, cbytes = (int.from_bytes(head[i:i + 4], "little") for i in (4, 8, 12))
    assert len(raw) == BLPK + cbytes, path
    return head[2], head[3], nbytes, blocksize, cbytes


def check_v1_carray(path, original, model, attrs):
    """The carray directory `path` (a modified copy of fixture dir `original`) is
    exactly v1 and holds `model` (as decoded by C-Blosc 1.x) and `attrs`."""
    storage_raw = (original / "meta" / "storage").read_bytes()
    storage = json.loads(storage_raw)
    # nothing but the v1 files, and the write lock file of a directory bcolzx wrote
    # (docs/format/legacy-v1.md: legacy bcolz ignores it, as the reads below show)
    top = {e.name for e in path.iterdir()}
    assert top - {LOCK_FILE} == {"__attrs__", "meta", "data"}, top
    assert {e.name for e in (path / "meta").iterdir()} == {"sizes", "storage"}
    assert (path / "meta" / "storage").read_bytes() == storage_raw, "meta/storage changed"
    assert "format" not in json.loads((path / "meta" / "storage").read_text())
    assert json.loads((path / "__attrs__").read_text()) == attrs
    dtype = np.dtype(storage["dtype"])
    cl = storage["chunklen"]
    n, rowshape = model.shape[0], model.shape[1:]
    rowbytes = dtype.itemsize * math.prod(rowshape)
    nchunks, nfull = -(-n // cl), n // cl
    originals = {e.name for e in (original / "data").iterdir()}
    numbers = set()
    for entry in (path / "data").iterdir():
        assert entry.is_file(), entry
        if entry.name == ".gitkeep" and entry.name in originals:
            continue
        match = CHUNK_NAME.match(entry.name)
        assert match, f"a file legacy bcolz does not write: {entry}"
        number = int(match.group(1))
        numbers.add(number)
        if number >= nchunks:  # only a stale file legacy bcolz left may remain there
            assert entry.name in originals and \
                file_sha(entry) == file_sha(original / "data" / entry.name), entry
    assert set(range(nchunks)) <= numbers
    # the chunks decode, with C-Blosc 1.x, to exactly the model's rows
    data, full_cbytes = [], 0
    for i in range(nchunks):
        f = path / "data" / f"__{i}.blp"
        flags, typesize, nbytes, blocksize, cbytes = chunk_header(f)
        rows = cl if i < nfull else n - nfull * cl
        assert nbytes == rows * rowbytes, f"{f} holds {nbytes} bytes, not {rows} rows"
        expected_ts = {"S": 1, "U": 4}.get(dtype.kind, min(dtype.itemsize, 255))
        assert typesize == expected_ts, f
        raw = decode_blosc1(f.read_bytes()[BLPK:])
        assert len(raw) == nbytes
        data.append(raw)
        if i < nfull:
            full_cbytes += cbytes
    assert b"".join(data) == np.ascontiguousarray(model).tobytes()
    sizes = json.loads((path / "meta" / "sizes").read_text())
    assert sizes == {"shape": [n, *rowshape], "nbytes": n * rowbytes,
                     "cbytes": full_cbytes + cl * rowbytes}


def check_v1_ctable(path, original, model, attrs, column_attrs):
    """The ctable directory `path` is v1: ``__rootdirs__`` naming its columns, each a v1 carray."""
    names = list(model.dtype.names)
    assert json.loads((path / "__rootdirs__").read_text()) == {"names": names}
    assert json.loads((path / "__attrs__").read_text()) == attrs
    assert {e.name for e in path.iterdir()} - {LOCK_FILE} == {"__rootdirs__", "__attrs__",
                                                               *names}
    for name in names:
        check_v1_carray(path / name, original / name, model[name], column_attrs.get(name, {}))


# -- the modifications, applied to bcolzx and to a NumPy model ------------------------


def modify_carray(path, verify=True, seed=1):
    """Modify the v1 carray at `path` with bcolzx in every way, checking each step
    against a NumPy model (and, if `verify`, what is on disk after each step);
    returns ``(model, attrs)``."""
    ds = DATASETS[path.name]
    c = bcolzx.carray(rootdir=str(path), mode="a")
    model = read_back(path)
    dt, cl, rs = c.dtype, c.chunklen, c.shape[1:]
    dflt = manifest_dflt(ds)
    rng = np.random.default_rng(seed)
    n0 = len(model)

    # appends: fill the leftover, whole chunks, a new leftover; one row alone
    rows = values(dt, 2 * cl + cl // 3 + 5, rs, seed)
    c.append(rows)
    model = np.concatenate([model, model_rows(ds, rows)])
    one = values(dt, 1, rs, seed + 1)[0]
    c.append(one)
    model = np.concatenate([model, model_rows(ds, np.asarray(one, dt)[None])])
    assert len(c) == len(model)
    assert_same(c[:], model, "after append (in memory)")
    n = len(model)

    # assignments: ints (first, last, the last committed row, across chunks), slices,
    # slices with steps, fancy keys with repeats, a boolean mask
    for k, i in enumerate((0, -1, max(n0 - 1, 1), cl, n - cl - 1)):
        v = values(dt, 1, rs, seed + 2 + k)[0]
        c[i] = v
        model[i] = model_rows(ds, np.asarray(v, dt)[None])[0]
    a, b = max(0, n0 - cl // 2 - 3), n0 + cl // 2 + 1
    v = values(dt, b - a, rs, seed + 9)
    c[a:b] = v
    model[a:b] = model_rows(ds, v)
    v = values(dt, len(range(1, n, 7)), rs, seed + 10)
    c[1:n:7] = v
    model[1:n:7] = model_rows(ds, v)
    idx = rng.integers(-n, n, 60)
    idx[6] = idx[5]
    v = values(dt, 60, rs, seed + 11)
    c[idx] = v
    model[idx] = model_rows(ds, v)
    mask = rng.random(n) < 0.01
    v = values(dt, 1, rs, seed + 12)[0]
    c[mask] = v
    model[mask] = model_rows(ds, np.asarray(v, dt)[None])[0]
    if rs:
        v = values(dt, 1, (), seed + 13)[0]
        c[7, 1] = v
        model[7, 1] = model_rows(ds, np.asarray([v], dt))[0]
    assert_same(c[:], model, "after setitem (in memory)")

    attrs = dict(ds["attrs"])
    c.attrs["bcolzx"] = {"written": [1, 2]}
    attrs["bcolzx"] = {"written": [1, 2]}
    if "units" in attrs:
        c.attrs["units"] = "km/h"
        del c.attrs["tags"]
        attrs["units"] = "km/h"
        del attrs["tags"]
    c.flush()
    if verify:
        assert_same(read_back(path), model, "after flush, reopened")
        check_v1_carray(path, LEGACY / path.name, model, attrs)

    # resize up: rows of the default value (legacy's dflt, from the MANIFEST)
    grow = n + cl + 3
    c.resize(grow)
    model = np.concatenate([model, np.broadcast_to(dflt, (grow - n, *rs))])
    assert_same(c[:], model, "after resize up (in memory)")
    c.flush()
    if verify:
        assert_same(read_back(path), model, "after resize up, reopened")
        check_v1_carray(path, LEGACY / path.name, model, attrs)

    # shrinking (resize, then trim, then resize to whole chunks) is durable at once
    for new_len in (grow - cl - 10, grow - cl - 10 - (cl // 2 + 1), None):
        new_len = len(model) // cl * cl if new_len is None else new_len
        if new_len == len(model) - (cl // 2 + 1):
            c.trim(cl // 2 + 1)
        else:
            c.resize(new_len)
        model = model[:new_len]
        if verify:
            assert_same(read_back(path), model, f"after shrinking to {new_len}, reopened")
            check_v1_carray(path, LEGACY / path.name, model, attrs)
    c.append(rows[:3])
    model = np.concatenate([model, model_rows(ds, rows[:3])])
    c.flush()
    del c
    return model, attrs


def modify_ctable(path, verify=True, seed=1):
    """Modify the v1 ctable at `path` with bcolzx (checking what is on disk after each
    step if `verify`); returns ``(model, attrs, column attrs)``."""
    ds = DATASETS[path.name]
    # the default auto_flush (on) is tested when verifying; off is quicker
    ct = bcolzx.ctable(rootdir=str(path), mode="a", **({} if verify else {"auto_flush": False}))
    model = read_back(path)
    names = list(model.dtype.names)
    cols = ds["columns"]
    cl = max(cols[n]["chunklen"] for n in names)

    def rows_of(n, s):
        out = np.empty(n, model.dtype)
        for k, name in enumerate(names):
            out[name] = values(model.dtype[name], n, (), s + k)
        return out

    rows = rows_of(2 * cl + 5, seed)
    ct.append(rows)
    model = np.concatenate([model, rows])
    single = rows_of(1, seed + 20)[0]
    ct.append(tuple(single.tolist()))
    model = np.concatenate([model, single[None]])
    n = len(model)
    ct[3] = rows[0]
    model[3] = rows[0]
    ct[-1] = rows[1]
    model[-1] = rows[1]
    ct[[5, n - cl - 2, 5]] = rows[2:5]
    model[[5, n - cl - 2, 5]] = rows[2:5]
    first = names[0]
    v = values(model.dtype[first], 400, (), seed + 30)
    ct.cols[first][cl - 200:cl + 200] = v
    model[first][cl - 200:cl + 200] = v
    assert_same(ct[:], model, "after append and setitem (in memory)")

    attrs = dict(ds["attrs"], bcolzx=3)
    ct.attrs["bcolzx"] = 3
    column_attrs = {name: dict(cols[name]["attrs"]) for name in names}
    last = names[-1]
    ct.cols[last].attrs["note"] = "set by bcolzx"
    column_attrs[last]["note"] = "set by bcolzx"
    ct.flush()
    if verify:
        assert_same(read_back(path), model, "after flush, reopened")

    ct.resize(n + 100)
    grown = np.empty(100, model.dtype)
    for name in names:
        grown[name] = manifest_dflt(cols[name])
    model = np.concatenate([model, grown])
    ct.flush()
    if verify:
        assert_same(read_back(path), model, "after resize, reopened")
    ct.trim(150)
    model = model[:-150]
    if verify:
        assert_same(read_back(path), model, "after trim, reopened")
    if "f4" in names:
        ct.delcol("f4")
        names.remove("f4")
        packed = np.empty(len(model), [(nm, model.dtype[nm]) for nm in names])
        for nm in names:
            packed[nm] = model[nm]
        model = packed
        del column_attrs["f4"]
        assert not (path / "f4").exists()
    ct.flush()
    del ct
    return model, attrs, {k: v for k, v in column_attrs.items() if v}


def modify(path, verify=True):
    """Modify a copy of any fixture (see `modify_carray`); returns ``(model, attrs,
    column attrs, checker)`` where ``checker(path)`` checks that a directory holds
    exactly the modified dataset, in v1."""
    original = LEGACY / path.name
    if (path / "__rootdirs__").exists():
        model, attrs, column_attrs = modify_ctable(path, verify)
        return model, attrs, column_attrs, \
            lambda p: check_v1_ctable(p, original, model, attrs, column_attrs)
    if path.name == EMPTY:
        model, attrs = modify_empty(path, verify)
    else:
        model, attrs = modify_carray(path, verify)
    return model, attrs, {}, lambda p: check_v1_carray(p, original, model, attrs)


def modify_empty(path, verify=True):
    ds = DATASETS[EMPTY]
    c = bcolzx.carray(rootdir=str(path), mode="a")
    cl = c.chunklen
    model = np.empty(0, np.float64)
    rows = values(np.float64, 2 * cl + 11, (), 5)
    c.append(rows)
    model = np.concatenate([model, rows])
    c[0] = -1.5
    model[0] = -1.5
    c[cl - 2:cl + 2] = [1, 2, 3, 4]
    model[cl - 2:cl + 2] = [1, 2, 3, 4]
    c.flush()
    if verify:
        assert_same(read_back(path), model, "after append to the empty dataset")
    c.trim(len(c))
    assert len(c) == 0
    if verify:
        assert_same(read_back(path), model[:0], "trimmed to nothing")
        assert not list((path / "data").glob("*.blp"))
    c.resize(cl + 1)
    model = np.broadcast_to(manifest_dflt(ds), (cl + 1,)).copy()
    c.append(rows[:10])
    model = np.concatenate([model, rows[:10]])
    c.attrs["was"] = "empty"
    c.flush()
    del c
    return model, {"was": "empty"}


# -- writing in place ---------------------------------------------------------------------


@pytest.mark.parametrize("name", MODIFIABLE + [EMPTY])
def test_modify_carray_in_place(name, tmp_path):
    path = writable_copy(name, tmp_path)
    model, _, _, check = modify(path)
    check(path)
    c = bcolzx.open(str(path), mode="r")
    ds = DATASETS[name]
    assert c.dtype == np.dtype(ds["dtype"]) and c.chunklen == ds["chunklen"]
    assert (c.cparams.clevel, c.cparams.shuffle, c.cparams.cname, c.cparams.quantize) == (
        ds["cparams"]["clevel"], ds["cparams"]["shuffle"], ds["cparams"]["cname"],
        ds["cparams"]["quantize"])
    assert c.dflt == manifest_dflt(ds)
    assert_same(c[:], model, "reopened")


@pytest.mark.parametrize("name", CTABLES)
def test_modify_ctable_in_place(name, tmp_path):
    path = writable_copy(name, tmp_path)
    model, _, _, check = modify(path)
    check(path)
    ct = bcolzx.open(str(path), mode="r")
    assert isinstance(ct, bcolzx.ctable)
    assert_same(ct[:], model, "reopened")


def test_stale_chunk_file_is_replaced(tmp_path):
    """Appending to `ca_int32_trimmed_stale` writes a new `__2.blp` holding exactly the
    new rows: the stale one (rows 2000..2499 left by legacy trim) is gone."""
    path = writable_copy("ca_int32_trimmed_stale", tmp_path)
    c = bcolzx.carray(rootdir=str(path), mode="a")
    c.append(np.arange(-10, 0, dtype=np.int32))
    c.flush()
    raw = decode_blosc1((path / "data" / "__2.blp").read_bytes()[BLPK:])
    assert np.frombuffer(raw, np.int32).tolist() == list(range(-10, 0))
    expect = np.concatenate([np.arange(2000), np.arange(-10, 0)]).astype(np.int32)
    assert_same(read_back(path), expect)


@pytest.mark.parametrize("name", CTABLES)
def test_addcol_on_legacy_ctable_reads_back(name, tmp_path):
    path = writable_copy(name, tmp_path)
    ct = bcolzx.ctable(rootdir=str(path), mode="a")
    rows = ct[:]
    new = np.arange(len(ct), dtype=np.int16) * 3
    ct.addcol(new, name="added")
    ct.flush()
    back = bcolzx.open(str(path), mode="r")
    assert back.names == DATASETS[name]["names"] + ["added"]
    assert np.array_equal(back.cols["added"][:], new)
    for field in rows.dtype.names:
        assert np.array_equal(back.cols[field][:], rows[field])


@pytest.mark.parametrize("name", CTABLES)
def test_addcol_keeps_legacy_ctable_v1(name, tmp_path):
    """A column added to a legacy table is a legacy (v1) carray directory."""
    path = writable_copy(name, tmp_path)
    ct = bcolzx.ctable(rootdir=str(path), mode="a")
    new = np.arange(len(ct), dtype=np.int16)
    ct.addcol(new, name="added")
    ct.flush()
    col = path / "added"
    assert "format" not in json.loads((col / "meta" / "storage").read_text())
    assert {e.name for e in col.iterdir()} == {"__attrs__", "meta", "data", LOCK_FILE}
    assert {e.name for e in (col / "meta").iterdir()} == {"sizes", "storage"}
    assert all(CHUNK_NAME.match(e.name) for e in (col / "data").iterdir())
    sizes = json.loads((col / "meta" / "sizes").read_text())
    assert sizes["shape"] == [len(new)] and sizes["nbytes"] == new.nbytes
    assert np.array_equal(bcolzx.carray(rootdir=str(col), mode="r")[:], new)
    if LEGACY_MISSING is None:
        (read,) = legacy_reads(run_legacy(
            [{"path": str(col), "steps": [{"op": "r"}, {"op": "read"}]}],
            tmp_path / "legacy")[0], name)
        check_legacy_digest(read, new, f"{name}: legacy bcolz reading the added column")
        (table,) = legacy_reads(run_legacy(
            [{"path": str(path), "steps": [{"op": "r"}, {"op": "read"}]}],
            tmp_path / "legacy2")[0], name)
        assert table["names"] == DATASETS[name]["names"] + ["added"]


# -- legacy bcolz reads what bcolzx wrote, and the other way round ----------------------


LEGACY_SCRIPT = textwrap.dedent('''
    import hashlib, json, sys
    import numpy as np
    import bcolz

    def digest(obj):
        arr = obj[:]
        out = {"len": len(obj), "sha256": hashlib.sha256(np.ascontiguousarray(arr).tobytes())
               .hexdigest(), "dtype": str(arr.dtype), "shape": list(arr.shape),
               "attrs": obj.attrs.getall()}
        if isinstance(obj, bcolz.ctable):
            out["names"] = list(obj.names)
            out["column_attrs"] = {n: obj.cols[n].attrs.getall() for n in obj.names}
        return out

    with open(sys.argv[1]) as f:
        jobs = json.load(f)
    results = []
    for job in jobs:
        res = {"reads": []}
        try:
            obj = None
            for step in job["steps"]:
                op = step["op"]
                if op in ("r", "a"):
                    obj = bcolz.open(job["path"], mode=op)
                elif op == "read":
                    res["reads"].append(digest(obj))
                elif op == "append":
                    obj.append(np.load(step["data"]))
                elif op == "resize":
                    obj.resize(step["n"])
                elif op == "trim":
                    obj.trim(step["n"])
                elif op == "flush":
                    obj.flush()
                else:
                    raise ValueError(op)
        except Exception as exc:
            res["error"] = "%s: %s" % (type(exc).__name__, exc)
        results.append(res)
    with open(sys.argv[2], "w") as f:
        json.dump(results, f)
''')


def run_legacy(jobs, workdir):
    """Run `jobs` with legacy bcolz in one subprocess started in `workdir`.

    Each job is ``{"path": dir, "steps": [{"op": ...}, ...]}``: ``r``/``a`` open the
    dataset, ``read`` records its length, SHA-256 of ``[:]``, dtype, shape and
    attributes, ``append`` (``data``: a .npy file), ``resize``/``trim`` (``n``) and
    ``flush`` modify it.  Returns one ``{"reads": [...], "error"?: str}`` per job.
    """
    workdir.mkdir(parents=True, exist_ok=True)
    jobs_file, results_file = workdir / "jobs.json", workdir / "results.json"
    jobs_file.write_text(json.dumps(jobs))
    proc = subprocess.run([sys.executable, "-c", LEGACY_SCRIPT, str(jobs_file),
                           str(results_file)], cwd=str(workdir), capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, f"legacy bcolz failed:\n{proc.stdout}\n{proc.stderr}"
    results = json.loads(results_file.read_text())
    assert len(results) == len(jobs)
    return results


def legacy_reads(result, what):
    assert "error" not in result, f"legacy bcolz, {what}: {result.get('error')}"
    return result["reads"]


def check_legacy_digest(read, model, what):
    assert read["len"] == len(model), what
    assert read["dtype"] == str(model.dtype), what
    assert read["sha256"] == sha256(model), what


def more_rows(model, n, seed):
    """Rows to append to a dataset like `model` (a structured array for a ctable)."""
    if model.dtype.names:
        out = np.empty(n, model.dtype)
        for k, name in enumerate(model.dtype.names):
            out[name] = values(model.dtype[name], n, (), seed + k)
        return out
    return values(model.dtype, n, model.shape[1:], seed)


def model_after_append(name, model, rows):
    if model.dtype.names:
        return np.concatenate([model, rows])
    return np.concatenate([model, model_rows(DATASETS[name], rows)])


ROUNDTRIP = CARRAYS + CTABLES


@pytest.fixture(scope="module")
def roundtrip(tmp_path_factory):
    """Every fixture modified by bcolzx, then read by legacy bcolz, appended to by it
    (crossing chunk boundaries) and read again; plus the same appends, resize and
    trim applied by both libraries to two pristine copies."""
    if LEGACY_MISSING:
        pytest.skip(LEGACY_MISSING)
    base = tmp_path_factory.mktemp("roundtrip")
    cases, jobs = {}, []
    for name in ROUNDTRIP:
        case = cases[name] = {}
        cl = max_chunklen(name)
        try:
            path = writable_copy(name, base / "bcolzx")
            model, attrs, column_attrs, _ = modify(path, verify=False)
            rows = more_rows(model, cl + cl // 2 + 3, 77)
            np.save(base / f"{name}.append.npy", rows)
            case.update(path=path, model=model, attrs=attrs, column_attrs=column_attrs,
                        after=model_after_append(name, model, rows))
            jobs.append({"name": name, "path": str(path), "steps": [
                {"op": "r"}, {"op": "read"}, {"op": "a"},
                {"op": "append", "data": str(base / f"{name}.append.npy")}, {"op": "flush"},
                {"op": "r"}, {"op": "read"}]})
            # the same operations by both libraries on pristine copies
            twin = writable_copy(name, base / "twins", f"{name}.legacy")
            mine = writable_copy(name, base / "twins", f"{name}.bcolzx")
            obj = bcolzx.open(str(mine), mode="a")
            ops_rows = more_rows(obj[:0], 2 * cl + 9, 88)
            np.save(base / f"{name}.ops.npy", ops_rows)
            steps = [{"op": "a"}, {"op": "append", "data": str(base / f"{name}.ops.npy")}]
            obj.append(ops_rows)
            if isinstance(obj, bcolzx.carray):
                steps.append({"op": "resize", "n": len(obj) + 1234})
                obj.resize(len(obj) + 1234)
            steps.append({"op": "trim", "n": 17})
            obj.trim(17)
            obj.flush()
            case["twin_bcolzx"] = read_back(mine)
            jobs.append({"name": name, "path": str(twin),
                         "steps": steps + [{"op": "flush"}, {"op": "r"}, {"op": "read"}]})
        except Exception as exc:  # reported by this dataset's tests
            case["error"] = exc
    results = run_legacy(jobs, base / "run1")
    for job, result in zip(jobs, results):
        key = "twin_legacy" if job["path"].endswith(".legacy") else "legacy"
        cases[job["name"]][key] = result
    for name, case in cases.items():
        if "error" not in case and "error" not in case["legacy"]:
            try:
                case["bcolzx_after_legacy"] = read_back(case["path"])
            except Exception as exc:  # reported by this dataset's tests
                case["error"] = exc
    return cases


def _case(roundtrip, name):
    case = roundtrip[name]
    if "error" in case:
        raise case["error"]
    return case


@needs_legacy
@pytest.mark.parametrize("name", ROUNDTRIP)
def test_legacy_reads_what_bcolzx_wrote(roundtrip, name):
    case = _case(roundtrip, name)
    first, again = legacy_reads(case["legacy"], name)
    check_legacy_digest(first, case["model"], f"{name}: legacy bcolz reading bcolzx's writes")
    if case["model"].dtype.names:
        assert first["names"] == list(case["model"].dtype.names)
    check_legacy_digest(again, case["after"], f"{name}: legacy bcolz after its own append")


@needs_legacy
@pytest.mark.parametrize("name", ROUNDTRIP)
def test_legacy_reads_bcolzx_attrs(roundtrip, name):
    case = _case(roundtrip, name)
    first = legacy_reads(case["legacy"], name)[0]
    assert first["attrs"] == case["attrs"]
    if "column_attrs" in first:
        assert {k: v for k, v in first["column_attrs"].items() if v} == case["column_attrs"]


@needs_legacy
@pytest.mark.parametrize("name", ROUNDTRIP)
def test_bcolzx_reads_what_legacy_appended(roundtrip, name):
    case = _case(roundtrip, name)
    legacy_reads(case["legacy"], name)
    assert_same(case["bcolzx_after_legacy"], case["after"], f"{name}: bcolzx after legacy")


@needs_legacy
@pytest.mark.parametrize("name", ROUNDTRIP)
def test_same_operations_same_bytes_as_legacy(roundtrip, name):
    """Append, resize (the dflt rows), trim, quantization: bcolzx and legacy bcolz agree."""
    case = _case(roundtrip, name)
    (twin,) = legacy_reads(case["twin_legacy"], name)
    check_legacy_digest(twin, case["twin_bcolzx"], f"{name}: the same operations")


@pytest.fixture(scope="module")
def roundtrip2(roundtrip, tmp_path_factory):
    """bcolzx modifies (a copy of) what legacy bcolz appended to; legacy reads it again."""
    base = tmp_path_factory.mktemp("roundtrip2")
    cases, jobs = {}, []
    for name, case in roundtrip.items():
        if "error" in case or "error" in case["legacy"]:
            continue
        path = base / name
        shutil.copytree(case["path"], path)
        obj = bcolzx.open(str(path), mode="a")
        model = case["after"]
        rows = more_rows(model, 1000, 99)
        obj.append(rows)
        model = model_after_append(name, model, rows)
        obj[len(model) - 500] = rows[0]
        model[len(model) - 500] = model_after_append(name, model[:0], rows[:1])[0]
        obj.flush()
        cases[name] = {"model": model, "path": path}
        jobs.append({"name": name, "path": str(path), "steps": [{"op": "r"}, {"op": "read"}]})
    for job, result in zip(jobs, run_legacy(jobs, base / "run")):
        cases[job["name"]]["legacy"] = result
    return cases


@needs_legacy
@pytest.mark.parametrize("name", ROUNDTRIP)
def test_round_trip_twice(roundtrip2, name):
    if name not in roundtrip2:
        pytest.fail(f"{name}: the first round trip failed")
    case = roundtrip2[name]
    (read,) = legacy_reads(case["legacy"], name)
    check_legacy_digest(read, case["model"], f"{name}: legacy, after bcolzx, legacy, bcolzx")
    assert_same(read_back(case["path"]), case["model"], f"{name}: bcolzx")


# -- without python-blosc: memcpyed chunks -------------------------------------------------


FALLBACK = MODIFIABLE + ["ct_mixed"]


def columns_of(obj):
    """``{column name or None: carray}`` of a carray or ctable."""
    if isinstance(obj, bcolzx.carray):
        return {None: obj}
    return {name: obj.cols[name] for name in obj.names}


def assemble(obj, arrays):
    """The model of `obj` from per-column arrays (``{None: array}`` for a carray)."""
    if None in arrays:
        return arrays[None]
    out = np.empty(len(next(iter(arrays.values()))), obj.dtype)
    for name, arr in arrays.items():
        out[name] = arr
    return out


def touch_and_append(path, seed, data=values):
    """Assign a row in a committed chunk and the last committed row, append across
    chunk boundaries, flush; returns ``(model, {column dir name: chunk numbers written})``."""
    obj = bcolzx.open(str(path), mode="a")
    n0 = len(obj)
    columns = columns_of(obj)
    n_app = 2 * max(col.chunklen for col in columns.values()) + 7
    arrays, written = {}, {}
    for k, (field, col) in enumerate(columns.items()):
        cl = col.chunklen
        like = {"dtype": str(col.dtype), "cparams": {"quantize": col.cparams.quantize}}
        arr = col[:]
        rows = data(col.dtype, n_app, col.shape[1:], seed + k)
        col.append(rows)
        arr = np.concatenate([arr, model_rows(like, rows)])
        chunks = set(range(n0 // cl, -(-len(arr) // cl)))
        for i in (1, n0 - 1):
            v = model_rows(like, different(col.dtype, arr[i], col.shape[1:], seed + i)[None])[0]
            col[i] = v
            arr[i] = v
            chunks.add(i // cl)
        arrays[field] = arr
        written[path.name if field is None else field] = chunks
    obj.flush()
    return assemble(obj, arrays), written


@pytest.fixture(scope="module")
def fallback(tmp_path_factory):
    """Copies modified by bcolzx without python-blosc (its module attribute set to None)."""
    base = tmp_path_factory.mktemp("fallback")
    cases = {}

    def run(name, path):
        before = {(cdir.name, f.name): file_sha(f) for cdir in column_dirs(path)
                  for f in (cdir / "data").iterdir()}
        model, written = touch_and_append(path, 5)
        cases[name] = {"path": path, "model": model, "written": written, "before": before}

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(legacy_store, "_blosc", None)
        assert not legacy_store.blosc1_available()
        for name in FALLBACK:
            run(name, writable_copy(name, base))
    if not LEGACY_MISSING:
        jobs = [{"name": n, "path": str(c["path"]), "steps": [{"op": "r"}, {"op": "read"}]}
                for n, c in cases.items()]
        for job, result in zip(jobs, run_legacy(jobs, base / "run")):
            cases[job["name"]]["legacy"] = result
    return cases


@pytest.mark.parametrize("name", FALLBACK)
def test_without_python_blosc_new_chunks_are_memcpyed(fallback, name):
    case = fallback[name]
    path = case["path"]
    for cdir in column_dirs(path):
        storage = json.loads((cdir / "meta" / "storage").read_text())
        dtype = np.dtype(storage["dtype"])
        typesize = {"S": 1, "U": 4}.get(dtype.kind, min(dtype.itemsize, 255))
        written = case["written"][cdir.name]
        for f in sorted((cdir / "data").iterdir()):
            if not CHUNK_NAME.match(f.name):
                continue
            number = int(CHUNK_NAME.match(f.name).group(1))
            changed = case["before"].get((cdir.name, f.name)) != file_sha(f)
            assert changed == (number in written), f"{f}: rewritten {changed}"
            if not changed:
                continue
            raw = f.read_bytes()
            assert raw[BLPK + 2] & 0x02, f"{f} is not memcpyed"
            flags, ts, nbytes, blocksize, cbytes = chunk_header(f)
            assert (raw[BLPK], raw[BLPK + 1], flags, ts) == (2, 1, 0x12, typesize), f
            assert blocksize == nbytes and cbytes == nbytes + 16 and len(raw) == 32 + nbytes
    assert_same(read_back(path), case["model"], f"{name}: bcolzx")


@needs_legacy
@pytest.mark.parametrize("name", FALLBACK)
def test_legacy_reads_memcpyed_chunks(fallback, name):
    case = fallback[name]
    (read,) = legacy_reads(case["legacy"], name)
    check_legacy_digest(read, case["model"], f"{name}: legacy bcolz, memcpyed chunks")


@pytest.mark.parametrize("cname", ["snappy", "lz4"])
def test_encoder_without_the_codec_stores_memcpyed_chunks(cname, monkeypatch):
    """A codec python-blosc lacks (snappy; or no python-blosc at all) gives memcpyed
    chunks that C-Blosc 1.x decodes; forcing compression then is an ImportError."""
    if cname == "lz4":
        monkeypatch.setattr(legacy_store, "_blosc", None)
    elif pyblosc is not None and cname in pyblosc.cnames:
        pytest.skip(f"python-blosc compresses {cname}")
    from bcolzx._format import legacy as v1

    storage = v1.storage_from_json({"dtype": "<U3", "chunklen": 100, "dflt": "",
                                    "cparams": {"clevel": 9, "shuffle": 1, "cname": cname}})
    encoder = legacy_store.Blosc1Encoder(storage)
    assert not encoder.compressing
    rows = np.array(["ab", "c", "xyz"] * 40, "<U3")
    chunk = encoder.compress(rows)
    assert chunk[:4] == bytes([2, 1, 0x12, 4])
    assert len(chunk) == 16 + rows.nbytes
    assert decode_blosc1(chunk) == rows.tobytes()
    assert codec.Decompressor().decompress(chunk) == rows.tobytes()
    with pytest.raises(ImportError, match="python-blosc"):
        legacy_store.Blosc1Encoder(storage, compress=True)


@pytest.mark.skipif(pyblosc is None, reason="python-blosc (the 'legacy' extra) is not installed")
@pytest.mark.parametrize("name", MODIFIABLE + ["ct_mixed"])
def test_with_python_blosc_new_chunks_are_compressed(name, tmp_path):
    """New chunks use the dataset's own codec and filters (as legacy bcolz wrote
    its chunk 0) and are compressed unless clevel is 0."""
    path = writable_copy(name, tmp_path)
    assert legacy_store.blosc1_available()
    before = {(cdir.name, f.name): file_sha(f) for cdir in column_dirs(path)
              for f in (cdir / "data").iterdir()}
    model, written = touch_and_append(path, 6, data=compressible)
    assert_same(read_back(path), model, name)
    for cdir in column_dirs(path):
        ds = DATASETS[name] if cdir == path else DATASETS[name]["columns"][cdir.name]
        legacy_flags = ds["chunk0_headers"]["blosc"]["flags"]
        clevel = ds["cparams"]["clevel"]
        for number in sorted(written[cdir.name]):
            f = cdir / "data" / f"__{number}.blp"
            assert before.get((cdir.name, f.name)) != file_sha(f)
            flags, ts, nbytes, blocksize, cbytes = chunk_header(f)
            if clevel == 0:
                assert flags & 0x02, f"{f}: clevel 0 stores memcpyed chunks"
                continue
            if nbytes < 4096:
                continue  # a short leftover may be too small to compress
            assert not flags & 0x02, f"{f} is memcpyed"
            if number * ds["chunklen"] >= ds["len"]:  # holds appended (compressible) rows only
                assert cbytes < nbytes // 2, f"{f}: {nbytes} bytes compressed to {cbytes}"
            # codec (bits 5-7), byte shuffle (bit 0) and bit shuffle (bit 2) as legacy's
            assert flags & 0xE5 == legacy_flags & 0xE5, (f, hex(flags), hex(legacy_flags))
            assert flags >> 5 == COMPCODES[ds["cparams"]["cname"]]


# -- crash safety --------------------------------------------------------------------------


CRASH = MODIFIABLE + CTABLES


def crash_snapshot(name, base, setitem_committed):
    """Modify a copy without flushing and copy its directory as it is then (what a
    crash leaves); the writer is returned, to be dropped later.  Returns the
    snapshot, the model of the last flushed state, the committed rows assigned
    per column and the writer."""
    path = writable_copy(name, base / "live" / ("committed" if setitem_committed else "appended"))
    obj = bcolzx.open(str(path), mode="a")
    flushed = obj[:]
    n0 = len(obj)
    columns = columns_of(obj)
    n_app = 2 * max(col.chunklen for col in columns.values()) + 100
    assigned = {}
    for k, (field, col) in enumerate(columns.items()):
        cl = col.chunklen
        rows = values(col.dtype, n_app, col.shape[1:], 40 + k)
        col.append(rows)
        # rows past the committed length: in the old leftover chunk and in new chunks
        for i in (n0, n0 + 1, n0 + cl + 3, len(col) - 1):
            col[i] = different(col.dtype, col[i], col.shape[1:], i)
        if setitem_committed:  # rows of committed chunks (and the committed leftover)
            picks = sorted({i for i in (1, 2, cl + 5, n0 - 1) if i < n0})
            for i in picks:
                col[i] = different(col.dtype, col[i], col.shape[1:], i)
            assigned[field] = picks
    snap = base / "snapshots" / ("committed" if setitem_committed else "appended") / name
    shutil.copytree(path, snap)
    return snap, flushed, assigned, obj


@pytest.fixture(scope="module")
def crash(tmp_path_factory):
    base = tmp_path_factory.mktemp("crash")
    cases, live = {}, []
    for name in CRASH:
        for committed in (False, True):
            snap, flushed, assigned, obj = crash_snapshot(name, base, committed)
            cases[name, committed] = {"snap": snap, "flushed": flushed, "assigned": assigned}
            live.append(obj)
    del live  # the writers flush their own copies when collected; the snapshots stay
    if not LEGACY_MISSING:
        keys = list(cases)
        jobs = [{"path": str(cases[k]["snap"]), "steps": [{"op": "r"}, {"op": "read"}]}
                for k in keys]
        for key, result in zip(keys, run_legacy(jobs, base / "run")):
            cases[key]["legacy"] = result
    return cases


@pytest.mark.parametrize("name", CRASH)
def test_crash_before_flush_keeps_the_flushed_state(crash, name):
    """Appended rows and rows assigned past the committed length are not seen."""
    case = crash[name, False]
    got = read_back(case["snap"])
    assert_same(got, case["flushed"], f"{name}: after a crash")
    ds = DATASETS[name]
    assert sha256(got) == (ds["rows_sha256"] if "rows_sha256" in ds else ds["content"]["sha256"])


@needs_legacy
@pytest.mark.parametrize("name", CRASH)
def test_crash_before_flush_legacy_reads_the_flushed_state(crash, name):
    case = crash[name, False]
    (read,) = legacy_reads(case["legacy"], name)
    check_legacy_digest(read, case["flushed"], f"{name}: legacy bcolz after a crash")


@pytest.mark.parametrize("name", CRASH)
def test_crash_after_assigning_committed_rows(crash, name):
    """Rows assigned in committed chunks read, per chunk, all old or all new (each
    chunk file is replaced whole); every other row and the length are as flushed;
    legacy bcolz reads the same."""
    case = crash[name, True]
    got = read_back(case["snap"])
    flushed = case["flushed"]
    assert got.shape == flushed.shape and got.dtype == flushed.dtype
    ds = DATASETS[name]
    for field, picks in case["assigned"].items():
        g = got if field is None else got[field]
        f = flushed if field is None else flushed[field]
        others = np.setdiff1d(np.arange(len(f)), picks)
        assert np.array_equal(g[others], f[others]), f"{name}.{field}: unassigned rows changed"
        cl = ds["chunklen"] if field is None else ds["columns"][field]["chunklen"]
        by_chunk = {}
        for i in picks:
            by_chunk.setdefault(i // cl, set()).add(not np.array_equal(g[i], f[i]))
        for chunk, changed in by_chunk.items():
            assert len(changed) == 1, f"{name}.{field}: chunk {chunk} half written"
    if not LEGACY_MISSING:
        (read,) = legacy_reads(case["legacy"], name)
        check_legacy_digest(read, got, f"{name}: legacy bcolz after a crash")


CRASH_CHILD = textwrap.dedent('''
    import os, sys
    import numpy as np
    import bcolzx

    writers = []
    for path, flushed_file in zip(sys.argv[1::2], sys.argv[2::2]):
        obj = bcolzx.open(path, mode="a")
        cols = [obj] if isinstance(obj, bcolzx.carray) else [obj.cols[n] for n in obj.names]
        for col in cols:  # a first, flushed, change
            col.append(col[:1500])
            col[-3] = col[0]
        obj.flush()
        np.save(flushed_file, obj[:])
        n = len(obj)
        for col in cols:  # then appends and assignments past it, never flushed
            col.append(col[:2 * col.chunklen + 17])
            col[n] = col[1]
            col[len(col) - 1] = col[2]
        writers.append(obj)
    os._exit(0)
''')

CRASH_IN_CHILD = ["ca_int32_leftover", "ca_unicode_U6", "ca_2d_float64_Nx3", "ct_mixed"]


def test_crash_in_a_subprocess(tmp_path):
    """Writers killed (``os._exit``) after unflushed appends and assignments: both
    libraries read what their last flush left."""
    paths = [writable_copy(name, tmp_path) for name in CRASH_IN_CHILD]
    flushed_files = [tmp_path / f"{name}.flushed.npy" for name in CRASH_IN_CHILD]
    env = dict(os.environ)
    src = os.path.dirname(os.path.dirname(bcolzx.__file__))
    env["PYTHONPATH"] = os.pathsep.join([src, env["PYTHONPATH"]]) \
        if env.get("PYTHONPATH") else src
    args = [str(x) for pair in zip(paths, flushed_files) for x in pair]
    proc = subprocess.run([sys.executable, "-c", CRASH_CHILD, *args], cwd=str(tmp_path),
                          env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    flushed = [np.load(f) for f in flushed_files]
    for name, path, model in zip(CRASH_IN_CHILD, paths, flushed):
        assert len(model) == DATASETS[name]["len"] + 1500
        assert_same(read_back(path), model, f"{name}: bcolzx after the crash")
    if not LEGACY_MISSING:
        jobs = [{"path": str(p), "steps": [{"op": "r"}, {"op": "read"}]} for p in paths]
        for name, result, model in zip(CRASH_IN_CHILD, run_legacy(jobs, tmp_path / "legacy"),
                                       flushed):
            (read,) = legacy_reads(result, name)
            check_legacy_digest(read, model, f"{name}: legacy bcolz after the crash")


class _FailingFsync:
    """The ``os`` module, except that ``fsync`` fails (an I/O error while flushing)."""

    def __getattr__(self, name):
        return getattr(os, name)

    @staticmethod
    def fsync(fd):
        raise OSError("simulated I/O error in fsync")


def _fail(*args, **kwargs):
    raise OSError("simulated I/O error writing meta/sizes")


FAILURES = {
    "fsync of the chunk files": ("os", _FailingFsync()),
    "write of meta/sizes": ("write_json", _fail),
}


@pytest.mark.parametrize("failure", sorted(FAILURES))
@pytest.mark.parametrize("name", ["ca_int32_leftover", "ca_2d_float64_Nx3", "ct_attrs"])
def test_failed_flush_keeps_the_flushed_state(name, failure, tmp_path, monkeypatch):
    """If the chunk files cannot be made durable, or ``meta/sizes`` (the commit point)
    cannot be written, the flush raises (naming the dataset) and the dataset is as
    before.  The object is rolled back to it too (docs/reliability-concurrency.md: after
    a failed fsync the kernel may have dropped the unsynced pages, so committing them
    on a retry could reference lost data): the same changes made again then commit."""
    path = writable_copy(name, tmp_path)
    obj = bcolzx.open(str(path), mode="a")
    flushed = obj[:]

    def change():
        for col in columns_of(obj).values():
            col.append(col[: 2 * col.chunklen + 3])
            col[1] = col[len(col) - 1]

    change()
    modified = obj[:]
    sizes_before = [(d / "meta" / "sizes").read_bytes() for d in column_dirs(path)]
    attribute, replacement = FAILURES[failure]
    with monkeypatch.context() as mp:
        mp.setattr(legacy_store, attribute, replacement)
        if attribute == "os":  # chunk files are fsynced by write_atomic, before their rename
            mp.setattr(jsonfile, "os", replacement)
        with pytest.raises(OSError, match="simulated") as info:
            obj.flush()
    assert str(path) in str(info.value) or any(str(path) in n for n in
                                               getattr(info.value, "__notes__", []))
    assert [(d / "meta" / "sizes").read_bytes() for d in column_dirs(path)] == sizes_before
    got = read_back(path)
    assert got.shape == flushed.shape
    # row 1 is in a committed chunk, rewritten before the flush: old or new (documented)
    assert np.array_equal(np.delete(got, 1, axis=0), np.delete(flushed, 1, axis=0))
    assert np.array_equal(got[1], flushed[1]) or np.array_equal(got[1], modified[1])
    assert_same(obj[:], got, f"{name}: the object is back at what the dataset holds")
    obj.flush()  # nothing left to commit
    assert_same(read_back(path), got, f"{name}: a flush after the rollback changes nothing")
    change()  # the file system works again: the same changes now commit
    again = obj[:]
    obj.flush()
    assert_same(read_back(path), again, f"{name}: changed again and flushed")
    # the same rows as the first time, but for row 1 (old or new) and its appended copy
    either = [1, len(flushed) + 1]
    assert_same(np.delete(again, either, axis=0), np.delete(modified, either, axis=0),
                f"{name}: changed again")
