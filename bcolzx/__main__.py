"""The ``bcolzx`` command line (also ``python -m bcolzx``)."""

from __future__ import annotations

import argparse
import sys


def _positive(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, not {value}")
    return value


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``bcolzx`` command."""
    from bcolzx import __version__

    parser = argparse.ArgumentParser(
        prog="bcolzx", description="Compressed, persistent, columnar NumPy containers."
    )
    parser.add_argument("--version", action="version", version=f"bcolzx {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="compress, persist, reopen and read back built-in data")
    demo.add_argument("--rows", type=_positive, default=5_000_000, help="rows of built-in data")
    demo.add_argument("--cname", default="lz4", help="codec (default lz4)")
    demo.add_argument("--clevel", type=int, default=5, choices=range(10), metavar="0-9")
    demo.add_argument("--nthreads", type=int, default=2, help="decompression threads")
    demo.add_argument("--dir", default=None, help="write here instead of a temporary directory")
    from bcolzx.bench.cli import DESCRIPTION, EPILOG, add_arguments

    bench = sub.add_parser("bench", help="benchmark against HDF5, Blosc2, Zarr, NumPy and "
                           "legacy bcolz (quick run: under a minute)", description=DESCRIPTION,
                           epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(bench)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    args = build_parser().parse_args(argv)
    if args.command == "bench":
        from bcolzx.bench.cli import run_from_args

        args.argv = list(sys.argv[2:] if argv is None else argv[1:])
        return run_from_args(args)
    if args.command == "demo":
        from bcolzx import demo
        from bcolzx.errors import BcolzxError

        try:
            demo.run(args.rows, args.cname, args.clevel, args.nthreads, rootdir=args.dir)
        except (BcolzxError, ValueError, TypeError) as exc:
            print(f"bcolzx demo: error: {exc}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
