"""Superchunks as immutable objects: built whole, and continued in parts (docs/format §5).

On object storage a superchunk file is written once, whole: header, index
copy A (a random first generation), copy B never written, then the chunks
and their checksums back to back (:func:`encode`) -- the same bytes a
:class:`~bcolzx._format.superchunk.SuperchunkFile` holds after its first
commit, so any reader reads it.  Appends never rewrite an object: the
chunks they add to a superchunk that already has an object go into a *part*
object ``data/__N.<generation>.bin``, a superchunk file of the same number
whose slots before its first one are empty; ``meta/sizes["parts"]`` lists
them.  A slot belongs to the last object of its superchunk (the base object
first, then its parts in order) whose first slot is at or before it
(:func:`owner`).
"""

from __future__ import annotations

from bcolzx._ext import index as _index
from bcolzx._format import layout
from bcolzx._format.superchunk import (
    Geometry,
    Special,
    check_header,
    first_generation,
    select_copy,
)
from bcolzx.errors import CorruptDataError

__all__ = ["Piece", "base_key", "part_key", "encode", "decode_head", "owner", "pieces_of"]

#: What an index is decoded against when the object's size is not known (its
#: head was read by a range): an entry past the real end shows as a short read.
UNKNOWN_SIZE = 1 << 62


def base_key(number: int) -> str:
    """The key of superchunk `number`'s base object (its file's name in ``data/``)."""
    return f"{layout.DATA_DIR}/__{number}.bin"


def part_key(number: int, generation: int) -> str:
    """The key of the part object of superchunk `number` with index `generation`."""
    return f"{layout.DATA_DIR}/__{number}.{generation}.bin"


class Piece:
    """One object of a superchunk: its key, first slot and committed index generation."""

    __slots__ = ("key", "first", "generation")

    def __init__(self, key: str, first: int, generation: int):
        self.key, self.first, self.generation = key, first, generation

    def __repr__(self) -> str:
        return f"Piece({self.key!r}, first={self.first}, generation={self.generation})"


def pieces_of(generations, parts) -> dict[int, list[Piece]]:
    """The objects of each superchunk that ``meta/sizes`` names: its
    `generations` (one base object per superchunk) and its `parts`."""
    out = {n: [Piece(base_key(n), 0, g)] for n, g in enumerate(generations)}
    for n, first, gen in parts:
        out.setdefault(n, []).append(Piece(part_key(n, gen), first, gen))
    return out


def owner(pieces: list[Piece], slot: int) -> Piece:
    """The object that holds `slot`: the last whose first slot is at or before it."""
    found = pieces[0]
    for piece in pieces[1:]:
        if piece.first <= slot:
            found = piece
    return found


def trim_shadowed(pieces: list[Piece]) -> list[Piece]:
    """`pieces` without the parts a later part hides entirely (its first slot is
    at or before theirs): they hold no slot any more."""
    kept: list[Piece] = []
    for piece in pieces:
        while len(kept) > 1 and kept[-1].first >= piece.first:
            kept.pop()
        kept.append(piece)
    return kept


def encode(number: int, geometry: Geometry, items: list[tuple[int, object, int]]
           ) -> tuple[list, _index.Index]:
    """The bytes of a superchunk object holding `items` (``(slot, entry, size)``:
    compressed bytes or a :class:`Special`, consecutive slots), as a list of
    buffers to write one after the other, and its index.

    Raises
    ------
    ValueError
        If the slots are not consecutive, a chunk is too large, or a chunk
        other than the last is short.
    """
    g = geometry
    csize = g.checksum_size
    idx = _index.Index(g.nslots)
    idx.generation = first_generation()
    pos = _index.data_start(g.nslots)
    body: list = []
    expect = items[0][0] if items else 0
    for n, (slot, entry, size) in enumerate(items):
        if slot != expect or slot >= g.nslots:
            raise ValueError(f"slot {slot} is not the next one ({expect}) of superchunk {number}")
        if not 0 < size <= g.chunk_size or (size != g.chunk_size and n != len(items) - 1):
            raise ValueError(f"chunk of {size} bytes in slot {slot}, chunk size {g.chunk_size}")
        expect += 1
        if isinstance(entry, Special):
            idx.set_special(slot, entry.kind, entry.value, g.header_typesize)
        else:
            body.append(entry)
            if csize:
                crc = _index.chunk_checksum(g.checksum_type, number * g.nslots + slot, entry)
                body.append(crc.to_bytes(4, "little"))
            idx.set_data(slot, pos, len(entry))
            pos += len(entry) + csize
    if items:
        idx.nchunks = expect
        idx.last_chunk_size = items[-1][2]
    header = _index.encode_header(g.checksum_type, g.header_typesize, g.chunk_size, g.nslots,
                                  number)
    return [header, idx.encode(), _index.Index(g.nslots).encode(), *body], idx


def head_size(geometry: Geometry) -> int:
    """Bytes of an object's header and two index copies (one ranged read)."""
    return _index.data_start(geometry.nslots)


def decode_head(head, number: int, geometry: Geometry, generation: int | None,
                url: str, size: int = UNKNOWN_SIZE) -> _index.Index:
    """The committed index of a superchunk object from its first
    :func:`head_size` bytes (`size`: the object's size when known).

    Raises
    ------
    TruncatedDataError
        If `head` is short.
    CorruptDataError, UnsupportedFormatError
        As :meth:`SuperchunkFile.load`.
    """
    from bcolzx.errors import TruncatedDataError

    need = head_size(geometry)
    if len(head) < need:
        raise TruncatedDataError(f"object has {len(head)} bytes, fewer than its header and "
                                 f"indexes ({need})", path=url)
    check_header(head[:_index.HEADER_SIZE], number, geometry, url)
    idx, _ = select_copy(head[_index.HEADER_SIZE:need], geometry, size, generation, url)
    return idx


def check_holds(idx: _index.Index, piece: Piece, slot: int, url: str) -> None:
    """Raise unless the object `piece` (index `idx`) holds `slot`.

    Raises
    ------
    TruncatedDataError
        If its index holds fewer chunks.
    CorruptDataError
        If the slot is empty.
    """
    from bcolzx.errors import TruncatedDataError

    if slot >= idx.nchunks:
        raise TruncatedDataError(f"the index holds {idx.nchunks} chunks, the metadata needs "
                                 f"slot {slot}", path=url)
    if idx.kind(slot) == "empty":
        raise CorruptDataError("chunk slot is empty", path=url, chunk=slot)
