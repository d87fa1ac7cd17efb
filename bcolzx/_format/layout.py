"""Names, versions and defaults of the bcolzx format (docs/format/README.md §1–§2)."""

from __future__ import annotations

import os
import re

from bcolzx._ext import index as _index

#: Value of ``meta/storage["format"]`` for datasets in this format.
FORMAT_NAME = "bcolzx"
#: Highest version of docs/format this bcolzx reads; readers refuse higher ones.
FORMAT_VERSION = 3
#: The version writers put in ``meta/storage``: the lowest that describes the
#: dataset, so that readers of version 1 keep reading every fixed-size dataset.
FIXED_FORMAT_VERSION = 1
#: Datasets of variable-length items (``"vlen"`` in ``meta/storage``, §2d).
VLEN_FORMAT_VERSION = 2
#: Datasets whose superchunks may continue in part objects (``"parts"`` in
#: ``meta/sizes``, §5: appends on object storage).
PARTS_FORMAT_VERSION = 3
#: ``meta/storage["vlen"]`` values: how the items of a variable-length dataset
#: are encoded ("pickle": object dtype, one pickle per value; "utf8": NumPy's
#: StringDType, UTF-8 text; "bytes": object dtype declared as bytes, the
#: bytes themselves; docs/format/strings.md).
VLEN_CODECS = ("pickle", "utf8", "bytes")
#: NumPy's ``nbytes`` per row of an object-dtype dataset, whatever the platform:
#: what ``meta/sizes["nbytes"]`` counts for variable-length datasets.
VLEN_ROW_NBYTES = 8

ATTRS_FILE = "__attrs__"
META_DIR = "meta"
DATA_DIR = "data"
SIZES_FILE = "sizes"
STORAGE_FILE = "storage"
#: Per-chunk min/max of the stored chunks (docs/format/README.md, "Zone map").
ZONEMAP_FILE = "zonemap"
#: Rows appended since the last commit (docs/format/README.md §3b, "Append journal").
JOURNAL_FILE = "journal"
ROOTDIRS_FILE = "__rootdirs__"
#: The advisory write lock of a carray or ctable directory (docs/format/README.md §1).
LOCK_FILE = "__lock__"

CHECKSUMS = {
    "none": _index.CHECKSUM_NONE,
    "crc32c": _index.CHECKSUM_CRC32C,
    "adler32": _index.CHECKSUM_ADLER32,
}

#: Defaults (see docs/format/README.md, "Defaults").
DEFAULT_CHECKSUM = "crc32c"
DEFAULT_CHUNK_BYTES = 1 << 20
MIN_CHUNK_BYTES = 16 << 10
DEFAULT_CHUNKS_PER_SUPERCHUNK = 256
#: C-Blosc2 block size of new datasets: one random item costs one block.
#: 32 KiB blocks answer ``c[i]`` in microseconds; with the byte-delta filter
#: (see BYTEDELTA_MODES) smooth data still compresses better than with
#: C-Blosc2's automatic 256-512 KiB blocks and a plain shuffle.
DEFAULT_BLOCKSIZE = 32 << 10
#: How chunks use C-Blosc2's byte-delta filter after the byte shuffle:
#: 'auto' tries it on a sample of chunks and keeps it where it pays.
BYTEDELTA_MODES = ("auto", "on", "off")
DEFAULT_BYTEDELTA = "auto"
#: In 'auto' mode, chunks compressed between two trials of both pipelines.
BYTEDELTA_RETRIAL = 128
#: A trial compresses the leading rows of its chunk, this many bytes of them
#: (at least one row; four 32 KiB blocks), both ways: the chunk itself is then
#: compressed once, with the pipeline that won.
BYTEDELTA_SAMPLE = 128 << 10

#: Variable-length datasets (object dtype): a chunk aims at this many bytes of
#: items (pickles) ...
VLEN_CHUNK_BYTES = 64 << 10
#: ... guessing this many bytes per item when no item is known yet ...
VLEN_GUESS_ITEM_BYTES = 64
#: ... and holds at most this many rows (a read of one row decodes its chunk).
VLEN_MAX_CHUNKLEN = 4096
#: Strings and bytes ("utf8", "bytes"): items and lengths of a chunk aim at
#: this many bytes (larger chunks compress text better; a read of one row
#: decodes its whole chunk, under a millisecond) ...
STRING_CHUNK_BYTES = 512 << 10
#: ... with at most this many rows (each costs 4 bytes of lengths, and 16 in a
#: StringDType array).
STRING_MAX_CHUNKLEN = 1 << 16


def vlen_chunklen(item_bytes: float | None = None, kind: str = "pickle") -> int:
    """Rows per chunk of a new variable-length dataset of `kind` (a
    :data:`VLEN_CODECS` value) whose items average `item_bytes` (None: not
    known yet).

    A power of two.  Pickles: a chunk holds about :data:`VLEN_CHUNK_BYTES` of
    items, between 1 and :data:`VLEN_MAX_CHUNKLEN` rows (1024 when nothing is
    known).  Strings and bytes: about :data:`STRING_CHUNK_BYTES` of items and
    lengths, up to :data:`STRING_MAX_CHUNKLEN` rows.

    Returns
    -------
    int

    Raises
    ------
    None
    """
    size = VLEN_GUESS_ITEM_BYTES if not item_bytes or item_bytes <= 0 else item_bytes
    if kind == "pickle":
        target, most = VLEN_CHUNK_BYTES, VLEN_MAX_CHUNKLEN
    else:
        target, most = STRING_CHUNK_BYTES, STRING_MAX_CHUNKLEN
        size += 4  # its length
    rows = max(1, int(target // size))
    return min(most, 1 << (rows.bit_length() - 1))


def default_chunklen(rowbytes: int, expectedlen: int | None = None) -> int:
    """Rows per chunk so that a chunk holds about DEFAULT_CHUNK_BYTES.

    Parameters
    ----------
    rowbytes : int
        Bytes of one row.
    expectedlen : int, optional
        Rows the dataset is expected to reach: a dataset expected to be small
        gets chunks of the next power of two of its size, at least
        MIN_CHUNK_BYTES.

    Returns
    -------
    int

    Raises
    ------
    ValueError
        If `rowbytes` is not positive.
    """
    if rowbytes <= 0:
        raise ValueError(f"rowbytes must be positive, not {rowbytes}")
    target = DEFAULT_CHUNK_BYTES
    if expectedlen:
        # Small datasets get small chunks (at least MIN_CHUNK_BYTES), as legacy bcolz did.
        expected = expectedlen * rowbytes
        target = min(target, max(MIN_CHUNK_BYTES, 1 << max(0, (expected - 1).bit_length())))
    return max(1, target // rowbytes)


#: Chunks hold fewer uncompressed bytes than this (C-Blosc2's limit, less its overhead).
MAX_CHUNK_BYTES = 2**31 - 64
#: The most uncompressed bytes a dataset may hold (``meta/sizes["nbytes"]`` is an int64).
MAX_NBYTES = 2**63 - 1


def check_rows(rows: int, rowbytes: int) -> None:
    """Refuse `rows` rows of `rowbytes` bytes when they exceed :data:`MAX_NBYTES`.

    Raises
    ------
    ValueError
        If ``rows * rowbytes`` is more than a dataset can hold.
    """
    if rows * rowbytes > MAX_NBYTES:
        raise ValueError(f"{rows} rows of {rowbytes} bytes would hold {rows * rowbytes} bytes, "
                         f"more than a dataset can ({MAX_NBYTES}); ask for fewer rows")


_SUPERCHUNK_RE = re.compile(r"^__(0|[1-9][0-9]*)\.bin$")


def superchunk_name(number: int) -> str:
    """File name of superchunk `number` inside ``data/``.

    Parameters
    ----------
    number : int
        The superchunk's sequential number, from 0.

    Returns
    -------
    str
        ``"__{number}.bin"``.

    Raises
    ------
    ValueError
        If `number` is negative.
    """
    if number < 0:
        raise ValueError(f"superchunk number must be >= 0, not {number}")
    return f"__{number}.bin"


def superchunk_number(name: str) -> int | None:
    """The number in a superchunk file name, or None for any other name."""
    m = _SUPERCHUNK_RE.match(name)
    return int(m.group(1)) if m else None


def meta_path(rootdir: str | os.PathLike, name: str) -> str:
    """Path of ``meta/<name>`` in a dataset."""
    if type(rootdir) is str and rootdir and rootdir[-1] != "/":  # os.path.join's result, sooner
        return f"{rootdir}/{META_DIR}/{name}"
    return os.path.join(os.fspath(rootdir), META_DIR, name)


def data_path(rootdir: str | os.PathLike, number: int) -> str:
    """Path of superchunk `number` of a dataset."""
    return os.path.join(os.fspath(rootdir), DATA_DIR, superchunk_name(number))


def column_names(meta, path: str | None = None) -> list[str]:
    """The column names a ``__rootdirs__`` object lists, validated.

    Any name legacy bcolz allowed, but never one that is not a plain
    directory name: the names become paths, and one pointing outside the
    table would be read and written there.

    Raises
    ------
    CorruptDataError
        If `meta` is not ``{"names": [...]}`` with distinct, non-empty names
        holding no path separator (nor ``.``, ``..``, NUL).
    """
    from bcolzx.errors import CorruptDataError

    names = meta.get("names") if isinstance(meta, dict) else None
    bad = None
    if not isinstance(names, list) or not names:
        bad = "not a non-empty list"
    else:
        for name in names:
            if not isinstance(name, str) or name in ("", ".", "..") or \
                    "/" in name or "\\" in name or "\0" in name:
                bad = f"{name!r} is not a column directory name"
                break
        else:
            if len(set(names)) != len(names):
                bad = "a name is listed twice"
    if bad is not None:
        raise CorruptDataError(f"{ROOTDIRS_FILE} must hold {{'names': [...]}} ({bad})",
                               path=path)
    return list(names)
