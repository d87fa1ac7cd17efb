"""Throughput of the bcolzx checksum kernels, next to zlib's for comparison.

Usage::

    python benchmarks/bench_checksum.py [--size MB] [--repeat N]

Prints GB/s (10**9 bytes per second), best of N runs, for each function over
one random buffer of the given size.
"""

from __future__ import annotations

import argparse
import time
import zlib

import numpy as np

from bcolzx._ext import checksum


def best_seconds(func, data, repeat: int) -> float:
    """Return the shortest wall time of `repeat` calls of ``func(data)``."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        func(data)
        best = min(best, time.perf_counter() - start)
    return best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=float, default=256, help="buffer size in MB (2**20 bytes), default 256")
    parser.add_argument("--repeat", type=int, default=5, help="runs per function, best is kept; default 5")
    parser.add_argument("--seed", type=int, default=0, help="random seed for the buffer")
    args = parser.parse_args(argv)
    if args.size <= 0 or args.repeat < 1:
        parser.error("--size must be > 0 and --repeat >= 1")

    nbytes = int(args.size * 2**20)
    data = np.random.default_rng(args.seed).integers(0, 256, nbytes, dtype=np.uint8).tobytes()

    candidates = []
    if checksum.HAVE_HARDWARE_CRC32C:
        candidates.append(("crc32c hardware (bcolzx)", checksum.crc32c_hardware))
    candidates += [
        ("crc32c portable (bcolzx)", checksum.crc32c_portable),
        ("adler32 (bcolzx)", checksum.adler32),
        ("zlib.crc32", zlib.crc32),
        ("zlib.adler32", zlib.adler32),
    ]

    print(f"buffer: {nbytes / 2**20:g} MiB random bytes, best of {args.repeat}")
    if not checksum.HAVE_HARDWARE_CRC32C:
        print("crc32c hardware: unavailable (no SSE4.2 crc32 instruction)")
    for name, func in candidates:
        func(data[: 1 << 16])  # warm up
        seconds = best_seconds(func, data, args.repeat)
        print(f"{name:<26} {nbytes / seconds / 1e9:8.2f} GB/s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
