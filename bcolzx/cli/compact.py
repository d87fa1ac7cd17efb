"""``bcolzx compact PATH``: reclaim the space rewrites left in the superchunk files."""

from __future__ import annotations

import argparse

from bcolzx.cli.common import EXIT_OK, add_quiet, human, ratio_text
from bcolzx.cli.describe import describe
from bcolzx.cli.progress import bar

__all__ = ["register", "run"]

HELP = "reclaim the space of rewritten and truncated chunks (bcolzx format)"
DESCRIPTION = """\
Rewrite each superchunk file of the carray or ctable at PATH with only its
live chunks, back to back, reclaiming the space that rewrites (c[i] = x,
appends to a flushed leftover) and truncations left behind ('bcolzx info'
shows it as dead space).  Each file is written beside the old one, fsynced
and renamed over it, so a crash leaves a complete dataset.  Nothing else may
use the dataset meanwhile.  Legacy bcolz (v1) datasets have no dead space
and are refused (convert them first)."""


def register(sub) -> None:
    """Add ``compact`` to the subcommands."""
    p = sub.add_parser("compact", help=HELP, description=DESCRIPTION)
    p.add_argument("path", metavar="PATH", help="a carray or ctable directory")
    add_quiet(p)
    p.set_defaults(run=run, subparser=p)


def _superchunks(info: dict) -> int | None:
    columns = info["columns"].values() if info["kind"] == "ctable" else [info]
    counts = [c["superchunks"] for c in columns if c["superchunks"] is not None]
    return sum(counts) if counts else None


def _chunks_text(before: dict, after: dict) -> str:
    """The compressed chunks (cbytes), which compacting moves but does not change."""
    text = f"compressed chunks {human(after['cbytes'], exact=False)} (ratio " \
           f"{ratio_text(after['nbytes'], after['cbytes'])})"
    if before["cbytes"] == after["cbytes"]:
        return text + " as before"
    return f"{text}, {human(before['cbytes'], exact=False)} before (changed meanwhile)"


def run(args: argparse.Namespace) -> int:
    """Run ``bcolzx compact``."""
    from bcolzx.compact import compact

    before = describe(args.path)
    with bar(_superchunks(before), "compact", unit="file", quiet=args.quiet) as advance:
        reclaimed = compact(args.path, progress=advance)
    after = describe(args.path)
    print(f"{args.path}: reclaimed {human(reclaimed)} of dead space; on disk "
          f"{human(before['disk_bytes'], exact=False)} -> "
          f"{human(after['disk_bytes'], exact=False)}; {_chunks_text(before, after)}")
    return EXIT_OK
