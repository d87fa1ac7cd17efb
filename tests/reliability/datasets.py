"""Small datasets that exercise every part of the format, and what a user reads from them.

The recipes build, in a few milliseconds, datasets holding every kind of
thing the format stores: several superchunk files, data chunks and the three
kinds of special (constant) chunks, a stored leftover, rewritten chunks (dead
space), a zone map, attributes; a ctable with numeric, string and N-D
columns.  :func:`observe` reads back everything a user of the public API can
see (values, dtype, shape, attributes, query results), so that two
observations compare equal exactly when no user could tell the datasets
apart.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import numpy as np

import bcolzx
from bcolzx._format.meta import Storage
from bcolzx._storage import ChunkedArray, DirectoryStore

LEGACY = Path(__file__).resolve().parent.parent / "data" / "legacy_bcolz"

#: Rows per chunk and chunks per superchunk file of the carray recipe.
CHUNKLEN = 64
NSLOTS = 4


def carray_values(n: int) -> np.ndarray:
    """Float64 rows with constant runs: chunk 2 is zeros, chunk 5 NaN, chunk 7 all 3.25."""
    i = np.arange(n, dtype="f8")
    v = np.sin(i) * 1000 + i
    for chunk, value in ((2, 0.0), (5, np.nan), (7, 3.25)):
        v[chunk * CHUNKLEN:(chunk + 1) * CHUNKLEN] = value
    return v


def build_carray(path: str, n: int = 11 * CHUNKLEN + 23) -> None:
    """A carray of `n` rows in superchunk files of NSLOTS chunks, with dead space.

    Written in several flushes (so the leftover was stored more than once),
    with chunks rewritten after they were committed, a zone map and two
    attributes.
    """
    values = carray_values(n)
    storage = Storage(dtype="f8", chunklen=CHUNKLEN, chunks_per_superchunk=NSLOTS)
    arr = ChunkedArray(DirectoryStore.create(path, storage))
    cut = [0, 100, 5 * CHUNKLEN + 7, n]
    for a, b in zip(cut, cut[1:]):
        arr.append(values[a:b] + 1)  # wrong on purpose: rewritten below
        arr.flush()
    arr.write(0, values)
    arr.flush()
    arr.close()
    c = bcolzx.carray(rootdir=path, mode="a")
    c.attrs["units"] = "m/s"
    c.attrs["scale"] = [1, 2.5]


def build_ctable(path: str, n: int = 1000) -> None:
    """A ctable of `n` rows: int64, float64, |S6 and (n, 3) int32 columns, two flushes."""
    rng = np.random.default_rng(7)
    cols = [np.arange(n, dtype="i8"), rng.normal(size=n),
            np.array([f"s{i % 97}" for i in range(n)], dtype="S6"),
            np.arange(3 * n, dtype="i4").reshape(n, 3)]
    half = n // 2
    ct = bcolzx.ctable([c[:half] for c in cols], names=["i", "f", "s", "v"], rootdir=path,
                       chunklen=128)
    ct.append([c[half:] for c in cols])
    ct.flush()
    ct.attrs["title"] = "reliability"
    ct.cols["f"].attrs["unit"] = "kg"


def copy_legacy(name: str, path: str) -> None:
    """A writable copy of the legacy bcolz fixture `name` (tests/data/legacy_bcolz)."""
    shutil.copytree(LEGACY / name, path)
    for root, _, files in os.walk(path):
        os.chmod(root, 0o755)
        for f in files:
            os.chmod(os.path.join(root, f), 0o644)


RECIPES = {
    "carray": build_carray,
    "ctable": build_ctable,
    "legacy-carray": lambda p: copy_legacy("ca_int32_leftover", p),
    "legacy-ctable": lambda p: copy_legacy("ct_mixed", p),
}


def _digest(arr: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(arr).tobytes()).hexdigest()


#: Queries of the ctable recipe: (expression, the same as a function of the columns).
QUERIES = [
    ("(i > 100) & (i < 130)", lambda c: (c["i"] > 100) & (c["i"] < 130)),
    ("f > 2.0", lambda c: c["f"] > 2.0),
]


def observe(path: str) -> dict:
    """Everything the public API shows of the dataset at `path` (opened read-only).

    Returns
    -------
    dict
        Kind, length, dtype, shape, a digest of the values of every column,
        attributes, and for a ctable the results of :data:`QUERIES` on the
        columns they name (zone maps decide which chunks those read).

    Raises
    ------
    Exception
        Whatever opening or reading raises.
    """
    obj = bcolzx.open(path, mode="r")
    out = {"kind": type(obj).__name__, "len": len(obj), "attrs": obj.attrs.getall()}
    if isinstance(obj, bcolzx.carray):
        out.update(dtype=obj.dtype.str, shape=obj.shape, values=_digest(obj[:]))
        return out
    cols = {}
    for name in obj.names:
        col = obj.cols[name]
        cols[name] = (col.dtype.str, col.shape, _digest(col[:]), col.attrs.getall())
    out["cols"] = cols
    names = set(obj.names)
    data = None
    for expression, fn in QUERIES:
        if not {"i", "f"} <= names:
            break
        if data is None:
            data = {n: obj.cols[n][:] for n in ("i", "f")}
        got = obj.fetchwhere(expression, outcols=["i"], out_flavor="numpy")["i"]
        want = data["i"][fn(data)]
        out[f"query {expression}"] = bool(np.array_equal(got, want)) and _digest(got)
    return out
