"""Salvage: one damaged byte of a superchunk file costs at most the chunk it lands in.

Every byte of every header and index copy of the carray recipe is flipped
(docs/format/superchunk.md §6): each chunk is then read on its own; none
may read as other values than before, and at most one may be lost.  Files
cut short lose only the chunks past the cut.  ``pytest --stress -m stress``
flips every byte with 8 masks over files of 64 slots.
"""

from __future__ import annotations

import os
import random
import struct

import numpy as np
import pytest

import bcolzx
from bcolzx._ext.checksum import crc32c
from bcolzx._format.salvage import single_byte_corrections

from . import corruption as C
from .campaigns import STRESS_TIMEOUT
from .datasets import RECIPES


@pytest.fixture(scope="module")
def carray_path(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("salvage") / "ds")
    RECIPES["carray"](path)
    return path


def _lost_at_most_one(tally: C.ChunkTally) -> None:
    assert not tally.wrong, [f"{m}: {key}" for m, key in tally.wrong[:5]]
    assert max(tally.lost) <= 1, (tally.lost, str(tally.worst[1]))


def test_the_crc_locates_every_single_byte_error():
    rng = random.Random(11)
    body = bytes(rng.randrange(256) for _ in range(16 + 16 * 5))
    buf = body + struct.pack("<I", crc32c(body))
    assert single_byte_corrections(buf, len(body), crc32c(body)) == []
    for pos in range(len(buf)):
        for mask in (1, 0x80, rng.randrange(1, 256)):
            bad = bytearray(buf)
            bad[pos] ^= mask
            stored = struct.unpack_from("<I", bad, len(body))[0]
            assert (pos, mask) in single_byte_corrections(bytes(bad), len(body), stored)


def test_a_flip_anywhere_in_a_header_or_index_costs_at_most_its_chunk(carray_path):
    muts = C.exhaustive_flips(carray_path, {"header", "index", "other-index"},
                              random.Random(12), masks=3)
    tally = C.salvage_campaign(carray_path, muts)
    _lost_at_most_one(tally)
    assert tally.mutations == len(muts) > 1500
    # A single damaged byte is located through the copy's crc: nothing is lost.
    assert tally.lost == {0: len(muts)}


def test_a_flip_in_the_committed_index_is_reported_by_verify(carray_path):
    for m in C.exhaustive_flips(carray_path, {"index", "header"}, random.Random(13))[::7]:
        with C.applied(m):
            report = bcolzx.verify(carray_path)
            assert not report.ok, str(m)
            assert any("committed index copy is damaged" in p.message
                       for p in report.problems), str(report)


def test_a_truncated_file_loses_only_the_chunks_past_the_cut(carray_path):
    regions = C.superchunk_regions(carray_path)
    muts = []
    for path, regs in sorted(regions.items()):
        chunks = [(a, b) for r, a, b in regs if r == "chunk"]
        ends = sorted({b for _, b in chunks} | {a for a, _ in chunks} | {a + 7 for a, _ in chunks})
        muts += [C.Mutation("truncate", path, "superchunk", n) for n in ends]
    tally = C.salvage_campaign(carray_path, muts)
    assert not tally.wrong
    for m in muts:  # exactly the chunks that no longer fit are lost
        live = [(a, b) for r, a, b in regions[m.path] if r == "chunk"]
        want = sum(1 for _, b in live if b > m.offset)
        with C.applied(m):
            seen = C.chunk_reads(carray_path)
        assert sum(v is None for v in seen.values()) == want, str(m)


def test_several_damaged_bytes_never_read_as_wrong_values(carray_path):
    """No single-byte correction explains a zeroed run or random bytes: each entry
    is checked against its chunk's checksum, special entries against the other copy."""
    regions = C.superchunk_regions(carray_path)
    rng = random.Random(14)
    kept = 0  # chunks of the damaged file still read back
    for path, regs in sorted(regions.items()):
        (a, b), = [(a, b) for r, a, b in regs if r == "index"]
        with open(path, "rb") as f:
            raw = f.read()
        pristine = C.chunk_reads(carray_path)
        for start in range(a, b - 4, 5):
            for junk in (bytes(12), bytes(rng.randrange(256) for _ in range(12))):
                bad = bytearray(raw)
                bad[start:start + 12] = junk[:len(bad[start:start + 12])]
                with open(path, "wb") as f:
                    f.write(bad)
                try:
                    seen = C.chunk_reads(carray_path)
                finally:
                    with open(path, "wb") as f:
                        f.write(raw)
                for key, got in seen.items():
                    assert got is None or C._same(got, pristine[key]), (path, start, key)
                # The other files' chunks are untouched.
                assert all(seen[k] is not None for k in seen
                           if not _in_file(k, path, carray_path)), (path, start)
                kept += sum(v is not None for k, v in seen.items()
                            if _in_file(k, path, carray_path))
    assert kept > 0  # entries proved by their chunks' checksums


def _in_file(key, path: str, rootdir: str) -> bool:
    storage = bcolzx.carray(rootdir=rootdir, mode="r").engine.store.geometry.nslots
    return key[1] // storage == int(os.path.basename(path)[2:-4])


def test_a_salvaged_file_with_lost_chunks_refuses_writes(tmp_path):
    path = str(tmp_path / "ds")
    RECIPES["carray"](path)
    regions = C.superchunk_regions(path)
    first = sorted(regions)[0]
    end = [b for r, a, b in regions[first] if r == "chunk"][-1]
    os.truncate(first, end - 3)  # the last chunk of file 0 loses its checksum
    seen = C.chunk_reads(path)
    assert sum(v is None for v in seen.values()) == 1
    intact = [n for (_, n), v in sorted(seen.items()) if v is not None and n < 4][0]
    before = bcolzx.carray(rootdir=path, mode="r")[intact * 64]
    c = bcolzx.carray(rootdir=path, mode="a")
    with pytest.raises(bcolzx.CorruptDataError, match="repair"):
        c[intact * 64] = 1.0
        c.flush()
    assert bcolzx.carray(rootdir=path, mode="r")[intact * 64] == before


def test_a_writer_heals_an_index_corrected_through_its_crc(tmp_path):
    path = str(tmp_path / "ds")
    RECIPES["carray"](path)
    want = bcolzx.carray(rootdir=path, mode="r")[:]
    regions = C.superchunk_regions(path)
    last = sorted(regions)[-1]
    (a, _), = [(a, b) for r, a, b in regions[last] if r == "index"]
    C._xor(last, a + 16 + 3, 0x40)  # slot 0's offset
    c = bcolzx.carray(rootdir=path, mode="a")
    c.append(np.arange(100.0))
    c.flush()
    got = bcolzx.carray(rootdir=path, mode="r")[:]
    np.testing.assert_array_equal(got[:len(want)], want)
    np.testing.assert_array_equal(got[len(want):], np.arange(100.0))
    assert bcolzx.verify(path).ok  # the commit wrote a fresh copy, which is now the named one


@pytest.mark.stress
@pytest.mark.timeout(STRESS_TIMEOUT)
def test_every_mask_on_every_byte_of_a_large_index(tmp_path):
    """8 random masks on every byte of the header and both index copies of 64-slot files."""
    from bcolzx._format.meta import Storage
    from bcolzx._storage import ChunkedArray, DirectoryStore

    path = str(tmp_path / "big")
    storage = Storage(dtype="i8", chunklen=32, chunks_per_superchunk=64)
    arr = ChunkedArray(DirectoryStore.create(path, storage))
    values = np.arange(100 * 32, dtype="i8") * 7
    values[5 * 32:6 * 32] = 0
    arr.append(values)
    arr.flush()
    arr.write(0, values[::-1].copy())
    arr.flush()
    arr.close()
    muts = C.exhaustive_flips(path, {"header", "index", "other-index"}, random.Random(15),
                              masks=8)
    tally = C.salvage_campaign(path, muts)
    _lost_at_most_one(tally)
    print(f"{tally.mutations} flips, chunks lost per flip: {dict(tally.lost)}")


@pytest.mark.parametrize("checksum_type", [1, 2])  # CRC-32C, Adler-32
def test_a_scan_names_the_one_slot_a_chunk_checksum_verifies_for(checksum_type):
    """The scan solves a chunk's checksum for its chunk number in one pass over the
    chunk (CRC-32C is affine in the prefix's register; Adler-32 combines the
    prefix's sums with the chunk's): the same answer as checking every slot."""
    from bcolzx._ext import index
    from bcolzx._format.salvage import _slots_verifying
    from bcolzx._format.superchunk import Geometry

    g = Geometry(16, 4096, 8, checksum_type)
    rng = random.Random(checksum_type)
    for n in range(40):
        blob = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 3000)))
        number = rng.choice([0, 7, 2**40 + 3, 2**64 - 1])
        numbers = {number + k: k for k in range(-3, 4) if 0 <= number + k < 2**64}
        stored = index.chunk_checksum(checksum_type, number, blob)
        assert _slots_verifying(g, blob, stored, numbers) == [0], n
        assert _slots_verifying(g, blob, stored ^ 1, numbers) == [], n
