"""``bcolzx demo``: compress, persist, reopen and read back built-in data."""

from __future__ import annotations

import argparse
import sys

__all__ = ["register", "run"]


def _count(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, not {value}")
    return value


def register(sub) -> None:
    """Add ``demo`` to the subcommands."""
    p = sub.add_parser("demo", help="compress, persist, reopen and read back built-in data")
    p.add_argument("--rows", type=_count, default=5_000_000, help="rows of built-in data")
    p.add_argument("--cname", default="lz4", help="codec (default lz4)")
    p.add_argument("--clevel", type=int, default=5, choices=range(10), metavar="0-9")
    p.add_argument("--nthreads", type=int, default=2, help="decompression threads")
    p.add_argument("--dir", default=None, help="write here instead of a temporary directory")
    p.set_defaults(run=run, subparser=p)


def run(args: argparse.Namespace) -> int:
    """Run ``bcolzx demo``; 1 when the demo fails (its own message on stderr)."""
    from bcolzx import demo
    from bcolzx.errors import BcolzxError

    try:
        demo.run(args.rows, args.cname, args.clevel, args.nthreads, rootdir=args.dir)
    except (BcolzxError, ValueError, TypeError) as exc:
        print(f"bcolzx demo: error: {exc}", file=sys.stderr)
        return 1
    return 0
