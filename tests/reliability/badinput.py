"""The catalogue of wrong calls: what each raises, and what its message tells the caller.

Every :class:`Case` is one wrong call, the exception class it raises and a
fragment of its message (which says what is wrong and what is valid).
``test_bad_input.py`` runs them all, checks that nothing on disk changed
and that no dataset was left half-written, and that docs/reliability.md
lists every call of the catalogue.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

import bcolzx
from bcolzx.errors import ExpressionError, PickleNotAllowedError, ReadOnlyError


class Env:
    """Datasets the cases work on, in `root`: ``c`` (a carray of 10 int64 on disk),
    ``t`` (a ctable of columns ``a`` int64 and ``b`` float64, 10 rows), ``new(name)``
    (a path where nothing exists)."""

    def __init__(self, root: str):
        self.root = root
        self.c = bcolzx.carray(np.arange(10), rootdir=os.path.join(root, "c"))
        self.t = bcolzx.ctable([np.arange(10), np.linspace(0, 1, 10)], names=["a", "b"],
                               rootdir=os.path.join(root, "t"))

    def new(self, name: str) -> str:
        return os.path.join(self.root, name)


@dataclass(frozen=True)
class Case:
    """One wrong call: as the docs show it, what it raises, a fragment of the message."""

    call: str
    exc: type
    fragment: str
    run: Callable[[Env], Any]
    topic: str


def _cases() -> list[Case]:
    out = []

    def case(topic, call, exc, fragment):
        def deco(fn):
            out.append(Case(call, exc, fragment, fn, topic))
            return fn
        return deco

    # -- dtype and shape ---------------------------------------------------------
    case("dtype/shape", "c.append('abc')  # int64 carray", ValueError, "cannot convert to int64")(
        lambda e: e.c.append("abc"))
    case("dtype/shape", "c.append(np.zeros((3, 2)))  # 1-D carray", ValueError,
         "does not fit rows of shape ()")(lambda e: e.c.append(np.zeros((3, 2))))
    case("dtype/shape", "c[0:3] = [1, 2]", ValueError,
         "cannot put values of shape (2,) into 3 rows")(
        lambda e: e.c.__setitem__(slice(0, 3), [1, 2]))
    case("dtype/shape", "carray(np.array([object()]))", PickleNotAllowedError,
         "pass allow_pickle=True or set bcolzx.defaults.allow_pickle = True")(
        lambda e: bcolzx.carray(np.array([object()], dtype=object), rootdir=e.new("o")))
    case("dtype/shape", "carray(np.zeros(2, 'i4,O'), allow_pickle=True)", TypeError,
         "holds Python objects inside a structured or sub-array dtype")(
        lambda e: bcolzx.carray(np.zeros(2, "i4,O"), allow_pickle=True, rootdir=e.new("so")))
    case("dtype/shape", "carray([{}], dtype=object, dflt=[1], allow_pickle=True)", ValueError,
         "the default of an object carray must be None, a bool, an int")(
        lambda e: bcolzx.carray([{}], dtype=object, dflt=[1], allow_pickle=True,
                                rootdir=e.new("od")))
    case("dtype/shape", "carray([1], dtype='int99')", TypeError,
         "data type 'int99' not understood")(
        lambda e: bcolzx.carray([1], dtype="int99", rootdir=e.new("d")))
    case("dtype/shape", "carray(np.zeros(3, 'V0'))", ValueError, "hold no bytes")(
        lambda e: bcolzx.carray(np.zeros(3, dtype="V0"), rootdir=e.new("v")))
    case("dtype/shape", "carray([1], dflt='x')", ValueError, "is not a value of dtype int64")(
        lambda e: bcolzx.carray([1], dflt="x", rootdir=e.new("f")))
    case("dtype/shape", "c.reshape((3, 4))  # 10 items", ValueError,
         "cannot reshape (10,) into (3, 4)")(
        lambda e: e.c.reshape((3, 4)))
    case("dtype/shape", "t.append([[1]])  # 2 columns", ValueError,
         "1 columns given for a ctable of 2")(
        lambda e: e.t.append([[1]]))
    case("dtype/shape", "t.append([['x'], ['y']])", ValueError, "column 'a'")(
        lambda e: e.t.append([["x"], ["y"]]))
    case("dtype/shape", "t.addcol(np.arange(3), name='z')  # 10 rows", ValueError,
         "the new column has 3 rows, the table 10")(lambda e: e.t.addcol(np.arange(3), name="z"))
    case("dtype/shape", "ctable([np.arange(3), np.arange(4)])", ValueError,
         "columns have different lengths [3, 4]")(
        lambda e: bcolzx.ctable([np.arange(3), np.arange(4)], rootdir=e.new("dl")))
    case("dtype/shape", "ctable([a, np.array([object()] * 3)])", PickleNotAllowedError,
         "pass allow_pickle=True or set bcolzx.defaults.allow_pickle = True")(
        lambda e: bcolzx.ctable([np.arange(3), np.array([object()] * 3)], rootdir=e.new("ob")))
    # -- indexes -----------------------------------------------------------------
    case("index", "c[20]  # 10 rows", IndexError,
         "index 20 out of range for length 10 (valid: -10 to 9)")(
        lambda e: e.c[20])
    case("index", "c[-11] = 1", IndexError, "index -11 out of range")(
        lambda e: e.c.__setitem__(-11, 1))
    case("index", "c[[1, 20]]", IndexError, "out of range for length 10")(lambda e: e.c[[1, 20]])
    case("index", "c[np.ones(3, bool)]", IndexError, "boolean mask of shape (3,) for length 10")(
        lambda e: e.c[np.ones(3, bool)])
    case("index", "c[1.5]", IndexError, "index with an int, a slice")(lambda e: e.c[1.5])
    case("index", "t[20]", IndexError, "index 20 out of range for length 10")(lambda e: e.t[20])
    case("index", "t.delcol('zz')", KeyError, "no column 'zz'; columns are ['a', 'b']")(
        lambda e: e.t.delcol("zz"))
    case("index", "t.iter(outcols=['zz'])", ValueError, "no column 'zz' (outcols)")(
        lambda e: list(e.t.iter(outcols=["zz"])))
    case("index", "c.trim(11)  # 10 rows", ValueError, "cannot trim 11 rows from 10 (at most 10)")(
        lambda e: e.c.trim(11))
    case("index", "c.resize(-1)", ValueError, "nitems must be >= 0")(lambda e: e.c.resize(-1))
    case("index", "c.iter(step=0)", ValueError, "step cannot be 0")(
        lambda e: list(e.c.iter(step=0)))
    case("index", "iterblocks(c, blen=0)", ValueError, "blen must be positive")(
        lambda e: list(bcolzx.iterblocks(e.c, blen=0)))
    # -- parameters --------------------------------------------------------------
    case("parameters", "cparams(clevel=10)", ValueError, "`clevel` must be between 0 and 9")(
        lambda e: bcolzx.cparams(clevel=10))
    case("parameters", "cparams(cname='snappy')", ValueError,
         "available: blosclz, lz4, lz4hc, zlib, zstd")(lambda e: bcolzx.cparams(cname="snappy"))
    case("parameters", "cparams(shuffle=7)", ValueError, "must be one of NOSHUFFLE (0)")(
        lambda e: bcolzx.cparams(shuffle=7))
    case("parameters", "cparams(blocksize=-1)", ValueError, "`blocksize` must be 0 (automatic)")(
        lambda e: bcolzx.cparams(blocksize=-1))
    case("parameters", "cparams(quantize=-1)", ValueError, "`quantize` must be 0 or a positive")(
        lambda e: bcolzx.cparams(quantize=-1))
    case("parameters", "carray(x, cparams={'level': 5})", TypeError,
         "unexpected keyword argument 'level'")(
        lambda e: bcolzx.carray([1.0], cparams={"level": 5}, rootdir=e.new("cp")))
    case("parameters", "carray(x, cparams=5)", TypeError,
         "cparams must be a bcolzx.cparams or a dict")(
        lambda e: bcolzx.carray([1.0], cparams=5, rootdir=e.new("cq")))
    case("parameters", "ctable(cols, cparams={'clevel': 99})", ValueError,
         "`clevel` must be between 0 and 9")(
        lambda e: bcolzx.ctable([np.arange(3), np.arange(3.0)], cparams={"clevel": 99},
                                rootdir=e.new("tc")))
    case("parameters", "carray(x, chunklen=0)", ValueError, "chunklen must be a positive int")(
        lambda e: bcolzx.carray([1], chunklen=0, rootdir=e.new("c0")))
    case("parameters", "carray(x, expectedlen=-5)", ValueError, "expectedlen must be an int >= 0")(
        lambda e: bcolzx.carray([1], expectedlen=-5, rootdir=e.new("el")))
    case("parameters", "set_nthreads(0)", ValueError, "nthreads must be between 1 and 1024")(
        lambda e: bcolzx.set_nthreads(0))
    case("parameters", "set_nthreads(10**6)", ValueError, "nthreads must be between 1 and 1024")(
        lambda e: bcolzx.set_nthreads(10**6))
    case("parameters", "c.attrs['x'] = object()", TypeError, "is not JSON-serialisable")(
        lambda e: e.c.attrs.__setitem__("x", object()))
    case("parameters", "c.attrs['__crc32c__'] = 1", ValueError, "is reserved")(
        lambda e: e.c.attrs.__setitem__("__crc32c__", 1))
    case("parameters", "t.addcol(x, name='../evil')", ValueError, "cannot be a column name")(
        lambda e: e.t.addcol(np.arange(10), name="../evil"))
    case("parameters", "ctable(cols, names=['a', 'a'])", ValueError, "duplicate column names")(
        lambda e: bcolzx.ctable([np.arange(3), np.arange(3)], names=["a", "a"],
                                rootdir=e.new("dn")))
    # -- modes -------------------------------------------------------------------
    case("modes", "carray(x, rootdir=p, mode='x')", ValueError,
         "mode must be one of ('r', 'a', 'w')")(
        lambda e: bcolzx.carray([1], rootdir=e.new("m"), mode="x"))
    case("modes", "open(p, mode='rw')", ValueError, "mode must be one of ('r', 'a', 'w')")(
        lambda e: bcolzx.open(e.c.rootdir, mode="rw"))
    case("modes", "carray(x, rootdir=new, mode='r')", ReadOnlyError,
         "cannot create a carray in mode 'r'")(
        lambda e: bcolzx.carray([1], rootdir=e.new("r"), mode="r"))
    case("modes", "open(p, mode='r').append(x)", ReadOnlyError, "is opened in mode 'r'")(
        lambda e: bcolzx.open(e.c.rootdir, mode="r").append([1]))
    case("modes", "carray(x, rootdir=existing)  # mode 'a'", FileExistsError,
         "use mode='w' to replace it")(
        lambda e: bcolzx.carray([1], rootdir=e.c.rootdir))
    case("modes", "open(missing)", FileNotFoundError, "no bcolzx carray or ctable at")(
        lambda e: bcolzx.open(e.new("missing")))
    case("modes", "convert(bcolzx_dataset)", bcolzx.UnsupportedFormatError,
         "already in the bcolzx format")(lambda e: bcolzx.convert(e.c.rootdir))
    # -- expressions -------------------------------------------------------------
    case("expressions", "eval('a +* b')", ExpressionError, "invalid syntax")(
        lambda e: bcolzx.eval("a +* b", user_dict={"a": e.c, "b": e.c}))
    case("expressions", "eval(\"__import__('os').system('rm -rf /')\")", ExpressionError,
         "only calls of the functions")(
        lambda e: bcolzx.eval("__import__('os').system('rm -rf /')"))
    case("expressions", "eval('a.__class__')", ExpressionError, "attribute access is not allowed")(
        lambda e: bcolzx.eval("a.__class__", user_dict={"a": e.c}))
    case("expressions", "eval('(lambda: 1)()')", ExpressionError, "only calls of the functions")(
        lambda e: bcolzx.eval("(lambda: 1)()"))
    case("expressions", "eval('a[0]')", ExpressionError, "not allowed")(
        lambda e: bcolzx.eval("a[0]", user_dict={"a": e.c}))
    case("expressions", "eval('zz + 1')", ExpressionError,
         "name 'zz' is not a column nor a variable")(
        lambda e: bcolzx.eval("zz + 1"))
    case("expressions", "eval('1+' * 100000 + '1')", ExpressionError, "longer than the limit")(
        lambda e: bcolzx.eval("1+" * 100000 + "1"))
    case("expressions", "t.where('a >')", ExpressionError, "invalid syntax")(
        lambda e: list(e.t.where("a >")))
    case("expressions", "t.where(\"__import__('os').system('ls')\")", ExpressionError,
         "only calls of the functions")(lambda e: list(e.t.where("__import__('os').system('ls')")))
    case("expressions", "t['zz > 1']", ExpressionError, "name 'zz' is not a column")(
        lambda e: e.t["zz > 1"])
    case("expressions", "t.where('a + 1')", ValueError, "not a boolean condition")(
        lambda e: list(e.t.where("a + 1")))
    # -- absurd sizes ------------------------------------------------------------
    case("sizes", "zeros(2**62, rootdir=p)", ValueError, "more than a dataset can")(
        lambda e: bcolzx.zeros(2**62, rootdir=e.new("z")))
    case("sizes", "arange(2**62)", ValueError, "ask for fewer rows")(
        lambda e: bcolzx.arange(2**62, rootdir=e.new("ar")))
    case("sizes", "fill(10**20, 1.0)", ValueError, "more than a dataset can")(
        lambda e: bcolzx.fill(10**20, 1.0))
    case("sizes", "fromiter(it, 'i8', count=2**62)", ValueError, "more than a dataset can")(
        lambda e: bcolzx.fromiter(iter([1]), dtype="i8", count=2**62, rootdir=e.new("fi")))
    case("sizes", "c.resize(2**62)", ValueError, "more than a dataset can")(
        lambda e: e.c.resize(2**62))
    case("sizes", "zeros(2**62, dtype='i8,f8')", ValueError, "more than a dataset can")(
        lambda e: bcolzx.zeros(2**62, dtype="i8,f8", rootdir=e.new("zt")))
    case("sizes", "carray(x, chunklen=2**40)", ValueError,
         "a chunk holds less than 2147483584 bytes")(
        lambda e: bcolzx.carray([1], chunklen=2**40, rootdir=e.new("ch")))
    case("sizes", "fromiter(iter(['x']), 'i8', count=1, rootdir=p)", ValueError, "invalid literal")(
        lambda e: bcolzx.fromiter(iter(["x"]), dtype="i8", count=1, rootdir=e.new("fx")))
    return out


CASES = _cases()
