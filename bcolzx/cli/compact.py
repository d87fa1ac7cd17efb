"""``bcolzx compact PATH``: reclaim the space rewrites left in the superchunk files."""

from __future__ import annotations

import argparse

from bcolzx.cli.common import (
    EXIT_OK,
    add_quiet,
    add_storage_options,
    human,
    location_options,
    ratio_text,
)
from bcolzx.cli.describe import describe, describe_any
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
and are refused (convert them first).

With DST, write the compacted dataset there instead (a directory or a URL;
nothing may be there yet) and leave PATH as it is: the copy has the same
parameters, one file or object per superchunk, and is compared with PATH
before it is installed or, on object storage, published.  A dataset on
object storage (s3://..., gs://...; --storage-options) is compacted this
way only: its objects are never changed in place."""


def register(sub) -> None:
    """Add ``compact`` to the subcommands."""
    p = sub.add_parser("compact", help=HELP, description=DESCRIPTION)
    p.add_argument("path", metavar="PATH", help="a carray or ctable directory, or its URL")
    p.add_argument("dst", metavar="DST", nargs="?",
                   help="write the compacted copy there (a directory or a URL that holds "
                        "nothing yet) instead of compacting PATH in place")
    p.add_argument("--no-verify", dest="verify", action="store_false",
                   help="with DST: do not compare the copy with PATH before installing it")
    add_storage_options(p)
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
    from bcolzx._storage.objects import is_url
    from bcolzx.compact import compact

    if args.dst is not None or is_url(args.path):
        return _run_to(args)
    before = describe(args.path)
    with bar(_superchunks(before), "compact", unit="file", quiet=args.quiet) as advance:
        reclaimed = compact(args.path, progress=advance)
    after = describe(args.path)
    print(f"{args.path}: reclaimed {human(reclaimed)} of dead space; on disk "
          f"{human(before['disk_bytes'], exact=False)} -> "
          f"{human(after['disk_bytes'], exact=False)}; {_chunks_text(before, after)}")
    return EXIT_OK


def _run_to(args: argparse.Namespace) -> int:
    """``bcolzx compact PATH DST`` (and PATH a URL, which needs DST)."""
    from bcolzx.compact import compact

    if args.dst is None:  # object storage: AppendOnlyError, saying to give DST
        compact(args.path, storage_options=args.storage_options)
    before = describe_any(args.path, location_options(args.path, args))
    total = before["nbytes"] * (2 if args.verify else 1)
    with bar(total, "compact", quiet=args.quiet) as advance:
        reclaimed = compact(args.path, args.dst, progress=advance, verify=args.verify,
                            storage_options=args.storage_options)
    after = describe_any(args.dst, location_options(args.dst, args))
    print(f"{args.path} -> {args.dst}{' (verified)' if args.verify else ''}: reclaimed "
          f"{human(reclaimed)}; stored {human(before['disk_bytes'], exact=False)} in "
          f"{before['files']:,} files -> {human(after['disk_bytes'], exact=False)} in "
          f"{after['files']:,}; compressed chunks {human(after['cbytes'], exact=False)} "
          f"(ratio {ratio_text(after['nbytes'], after['cbytes'])})")
    return EXIT_OK
