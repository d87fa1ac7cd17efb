#!/usr/bin/env python
"""``c.max()`` of a large on-disk carray, answered from its zone maps (issue 23).

Builds (once, kept with ``--dir``) an on-disk float64 carray of ``--n`` items
(default 1e9, 8 GB of items; smooth data, so a few hundred MB on disk) by
appends, with its largest value planted a third of the way in and its smallest
two thirds in. Then, ``--runs`` times, a fresh Python process opens it in mode
'r' and times ``c.max()`` and ``c.min()`` (each the first call on the object:
nothing cached in the process) and, for scale, reading one chunk's items.
With ``--drop-caches`` (root on Linux) the kernel's page cache is dropped
before each process, so the metadata comes from the disk: a cold start.

Every answer is checked against the planted values. Run from outside the
source tree, so that the installed bcolzx is imported::

    cd /tmp && python /path/to/benchmarks/bench_zonemap_max.py --n 1e9 --drop-caches
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

BLOCK = 1 << 23
TOP, BOTTOM = 1e15, -1e15

_CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
import bcolzx
t1 = time.perf_counter()
c = bcolzx.open(sys.argv[1], mode="r")
t2 = time.perf_counter()
hi = c.max()
t3 = time.perf_counter()
lo = c.min()
t4 = time.perf_counter()
row = c[len(c) // 2: len(c) // 2 + c.chunklen]
t5 = time.perf_counter()
print(json.dumps({"import": t1 - t0, "open": t2 - t1, "max": t3 - t2, "min": t4 - t3,
                  "one_chunk": t5 - t4, "hi": float(hi), "lo": float(lo),
                  "nchunks": int(c.nchunks), "rows": len(row)}))
"""


def build(path: str, n: int) -> None:
    import bcolzx

    c = bcolzx.zeros(0, dtype="f8", rootdir=path, mode="w")
    top, bottom = n // 3, 2 * n // 3
    for start in range(0, n, BLOCK):
        stop = min(start + BLOCK, n)
        block = np.arange(start, stop, dtype="f8") * 1e-3
        for at, value in ((top, TOP), (bottom, BOTTOM)):
            if start <= at < stop:
                block[at - start] = value
        c.append(block)
    c.flush()


def drop_caches() -> bool:
    try:
        os.sync()
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        return True
    except OSError:
        return False


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=float, default=1e9, help="items (default 1e9)")
    p.add_argument("--runs", type=int, default=7, help="fresh processes (default 7)")
    p.add_argument("--dir", default=None, help="keep the array here (built if absent)")
    p.add_argument("--drop-caches", action="store_true",
                   help="drop the page cache before each process (root, Linux)")
    p.add_argument("--json", default=None, help="write the measurements to this file")
    args = p.parse_args(argv)
    n = int(args.n)
    work = args.dir or tempfile.mkdtemp(prefix="bcolzx-zmax-")
    path = os.path.join(work, f"max-{n}")
    try:
        if not os.path.isdir(path):
            t = time.perf_counter()
            build(path, n)
            print(f"built {n:,} items in {time.perf_counter() - t:.1f} s at {path}")
        runs, dropped = [], False
        for _ in range(args.runs):
            if args.drop_caches:
                dropped = drop_caches()
            out = subprocess.run([sys.executable, "-c", _CHILD, path], check=True,
                                 capture_output=True, text=True).stdout
            r = json.loads(out)
            if r["hi"] != TOP or r["lo"] != BOTTOM:
                raise SystemExit(f"wrong answer: max {r['hi']}, min {r['lo']}")
            runs.append(r)
        med = {k: float(np.median([r[k] for r in runs]))
               for k in ("import", "open", "max", "min", "one_chunk")}
        print(f"{n:,} float64 items, {runs[0]['nchunks']:,} chunks; {len(runs)} fresh "
              f"processes, page cache {'dropped' if dropped else 'kept'} before each")
        for k, v in med.items():
            print(f"  {k:<10} median {v * 1e3:8.2f} ms  (best {min(r[k] for r in runs) * 1e3:.2f})")
        print(f"  reading one chunk takes {med['one_chunk'] / med['max']:.2f}x the time of "
              "the first max()")
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"n": n, "dropped_caches": dropped, "runs": runs, "median": med}, f,
                          indent=1)
    finally:
        if args.dir is None:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
