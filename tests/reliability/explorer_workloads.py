"""The writers the crash-state explorer runs, each with the states it leaves.

Every workload is a :class:`~explorer.Workload`: ``setup`` builds, without
recording, the datasets it starts from (and returns their states), ``run``
makes the calls a user makes and, after each returns, tells the explorer
what each dataset now holds and whether the call promised durability
(``w.step``).  Two sizes: ``small`` (the default test run: a few chunks)
and ``full`` (the published run: more chunks, more superchunk files).

Covered: creation (carray and ctable constructors, in-memory data written
to disk, ``fromiter``), appends (committed, and the ctable's append journal
with ``auto_flush``), rewrites (``c[a:b] = v``, ``c[positions] = v``,
``t[a:b] = rows``), ``trim`` and ``resize`` both ways, the ctable's
``addcol`` (copied and moved) and ``delcol`` (deleted and kept),
attributes of carrays, tables and columns, ``compact``, ``convert`` (in
place, to a new directory, recompression), and legacy bcolz directories
modified in place.
"""

from __future__ import annotations

import numpy as np

import bcolzx
from bcolzx._format.meta import Storage
from bcolzx._storage import ChunkedArray, DirectoryStore

from .crashplan import State, read_state
from .datasets import copy_legacy
from .explorer import Workload

#: Rows per chunk and rows of the datasets a workload starts from, per size.
SIZES = {"small": {"chunklen": 16, "rows": 40, "more": 1, "columns": 2},
         "full": {"chunklen": 32, "rows": 300, "more": 3, "columns": 3}}


def _cl(size: str) -> int:
    return SIZES[size]["chunklen"]


def _rows(size: str) -> int:
    return SIZES[size]["rows"]


def _values(n: int, seed: int, dtype: str = "f8") -> np.ndarray:
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt.kind == "f":
        v = rng.normal(size=n).astype(dt)
    elif dt.kind == "S":
        v = np.array([b"s%d" % x for x in rng.integers(0, 999, n)], dtype=dt)
    else:
        v = rng.integers(-10**6, 10**6, n).astype(dt)
    if n > 8:  # a constant run: special (constant) chunks where it fills one
        v[n // 3:n // 3 + 8] = 0
    return v


def carray_state(values, attrs: dict | None = None) -> State:
    """The state of a carray holding `values` (a copy) and `attrs`."""
    return State({"": np.array(values)}, [""], {"": dict(attrs or {})})


def table_state(cols: dict, attrs: dict | None = None, colattrs: dict | None = None
                ) -> State:
    names = list(cols)
    return State({n: np.array(v) for n, v in cols.items()}, names,
                 {"": dict(attrs or {}), **{n: dict((colattrs or {}).get(n, {}))
                                            for n in names}})


def _cat(state: State, rows: dict) -> State:
    return State({n: np.concatenate([state.cols[n], rows[n]]) for n in state.names},
                 list(state.names), state.attrs)


def _small_files_carray(path: str, values: np.ndarray, chunklen: int) -> None:
    """A carray in superchunk files of 4 chunks (appends and trims cross files)."""
    storage = Storage(dtype=values.dtype, chunklen=chunklen, chunks_per_superchunk=4)
    arr = ChunkedArray(DirectoryStore.create(path, storage))
    arr.append(values)
    arr.close()


TABLE = {"a": "i8", "b": "f8", "s": "S4"}


def _table_cols(n: int, seed: int, size: str) -> dict:
    """The columns of a new table: the first ``SIZES[size]["columns"]`` of TABLE."""
    items = list(TABLE.items())[:SIZES[size]["columns"]]
    return {name: _values(n, seed + k, dt) for k, (name, dt) in enumerate(items)}


def _table(path: str, size: str, seed: int = 1) -> State:
    cols = _table_cols(_rows(size), seed, size)
    t = bcolzx.ctable(list(cols.values()), names=list(cols), rootdir=path,
                      chunklen=_cl(size))
    t.close()
    return table_state(cols)


def _rows_like(state: State, n: int, seed: int) -> dict:
    return {name: _values(n, seed + k, state.cols[name].dtype.str).reshape(
        (n, *state.cols[name].shape[1:])) if state.cols[name].ndim == 1 else
        np.resize(_values(n * int(np.prod(state.cols[name].shape[1:])), seed + k,
                          state.cols[name].dtype.str), (n, *state.cols[name].shape[1:]))
        for k, name in enumerate(state.names)}


# -- creation ----------------------------------------------------------------------------------


def _create_carray(w, size):
    v = _values(_rows(size), 10)
    c = bcolzx.carray(v, rootdir=w.path("c"), chunklen=_cl(size))
    w.step("carray(v, rootdir=c)", {"c": carray_state(v)})
    more = _values(_cl(size) * SIZES[size]["more"] + 3, 11)
    c.append(more)
    w.step("c.append", {"c": carray_state(np.r_[v, more])}, durable=False)
    c.flush()
    w.step("c.flush", {})
    c.close()


def _create_ctable(w, size):
    cols = _table_cols(_rows(size), 20, size)
    t = bcolzx.ctable(list(cols.values()), names=list(cols), rootdir=w.path("t"),
                      chunklen=_cl(size))
    state = table_state(cols)
    w.step("ctable(cols, rootdir=t)", {"t": state})
    rows = _rows_like(state, 5, 21)
    t.append([rows[n] for n in state.names])
    w.step("t.append", {"t": _cat(state, rows)}, durable=False)
    t.flush()
    w.step("t.flush", {})
    t.close()


def _constructors(w, size):
    n = _rows(size)
    a = bcolzx.arange(n, rootdir=w.path("arange"), chunklen=_cl(size))
    w.step("arange(n, rootdir)", {"arange": carray_state(np.arange(n))})
    del a
    z = bcolzx.zeros(n, dtype="i4", rootdir=w.path("zeros"), chunklen=_cl(size))
    w.step("zeros(n, rootdir)", {"zeros": carray_state(np.zeros(n, "i4"))})
    del z
    v = _values(n, 30)
    m = bcolzx.carray(v, chunklen=_cl(size)).copy(rootdir=w.path("copy"))
    w.step("carray(v).copy(rootdir)", {"copy": carray_state(v)})
    del m
    cols = _table_cols(n, 31, size)
    struct = np.empty(n, dtype=[(name, TABLE[name]) for name in cols])
    for name in cols:
        struct[name] = cols[name]
    t = bcolzx.ctable(struct, rootdir=w.path("struct"), chunklen=_cl(size))
    w.step("ctable(structured array, rootdir)", {"struct": table_state(cols)})
    del t
    m = bcolzx.ctable(list(cols.values()), names=list(cols)).copy(rootdir=w.path("tcopy"))
    w.step("ctable(cols).copy(rootdir)", {"tcopy": table_state(cols)})
    m.close()


def _constructors_setup(root, size):
    return {name: None for name in ("arange", "zeros", "copy", "struct", "tcopy")}


def _fromiter(w, size):
    n = _rows(size)
    v = _values(n, 40)
    c = bcolzx.fromiter(iter(v.tolist()), dtype="f8", count=n, rootdir=w.path("c"),
                        chunklen=_cl(size))
    w.step("fromiter(floats, rootdir)", {"c": carray_state(v)})
    c.close()
    cols = {"i": np.arange(n, dtype="i8"), "x": _values(n, 41)}
    records = list(zip(cols["i"].tolist(), cols["x"].tolist()))
    t = bcolzx.fromiter(iter(records), dtype="i8,f8", count=n, rootdir=w.path("t"))
    w.step("fromiter(records, rootdir) -> ctable", {"t": table_state(
        {"f0": cols["i"], "f1": cols["x"]})})
    t.close()


# -- changes to an existing carray -------------------------------------------------------------


def _carray_setup(root, size, seed=50):
    v = _values(_rows(size), seed)
    _small_files_carray(f"{root}/c", v, _cl(size))
    return {"c": carray_state(v)}


def _current(w, name="c") -> State:
    return w.current(name)


def _append(w, size):
    cl = _cl(size)
    c = bcolzx.open(w.path("c"), mode="a")
    v = _current(w).cols[""]
    for k, n in enumerate([3, 2 * cl + 5, 4 * cl * SIZES[size]["more"] + 1]):
        more = _values(n, 60 + k)
        c.append(more)
        v = np.r_[v, more]
        w.step(f"c.append({n} rows)", {"c": carray_state(v)}, durable=False)
        c.flush()
        w.step("c.flush", {})
    for k in range(3):  # several appends, one flush
        more = _values(cl // 2 + k, 70 + k)
        c.append(more)
        v = np.r_[v, more]
        w.step(f"c.append({len(more)} rows)", {"c": carray_state(v)}, durable=False)
    c.close()
    w.step("c.close", {})


def _setitem(w, size):
    cl = _cl(size)
    c = bcolzx.open(w.path("c"), mode="a")
    v = _current(w).cols[""].copy()
    n = len(v)
    c[3:3 + cl] = -1.5
    v[3:3 + cl] = -1.5
    w.step("c[a:b] = x", {"c": carray_state(v)}, durable=False)
    c.flush()
    w.step("c.flush", {})
    pos = [1, cl + 2, n - 2]
    c[pos] = [7.0, 8.0, 9.0]
    v[pos] = [7.0, 8.0, 9.0]
    w.step("c[positions] = x", {"c": carray_state(v)}, durable=False)
    c[n // 2] = 0.25
    v[n // 2] = 0.25
    w.step("c[i] = x", {"c": carray_state(v)}, durable=False)
    c.flush()
    w.step("c.flush", {})
    c.close()


def _trim_resize(w, size):
    cl = _cl(size)
    c = bcolzx.open(w.path("c"), mode="a")
    v = _current(w).cols[""]
    n = len(v)  # at least 40 rows: five chunks or more
    steps = [("trim", 3), ("trim", 2 * cl + 1), ("resize", n + 2 * cl),
             ("resize", n - cl - 1), ("trim", None)]
    for kind, n in steps:
        if kind == "trim":
            n = len(v) if n is None else n
            c.trim(n)
            v = v[:len(v) - n]
        else:
            c.resize(n)
            v = v[:n] if n <= len(v) else np.r_[v, np.zeros(n - len(v))]
        w.step(f"c.{kind}({n})", {"c": carray_state(v)}, durable=False)
        c.flush()
        w.step("c.flush", {})
    more = _values(cl + 1, 80)
    c.append(more)
    c.close()
    w.step("c.append, c.close", {"c": carray_state(more)})


def _attrs_carray(w, size):
    c = bcolzx.open(w.path("c"), mode="a")
    v = _current(w).cols[""]
    attrs = {}
    for key, value in (("units", "m/s"), ("scale", [1, 2.5]), ("units", "km/h")):
        c.attrs[key] = value
        attrs[key] = value
        w.step(f"c.attrs[{key!r}] = ...", {"c": carray_state(v, attrs)})
    del c.attrs["scale"]
    del attrs["scale"]
    w.step("del c.attrs['scale']", {"c": carray_state(v, attrs)})
    c.close()


def _compact_setup(root, size):
    state = _carray_setup(root, size, seed=90)
    c = bcolzx.open(f"{root}/c", mode="a")
    v = state["c"].cols[""].copy()
    for k in range(0, len(v), _cl(size)):  # every chunk rewritten: dead space everywhere
        c[k] = float(k)
        v[k] = float(k)
    c.flush()
    c.close()
    t = _table_setup_rewritten(f"{root}/t", size)
    return {"c": carray_state(v), "t": t}


def _table_setup_rewritten(path, size):
    state = _table(path, size, seed=91)
    t = bcolzx.open(path, mode="a")
    rows = _rows_like(state, 4, 92)
    rec = np.empty(4, dtype=t.dtype)
    for n in state.names:
        rec[n] = rows[n]
    t[2:6] = rec
    t.close()
    return State({n: np.r_[state.cols[n][:2], rows[n], state.cols[n][6:]]
                  for n in state.names}, state.names, state.attrs)


def _compact(w, size):
    bcolzx.compact(w.path("c"))
    w.step("bcolzx.compact(c)", {})
    c = bcolzx.open(w.path("c"), mode="a")
    v = _current(w).cols[""].copy()
    c[1:4] = 5.0
    v[1:4] = 5.0
    c.flush()
    w.step("c[1:4] = 5; c.flush", {"c": carray_state(v)})
    c.compact()
    w.step("c.compact()", {})
    c.close()
    t = bcolzx.open(w.path("t"), mode="a")
    t.compact()
    w.step("t.compact()", {})
    t.close()


# -- ctables -----------------------------------------------------------------------------------


def _table_setup(root, size):
    return {"t": _table(f"{root}/t", size)}


def _journal(w, size):
    """Appends with ``auto_flush`` (the append journal), then without."""
    cl = _cl(size)
    t = bcolzx.open(w.path("t"), mode="a")
    state = _current(w, "t")
    for k in range(SIZES[size]["more"] + 1):
        rows = _rows_like(state, 1, 100 + k)
        t.append([rows[n] for n in state.names])
        state = _cat(state, rows)
        w.step("t.append(one row)  # journaled", {"t": state}, durable=False)
    t.flush()
    w.step("t.flush", {})
    rows = _rows_like(state, cl + 2, 110)
    t.append([rows[n] for n in state.names])
    state = _cat(state, rows)
    w.step(f"t.append({cl + 2} rows)", {"t": state}, durable=False)
    rows = _rows_like(state, 1, 111)
    t.append([rows[n] for n in state.names])
    state = _cat(state, rows)
    w.step("t.append(one row)", {"t": state}, durable=False)
    t.close()
    w.step("t.close", {})
    t = bcolzx.ctable(rootdir=w.path("t"), mode="a", auto_flush=False)
    for k in range(2):
        rows = _rows_like(state, 2, 120 + k)
        t.append([rows[n] for n in state.names])
        state = _cat(state, rows)
        w.step("t.append(2 rows)  # auto_flush=False", {"t": state}, durable=False)
    t.flush()
    w.step("t.flush", {})
    t.close()


def _table_ops(w, size):
    cl = _cl(size)
    t = bcolzx.open(w.path("t"), mode="a")
    state = _current(w, "t")
    rows = _rows_like(state, 2 * cl + 1, 130)
    t.append([rows[n] for n in state.names])
    state = _cat(state, rows)
    w.step("t.append", {"t": state}, durable=False)
    t.flush()
    w.step("t.flush", {})
    rec = np.empty(cl, dtype=t.dtype)
    new = _rows_like(state, cl, 131)
    for n in state.names:
        rec[n] = new[n]
    t[3:3 + cl] = rec
    state = State({n: np.r_[state.cols[n][:3], new[n], state.cols[n][3 + cl:]]
                   for n in state.names}, state.names, state.attrs)
    w.step("t[a:b] = rows  # auto_flush", {"t": state})
    t.trim(cl + 3)
    state = State({n: state.cols[n][:-(cl + 3)] for n in state.names}, state.names,
                  state.attrs)
    w.step("t.trim  # auto_flush", {"t": state})
    n = state.length
    t.resize(n + cl)
    state = State({k: np.r_[v, np.zeros(cl, v.dtype)] for k, v in state.cols.items()},
                  state.names, state.attrs)
    w.step("t.resize(up)  # auto_flush", {"t": state})
    t.resize(n - 2)
    state = State({k: v[:n - 2] for k, v in state.cols.items()}, state.names, state.attrs)
    w.step("t.resize(down)  # auto_flush", {"t": state})
    t.close()


def _addcol_setup(root, size):
    out = _table_setup(root, size)
    v = _values(_rows(size), 140, "i4")
    c = bcolzx.carray(v, rootdir=f"{root}/loose", chunklen=_cl(size))
    c.close()
    return out  # 'loose' is moved into the table: not a dataset the oracle follows


def _addcol_delcol(w, size):
    t = bcolzx.open(w.path("t"), mode="a")
    state = _current(w, "t")
    n = state.length

    def put(name, values, pos=None):
        names = list(state.names)
        names.insert(len(names) if pos is None else pos, name)
        cols = {**state.cols, name: np.asarray(values)}
        return State({k: cols[k] for k in names}, names, {**state.attrs, name: {}})

    def drop(name):
        names = [k for k in state.names if k != name]
        return State({k: state.cols[k] for k in names}, names,
                     {k: v for k, v in state.attrs.items() if k != name})

    x = _values(n, 141, "i8")
    t.addcol(x, name="x")
    state = put("x", x)
    w.step("t.addcol(array, name='x')", {"t": state})
    loose = bcolzx.open(w.path("loose"), mode="a")
    y = loose[:]
    t.addcol(loose, name="y", move=True)
    state = put("y", y)
    w.step("t.addcol(carray, name='y', move=True)", {"t": state})
    t.delcol("x")
    state = drop("x")
    w.step("t.delcol('x')", {"t": state})
    t.delcol("b", keep=True)
    state = drop("b")
    w.step("t.delcol('b', keep=True)", {"t": state})
    x2 = _values(n, 142, "f8")
    t.addcol(x2, name="x", pos=0)
    state = put("x", x2, 0)
    w.step("t.addcol(array, name='x', pos=0)", {"t": state})
    rows = _rows_like(state, 3, 143)
    t.append([rows[k] for k in state.names])
    t.flush()
    state = _cat(state, rows)
    w.step("t.append; t.flush", {"t": state})
    t.close()


def _attrs_table(w, size):
    t = bcolzx.open(w.path("t"), mode="a")
    state = _current(w, "t")
    attrs = {k: dict(v) for k, v in state.attrs.items()}
    for target, key, value in (("", "title", "run 1"), ("a", "unit", "kg"),
                               ("", "title", "run 2"), ("b", "codes", [1, 2])):
        (t.cols[target] if target else t).attrs[key] = value
        attrs[target][key] = value
        w.step(f"attrs of {target or 'the table'}[{key!r}] = ...",
               {"t": State(state.cols, state.names, {k: dict(v) for k, v in attrs.items()})})
    del t.cols["a"].attrs["unit"]
    del attrs["a"]["unit"]
    w.step("del t.cols['a'].attrs['unit']", {"t": State(state.cols, state.names, attrs)})
    t.close()


# -- convert and legacy directories ------------------------------------------------------------


def _convert_setup(root, size):
    copy_legacy("ca_int64_appended_dflt", f"{root}/lc")
    copy_legacy("ct_attrs", f"{root}/lt")
    copy_legacy("ct_attrs", f"{root}/lt_src")
    _small_files_carray(f"{root}/bc", _values(_rows(size), 150), _cl(size))
    return {"lc": read_state(f"{root}/lc"), "lt": read_state(f"{root}/lt"),
            "lt_src": read_state(f"{root}/lt_src"), "lt_new": None,
            "bc": read_state(f"{root}/bc")}


def _convert(w, size):
    bcolzx.convert(w.path("lc"))
    w.step("convert(legacy carray)  # in place", {})
    bcolzx.convert(w.path("lt_src"), w.path("lt_new"))
    w.step("convert(legacy ctable, new directory)", {"lt_new": _current(w, "lt_src")})
    bcolzx.convert(w.path("lt"))
    w.step("convert(legacy ctable)  # in place", {})
    bcolzx.convert(w.path("bc"), cparams={"cname": "zstd", "clevel": 3})
    w.step("convert(bcolzx carray, cparams=zstd)  # in place", {})


def _legacy_carray_setup(root, size):
    copy_legacy("ca_int64_appended_dflt", f"{root}/c")
    return {"c": read_state(f"{root}/c")}


def _legacy_ctable_setup(root, size):
    copy_legacy("ct_attrs", f"{root}/t")
    return {"t": read_state(f"{root}/t")}


def _legacy_carray(w, size):
    c = bcolzx.open(w.path("c"), mode="a")
    v = _current(w).cols[""].copy()
    more = np.arange(10, dtype=v.dtype)
    c.append(more)
    v = np.r_[v, more]
    c.flush()
    w.step("c.append; c.flush", {"c": carray_state(v)})
    c[100:110] = -1  # a full chunk's file is written again
    v[100:110] = -1
    c[len(v) - 5:] = -2  # the leftover
    v[len(v) - 5:] = -2
    w.step("c[a:b] = x (full chunk, leftover)", {"c": carray_state(v)}, durable=False)
    c.flush()
    w.step("c.flush", {})
    c.trim(600)  # chunk files removed
    v = v[:-600]
    c.flush()
    w.step("c.trim(600); c.flush", {"c": carray_state(v)})
    c.resize(len(v) + 700)
    v = np.r_[v, np.full(700, c.dflt, v.dtype)]
    c.flush()
    w.step("c.resize(up); c.flush", {"c": carray_state(v)})
    c.attrs["note"] = "legacy"
    w.step("c.attrs['note'] = ...", {"c": carray_state(v, {"note": "legacy"})})
    c.close()


def _legacy_ctable(w, size):
    t = bcolzx.open(w.path("t"), mode="a")
    state = _current(w, "t")
    rows = _rows_like(state, 4, 160)
    t.append([rows[n] for n in state.names])
    t.flush()
    state = _cat(state, rows)
    w.step("t.append; t.flush", {"t": state})
    n = state.length
    z = np.arange(n, dtype="i4")
    t.addcol(z, name="z")
    names = state.names + ["z"]
    state = State({**state.cols, "z": z}, names, {**state.attrs, "z": {}})
    w.step("t.addcol(name='z')  # a v1 column", {"t": state})
    t.delcol("z")
    names = names[:-1]
    state = State({k: state.cols[k] for k in names}, names,
                  {k: v for k, v in state.attrs.items() if k != "z"})
    w.step("t.delcol('z')", {"t": state})
    t.trim(5)
    state = State({k: v[:-5] for k, v in state.cols.items()}, names, state.attrs)
    w.step("t.trim(5)  # auto_flush", {"t": state})
    t.close()


def _none(name):
    return lambda root, size: {name: None}


WORKLOADS = [
    Workload("create carray", "create", _none("c"), _create_carray),
    Workload("create ctable", "create", _none("t"), _create_ctable),
    Workload("constructors to disk", "create", _constructors_setup, _constructors),
    Workload("fromiter", "create", lambda root, size: {"c": None, "t": None}, _fromiter),
    Workload("append", "append", _carray_setup, _append),
    Workload("ctable append journal", "append", _table_setup, _journal),
    Workload("setitem", "setitem", _carray_setup, _setitem),
    Workload("trim and resize", "trim/resize", _carray_setup, _trim_resize),
    Workload("ctable append, setitem, trim, resize", "ctable", _table_setup, _table_ops),
    Workload("addcol and delcol", "addcol/delcol", _addcol_setup, _addcol_delcol),
    Workload("carray attrs", "attrs", _carray_setup, _attrs_carray),
    Workload("ctable attrs", "attrs", _table_setup, _attrs_table),
    Workload("compact", "compact", _compact_setup, _compact),
    Workload("convert", "convert", _convert_setup, _convert),
    Workload("legacy carray in place", "legacy", _legacy_carray_setup, _legacy_carray),
    Workload("legacy ctable in place", "legacy", _legacy_ctable_setup, _legacy_ctable),
]


def by_name(name: str) -> Workload:
    for wl in WORKLOADS:
        if wl.name == name:
            return wl
    raise KeyError(name)
