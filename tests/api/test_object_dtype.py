"""Object dtype: pickled Python objects, refused unless ``allow_pickle`` says otherwise.

Every entry point that would pickle or unpickle refuses by default with
:class:`bcolzx.PickleNotAllowedError` naming the switch, before anything is
unpickled (a *canary* object records every unpickling); ``allow_pickle=True``
per call, ``bcolzx.defaults.allow_pickle``, ``defaults_ctx`` and the
``BCOLZX_ALLOW_PICKLE`` variable opt in.  With the switch, object carrays and
ctable columns behave as a NumPy object array would, in memory and on disk;
the bcolzx format stores them as docs/format/README.md §2d says, and damaged
or forged datasets raise instead of giving wrong values (or crashing).
"""

import datetime
import decimal
import itertools
import json
import math
import os
import pickle
import shutil
import subprocess
import sys
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import bcolzx
from bcolzx._ext import codec, special
from bcolzx._format import jsonfile, layout, vlen
from bcolzx._format.meta import Storage
from bcolzx._storage import MemoryStore, VlenArray
from bcolzx._storage.directory import DirectoryStore
from bcolzx.errors import (
    ChecksumError,
    CorruptDataError,
    ExpressionError,
    PickleNotAllowedError,
    UnsupportedFormatError,
)

from ..conftest import LEGACY

MANIFEST = json.loads((LEGACY / "MANIFEST.json").read_text())
OBJECT_FIXTURE = next(ds for ds in MANIFEST["datasets"] if ds["path"] == "ca_object_optional")
SWITCH = "pass allow_pickle=True or set bcolzx.defaults.allow_pickle = True"

# -- helpers -----------------------------------------------------------------------------

#: Tags of the canaries unpickled so far (see Canary).
UNPICKLED: list = []


def _unpickled(tag):
    UNPICKLED.append(tag)
    return tag


class Canary:
    """An object whose unpickling is recorded: pickled, it calls ``_unpickled(tag)``."""

    def __init__(self, tag):
        self.tag = tag

    def __reduce__(self):
        return (_unpickled, (self.tag,))


class Point:
    def __init__(self, x, y):
        self.x, self.y = x, y

    def __eq__(self, other):
        return type(other) is Point and (self.x, self.y) == (other.x, other.y)


def same(a, b) -> bool:
    """Whether two values are the same object value (type included, NaN equal)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and np.array_equal(a, b)
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    return a == b


def assert_values(got, want):
    got, want = list(got), list(want)
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        assert same(g, w), f"row {i}: {g!r} != {w!r}"


def objects(values) -> np.ndarray:
    """A 1-D object array holding `values` (one per row, whatever they are)."""
    out = np.empty(len(values), dtype=object)
    for i, v in enumerate(values):
        out[i] = v
    return out


AWKWARD = [
    None, 0, -7, 10**40, -1.5, float("nan"), complex(1, -2), True, "", "é€" * 3,
    "x" * 100_000,  # a pickle larger than a C-Blosc2 block (32 KiB)
    b"\x00\xffbytes", bytearray(b"ba"), [], [1, [2, [3, None]]], (1, "t"), {"a": {"b": [None]}},
    {1, 2, 3}, frozenset({"f"}), np.arange(20_000),  # 160 KB: several blocks
    np.array(["s", "t"]), np.float32(1.5), np.int16(-3), Point(1, 2),
    datetime.date(2020, 2, 29), decimal.Decimal("1.10"), range(3), type(None),
]


@pytest.fixture(autouse=True)
def switch_off():
    """Every test starts with the global switch off (whatever the environment says)."""
    with bcolzx.defaults_ctx(allow_pickle=False):
        UNPICKLED.clear()
        yield


_names = itertools.count()


@pytest.fixture(params=["memory", "disk"])
def where(request, tmp_path):
    """A function giving a new rootdir on disk, None in memory."""
    if request.param == "memory":
        return lambda: None
    return lambda: str(tmp_path / f"d{next(_names)}")


def reopen(c, **kw):
    """`c` again: flushed and reopened from disk (with the switch), or itself in memory."""
    if c.rootdir is None:
        return c
    c.flush()
    kw.setdefault("allow_pickle", True)
    return bcolzx.open(c.rootdir, **kw)


def tree(path) -> dict:
    out = {}
    for root, _, files in os.walk(path):
        for name in files:
            p = os.path.join(root, name)
            with open(p, "rb") as f:
                out[os.path.relpath(p, path)] = f.read()
    return out


@pytest.fixture
def stored(tmp_path):
    """An object carray on disk holding canaries (written with the switch), its path."""
    path = str(tmp_path / "objs")
    c = bcolzx.carray([Canary(i) for i in range(10)], dtype=object, rootdir=path,
                      chunklen=4, allow_pickle=True)
    c.flush()
    assert UNPICKLED == []
    return path


# -- refusal by default ------------------------------------------------------------------


def test_creating_an_object_carray_is_refused_naming_the_switch(where):
    rootdir = where()
    for make in (lambda: bcolzx.carray([{"a": 1}], dtype=object, rootdir=rootdir),
                 lambda: bcolzx.carray(objects([1, "a"]), rootdir=rootdir),
                 lambda: bcolzx.carray(np.empty(0, object), rootdir=rootdir),
                 lambda: bcolzx.fromiter(iter([{}, []]), dtype=object, count=2, rootdir=rootdir),
                 lambda: bcolzx.zeros(3, dtype=object, rootdir=rootdir),
                 lambda: bcolzx.ones(3, dtype=object, rootdir=rootdir),
                 lambda: bcolzx.fill(3, "x", dtype=object, rootdir=rootdir),
                 lambda: bcolzx.arange(3, dtype=object, rootdir=rootdir),
                 lambda: bcolzx.ctable([np.arange(2), objects([1, "a"])], rootdir=rootdir),
                 lambda: bcolzx.fromiter(iter([(1, "a")]), dtype="i4,O", count=1,
                                         rootdir=rootdir)):
        with pytest.raises(PickleNotAllowedError, match=SWITCH) as info:
            make()
        # A TypeError (what bcolzx raised before) and a ValueError (NumPy's refusal).
        assert isinstance(info.value, TypeError) and isinstance(info.value, ValueError)
        assert isinstance(info.value, UnsupportedFormatError)
        if rootdir is not None:
            assert not os.path.exists(rootdir)


def test_opening_needs_no_switch_and_unpickles_nothing(stored):
    c = bcolzx.open(stored, mode="r")
    assert (len(c), c.dtype, c.shape, c.ndim, c.chunklen) == (10, np.dtype(object), (10,), 1, 4)
    assert c.nbytes == 80 and c.cbytes > 0 and c.attrs.getall() == {}
    assert "10 pickled objects, not read" in str(c) and "carray((10,), object)" in repr(c)
    assert UNPICKLED == []


@pytest.mark.parametrize("read", [
    lambda c: c[0], lambda c: c[-1], lambda c: c[2:5], lambda c: c[::3], lambda c: c[[1, 2]],
    lambda c: c[np.arange(10) % 2 == 0], lambda c: c[()], lambda c: list(c),
    lambda c: list(c.iter(1, 5)), lambda c: list(bcolzx.iterblocks(c)),
    lambda c: list(c.where(np.ones(10, bool))), lambda c: c.leftover_array,
    lambda c: c.chunks[0], lambda c: c.sum(), lambda c: np.asarray(c),
    lambda c: c.reshape(10),
], ids=["int", "negative", "slice", "step", "fancy", "mask", "tuple", "iter", "iter()",
        "iterblocks", "where", "leftover_array", "chunks", "sum", "asarray", "reshape"])
def test_reading_values_is_refused_before_unpickling(stored, read):
    c = bcolzx.open(stored, mode="r")
    with pytest.raises(PickleNotAllowedError, match=SWITCH):
        read(c)
    assert UNPICKLED == []


@pytest.mark.parametrize("write", [
    lambda c: c.append({"x": 1}), lambda c: c.append([1, 2]), lambda c: c.__setitem__(0, 1),
    lambda c: c.__setitem__(slice(0, 2), "y"), lambda c: c.__setitem__([1, 3], [7, 8]),
    lambda c: c.resize(12), lambda c: c.trim(-2),
], ids=["append", "append many", "setitem", "slice", "fancy", "resize up", "trim negative"])
def test_writing_values_is_refused_and_changes_nothing(stored, write):
    before = tree(stored)
    c = bcolzx.open(stored, mode="a")
    with pytest.raises(PickleNotAllowedError):
        write(c)
    c.flush()
    del c
    assert tree(stored) == before and UNPICKLED == []


def test_shrinking_needs_no_switch(stored):
    c = bcolzx.open(stored, mode="a")
    c.trim(3)
    c.resize(5)
    c.flush()
    assert len(bcolzx.open(stored, mode="r")) == 5 and UNPICKLED == []
    assert bcolzx.open(stored, allow_pickle=True)[:].tolist() == [0, 1, 2, 3, 4]


def test_ctable_object_columns_are_refused_without_the_switch(tmp_path):
    path = str(tmp_path / "t")
    t = bcolzx.ctable([np.arange(3), objects([Canary("a"), Canary("b"), Canary("c")])],
                      names=["i", "o"], rootdir=path, allow_pickle=True)
    t.flush()
    t = bcolzx.open(path, mode="a")
    assert t.names == ["i", "o"] and len(t) == 3 and str(t).startswith("[3 rows; object")
    assert t["i"][:].tolist() == [0, 1, 2]  # the other columns read as ever
    for read in (lambda: t[0], lambda: t[:], lambda: list(t), lambda: t["o"][1],
                 lambda: list(t.where("i > 0")), lambda: t.fetchwhere("i > 0"),
                 lambda: list(bcolzx.iterblocks(t)), lambda: t.todataframe(),
                 lambda: t.append((3, "d")), lambda: t.addcol(objects([1, 2, 3]), "p")):
        with pytest.raises(PickleNotAllowedError):
            read()
    assert UNPICKLED == [] and t.names == ["i", "o"] and len(t) == 3


def test_walk_skips_object_datasets_without_the_switch(stored, tmp_path):
    bcolzx.arange(3, rootdir=str(tmp_path / "plain"))
    with pytest.warns(RuntimeWarning, match="objs.*allow_pickle"):
        found = [os.path.basename(o.rootdir) for o in bcolzx.walk(str(tmp_path), mode="r")]
    assert found == ["plain"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        found = {os.path.basename(o.rootdir): o for o in
                 bcolzx.walk(str(tmp_path), mode="r", allow_pickle=True)}
    assert sorted(found) == ["objs", "plain"]
    assert found["objs"][:3].tolist() == [0, 1, 2]


# -- opting in -----------------------------------------------------------------------------


def test_a_per_call_switch_stays_with_the_container(stored):
    c = bcolzx.open(stored, mode="r", allow_pickle=True)
    assert c[3] == 3 and UNPICKLED == [3]
    off = bcolzx.open(stored, mode="r", allow_pickle=False)
    with bcolzx.defaults_ctx(allow_pickle=True):  # an explicit False wins over the default
        with pytest.raises(PickleNotAllowedError):
            off[0]
    assert c.copy()[:].tolist() == list(range(10))  # a copy keeps it


def test_the_global_default_and_defaults_ctx(stored):
    c = bcolzx.open(stored, mode="r")  # follows the default at each operation
    with bcolzx.defaults_ctx(allow_pickle=True):
        assert bcolzx.defaults.allow_pickle is True
        assert c[:2].tolist() == [0, 1]
        new = bcolzx.carray([{"a": 1}], dtype=object)
    assert bcolzx.defaults.allow_pickle is False
    with pytest.raises(PickleNotAllowedError):
        c[0]
    with pytest.raises(PickleNotAllowedError):
        new[0]
    bcolzx.defaults.allow_pickle = True
    try:
        assert new[0] == {"a": 1} and "allow_pickle=True" in repr(bcolzx.defaults)
    finally:
        bcolzx.defaults.allow_pickle = False
    with pytest.raises(ValueError):
        bcolzx.defaults.allow_pickle = "yes"
    with pytest.raises(TypeError):
        bcolzx.carray([1], allow_pickle=1)


def test_defaults_ctx_restores_the_switch_after_an_error():
    with pytest.raises(KeyError):
        with bcolzx.defaults_ctx(allow_pickle=True):
            raise KeyError("x")
    assert bcolzx.defaults.allow_pickle is False


@pytest.mark.parametrize("value, expect", [("1", "True"), ("yes", "True"), ("0", "False"),
                                           ("", "False"), ("maybe", "ValueError")])
def test_the_environment_variable_sets_the_initial_default(value, expect, tmp_path):
    code = ("import bcolzx\n"
            "try:\n    print(bcolzx.defaults.allow_pickle)\n"
            "except ValueError as exc:\n    print('ValueError', exc)\n")
    env = {**os.environ, "BCOLZX_ALLOW_PICKLE": value}
    proc = subprocess.run([sys.executable, "-c", code], env=env, cwd=str(tmp_path),
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split()[0] == expect


# -- round trips ---------------------------------------------------------------------------


def test_awkward_objects_round_trip(where):
    c = bcolzx.carray(objects(AWKWARD), dtype=object, rootdir=where(), allow_pickle=True)
    assert len(c) == len(AWKWARD)
    c = reopen(c)
    assert_values(c[:], AWKWARD)
    assert_values([c[i] for i in range(len(c))], AWKWARD)
    assert_values(c, AWKWARD)
    assert_values(c.iter(), AWKWARD)


def test_reads_match_a_numpy_object_array(where):
    model = objects([{"i": i} if i % 3 else [i, str(i)] for i in range(50)])
    c = reopen(bcolzx.carray(model, rootdir=where(), chunklen=7, allow_pickle=True))
    for key in [0, 13, -1, -50, np.int64(8)]:
        assert same(c[key], model[key])
    for key in [slice(None), slice(3, 30), slice(3, 30, 4), slice(None, None, -1),
                slice(40, 2, -3), slice(60, 70), slice(5, 5), slice(-10, None, 2)]:
        assert_values(c[key], model[key])
    for key in [[0, 49, 7, 7, -1], np.array([3, 1, 2]), np.array([], dtype=np.int64),
                model.nonzero()[0][::5]]:
        assert_values(c[key], model[key])
    mask = np.arange(50) % 4 == 1
    assert_values(c[mask], model[mask])
    assert_values(c[bcolzx.carray(mask)], model[mask])
    assert_values(c.iter(3, 40, 6, limit=4, skip=1), model[3:40:6][1:5])
    assert_values(c.where(mask, limit=3, skip=2), model[mask][2:5])
    assert_values(np.concatenate(list(bcolzx.iterblocks(c, blen=9))), model)
    assert_values(c.chunks[2], model[14:21])
    assert_values(c.leftover_array, model[49:])
    for bad in (50, -51):
        with pytest.raises(IndexError):
            c[bad]
    with pytest.raises(IndexError, match="too many indices"):
        c[0, 1]
    with pytest.raises(IndexError):
        c[np.ones(3, bool)]
    with pytest.raises(ValueError, match="boolean"):
        list(c.wheretrue())


def test_writes_match_a_numpy_object_array(where):
    model = objects(list(range(30)))
    c = bcolzx.carray(model.copy(), rootdir=where(), chunklen=8, allow_pickle=True)
    ops = [
        (5, [1, 2]), (-1, {"last": True}), (slice(2, 4), ["a", "b"]),
        (slice(0, 30, 7), "same"), (slice(None, None, -5), [9, 8, 7, 6, 5, 4]),
        ([1, 29, 1], [(1,), (2,), (3,)]), (np.arange(30) % 6 == 3, None),
        (slice(10, 20), np.arange(10)),  # one row per element of an array
        (12, np.arange(3)),  # c[i] = x stores x, whatever it is
    ]
    for key, value in ops:
        c[key] = value
        if isinstance(key, (int, np.integer)):
            model[key] = None
            model[key] = value
        else:
            target = np.empty(len(model[key]), dtype=object)
            target[:] = value if isinstance(value, (list, np.ndarray)) else [value] * len(target)
            model[key] = target
    c = reopen(c)
    assert_values(c[:], model)
    with pytest.raises(ValueError, match="cannot put 3 values into 2 rows"):
        c[0:2] = [1, 2, 3]
    with pytest.raises(IndexError):
        c[0, 0] = 1
    assert_values(c[:], model)


def test_append_one_object_or_many(where):
    c = bcolzx.carray(np.empty(0, object), rootdir=where(), chunklen=3, allow_pickle=True)
    c.append("one")
    c.append({"d": 1})
    c.append([1, 2])  # a list appends its elements...
    c.append([[1, 2]])  # ...so a list is stored as one row inside a list
    c.append((3, [4]))
    c.append(np.array([5.5, 6.5]))
    c.append(bcolzx.carray(objects([None, "z"]), allow_pickle=True))
    c.append(b"bytes")
    want = ["one", {"d": 1}, 1, 2, [1, 2], 3, [4], 5.5, 6.5, None, "z", b"bytes"]
    assert_values(reopen(c)[:], want)


def test_constructors_follow_numpy_conversions(where):
    c = bcolzx.carray([(i, "s" * i) for i in range(4)], dtype=object, rootdir=where(),
                      allow_pickle=True)
    assert c.shape == (4,) and c[2] == (2, "ss")  # one tuple per row (legacy)
    nested = [[1, 2], [3, 4]]
    c = bcolzx.carray(nested, dtype=object, allow_pickle=True)
    assert c.shape == (2,) and c[1] == [3, 4]
    c = bcolzx.carray(np.arange(3), dtype=object, allow_pickle=True)
    assert [type(x) for x in c] == [int] * 3  # as astype(object)
    rec = np.zeros(2, "u1,O")
    rec[:] = [(1, "a"), (2, [3])]
    c = bcolzx.carray(rec, dtype=object, allow_pickle=True)  # records as tuples
    assert c[1] == (2, [3])
    c = bcolzx.carray({"a": 1}, dtype=object, allow_pickle=True)  # a scalar is one row
    assert c[:].tolist() == [{"a": 1}]
    with pytest.raises(ValueError, match="one-dimensional"):
        c.reshape((1, 1))


def test_structured_dtypes_holding_objects_are_refused():
    rec = np.zeros(2, "i4,O")
    for call in (lambda: bcolzx.carray(rec, allow_pickle=True),
                 lambda: bcolzx.carray([(1, 2)], dtype="O,O", allow_pickle=True),
                 lambda: bcolzx.carray([1], dtype=np.dtype((object, 2)), allow_pickle=True)):
        with pytest.raises(TypeError, match="holds Python objects inside a structured"):
            call()
    t = bcolzx.ctable(rec, allow_pickle=True)  # a ctable splits it: one object column
    assert t.dtype == rec.dtype and t["f1"].dtype == object


def test_resize_and_trim_use_dflt(where):
    c = bcolzx.carray(objects(["a", "b", "c"]), rootdir=where(), chunklen=2, allow_pickle=True)
    assert c.dflt[()] is None
    c.resize(5)
    c.trim(-1)
    c.trim(2)
    assert_values(reopen(c)[:], ["a", "b", "c", None])
    d = bcolzx.carray(objects([1]), rootdir=where(), dflt="fill", allow_pickle=True)
    d.resize(3)
    d = reopen(d)
    assert d[:].tolist() == [1, "fill", "fill"] and d.dflt[()] == "fill"
    d.resize(0)
    assert len(reopen(d)) == 0
    for bad in ([1], {"a": 1}, float("inf"), object()):
        with pytest.raises(ValueError, match="default of an object carray"):
            bcolzx.carray(objects([1]), dflt=bad, rootdir=where(), allow_pickle=True)


def test_fill_zeros_ones_arange_fromiter(where):
    z = bcolzx.zeros(5, dtype=object, rootdir=where(), allow_pickle=True)
    assert reopen(z)[:].tolist() == [0] * 5 == np.zeros(5, object).tolist()
    o = bcolzx.ones(3, dtype=object, rootdir=where(), allow_pickle=True)
    assert reopen(o)[:].tolist() == [1, 1, 1]
    f = bcolzx.fill(4, "x", dtype=object, rootdir=where(), allow_pickle=True)
    assert reopen(f)[:].tolist() == ["x"] * 4
    a = bcolzx.arange(2, 11, 3, dtype=object, rootdir=where(), allow_pickle=True)
    assert_values(reopen(a)[:], [2, 5, 8])
    it = bcolzx.fromiter(({"i": i} for i in range(2500)), dtype=object, count=-1,
                         rootdir=where(), allow_pickle=True)
    assert reopen(it)[2499] == {"i": 2499} and len(it) == 2500
    ct = bcolzx.fromiter(((i, [i] * i) for i in range(4)), dtype="i4,O", count=4,
                         rootdir=where(), allow_pickle=True)
    assert reopen(ct)["f1"][3] == [3, 3, 3]


def test_chunklen_is_chosen_from_the_pickles_or_given(where):
    small = bcolzx.carray(list(range(100)), dtype=object, rootdir=where(), allow_pickle=True)
    assert small.chunklen == layout.VLEN_MAX_CHUNKLEN
    big = bcolzx.carray(["x" * 10_000] * 3, dtype=object, rootdir=where(), allow_pickle=True)
    assert big.chunklen == 4  # about 64 KiB of pickles
    empty = bcolzx.carray(np.empty(0, object), rootdir=where(), allow_pickle=True)
    assert empty.chunklen == 1024
    given = bcolzx.carray(list(range(10)), dtype=object, chunklen=3, rootdir=where(),
                          allow_pickle=True)
    given = reopen(given)
    assert given.chunklen == 3 and (given.nchunks, given.nleftover) == (3, 1)
    assert [layout.vlen_chunklen(x) for x in (None, 1, 16, 17, 65536, 10**9)] == \
        [1024, 4096, 4096, 2048, 1, 1]


def test_repr_str_flush_attrs_and_sizes(where):
    c = bcolzx.carray(objects(["a", [1]]), rootdir=where(), allow_pickle=True)
    c.attrs["unit"] = "things"
    assert str(c) == "['a' list([1])]" and "carray((2,), object)" in repr(c)
    assert c.nbytes == 16 and c.itemsize == 8 and c.atomsize == 8
    c.flush()
    c = reopen(c)
    assert c.attrs["unit"] == "things" and c.cbytes > 0
    assert "ratio: nan" in repr(bcolzx.carray(np.empty(0, object), allow_pickle=True))


def test_copies_move_pickles_without_unpickling(where, tmp_path):
    c = bcolzx.carray([Canary(i) for i in range(20)], dtype=object, chunklen=6,
                      rootdir=where(), allow_pickle=True)
    for kw in ({}, {"rootdir": str(tmp_path / "copy")}, {"chunklen": 4}):
        d = c.copy(**kw)
        assert len(d) == 20  # the chunk length follows expectedlen unless given (as legacy)
        assert "chunklen" not in kw or d.chunklen == kw["chunklen"]
    assert UNPICKLED == []
    assert reopen(d)[:].tolist() == list(range(20))
    with pytest.raises(PickleNotAllowedError):
        c.copy(allow_pickle=False)


def test_pickling_a_carray_keeps_values_and_switch(where):
    c = bcolzx.carray(objects([{"a": 1}, None, [2]]), rootdir=where(), allow_pickle=True)
    c.flush()
    back = pickle.loads(pickle.dumps(c))
    assert back[:].tolist() == [{"a": 1}, None, [2]]
    if c.rootdir is not None:
        assert back.mode == "r"
        plain = pickle.loads(pickle.dumps(bcolzx.open(c.rootdir, mode="r")))
        with pytest.raises(PickleNotAllowedError):  # no switch given: none travels
            plain[0]


def test_expressions_refuse_object_operands_without_unpickling(stored):
    c = bcolzx.open(stored, mode="r", allow_pickle=True)
    n = np.arange(10)
    with pytest.raises(ExpressionError, match="'c' holds Python objects"):
        bcolzx.eval("c == 1")
    with pytest.raises(ExpressionError, match="'c' holds Python objects"):
        bcolzx.eval("n + c", out_flavor="numpy")
    with pytest.raises(ExpressionError, match="'o' holds Python objects"):
        bcolzx.eval("o > 3", user_dict={"o": c})
    with pytest.raises(ExpressionError, match="'c' holds Python objects"):
        c["c > 3"]
    with pytest.raises(ExpressionError, match="'c' holds Python objects"):
        bcolzx.carray(n)["(n > 1) & (c > 3)"]
    t = bcolzx.ctable([n, c], names=["n", "o"])
    with pytest.raises(ExpressionError, match="'o' holds Python objects"):
        t.fetchwhere("o == 3")
    with pytest.raises(ExpressionError):
        list(t.where("(n > 1) & (o == 2)"))
    assert UNPICKLED == []
    assert [r.o for r in t.where("n > 7")] == [8, 9]  # objects as outputs are fine


def test_exporters_refuse_object_data(tmp_path):
    from bcolzx.interop.npy import to_npy

    c = bcolzx.carray(objects([1, "a"]), allow_pickle=True)
    with pytest.raises(TypeError, match="holds Python objects"):
        to_npy(c, tmp_path / "o.npy")
    t = bcolzx.ctable([np.arange(2), c], names=["i", "o"])
    with pytest.raises(TypeError, match="column 'o' holds Python objects"):
        to_npy(t, tmp_path / "t.npy")
    try:
        import blosc2  # noqa: F401
    except ImportError:
        return
    with pytest.raises(TypeError, match="Blosc2 frame"):
        c.to_b2frame(str(tmp_path / "o.b2frame"))
    assert sorted(os.listdir(tmp_path)) == []


# -- ctables ----------------------------------------------------------------------------


def test_ctable_object_columns_round_trip(where):
    rootdir = where()
    o = objects([None, "a", [1, 2], {"k": 3}])
    t = bcolzx.ctable([np.arange(4), o], names=["i", "o"], rootdir=rootdir,
                      allow_pickle=True)
    t.append((4, [5, 6]))
    t.append([[5, 6], ["x", {"y"}]])
    rows = np.empty(2, t.dtype)
    rows["i"], rows["o"] = [7, 8], objects([("t",), 8.5])
    t.append(rows)
    want = [None, "a", [1, 2], {"k": 3}, [5, 6], "x", {"y"}, ("t",), 8.5]
    t = reopen(t)
    assert t.dtype == np.dtype([("i", "<i8"), ("o", "O")])
    assert_values(t["o"][:], want)
    assert_values(t[:]["o"], want)
    assert t[4]["o"] == [5, 6] and t[-1]["i"] == 8
    assert_values(t[[0, 6]]["o"], [None, {"y"}])
    assert_values(t[np.arange(9) % 2 == 1]["o"], want[1::2])
    assert_values(t[::-4]["o"], want[::-4])
    assert [r.o for r in t.iter(2, 5)] == want[2:5]
    assert [r.o for r in t.where("i >= 7")] == [("t",), 8.5]
    assert_values(t.fetchwhere("i < 2", out_flavor="numpy")["o"], want[:2])
    assert_values(t.fetchwhere("i < 2")["o"][:], want[:2])
    assert_values(np.concatenate(list(t.whereblocks("i > 2", blen=2)))["o"], want[3:])
    t.addcol(objects([{"n": i} for i in range(9)]), name="p")
    t["o"][0] = "first"
    t.trim(2)
    t.resize(8)
    t = reopen(t)
    assert_values(t["o"][:], ["first"] + want[1:7] + [None])
    assert t["p"][6] == {"n": 6} and t["p"][7] is None and t["i"][7] == 0
    assert_values(t.copy()["p"][:6], [{"n": i} for i in range(6)])
    back = pickle.loads(pickle.dumps(t))
    assert_values(back["o"][:], t["o"][:])
    t.delcol("o")
    assert reopen(t).names == ["i", "p"]


def test_dataframes_with_object_columns_need_the_switch():
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame({"a": [1, 2, 3], "o": pd.Series([1, "x", None], dtype=object),
                       "s": pd.Series(["p", None, "q"], dtype=object)})
    with pytest.raises(PickleNotAllowedError, match="'o'"):
        bcolzx.ctable.fromdataframe(df)
    ct = bcolzx.ctable.fromdataframe(df, allow_pickle=True)
    assert ct["o"].dtype == object and ct["s"].dtype == object
    pd.testing.assert_frame_equal(ct.todataframe(), df)
    plain = bcolzx.ctable.fromdataframe(df[["a"]].assign(s=["x", "y", "z"]))
    # plain strings are never pickled: variable-length strings (docs/format/strings.md) ...
    assert plain["s"].dtype == np.dtypes.StringDType() and plain["s"].engine.kind == "utf8"
    # ... or fixed-width on request
    fixed = bcolzx.ctable.fromdataframe(df[["a"]].assign(s=["x", "y", "z"]), strings="fixed")
    assert fixed["s"].dtype == np.dtype("U1")


# -- the format --------------------------------------------------------------------------


def test_meta_storage_marks_object_datasets(tmp_path):
    c = bcolzx.carray(objects([1]), rootdir=str(tmp_path / "o"), allow_pickle=True)
    c.flush()
    storage = jsonfile.read_json(str(tmp_path / "o" / "meta" / "storage"))
    assert (storage["dtype"], storage["vlen"], storage["format_version"]) == ("|O", "pickle", 2)
    assert storage["dflt"] is None and storage["bytedelta"] == "off"
    sizes = jsonfile.read_json(str(tmp_path / "o" / "meta" / "sizes"))
    assert sizes["shape"] == [1] and sizes["nbytes"] == 8
    plain = bcolzx.arange(3, rootdir=str(tmp_path / "p"))
    plain.flush()
    storage = jsonfile.read_json(str(tmp_path / "p" / "meta" / "storage"))
    assert storage["format_version"] == 1 and "vlen" not in storage


def test_stored_chunks_hold_offsets_then_protocol_5_pickles(tmp_path):
    values = [{"i": i, "s": "x" * i} for i in range(10)]
    path = str(tmp_path / "o")
    c = bcolzx.carray(values, dtype=object, rootdir=path, chunklen=4, allow_pickle=True)
    c.flush()
    assert not os.path.exists(os.path.join(path, "meta", "zonemap"))
    assert c._engine.chunk_stats() is None
    store = DirectoryStore.open(path, readonly=True)
    assert (store.geometry.chunk_size, store.geometry.typesize) == (4, 1)
    for k in range(3):
        raw = codec.Decompressor().decompress(store.get_one(k))
        assert codec.chunk_info(store.get_one(k))["typesize"] == 1
        items = vlen.items(raw, 4 if k < 2 else 2)
        assert [pickle.loads(x) for x in items] == values[4 * k:4 * k + len(items)]
        assert all(x[:2] == b"\x80\x05" for x in items)


def _write_meta(path, **changes):
    """Rewrite meta/storage with `changes`, sealed as a writer would (so only the
    content can be refused)."""
    mpath = os.path.join(path, "meta", "storage")
    obj, seal = jsonfile.read_json_sealed(mpath)
    for key, value in changes.items():
        if value is None:
            obj.pop(key, None)
        else:
            obj[key] = value
    jsonfile.write_json(mpath, obj, seal=seal.sealed, uid=seal.uid)


@pytest.mark.parametrize("base, changes, error, message", [
    ("ints", {"dtype": "|O"}, CorruptDataError, "without the 'vlen' member"),
    ("ints", {"dtype": [["a", "<i8"], ["b", "|O"]]}, UnsupportedFormatError,
     "holds objects inside a structured dtype"),
    ("ints", {"dtype": [["a", "<i8"], ["b", "|O"]], "vlen": "pickle", "format_version": 2},
     UnsupportedFormatError, "holds objects inside a structured dtype"),
    ("ints", {"vlen": "pickle", "format_version": 2}, CorruptDataError, "with dtype int64"),
    ("objs", {"vlen": None}, CorruptDataError, "without the 'vlen' member"),
    ("objs", {"vlen": "json"}, UnsupportedFormatError, "encoded as 'json'"),
    ("objs", {"format_version": 1}, CorruptDataError, "'vlen' in a format_version 1 file"),
    ("objs", {"format_version": 4}, UnsupportedFormatError, "newer than this bcolzx reads"),
    ("objs", {"dflt": {"raw": "AAAAAAAAAAA="}}, CorruptDataError, "invalid dflt"),
    ("objs", {"dflt": [1, 2]}, CorruptDataError, "invalid dflt"),
])
def test_forged_meta_is_refused_at_open(tmp_path, base, changes, error, message):
    path = str(tmp_path / base)
    if base == "ints":  # a fixed-size dataset whose items would be read as pointers
        bcolzx.carray(np.arange(5000) * 7919, rootdir=path, chunklen=1000).flush()
    else:
        bcolzx.carray(objects(list(range(50))), rootdir=path, allow_pickle=True).flush()
    _write_meta(path, **changes)
    with pytest.raises(error, match=message):
        bcolzx.open(path, mode="r", allow_pickle=True)
    report = bcolzx.verify(path)
    assert not report.ok


def test_a_damaged_chunk_raises_never_a_wrong_value(tmp_path):
    path = str(tmp_path / "o")
    c = bcolzx.carray([f"value {i}" for i in range(100)], dtype=object, rootdir=path,
                      chunklen=10, allow_pickle=True)
    c.flush()
    store = DirectoryStore.open(path, readonly=True)
    sc = store._file(0)
    offset, nbytes = sc.index.entry(3)
    with open(os.path.join(path, "data", "__0.bin"), "r+b") as f:
        f.seek(offset + nbytes - 3)
        byte = f.read(1)
        f.seek(offset + nbytes - 3)
        f.write(bytes([byte[0] ^ 0x01]))
    d = bcolzx.open(path, mode="r", allow_pickle=True)
    assert d[29] == "value 29" and d[40] == "value 40"
    for read in (lambda: d[35], lambda: d[30:40], lambda: d[:], lambda: list(d)):
        with pytest.raises(ChecksumError) as info:
            read()
        assert info.value.chunk == 3
    assert [p.chunk for p in bcolzx.verify(path).problems] == [3]


def _memory_engine(chunks, chunklen=4):
    """A VlenArray over a memory store holding `chunks` (uncompressed vlen chunks)."""
    storage = Storage(dtype=object, chunklen=chunklen, vlen="pickle")
    store = MemoryStore(storage)
    comp = codec.Compressor(typesize=1)
    store.put([(i, comp.compress(np.frombuffer(raw, np.uint8)), chunklen)
               for i, raw in enumerate(chunks)])
    return VlenArray(store)


@pytest.mark.parametrize("raw, message", [
    (vlen.encode([b"a", b"b", b"c"]), "holds 3 items, the metadata calls for 4"),
    (vlen.encode([b"a"] * 5), "holds 5 items, the metadata calls for 4"),
    (vlen.encode([b"ab"] * 4)[:-1], "items end at"),
    (b"\x01" * 40, "starts its items at"),
])
def test_chunks_with_damaged_offsets_raise(raw, message):
    eng = _memory_engine([raw])
    eng.nfull = 1
    for read in (lambda: eng.read(0, 4), lambda: eng.read_row(2)):
        with pytest.raises(CorruptDataError, match=message) as info:
            read()
        assert info.value.chunk == 0
    assert [p.chunk for p in eng.verify()] == [0]


def test_a_constant_chunk_in_an_object_dataset_is_damage():
    from bcolzx._storage.base import Special

    storage = Storage(dtype=object, chunklen=4, vlen="pickle")
    store = MemoryStore(storage)
    store.put([(0, Special(special.SPECIAL_ZERO, None), 4)])
    eng = VlenArray(store)
    eng.nfull = 1
    with pytest.raises(CorruptDataError, match="stored as a constant"):
        eng.read(0, 4)
    assert len(eng.verify()) == 1


def test_fixed_size_engines_refuse_object_stores():
    from bcolzx._storage import ChunkedArray

    store = MemoryStore(Storage(dtype=object, chunklen=4, vlen="pickle"))
    with pytest.raises(TypeError, match="variable-length items"):
        ChunkedArray(store)
    with pytest.raises(ValueError):
        Storage(dtype=object, chunklen=4)  # object dtype needs vlen='pickle'


def test_the_legacy_object_fixture_reads_with_the_switch():
    ds = OBJECT_FIXTURE
    c = bcolzx.open(str(LEGACY / ds["path"]), mode="r", allow_pickle=True)
    assert (len(c), c.chunklen, c.nchunks, c.nleftover) == (5, 1, 5, 0)
    assert [repr(v) for v in c[:]] == ds["content"]["values_repr"]
    assert [repr(c[i]) for i in range(-5, 0)] == ds["content"]["values_repr"]
    assert c.cparams.cname == ds["cparams"]["cname"] and c.dflt[()] == 0
    assert c.cbytes == ds["meta_sizes"]["cbytes"]
    assert bcolzx.verify(str(LEGACY / ds["path"])).ok


# -- property ----------------------------------------------------------------------------

JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20)
    | st.binary(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner,
                                                                max_size=4)
    | st.tuples(inner, inner),
    max_leaves=12)


@given(values=st.lists(JSONISH, max_size=60), chunklen=st.integers(1, 9),
       cuts=st.lists(st.integers(0, 60), max_size=4), on_disk=st.booleans())
@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
def test_round_trip_property(tmp_path, values, chunklen, cuts, on_disk):
    rootdir = str(tmp_path / f"h{next(_names)}") if on_disk else None
    c = bcolzx.carray(np.empty(0, object), chunklen=chunklen, rootdir=rootdir,
                      allow_pickle=True)
    bounds = sorted({0, len(values), *(min(x, len(values)) for x in cuts)})
    for a, b in zip(bounds, bounds[1:]):
        c.append(objects(values[a:b]))
    c = reopen(c)
    assert_values(c[:], values)
    if values:
        i = len(values) // 2
        assert same(c[i], values[i])
        c[i] = {"changed": i}
        assert reopen(c)[i] == {"changed": i}
    if on_disk:
        shutil.rmtree(rootdir)
