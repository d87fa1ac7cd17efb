"""``bcolzx bench``: the benchmark suite (implemented in :mod:`bcolzx.bench.cli`)."""

from __future__ import annotations

import argparse

__all__ = ["register", "run"]


def register(sub) -> None:
    """Add ``bench`` to the subcommands."""
    from bcolzx.bench.cli import DESCRIPTION, EPILOG, add_arguments

    p = sub.add_parser("bench", help="benchmark against HDF5, Blosc2, Zarr, NumPy and "
                       "legacy bcolz (quick run: under a minute)", description=DESCRIPTION,
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(p)
    p.set_defaults(run=run, subparser=p)


def run(args: argparse.Namespace) -> int:
    """Run ``bcolzx bench`` (``args.argv``: the words after ``bench``, for its report)."""
    from bcolzx.bench.cli import run_from_args

    return run_from_args(args)
