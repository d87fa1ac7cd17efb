"""Tests of bcolzx._ext.index against docs/format/superchunk.md (format 1).

Expected bytes are built here with :mod:`struct` and a pure-Python CRC-32C,
independently of the implementation.
"""

from __future__ import annotations

import struct
import zlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bcolzx._ext import index as ix
from bcolzx.errors import (
    ChecksumError,
    CorruptDataError,
    TruncatedDataError,
    UnsupportedFormatError,
)

from ..reference import crc32c_reference

FAST = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
EMPTY = 2**64 - 1
FLAG = 1 << 63
PATH = "data/__7.bin"


def crc32c(data: bytes, crc: int = 0) -> int:
    return crc32c_reference(data, crc)


def header_bytes(ctype=1, typesize=8, chunk_size=4096, k=4, number=7, *, magic=b"BCXS",
                 version=1, options=0, reserved=0, crc=None) -> bytes:
    body = struct.pack("<4sBBBBIIQI", magic, version, options, ctype, typesize, chunk_size, k,
                       number, reserved)
    return body + struct.pack("<I", crc32c(body) if crc is None else crc)


def index_bytes(generation, nchunks, last, entries, *, reserved=0, crc=None) -> bytes:
    body = struct.pack("<QII", generation, nchunks, last)
    body += b"".join(struct.pack("<QQ", off, nb) for off, nb in entries)
    return body + struct.pack("<II", crc32c(body) if crc is None else crc, reserved)


def recrc_index(buf: bytes) -> bytes:
    """`buf` with its index crc recomputed (to reach the checks behind it)."""
    body = buf[:-8]
    return body + struct.pack("<I", crc32c(body)) + buf[-4:]


K = 4
DS = 32 + 2 * (24 + 16 * K)  # data_start for K = 4: 208
FILE_SIZE = 10_000


def sample_entries():
    return [(DS, 100), (FLAG | 3, 0x0201), (DS + 104, 64), (EMPTY, EMPTY)]


def sample_index_bytes(**kw):
    return index_bytes(5, 3, 1000, sample_entries(), **kw)


def decode(buf, *, file_size=FILE_SIZE, csize=4, typesize=2, chunk_size=None):
    return ix.Index.decode(buf, K, file_size, csize, typesize, path=PATH, chunk_size=chunk_size)


# -- reference values ------------------------------------------------------------


def test_reference_crc32c():
    assert crc32c(b"123456789") == 0xE3069283


def test_sizes_and_constants():
    assert ix.MAGIC == b"BCXS" and ix.FORMAT_VERSION == 1 and ix.HEADER_SIZE == 32
    assert ix.EMPTY == EMPTY and ix.SPECIAL_FLAG == FLAG
    assert (ix.KIND_ZERO, ix.KIND_NAN, ix.KIND_VALUE) == (1, 2, 3)
    assert (ix.CHECKSUM_NONE, ix.CHECKSUM_CRC32C, ix.CHECKSUM_ADLER32) == (0, 1, 2)
    assert ix.MAX_SLOTS == 2**20
    assert ix.index_size(1) == 40 and ix.index_size(K) == 88
    assert ix.data_start(K) == DS
    assert ix.index_offset(K, 0) == 32 and ix.index_offset(K, 1) == 120
    assert [ix.checksum_size(t) for t in (0, 1, 2)] == [0, 4, 4]
    for bad in (0, 2**20 + 1):
        with pytest.raises(ValueError):
            ix.index_size(bad)


# -- header (section 2) ----------------------------------------------------------


def test_header_golden():
    expected = header_bytes(ctype=2, typesize=8, chunk_size=4096, k=4, number=7)
    assert ix.encode_header(2, 8, 4096, 4, 7) == expected
    assert ix.decode_header(expected, path=PATH) == {
        "checksum_type": 2, "typesize": 8, "chunk_size": 4096, "nslots": 4,
        "superchunk_number": 7,
    }
    # Trailing bytes (the rest of the file) are ignored.
    assert ix.decode_header(expected + b"\xff" * 10)["nslots"] == 4


@FAST
@given(st.integers(0, 2), st.integers(0, 255), st.integers(1, 2**32 - 1),
       st.integers(1, 2**20), st.integers(0, 2**64 - 1))
def test_header_round_trip(ctype, typesize, chunk_size, k, number):
    buf = ix.encode_header(ctype, typesize, chunk_size, k, number)
    assert buf == header_bytes(ctype, typesize, chunk_size, k, number)
    assert ix.decode_header(buf) == {
        "checksum_type": ctype, "typesize": typesize, "chunk_size": chunk_size, "nslots": k,
        "superchunk_number": number,
    }


@pytest.mark.parametrize("args", [
    (3, 8, 4096, 4, 0), (-1, 8, 4096, 4, 0), (1, 256, 4096, 4, 0), (1, 8, 0, 4, 0),
    (1, 8, 2**32, 4, 0), (1, 8, 4096, 0, 0), (1, 8, 4096, 2**20 + 1, 0), (1, 8, 4096, 4, -1),
    (1, 8, 4096, 4, 2**64),
])
def test_encode_header_rejects_bad_arguments(args):
    with pytest.raises(ValueError):
        ix.encode_header(*args)


def test_encode_header_rejects_non_int():
    with pytest.raises(TypeError):
        ix.encode_header(1, 8.0, 4096, 4, 0)


@pytest.mark.parametrize(("buf", "error"), [
    (header_bytes()[:31], TruncatedDataError),
    (b"", TruncatedDataError),
    (header_bytes(magic=b"BCXT"), CorruptDataError),
    (header_bytes(crc=crc32c(header_bytes()[:28]) ^ 1), CorruptDataError),
    # Version / options / checksum type in an intact header: unsupported ...
    (header_bytes(version=2), UnsupportedFormatError),
    (header_bytes(version=255), UnsupportedFormatError),
    (header_bytes(options=0x01), UnsupportedFormatError),
    (header_bytes(options=0x80), UnsupportedFormatError),
    (header_bytes(ctype=3), UnsupportedFormatError),
    # ... but the same bytes with the old crc are damage.
    (header_bytes()[:4] + b"\x02" + header_bytes()[5:], CorruptDataError),
    (header_bytes()[:5] + b"\x01" + header_bytes()[6:], CorruptDataError),
    (header_bytes(version=0), CorruptDataError),
    (header_bytes(reserved=1), CorruptDataError),
    (header_bytes(k=0), CorruptDataError),
    (header_bytes(k=2**20 + 1), CorruptDataError),
    (header_bytes(chunk_size=0), CorruptDataError),
])
def test_decode_header_damage(buf, error):
    with pytest.raises(error) as info:
        ix.decode_header(buf, path=PATH)
    if error is UnsupportedFormatError:
        assert not isinstance(info.value, CorruptDataError)
    else:
        assert info.value.path == PATH


def test_header_every_single_byte_flip_is_detected():
    good = ix.encode_header(1, 8, 4096, 4, 7)
    for pos in range(len(good)):
        for mask in range(1, 256):
            bad = bytearray(good)
            bad[pos] ^= mask
            with pytest.raises((CorruptDataError, UnsupportedFormatError)):
                ix.decode_header(bytes(bad))


# -- index copies (sections 3 and 4) ---------------------------------------------


def test_index_golden():
    expected = sample_index_bytes()
    idx = ix.Index(K)
    idx.generation = 5
    idx.set_data(0, DS, 100)
    idx.set_special(1, ix.KIND_VALUE, b"\x01\x02", 2)
    idx.set_data(2, DS + 104, 64)
    idx.nchunks = 3
    idx.last_chunk_size = 1000
    assert idx.encode() == expected
    back = decode(expected)
    assert back == idx
    assert back.generation == 5 and back.nchunks == 3 and back.last_chunk_size == 1000
    assert [back.kind(s) for s in range(K)] == ["data", "special", "data", "empty"]
    assert back.entry(0) == (DS, 100) and back.entry(3) == (EMPTY, EMPTY)
    assert back.special(1, 2) == (ix.KIND_VALUE, b"\x01\x02")
    assert back.data_extent(4) == DS + 104 + 64 + 4
    assert back.data_extent() == DS + 104 + 64


def test_new_index_is_empty():
    idx = ix.Index(K)
    assert (idx.nslots, idx.generation, idx.nchunks, idx.last_chunk_size) == (K, 0, 0, 0)
    assert all(idx.kind(s) == "empty" for s in range(K))
    assert idx.encode() == index_bytes(0, 0, 0, [(EMPTY, EMPTY)] * K)
    assert idx.data_extent(4) == DS
    assert idx.copy is None and idx.write_copy == 0


def test_special_entries_golden():
    idx = ix.Index(K)
    idx.set_special(0, ix.KIND_ZERO)
    idx.set_special(1, ix.KIND_NAN, typesize=4)
    idx.set_special(2, ix.KIND_VALUE, b"\xaa" * 8, 8)
    idx.nchunks = 3
    idx.last_chunk_size = 8
    entries = [(FLAG | 1, 0), (FLAG | 2, 0), (FLAG | 3, 0xAAAAAAAAAAAAAAAA), (EMPTY, EMPTY)]
    assert idx.encode() == index_bytes(0, 3, 8, entries)
    assert idx.special(0) == (1, None) and idx.special(1) == (2, None)
    assert idx.special(2) == (3, b"\xaa" * 8)


@pytest.mark.parametrize(("call", "error"), [
    (lambda i: i.set_data(K, DS, 100), IndexError),
    (lambda i: i.set_data(-1, DS, 100), IndexError),
    (lambda i: i.entry(K), IndexError),
    (lambda i: i.set_data(0, DS - 1, 100), ValueError),
    (lambda i: i.set_data(0, DS, 31), ValueError),
    (lambda i: i.set_data(0, 2**63, 100), ValueError),
    (lambda i: i.set_data(0, 2**63 - 1, 2**63 + 1), ValueError),
    (lambda i: i.set_special(0, 4), ValueError),
    (lambda i: i.set_special(0, 0), ValueError),
    (lambda i: i.set_special(0, ix.KIND_NAN, typesize=2), ValueError),
    (lambda i: i.set_special(0, ix.KIND_VALUE, b"\x00" * 9, 9), ValueError),
    (lambda i: i.set_special(0, ix.KIND_VALUE, b"\x00" * 3, 2), ValueError),
    (lambda i: i.set_special(0, ix.KIND_VALUE, None, 2), ValueError),
    (lambda i: i.set_special(0, ix.KIND_ZERO, b"\x00"), ValueError),
    (lambda i: i.special(0), ValueError),
    (lambda i: setattr(i, "nchunks", K + 1), ValueError),
    (lambda i: setattr(i, "generation", -1), ValueError),
    (lambda i: i.set_data(0, "208", 100), TypeError),
])
def test_setters_reject_bad_arguments(call, error):
    with pytest.raises(error):
        call(ix.Index(K))


def test_encode_rejects_inconsistent_index():
    idx = ix.Index(K)
    idx.set_data(2, DS, 100)
    idx.nchunks = 2
    with pytest.raises(ValueError):
        idx.encode()
    idx = ix.Index(K)
    idx.last_chunk_size = 5
    with pytest.raises(ValueError):
        idx.encode()


entry_strategy = st.one_of(
    st.just((EMPTY, EMPTY)),
    st.tuples(st.integers(DS, FILE_SIZE - 32 - 4), st.integers(32, 10_000)).map(
        lambda e: (e[0], min(e[1], FILE_SIZE - 4 - e[0]))),
    st.just((FLAG | 1, 0)),
    st.just((FLAG | 2, 0)),
    st.integers(0, 2**64 - 1).map(lambda v: (FLAG | 3, v)),
)


@FAST
@given(st.integers(1, 2**64 - 1), st.data())
def test_index_round_trip(generation, data):
    nchunks = data.draw(st.integers(0, K))
    used = data.draw(st.lists(entry_strategy, min_size=nchunks, max_size=nchunks))
    entries = used + [(EMPTY, EMPTY)] * (K - nchunks)
    last = data.draw(st.integers(1, 4096)) if nchunks else 0
    idx = ix.Index(K)
    idx.generation = generation
    for slot, (off, nb) in enumerate(used):
        if off == EMPTY:
            idx.set_empty(slot)
        elif off & FLAG:
            kind = off & 0xFF
            value = nb.to_bytes(8, "little") if kind == 3 else None
            idx.set_special(slot, kind, value, 8)
        else:
            idx.set_data(slot, off, nb)
    idx.nchunks = nchunks
    idx.last_chunk_size = last
    buf = idx.encode()
    assert buf == index_bytes(generation, nchunks, last, entries)
    back = ix.Index.decode(buf, K, FILE_SIZE, 4, 8, chunk_size=4096)
    assert back == idx
    assert [back.entry(s) for s in range(K)] == entries
    assert back.encode() == buf


def _bad_entry(slot, entry, nchunks=3):
    entries = sample_entries()
    entries[slot] = entry
    return index_bytes(5, nchunks, 1000, entries)


@pytest.mark.parametrize(("buf", "slot"), [
    # Data entries outside [data_start, file size), checksum bytes included.
    (_bad_entry(2, (FILE_SIZE - 100, 97)), 2),
    (_bad_entry(2, (FILE_SIZE, 32)), 2),
    (_bad_entry(2, (2**63 - 1, 32)), 2),
    (_bad_entry(0, (0, 100)), 0),
    (_bad_entry(0, (31, 100)), 0),
    (_bad_entry(0, (32, 100)), 0),          # into index copy A
    (_bad_entry(0, (120, 64)), 0),          # into index copy B
    (_bad_entry(0, (DS - 1, 100)), 0),
    (_bad_entry(0, (DS, 31)), 0),
    (_bad_entry(0, (DS, 0)), 0),
    # offset + nbytes overflows 64 bits.
    (_bad_entry(2, (2**63 - 1, 2**64 - 2**63 + 1)), 2),
    (_bad_entry(2, (DS, 2**64 - DS)), 2),
    (_bad_entry(2, (DS, 2**64 - 1)), 2),
    # Special entries.
    (_bad_entry(1, (FLAG | 0, 0)), 1),
    (_bad_entry(1, (FLAG | 4, 0)), 1),
    (_bad_entry(1, (FLAG | 0xFF, 0)), 1),
    (_bad_entry(1, (FLAG | (1 << 8) | 1, 0)), 1),
    (_bad_entry(1, (FLAG | (1 << 62) | 3, 1)), 1),
    (_bad_entry(1, (FLAG | 1, 1)), 1),
    (_bad_entry(1, (FLAG | 2, 0)), 1),      # NaN with typesize 2
    (_bad_entry(1, (FLAG | 3, 1 << 16)), 1),  # value wider than typesize 2
    (_bad_entry(1, (EMPTY, 0)), 1),
    (_bad_entry(1, (EMPTY - 1, EMPTY)), 1),
    # Slots at or beyond nchunks must be empty.
    (_bad_entry(3, (DS + 200, 64)), 3),
    (_bad_entry(3, (FLAG | 1, 0)), 3),
    (_bad_entry(2, (DS + 104, 64), nchunks=2), 2),
])
def test_bad_entries_name_file_and_slot(buf, slot):
    with pytest.raises(CorruptDataError) as info:
        decode(buf)
    assert info.value.path == PATH and info.value.chunk == slot


def test_entry_may_end_exactly_at_end_of_file():
    buf = _bad_entry(2, (FILE_SIZE - 100, 96))
    assert decode(buf).entry(2) == (FILE_SIZE - 100, 96)
    with pytest.raises(CorruptDataError):
        decode(buf, file_size=FILE_SIZE - 1)
    assert decode(buf, file_size=FILE_SIZE - 4, csize=0).entry(2) == (FILE_SIZE - 100, 96)


@pytest.mark.parametrize(("typesize", "entry", "ok"), [
    (4, (FLAG | 2, 0), True), (8, (FLAG | 2, 0), True), (0, (FLAG | 2, 0), False),
    (8, (FLAG | 3, EMPTY), True), (9, (FLAG | 3, 0), False), (0, (FLAG | 3, 0), False),
    (1, (FLAG | 3, 0xFF), True), (1, (FLAG | 3, 0x100), False),
])
def test_special_entries_depend_on_typesize(typesize, entry, ok):
    buf = _bad_entry(1, entry)
    if ok:
        assert decode(buf, typesize=typesize).entry(1) == entry
    else:
        with pytest.raises(CorruptDataError):
            decode(buf, typesize=typesize)


@pytest.mark.parametrize("buf", [
    sample_index_bytes(crc=crc32c(sample_index_bytes()[:-8]) ^ 0x80000000),
    sample_index_bytes(reserved=1),
    index_bytes(5, K + 1, 1000, sample_entries()),
    index_bytes(5, 0, 1000, [(EMPTY, EMPTY)] * K),
    index_bytes(5, 3, 0, sample_entries()),
    index_bytes(0, 3, 1000, sample_entries()),   # generation 0 must be empty
])
def test_bad_index_fields(buf):
    with pytest.raises(CorruptDataError) as info:
        decode(buf)
    assert info.value.path == PATH


def test_last_chunk_size_not_above_chunk_size():
    assert decode(sample_index_bytes(), chunk_size=1000).last_chunk_size == 1000
    with pytest.raises(CorruptDataError):
        decode(sample_index_bytes(), chunk_size=999)


def test_truncated_and_oversized_index():
    good = sample_index_bytes()
    with pytest.raises(TruncatedDataError):
        decode(good[:-1])
    with pytest.raises(ValueError):
        decode(good + b"\x00")


def test_index_every_single_byte_flip_is_detected():
    good = sample_index_bytes()
    assert decode(good).encode() == good
    for pos in range(len(good)):
        for mask in range(1, 256):
            bad = bytearray(good)
            bad[pos] ^= mask
            with pytest.raises(CorruptDataError):
                decode(bytes(bad))


# -- select (section 3) ----------------------------------------------------------


def _copy(generation, nchunks=3):
    entries = sample_entries()
    for slot in range(nchunks, K):
        entries[slot] = (EMPTY, EMPTY)
    return index_bytes(generation, nchunks, 1000 if nchunks else 0, entries)


def _select(a, b):
    return ix.select(a, b, K, FILE_SIZE, 4, 2, path=PATH)


def test_select_picks_higher_generation():
    chosen = _select(_copy(3, 3), _copy(2, 1))
    assert (chosen.generation, chosen.nchunks, chosen.copy, chosen.write_copy) == (3, 3, 0, 1)
    chosen = _select(_copy(3, 3), _copy(4, 1))
    assert (chosen.generation, chosen.nchunks, chosen.copy, chosen.write_copy) == (4, 1, 1, 0)


def test_select_falls_back_when_newer_copy_is_damaged():
    newer = bytearray(_copy(4, 1))
    newer[20] ^= 0x10
    chosen = _select(_copy(3, 3), bytes(newer))
    assert (chosen.generation, chosen.copy) == (3, 0)
    # A newer copy whose entry points past EOF is invalid too.
    chosen = _select(recrc_index(_copy(9, 3)[:40] + struct.pack("<QQ", FILE_SIZE, 64)
                                 + _copy(9, 3)[56:]), _copy(8, 3))
    assert (chosen.generation, chosen.copy) == (8, 1)


def test_select_raises_when_both_damaged():
    a = bytearray(_copy(3))
    b = bytearray(_copy(4))
    a[0] ^= 1
    b[-8] ^= 1
    with pytest.raises(CorruptDataError) as info:
        _select(bytes(a), bytes(b))
    assert info.value.path == PATH
    with pytest.raises(CorruptDataError):
        _select(b"\x00" * 88, b"\x00" * 88)


def test_select_new_file():
    fresh = ix.Index(K).encode()
    chosen = _select(fresh, fresh)
    assert chosen == ix.Index(K) and chosen.generation == 0 and chosen.write_copy == 0
    chosen = _select(fresh, _copy(1))
    assert (chosen.generation, chosen.copy) == (1, 1)
    # A never-written copy beside a damaged one is not trusted.
    damaged = bytearray(_copy(1))
    damaged[10] ^= 1
    with pytest.raises(CorruptDataError):
        _select(fresh, bytes(damaged))


def test_select_same_generation():
    assert _select(_copy(3), _copy(3)).generation == 3
    with pytest.raises(CorruptDataError):
        _select(_copy(3, 3), _copy(3, 1))


# -- chunk checksums (section 5) ---------------------------------------------------

CHUNK = bytes(range(256)) * 3


def test_chunk_checksum_reference():
    for number in (0, 1, 12345, 2**64 - 1):
        prefix = struct.pack("<Q", number)
        assert ix.chunk_checksum(ix.CHECKSUM_CRC32C, number, CHUNK) == crc32c(prefix + CHUNK)
        assert ix.chunk_checksum(ix.CHECKSUM_ADLER32, number, CHUNK) == zlib.adler32(prefix + CHUNK)
    assert ix.chunk_checksum(1, 0, CHUNK) != ix.chunk_checksum(1, 1, CHUNK)
    assert ix.chunk_checksum(2, 0, CHUNK) != ix.chunk_checksum(2, 1, CHUNK)
    assert ix.chunk_checksum(1, 5, memoryview(CHUNK)) == ix.chunk_checksum(1, 5, bytearray(CHUNK))
    with pytest.raises(ValueError):
        ix.chunk_checksum(ix.CHECKSUM_NONE, 0, CHUNK)
    with pytest.raises(ValueError):
        ix.chunk_checksum(3, 0, CHUNK)


@pytest.mark.parametrize("ctype", [ix.CHECKSUM_CRC32C, ix.CHECKSUM_ADLER32])
def test_verify_chunk(ctype):
    value = ix.chunk_checksum(ctype, 9, CHUNK)
    ix.verify_chunk(ctype, 9, CHUNK, value, path=PATH)
    ix.verify_chunk(ctype, 9, CHUNK, struct.pack("<I", value), path=PATH)
    # The same chunk moved to another chunk number fails, as does any change.
    for number, chunk in ((10, CHUNK), (9, CHUNK[:-1] + b"\x00")):
        with pytest.raises(ChecksumError) as info:
            ix.verify_chunk(ctype, number, chunk, struct.pack("<I", value), path=PATH)
        assert info.value.chunk == number and info.value.path == PATH
    with pytest.raises(ValueError):
        ix.verify_chunk(ctype, 9, CHUNK, b"\x00" * 3)


def test_verify_chunk_none_is_a_no_op():
    ix.verify_chunk(ix.CHECKSUM_NONE, 9, CHUNK, b"")
