"""What a superchunk file still proves when its committed index copy is damaged.

docs/format/superchunk.md §6.  A reader normally uses exactly the index copy
whose generation ``meta/sizes`` names.  When that copy fails its checks (and
no writer explains it: :mod:`bcolzx._storage.snapshot`), :func:`salvage`
rebuilds as much of it as can be proved, slot by slot, and names the slots
it cannot prove; their chunks raise when read, every other chunk reads
normally.  What counts as proof, in order:

1. **The copy's own crc, corrected.**  CRC-32C is linear, so the difference
   between the stored and the computed crc (the *syndrome*) tells which
   single-byte changes of the copy would make it match: every position
   ``p`` and XOR mask ``e`` with ``crc(e at p) == syndrome``.  One damaged
   byte is always among them (usually alone); a copy corrected by a
   candidate must then pass every check of §3-§4 and carry the named
   generation.  Slots on which the surviving candidates agree are proved;
   the others are lost.
2. **Entries checked against their chunks.**  When no single-byte
   correction explains the damage (several bytes, a torn sector), a data
   entry of the damaged copy is kept only if its chunk, read where it points,
   passes its checksum over ``le64(global chunk number) || bytes`` and no
   valid entry of the other copy points at another chunk that passes it too
   (an older version of the same chunk: ambiguous, so lost) -- unless the
   other copy is one generation older and the entry points past that copy's
   data, where only chunks written since can be.  A special entry
   carries no checksum: it is kept only when the other copy, valid, holds the
   very same entry.
3. **The metadata.**  ``nchunks`` and the last chunk's size are not taken
   from the damaged copy: ``meta/sizes`` fixes them.  A damaged header is
   replaced by the geometry of ``meta/storage`` when the index copy proves
   the file's identity (its generation, drawn at random, as ``meta/sizes``
   names it).

A chunk is never read through an entry that is not proved: a lost slot
raises :class:`~bcolzx.errors.CorruptDataError` naming file and chunk.

When neither index copy can be attributed to the named generation (both
destroyed), readers give up on the file; :func:`scan` is what ``bcolzx
repair`` does then (§6, "Proof 3"): it looks through the data region for
C-Blosc2 chunk headers, keeps a chunk only when the checksum after it
verifies for one of the file's chunk numbers, and recovers each slot from
the chunk of the right size that verifies for it furthest into the file (the
latest written), unless bytes after that chunk are no chunk that verifies
(damaged, or the file cut inside a chunk): a newer version may have been
there.  When a reader can open the file but loses some of its chunks,
:func:`recover` looks for them in the same way, helped by what the index
copies still prove (§6, "Proof 4").
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass, field

from bcolzx._ext import index as _index
from bcolzx._ext.checksum import crc32c
from bcolzx.errors import BcolzxError, CorruptDataError

__all__ = ["Salvaged", "Scanned", "Recovered", "salvage", "scan", "recover",
           "single_byte_corrections", "NEWER"]

_POLY = 0x82F63B78  # CRC-32C, reflected


def _table() -> tuple[list[int], dict[int, int], dict[int, int]]:
    table = []
    for i in range(256):
        r = i
        for _ in range(8):
            r = (r >> 1) ^ (_POLY if r & 1 else 0)
        table.append(r)
    by_value = {v: i for i, v in enumerate(table) if i}
    by_top = {v >> 24: i for i, v in enumerate(table)}
    if len(by_top) != 256:  # pragma: no cover - a property of every CRC-32 table
        raise AssertionError("CRC table top bytes are not distinct")
    return table, by_value, by_top


_TABLE, _BY_VALUE, _BY_TOP = _table()


def single_byte_corrections(buf: bytes, covered: int, stored: int) -> list[tuple[int, int]]:
    """Every ``(position, mask)`` whose XOR into `buf` makes its crc match.

    `buf[:covered]` is what the crc covers and `stored` the crc as read from
    bytes ``covered .. covered+3`` of the copy (a damaged byte may also be one
    of those: positions ``covered`` to ``covered + 3``).  Empty when the crc
    already matches or no single-byte change explains the difference.

    The search walks the syndrome backwards through the CRC's register, one
    zero byte at a time (the register's step is invertible: the top byte of
    each table entry is unique), so it costs one step per byte of the copy.
    """
    syndrome = crc32c(bytes(buf[:covered])) ^ stored
    if not syndrome:
        return []
    out = []
    for j in range(4):  # the damage is in the stored crc itself
        if syndrome == (syndrome & (0xFF << (8 * j))):
            out.append((covered + j, syndrome >> (8 * j)))
    r = syndrome
    for d in range(covered):  # a byte e at covered-1-d, followed by d bytes
        e = _BY_VALUE.get(r)
        if e is not None:
            out.append((covered - 1 - d, e))
        i = _BY_TOP[r >> 24]
        r = (((r ^ _TABLE[i]) << 8) | i) & 0xFFFFFFFF
    return out


@dataclass
class Salvaged:
    """The proved part of a damaged superchunk file's committed index.

    Attributes
    ----------
    index : Index
        The index with every proved slot below ``needed``; lost slots are empty.
    copy : int
        The copy (0 A, 1 B) the committed index is in.
    lost : dict
        ``{slot: reason}`` of the slots that could not be proved.
    how : str
        One sentence: what was damaged and how the index was rebuilt.
    known : dict
        ``{slot: (offset, nbytes)}`` for the lost slots whose entry the copy's
        bytes do prove (an entry pointing past the end of a file cut short).
    """

    index: _index.Index
    copy: int
    how: str
    lost: dict = field(default_factory=dict)
    known: dict = field(default_factory=dict)


def _raw(buf: bytes, nslots: int) -> tuple[int, list[tuple[int, int]], int, int]:
    """(generation, entries, stored crc, reserved) of an index copy, unchecked."""
    gen = struct.unpack_from("<Q", buf, 0)[0]
    flat = struct.unpack_from(f"<{2 * nslots}Q", buf, 16)
    covered = 16 + 16 * nslots
    stored, reserved = struct.unpack_from("<II", buf, covered)
    return gen, list(zip(flat[::2], flat[1::2])), stored, reserved


def _decode(buf: bytes, g, size: int, path: str):
    try:
        return _index.Index.decode(buf, g.nslots, size, g.checksum_size, g.header_typesize,
                                   path=path, chunk_size=g.chunk_size)
    except CorruptDataError:
        return None


def _crc_ok(buf: bytes, nslots: int) -> bool:
    covered = 16 + 16 * nslots
    return crc32c(bytes(buf[:covered])) == struct.unpack_from("<I", buf, covered)[0]


def _place(idx, slot: int, entry: tuple[int, int], g, size: int) -> str | None:
    """Put `entry` in `slot` of `idx` if §4 allows it there; else why not."""
    off, nb = entry
    if off == _index.EMPTY and nb == _index.EMPTY:
        return "its entry is empty"
    try:
        if off & _index.SPECIAL_FLAG:
            kind = off & 0xFF
            if off & ~_index.SPECIAL_FLAG & ~0xFF:
                return "its special entry has reserved bits set"
            value = None
            if kind == _index.KIND_VALUE:
                if not 1 <= g.header_typesize <= 8:
                    return "its special entry does not fit the item size"
                value = nb.to_bytes(8, "little")[:g.header_typesize]
                if int.from_bytes(value, "little") != nb:
                    return "its special value does not fit the item size"
            elif nb:
                return "its special entry has a non-zero nbytes"
            idx.set_special(slot, kind, value, g.header_typesize)
            return None
        if off + nb + g.checksum_size > size:
            return f"its chunk (offset {off}, {nb} bytes) lies beyond the end of the file " \
                   f"({size} bytes)"
        idx.set_data(slot, off, nb)
    except (ValueError, OverflowError) as exc:
        return f"its entry is invalid ({exc})"
    return None


def _chunk_verifies(fd: int, g, number: int, slot: int, entry: tuple[int, int],
                    size: int) -> bool:
    off, nb = entry
    if off & _index.SPECIAL_FLAG or off < _index.data_start(g.nslots) or nb < 32 or \
            off + nb + g.checksum_size > size or not g.checksum_size:
        return False
    blob = os.pread(fd, nb + g.checksum_size, off)
    if len(blob) != nb + g.checksum_size:
        return False
    try:
        _index.verify_chunk(g.checksum_type, number * g.nslots + slot, blob[:nb], blob[nb:])
    except BcolzxError:
        return False
    return True


def salvage(path: str, number: int, geometry, generation: int, needed: int,
            last_size: int) -> Salvaged:
    """Rebuild the committed index of superchunk file `path` from what can be proved.

    Parameters
    ----------
    path : str
        The superchunk file.
    number : int
        Its superchunk number.
    geometry : Geometry
        The dataset's (from ``meta/storage``).
    generation : int
        The index generation ``meta/sizes`` names for the file.
    needed, last_size : int
        Chunks the metadata needs from this file, and the size of the last.

    Returns
    -------
    Salvaged
        The proved index, with the slots that are lost.

    Raises
    ------
    CorruptDataError
        If nothing about the file can be proved: it is not this dataset's
        superchunk `number` (its intact header says otherwise), or neither
        index copy can be attributed to the named generation.
    TruncatedDataError
        If the file is missing or ends inside its index copies.
    """
    from bcolzx._format.superchunk import read_head

    g = geometry
    isize = _index.index_size(g.nslots)
    size, head = read_head(path, g)
    header_note = _check_header(head[:_index.HEADER_SIZE], number, g, path)
    copies = [head[_index.HEADER_SIZE + c * isize:_index.HEADER_SIZE + (c + 1) * isize]
              for c in (0, 1)]
    from bcolzx._format import files as _files

    fd = os.open(path, _files.READ_FLAGS)
    try:
        return _salvage(fd, copies, number, g, generation, needed, last_size, size, path,
                        header_note)
    finally:
        os.close(fd)


def _check_header(raw: bytes, number: int, g, path: str) -> str | None:
    """None for an intact header of this file; a note for a damaged one.

    An intact header that names another file or geometry raises: that is a
    wrong file, not damage, and nothing in it belongs to this dataset.
    """
    from bcolzx._format.superchunk import header_mismatch

    try:
        head = _index.decode_header(raw, path)
    except CorruptDataError as exc:  # an intact header of a newer format is not damage
        return f"its header is damaged ({exc}); the geometry of meta/storage is used"
    wrong = header_mismatch(head, number, g)
    if wrong:
        raise CorruptDataError(wrong, path=path)
    return None


def _finish(idx, needed: int, last_size: int):
    """`idx` with the metadata's chunks only (nchunks and the last size from meta/sizes)."""
    for slot in range(needed, idx.nslots):
        idx.set_empty(slot)
    idx.nchunks = needed
    idx.last_chunk_size = last_size if needed else 0
    return idx


def _salvage(fd, copies, number, g, generation, needed, last_size, size, path,
             header_note) -> Salvaged:
    valid = [_decode(c, g, size, path) for c in copies]
    for which in (0, 1):
        idx = valid[which]
        if idx is not None and idx.generation == generation:  # the header alone is damaged
            return Salvaged(_finish(idx, needed, last_size), which, header_note or "")
    raws = [_raw(c, g.nslots) for c in copies]
    prefix = f"{header_note}; " if header_note else ""
    # Which copy holds the named generation: the one that says so, else the
    # only one that fails its crc while the other is intact with another generation.
    named = [w for w in (0, 1) if raws[w][0] == generation]
    if len(named) != 1:
        broken = [w for w in (0, 1) if not _crc_ok(copies[w], g.nslots)]
        if len(broken) == 1 and not named:
            named = broken
        else:
            raise CorruptDataError(
                prefix + f"neither index copy can be attributed to generation {generation}, "
                "the one meta/sizes records", path=path)
    which = named[0]
    buf, other_buf = copies[which], copies[1 - which]
    letter = "AB"[which]
    covered = 16 + 16 * g.nslots
    gen, entries, stored, reserved = raws[which]
    idx = _index.Index(g.nslots)
    idx.generation = generation
    lost: dict[int, str] = {}

    if _crc_ok(buf, g.nslots):
        # The crc proves every byte: what fails is the file around it (cut short)
        # or the reserved field; each entry that §4 allows is used as it is.
        for slot in range(needed):
            why = _place(idx, slot, entries[slot], g, size)
            if why is not None:
                lost[slot] = why
        return Salvaged(_finish(idx, needed, last_size), which,
                        prefix + f"index copy {letter} is intact (its crc matches) but "
                        f"{len(lost)} of its entries fail their checks", lost,
                        {slot: entries[slot] for slot in lost})

    fixes = []
    for pos, mask in single_byte_corrections(buf, covered, stored):
        fixed = bytearray(buf)
        fixed[pos] ^= mask
        cand = _decode(bytes(fixed), g, size, path)
        if cand is not None and cand.generation == generation:
            fixes.append((pos, cand))
        elif cand is None and reserved == 0 and _crc_ok(bytes(fixed), g.nslots) and \
                struct.unpack_from("<Q", fixed, 0)[0] == generation:
            fixes.append((pos, _lenient(bytes(fixed), g, size, needed)))
    if fixes:
        known = {}
        for slot in range(needed):
            seen = {c.entry(slot) for _, c in fixes}
            if len(seen) == 1:  # an empty entry is refused by _place
                known[slot] = seen.pop()
                why = _place(idx, slot, known[slot], g, size)
                if why is not None:
                    lost[slot] = why
            else:
                lost[slot] = "the damaged byte of its index copy may lie in its entry"
        where = ", ".join(str(p) for p, _ in fixes)
        return Salvaged(_finish(idx, needed, last_size), which,
                        prefix + f"index copy {letter} has a damaged byte (at offset {where} of "
                        f"the copy, found by its crc), corrected", lost,
                        {slot: known[slot] for slot in lost if slot in known})

    # Several damaged bytes: each entry is checked against its chunk.
    other_raw = raws[1 - which]
    other_ok = _crc_ok(other_buf, g.nslots)
    # The other copy one generation older: whatever the committed copy changed
    # was written after that copy's data (a writer writes after all live data).
    older_end = _extent(other_raw[1], g) if other_ok and other_raw[0] + 1 == generation \
        else None
    for slot in range(needed):
        entry = entries[slot]
        other = other_raw[1][slot] if other_ok else None
        off = entry[0]
        if off != _index.EMPTY and off & _index.SPECIAL_FLAG:
            if entry != other:
                lost[slot] = "its special entry carries no checksum and the other index " \
                             "copy does not confirm it"
                continue
        elif not _chunk_verifies(fd, g, number, slot, entry, size):
            lost[slot] = "its entry does not point at a chunk that passes its checksum"
            continue
        elif other is not None and other != entry and (
                older_end is None or entry[0] < older_end) and \
                _chunk_verifies(fd, g, number, slot, other, size):
            lost[slot] = "the two index copies point at two versions of the chunk"
            continue
        why = _place(idx, slot, entry, g, size)
        if why is not None:
            lost[slot] = why
    return Salvaged(_finish(idx, needed, last_size), which,
                    prefix + f"index copy {letter} is damaged in several bytes; its entries "
                    "were checked against their chunks' checksums", lost)


def _extent(entries: list[tuple[int, int]], g) -> int:
    """Where the data of a (crc-proved) copy's entries ends."""
    end = _index.data_start(g.nslots)
    for off, nb in entries:
        if off != _index.EMPTY and not off & _index.SPECIAL_FLAG:
            end = max(end, off + nb + g.checksum_size)
    return end


def _lenient(buf: bytes, g, size: int, needed: int):
    """An index from a copy whose crc matches but whose entries §4 may reject."""
    _, entries, _, _ = _raw(buf, g.nslots)
    idx = _index.Index(g.nslots)
    for slot in range(min(needed, g.nslots)):
        if _place(idx, slot, entries[slot], g, size) is not None:
            idx.set_empty(slot)
    return idx


# -- Proof 3: a scan of the data region, when no index copy is left ---------------------

#: C-Blosc2 chunk header (blosc2.h): format version, flags (both shuffle bits
#: set: the extended header C-Blosc2 writes), then int32 nbytes, blocksize, cbytes.
_CHUNK_HEADER = 32
_EXTENDED = 0x05
_VERSIONS = range(3, 16)          # the Blosc2 chunk formats (1 and 2 are C-Blosc 1.x)
_WINDOW = 16 << 20                # bytes of the data region looked at at once


#: Why a chunk that verifies is not taken: damaged bytes after it.
NEWER = ("bytes after its latest version that verifies are no chunk that verifies (damaged, "
          "or a file cut short): a newer version of it may have been there")


@dataclass
class Scanned:
    """What a scan of a superchunk file's data region recovered (:func:`scan`).

    Attributes
    ----------
    chunks : dict
        ``{slot: compressed chunk bytes}``: the slots recovered, each the
        version of its chunk furthest into the file.
    offsets : dict
        ``{slot: offset}`` where each recovered chunk was found.
    versions : dict
        ``{slot: count}``: the versions of the right size that verify.
    lost : dict
        ``{slot: reason}`` for every other slot the metadata needs.
    found : int
        Chunks in the file that verify (every version of every slot).
    """

    chunks: dict = field(default_factory=dict)
    offsets: dict = field(default_factory=dict)
    versions: dict = field(default_factory=dict)
    lost: dict = field(default_factory=dict)
    found: int = 0


def _crc_shift(length: int) -> list[int]:
    """The linear map of a CRC-32C register over `length` zero bytes, by its images of
    the 32 unit vectors: ``crc32c(B, v) == crc32c(B) ^ apply(map, v)`` for any
    `length` bytes ``B``."""
    zeros = bytes(length)
    base = crc32c(zeros, 0)
    return [crc32c(zeros, 1 << i) ^ base for i in range(32)]


def _apply(images: list[int], v: int) -> int:
    out = 0
    i = 0
    while v:
        if v & 1:
            out ^= images[i]
        v >>= 1
        i += 1
    return out


_ADLER = 65521


def _slots_verifying(g, blob: bytes, stored: int, numbers: dict[int, int]) -> list[int]:
    """The slots (values of `numbers`, keyed by global chunk number) whose checksum of
    `blob` is `stored`: one pass over the chunk, not one per slot.

    A chunk's checksum is over ``le64(number) || chunk`` (format §5): CRC-32C
    of it is affine in the prefix's register (:func:`_crc_shift`), Adler-32
    of it follows from the prefix's sums and the chunk's (the chunk's bytes
    see the prefix's running sum once per byte).
    """
    from bcolzx._ext import checksum

    out = []
    if g.checksum_type == _index.CHECKSUM_CRC32C:
        whole = crc32c(blob, 0)
        images = _crc_shift(len(blob))
        for number, slot in numbers.items():
            prefix = crc32c(number.to_bytes(8, "little"), 0)
            if whole ^ _apply(images, prefix) == stored:
                out.append(slot)
    else:
        body = checksum.adler32(blob)
        a2, b2 = body & 0xFFFF, body >> 16
        for number, slot in numbers.items():
            head = checksum.adler32(number.to_bytes(8, "little"))
            a1, b1 = head & 0xFFFF, head >> 16
            a = (a1 + a2 - 1) % _ADLER
            b = (b1 + b2 + len(blob) * (a1 - 1)) % _ADLER
            if (b << 16 | a) == stored:
                out.append(slot)
    return out


def _candidates(fd: int, start: int, size: int, sizes: set | None):
    """Offsets in ``[start, size)`` where a C-Blosc2 chunk header may begin, with its
    nbytes and cbytes: the version and flags bytes fit, the sizes are sane and
    nbytes is one of `sizes` (None: any)."""
    import numpy as np

    pos = start
    while pos + _CHUNK_HEADER <= size:
        raw = os.pread(fd, min(_WINDOW + _CHUNK_HEADER, size - pos), pos)
        arr = np.frombuffer(raw, np.uint8)
        n = len(arr) - _CHUNK_HEADER + 1
        if n <= 0:
            break
        ok = (arr[2:2 + n] & _EXTENDED) == _EXTENDED
        ok &= (arr[:n] >= _VERSIONS.start) & (arr[:n] < _VERSIONS.stop)
        for i in np.flatnonzero(ok[:min(n, _WINDOW)]):
            i = int(i)
            nbytes, blocksize, cbytes = struct.unpack_from("<iii", raw, i + 4)
            if _sane(nbytes, blocksize, cbytes) and pos + i + cbytes <= size and (
                    sizes is None or nbytes in sizes):
                yield pos + i, nbytes, cbytes
        pos += _WINDOW


def _sane(nbytes: int, blocksize: int, cbytes: int) -> bool:
    """Whether a C-Blosc2 chunk header's sizes can be those of a chunk."""
    return nbytes >= 0 and blocksize > 0 and _CHUNK_HEADER <= cbytes <= nbytes + _CHUNK_HEADER + 64


def _verified(fd: int, g, number: int, needed: int, last_size: int, vlen: bool, size: int):
    """Every chunk of the data region that verifies for one of the `needed` first slots
    of file `number`: ``(slot, offset, chunk bytes, stored checksum, fits)``, in file
    order; `fits`: its nbytes is the slot's size (always, for variable-length items)."""
    numbers = {number * g.nslots + slot: slot for slot in range(needed)}
    sizes = None if vlen else {g.chunk_size, last_size}
    for offset, nbytes, cbytes in _candidates(fd, _index.data_start(g.nslots), size, sizes):
        if offset + cbytes + g.checksum_size > size:
            continue
        blob = os.pread(fd, cbytes + g.checksum_size, offset)
        chunk, stored = blob[:cbytes], int.from_bytes(blob[cbytes:], "little")
        for slot in _slots_verifying(g, chunk, stored, numbers):
            want = last_size if slot == needed - 1 else g.chunk_size
            yield slot, offset, chunk, stored, vlen or nbytes == want


def scan(path: str, number: int, geometry, needed: int, last_size: int,
         vlen: bool = False) -> Scanned:
    """Recover the chunks of superchunk file `path` without its index copies.

    Every place of the data region where a C-Blosc2 chunk header may begin is
    tried: the ``cbytes`` bytes its header spans, and the checksum after them,
    must verify for one of the file's global chunk numbers (format §5: the
    checksum covers the number).  A slot is recovered when a chunk of the
    size the metadata gives it (the chunk size; the last slot's size from
    ``meta/sizes``; any size for variable-length items) verifies for it.
    When several do (a chunk rewritten since the file was written or
    compacted leaves its older versions behind), the one furthest into the
    file is taken: a writer writes each chunk after all the data the index
    in force references, so a later version lies past every earlier one
    (format §3, §6 "Proof 3").  That version is taken only when every byte
    after it is a chunk that verifies for a slot of the file: damaged bytes
    there, or a file cut inside a chunk, may have held a newer version, and
    the slot is lost.  Slots for which no chunk verifies are lost (constant
    chunks store no bytes; chunks in damaged bytes).  Nothing that does not
    verify is ever returned; with checksum type none nothing is.

    Parameters
    ----------
    path, number, geometry, needed, last_size
        As for :func:`salvage` (`last_size` counts rows for variable-length
        items).
    vlen : bool
        The items are of variable length (README.md §2d): a chunk's
        ``nbytes`` is not its slot's size, and is not checked.

    Returns
    -------
    Scanned

    Raises
    ------
    OSError
        If the file cannot be read.
    """
    from bcolzx._format import files as _files

    g = geometry
    out = Scanned()
    if not needed:
        return out
    if not g.checksum_size:
        out.lost = dict.fromkeys(range(needed), "the dataset has no chunk checksums: no chunk "
                                 "found by a scan can be proved")
        return out
    fd = os.open(path, _files.READ_FLAGS)
    try:
        size = _files.check_regular(fd, path).st_size
        spans = []
        for slot, offset, chunk, _, fits in _verified(fd, g, number, needed, last_size, vlen,
                                                      size):
            out.found += 1
            spans.append((offset, offset + len(chunk) + g.checksum_size))
            if not fits:
                continue  # an older version of another size (a last chunk, since grown)
            out.versions[slot] = out.versions.get(slot, 0) + 1
            out.chunks[slot], out.offsets[slot] = chunk, offset  # the furthest so far
        gaps = _gaps(fd, g, number, _index.data_start(g.nslots), size, spans) \
            if out.chunks else []
    finally:
        os.close(fd)
    for slot in list(out.chunks):
        end = out.offsets[slot] + len(out.chunks[slot])
        if any(a >= end for a, _ in gaps):
            del out.chunks[slot], out.offsets[slot]
            out.lost[slot] = NEWER
    for slot in range(needed):
        if slot not in out.chunks and slot not in out.lost:
            out.lost[slot] = "no chunk in the file verifies as this one (a constant chunk " \
                             "stores no bytes; or its bytes are damaged)"
    return out


# -- Proof 4: what a file a reader can open still proves of the chunks it loses ---------


@dataclass
class Recovered:
    """What :func:`recover` proved of a superchunk file that a reader can open.

    Attributes
    ----------
    kept : dict
        ``{slot: chunk bytes or Special}``: every chunk a reader reads, and
        the constant chunks the damaged copy was proved to hold.
    found : Scanned
        The data chunks a reader loses that were found elsewhere in the file
        (``chunks``, ``offsets``, ``versions``); ``lost``: every slot still lost.
    recovered : dict
        ``{slot: how}`` for each slot a reader loses that was recovered.
    how : str
        How a reader opens the file: "" when the index copy in use is intact,
        else the sentence of :func:`salvage`.
    unconfirmed : set
        Recovered slots whose entry was not proved: the chunk is the data the
        slot last held in the file, but nothing in the file says that it was
        not rewritten as a constant since (a constant stores no bytes); the
        caller takes them only when the committed zone map's exact bounds are
        the chunk's and not a constant's.
    """

    kept: dict
    found: Scanned
    recovered: dict = field(default_factory=dict)
    how: str = ""
    unconfirmed: set = field(default_factory=set)


def _chunk_at(fd: int, g, pos: int, size: int, numbers: dict[int, int]) -> int:
    """Bytes of the chunk and checksum that start at `pos` when they verify for one
    of `numbers`, else 0."""
    raw = os.pread(fd, _CHUNK_HEADER, pos)
    if len(raw) < _CHUNK_HEADER or raw[0] not in _VERSIONS or raw[2] & _EXTENDED != _EXTENDED:
        return 0
    nbytes, blocksize, cbytes = struct.unpack_from("<iii", raw, 4)
    if not _sane(nbytes, blocksize, cbytes) or pos + cbytes + g.checksum_size > size:
        return 0
    blob = os.pread(fd, cbytes + g.checksum_size, pos)
    stored = int.from_bytes(blob[cbytes:], "little")
    return cbytes + g.checksum_size if _slots_verifying(g, blob[:cbytes], stored, numbers) \
        else 0


def _gaps(fd: int, g, number: int, start: int, size: int, spans: list) -> list:
    """The ``(start, stop)`` runs of bytes in ``[start, size)`` that are no chunk that
    verifies for a slot of file `number` (damaged bytes, a file cut inside a chunk,
    a write that failed).  `spans`: ``(offset, end)`` of chunks known to verify;
    the bytes between them are walked chunk by chunk (older versions of other
    sizes lie there)."""
    numbers = {number * g.nslots + slot: slot for slot in range(g.nslots)}
    out = []
    pos = start
    for a, b in sorted(spans) + [(size, size)]:
        while pos < a:
            n = _chunk_at(fd, g, pos, size, numbers)
            if not n:
                out.append((pos, a))
                break
            pos += n
        pos = max(pos, b)
    return out


def recover(path: str, number: int, geometry, generation: int, needed: int, last_size: int,
            vlen: bool = False) -> Recovered | None:
    """The chunks of superchunk file `path` that a reader loses but the file proves.

    A reader opens the file through its index copy in use, or through what
    :func:`salvage` proves of it, and loses a slot whose entry is not proved
    or whose chunk fails its checksum.  ``bcolzx repair`` then looks for the
    slot's chunk in the whole data region (format §6, "Proof 4"), among the
    chunks whose checksum verifies for the slot's number and whose size is
    the slot's:

    * *The entry is proved* (the copy's crc, or a correction of it, proves
      it; its chunk is damaged or cut off): only a chunk elsewhere with the
      same length whose checksum equals the one stored after the damaged
      chunk, or whose bytes equal the damaged chunk's, is its chunk (a chunk
      rewritten with the same values leaves such a copy).  Nothing else: an
      earlier version holds older values.
    * *The entry is not proved* (the copy in use is damaged): when the other
      copy is valid and one generation older, a chunk written since lies past
      that copy's data, and the one furthest into the file is the one written
      last (an interrupted, never committed rewrite may be that one, as for
      a scan); when none lies there, the slot holds the older copy's chunk,
      or a constant written since.  Without such a copy, the chunk furthest
      into the file.  Either way, only if every byte of the data region
      after that chunk (after the older copy's data) is a chunk that
      verifies: damaged bytes there could be a newer version.  The entries
      so found are then put back into the damaged copy: if it matches its
      crc, every entry it holds is proved (its constant chunks included).
      Otherwise a constant written over the chunk found, which stores no
      bytes, cannot be ruled out: such slots are in ``unconfirmed``.

    Parameters
    ----------
    path, number, geometry, generation, needed, last_size, vlen
        As for :func:`salvage` and :func:`scan`.

    Returns
    -------
    Recovered or None
        None when a reader cannot open the file at all (:func:`scan` is
        for that), or it is not this dataset's.
    """
    from bcolzx._format import files as _files
    from bcolzx._format.superchunk import (
        Special,
        SuperchunkFile,
        check_header,
        read_head,
        select_copy,
    )

    g = geometry
    isize = _index.index_size(g.nslots)
    try:
        size, head = read_head(path, g)
        check_header(head[:_index.HEADER_SIZE], number, g, path)
        idx, which = select_copy(head[_index.HEADER_SIZE:], g, size, generation, path)
        known: dict | None = None
        how = ""
        sc = SuperchunkFile(path, number, g, idx, which)
    except CorruptDataError:
        try:
            got = salvage(path, number, g, generation, needed, last_size)
        except BcolzxError:
            return None
        sc = SuperchunkFile(path, number, g, got.index, got.copy)
        sc.lost, sc.salvaged = dict(got.lost), got.how or "damaged"
        idx, which, known, how = got.index, got.copy, got.known, got.how
    except BcolzxError:
        return None
    kept: dict = {}
    failed: dict = {}
    for slot in range(needed):
        try:
            item = sc.read([slot])[0]
        except CorruptDataError as exc:
            failed[slot] = exc.args[0] if exc.args else str(exc)
            continue
        kept[slot] = item if isinstance(item, Special) else bytes(item)
    out = Recovered(kept, Scanned(), how=how)
    if not failed:
        return out
    found = out.found
    if not g.checksum_size:
        found.lost = {s: f"{why}; without chunk checksums nothing else proves it"
                      for s, why in failed.items()}
        return out
    copies = [head[_index.HEADER_SIZE + c * isize:_index.HEADER_SIZE + (c + 1) * isize]
              for c in (0, 1)]
    fd = os.open(path, _files.READ_FLAGS)
    try:
        versions: dict[int, list] = {s: [] for s in range(needed)}
        spans = []
        for slot, offset, chunk, stored, fits in _verified(fd, g, number, needed, last_size,
                                                           vlen, size):
            spans.append((offset, offset + len(chunk) + g.checksum_size))
            if fits:
                versions[slot].append((offset, chunk, stored))
        other = _decode(copies[1 - which], g, size, path)
        older = other is not None and other.generation + 1 == generation
        floor = _extent(_raw(copies[1 - which], g.nslots)[1], g) if older \
            else _index.data_start(g.nslots)
        gaps = _gaps(fd, g, number, floor, size, spans)
        unproved = []
        for slot, why in failed.items():
            if idx.kind(slot) == "data":
                entry = idx.entry(slot)
            elif known is None:  # the copy in use is intact: its entry is what it is
                entry = (_index.EMPTY, _index.EMPTY)
            else:
                entry = known.get(slot)
            if entry is None:
                unproved.append(slot)
                continue
            copy = _copy_of(fd, g, entry, size, versions[slot])
            if copy is None:
                found.lost[slot] = f"{why}; no copy of its bytes elsewhere in the file is proved"
            else:
                found.chunks[slot], found.offsets[slot] = copy
                found.versions[slot] = len(versions[slot])
                out.recovered[slot] = f"its bytes, found again at offset {copy[1]}"
        guesses = {}
        for slot in unproved:
            mine = [v for v in versions[slot] if v[0] >= floor]
            best = max(mine, key=lambda v: v[0]) if mine else None
            if best is None and older and other.kind(slot) == "data":
                off, nb = other.entry(slot)
                best = next((v for v in versions[slot] if v[0] == off and len(v[1]) == nb),
                            None)
            if best is None:
                found.lost[slot] = f"{failed[slot]}; no chunk in the file verifies as this one " \
                                   "(a constant chunk stores no bytes)"
            elif any(a >= best[0] + len(best[1]) for a, _ in gaps):
                found.lost[slot] = f"{failed[slot]}; {NEWER}"
            else:
                guesses[slot] = (best, max(1, len(mine)))
        proved = _proved_by_crc(copies[which], g, size, path, generation, needed, last_size,
                                unproved, guesses)
        for slot in unproved:
            if proved is not None and proved.kind(slot) == "special":
                kind, value = proved.special(slot, min(max(g.typesize, 1), 8))
                out.kept[slot] = Special(kind, value if kind == _index.KIND_VALUE else None)
                found.lost.pop(slot, None)
                out.recovered[slot] = f"its constant, {_BY_CRC}"
            elif proved is not None:
                entry = proved.entry(slot)
                v = next((v for v in versions[slot] if (v[0], len(v[1])) == entry), None)
                if v is None:
                    found.lost[slot] = f"{failed[slot]}; its entry, {_BY_CRC}, points at no " \
                                       "chunk that verifies"
                    continue
                found.lost.pop(slot, None)
                found.chunks[slot], found.offsets[slot] = v[1], v[0]
                found.versions[slot] = len(versions[slot])
                out.recovered[slot] = f"the chunk its entry points at, {_BY_CRC}"
            elif slot in guesses:
                (offset, chunk, _), n = guesses[slot]
                found.chunks[slot], found.offsets[slot], found.versions[slot] = chunk, offset, n
                out.recovered[slot] = "the chunk written last" if offset >= floor else \
                    "the chunk of the older index copy (not rewritten since as data)"
                out.unconfirmed.add(slot)
    finally:
        os.close(fd)
    return out


def _copy_of(fd: int, g, entry: tuple[int, int], size: int, versions: list):
    """``(chunk bytes, offset)`` of a chunk among `versions` that proves to be the one
    the proved `entry` points at (damaged there), or None."""
    off, nb = entry
    if off == _index.EMPTY or off & _index.SPECIAL_FLAG:
        return None
    csize = g.checksum_size
    stored = os.pread(fd, csize, off + nb) if off + nb + csize <= size else None
    there = os.pread(fd, nb, off) if off + nb <= size else None
    for offset, chunk, crc in versions:
        if offset != off and len(chunk) == nb and (
                crc.to_bytes(csize, "little") == stored or chunk == there):
            return chunk, offset
    return None


#: How a slot a reader loses was proved when its index copy's crc confirms the entries found.
_BY_CRC = "proved by the index copy's crc once the entries found were put back"


def _proved_by_crc(buf: bytes, g, size: int, path: str, generation: int, needed: int,
                   last_size: int, unproved: list, guesses: dict):
    """The damaged copy in use `buf` as an index, when putting back the entries of the
    chunks found for its `unproved` slots (`guesses`; each slot either that entry or
    the one the copy holds) makes it match its crc (its generation, chunk count and
    last size, which meta/sizes fixes, restored too): then every entry it holds is
    proved.  None when no such combination matches."""
    import itertools

    slots = [s for s in unproved if s in guesses]
    tries = itertools.product((True, False), repeat=len(slots)) if len(slots) <= 10 \
        else iter([(True,) * len(slots)])
    for choice in tries:
        fixed = bytearray(buf)
        for slot, put in zip(slots, choice):
            if put:
                (offset, chunk, _), _n = guesses[slot]
                struct.pack_into("<QQ", fixed, 16 + 16 * slot, offset, len(chunk))
        for head in (False, True):
            if head:
                struct.pack_into("<QII", fixed, 0, generation, needed,
                                 last_size if needed else 0)
            cand = _decode(bytes(fixed), g, size, path)
            if cand is not None and cand.generation == generation:
                return cand
    return None
