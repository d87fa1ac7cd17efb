"""bcolzx vs Zarr v3 (sharded and unsharded) on the same local S3-compatible server.

    python benchmarks/bench_remote.py [--n 100000000] [--rows 10000000] [--repeat 3]

Starts a moto S3 server on the loopback address (``moto[server]``, in the
``test`` extra), writes the same data with each system — a float64 array of
``--n`` items (a random walk, rounded to cents) and a table of ``--rows`` rows
(``t``: sorted timestamps, ``price``, ``qty``) — then measures, for each,
the time, the number of S3 requests and the bytes received to

* open the array,
* read it whole,
* read 1,000 random items,
* run a selective query on the table: ``(t >= lo) & (t < hi) & (qty > 900)``
  returning ``price`` (about 0.01% of the rows).  bcolzx runs it with
  ``fetchwhere`` (its per-chunk bounds skip the chunks whose ``t`` cannot
  match); Zarr has no query engine, so its side reads ``t`` and ``qty``,
  computes the mask, and fetches ``price`` at the matches (``vindex``).

All three use the same geometry: chunks of 131,072 rows (bcolzx's default
for these sizes), Blosc LZ4 level 5 with shuffle; Zarr's shards hold 256
chunks, as bcolzx's superchunk objects do.  The bcolzx array is written with
``bcolzx.from_dask`` (one object per task) and is checked, in another
process, to read back exactly.

Requests are counted on the client: every S3 API call s3fs makes
(``S3FileSystem._call_s3``: GET, HEAD, LIST, PUT...) and the bytes of the
objects and ranges it returns (``_cat_file``); bcolzx and Zarr both reach
the store through s3fs.  Times are the best of ``--repeat`` runs (each
open is a new handle with nothing cached).  The machine running this may be
shared: the script prints ``uptime`` before and after.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

CHUNK = 131072
PER_SHARD = 256


class Counter:
    """S3 requests and bytes received, counted inside s3fs (both systems use it)."""

    def __init__(self):
        import s3fs

        self.requests = 0
        self.bytes = 0
        call, cat = s3fs.S3FileSystem._call_s3, s3fs.S3FileSystem._cat_file
        counter = self

        async def _call_s3(fs, method, *args, **kwargs):
            counter.requests += 1
            return await call(fs, method, *args, **kwargs)

        async def _cat_file(fs, path, *args, **kwargs):
            out = await cat(fs, path, *args, **kwargs)
            counter.bytes += len(out)
            return out

        s3fs.S3FileSystem._call_s3 = _call_s3
        s3fs.S3FileSystem._cat_file = _cat_file

    def measure(self, fn, repeat: int):
        """``(best seconds, requests, bytes, result)`` of `fn()` (counts from one run)."""
        best, counts, result = float("inf"), None, None
        for _ in range(repeat):
            r0, b0 = self.requests, self.bytes
            t0 = time.perf_counter()
            result = fn()
            best = min(best, time.perf_counter() - t0)
            counts = (self.requests - r0, self.bytes - b0)
        return best, counts[0], counts[1], result


def _data(n: int) -> np.ndarray:
    rng = np.random.default_rng(42)
    return np.round(100 + np.cumsum(rng.standard_normal(n) * 0.01), 2)


def _table(rows: int) -> dict:
    rng = np.random.default_rng(7)
    return {"t": np.arange(rows, dtype="i8") * 10 + 1_700_000_000_000,
            "price": np.round(100 + np.cumsum(rng.standard_normal(rows) * 0.01), 2),
            "qty": rng.integers(1, 1001, rows)}


def _uptime() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    except OSError:
        return "(uptime unavailable)"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=float, default=1e8, help="items of the array (1e8)")
    ap.add_argument("--rows", type=float, default=1e7, help="rows of the table (1e7)")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    n, rows = int(args.n), int(args.rows)

    import dask.array as da
    import zarr
    from zarr.codecs import BloscCodec

    import bcolzx
    from tests.remote import s3server

    print(f"# {' '.join(['python', *sys.argv])}")
    print(f"# uptime before: {_uptime()}")
    server = s3server.start()
    try:
        so = server.storage_options()
        so.pop("config_kwargs")
        server.make_bucket("bench")
        counter = Counter()
        fs = server.filesystem()
        a = _data(n)
        table = _table(rows)
        idx = np.random.default_rng(3).integers(0, n, 1000)
        lo = table["t"][rows // 2]
        hi = lo + 10 * max(1000, rows // 1000)  # 0.1% of the rows by time, then qty > 900
        want = table["price"][(table["t"] >= lo) & (table["t"] < hi) & (table["qty"] > 900)]

        # -- writing -------------------------------------------------------------------
        t0 = time.perf_counter()
        x = da.from_array(a, chunks=CHUNK * PER_SHARD)
        bcolzx.from_dask(x, "s3://bench/bcolzx/array", storage_options=so, mode="w",
                         chunklen=CHUNK, chunks_per_superchunk=PER_SHARD, scheduler="threads")
        bcolzx.ctable(list(table.values()), names=list(table), rootdir="s3://bench/bcolzx/table",
                      storage_options=so, mode="w", chunklen=CHUNK)
        print(f"# bcolzx written in {time.perf_counter() - t0:.1f} s")
        blosc = BloscCodec(cname="lz4", clevel=5, shuffle="shuffle")
        zstores = {}
        for kind, shards in (("zarr-sharded", (CHUNK * PER_SHARD,)), ("zarr", None)):
            t0 = time.perf_counter()
            url = f"s3://bench/{kind}"
            store = zarr.storage.FsspecStore.from_url(url, storage_options=so)
            root = zarr.open_group(store, mode="w")
            arr = root.create_array("array", shape=a.shape, dtype=a.dtype, chunks=(CHUNK,),
                                    shards=shards, compressors=[blosc])
            arr[:] = a
            for name, col in table.items():
                c = root.create_array(f"table/{name}", shape=col.shape, dtype=col.dtype,
                                      chunks=(CHUNK,), shards=None if shards is None else
                                      (CHUNK * PER_SHARD,), compressors=[blosc])
                c[:] = col
            zstores[kind] = url
            print(f"# {kind} written in {time.perf_counter() - t0:.1f} s")

        # -- the Dask-written array, read back exactly by another process --------------
        check = (f"import sys; sys.path.insert(0, {ROOT!r}); import numpy as np, bcolzx; "
                 f"from benchmarks.bench_remote import _data; "
                 f"r = bcolzx.open('s3://bench/bcolzx/array', storage_options={so!r}, mode='r'); "
                 f"assert len(r) == {n} and np.array_equal(r[:], _data({n})); print('ok')")
        out = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True)
        print(f"# from_dask array of {n:,} items read back exactly by another process: "
              f"{out.stdout.strip() or out.stderr.strip()[-300:]}")

        # -- the measures ----------------------------------------------------------------
        def bc_open():
            return bcolzx.open("s3://bench/bcolzx/array", storage_options=so, mode="r")

        def bc_table():
            return bcolzx.open("s3://bench/bcolzx/table", storage_options=so, mode="r")

        def z_open(kind):
            store = zarr.storage.FsspecStore.from_url(zstores[kind], storage_options=so,
                                                      read_only=True)
            return zarr.open_group(store, mode="r")

        def z_query(g):
            t, q = g["table/t"][:], g["table/qty"][:]
            hits = np.flatnonzero((t >= lo) & (t < hi) & (q > 900))
            return g["table/price"].vindex[hits] if len(hits) else np.empty(0)

        systems = {
            "bcolzx": {
                "open": bc_open,
                "full read": lambda: bc_open()[:],
                "1000 random items": lambda: bc_open()[idx],
                "selective query": lambda: bc_table().fetchwhere(
                    f"(t >= {lo}) & (t < {hi}) & (qty > 900)", outcols=["price"],
                    out_flavor="numpy")["price"],
            },
        }
        for kind in zstores:
            systems[kind] = {
                "open": (lambda k=kind: z_open(k)["array"]),
                "full read": (lambda k=kind: z_open(k)["array"][:]),
                "1000 random items": (lambda k=kind: z_open(k)["array"].vindex[idx]),
                "selective query": (lambda k=kind: z_query(z_open(k))),
            }
        expect = {"full read": a, "1000 random items": a[idx], "selective query": want}
        results: dict = {}
        print("\n| operation | system | seconds | requests | MB received |")
        print("|---|---|---:|---:|---:|")
        for op in ("open", "full read", "1000 random items", "selective query"):
            for name, ops in systems.items():
                secs, reqs, nbytes, got = counter.measure(ops[op], args.repeat)
                if op in expect and not np.array_equal(np.asarray(got), expect[op]):
                    raise AssertionError(f"{name} {op}: wrong result")
                results[(op, name)] = (secs, reqs, nbytes)
                print(f"| {op} | {name} | {secs:.3f} | {reqs} | {nbytes / 1e6:.1f} |")
        print("\nRatios, Zarr v3 sharded / bcolzx (above 1: bcolzx is better):")
        print("| operation | time | requests | bytes |")
        print("|---|---:|---:|---:|")
        for op in ("open", "full read", "1000 random items", "selective query"):
            b, z = results[(op, "bcolzx")], results[(op, "zarr-sharded")]
            print(f"| {op} | {z[0] / b[0]:.2f} | {z[1] / max(b[1], 1):.2f} | "
                  f"{z[2] / max(b[2], 1):.2f} |")
        sizes = {k: sum(fs.du(f"bench/{p}", total=False).values())
                 for k, p in (("bcolzx", "bcolzx"), ("zarr-sharded", "zarr-sharded"),
                              ("zarr", "zarr"))}
        print("\n# stored MB: " + ", ".join(f"{k} {v / 1e6:.0f}" for k, v in sizes.items()))
    finally:
        server.stop()
        print(f"# uptime after: {_uptime()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
