"""Instructions an open costs, counted by valgrind: a measure of opening that the
speed of a shared machine does not move.

Usage::

    python benchmarks/open_instructions.py [--n 1001] [--what carray,ctable]
                                           [--pythonpath OTHER_CHECKOUT]

Opening a dataset takes tens of microseconds, and a VM's speed drifts by more
than the changes worth measuring (docs/benchmarks/README.md).  This script
counts what an open executes instead: it builds a 1e6-item float64 carray and
a 3-column ctable, then runs a child Python that opens one `n` times (open,
``len``, close) and another that opens it once, both under ``valgrind
--tool=callgrind``, and prints the difference per open.  The count is of user
space instructions (the interpreter, NumPy, bcolzx's C): the system calls'
time in the kernel is not in it (an open makes ten, measured by ``strace``).
It is the same from one run to the next (hash randomization and BLAS threads
are switched off), so two checkouts compare exactly: ``--pythonpath`` makes
the children import bcolzx from another tree (the datasets are built by this
one, so both read the same files).

Needs valgrind (``apt install valgrind``); about 20 s per dataset kind at the
default `n`.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np

#: What each child runs: open the dataset at argv[1], argv[2] times.
CHILD = """
import sys
import bcolzx
path, n = sys.argv[1], int(sys.argv[2])
for _ in range(n):
    h = bcolzx.open(path, mode="r")
    len(h)
    h.close()
"""


def build(where: str) -> dict[str, str]:
    """The datasets measured, built in `where`: {kind: path}."""
    import bcolzx

    paths = {"carray": os.path.join(where, "carray"), "ctable": os.path.join(where, "ctable")}
    bcolzx.carray(np.linspace(0, 1, 1_000_000), rootdir=paths["carray"], mode="w").flush()
    rng = np.random.default_rng(0)
    cols = [np.arange(100_000), rng.random(100_000), rng.integers(0, 100, 100_000, np.int32)]
    bcolzx.ctable(cols, names=["f0", "f1", "f2"], rootdir=paths["ctable"], mode="w").flush()
    return paths


def instructions(path: str, n: int, pythonpath: str | None) -> int:
    """Instructions of a child that opens `path` `n` times (and starts and exits)."""
    env = dict(os.environ, PYTHONHASHSEED="0", OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1",
               MKL_NUM_THREADS="1")
    if pythonpath is not None:
        env["PYTHONPATH"] = pythonpath
    with tempfile.TemporaryDirectory() as tmp:  # also its directory: no source tree on its path
        out = subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={tmp}/out",
             sys.executable, "-c", CHILD, path, str(n)],
            env=env, cwd=tmp, capture_output=True, text=True, check=False)
    found = re.search(r"Collected : (\d+)", out.stderr)
    if out.returncode or found is None:
        raise RuntimeError(f"valgrind failed (exit {out.returncode}): {out.stderr[-2000:]}")
    return int(found.group(1))


def per_open(path: str, n: int, pythonpath: str | None) -> float:
    """Instructions of one open of `path`: the children's difference over `n` - 1 opens."""
    return (instructions(path, n, pythonpath) - instructions(path, 1, pythonpath)) / (n - 1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1001, help="opens in the long child (default 1001)")
    parser.add_argument("--what", default="carray,ctable", help="carray, ctable or both (default)")
    parser.add_argument("--pythonpath", default=None,
                        help="import bcolzx from this tree in the children (another checkout)")
    args = parser.parse_args(argv)
    kinds = [k.strip() for k in args.what.split(",") if k.strip()]
    if args.n < 2 or not kinds or set(kinds) - {"carray", "ctable"}:
        parser.error("--n must be >= 2 and --what a list of carray, ctable")
    if shutil.which("valgrind") is None:
        print("valgrind is not installed (apt install valgrind): nothing to count with",
              file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as where:
        paths = build(where)
        for kind in kinds:
            count = per_open(paths[kind], args.n, args.pythonpath)
            print(f"{kind} open (open, len, close): {count:,.0f} instructions")
    return 0


if __name__ == "__main__":
    sys.exit(main())
