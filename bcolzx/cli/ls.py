"""``bcolzx ls [DIR]``: every carray and ctable under a directory."""

from __future__ import annotations

import argparse
import os
import sys

from bcolzx.cli.common import EXIT_OK, human, print_json, ratio_text, table
from bcolzx.cli.describe import dataset_kind, describe, require_directory
from bcolzx.errors import BcolzxError

__all__ = ["register", "run", "find"]

HELP = "list every carray and ctable under a directory (metadata only)"
DESCRIPTION = """\
Walk DIR (default: the current directory) and list every carray and ctable
found, with its kind, format, rows, dtype (or number of columns), nbytes,
cbytes and ratio, as bcolzx.walk finds them, but without opening any (only
metadata is read), including empty ones.  A dataset's own subdirectories
(the columns of a ctable) are not listed; symbolic links are not followed.
A dataset whose metadata cannot be read is listed as unreadable, with its
error below the table."""


def register(sub) -> None:
    """Add ``ls`` to the subcommands."""
    p = sub.add_parser("ls", help=HELP, description=DESCRIPTION)
    p.add_argument("dir", metavar="DIR", nargs="?", default=".",
                   help="where to start (default: .)")
    p.add_argument("--kind", choices=("carray", "ctable"), help="list only this kind")
    p.add_argument("--json", action="store_true",
                   help="print a JSON list of the datasets (as 'bcolzx info --json' describes "
                        "them; {path, kind, error} for unreadable ones)")
    p.set_defaults(run=run, subparser=p)


def find(top: str, kind: str | None = None):
    """Yield ``(path, kind)`` of every dataset under `top`, in sorted order.

    Raises
    ------
    FileNotFoundError, NotADirectoryError
        If `top` is not a directory (:func:`~bcolzx.cli.describe.require_directory`).
    """
    require_directory(top)
    for root, dirs, _files in os.walk(top):
        dirs.sort()
        found = dataset_kind(root)
        if found is None:
            continue
        dirs[:] = []  # a dataset's subdirectories are its own
        if kind in (None, found):
            yield root, found


def _describe(path: str, kind: str) -> dict:
    try:
        return describe(path)
    except (BcolzxError, OSError, ValueError) as exc:
        return {"path": path, "kind": kind, "error": f"{type(exc).__name__}: {exc}"}


def _row(info: dict, top: str, note: int) -> list[str]:
    rel = os.path.relpath(info["path"], top)
    if "error" in info:  # the error is printed below the table, where it widens nothing
        return [rel, info["kind"], "?", "", f"unreadable [{note}]", "", "", ""]
    what = info["dtype"] if info["kind"] == "carray" else f"{len(info['names'])} column(s)"
    if info["kind"] == "carray" and len(info["shape"]) > 1:
        what += str(tuple(info["shape"][1:]))
    return [rel, info["kind"], info["format"], f"{info['shape'][0]:,}", what,
            human(info["nbytes"], exact=False), human(info["cbytes"], exact=False),
            ratio_text(info["nbytes"], info["cbytes"])]


def run(args: argparse.Namespace) -> int:
    """Run ``bcolzx ls``."""
    infos = [_describe(path, kind) for path, kind in find(args.dir, args.kind)]
    if args.json:
        print_json(infos)
        return EXIT_OK
    if not infos:
        print(f"no carray or ctable under {args.dir}", file=sys.stderr)
        return EXIT_OK
    header = ["path", "kind", "format", "rows", "dtype", "nbytes", "cbytes", "ratio"]
    errors = [i for i in infos if "error" in i]
    notes = {id(info): k for k, info in enumerate(errors, 1)}
    print(table(header, [_row(i, args.dir, notes.get(id(i), 0)) for i in infos],
                right={3, 5, 6, 7}))
    for k, info in enumerate(errors, 1):
        print(f"[{k}] {os.path.relpath(info['path'], args.dir)}: {info['error']}")
    return EXIT_OK
