"""``bcolzx verify PATH...``: every checksum and invariant; exit status 1 on damage."""

from __future__ import annotations

import argparse
import os

from bcolzx.cli.common import EXIT_DAMAGED, EXIT_OK, add_quiet, print_json
from bcolzx.cli.describe import describe, require_directory
from bcolzx.cli.progress import bar
from bcolzx.errors import BcolzxError

__all__ = ["register", "run", "report_json"]

HELP = "check every file, index, chunk checksum and invariant; exit status 1 on damage"
DESCRIPTION = """\
Read everything of each dataset (metadata, superchunk indexes, every chunk
with its checksum, decoded in full, the zone map, the column lengths of a
ctable), in either format (bcolzx or legacy bcolz), without stopping at the
first problem, and print one report per dataset.  Nothing is modified.  The
exit status is 0 when every dataset is sound, 1 when any problem was found
(a path that is a directory but no dataset counts as one)."""


def register(sub) -> None:
    """Add ``verify`` to the subcommands."""
    p = sub.add_parser("verify", help=HELP, description=DESCRIPTION)
    p.add_argument("paths", metavar="PATH", nargs="+", help="carray or ctable directories")
    p.add_argument("--json", action="store_true",
                   help="print the report as a JSON object (a list of them for several PATHs)")
    add_quiet(p)
    p.set_defaults(run=run, subparser=p)


def report_json(report) -> dict:
    """A :class:`bcolzx.verify.Report` as a JSON-able dict."""
    return {"path": report.rootdir, "ok": report.ok, "kind": report.kind,
            "format": report.format, "rows": report.rows, "chunks": report.chunks,
            "problems": [{"path": p.path, "chunk": p.chunk, "message": p.message}
                         for p in report.problems]}


def _nbytes(path: str) -> int | None:
    """Bytes to check according to the metadata (for the progress bar), if readable."""
    try:
        return describe(path)["nbytes"]
    except (BcolzxError, OSError, ValueError):
        return None


def run(args: argparse.Namespace) -> int:
    """Run ``bcolzx verify``."""
    from bcolzx.verify import verify

    for path in args.paths:  # all or nothing: no half-done run for a typo
        require_directory(path)
    reports = []
    for path in args.paths:
        with bar(_nbytes(path), f"verify {os.path.basename(path) or path}",
                 quiet=args.quiet) as advance:
            report = verify(path, progress=advance)
        reports.append(report)
        if not args.json:
            print(report, flush=True)
    if args.json:
        docs = [report_json(r) for r in reports]
        print_json(docs[0] if len(docs) == 1 else docs)
    return EXIT_OK if all(r.ok for r in reports) else EXIT_DAMAGED
