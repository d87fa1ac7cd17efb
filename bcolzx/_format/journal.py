"""The append journal ``meta/journal`` (docs/format/README.md §3b): rows appended since
the last commit, safe against a killed process without an fsync.

A commit (``flush``) makes data durable against power loss, at the price of
fsyncs.  A table appended to one row at a time with ``auto_flush`` (legacy
bcolz's default on disk) would pay that price per row.  Instead, each such
append writes its rows to the journal: one ``write`` of a small record that
the kernel keeps when the process dies.  Whoever opens the dataset next
replays the records that extend the committed state it read, so no row
appended through the journal is lost to a crash of the process; the next
commit makes them durable and empties the journal.  A power cut may lose or
tear the journal's tail: the records carry checksums, and a reader stops at
the first one that does not verify, so it sees a prefix of the appends, never
a wrong row.  The committed state is never touched by the journal.

Layout, all integers little-endian::

    header (48 bytes)
        magic        4   b"BXJ1"
        flags        4   0
        rowbytes     8   bytes of one row
        base_rows    8   rows of the commit this journal extends
        base_id      4   crc32c of that commit's identity (see base_id())
        uid         16   the dataset's uid (ASCII hex), zeros when unsealed
        crc          4   crc32c of the 44 bytes before it
    records, each
        nrows        4   rows in the record (>= 1)
        first        8   row number of its first row (base_rows + rows before)
        crc          4   crc32c of (header crc, nrows, first, rows), chained to the header
        rows         nrows * rowbytes bytes, the rows as stored in memory
"""

from __future__ import annotations

import json
import struct
from typing import NamedTuple

from bcolzx._ext.checksum import crc32c

__all__ = ["MAGIC", "HEADER_SIZE", "RECORD_HEAD", "Header", "base_id", "header",
           "record", "parse"]

MAGIC = b"BXJ1"
_HEADER = struct.Struct("<4sIQQI16s")  # without its crc
HEADER_SIZE = _HEADER.size + 4
_RECORD = struct.Struct("<IQ")
RECORD_HEAD = _RECORD.size + 4


class Header(NamedTuple):
    """What a journal extends: rows of that width after that commit of that dataset."""

    rowbytes: int
    base_rows: int
    base_id: int
    uid: bytes


def base_id(sizes_json: dict) -> int:
    """The identity of a commit: crc32c of its ``meta/sizes`` contents, canonically
    encoded (JSON, sorted keys, no blanks), without the seal members."""
    body = {k: v for k, v in sizes_json.items() if not k.startswith("__")}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"))
    return crc32c(text.encode("ascii"))


def _uid_bytes(uid: str | None) -> bytes:
    return (uid or "").encode("ascii")[:16].ljust(16, b"\0")


def header(h: Header) -> bytes:
    """The header bytes of a journal extending `h`."""
    head = _HEADER.pack(MAGIC, 0, h.rowbytes, h.base_rows, h.base_id, h.uid)
    return head + struct.pack("<I", crc32c(head))


def make_header(rowbytes: int, base_rows: int, base: int, uid: str | None) -> Header:
    """A :class:`Header` for a dataset's commit."""
    return Header(rowbytes, base_rows, base, _uid_bytes(uid))


def _header_crc(data: bytes) -> int:
    return struct.unpack_from("<I", data, _HEADER.size)[0]


def record(head: bytes, first: int, rows: bytes, rowbytes: int) -> bytes:
    """One record of ``len(rows) // rowbytes`` rows starting at row `first`."""
    nrows = len(rows) // rowbytes
    if nrows < 1 or nrows * rowbytes != len(rows):
        raise ValueError(f"{len(rows)} bytes are not whole rows of {rowbytes} bytes")
    lead = _RECORD.pack(nrows, first)
    crc = crc32c(rows, crc32c(lead, _header_crc(head)))
    return lead + struct.pack("<I", crc) + rows


def parse(data: bytes, expect: Header, max_rows: int) -> tuple[bytes, int]:
    """The rows of the valid records of journal `data` that extend `expect`.

    Returns ``(rows, end)``: the rows' bytes (empty when the journal is for
    another commit, another dataset, or damaged in its header) and the offset
    where the valid records end (0 when the header itself is not valid: the
    journal is to be rewritten).  Records are taken in order until the first
    that does not verify, is cut short, does not start where the previous
    one ended, or would take the rows past `max_rows`.
    """
    if len(data) < HEADER_SIZE or data[:4] != MAGIC:
        return b"", 0
    magic, flags, rowbytes, base_rows, base, uid = _HEADER.unpack_from(data)
    if crc32c(data[:_HEADER.size]) != _header_crc(data) or flags != 0:
        return b"", 0
    if Header(rowbytes, base_rows, base, uid) != expect or rowbytes < 1:
        return b"", 0
    head_crc = _header_crc(data)
    pos, rows, taken = HEADER_SIZE, [], 0
    while pos + RECORD_HEAD <= len(data):
        nrows, first = _RECORD.unpack_from(data, pos)
        (crc,) = struct.unpack_from("<I", data, pos + _RECORD.size)
        size = nrows * rowbytes
        body_at = pos + RECORD_HEAD
        if nrows < 1 or first != base_rows + taken or taken + nrows > max_rows or \
                body_at + size > len(data):
            break
        payload = data[body_at:body_at + size]
        if crc32c(payload, crc32c(data[pos:pos + _RECORD.size], head_crc)) != crc:
            break
        rows.append(payload)
        taken += nrows
        pos = body_at + size
    return b"".join(rows), pos
