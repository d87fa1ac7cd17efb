"""The ``bcolzx`` command line (also ``python -m bcolzx``).

The subcommands live in :mod:`bcolzx.cli`, one module each; this module
builds the parser from them and turns the errors a user can cause (no
dataset at a path, damaged or unsupported data, a file system refusal, a
missing optional dependency) into one line on stderr and an exit status, as
the ``--help`` epilog lists.  Anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from bcolzx.cli import COMMANDS
from bcolzx.cli.common import EXIT_BROKEN_PIPE, EXIT_ERROR, EXIT_INTERRUPTED, EXIT_STATUS_HELP

EPILOG = """\
examples:
  bcolzx info data/prices               what a dataset holds (--json too)
  bcolzx ls data/                       every dataset under a directory
  bcolzx verify data/prices             every checksum; exit status 1 on damage
  bcolzx convert old/prices new/prices  legacy bcolz -> bcolzx format
  bcolzx convert data/prices --cname zstd --clevel 7   recompress in place
  bcolzx compact data/prices            reclaim the space of rewritten chunks
  bcolzx export data/prices prices.npy  (.npy .zarr .h5 .parquet .b2frame)
  bcolzx import prices.parquet data/prices

""" + EXIT_STATUS_HELP


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``bcolzx`` command."""
    from bcolzx import __version__

    parser = argparse.ArgumentParser(
        prog="bcolzx", description="Compressed, persistent, columnar NumPy containers.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"bcolzx {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(f"bcolzx.cli.{name}").register(sub)
    return parser


def _message(exc: BaseException) -> str:
    """One line saying what went wrong, without the exception's machinery."""
    from bcolzx.errors import CorruptDataError

    if isinstance(exc, OSError) and exc.strerror and exc.filename is not None:
        text = f"{exc.strerror}: {exc.filename}"
        if exc.filename2 is not None:
            text += f" -> {exc.filename2}"
    else:
        text = str(exc) or type(exc).__name__
    if isinstance(exc, CorruptDataError):
        text = f"damaged data: {text} (run 'bcolzx verify' for a full report)"
    return " ".join(text.split())


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit status.

    Parameters
    ----------
    argv : list of str, optional
        The arguments (default ``sys.argv[1:]``).

    Returns
    -------
    int
        0 on success; see ``bcolzx --help`` for the others.

    Raises
    ------
    SystemExit
        For ``--help``, ``--version`` and usage errors (status 2), as argparse does.
    """
    from bcolzx.errors import BcolzxError

    words = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(words)
    args.argv = words[1:]  # the words after the subcommand (bench records them)
    try:
        return args.run(args)
    except KeyboardInterrupt:
        print("bcolzx: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # e.g. 'bcolzx ls | head': the reader left
        try:  # no second error when Python flushes stdout at exit
            out = sys.stdout.fileno()
        except (OSError, ValueError):  # stdout is not a file (embedded use)
            out = None
        if out is not None:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, out)
            os.close(devnull)
        return EXIT_BROKEN_PIPE
    except (BcolzxError, OSError, ValueError, ImportError) as exc:
        print(f"bcolzx: error: {_message(exc)}", file=sys.stderr)
        return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
