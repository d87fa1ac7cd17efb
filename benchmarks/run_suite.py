#!/usr/bin/env python
"""The full benchmark suite, as published in docs/benchmarks (a thin wrapper of ``bcolzx bench``).

The suite itself is the installed ``bcolzx.bench`` package; this script only
picks the documented settings and output files::

    python benchmarks/run_suite.py --out docs/benchmarks

runs ``bcolzx bench --full`` (sizes 1e6, 1e7 and 1e8; comparable settings and
each system's defaults; peak memory of every workload in a child process;
1 vs 2 threads) and writes ``results.json``, ``tables.md`` and the PNG plots
into ``--out``. ``--huge`` adds 1e9 items (8 GB an array: about 30 GB of
memory and several hours). Any other option goes to ``bcolzx bench``, e.g.
``--systems bcolzx,h5py`` or ``--size 1e7``. Run it from outside the source
tree, or with the package installed, so that the installed (compiled) bcolzx
is imported.
"""

import argparse
import os
import sys


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], add_help=True)
    p.add_argument("--out", default="bench-results",
                   help="directory of results.json, tables.md and the plots")
    p.add_argument("--huge", action="store_true", help="add 1e9 items (the largest size)")
    args, rest = p.parse_known_args(argv)
    from bcolzx.bench.cli import main as bench

    os.makedirs(args.out, exist_ok=True)
    cmd = ["--full", "--json", os.path.join(args.out, "results.json"),
           "--markdown", os.path.join(args.out, "tables.md"), "--plot", args.out]
    if args.huge and "--size" not in rest:
        cmd += ["--size", "1e6,1e7,1e8,1e9"]
    return bench(cmd + rest)


if __name__ == "__main__":
    sys.exit(main())
