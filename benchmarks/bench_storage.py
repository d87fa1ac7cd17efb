"""Storage engine: write, full read and random single-row reads by chunk and block size.

Used to choose the defaults of docs/format (chunk bytes, block size). Also
``--big`` writes a large dataset by appends and reports its file count, and
how many files a single-row read opens.

    python benchmarks/bench_storage.py                 # the defaults grid, 2e7 float64 rows
    python benchmarks/bench_storage.py --big 1e9       # 8 GB written by appends (needs the disk)
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time

import numpy as np

from bcolzx._format.meta import Storage
from bcolzx._storage import ChunkedArray, DirectoryStore


def data(n: int, kind: str) -> np.ndarray:
    if kind == "linspace":
        return np.linspace(0, 1000, n)
    if kind == "arange":
        return np.arange(n, dtype="f8")
    return np.random.default_rng(0).random(n)


def run_case(root: str, arr_data: np.ndarray, chunk_bytes: int, blocksize: int,
             nrandom: int, k: int) -> dict:
    rootdir = os.path.join(root, f"d{chunk_bytes}_{blocksize}")
    st = Storage(dtype="f8", chunklen=chunk_bytes // 8, blocksize=blocksize,
                 chunks_per_superchunk=k)
    t0 = time.perf_counter()
    arr = ChunkedArray(DirectoryStore.create(rootdir, st))
    for i in range(0, len(arr_data), 1_000_000):
        arr.append(arr_data[i:i + 1_000_000])
    arr.flush()
    t1 = time.perf_counter()
    arr = ChunkedArray(DirectoryStore.open(rootdir), nthreads=2)
    out = np.empty_like(arr_data)
    t2 = time.perf_counter()
    arr.read(0, len(arr), out)
    t3 = time.perf_counter()
    assert np.array_equal(out, arr_data)
    idx = np.random.default_rng(1).integers(0, len(arr_data), nrandom)
    t4 = time.perf_counter()
    for i in idx:
        arr.read_row(int(i))
    t5 = time.perf_counter()
    nbytes = arr_data.nbytes
    shutil.rmtree(rootdir)
    return {"write_MBps": nbytes / (t1 - t0) / 1e6, "read_MBps": nbytes / (t3 - t2) / 1e6,
            "row_us": (t5 - t4) / nrandom * 1e6, "ratio": nbytes / max(arr.cbytes, 1)}


def grid(args) -> None:
    n = int(float(args.rows))
    print(f"{n:,} float64 rows, lz4 level 5 shuffle, crc32c, K={args.k}; "
          f"{args.random} random single-row reads")
    print(f"{'data':<9} {'chunk':>7} {'block':>7} {'write MB/s':>11} {'read MB/s':>10} "
          f"{'row us':>8} {'ratio':>7}")
    root = tempfile.mkdtemp(prefix="bcolzx-bench-", dir=args.dir)
    try:
        for kind in args.data.split(","):
            d = data(n, kind)
            for cb in (256 << 10, 1 << 20, 4 << 20):
                for bs in (0, 16 << 10, 64 << 10):
                    r = run_case(root, d, cb, bs, args.random, args.k)
                    print(f"{kind:<9} {cb >> 10:>6}K {bs >> 10:>6}K {r['write_MBps']:>11.0f} "
                          f"{r['read_MBps']:>10.0f} {r['row_us']:>8.1f} {r['ratio']:>7.1f}",
                          flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def big(args) -> None:
    n = int(float(args.big))
    root = tempfile.mkdtemp(prefix="bcolzx-big-", dir=args.dir)
    rootdir = os.path.join(root, "big")
    try:
        st = Storage(dtype="f8", chunklen=(1 << 20) // 8)
        arr = ChunkedArray(DirectoryStore.create(rootdir, st))
        batch = 10_000_000
        t0 = time.perf_counter()
        for i in range(0, n, batch):
            m = min(batch, n - i)
            arr.append(np.arange(i, i + m, dtype="f8") * 0.5 + np.sin(np.arange(m)))
        arr.flush()
        t1 = time.perf_counter()
        files = sum(len(f) for _, _, f in os.walk(rootdir))
        arr = ChunkedArray(DirectoryStore.open(rootdir, readonly=True))
        opened = []
        real_open = os.open
        os.open = lambda p, *a, **k: (opened.append(p), real_open(p, *a, **k))[1]
        try:
            j = n // 3 + 12345
            value = arr.read_row(j)
        finally:
            os.open = real_open
        expected = j * 0.5 + np.sin(j % batch)
        assert value == expected, (value, expected)
        print(f"{n:,} float64 rows ({n * 8 / 1e9:.1f} GB) written by appends of {batch:,} in "
              f"{t1 - t0:.1f} s ({n * 8 / (t1 - t0) / 1e6:.0f} MB/s), "
              f"{arr.cbytes / 1e9:.2f} GB stored; {files} files in the dataset; "
              f"a single-row read opened {len(set(opened))} file(s): "
              f"{sorted({os.path.basename(p) for p in opened})}")
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default="2e7", help="rows for the grid (default 2e7)")
    parser.add_argument("--data", default="linspace,random", help="linspace,arange,random")
    parser.add_argument("--random", type=int, default=2000, help="single-row reads")
    parser.add_argument("--k", type=int, default=256, help="chunks per superchunk")
    parser.add_argument("--big", default=None, help="write this many rows and count files")
    parser.add_argument("--dir", default=None, help="where to write (default: temp dir)")
    args = parser.parse_args()
    big(args) if args.big else grid(args)


if __name__ == "__main__":
    main()
