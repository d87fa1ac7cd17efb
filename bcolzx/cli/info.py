"""``bcolzx info PATH``: what a dataset holds, from its metadata alone."""

from __future__ import annotations

import argparse
import json

from bcolzx.cli.common import EXIT_OK, human, print_json, ratio_text, table
from bcolzx.cli.describe import describe

__all__ = ["register", "run", "render"]

HELP = "kind, shape, dtype, compression, files and attrs of a dataset (metadata only)"
DESCRIPTION = """\
Print what the carray or ctable at PATH holds: kind, format, shape, dtype
(per column for a ctable), chunk length, compression parameters, nbytes,
cbytes and ratio, dead space that 'bcolzx compact' would reclaim, files and
bytes on disk, superchunks and attributes.  cbytes counts the compressed
chunks (as carray.cbytes does); on disk counts whole files, so it adds the
metadata, the chunk indexes and any dead space.  Only metadata and indexes are
read, never a chunk: it is as fast on a terabyte as on a kilobyte."""


def register(sub) -> None:
    """Add ``info`` to the subcommands."""
    p = sub.add_parser("info", help=HELP, description=DESCRIPTION)
    p.add_argument("path", metavar="PATH", help="a carray or ctable directory")
    p.add_argument("--json", action="store_true", help="print the same as a JSON object")
    p.set_defaults(run=run, subparser=p)


def _cparams_text(cp: dict) -> str:
    return " ".join(f"{k}={v!r}" if isinstance(v, str) else f"{k}={v}" for k, v in cp.items())


def _carray_lines(info: dict) -> list[tuple[str, str]]:
    chunks = f"{info['chunklen']:,} rows a chunk; {info['chunks']:,} chunks"
    if info["superchunks"] is not None:
        chunks += f" in {info['superchunks']:,} superchunk file(s)"
    lines = [("shape", str(tuple(info["shape"]))), ("dtype", info["dtype"]),
             ("chunklen", chunks), ("cparams", _cparams_text(info["cparams"]))]
    if info["checksum"] is not None:
        lines.append(("checksum", info["checksum"]))
    return lines


def _size_lines(info: dict) -> list[tuple[str, str]]:
    dead = info["dead_bytes"]
    lines = [("nbytes", human(info["nbytes"]) + " uncompressed"),
             ("cbytes", human(info["cbytes"]) + " compressed chunks"),
             ("ratio", ratio_text(info["nbytes"], info["cbytes"]) + " (nbytes / cbytes)"),
             ("on disk", f"{human(info['disk_bytes'])} in {info['files']:,} file"
                         f"{'s' * (info['files'] != 1)} (cbytes plus metadata, chunk "
                         "indexes and dead space)")]
    if dead is not None:
        lines.append(("dead space", human(dead) + (" (bcolzx compact reclaims it)"
                                                   if dead else "")))
    return lines


def _columns_table(columns: dict) -> str:
    rows = []
    for name, c in columns.items():
        cp = c["cparams"]
        rows.append([name, c["dtype"] + (str(tuple(c["shape"][1:])) if c["shape"][1:] else ""),
                     c["format"], f"{c['chunklen']:,}", cp["cname"], str(cp["clevel"]),
                     str(cp["shuffle"]), human(c["nbytes"], exact=False),
                     human(c["cbytes"], exact=False), ratio_text(c["nbytes"], c["cbytes"])])
    header = ["column", "dtype", "format", "chunklen", "cname", "clevel", "shuffle", "nbytes",
              "cbytes", "ratio"]
    return table(header, rows, right={3, 5, 6, 7, 8, 9})


def render(info: dict) -> str:
    """The text ``bcolzx info`` prints for a :func:`describe` result."""
    head = f"{info['path']}: {info['kind']}, {info['format']} format"
    if info["kind"] == "ctable":
        head += f", {len(info['names'])} column(s)"
        lines = [("shape", str(tuple(info["shape"])))]
    else:
        lines = _carray_lines(info)
    lines += _size_lines(info)
    lines.append(("attrs", json.dumps(info["attrs"], allow_nan=True)))
    width = max(len(k) for k, _ in lines)
    out = [head] + [f"  {k.ljust(width)}  {v}" for k, v in lines]
    if info["kind"] == "ctable" and info["columns"]:
        out.append("  columns:")
        out += ["    " + line for line in _columns_table(info["columns"]).splitlines()]
    out += [f"  warning: {w}" for w in info.get("warnings", ())]
    return "\n".join(out)


def run(args: argparse.Namespace) -> int:
    """Run ``bcolzx info``."""
    info = describe(args.path)
    if args.json:
        print_json(info)
    else:
        print(render(info))
    return EXIT_OK
