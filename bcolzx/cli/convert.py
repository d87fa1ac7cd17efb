"""``bcolzx convert SRC [DST]``: legacy bcolz to the bcolzx format, or new cparams."""

from __future__ import annotations

import argparse

from bcolzx.cli.common import (
    EXIT_OK,
    ON_DISK_TEXT,
    add_cparams_options,
    add_quiet,
    add_storage_options,
    cparams_from,
    location_options,
    sizes_text,
)
from bcolzx.cli.describe import describe_any
from bcolzx.cli.progress import bar
from bcolzx.errors import UnsupportedFormatError

__all__ = ["register", "run"]

HELP = "convert a legacy bcolz dataset to the bcolzx format, or recompress one"
DESCRIPTION = """\
Convert the legacy bcolz (format v1) carray or ctable at SRC to the bcolzx
format, into DST (which must not exist) or, without DST, in place (SRC is
replaced atomically by its converted copy).  With compression options, also
rewrite a dataset that is already in the bcolzx format with them.  Unless
--no-verify, the new copy is read back and compared with SRC, byte for byte,
before it is installed; whatever fails, SRC is left as it was.  SRC and DST
may be URLs (s3://..., gs://...; --storage-options): a dataset on object
storage is converted into a DST (never in place), and a DST there is
published only once complete and verified."""

EPILOG = """\
examples:
  bcolzx convert old/prices                 in place, legacy -> bcolzx
  bcolzx convert old/prices new/prices      into a new directory
  bcolzx convert data/prices --cname zstd --clevel 7 --chunklen 65536
  bcolzx convert s3://bucket/old s3://bucket/new --storage-options @s3.json"""


def register(sub) -> None:
    """Add ``convert`` to the subcommands."""
    p = sub.add_parser("convert", help=HELP, description=DESCRIPTION, epilog=EPILOG,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("src", metavar="SRC", help="a carray or ctable directory, or its URL")
    p.add_argument("dst", metavar="DST", nargs="?",
                   help="where to write the converted dataset, a directory or a URL "
                        "(default: replace SRC)")
    p.add_argument("--no-verify", dest="verify", action="store_false",
                   help="do not compare the new copy with SRC before installing it "
                        "(faster: SRC is read once)")
    p.add_argument("--allow-pickle", action="store_true",
                   help="also convert object-dtype data (pickled Python objects); the "
                        "pickles are copied and compared, never unpickled")
    add_cparams_options(p, "compression of the new copy")
    add_storage_options(p)
    add_quiet(p)
    p.set_defaults(run=run, subparser=p)


def run(args: argparse.Namespace) -> int:
    """Run ``bcolzx convert``."""
    from bcolzx.convert import convert

    before = describe_any(args.src, location_options(args.src, args))
    cparams = cparams_from(args)
    if before["format"] == "bcolzx" and cparams is None and args.chunklen is None:
        raise UnsupportedFormatError(
            f"{args.src} is already in the bcolzx format: there is nothing to convert; give "
            "compression options (--cname, --clevel, --shuffle, --chunklen, ...) to rewrite "
            "it with them")
    total = before["nbytes"] * (2 if args.verify else 1)
    with bar(total, "convert", quiet=args.quiet) as advance:
        out = convert(args.src, args.dst, verify=args.verify, cparams=cparams,
                      chunklen=args.chunklen, progress=advance,
                      allow_pickle=True if args.allow_pickle else None,
                      storage_options=args.storage_options)
    after = describe_any(out, location_options(out, args))
    print(f"{args.src} ({before['format']} {before['kind']}) -> {out} ({after['format']}): "
          f"{after['shape'][0]:,} rows{', verified' if args.verify else ''}")
    print(f"  before: {sizes_text(before)}")
    print(f"  after:  {sizes_text(after)}")
    print(f"  ({ON_DISK_TEXT})")
    return EXIT_OK
