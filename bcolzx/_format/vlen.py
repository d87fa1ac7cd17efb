"""Variable-length chunks: a table that locates the items, then the items' bytes.

A chunk of ``N`` variable-length items is, before compression, a table that
tells where each item lies, followed by the items' bytes back to back.  The
table comes in two *layouts*, one per kind of item (``meta/storage["vlen"]``):

:data:`ABSOLUTE` (``"pickle"``, docs/format/README.md §2d)
    ``N + 1`` little-endian uint64 absolute offsets ``o[0] .. o[N]``, so
    ``o[0] == 8 * (N + 1)`` (the chunk tells how many items it holds), they
    never decrease, and ``o[N]`` is the length of the chunk.

:data:`PLANAR` (``"utf8"`` and ``"bytes"``, docs/format/strings.md)
    ``N`` as a little-endian uint64, then the ``N`` item lengths as
    little-endian uint32 stored as four *byte planes* (the low bytes of all
    lengths, then the second bytes...), then the items.  Lengths of short
    items have three planes of zeros, which compress to almost nothing,
    where absolute offsets would cost up to eight incompressible bytes a
    row.  The length :data:`NA_LENGTH` marks a missing row (NumPy's
    ``StringDType(na_object=...)``), which has no bytes.

Either way the table is turned into the same thing, validated, before
anything is sliced: :func:`locate` gives the ``N + 1`` absolute offsets
(item ``i`` is ``chunk[o[i]:o[i+1]]``) and the missing rows.  A damaged
chunk raises :class:`CorruptDataError`; it never yields items cut at the
wrong places.

This module knows nothing of pickle, of text or of compression; see
:mod:`bcolzx._format.pickles`, :mod:`bcolzx._format.strings` and
:class:`bcolzx._storage.vlen.VlenArray`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from bcolzx.errors import CorruptDataError

__all__ = ["ABSOLUTE", "PLANAR", "OFFSET", "NA_LENGTH", "LAYOUTS", "Located", "encode",
           "encode_planar", "decode", "locate", "items", "count"]

#: Bytes of one offset (a little-endian uint64), and of the item count of a planar chunk.
OFFSET = 8
#: The two layouts of the table, and which one each kind of item uses.
ABSOLUTE = "absolute"
PLANAR = "planar"
LAYOUTS = {"pickle": ABSOLUTE, "utf8": PLANAR, "bytes": PLANAR}
#: The length that marks a missing (NA) row of a planar chunk.
NA_LENGTH = 0xFFFFFFFF
_LE_U8 = np.dtype("<u8")
_LE_U4 = np.dtype("<u4")


class Located(NamedTuple):
    """Where the items of a validated chunk lie.

    Attributes
    ----------
    offsets : numpy.ndarray
        ``N + 1`` int64 absolute offsets: item ``i`` is ``chunk[o[i]:o[i+1]]``
        (empty for a missing row).
    na : numpy.ndarray or None
        ``N`` uint8 flags, 1 for a missing (NA) row; None when no row is.
    """

    offsets: np.ndarray
    na: np.ndarray | None


def encode(values: Sequence[bytes], layout: str = ABSOLUTE) -> bytes:
    """One chunk holding `values` (byte strings), in order.

    Parameters
    ----------
    values : sequence of bytes-like
        The items; each may be empty.  With :data:`PLANAR`, None is a missing row.
    layout : {ABSOLUTE, PLANAR}

    Returns
    -------
    bytes
        The table followed by the items.

    Raises
    ------
    TypeError
        If an item is not bytes-like (or None, for PLANAR).
    ValueError
        For an unknown layout, or an item of 4 GiB or more (PLANAR).
    """
    if layout == PLANAR:
        return encode_planar(values)
    if layout != ABSOLUTE:
        raise ValueError(f"unknown layout {layout!r}")
    parts = [memoryview(v).cast("B") for v in values]
    head = OFFSET * (len(parts) + 1)
    offsets = np.empty(len(parts) + 1, dtype=_LE_U8)
    offsets[0] = head
    if parts:
        offsets[1:] = np.cumsum([len(p) for p in parts], dtype=np.uint64) + np.uint64(head)
    return b"".join([offsets.tobytes(), *parts])


def encode_planar(values: Sequence[bytes | None]) -> bytes:
    """One :data:`PLANAR` chunk holding `values` (byte strings, None for a missing row).

    Raises
    ------
    TypeError
        If an item is neither bytes-like nor None.
    ValueError
        For an item of 4 GiB or more.
    """
    parts = [None if v is None else memoryview(v).cast("B") for v in values]
    n = len(parts)
    lengths = np.fromiter((NA_LENGTH if p is None else len(p) for p in parts),
                          dtype=np.int64, count=n)
    if n and (lengths[lengths != NA_LENGTH] >= NA_LENGTH).any():
        raise ValueError("an item of 4 GiB or more does not fit in a chunk")
    planes = lengths.astype(_LE_U4).view(np.uint8).reshape(n, 4).T
    return b"".join([n.to_bytes(OFFSET, "little"), planes.tobytes(),
                     *(p for p in parts if p is not None)])


def count(chunk, layout: str = ABSOLUTE) -> int:
    """The number of items a chunk says it holds (from the start of its table).

    Raises
    ------
    CorruptDataError
        If the chunk is too short for its table, or (ABSOLUTE) its first
        offset cannot start a chunk of this length.
    """
    buf = memoryview(chunk).cast("B")
    if len(buf) < OFFSET:
        raise CorruptDataError(f"variable-length chunk of {len(buf)} bytes: shorter than its "
                               "offsets table")
    first = int.from_bytes(buf[:OFFSET], "little")
    if layout == PLANAR:
        if first > (len(buf) - OFFSET) // 4:
            raise CorruptDataError(f"variable-length chunk of {len(buf)} bytes says it holds "
                                   f"{first} items: more than its length table can hold")
        return first
    if first < OFFSET or first % OFFSET or first > len(buf):
        raise CorruptDataError(f"variable-length chunk of {len(buf)} bytes starts its items "
                               f"at {first}")
    return first // OFFSET - 1


def locate(chunk, nitems: int | None = None, layout: str = ABSOLUTE,
           na_ok: bool = False) -> Located:
    """The validated offsets of a chunk's items, and its missing rows.

    Parameters
    ----------
    chunk : bytes-like
        The decompressed chunk.
    nitems : int, optional
        The number of items the metadata expects; None accepts any.
    layout : {ABSOLUTE, PLANAR}
    na_ok : bool
        Whether missing rows may occur (a PLANAR chunk of a dataset with an
        ``na_object``).

    Returns
    -------
    Located

    Raises
    ------
    CorruptDataError
        If the count differs from `nitems`, an offset decreases, the items
        do not end at the end of the chunk, or a row is missing where none
        may be.
    """
    buf = memoryview(chunk).cast("B")
    n = count(buf, layout)
    if nitems is not None and n != nitems:
        raise CorruptDataError(f"variable-length chunk holds {n} items, the metadata calls "
                               f"for {nitems}")
    na = None
    if layout == PLANAR and _planar_kernel() is not None:
        try:
            offsets, na = _planar_kernel().planar_offsets(buf, n, na_ok)
        except ValueError as exc:
            raise CorruptDataError(f"variable-length chunk: {exc}") from None
    elif layout == PLANAR:
        head = OFFSET + 4 * n
        planes = np.frombuffer(buf, dtype=np.uint8, count=4 * n, offset=OFFSET).reshape(4, n)
        lengths = np.ascontiguousarray(planes.T).view(_LE_U4).reshape(n).astype(np.int64)
        missing = lengths == NA_LENGTH
        if missing.any():
            if not na_ok:
                raise CorruptDataError("variable-length chunk with a missing (NA) row in a "
                                       "dataset that has no missing values")
            na = missing.view(np.uint8)
            lengths[missing] = 0
        offsets = np.empty(n + 1, dtype=np.int64)
        offsets[0] = head
        np.cumsum(lengths, out=offsets[1:])
        offsets[1:] += head
    else:
        offsets = np.frombuffer(buf, dtype=_LE_U8, count=n + 1).astype(np.int64)
        # int64 cannot hold offsets of 2**63 and more: they show up as negative.
        if (offsets < 0).any() or (np.diff(offsets) < 0).any():
            raise CorruptDataError("variable-length chunk with decreasing offsets")
    if offsets[-1] != len(buf):
        raise CorruptDataError(f"variable-length chunk of {len(buf)} bytes whose items end "
                               f"at {int(offsets[-1])}")
    return Located(offsets, na)


def _planar_kernel():
    """The compiled planar-table decoder (NumPy 2 builds), or None."""
    global _KERNEL
    if _KERNEL is False:
        try:
            from bcolzx._ext import strings as kernel
        except ImportError:  # pragma: no cover - NumPy 1: the NumPy code below
            kernel = None
        _KERNEL = kernel
    return _KERNEL


_KERNEL: object = False


def decode(chunk, nitems: int | None = None, layout: str = ABSOLUTE) -> np.ndarray:
    """The validated offsets of a chunk (``N+1`` of them, as int64), for a
    chunk without missing rows.

    Parameters
    ----------
    chunk : bytes-like
        The decompressed chunk.
    nitems : int, optional
        The number of items the metadata expects; None accepts any.
    layout : {ABSOLUTE, PLANAR}

    Returns
    -------
    numpy.ndarray
        ``o[0] .. o[N]``: item ``i`` is ``chunk[o[i]:o[i+1]]``.

    Raises
    ------
    CorruptDataError
        As :func:`locate` with ``na_ok=False``.
    """
    return locate(chunk, nitems, layout).offsets


def items(chunk, nitems: int | None = None, layout: str = ABSOLUTE,
          na_ok: bool = False) -> list[bytes | None]:
    """Every item of a chunk, as bytes (None for a missing row), validated as
    :func:`locate` does.

    Raises
    ------
    CorruptDataError
        As :func:`locate`.
    """
    buf = memoryview(chunk).cast("B")
    where = locate(buf, nitems, layout, na_ok)
    offsets = where.offsets.tolist()
    out: list[bytes | None] = [bytes(buf[a:b]) for a, b in zip(offsets[:-1], offsets[1:])]
    if where.na is not None:
        for i in np.flatnonzero(where.na).tolist():
            out[i] = None
    return out
