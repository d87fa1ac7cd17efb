"""``bcolzx repair PATH``: rebuild a damaged dataset from every chunk that verifies."""

from __future__ import annotations

import argparse

from bcolzx.cli.common import EXIT_DAMAGED, EXIT_OK, add_quiet, print_json
from bcolzx.cli.progress import bar
from bcolzx.cli.verify import _nbytes

__all__ = ["register", "run"]

HELP = "rebuild a damaged carray or ctable from every chunk that verifies; list the rows lost"
DESCRIPTION = """\
Read every chunk of every column of the carray or ctable at PATH as a
reader does (checksums checked; a damaged superchunk index read through
what it still proves) and write a new dataset from every chunk that
verifies.  The rows of a chunk that cannot be read are lost: they are
listed per column, never guessed.  The repaired copy keeps their row
numbers and holds the column's default value there (recorded in the
attribute 'bcolzx.repair'), or, with --cut, ends before the first lost
row.  The copy is written beside the target, verified, then installed:
at --output, or in place by one atomic exchange, the damaged original then
kept as PATH.damaged-<hex> (--discard-damaged removes it).  --dry-run only
reads and reports.  Exit status 0 when nothing was lost, 1 when rows were
lost (and the repaired copy written, unless --dry-run)."""


def register(sub) -> None:
    """Add ``repair`` to the subcommands."""
    p = sub.add_parser("repair", help=HELP, description=DESCRIPTION)
    p.add_argument("path", metavar="PATH", help="a carray or ctable directory")
    p.add_argument("-o", "--output", metavar="DST",
                   help="write the repaired copy there (must not exist); PATH is left as it is")
    p.add_argument("--dry-run", action="store_true", help="only read and report the lost rows")
    p.add_argument("--cut", action="store_true",
                   help="end the repaired dataset before the first lost row (default: lost "
                        "rows hold the default value, listed in the attribute 'bcolzx.repair')")
    p.add_argument("--discard-damaged", action="store_true",
                   help="in place: remove the damaged original once the repaired copy is "
                        "installed (default: kept as PATH.damaged-<hex>)")
    p.add_argument("--json", action="store_true", help="print the report as a JSON object")
    add_quiet(p)
    p.set_defaults(run=run, subparser=p)


def run(args: argparse.Namespace) -> int:
    """Run ``bcolzx repair``."""
    from bcolzx.repair import repair

    with bar(_nbytes(args.path), "repair", quiet=args.quiet) as advance:
        report = repair(args.path, args.output, dry_run=args.dry_run,
                        lost="cut" if args.cut else "fill",
                        keep_damaged=not args.discard_damaged, progress=advance)
    if args.json:
        print_json(report.to_json())
    else:
        print(report, flush=True)
    return EXIT_DAMAGED if report.lost else EXIT_OK
