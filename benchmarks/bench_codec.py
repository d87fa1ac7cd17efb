"""Chunk codec throughput of bcolzx next to python-blosc2, at equal settings.

Usage::

    python benchmarks/bench_codec.py [--chunk-mb MB [MB ...]] [--repeat N]
                                     [--codecs lz4,zstd,blosclz] [--json PATH]

For three kinds of data (smooth ``np.linspace`` float64, ``np.arange`` int64,
``rng.random`` float64), every codec (clevel 5, byte SHUFFLE, typesize 8) and
every chunk size, it times:

1. compression of one chunk: ``bcolzx Compressor.compress`` vs
   ``blosc2.compress2``;
2. decompression of one chunk into a preallocated NumPy array:
   ``Decompressor.decompress(chunk, out)`` vs ``blosc2.decompress2(chunk, dst=out)``;
3. decompression of one chunk into a new bytes object:
   ``Decompressor.decompress(chunk)`` vs ``blosc2.decompress2(chunk)``;
4. decompression of ~256 MiB split into chunks of that size, into one
   preallocated output: ``Decompressor(1).decompress_many`` vs
   ``Decompressor(2).decompress_many`` (and, for reference, a loop of
   ``blosc2.decompress2(chunk, dst=slice, nthreads=2)``).

Both libraries run single-threaded in 1-3 (``nthreads=1`` on both sides) and
with identical C-Blosc2 parameters, so the chunks they produce are byte for
byte the same (checked).  The systems are interleaved inside every repetition
and the best of N is kept; an operation faster than ``--min-time`` is looped
inside one timing.  Throughput is uncompressed bytes per second, in MB/s
(10**6 bytes/s); sizes given on the command line are MiB (2**20 bytes).
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import math
import os
import platform
import sys
import threading
import time

# NumPy's OpenBLAS starts a spinning helper thread per core at import; on a
# small machine it competes with the threads measured here.  Nothing below
# uses BLAS.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

try:
    import blosc2  # noqa: E402
except ImportError:  # pragma: no cover - the benchmark needs the comparison
    sys.exit("bench_codec.py needs python-blosc2: pip install .[bench]")

from bcolzx._ext import codec  # noqa: E402

CLEVEL = 5
TYPESIZE = 8
MiB = 2**20

B2_CODECS = {"blosclz": blosc2.Codec.BLOSCLZ, "lz4": blosc2.Codec.LZ4,
             "lz4hc": blosc2.Codec.LZ4HC, "zlib": blosc2.Codec.ZLIB, "zstd": blosc2.Codec.ZSTD}


def make_data(shape: str, nitems: int, seed: int) -> np.ndarray:
    if shape == "smooth":
        return np.linspace(0.0, 100.0, nitems, dtype=np.float64)
    if shape == "arange":
        return np.arange(nitems, dtype=np.int64)
    if shape == "random":
        return np.random.default_rng(seed).random(nitems, dtype=np.float64)
    raise ValueError(shape)


def blosc2_cparams(cname: str) -> dict:
    """python-blosc2 keyword arguments equal to ``Compressor(cname, 5, SHUFFLE, 8, 0, 1)``.

    The filter goes in the last of the six slots, where C-Blosc2's defaults
    (and bcolzx) put it, and the split mode is C-Blosc2's default
    (python-blosc2 otherwise uses AUTO_SPLIT), so the chunks are identical.
    """
    return {
        "codec": B2_CODECS[cname],
        "clevel": CLEVEL,
        "typesize": TYPESIZE,
        "nthreads": 1,
        "blocksize": 0,
        "splitmode": blosc2.SplitMode.FORWARD_COMPAT_SPLIT,
        "filters": [blosc2.Filter.NOFILTER] * 5 + [blosc2.Filter.SHUFFLE],
        "filters_meta": [0] * 6,
    }


def _run(op, inner: int) -> float:
    start = time.perf_counter()
    for _ in range(inner):
        op()
    return time.perf_counter() - start


def compare(ops: dict, repeat: int, min_time: float) -> dict:
    """Best per-call seconds of each op, interleaved, looped to last >= min_time.

    Every op runs the same number of calls per timing, chosen from the
    fastest op so that each timing lasts at least `min_time`.
    """
    single = {}
    for name, op in ops.items():  # warm up, then calibrate
        op()
        single[name] = min(_run(op, 1) for _ in range(3))
    inner = max(1, math.ceil(min_time / max(min(single.values()), 1e-9)))
    best = {name: float("inf") for name in ops}
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        for r in range(repeat):
            # Alternate the order so neither system always runs first.
            names = list(ops) if r % 2 == 0 else list(reversed(ops))
            for name in names:
                best[name] = min(best[name], _run(ops[name], inner) / inner)
    finally:
        if gc_was_enabled:
            gc.enable()
    return best


def mbps(nbytes: int, seconds: float) -> float:
    return nbytes / seconds / 1e6


def geomean(values) -> float:
    values = list(values)
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def single_chunk_case(shape, cname, src, repeat, min_time, records, rows):
    nbytes = src.nbytes
    comp = codec.Compressor(cname, CLEVEL, codec.SHUFFLE, TYPESIZE, 0, 1)
    dec = codec.Decompressor(1)
    kw = blosc2_cparams(cname)

    # --- correctness, once per case
    chunk = comp.compress(src)
    chunk_b2 = blosc2.compress2(src, **kw)
    identical = chunk == chunk_b2
    out = np.empty_like(src)
    dec.decompress(chunk, out)
    assert np.array_equal(out, src), "bcolzx decompress(chunk, out) differs"
    out2 = np.zeros_like(src)
    blosc2.decompress2(chunk_b2, dst=out2, nthreads=1)
    assert np.array_equal(out2, src), "blosc2.decompress2(chunk, dst) differs"
    assert dec.decompress(chunk) == src.tobytes(), "bcolzx decompress(chunk) differs"
    assert blosc2.decompress2(chunk, nthreads=1) == src.tobytes(), "blosc2 reads bcolzx chunk wrong"
    assert dec.decompress(chunk_b2) == src.tobytes(), "bcolzx reads blosc2 chunk wrong"
    cratio = nbytes / len(chunk)

    tests = {
        "compress": {
            "bcolzx": lambda: comp.compress(src),
            "blosc2": lambda: blosc2.compress2(src, **kw),
        },
        "decompress->out": {
            "bcolzx": lambda: dec.decompress(chunk, out),
            "blosc2": lambda: blosc2.decompress2(chunk, dst=out2, nthreads=1),
        },
        "decompress->bytes": {
            "bcolzx": lambda: dec.decompress(chunk),
            "blosc2": lambda: blosc2.decompress2(chunk, nthreads=1),
        },
    }
    for op, ops in tests.items():
        best = compare(ops, repeat, min_time)
        rec = {
            "section": "single", "shape": shape, "codec": cname, "chunk_bytes": nbytes,
            "cratio": cratio, "identical_chunks": identical, "op": op,
            "bcolzx_s": best["bcolzx"], "blosc2_s": best["blosc2"],
            "bcolzx_MBps": mbps(nbytes, best["bcolzx"]), "blosc2_MBps": mbps(nbytes, best["blosc2"]),
            "ratio": best["blosc2"] / best["bcolzx"],
        }
        records.append(rec)
        rows.append(rec)
        print(f"{shape:<7} {cname:<8} {nbytes / MiB:>5g} {cratio:>7.2f} {'=' if identical else '!':>2} "
              f"{op:<18} {rec['bcolzx_MBps']:>10.0f} {rec['blosc2_MBps']:>10.0f} {rec['ratio']:>7.3f}",
              flush=True)


def many_chunk_case(shape, cname, data, chunk_bytes, repeat, min_time, records):
    comp = codec.Compressor(cname, CLEVEL, codec.SHUFFLE, TYPESIZE, 0, 1)
    raw = data.view(np.uint8)
    nchunks = max(1, raw.nbytes // chunk_bytes)
    total = nchunks * chunk_bytes
    chunks = [comp.compress(raw[i * chunk_bytes:(i + 1) * chunk_bytes]) for i in range(nchunks)]
    out = np.zeros(total, dtype=np.uint8)  # preallocated and already faulted in
    slices = [out[i * chunk_bytes:(i + 1) * chunk_bytes] for i in range(nchunks)]
    dec1, dec2 = codec.Decompressor(1), codec.Decompressor(2)

    def blosc2_loop():
        for ch, sl in zip(chunks, slices):
            blosc2.decompress2(ch, dst=sl, nthreads=2)

    ops = {
        "many1": lambda: dec1.decompress_many(chunks, out),
        "many2": lambda: dec2.decompress_many(chunks, out),
        "b2loop2": blosc2_loop,
    }
    for name, op in ops.items():  # correctness, once per case
        out[:] = 0
        op()
        assert np.array_equal(out, raw[:total]), f"{name} output differs"
    best = compare(ops, repeat, min_time)
    rec = {
        "section": "many", "shape": shape, "codec": cname, "chunk_bytes": chunk_bytes,
        "nchunks": nchunks, "total_bytes": total,
        "cratio": total / sum(len(c) for c in chunks),
        **{f"{k}_s": v for k, v in best.items()},
        **{f"{k}_MBps": mbps(total, v) for k, v in best.items()},
        "speedup_2v1": best["many1"] / best["many2"],
        "b2loop2_vs_many1": best["many1"] / best["b2loop2"],
        "many2_vs_b2loop2": best["b2loop2"] / best["many2"],
    }
    records.append(rec)
    print(f"{shape:<7} {cname:<8} {chunk_bytes / MiB:>5g} {nchunks:>6} {rec['cratio']:>7.2f} "
          f"{rec['many1_MBps']:>10.0f} {rec['many2_MBps']:>10.0f} {rec['speedup_2v1']:>7.2f}x "
          f"{rec['b2loop2_MBps']:>10.0f} {rec['many2_vs_b2loop2']:>8.2f}", flush=True)
    return rec


def machine_scaling(repeat: int) -> dict:
    """How much 2 threads gain on this machine, for pure compute and for memory traffic.

    A yardstick for the decompress_many speedup: sha256 of two 8 MiB buffers
    (CPU-bound, releases the GIL) and NumPy copies of two 64 MiB arrays
    (memory-bandwidth-bound), one after another vs on two threads.
    """
    rng = np.random.default_rng(1)
    hbufs = [rng.integers(0, 256, 8 * MiB, dtype=np.uint8).tobytes() for _ in range(2)]
    srcs = [np.ones(8 * MiB) for _ in range(2)]
    dsts = [np.zeros(8 * MiB) for _ in range(2)]

    def on_threads(jobs):
        def run():
            threads = [threading.Thread(target=job) for job in jobs]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        return run

    def in_turn(jobs):
        def run():
            for job in jobs:
                job()
        return run

    sha = [lambda b=b: hashlib.sha256(b).digest() for b in hbufs]
    copy = [lambda s=s, d=d: np.copyto(d, s) for s, d in zip(srcs, dsts)]
    best = compare({"sha1": in_turn(sha), "sha2": on_threads(sha),
                    "copy1": in_turn(copy), "copy2": on_threads(copy)}, repeat, 0.0)
    return {"sha256_speedup": best["sha1"] / best["sha2"],
            "memcpy_speedup": best["copy1"] / best["copy2"],
            "memcpy_1thread_MBps": mbps(2 * srcs[0].nbytes, best["copy1"])}


def overhead_case(repeat, records):
    """Per-call cost on a tiny (1 KiB) chunk, where the Python layer dominates."""
    src = np.arange(128, dtype=np.int64)
    comp = codec.Compressor("lz4", CLEVEL, codec.SHUFFLE, TYPESIZE, 0, 1)
    dec = codec.Decompressor(1)
    kw = blosc2_cparams("lz4")
    chunk = comp.compress(src)
    out = np.empty_like(src)
    tests = {
        "compress": {"bcolzx": lambda: comp.compress(src), "blosc2": lambda: blosc2.compress2(src, **kw)},
        "decompress->out": {"bcolzx": lambda: dec.decompress(chunk, out),
                            "blosc2": lambda: blosc2.decompress2(chunk, dst=out, nthreads=1)},
        "decompress->bytes": {"bcolzx": lambda: dec.decompress(chunk),
                              "blosc2": lambda: blosc2.decompress2(chunk, nthreads=1)},
    }
    print("\nper-call cost, 1 KiB lz4 chunk (us per call; lower is better)")
    print(f"{'op':<18} {'bcolzx':>8} {'blosc2':>8}")
    for op, ops in tests.items():
        best = compare(ops, repeat, 0.05)
        records.append({"section": "overhead", "op": op, "bcolzx_s": best["bcolzx"],
                        "blosc2_s": best["blosc2"]})
        print(f"{op:<18} {best['bcolzx'] * 1e6:>8.2f} {best['blosc2'] * 1e6:>8.2f}")

    # decompress_many starts its extra threads on every call: its fixed cost.
    raw = np.random.default_rng(2).random(2 * 64 * 1024 // 8).view(np.uint8)
    half = raw.nbytes // 2
    chunks = [comp.compress(raw[:half]), comp.compress(raw[half:])]
    out = np.empty_like(raw)
    dec1, dec2 = codec.Decompressor(1), codec.Decompressor(2)
    best = compare({"many1": lambda: dec1.decompress_many(chunks, out),
                    "many2": lambda: dec2.decompress_many(chunks, out)}, repeat, 0.05)
    records.append({"section": "overhead", "op": "decompress_many 2x64KiB",
                    "many1_s": best["many1"], "many2_s": best["many2"]})
    print(f"decompress_many, 2 chunks of 64 KiB: {best['many1'] * 1e6:.1f} us on 1 thread, "
          f"{best['many2'] * 1e6:.1f} us on 2 (thread start-up per call)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunk-mb", type=float, nargs="+", default=[1, 4],
                        help="chunk sizes in MiB (2**20 bytes); default 1 4")
    parser.add_argument("--repeat", type=int, default=7, help="timings per op, best is kept; default 7")
    parser.add_argument("--codecs", default="lz4,zstd,blosclz",
                        help="comma-separated codecs; default lz4,zstd,blosclz")
    parser.add_argument("--shapes", default="smooth,arange,random",
                        help="comma-separated data kinds; default smooth,arange,random")
    parser.add_argument("--many-mb", type=float, default=256,
                        help="MiB of data for the many-chunk test; default 256 (0 skips it)")
    parser.add_argument("--min-time", type=float, default=0.02,
                        help="seconds a timing lasts at least (fast ops are looped); default 0.02")
    parser.add_argument("--no-overhead", action="store_true", help="skip the per-call cost table")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random data")
    parser.add_argument("--json", metavar="PATH", help="also write every result to this JSON file")
    args = parser.parse_args(argv)
    codecs = [c.strip() for c in args.codecs.split(",") if c.strip()]
    shapes = [s.strip() for s in args.shapes.split(",") if s.strip()]
    unknown = [c for c in codecs if c not in codec.CODECS or c not in B2_CODECS]
    if unknown:
        parser.error(f"unknown codecs {unknown}; choose from {sorted(codec.CODECS)}")
    if [s for s in shapes if s not in ("smooth", "arange", "random")]:
        parser.error("shapes are smooth, arange, random")
    if args.repeat < 1 or any(mb <= 0 for mb in args.chunk_mb) or args.many_mb < 0:
        parser.error("--repeat must be >= 1, --chunk-mb > 0 and --many-mb >= 0")

    blosc2.set_nthreads(1)  # the global default too, not only the per-call kwargs
    chunk_sizes = [int(mb * MiB) // TYPESIZE * TYPESIZE for mb in args.chunk_mb]
    many_bytes = int(args.many_mb * MiB) // TYPESIZE * TYPESIZE
    max_bytes = max([many_bytes] + chunk_sizes)

    print(f"bcolzx codec: C-Blosc2 {codec.blosc2_version()} ({codec.LINKAGE}); "
          f"python-blosc2 {blosc2.__version__}, C-Blosc2 {blosc2.VERSION_STRING}")
    print(f"python {platform.python_version()}, numpy {np.__version__}, {platform.machine()}, "
          f"clevel {CLEVEL}, SHUFFLE, typesize {TYPESIZE}, best of {args.repeat}, "
          f"timings >= {args.min_time * 1e3:g} ms")
    print("MB/s = 10**6 uncompressed bytes per second; chunk sizes in MiB; "
          "ratio = bcolzx speed / blosc2 speed (> 1: bcolzx faster); "
          "'=' chunks byte-identical, '!' not")

    records: list[dict] = []
    single_rows: list[dict] = []
    many_rows: list[dict] = []
    datasets = {}
    print(f"\n{'shape':<7} {'codec':<8} {'MiB':>5} {'cratio':>7} {'':>2} {'op':<18} "
          f"{'bcolzx':>10} {'blosc2':>10} {'ratio':>7}")
    for shape in shapes:
        data = make_data(shape, max_bytes // TYPESIZE, args.seed)
        datasets[shape] = data
        for cname in codecs:
            for size in chunk_sizes:
                src = np.ascontiguousarray(data[: size // TYPESIZE])
                single_chunk_case(shape, cname, src, args.repeat, args.min_time, records, single_rows)

    if many_bytes:
        scaling = machine_scaling(max(args.repeat, 15))
        records.append({"section": "machine", **scaling})
        print(f"\nmachine check, 2 threads vs 1: sha256 (CPU-bound) {scaling['sha256_speedup']:.2f}x, "
              f"memory copy (bandwidth-bound, {scaling['memcpy_1thread_MBps']:.0f} MB/s on 1 thread) "
              f"{scaling['memcpy_speedup']:.2f}x")
        print(f"many chunks: {many_bytes / MiB:g} MiB per case into one preallocated output (MB/s)")
        print(f"{'shape':<7} {'codec':<8} {'MiB':>5} {'chunks':>6} {'cratio':>7} "
              f"{'many(1)':>10} {'many(2)':>10} {'2 vs 1':>8} {'b2 loop nt=2':>10} {'many(2)/b2':>8}")
        for shape in shapes:
            data = datasets[shape][: many_bytes // TYPESIZE]
            for cname in codecs:
                for size in chunk_sizes:
                    if size > many_bytes:
                        continue
                    many_rows.append(many_chunk_case(shape, cname, data, size, args.repeat,
                                                     args.min_time, records))
    datasets.clear()

    if not args.no_overhead:
        overhead_case(args.repeat, records)

    print("\nsummary (geometric means; ratio = bcolzx speed / blosc2 speed)")
    summary = {}
    for op in ("compress", "decompress->out", "decompress->bytes"):
        ratios = [r["ratio"] for r in single_rows if r["op"] == op]
        summary[op] = geomean(ratios)
        print(f"  {op:<18} {summary[op]:.3f}  (min {min(ratios):.3f}, max {max(ratios):.3f})")
    dec_ratios = [r["ratio"] for r in single_rows if r["op"] != "compress"]
    summary["decompress"] = geomean(dec_ratios)
    if many_rows:
        sp = [r["speedup_2v1"] for r in many_rows]
        summary["speedup_2v1"] = geomean(sp)
        summary["many2_vs_b2loop2"] = geomean(r["many2_vs_b2loop2"] for r in many_rows)
        print(f"  decompress_many 2 threads vs 1: {summary['speedup_2v1']:.2f}x "
              f"(min {min(sp):.2f}, max {max(sp):.2f}); vs blosc2 loop nthreads=2: "
              f"{summary['many2_vs_b2loop2']:.2f}x")
    line = (f"SUMMARY bcolzx/blosc2 compress {summary['compress']:.3f}, "
            f"decompress {summary['decompress']:.3f}")
    if many_rows:
        line += f", decompress_many 2-thread speedup {summary['speedup_2v1']:.2f}x"
    print(line)

    if args.json:
        meta = {"bcolzx_blosc2": codec.blosc2_version(), "python_blosc2": blosc2.__version__,
                "blosc2_c": blosc2.VERSION_STRING, "python": platform.python_version(),
                "numpy": np.__version__, "machine": platform.machine(), "repeat": args.repeat,
                "min_time": args.min_time, "clevel": CLEVEL, "typesize": TYPESIZE}
        with open(args.json, "w") as fh:
            json.dump({"meta": meta, "summary": summary, "results": records}, fh, indent=1)
        print(f"results written to {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
