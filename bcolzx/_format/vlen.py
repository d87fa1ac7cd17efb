"""Variable-length chunks: an offsets table, then the items' bytes (docs/format/README.md §2d).

A chunk of ``N`` variable-length items (pickles of Python objects today;
UTF-8 strings of NumPy's ``StringDType`` may follow) is, before
compression::

    offset 0          N+1 little-endian uint64 offsets o[0] .. o[N]
    offset 8*(N+1)    the items' bytes, back to back

Item ``i`` is ``chunk[o[i]:o[i+1]]``.  The offsets are absolute, so
``o[0] == 8*(N+1)`` (a chunk tells how many items it holds), they never
decrease, and ``o[N]`` is the length of the chunk.  :func:`decode` checks
all of that, and the count against the one the metadata expects, before
anything is sliced: a damaged chunk raises :class:`CorruptDataError`, it
never yields items cut at the wrong places.

This module knows nothing of pickle or of compression; see
:mod:`bcolzx._format.pickles` and :class:`bcolzx._storage.vlen.VlenArray`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from bcolzx.errors import CorruptDataError

__all__ = ["OFFSET", "encode", "decode", "items", "count"]

#: Bytes of one offset (a little-endian uint64).
OFFSET = 8
_LE_U8 = np.dtype("<u8")


def encode(values: Sequence[bytes]) -> bytes:
    """One chunk holding `values` (byte strings), in order.

    Parameters
    ----------
    values : sequence of bytes-like
        The items; each may be empty.

    Returns
    -------
    bytes
        The offsets table followed by the items.

    Raises
    ------
    TypeError
        If an item is not bytes-like.
    """
    parts = [memoryview(v).cast("B") for v in values]
    head = OFFSET * (len(parts) + 1)
    offsets = np.empty(len(parts) + 1, dtype=_LE_U8)
    offsets[0] = head
    if parts:
        offsets[1:] = np.cumsum([len(p) for p in parts], dtype=np.uint64) + np.uint64(head)
    return b"".join([offsets.tobytes(), *parts])


def count(chunk) -> int:
    """The number of items a chunk says it holds (from its first offset).

    Raises
    ------
    CorruptDataError
        If the first offset cannot start a chunk of this length.
    """
    buf = memoryview(chunk).cast("B")
    if len(buf) < OFFSET:
        raise CorruptDataError(f"variable-length chunk of {len(buf)} bytes: shorter than its "
                               "offsets table")
    first = int.from_bytes(buf[:OFFSET], "little")
    if first < OFFSET or first % OFFSET or first > len(buf):
        raise CorruptDataError(f"variable-length chunk of {len(buf)} bytes starts its items "
                               f"at {first}")
    return first // OFFSET - 1


def decode(chunk, nitems: int | None = None) -> np.ndarray:
    """The validated offsets of a chunk (``N+1`` of them, as int64).

    Parameters
    ----------
    chunk : bytes-like
        The decompressed chunk.
    nitems : int, optional
        The number of items the metadata expects; None accepts any.

    Returns
    -------
    numpy.ndarray
        ``o[0] .. o[N]``: item ``i`` is ``chunk[o[i]:o[i+1]]``.

    Raises
    ------
    CorruptDataError
        If the count differs from `nitems`, an offset decreases, or the last
        one is not the end of the chunk.
    """
    buf = memoryview(chunk).cast("B")
    n = count(buf)
    if nitems is not None and n != nitems:
        raise CorruptDataError(f"variable-length chunk holds {n} items, the metadata calls "
                               f"for {nitems}")
    offsets = np.frombuffer(buf, dtype=_LE_U8, count=n + 1).astype(np.int64)
    # int64 cannot hold offsets of 2**63 and more: they show up as negative.
    if (offsets < 0).any() or (np.diff(offsets) < 0).any():
        raise CorruptDataError("variable-length chunk with decreasing offsets")
    if offsets[-1] != len(buf):
        raise CorruptDataError(f"variable-length chunk of {len(buf)} bytes whose items end "
                               f"at {int(offsets[-1])}")
    return offsets


def items(chunk, nitems: int | None = None) -> list[bytes]:
    """Every item of a chunk, as bytes (validated as :func:`decode` does).

    Raises
    ------
    CorruptDataError
        As :func:`decode`.
    """
    buf = memoryview(chunk).cast("B")
    offsets = decode(buf, nitems).tolist()
    return [bytes(buf[a:b]) for a, b in zip(offsets[:-1], offsets[1:])]
