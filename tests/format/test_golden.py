"""Golden datasets: read by bcolzx and by an independent reader written from the spec.

Also: every kind of damage the spec documents, applied to a copy, raises its
documented error.
"""

import base64
import json
import math
import shutil
import struct
from pathlib import Path

import numpy as np
import pytest

from bcolzx._ext import codec
from bcolzx._storage import ChunkedArray, DirectoryStore
from bcolzx.errors import (
    ChecksumError,
    CorruptDataError,
    TruncatedDataError,
    UnsupportedFormatError,
)

from ..reference import crc32c_reference as crc32c

GOLDEN = Path(__file__).parent / "golden"
EXPECTED = np.array([100, -5, 102, 103, 104, 105, 106, 107, 0, 0, 0, 0, 7, 8, 9], dtype="<i4")
EMPTY = 2**64 - 1


def spec_reader(rootdir: Path) -> np.ndarray:
    """A reader written from docs/format alone (chunk decompression borrowed)."""
    storage = json.loads((rootdir / "meta" / "storage").read_text())
    sizes = json.loads((rootdir / "meta" / "sizes").read_text())
    assert storage["format"] == "bcolzx" and storage["format_version"] == 1
    dtype = np.dtype(storage["dtype"])
    length = sizes["shape"][0]
    rows = []
    for chunk, size in spec_chunks(rootdir, storage, sizes, storage["chunklen"] * dtype.itemsize):
        if chunk is None:  # the golden data has zero chunks only
            rows.append(np.zeros(size // dtype.itemsize, dtype))
        else:
            rows.append(np.frombuffer(chunk, dtype))
    out = np.concatenate(rows)[:length] if rows else np.empty(0, dtype)
    return np.concatenate([out, spec_journal(rootdir, storage, sizes, dtype)])


def spec_chunks(rootdir: Path, storage: dict, sizes: dict, chunk_size: int):
    """``(decompressed chunk, size)`` of each stored chunk in order (superchunk.md);
    ``(None, size)`` for a chunk of zeros (special entry)."""
    chunklen, k = storage["chunklen"], storage["chunks_per_superchunk"]
    nchunks = -(-sizes["shape"][0] // chunklen)
    isize = 24 + 16 * k
    for n, generation in enumerate(sizes["generations"]):
        raw = (rootdir / "data" / f"__{n}.bin").read_bytes()
        magic, version, options, ctype, typesize, size_in_header, nslots, number, reserved, \
            hcrc = struct.unpack_from("<4sBBBBIIQII", raw, 0)
        assert (magic, version, options, number, nslots, reserved) == (b"BCXS", 1, 0, n, k, 0)
        assert hcrc == crc32c(raw[:28]) and ctype == 1
        assert size_in_header == chunk_size
        copies = []
        for c in range(2):
            base = 32 + c * isize
            gen, used, last = struct.unpack_from("<QII", raw, base)
            entries = [struct.unpack_from("<QQ", raw, base + 16 + 16 * s) for s in range(k)]
            icrc, ires = struct.unpack_from("<II", raw, base + 16 + 16 * k)
            if icrc == crc32c(raw[base:base + 16 + 16 * k]) and ires == 0:
                copies.append((gen, used, last, entries))
        (gen, used, last, entries), = [c for c in copies if c[0] == generation]
        for slot in range(min(k, nchunks - n * k)):
            g = n * k + slot
            size = last if slot == used - 1 else chunk_size
            offset, nbytes = entries[slot]
            assert (offset, nbytes) != (EMPTY, EMPTY)
            if offset >> 63:
                assert offset & 0xFF == 1
                yield None, size
                continue
            assert 32 + 2 * isize <= offset and offset + nbytes + 4 <= len(raw)
            chunk = raw[offset:offset + nbytes]
            (stored,) = struct.unpack_from("<I", raw, offset + nbytes)
            assert stored == crc32c(struct.pack("<Q", g) + chunk)
            yield codec.Decompressor().decompress(chunk), size


NA_LENGTH = 0xFFFFFFFF


def spec_planar(chunk: bytes) -> list:
    """The rows of a planar table (docs/format/strings.md): bytes, None if missing."""
    (n,) = struct.unpack_from("<Q", chunk, 0)
    assert 8 + 4 * n <= len(chunk)
    planes = [chunk[8 + p * n:8 + (p + 1) * n] for p in range(4)]
    pos, rows = 8 + 4 * n, []
    for i in range(n):
        length = sum(planes[p][i] << (8 * p) for p in range(4))
        if length == NA_LENGTH:
            rows.append(None)
            continue
        rows.append(chunk[pos:pos + length])
        pos += length
    assert pos == len(chunk)
    return rows


def spec_vlen_reader(rootdir: Path) -> list:
    """The rows of a strings or bytes dataset, from docs/format/strings.md alone:
    str (NaN or None for a missing row) or bytes."""
    storage = json.loads((rootdir / "meta" / "storage").read_text())
    sizes = json.loads((rootdir / "meta" / "sizes").read_text())
    assert storage["format"] == "bcolzx" and storage["format_version"] == 2
    kind, chunklen = storage["vlen"], storage["chunklen"]
    assert (storage["dtype"] == "T") == (kind == "utf8") and kind in ("utf8", "bytes")
    missing = {None: None, "nan": float("nan"), "none": None}[storage.get("na_object")]
    length, rows = sizes["shape"][0], []
    for chunk, _ in spec_chunks(rootdir, storage, sizes, chunklen):
        assert chunk is not None  # no special entries in variable-length datasets
        items = spec_planar(chunk)
        assert len(items) == chunklen or len(rows) + len(items) >= length
        assert None not in items or "na_object" in storage
        rows.extend(items)
    rows = rows[:length]
    if kind == "bytes":
        return rows
    return [missing if r is None else r.decode("utf-8") for r in rows]


def spec_string_bounds(rootdir: Path) -> list:
    """``(min, max, has_missing)`` per chunk from a strings dataset's meta/zonemap."""
    zm = json.loads((rootdir / "meta" / "zonemap").read_text())
    assert zm["version"] == 1 and zm["dtype"] == "T"
    parts = [base64.b64decode(zm[f]) for f in ("min", "max", "nan")]
    crc = 0
    for part in parts:
        crc = crc32c(part, crc)
    assert crc == zm["crc32c"]
    lo, hi = spec_planar(parts[0]), spec_planar(parts[1])
    assert len(lo) == len(hi) == len(parts[2]) == zm["nchunks"]
    return list(zip(lo, hi, [bool(b) for b in parts[2]]))


def spec_journal(rootdir: Path, storage: dict, sizes: dict, dtype: np.dtype) -> np.ndarray:
    """The rows of ``meta/journal`` that extend the commit (docs/format §3b)."""
    path = rootdir / "meta" / "journal"
    if not path.exists():
        return np.empty(0, dtype)
    raw = path.read_bytes()
    length, chunklen = sizes["shape"][0], storage["chunklen"]
    rowbytes = dtype.itemsize
    body = {k: v for k, v in sizes.items() if not k.startswith("__")}
    base_id = crc32c(json.dumps(body, sort_keys=True, separators=(",", ":")).encode("ascii"))
    uid = (sizes.get("__uid__") or "").encode("ascii").ljust(16, b"\0")
    if len(raw) < 48:
        return np.empty(0, dtype)
    magic, flags, rb, base_rows, bid, juid, hcrc = struct.unpack_from("<4sIQQI16sI", raw)
    if (magic, flags, rb, base_rows, bid, juid) != (b"BXJ1", 0, rowbytes, length, base_id, uid) \
            or hcrc != crc32c(raw[:44]):
        return np.empty(0, dtype)  # a stale journal, of another commit
    pos, taken, rows = 48, 0, []
    while pos + 16 <= len(raw):
        nrows, first, crc = struct.unpack_from("<IQI", raw, pos)
        payload = raw[pos + 16:pos + 16 + nrows * rowbytes]
        if nrows < 1 or first != length + taken or len(payload) != nrows * rowbytes or \
                length % chunklen + taken + nrows >= chunklen or \
                crc != crc32c(raw[pos:pos + 12] + payload, hcrc):
            break
        rows.append(np.frombuffer(payload, dtype))
        taken += nrows
        pos += 16 + nrows * rowbytes
    return np.concatenate(rows) if rows else np.empty(0, dtype)


@pytest.fixture()
def golden(tmp_path):
    dst = tmp_path / "i4_small"
    shutil.copytree(GOLDEN / "i4_small", dst)
    return dst


def _bcolzx_read(rootdir):
    arr = ChunkedArray(DirectoryStore.open(str(rootdir), readonly=True))
    return arr.read(0, len(arr))


def test_independent_reader_decodes_the_golden_dataset():
    np.testing.assert_array_equal(spec_reader(GOLDEN / "i4_small"), EXPECTED)


#: i4_journal: rows 0..10 committed (chunklen 8), rows 11..13 in two journal records.
JOURNAL_EXPECTED = np.arange(14, dtype="<i4")


def test_both_readers_apply_the_golden_journal():
    np.testing.assert_array_equal(spec_reader(GOLDEN / "i4_journal"), JOURNAL_EXPECTED)
    np.testing.assert_array_equal(_bcolzx_read(GOLDEN / "i4_journal"), JOURNAL_EXPECTED)


def _journal_damage(name, root):
    path = root / "meta" / "journal"
    raw = path.read_bytes()
    if name == "torn last record":
        path.write_bytes(raw[:-2])
    elif name == "flipped byte in the first record":
        _patch(path, 48 + 16, bytes([raw[48 + 16] ^ 1]))
    elif name == "stale (another commit)":
        sizes = root / "meta" / "sizes"
        meta = json.loads(sizes.read_text())
        meta["cbytes"] += 1  # any other commit has another identity (the seal aside)
        sizes.write_text(json.dumps({k: v for k, v in meta.items() if not k.startswith("__")}))
    elif name == "header crc":
        _patch(path, 44, b"\0\0\0\0")
    elif name == "cut inside the header":
        path.write_bytes(raw[:30])


@pytest.mark.parametrize("name, kept", [("torn last record", 13), ("header crc", 11),
                                        ("flipped byte in the first record", 11),
                                        ("cut inside the header", 11)])
def test_a_damaged_journal_gives_a_prefix_never_a_wrong_row(tmp_path, name, kept):
    root = tmp_path / "j"
    shutil.copytree(GOLDEN / "i4_journal", root)
    _journal_damage(name, root)
    for got in (spec_reader(root), _bcolzx_read(root)):
        np.testing.assert_array_equal(got, JOURNAL_EXPECTED[:kept])


def test_a_stale_journal_is_ignored(tmp_path):
    root = tmp_path / "j"
    shutil.copytree(GOLDEN / "i4_journal", root)
    _journal_damage("stale (another commit)", root)
    np.testing.assert_array_equal(spec_reader(root), JOURNAL_EXPECTED[:11])


#: str_small (docs/format/strings.md): StringDType(na_object=nan), chunklen 4, 2 chunks
#: per superchunk; row 1 was "ab", rewritten to "AB" (chunk 0 stored twice).
STR_EXPECTED = ["", "AB", "é", "😀 4-byte", math.nan, "x" * 40, "日本語", "zz", "AAPL", "",
                "b\x00c", "Ωmega", "tail"]
#: bytes_small: vlen_dtype(bytes), chunklen 4.
BYTES_EXPECTED = [b"", b"\x00\xff", b"abc", b"\xc3", b"z" * 300, b"end"]


def _same_strings(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert (isinstance(g, float) and g != g) if isinstance(w, float) else g == w, (g, w)


def test_independent_reader_decodes_the_golden_strings():
    root = GOLDEN / "str_small"
    _same_strings(spec_vlen_reader(root), STR_EXPECTED)
    bounds = spec_string_bounds(root)
    for c, (lo, hi, nan) in enumerate(bounds[:len(STR_EXPECTED) // 4]):
        rows = STR_EXPECTED[4 * c:4 * c + 4]
        text = [r.encode("utf-8") for r in rows if isinstance(r, str)]
        assert lo <= min(text) and max(text) <= hi and len(lo) <= 32 and len(hi) <= 32
        assert nan == any(isinstance(r, float) for r in rows)
    assert spec_vlen_reader(GOLDEN / "bytes_small") == BYTES_EXPECTED


def test_bcolzx_reads_the_golden_strings():
    import bcolzx

    got = bcolzx.open(str(GOLDEN / "str_small"), mode="r")
    assert got.dtype == np.dtypes.StringDType(na_object=np.nan) and got.dflt == "?"
    _same_strings(got[:].tolist(), STR_EXPECTED)
    _same_strings([got[i] for i in range(len(got))], STR_EXPECTED)
    assert bcolzx.verify(str(GOLDEN / "str_small")).ok
    raw = bcolzx.open(str(GOLDEN / "bytes_small"), mode="r")
    assert raw.dtype == bcolzx.vlen_dtype(bytes) and raw.dtype.metadata == {"vlen": bytes}
    assert raw[:].tolist() == BYTES_EXPECTED


def test_a_damaged_string_chunk_is_refused(tmp_path):
    import bcolzx

    root = tmp_path / "s"
    shutil.copytree(GOLDEN / "str_small", root)
    path = root / "data" / "__1.bin"
    _patch(path, 150, bytes([path.read_bytes()[150] ^ 1]))  # inside chunk 2
    with pytest.raises(ChecksumError):
        bcolzx.open(str(root), mode="r")[8]
    assert not bcolzx.verify(str(root)).ok


def test_bcolzx_reads_the_golden_dataset():
    got = _bcolzx_read(GOLDEN / "i4_small")
    assert got.dtype == np.dtype("<i4")
    np.testing.assert_array_equal(got, EXPECTED)
    arr = ChunkedArray(DirectoryStore.open(str(GOLDEN / "i4_small"), readonly=True))
    assert arr.store.storage.dflt == -1


def _patch(path, offset, data):
    raw = bytearray(path.read_bytes())
    raw[offset:offset + len(data)] = data
    path.write_bytes(bytes(raw))


def _fix_header_crc(path):
    raw = path.read_bytes()
    _patch(path, 28, struct.pack("<I", crc32c(raw[:28])))


def _current_copy_base(path, generation, k=2):
    raw = path.read_bytes()
    isize = 24 + 16 * k
    for c in range(2):
        if struct.unpack_from("<Q", raw, 32 + c * isize)[0] == generation:
            return 32 + c * isize
    raise AssertionError("no copy with that generation")


def _damage_entry_past_eof(root):
    path = root / "data" / "__0.bin"
    base = _current_copy_base(path, 3)
    _patch(path, base + 16, struct.pack("<QQ", 10_000, 64))
    raw = path.read_bytes()
    _patch(path, base + 16 + 32, struct.pack("<I", crc32c(raw[base:base + 16 + 32])))


def _damage_version(root):
    path = root / "data" / "__0.bin"
    _patch(path, 4, b"\x02")
    _fix_header_crc(path)


def _damage_meta(root, key, value):
    path = root / "meta" / "storage"
    meta = json.loads(path.read_text())
    meta[key] = value
    path.write_text(json.dumps(meta))


def _damage_sizes_longer(root):
    path = root / "meta" / "sizes"
    meta = json.loads(path.read_text())
    meta["shape"] = [30]
    meta["generations"] = [3, 2, 1, 1]
    path.write_text(json.dumps(meta))


def _swap(root):
    d = root / "data"
    (d / "__0.bin").rename(d / "x")
    (d / "__1.bin").rename(d / "__0.bin")
    (d / "x").rename(d / "__1.bin")


DAMAGE = {
    "newer file version": (_damage_version, UnsupportedFormatError),
    "unknown option bit": (lambda r: (_patch(r / "data" / "__0.bin", 5, b"\x80"),
                                      _fix_header_crc(r / "data" / "__0.bin")),
                           UnsupportedFormatError),
    "file shorter than header and indexes": (
        lambda r: (r / "data" / "__1.bin").write_bytes((r / "data" / "__1.bin").read_bytes()[:100]),
        TruncatedDataError),
    "file cut inside a chunk": (
        lambda r: (r / "data" / "__1.bin").write_bytes((r / "data" / "__1.bin").read_bytes()[:-3]),
        CorruptDataError),
    "missing file": (lambda r: (r / "data" / "__1.bin").unlink(), TruncatedDataError),
    "swapped files": (_swap, CorruptDataError),
    "entry past end of file": (_damage_entry_past_eof, CorruptDataError),
    "chunk byte flipped": (lambda r: _patch(r / "data" / "__1.bin", 0xA8, b"\x09"), ChecksumError),
    "stored checksum flipped": (lambda r: _patch(r / "data" / "__1.bin", 0xBC, b"\x00"),
                                ChecksumError),
    # 4: this reader knows 1 (fixed-size items), 2 (variable-length items) and 3 (parts, §5).
    "newer format version": (lambda r: _damage_meta(r, "format_version", 4),
                             UnsupportedFormatError),
    "legacy dataset": (lambda r: _damage_meta(r, "format", None), UnsupportedFormatError),
    "invalid sizes JSON": (lambda r: (r / "meta" / "sizes").write_text("{"), CorruptDataError),
    "metadata longer than the data": (_damage_sizes_longer, CorruptDataError),
    "missing storage": (lambda r: (r / "meta" / "storage").unlink(), FileNotFoundError),
}


#: Damage a reader gets past (docs/format/superchunk.md §6): the header is replaced by
#: the metadata's geometry, one damaged byte of an index copy is located by its crc.
SALVAGED = {
    "bad magic": lambda r: _patch(r / "data" / "__0.bin", 0, b"XXXX"),
    "header crc": lambda r: _patch(r / "data" / "__1.bin", 9, b"\x77"),
    "current index copy crc": lambda r: _patch(
        r / "data" / "__0.bin", _current_copy_base(r / "data" / "__0.bin", 3) + 20, b"\x01"),
}


@pytest.mark.parametrize("name", sorted(SALVAGED))
def test_damage_a_reader_salvages_reads_the_values_and_verify_reports_it(golden, name):
    import bcolzx

    SALVAGED[name](golden)
    np.testing.assert_array_equal(_bcolzx_read(golden), EXPECTED)
    report = bcolzx.verify(str(golden))
    assert not report.ok and all("__" in p.path for p in report.problems), str(report)


@pytest.mark.parametrize("name", sorted(DAMAGE))
def test_each_documented_damage_raises_its_documented_error(golden, name):
    damage, error = DAMAGE[name]
    damage(golden)
    with pytest.raises(error) as info:
        _bcolzx_read(golden)
    if isinstance(info.value, CorruptDataError) and name not in (
            "invalid sizes JSON", "metadata longer than the data"):
        assert info.value.path is not None and "__" in info.value.path
