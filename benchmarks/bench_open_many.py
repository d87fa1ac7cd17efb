"""Opening many datasets, each once: what a store of one dataset per security pays.

Usage::

    python benchmarks/bench_open_many.py [--datasets 300] [--rows 10000] [--rounds 3]
        [--systems bcolzx,npy,h5py,tables,schunk,b2nd,bcolz] [--what array,table]

``bcolzx bench``'s ``open`` and ``ct-open`` workloads open one dataset again
and again.  A minute-bar store keeps one table per security, and a backtest
opens thousands of them, each once.  This builds `--datasets` small datasets
per system, each of `--rows` rows (a float64 array, or the bench's 3-column
table), with the bench's adapters at comparable settings (``bcolzx bench``'s
``same`` variant), each one made durable as the bench makes it.  Then it
opens every dataset once (open, length, close) in a shuffled order, one call
timed at a time.  Each round opens every dataset once more, in a new order,
and a system's figure is its best round's median per open.  The systems take
turns within a round, so a drift of the machine's speed falls on all of them.

Prints a table: median µs per open, and anchor time / bcolzx time (above 1:
bcolzx is faster).  ``--json`` writes the records.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import time

import numpy as np

DEFAULT_SYSTEMS = "bcolzx,npy,h5py,tables,schunk,b2nd,bcolz"


def build(systems: dict, what: str, datasets: int, rows: int, where: str) -> dict:
    """Build `datasets` datasets of kind `what` for every system in `where`:
    ``{key: [path, ...]}``."""
    from bcolzx.bench import data as D  # noqa: N812
    from bcolzx.bench.adapter import sync_tree

    paths: dict[str, list[str]] = {}
    for key, s in systems.items():
        top = os.path.join(where, f"{what}-{key}")
        os.makedirs(top)
        paths[key] = []
        for i in range(datasets):
            path = os.path.join(top, f"d{i:05d}" + (s.suffix if what == "array" else ""))
            with s.active():
                if what == "array":
                    s.build_disk(np.arange(i, i + rows, dtype=np.float64), path)
                else:
                    s.ct_build(D.make_table(rows, seed=i), path)
            if not s.self_durable:
                sync_tree(path)
            paths[key].append(path)
    return paths


def time_opens(s, what: str, paths: list[str], rows: int, rng: random.Random) -> float:
    """Median µs of opening each of `paths` once, in a shuffled order."""
    opener, length, closer = (s.open, s.length, s.close) if what == "array" else \
        (s.ct_open, s.ct_length, s.ct_close)
    order = paths[:]
    rng.shuffle(order)
    pc = time.perf_counter_ns
    times = []
    with s.active():
        for path in order:
            t0 = pc()
            h = opener(path)
            n = length(h)
            closer(h)
            times.append(pc() - t0)
            if n != rows:
                raise AssertionError(f"{s.key}: {path} has {n} rows, not {rows}")
    return statistics.median(times) / 1e3


def run(systems_arg: str, what_arg: str, datasets: int, rows: int, rounds: int,
        seed: int = 0) -> list[dict]:
    """Build, open, and return one record per system and kind."""
    from bcolzx.bench.systems import SYSTEMS

    records = []
    rng = random.Random(seed)
    for what in what_arg.split(","):
        if what not in ("array", "table"):
            raise SystemExit(f"--what: 'array' or 'table', not {what!r}")
        workload = "open" if what == "array" else "ct-open"
        systems = {}
        for key in systems_arg.split(","):
            if key not in SYSTEMS:
                raise SystemExit(f"unknown system {key!r} (known: {', '.join(SYSTEMS)})")
            ok, why = SYSTEMS[key].available()
            if not ok:
                print(f"# {key} skipped: {why}", file=sys.stderr)
                continue
            s = SYSTEMS[key]("same", 2)
            if s.supports(workload):
                systems[key] = s
        where = tempfile.mkdtemp(prefix="bcolzx-open-many-")
        try:
            t0 = time.perf_counter()
            paths = build(systems, what, datasets, rows, where)
            built = time.perf_counter() - t0
            best: dict[str, float] = {}
            enabled = gc.isenabled()
            gc.disable()
            try:
                for _ in range(rounds):
                    keys = list(systems)
                    rng.shuffle(keys)  # the systems take turns, in a new order each round
                    for key in keys:
                        us = time_opens(systems[key], what, paths[key], rows, rng)
                        best[key] = min(best.get(key, us), us)
            finally:
                if enabled:
                    gc.enable()
            for key, s in systems.items():
                records.append({"what": what, "system": key, "version": s.version(),
                                "datasets": datasets, "rows": rows, "rounds": rounds,
                                "median_us": best[key], "build_seconds": built})
        finally:
            shutil.rmtree(where, ignore_errors=True)
    return records


def report(records: list[dict]) -> str:
    lines = []
    for what in dict.fromkeys(r["what"] for r in records):
        rs = [r for r in records if r["what"] == what]
        ours = next((r["median_us"] for r in rs if r["system"] == "bcolzx"), None)
        r0 = rs[0]
        lines.append(f"\n{what}s: {r0['datasets']} datasets of {r0['rows']:,} rows, each opened "
                     f"once per round (open, length, close), best of {r0['rounds']} rounds")
        lines.append(f"{'system':<10} {'version':<12} {'median µs':>10} {'anchor/bcolzx':>14}")
        for r in rs:
            ratio = "" if ours is None or r["system"] == "bcolzx" else \
                f"{r['median_us'] / ours:.2f}x"
            lines.append(f"{r['system']:<10} {r['version'][:12]:<12} {r['median_us']:>10.1f} "
                         f"{ratio:>14}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--datasets", type=int, default=300, help="datasets per system (300)")
    p.add_argument("--rows", type=int, default=10_000, help="rows of each dataset (10,000)")
    p.add_argument("--rounds", type=int, default=3, help="rounds of opening them all (3)")
    p.add_argument("--systems", default=DEFAULT_SYSTEMS, help=f"({DEFAULT_SYSTEMS})")
    p.add_argument("--what", default="array,table", help="array, table or both (both)")
    p.add_argument("--json", help="also write the records to this file")
    args = p.parse_args(argv)
    if args.datasets < 1 or args.rows < 1 or args.rounds < 1:
        p.error("--datasets, --rows and --rounds must be >= 1")
    records = run(args.systems, args.what, args.datasets, args.rows, args.rounds)
    print(report(records))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(records, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
