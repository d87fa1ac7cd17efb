"""What the commands share: exit statuses, common options, output helpers."""

from __future__ import annotations

import argparse
import json
import sys

__all__ = [
    "EXIT_OK", "EXIT_DAMAGED", "EXIT_USAGE", "EXIT_ERROR", "EXIT_INTERRUPTED", "EXIT_BROKEN_PIPE",
    "EXIT_STATUS_HELP", "CPARAMS_RULE", "ON_DISK_TEXT", "add_quiet", "add_cparams_options",
    "cparams_from", "human", "ratio_text", "sizes_text", "table", "print_json", "usage_error",
]

#: Success.
EXIT_OK = 0
#: ``bcolzx verify`` found damage (or the path is no sound dataset); ``bcolzx repair``
#: found rows it could not read back.
EXIT_DAMAGED = 1
#: Bad command line (argparse's own status).
EXIT_USAGE = 2
#: The command could not do its work: no dataset at the path, a destination
#: that exists, an unsupported format, damaged data met on the way, a
#: missing optional dependency, a file system error.
EXIT_ERROR = 3
#: Interrupted with Ctrl-C (128 + SIGINT, as shells report it).
EXIT_INTERRUPTED = 130
#: The reader of the output went away (``bcolzx ls | head``): 128 + SIGPIPE.
EXIT_BROKEN_PIPE = 141

EXIT_STATUS_HELP = """\
exit status:
  0    success
  1    verify: damage found (or the path holds no sound dataset);
       repair: rows lost (listed; the repaired copy written unless --dry-run)
  2    usage error (bad command line)
  3    error: no dataset there, the destination exists, unsupported or
       damaged data, missing optional dependency, file system error
       (a one-line message 'bcolzx: error: ...' on stderr)
  130  interrupted (Ctrl-C); every command leaves the datasets complete
  141  the reader of the output went away (as in 'bcolzx ls | head')"""

_SHUFFLES = {"noshuffle": 0, "shuffle": 1, "bitshuffle": 2, "0": 0, "1": 1, "2": 2}


def usage_error(args: argparse.Namespace, message: str):
    """Stop with a usage message of the subcommand (exit status 2)."""
    args.subparser.error(message)


def add_quiet(parser: argparse.ArgumentParser) -> None:
    """The ``-q/--quiet`` option (no progress bar)."""
    parser.add_argument("-q", "--quiet", action="store_true",
                        help="no progress bar (one is drawn on stderr when it is a terminal, "
                             "tqdm is installed and the work takes over a second)")


def _shuffle(text: str) -> int:
    try:
        return _SHUFFLES[text.lower()]
    except KeyError:
        raise argparse.ArgumentTypeError(
            f"must be noshuffle, shuffle or bitshuffle (or 0, 1, 2), not {text!r}") from None


def _nonnegative(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, not {value}")
    return value


def _positive(text: str) -> int:
    value = _nonnegative(text)
    if value == 0:
        raise argparse.ArgumentTypeError("must be > 0")
    return value


#: The one rule of the compression options, in every command's --help.
CPARAMS_RULE = "an option not given keeps the source's value"


def add_cparams_options(parser: argparse.ArgumentParser, title: str,
                        source: str = "") -> None:
    """Options for compression parameters and the chunk length of a new dataset.

    Their group is titled `title`, then :data:`CPARAMS_RULE` and `source` (what
    the source's value is, where the command needs to say).
    """
    from bcolzx.toplevel import blosc_compressor_list

    group = parser.add_argument_group(f"{title} ({CPARAMS_RULE}{source})")
    group.add_argument("--cname", choices=blosc_compressor_list(), help="codec")
    group.add_argument("--clevel", type=int, choices=range(10), metavar="0-9",
                       help="compression level")
    group.add_argument("--shuffle", type=_shuffle, metavar="noshuffle|shuffle|bitshuffle",
                       help="shuffle filter")
    group.add_argument("--quantize", type=_nonnegative, metavar="DIGITS",
                       help="significant digits kept of floating-point data (lossy; 0: off)")
    group.add_argument("--blocksize", type=_nonnegative, metavar="BYTES",
                       help="C-Blosc2 block size (0: automatic)")
    group.add_argument("--bytedelta", choices=("auto", "on", "off"),
                       help="byte-delta filter after the shuffle")
    group.add_argument("--chunklen", type=_positive, metavar="ROWS", help="rows per chunk")


def _json_object(text: str) -> dict:
    """A JSON object given inline, or ``@path`` of a file holding one."""
    if text.startswith("@"):
        try:
            with open(text[1:], encoding="utf-8") as f:
                text = f.read()
        except OSError as exc:
            raise argparse.ArgumentTypeError(f"cannot read {text[1:]!r}: {exc}") from None
    try:
        obj = json.loads(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not JSON: {exc}") from None
    if not isinstance(obj, dict):
        raise argparse.ArgumentTypeError("must be a JSON object ({...})")
    return obj


def add_storage_options(parser: argparse.ArgumentParser) -> None:
    """The ``--storage-options`` option: the fsspec options of the URLs a command is given."""
    parser.add_argument(
        "--storage-options", metavar="JSON", type=_json_object,
        help="for a URL (s3://..., gs://..., https://...): the options of its fsspec "
             "filesystem, a JSON object or @FILE holding one, e.g. '{\"client_kwargs\": "
             "{\"endpoint_url\": \"http://127.0.0.1:9000\"}}' (credentials are best left to "
             "the filesystem's own configuration: environment, ~/.aws, gcloud...)")


def location_options(path, args: argparse.Namespace) -> dict | None:
    """The ``--storage-options`` for `path` if it is a URL (None for a local path)."""
    from bcolzx._storage.objects import is_url

    return getattr(args, "storage_options", None) if is_url(path) else None


def cparams_from(args: argparse.Namespace) -> dict | None:
    """The compression options given on the command line, as a dict (None if none)."""
    keys = ("cname", "clevel", "shuffle", "quantize", "blocksize", "bytedelta")
    given = {k: getattr(args, k) for k in keys if getattr(args, k, None) is not None}
    return given or None


def human(n: int | None, exact: bool = True) -> str:
    """A byte count for people: ``'1.50 MB (1,572,864)'`` (without the exact
    count in parentheses unless `exact`); ``'-'`` when unknown."""
    from bcolzx.carray import _human

    if n is None:
        return "-"
    return f"{_human(n)} ({n:,})" if exact and n >= 1024 else _human(n)


def ratio_text(nbytes: int, cbytes: int) -> str:
    """The compression ratio ``nbytes / cbytes`` with two decimals (``'-'`` if cbytes is 0)."""
    return f"{nbytes / cbytes:.2f}" if cbytes else "-"


#: What "on disk" counts besides the compressed chunks (cbytes), in every command's words.
ON_DISK_TEXT = "on disk counts whole files: cbytes plus metadata, chunk indexes and dead space"


def sizes_text(info: dict) -> str:
    """The sizes of a dataset (a :func:`bcolzx.cli.describe.describe` result) in one line.

    ``'7.63 MB of data, 40.82 KB compressed (ratio 191.39), 52.10 KB on disk in 5
    files'``: the uncompressed bytes (``nbytes``), the compressed chunks
    (``cbytes``) and their ratio, and every file of the dataset, as ``bcolzx
    info`` names them.
    """
    return (f"{human(info['nbytes'], exact=False)} of data, "
            f"{human(info['cbytes'], exact=False)} compressed (ratio "
            f"{ratio_text(info['nbytes'], info['cbytes'])}), "
            f"{human(info['disk_bytes'], exact=False)} on disk in {info['files']:,} "
            f"file{'s' * (info['files'] != 1)}")


def table(header: list[str], rows: list[list[str]], right: set[int] = frozenset()) -> str:
    """Rows of text in aligned columns (the columns numbered in `right` right-aligned)."""
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]

    def line(row):
        cells = [str(c).rjust(w) if i in right else str(c).ljust(w)
                 for i, (c, w) in enumerate(zip(row, widths))]
        return "  ".join(cells).rstrip()

    return "\n".join(line(r) for r in [header, *rows])


def print_json(obj, stream=None) -> None:
    """`obj` as indented JSON on stdout (NaN attribute values stay ``NaN``, as in the files)."""
    json.dump(obj, stream or sys.stdout, indent=2, allow_nan=True)
    (stream or sys.stdout).write("\n")
