"""``bcolzx.repair``: every row that verifies comes back, every lost row is listed.

Each single-byte flip of a header or index copy, each flip in chunk data and
each file cut short is repaired (into a new directory, the damaged one left
as it is): the repaired dataset verifies, holds exactly the pristine value in
every row not listed as lost, the column's ``dflt`` in the lost rows (whose
ranges are also recorded in its attributes), and lists exactly the chunks that
cannot be read back.
"""

from __future__ import annotations

import os
import random
import shutil

import numpy as np
import pytest

import bcolzx
from bcolzx.repair import ATTR

from . import corruption as C
from .campaigns import STRESS_TIMEOUT
from .datasets import CHUNKLEN, RECIPES


@pytest.fixture(scope="module")
def carray_path(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("repair") / "ds")
    RECIPES["carray"](path)
    return path


def _values(path):
    return bcolzx.carray(rootdir=path, mode="r")[:]


def _same_rows(a, b):
    return (a == b) | (np.isnan(a) & np.isnan(b))


def _repair_and_check(src, m, tmp, pristine):
    dst = os.path.join(tmp, "out")
    with C.applied(m):
        report = bcolzx.repair(src, dst)
        files_after = {p: open(p, "rb").read() for p in C.dataset_files(src)}
    assert bcolzx.verify(dst).ok, str(m)
    got = _values(dst)
    assert len(got) == len(pristine), str(m)
    lost = np.zeros(len(got), bool)
    for a, b in report.lost.get("", []):
        lost[a:b] = True
    same = _same_rows(got, pristine)
    assert same[~lost].all(), f"{m}: a row that verifies was not carried over"
    assert (got[lost] == 0.0).all(), f"{m}: a lost row does not hold dflt"
    attrs = bcolzx.carray(rootdir=dst, mode="r").attrs
    if report.lost:
        assert attrs[ATTR]["lost"] == {"": [list(r) for r in report.lost[""]]}
    else:
        assert ATTR not in attrs
    assert attrs["units"] == "m/s"
    shutil.rmtree(dst)
    return report, files_after


def test_every_index_flip_is_repaired_without_losing_a_row(carray_path, tmp_path):
    pristine = _values(carray_path)
    muts = C.exhaustive_flips(carray_path, {"header", "index", "other-index"},
                              random.Random(21))
    for m in muts[::3]:
        report, _ = _repair_and_check(carray_path, m, str(tmp_path), pristine)
        assert report.lost == {}, str(m)


def test_a_flip_in_chunk_data_loses_exactly_that_chunk(carray_path, tmp_path):
    pristine = _values(carray_path)
    regions = C.superchunk_regions(carray_path)
    for m in C.random_flips(carray_path, "chunk", 25, random.Random(22)):
        report, _ = _repair_and_check(carray_path, m, str(tmp_path), pristine)
        assert report.lost_rows in (CHUNKLEN, 727 % CHUNKLEN), (str(m), report.lost)
        assert len(report.lost[""]) == 1
    assert regions == C.superchunk_regions(carray_path)  # the source was never written


def test_a_truncated_file_loses_the_chunks_past_the_cut(carray_path, tmp_path):
    pristine = _values(carray_path)
    regions = C.superchunk_regions(carray_path)
    for path, regs in sorted(regions.items()):
        chunks = [(a, b) for r, a, b in regs if r == "chunk"]
        for cut in (chunks[0][0] + 1, chunks[-1][0] + 9):
            m = C.Mutation("truncate", path, "superchunk", cut)
            report, _ = _repair_and_check(carray_path, m, str(tmp_path), pristine)
            want = sum(1 for _, b in chunks if b > cut)
            assert sum(-(-(b - a) // CHUNKLEN) for a, b in report.lost[""]) == want, str(m)


def test_dry_run_writes_nothing_and_cut_keeps_only_rows_read_back(tmp_path):
    src = str(tmp_path / "ds")
    RECIPES["carray"](src)
    pristine = _values(src)
    regions = C.superchunk_regions(src)
    second = sorted(regions)[1]
    (a, _), = [(a, b) for r, a, b in regions[second] if r == "chunk"][:1]
    C._xor(second, a + 50, 0x20)
    before = sorted(os.listdir(tmp_path))
    report = bcolzx.repair(src, dry_run=True)
    assert report.written is None and report.lost_rows == CHUNKLEN
    assert sorted(os.listdir(tmp_path)) == before
    first_lost = report.lost[""][0][0]
    cut = bcolzx.repair(src, str(tmp_path / "cut"), lost="cut")
    got = _values(str(tmp_path / "cut"))
    assert cut.rows_written == len(got) == first_lost
    np.testing.assert_array_equal(got, pristine[:first_lost])


def test_in_place_keeps_the_damaged_original(tmp_path):
    src = str(tmp_path / "ds")
    RECIPES["carray"](src)
    pristine = _values(src)
    regions = C.superchunk_regions(src)
    last = sorted(regions)[-1]
    (a, _), = [(a, b) for r, a, b in regions[last] if r == "chunk"][:1]
    C._xor(last, a + 50, 0x20)
    damaged = {p[len(src):]: open(p, "rb").read() for p in C.dataset_files(src)}
    report = bcolzx.repair(src)
    assert report.written == src and os.path.isdir(report.damaged)
    kept = {p[len(report.damaged):]: open(p, "rb").read()
            for p in C.dataset_files(report.damaged) if not p.endswith("__lock__")}
    assert kept == damaged
    assert bcolzx.verify(src).ok
    got = _values(src)
    lost = np.zeros(len(got), bool)
    for lo, hi in report.lost[""]:
        lost[lo:hi] = True
    assert lost.sum() == CHUNKLEN and _same_rows(got, pristine)[~lost].all()
    assert sorted(os.listdir(tmp_path)) == sorted(["ds", os.path.basename(report.damaged)])


def test_a_ctable_lists_lost_rows_per_column(tmp_path):
    src = str(tmp_path / "t")
    RECIPES["ctable"](src)
    want = bcolzx.open(src, mode="r")[:]
    regions = C.superchunk_regions(os.path.join(src, "f"))
    f0 = sorted(regions)[0]
    (a, _), = [(a, b) for r, a, b in regions[f0] if r == "chunk"][1:2]
    C._xor(f0, a + 40, 0x08)
    report = bcolzx.repair(src, str(tmp_path / "fixed"))
    assert list(report.lost) == ["f"] and report.lost_rows == 128
    (lo, hi), = report.lost["f"]
    t = bcolzx.open(str(tmp_path / "fixed"), mode="r")
    assert bcolzx.verify(str(tmp_path / "fixed")).ok
    got = t[:]
    for name in ("i", "s", "v"):
        np.testing.assert_array_equal(got[name], want[name])
    keep = np.ones(len(want), bool)
    keep[lo:hi] = False
    np.testing.assert_array_equal(got["f"][keep], want["f"][keep])
    assert (got["f"][lo:hi] == 0).all()
    assert t.attrs[ATTR]["lost"] == {"f": [[lo, hi]]} and t.attrs["title"] == "reliability"


def test_legacy_directories_are_repaired_into_the_bcolzx_format(tmp_path):
    src = str(tmp_path / "legacy")
    RECIPES["legacy-carray"](src)
    want = bcolzx.open(src, mode="r")[:]
    report = bcolzx.repair(src, str(tmp_path / "new"))
    assert report.lost == {}
    np.testing.assert_array_equal(bcolzx.open(str(tmp_path / "new"), mode="r")[:], want)
    assert bcolzx.verify(str(tmp_path / "new")).format == "bcolzx"


def test_the_command_line(tmp_path):
    from bcolzx.__main__ import main

    src = str(tmp_path / "ds")
    RECIPES["carray"](src)
    assert main(["repair", src, "--dry-run", "-q"]) == 0
    regions = C.superchunk_regions(src)
    first = sorted(regions)[0]
    (a, _), = [(a, b) for r, a, b in regions[first] if r == "chunk"][:1]
    C._xor(first, a + 33, 0x01)
    assert main(["repair", src, "--dry-run", "-q"]) == 1
    assert main(["repair", src, "-o", str(tmp_path / "out"), "-q", "--json"]) == 1
    assert bcolzx.verify(str(tmp_path / "out")).ok
    assert main(["repair", src, "-q", "--discard-damaged"]) == 1
    assert sorted(os.listdir(tmp_path)) == ["ds", "out"]
    assert main(["verify", src]) == 0


@pytest.mark.parametrize("kind", ["carray", "ctable"])
def test_a_damaged_meta_sizes_is_rebuilt_from_the_superchunk_files(kind, tmp_path):
    src = str(tmp_path / "ds")
    RECIPES[kind](src)
    want = bcolzx.open(src, mode="r")[:]
    sizes = os.path.join(src, "meta", "sizes") if kind == "carray" else \
        os.path.join(src, "f", "meta", "sizes")
    C._xor(sizes, 12, 0x01)
    with pytest.raises(bcolzx.CorruptDataError):
        bcolzx.open(src, mode="r")[:]
    report = bcolzx.repair(src, str(tmp_path / "out"))
    assert report.lost == {} and any("meta/sizes is damaged" in p for p in report.problems)
    got = bcolzx.open(str(tmp_path / "out"), mode="r")[:]
    if kind == "carray":
        np.testing.assert_array_equal(got, want)
    else:
        for name in want.dtype.names:
            np.testing.assert_array_equal(got[name], want[name])
    assert bcolzx.verify(str(tmp_path / "out")).ok
    assert not [n for n in os.listdir(tmp_path) if "shadow" in n]


def test_damage_that_costs_no_row_is_reported_and_left_behind(tmp_path):
    """A damaged zone map is rebuilt, an index corrected through its crc is written
    afresh: no row is lost, and the report says what was damaged."""
    src = str(tmp_path / "ds")
    RECIPES["carray"](src)
    want = _values(src)
    C._xor(os.path.join(src, "meta", "zonemap"), 30, 0x04)
    regions = C.superchunk_regions(src)
    first = sorted(regions)[0]
    (a, _), = [(a, b) for r, a, b in regions[first] if r == "index"]
    C._xor(first, a + 20, 0x10)
    report = bcolzx.repair(src, str(tmp_path / "out"))
    assert report.lost == {}
    assert any("zone map is damaged" in p for p in report.problems), report.problems
    assert any(p.startswith(first) and "index copy is damaged" in p
               for p in report.problems), report.problems
    assert bcolzx.verify(str(tmp_path / "out")).ok
    np.testing.assert_array_equal(_values(str(tmp_path / "out")), want)


# -- both index copies destroyed: a scan of the data region ---------------------------------


def _destroy_indexes(path: str, nslots: int, header: bool = True) -> None:
    """Both index copies of superchunk file `path` (and its header) overwritten."""
    from bcolzx._ext import index

    start = 0 if header else index.HEADER_SIZE
    with open(path, "r+b") as f:
        f.seek(start)
        f.write(bytes(random.Random(path).randrange(256)
                      for _ in range(index.data_start(nslots) - start)))


def _chunked(path: str, values, checksum: str = "crc32c", nslots: int = 8, chunklen: int = 50):
    from bcolzx._format.meta import Storage
    from bcolzx._storage import ChunkedArray, DirectoryStore

    arr = ChunkedArray(DirectoryStore.create(path, Storage(
        dtype=values.dtype, chunklen=chunklen, chunks_per_superchunk=nslots, checksum=checksum)))
    arr.append(values)
    arr.flush()
    return arr


def _lost_mask(report, n: int, column: str = "") -> np.ndarray:
    lost = np.zeros(n, bool)
    for a, b in report.lost.get(column, []):
        lost[a:b] = True
    return lost


@pytest.mark.parametrize("checksum", ["crc32c", "adler32"])
def test_both_index_copies_destroyed_the_chunks_that_verify_come_back_in_order(checksum,
                                                                               tmp_path):
    """Readers give up on a file whose two index copies are destroyed; repair scans
    its data region for chunks whose checksum verifies for one of its chunk
    numbers and puts each back in its slot.  A constant chunk (no bytes in the
    file) and a chunk whose bytes are damaged are reported lost; so are the chunks
    written before the damaged one, which could have been a newer version of any
    of them; those written after it come back."""
    src = str(tmp_path / "c")
    values = np.random.default_rng(3).normal(size=50 * 20)
    values[50 * 11:50 * 12] = 7.0  # chunk 11: a constant, stored as no bytes
    _chunked(src, values, checksum).close()
    target = os.path.join(src, "data", "__1.bin")  # chunks 8..15
    regions = C.superchunk_regions(src)[target]
    chunk13 = [(a, b) for r, a, b in regions if r == "chunk"][4]  # chunk 11 has no bytes
    _destroy_indexes(target, 8)
    with open(target, "r+b") as f:  # and one byte in the middle of chunk 13
        f.seek((chunk13[0] + chunk13[1]) // 2)
        byte = f.read(1)[0]
        f.seek(-1, os.SEEK_CUR)
        f.write(bytes([byte ^ 0x5A]))
    with pytest.raises(bcolzx.CorruptDataError):
        bcolzx.open(src, mode="r")[400:800]
    report = bcolzx.repair(src, str(tmp_path / "r"))
    assert report.lost == {"": [(400, 700)]}, report
    got = bcolzx.open(str(tmp_path / "r"), mode="r")[:]
    lost = _lost_mask(report, len(values))
    np.testing.assert_array_equal(got[~lost], values[~lost])
    assert (got[lost] == 0).all()
    assert bcolzx.verify(str(tmp_path / "r")).ok
    text = " ".join(report.problems)
    assert "__1.bin: neither index copy can be used" in text and "recovered 2 of 8" in text
    assert "chunks 8..13 are lost" in text
    # The damaged original is untouched, and still refuses the file's rows.
    with pytest.raises(bcolzx.CorruptDataError):
        bcolzx.open(src, mode="r")[400:800]


def test_a_scan_takes_the_version_of_a_chunk_written_last(tmp_path):
    """Rewritten chunks leave their older versions in the file (until compact): the
    one written last lies furthest into the file, and is the one taken -- when the
    zone map's exact bounds say that the chunk is not a constant written since
    (which stores no bytes).  Chunk 10 is rewritten three times with its values in
    another order (its bounds stay exact); chunk 12 gets a new minimum (its bounds
    are widened, no longer exact): a constant written over it cannot be ruled out,
    and it is lost."""
    src = str(tmp_path / "c")
    values = np.arange(50 * 16, dtype="i8")
    arr = _chunked(src, values)
    for k in (1, 2, 3):  # chunk 10 rewritten three times, chunk 12 once
        values[500:550] = np.roll(np.arange(500, 550), 7 * k)
        arr.write(500, values[500:550])
        arr.flush()
    values[610] = -1
    arr.write(610, values[610:611])
    arr.flush()
    arr.close()
    _destroy_indexes(os.path.join(src, "data", "__1.bin"), 8, header=False)
    report = bcolzx.repair(src, str(tmp_path / "r"))
    assert report.lost == {"": [(600, 650)]}, report
    got = bcolzx.open(str(tmp_path / "r"), mode="r")[:]
    lost = _lost_mask(report, len(values))
    np.testing.assert_array_equal(got[~lost], values[~lost])
    text = " ".join(report.problems)
    assert "of chunks 10 several versions verify" in text, text
    assert "12: the chunk found may have been rewritten as a constant" in text, text


def test_a_scan_never_takes_an_older_version_when_the_file_was_cut_inside_a_newer(tmp_path):
    """Chunk 10 rewritten, and the file cut inside its new version (the last bytes
    written), both index copies destroyed: its older version verifies, but the
    bytes cut short at the end of the file may have been (and are) a newer one:
    lost, not the older values."""
    src = str(tmp_path / "c")
    values = np.arange(50 * 16, dtype="f8")
    arr = _chunked(src, values)
    values[500:550] = -values[500:550]
    arr.write(500, values[500:550])
    arr.flush()
    arr.close()
    path = os.path.join(src, "data", "__1.bin")
    off, nb = _entry(src, 1, 2)
    with open(path, "r+b") as f:
        f.truncate(off + nb // 2)
    _destroy_indexes(path, 8)
    report = bcolzx.repair(src, str(tmp_path / "r"))
    assert report.lost == {"": [(400, 800)]}, report
    assert "a newer version of it may have been there" in " ".join(report.problems)


def test_a_scan_never_takes_an_older_version_the_zone_map_rules_out(tmp_path):
    """A chunk removed by trim and written again as a constant (no bytes) leaves its
    older data version as the only one in the file; the zone map's exact bounds
    (the constant) say it is not the current one: lost, not returned."""
    src = str(tmp_path / "c")
    values = np.arange(50 * 16, dtype="f8")
    arr = _chunked(src, values)
    arr.resize(500)                  # chunks 10..15 gone; their bytes stay in the file
    arr.flush()
    arr.append(np.full(150, 2.5))    # chunks 10..12 again: constants, exact bounds
    arr.append(np.arange(50.0) + 5000)  # chunk 13: data
    arr.flush()
    arr.close()
    want = np.r_[values[:500], np.full(150, 2.5), np.arange(50.0) + 5000]
    _destroy_indexes(os.path.join(src, "data", "__1.bin"), 8)
    report = bcolzx.repair(src, str(tmp_path / "r"))
    assert report.lost == {"": [(500, 650)]}, report
    got = bcolzx.open(str(tmp_path / "r"), mode="r")[:]
    lost = _lost_mask(report, len(want))
    np.testing.assert_array_equal(got[~lost], want[~lost])
    assert "older version" in " ".join(report.problems)


def test_a_scan_recovers_nothing_without_checksums(tmp_path):
    src = str(tmp_path / "c")
    _chunked(src, np.arange(800.0), checksum="none").close()
    _destroy_indexes(os.path.join(src, "data", "__1.bin"), 8)
    report = bcolzx.repair(src, str(tmp_path / "r"))
    assert report.lost == {"": [(400, 800)]}
    assert "recovered 0 of 8" in " ".join(report.problems)


def test_a_scan_of_a_ctable_column_of_strings(tmp_path):
    """Variable-length items (StringDType): a chunk's size is not its slot's, every
    version that verifies is a candidate; the column's other files are untouched."""
    src = str(tmp_path / "t")
    n = 600
    words = np.array([f"w{i % 37}-" * (i % 5) for i in range(n)], dtype=np.dtypes.StringDType())
    t = bcolzx.ctable([np.arange(n), words], names=["i", "s"], rootdir=src, chunklen=40)
    t.flush()
    del t
    nslots = bcolzx.open(src, mode="r").cols["s"].engine.store.geometry.nslots
    _destroy_indexes(os.path.join(src, "s", "data", "__0.bin"), nslots)
    report = bcolzx.repair(src, str(tmp_path / "r"))
    assert report.lost == {}, report
    got = bcolzx.open(str(tmp_path / "r"), mode="r")
    np.testing.assert_array_equal(got["i"][:], np.arange(n))
    assert list(got["s"][:]) == list(words)


# -- one index copy damaged: the chunks its lost slots had, found in the file ---------------


def _file(src: str, number: int):
    """(path, geometry, the generation meta/sizes names, offset of the copy in use, of
    the other copy) of superchunk file `number` of the carray `src`."""
    from bcolzx._ext import index
    from bcolzx._format.meta import read_sizes

    geometry = bcolzx.open(src, mode="r").engine.store.geometry
    generation = read_sizes(src).generations[number]
    path = os.path.join(src, "data", f"__{number}.bin")
    with open(path, "rb") as f:
        raw = f.read(index.data_start(geometry.nslots))
    offsets = [index.index_offset(geometry.nslots, w) for w in (0, 1)]
    which = [int.from_bytes(raw[o:o + 8], "little") for o in offsets].index(generation)
    return path, geometry, generation, offsets[which], offsets[1 - which]


def _entry(src: str, number: int, slot: int) -> tuple[int, int]:
    from bcolzx._format.superchunk import SuperchunkFile

    path, geometry, generation, _, _ = _file(src, number)
    return SuperchunkFile.load(path, number, geometry, generation).index.entry(slot)


def _flip(path: str, offset: int, mask: int = 0x5A) -> None:
    with open(path, "r+b") as f:
        f.seek(offset)
        byte = f.read(1)[0]
        f.seek(offset)
        f.write(bytes([byte ^ mask]))


def _two_commits(src: str):
    """A float64 carray of 16 chunks of 50 rows, 8 per superchunk file, written in two
    commits; returns its values.  In file 1 (chunks 8..15), the first commit wrote
    chunks 8, 9, 11 as data and 10 as a constant; the second rewrote chunk 9 (data)
    and chunk 11 (as a constant: its old data version stays in the file, behind the
    older index copy) and appended chunks 12..15."""
    values = np.arange(50 * 12, dtype="f8")
    values[500:550] = 7.0
    arr = _chunked(src, values)
    more = np.arange(50 * 4, dtype="f8") + 10_000
    values = np.r_[values, more]
    values[450:500] = -np.arange(50.0)
    values[550:600] = 3.0
    arr.write(450, values[450:500])
    arr.write(550, values[550:600])
    arr.append(more)
    arr.flush()
    arr.close()
    return values


def _repaired(src: str, dst: str, values) -> tuple:
    report = bcolzx.repair(src, dst)
    got = bcolzx.open(dst, mode="r")[:]
    lost = _lost_mask(report, len(values))
    np.testing.assert_array_equal(got[~lost], values[~lost])
    assert (got[lost] == 0).all()
    assert bcolzx.verify(dst).ok
    return report, " ".join(report.problems)


def test_the_committed_index_copy_destroyed_the_other_proves_what_it_still_can(tmp_path):
    """Only the index copy in use is destroyed; the other (the previous commit's) is
    intact.  Readers lose the whole file; repair recovers every chunk the file
    proves: the chunks appended since the previous commit (past the older copy's
    data) and, since every byte there is a chunk that verifies, the unchanged
    chunk 8 of the older copy -- each confirmed by the zone map's exact bounds
    (it is not a constant written since, which stores no bytes).  Lost: a
    constant (10); a chunk rewritten as a constant (11: its older data version is
    not the one); a chunk rewritten as data (9), whose bounds the zone map no
    longer knows exactly: a constant written after it cannot be ruled out."""
    src = str(tmp_path / "c")
    values = _two_commits(src)
    path, geometry, _, committed, _ = _file(src, 1)
    with open(path, "r+b") as f:
        f.seek(committed)
        f.write(bytes(random.Random(1).randrange(256) for _ in range(24 + 16 * 8)))
    with pytest.raises(bcolzx.CorruptDataError):
        bcolzx.open(src, mode="r")[400:450]
    report, text = _repaired(src, str(tmp_path / "r"), values)
    assert report.lost == {"": [(450, 600)]}, report
    assert "recovered 5 of the 8 chunks" in text, text
    assert "chunks 9..11 are lost" in text, text


@pytest.mark.parametrize("both", [False, True])
def test_a_chunk_written_then_made_a_constant_before_the_commit_is_not_taken(both, tmp_path):
    """Chunk 9 written with new values, then (before the flush) with a constant: its
    data version lies in the file past the older copy's data, the committed entry
    is the constant's, and the copy in use (or both copies) is destroyed.  The
    data version is not the committed one: lost, never returned."""
    src = str(tmp_path / "c")
    values = np.arange(50 * 12, dtype="f8")
    arr = _chunked(src, values)
    arr.write(450, np.arange(50.0) + 5000)
    values[450:500] = 1.0
    arr.write(450, values[450:500])
    arr.flush()
    arr.close()
    path, _, _, committed, _ = _file(src, 1)
    with open(path, "r+b") as f:
        f.seek(committed)
        f.write(bytes(24 + 16 * 8))
    if both:
        _destroy_indexes(path, 8, header=False)
    report, text = _repaired(src, str(tmp_path / "r"), values)
    assert report.lost == {"": [(450, 500)]}, report
    assert "chunks 9 are lost" in text, text


def test_several_damaged_bytes_in_an_entry_the_chunk_is_found_where_it_is(tmp_path):
    """Two bytes of one entry's offset damaged in the copy in use: no single-byte
    correction explains them, the entry points at no chunk that verifies, and
    readers lose that chunk (and the constant chunk 11, which the other copy does
    not confirm); its bytes are intact where the writer put them, repair finds them
    there, and the copy with the entry found matches its crc: that proves the
    constant too."""
    src = str(tmp_path / "c")
    values = _two_commits(src)
    path, _, _, committed, _ = _file(src, 1)
    entry = committed + 16 + 16 * 4  # slot 4: chunk 12
    _flip(path, entry, 0x10)
    _flip(path, entry + 1, 0x01)
    with pytest.raises(bcolzx.CorruptDataError):
        bcolzx.open(src, mode="r")[600:650]
    np.testing.assert_array_equal(bcolzx.open(src, mode="r")[650:800], values[650:800])
    report, text = _repaired(src, str(tmp_path / "r"), values)
    assert report.lost == {}, report
    assert "recovered 2 of the 2 chunks" in text, text


def test_a_damaged_chunk_comes_back_only_from_a_copy_of_its_own_bytes(tmp_path):
    """The index is intact and a chunk's bytes are damaged.  Chunk 9 was rewritten
    with the same values: its earlier version has the very bytes and checksum of
    the damaged one, which proves it; chunk 12 was rewritten with other values:
    its earlier version holds older values, and is never taken."""
    src = str(tmp_path / "c")
    values = np.arange(50 * 16, dtype="f8")
    arr = _chunked(src, values)
    arr.write(450, values[450:500])             # chunk 9 again: the same bytes
    values[600:650] = np.arange(50.0) * 2 + 1   # chunk 12: other values
    arr.write(600, values[600:650])
    arr.flush()
    arr.close()
    path = os.path.join(src, "data", "__1.bin")
    for slot in (1, 4):
        off, nb = _entry(src, 1, slot)
        _flip(path, off + nb // 2)
    with pytest.raises(bcolzx.ChecksumError):
        bcolzx.open(src, mode="r")[450:500]
    report, text = _repaired(src, str(tmp_path / "r"), values)
    assert report.lost == {"": [(600, 650)]}, report
    assert "chunk 9: its bytes" in text and "chunks 12 are lost" in text, text


def test_a_damaged_newer_version_is_never_replaced_by_an_older_one(tmp_path):
    """The committed copy destroyed and, in the data written since the older copy,
    the new version of chunk 9 damaged: the older copy's version of chunk 9 holds
    older values, and chunk 8's may too (the damaged bytes could be a newer version
    of it); both are lost, as are the constants.  The chunks written after the
    damaged bytes are proved."""
    src = str(tmp_path / "c")
    values = _two_commits(src)
    off, nb = _entry(src, 1, 1)
    path, _, _, committed, _ = _file(src, 1)
    _flip(path, off + nb // 2)
    with open(path, "r+b") as f:
        f.seek(committed)
        f.write(bytes(24 + 16 * 8))
    report, text = _repaired(src, str(tmp_path / "r"), values)
    assert report.lost == {"": [(400, 600)]}, report
    assert "recovered 4 of the 8 chunks" in text, text


# -- mixed damage on datasets with a history: never a wrong value ---------------------------


def _history(src: str, rng: random.Random):
    """A float64 carray (8 slots of 50 rows per file) written in two to five commits of
    random appends, rewrites (some with the same values, some with a constant, some
    rewritten twice before the flush: data, then a constant or other data) and
    truncations; returns its values."""
    values = np.arange(50 * rng.randrange(9, 17), dtype="f8") * rng.choice([1.0, 0.5, -1.0])
    arr = _chunked(src, values)
    for _ in range(rng.randrange(1, 5)):
        op = rng.random()
        if op < 0.4:
            a = rng.randrange(0, len(values) - 1)
            b = min(len(values), a + rng.randrange(1, 120))
            kind = rng.random()
            v = np.full(b - a, float(rng.randrange(3))) if kind < 0.3 else \
                values[a:b].copy() if kind < 0.45 else \
                np.arange(b - a, dtype="f8") * rng.random() + rng.randrange(10**6)
            values[a:b] = v
            arr.write(a, v)
            if rng.random() < 0.3:
                v = np.full(b - a, 1.0) if rng.random() < 0.5 else v + 1
                values[a:b] = v
                arr.write(a, v)
        elif op < 0.55 and len(values) > 100:
            values = values[:rng.randrange(50, len(values))].copy()
            arr.resize(len(values))
        else:
            more = np.arange(rng.randrange(1, 200), dtype="f8") + rng.randrange(10**6)
            if rng.random() < 0.3:
                more[:] = 2.0
            values = np.r_[values, more]
            arr.append(more)
        arr.flush()
    arr.close()
    return values


def _mixed_damage(src: str, rng: random.Random) -> list:
    """One to three of: the copy in use zeroed, a run of 2 to 16 bytes of it damaged,
    one byte of it, one byte of the other copy, one byte of the data region, the
    file cut in its data region; all in one superchunk file."""
    from bcolzx._ext import index
    from bcolzx._format.meta import read_sizes

    generations = read_sizes(src).generations
    number = rng.randrange(len(generations))
    path = os.path.join(src, "data", f"__{number}.bin")
    with open(path, "rb") as f:
        raw = bytearray(f.read())
    size, start = index.index_size(8), index.data_start(8)
    offs = [index.index_offset(8, w) for w in (0, 1)]
    which = [int.from_bytes(raw[o:o + 8], "little") for o in offs].index(generations[number])
    mine, other = offs[which], offs[1 - which]
    done = []
    for _ in range(rng.randrange(1, 4)):
        kind = rng.randrange(6)
        if kind == 0:
            raw[mine:mine + size] = bytes(size)
        elif kind == 1:
            p = mine + rng.randrange(size)
            for i in range(p, min(p + rng.randrange(2, 17), mine + size)):
                raw[i] ^= rng.randrange(1, 256)
        elif kind in (2, 3):
            raw[(mine if kind == 2 else other) + rng.randrange(size)] ^= rng.randrange(1, 256)
        elif len(raw) > start:
            p = rng.randrange(start, len(raw))
            if kind == 4:
                raw[p] ^= rng.randrange(1, 256)
            else:
                del raw[p:]
        done.append(kind)
    with open(path, "wb") as f:
        f.write(raw)
    return done


def _mixed_damage_campaign(tmp_path, seeds) -> tuple[int, int, list]:
    rows = lost_rows = 0
    wrong = []
    for seed in seeds:
        rng = random.Random(seed)
        src, dst = str(tmp_path / f"s{seed}"), str(tmp_path / f"d{seed}")
        values = _history(src, rng)
        damage = _mixed_damage(src, rng)
        try:
            report = bcolzx.repair(src, dst)
        except bcolzx.CorruptDataError:  # nothing to read the dataset through
            shutil.rmtree(src)
            continue
        got = bcolzx.open(dst, mode="r")[:]
        lost = _lost_mask(report, len(values))
        if len(got) != len(values) or not ((got == values) | lost).all():
            wrong.append((seed, damage))
        rows += len(values)
        lost_rows += int(lost.sum())
        shutil.rmtree(src)
        shutil.rmtree(dst)
    return rows, lost_rows, wrong


def test_mixed_damage_never_repairs_into_a_wrong_value(tmp_path):
    """Random damage to the index copies, the chunks and the end of a superchunk file
    of datasets with a random history of commits: every row repair carries over
    holds the value last committed (the rest are listed as lost)."""
    rows, lost, wrong = _mixed_damage_campaign(tmp_path, range(40, 80))
    assert not wrong, wrong
    assert lost < rows


@pytest.mark.stress
@pytest.mark.timeout(STRESS_TIMEOUT)
def test_mixed_damage_at_the_published_size(tmp_path):
    rows, lost, wrong = _mixed_damage_campaign(tmp_path, range(1600))
    print(f"mixed damage: 1600 datasets, {rows} rows, {lost} listed as lost, "
          f"{len(wrong)} with a wrong value")
    assert not wrong, wrong
