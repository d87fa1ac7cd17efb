#!/usr/bin/env python
"""Variable-length strings: bcolzx StringDType columns next to pandas, Parquet, Zarr and h5py.

Two columns of ``--n`` rows (``--n-sentences`` for the second):

* ``tickers``: 1 to 5 characters of ``A-Z``, drawn from a pool of 5000
  tickers (a market's worth), by default with Zipf's law (exponent 1.3; as
  trades are: a few names dominate), or uniformly (``--tickers uniform``, the
  worst case for every compressor: about 12 bits of entropy a row);
* ``sentences``: 20 to 200 characters of words (lowercase ASCII with a few
  non-ASCII letters).

For each column and system, in one process (best of ``--repeat`` runs;
files are read right after they are written, so from the OS page cache):

1. ``build``: from the NumPy StringDType array to the system's storage
   (bcolzx: a carray on disk, flushed; ``U``: the same as fixed-width ``U``;
   pandas: a ``string[pyarrow]`` Series in memory; Parquet: ``pq.write_table``
   of the Arrow array, default options; Zarr v3: a ``string`` (vlen-utf8) array
   with Zstd; h5py: a chunked variable-length UTF-8 dataset);
2. ``read``: the whole column back in memory, each system's own in-memory
   form (bcolzx: a StringDType array; Parquet: ``pq.read_table``, an Arrow
   table; Zarr: ``z[:]``, StringDType; h5py: ``astype('T')[:]``; pandas:
   nothing to read, not measured);
3. ``row``: median of ``--rows`` random single-row reads;
4. ``query``: the number of rows equal to a given value (bcolzx:
   ``bcolzx.eval("s == v")`` over the carray; pandas: ``(s == v).sum()``;
   Parquet: ``pq.read_table(filters=...)``; Zarr, h5py: read + ``==``);
5. ``size``: bytes on disk (pandas: ``memory_usage(deep=True)``).

Ratios are bcolzx / other for sizes (below 1: bcolzx is smaller) and
other / bcolzx for times (above 1: bcolzx is faster).  Systems run one after
the other, so on a shared machine a change of load skews their ratios;
``--duel ROUNDS`` also alternates full reads of bcolzx and Parquet (best wall
and CPU time of each), which both then see under the same load.

What a read returns differs: bcolzx builds a NumPy StringDType array (16
bytes a row plus the strings longer than 15 bytes, every row packed through
NumPy's ``NpyString_pack``), while Parquet's ``pq.read_table`` stops at an
Arrow table (offsets and bytes, the layout of a bcolzx chunk); converting that
to NumPy strings would cost Parquet far more than its read.  So the Parquet
figure is the cheaper form, and the comparison favours Parquet.  Every timed
call keeps its result until the clock stops, then drops it: freeing a
StringDType array visits each string (NumPy's clear loop), freeing an Arrow
table does not, and neither is part of a read (the duel reports the time to
free each result on its own line).

Run from outside the source tree so the installed bcolzx is imported::

    cd /tmp && python /path/to/benchmarks/bench_strings.py --n 1e7
"""

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
import warnings

import numpy as np

SYSTEMS = ("bcolzx", "U", "pandas", "parquet", "zarr", "h5py")
S = np.dtypes.StringDType()


def best_of(fn, repeat, setup=None):
    """The best wall time of `repeat` calls of `fn`; its result is dropped after
    the clock stops (freeing a StringDType array visits every string, which
    would otherwise be charged to the next read)."""
    best = float("inf")
    for _ in range(repeat):
        if setup is not None:
            setup()
        t0 = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t0)
        del result
    return best


def disk_bytes(path):
    if os.path.isfile(path):
        return os.path.getsize(path)
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)


def tickers(n, rng, law="zipf"):
    letters = np.array(list("ABCDEFGHIJKLMNOPQRSTUVWXYZ"))
    pool = ["".join(rng.choice(letters, rng.integers(1, 6))) for _ in range(5000)]
    pool[0] = "AAPL"
    if law == "zipf":
        picks = np.minimum(rng.zipf(1.3, n) - 1, len(pool) - 1)
    else:
        picks = rng.integers(0, len(pool), n)
    return np.array(pool, dtype=S)[picks]


def sentences(n, rng):
    words = np.array("the of and to in is was for on that with as by at from his her "
                     "market price rose fell sharply today café naïve résumé über "
                     "company shares report quarter growth".split(), dtype=S)
    out = np.empty(n, dtype=S)
    block = 100_000
    for lo in range(0, n, block):
        m = min(block, n - lo)
        text = words[rng.integers(0, len(words), (m, 40))]
        joined = text[:, 0]
        for k in range(1, 40):
            joined = np.strings.add(np.strings.add(joined, " "), text[:, k])
        lengths = rng.integers(20, 201, m)
        out[lo:lo + m] = np.strings.slice(joined, 0, lengths) if hasattr(
            np.strings, "slice") else [s[:k] for s, k in zip(joined.tolist(), lengths)]
    out[0] = "the market rose"
    return out


def run_bcolzx(data, value, tmp, args, fixed=False):
    import bcolzx

    path = os.path.join(tmp, "bcolzx_U" if fixed else "bcolzx")
    arr = data.astype(f"U{int(np.strings.str_len(data).max())}") if fixed else data

    def build():
        shutil.rmtree(path, ignore_errors=True)
        bcolzx.carray(arr, rootdir=path, mode="w").flush()

    out = {"build": best_of(build, args.repeat), "size": disk_bytes(path)}
    c = bcolzx.open(path, mode="r")
    out["read"] = best_of(lambda: c[:], args.repeat)
    assert (c[:] == arr).all()
    idx = np.random.default_rng(1).integers(0, len(arr), args.rows)
    c = bcolzx.open(path, mode="r")
    times = []
    for i in idx.tolist():
        t0 = time.perf_counter()
        c[i]
        times.append(time.perf_counter() - t0)
    out["row"] = statistics.median(times)
    count = []
    out["query"] = best_of(lambda: count.append(
        int(bcolzx.eval("c == v", user_dict={"c": c, "v": value}, out_flavor="numpy").sum())),
        args.repeat)
    out["matches"] = count[-1]
    return out


def run_pandas(data, value, tmp, args):
    import pandas as pd

    holder = []
    out = {"build": best_of(lambda: holder.append(pd.Series(data, dtype="string[pyarrow]")),
                            args.repeat)}
    s = holder[-1]
    out["size"] = int(s.memory_usage(deep=True, index=False))
    idx = np.random.default_rng(1).integers(0, len(data), args.rows)
    times = []
    for i in idx.tolist():
        t0 = time.perf_counter()
        s.iat[i]
        times.append(time.perf_counter() - t0)
    out["row"] = statistics.median(times)
    count = []
    out["query"] = best_of(lambda: count.append(int((s == value).sum())), args.repeat)
    out["matches"] = count[-1]
    return out


def run_parquet(data, value, tmp, args):
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    path = os.path.join(tmp, "t.parquet")
    table = pa.table({"s": pa.array(data, type=pa.string())})
    out = {"build": best_of(lambda: pq.write_table(table, path), args.repeat),
           "size": disk_bytes(path)}
    out["read"] = best_of(lambda: pq.read_table(path), args.repeat)
    pf = pq.ParquetFile(path)
    starts = np.cumsum([0] + [pf.metadata.row_group(g).num_rows
                              for g in range(pf.num_row_groups)])
    idx = np.random.default_rng(1).integers(0, len(data), args.rows)
    times = []
    for i in idx.tolist():
        t0 = time.perf_counter()
        g = int(np.searchsorted(starts, i, side="right")) - 1
        pq.ParquetFile(path).read_row_group(g).column(0)[i - int(starts[g])].as_py()
        times.append(time.perf_counter() - t0)
    out["row"] = statistics.median(times)
    count = []
    out["query"] = best_of(lambda: count.append(
        pq.read_table(path, filters=[("s", "==", value)]).num_rows), args.repeat)
    out["matches"] = count[-1]
    assert pc.sum(pc.equal(pq.read_table(path).column(0), value)).as_py() == count[-1]
    return out


def run_zarr(data, value, tmp, args, chunklen):
    import zarr

    path = os.path.join(tmp, "z")

    def build():
        shutil.rmtree(path, ignore_errors=True)
        z = zarr.create_array(path, shape=data.shape, dtype=S, chunks=(chunklen,))
        z[:] = data

    out = {"build": best_of(build, args.repeat), "size": disk_bytes(path)}
    z = zarr.open_array(path, mode="r")
    out["read"] = best_of(lambda: z[:], args.repeat)
    idx = np.random.default_rng(1).integers(0, len(data), args.rows)
    times = []
    for i in idx.tolist():
        t0 = time.perf_counter()
        z[i]
        times.append(time.perf_counter() - t0)
    out["row"] = statistics.median(times)
    count = []
    out["query"] = best_of(lambda: count.append(int((z[:] == value).sum())), args.repeat)
    out["matches"] = count[-1]
    return out


def run_h5py(data, value, tmp, args, chunklen):
    import h5py

    path = os.path.join(tmp, "a.h5")

    def build():
        with h5py.File(path, "w") as h5:
            d = h5.create_dataset("s", shape=data.shape, dtype=h5py.string_dtype(),
                                  chunks=(chunklen,))
            d[:] = data

    out = {"build": best_of(build, args.repeat), "size": disk_bytes(path)}
    with h5py.File(path, "r") as h5:
        d = h5["s"]
        out["read"] = best_of(lambda: d.astype("T")[:], args.repeat)
        idx = np.random.default_rng(1).integers(0, len(data), args.rows)
        times = []
        for i in idx.tolist():
            t0 = time.perf_counter()
            d[i]
            times.append(time.perf_counter() - t0)
        out["row"] = statistics.median(times)
        count = []
        out["query"] = best_of(lambda: count.append(int((d.astype("T")[:] == value).sum())),
                               args.repeat)
        out["matches"] = count[-1]
    return out


def read_duel(data, tmp, rounds):
    """Full reads of bcolzx and Parquet alternated `rounds` times (so that both
    see the same load): the best wall and CPU times of each."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    import bcolzx

    path = os.path.join(tmp, "duel")
    bcolzx.carray(data, rootdir=path, mode="w").flush()
    pq.write_table(pa.table({"s": pa.array(data, type=pa.string())}), path + ".parquet")
    c = bcolzx.open(path, mode="r")
    runs = {"bcolzx": lambda: c[:], "parquet": lambda: pq.read_table(path + ".parquet")}
    best = {name: [float("inf"), float("inf"), float("inf")] for name in runs}
    for _ in range(rounds):
        for name, fn in runs.items():
            t0, c0 = time.perf_counter(), time.process_time()
            result = fn()
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
            t0 = time.perf_counter()
            del result
            free = time.perf_counter() - t0
            best[name] = [min(best[name][0], wall), min(best[name][1], cpu),
                          min(best[name][2], free)]
    return {"bcolzx_wall": best["bcolzx"][0], "bcolzx_cpu": best["bcolzx"][1],
            "bcolzx_free": best["bcolzx"][2], "parquet_wall": best["parquet"][0],
            "parquet_cpu": best["parquet"][1], "parquet_free": best["parquet"][2]}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=float, default=1e7, help="rows of the ticker column")
    p.add_argument("--n-sentences", type=float, default=1e6,
                   help="rows of the sentence column (fixed-width U of 1e7 sentences "
                        "would take 8 GB)")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--rows", type=int, default=200, help="random single-row reads")
    p.add_argument("--systems", default=",".join(SYSTEMS))
    p.add_argument("--columns", default="tickers,sentences")
    p.add_argument("--tickers", choices=("zipf", "uniform"), default="zipf",
                   help="how tickers are drawn from the pool")
    p.add_argument("--json", help="write the results here too")
    p.add_argument("--duel", type=int, default=0, metavar="ROUNDS",
                   help="also alternate full reads of bcolzx and Parquet ROUNDS times")
    args = p.parse_args()
    systems = args.systems.split(",")
    rng = np.random.default_rng(0)
    import bcolzx

    report = {"uptime": open("/proc/loadavg").read().strip() if os.path.exists(
        "/proc/loadavg") else None, "python": sys.version.split()[0],
        "numpy": np.__version__, "bcolzx": bcolzx.__version__, "columns": {}}
    warnings.simplefilter("ignore")
    for column in args.columns.split(","):
        n = int(args.n if column == "tickers" else args.n_sentences)
        data = tickers(n, rng, args.tickers) if column == "tickers" else sentences(n, rng)
        value = str(data[0])
        results = {}
        tmp = tempfile.mkdtemp(prefix="bench-strings-")
        try:
            chunklen = None
            for system in systems:
                if system == "bcolzx":
                    results[system] = run_bcolzx(data, value, tmp, args)
                    chunklen = bcolzx.open(os.path.join(tmp, "bcolzx"), mode="r").chunklen
                elif system == "U":
                    results[system] = run_bcolzx(data, value, tmp, args, fixed=True)
                elif system == "pandas":
                    results[system] = run_pandas(data, value, tmp, args)
                elif system == "parquet":
                    results[system] = run_parquet(data, value, tmp, args)
                elif system == "zarr":
                    results[system] = run_zarr(data, value, tmp, args, chunklen or 65536)
                elif system == "h5py":
                    results[system] = run_h5py(data, value, tmp, args, chunklen or 65536)
                print(f"{column} {system}: {results[system]}", flush=True)
            if args.duel:
                duel = read_duel(data, tmp, args.duel)
                results["duel"] = duel
                print(f"{column}: alternated full reads, best of {args.duel}: bcolzx "
                      f"{duel['bcolzx_wall']:.3f} s ({duel['bcolzx_cpu']:.3f} s CPU), Parquet "
                      f"{duel['parquet_wall']:.3f} s ({duel['parquet_cpu']:.3f} s CPU); "
                      f"Parquet / bcolzx: {duel['parquet_wall'] / duel['bcolzx_wall']:.2f} "
                      f"(CPU {duel['parquet_cpu'] / duel['bcolzx_cpu']:.2f}); freeing the "
                      f"result (not timed above): bcolzx {duel['bcolzx_free']:.3f} s, "
                      f"Parquet {duel['parquet_free']:.3f} s", flush=True)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        report["columns"][column] = {"n": n, "results": results,
                                     "tickers": args.tickers if column == "tickers" else None}
        print_table(column, n, results)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
    print("load average:", report["uptime"])


def print_table(column, n, results):
    base = results.get("bcolzx")
    print(f"\n== {column}: {n} rows ==")
    print(f"{'system':10} {'build s':>9} {'read s':>9} {'row us':>9} {'query s':>9} "
          f"{'size MB':>9} | size bcolzx/x, time x/bcolzx: build read row query")
    for system, r in results.items():
        if system == "duel":
            continue
        cells = [f"{r.get(k, float('nan')):9.3f}" for k in ("build", "read")]
        cells.append(f"{r['row'] * 1e6:9.1f}")
        cells.append(f"{r['query']:9.3f}")
        cells.append(f"{r['size'] / 1e6:9.2f}")
        ratios = ""
        if base is not None and system != "bcolzx":
            ratios = f"{base['size'] / r['size']:6.3f} " + " ".join(
                f"{r[k] / base[k]:6.2f}" if k in r and k in base else "     -"
                for k in ("build", "read", "row", "query"))
        print(f"{system:10} {' '.join(cells)} | {ratios}")


if __name__ == "__main__":
    main()
