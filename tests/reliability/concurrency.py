"""Concurrency harness: one writer, many readers, every value checked.

The dataset holds row ``i == i`` (a carray of int64; a ctable with columns
``a = i`` and ``b = -i / 2``).  The writer appends batches of random size and
commits each one; now and then it rewrites rows it already wrote (with the
same values: the chunks and the index copies move, the values do not) and
compacts (the files are replaced under the readers).  Readers open the
dataset again and again in mode 'r' and check everything they read:

* the length never goes back (each open sees a later commit, or the same);
* every row read holds its number: whole prefixes, random ranges and single
  rows, through a fresh object and through one kept open since the start
  (whose snapshot must stay readable while files move under it).

Run as a program (``python concurrency.py writer|reader|hold ...``) for
readers and writers in other processes; :func:`read` also runs in threads of
the test process.  Results are JSON on the last line of stdout.
"""

from __future__ import annotations

import json
import os
import sys
import time

import numpy as np

CHUNKLEN = 1024
NSLOTS = 8  # chunks per superchunk file: many files, many lazy index loads


def create(path: str, kind: str, chunklen: int = CHUNKLEN, nslots: int = NSLOTS) -> None:
    """An empty dataset of `kind` ('carray' or 'ctable') at `path`."""
    import bcolzx
    from bcolzx._format.meta import Storage
    from bcolzx._storage import ChunkedArray, DirectoryStore

    def column(rootdir: str, dtype: str) -> None:
        storage = Storage(dtype=dtype, chunklen=chunklen, chunks_per_superchunk=nslots)
        ChunkedArray(DirectoryStore.create(rootdir, storage)).close()

    if kind == "carray":
        column(path, "i8")
        return
    t = bcolzx.ctable([np.empty(0, "i8"), np.empty(0, "f8")], names=["a", "b"],
                      rootdir=path, chunklen=chunklen)
    t.close()
    del t
    # The columns again, with small superchunk files (the table keeps its names).
    import shutil

    for name, dtype in (("a", "i8"), ("b", "f8")):
        shutil.rmtree(os.path.join(path, name))
        column(os.path.join(path, name), dtype)


def expected(kind: str, lo: int, hi: int):
    i = np.arange(lo, hi, dtype="i8")
    if kind == "carray":
        return i
    out = np.empty(hi - lo, dtype=[("a", "i8"), ("b", "f8")])
    out["a"], out["b"] = i, -i / 2
    return out


def _open(path: str, mode: str):
    import bcolzx

    return bcolzx.open(path, mode=mode)


def write(path: str, kind: str, total: int, max_batch: int, seed: int,
          rewrite_every: int = 7, compact_every: int = 23) -> dict:
    """Append rows ``0 .. total-1`` in committed batches; return what was done."""
    rng = np.random.default_rng(seed)
    obj = _open(path, "a")
    n = len(obj)
    stats = {"batches": 0, "rewrites": 0, "compactions": 0, "rows": 0}
    while n < total:
        b = int(min(total - n, rng.integers(1, max_batch + 1)))
        obj.append(expected(kind, n, n + b) if kind == "carray" else
                   [expected(kind, n, n + b)[f] for f in ("a", "b")])
        obj.flush()
        n += b
        stats["batches"] += 1
        if rewrite_every and stats["batches"] % rewrite_every == 0:
            lo = int(rng.integers(0, n))
            hi = int(min(n, lo + rng.integers(1, 4 * CHUNKLEN)))
            obj[lo:hi] = expected(kind, lo, hi)  # same values, new chunk versions
            obj.flush()
            stats["rewrites"] += 1
        if compact_every and stats["batches"] % compact_every == 0:
            obj.compact()
            stats["compactions"] += 1
    obj.close()
    stats["rows"] = n
    return stats


def _check(got, kind: str, lo: int, what: str, errors: list) -> int:
    want = expected(kind, lo, lo + len(got))
    if got.shape != want.shape or not np.array_equal(got, want):
        if kind == "carray":
            bad = np.flatnonzero(got != want)
        else:
            bad = np.flatnonzero((got["a"] != want["a"]) | (got["b"] != want["b"]))
        errors.append(f"{what}: rows {lo}..{lo + len(got)}: {len(bad)} wrong at "
                      f"{(lo + bad[:6]).tolist()}: {got[bad[:6]].tolist()}")
    return len(got)


def _dump(obj, lo: int, hi: int, errors: list) -> None:
    """Keep the stored chunks behind a wrong read (next to the dataset) for a post-mortem."""
    if not hasattr(obj, "_engine"):
        return
    from bcolzx._ext import codec

    eng = obj._engine
    for c in range(lo // eng.chunklen, min(eng.nfull, (hi - 1) // eng.chunklen + 1)):
        entry = bytes(eng.store.get_one(c))
        where = os.path.join(os.path.dirname(eng.store.rootdir), f"chunk-{c}-{os.getpid()}")
        with open(where, "wb") as f:
            f.write(entry)
        errors.append(f"chunk {c} kept at {where}: {codec.chunk_info(entry)}")


def read(path: str, kind: str, done_file: str, seed: int, deadline: float,
         full_every: int = 5) -> dict:
    """Check the dataset again and again until `done_file` exists (then once more)."""
    from bcolzx.errors import ConcurrentModificationError

    rng = np.random.default_rng(seed)
    errors: list[str] = []
    stats = {"opens": 0, "reads": 0, "rows_checked": 0, "max_len": 0, "errors": errors,
             "snapshot_len": 0}
    kept = _open(path, "r")  # a snapshot kept from the start
    stats["snapshot_len"] = kept_len = len(kept)
    last = 0
    final = False
    while True:
        final = os.path.exists(done_file) or time.monotonic() > deadline
        obj = _open(path, "r")
        stats["opens"] += 1
        n = len(obj)
        if n < last:
            errors.append(f"length went back from {last} to {n}")
        last = n
        stats["max_len"] = max(stats["max_len"], n)
        if n:
            if final or stats["opens"] % full_every == 0:  # the whole prefix, by blocks
                for lo in range(0, n, 50_000):
                    stats["rows_checked"] += _check(obj[lo:min(n, lo + 50_000)], kind, lo,
                                                    "prefix", errors)
                    stats["reads"] += 1
            for _ in range(4):
                lo = int(rng.integers(0, n))
                hi = int(min(n, lo + rng.integers(1, 3 * CHUNKLEN)))
                seen = len(errors)
                stats["rows_checked"] += _check(obj[lo:hi], kind, lo, "range", errors)
                if len(errors) > seen:  # read again: the same object, then a new one
                    _check(obj[lo:hi], kind, lo, f"range again (len {n})", errors)
                    _check(_open(path, "r")[lo:hi], kind, lo, "range, new object", errors)
                    _dump(obj, lo, hi, errors)
                i = int(rng.integers(0, n))
                row = obj[i]
                if kind == "carray":
                    ok = row == i
                else:
                    ok = row["a"] == i and row["b"] == -i / 2
                if not ok:
                    errors.append(f"row {i} holds {row!r}")
                stats["rows_checked"] += 1
                stats["reads"] += 2
        # The kept object: its rows stay readable while files move under it.
        if kept_len:
            lo = int(rng.integers(0, kept_len))
            try:
                stats["rows_checked"] += _check(kept[lo:min(kept_len, lo + 2 * CHUNKLEN)],
                                                kind, lo, "kept snapshot", errors)
            except ConcurrentModificationError as exc:  # only if the writer shrank it
                errors.append(f"kept snapshot: {exc}")
            stats["reads"] += 1
        del obj
        if final:
            break
    if kept_len:  # all of it, last
        stats["rows_checked"] += _check(kept[:], kind, 0, "kept snapshot (all)", errors)
    return stats


def hold(path: str, seconds: float, append: bool = True) -> None:
    """Take the write lock of `path` (by appending a row) and keep it `seconds`."""
    obj = _open(path, "a")
    if append:
        n = len(obj)
        obj.append(expected("carray", n, n + 1))
        obj.flush()
    print("locked", flush=True)
    time.sleep(seconds)
    obj.close()
    print("released", flush=True)


def main(argv: list[str]) -> None:
    role, path, kind = argv[0], argv[1], argv[2]
    if role == "writer":
        result = write(path, kind, int(argv[3]), int(argv[4]), int(argv[5]))
    elif role == "reader":
        result = read(path, kind, argv[3], int(argv[4]), time.monotonic() + float(argv[5]))
    elif role == "hold":
        hold(path, float(argv[3]))
        return
    else:
        raise SystemExit(f"unknown role {role!r}")
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
