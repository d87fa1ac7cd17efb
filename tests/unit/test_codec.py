"""The chunk codec: round trips, getitem, parallel decompression, constants, errors."""

import threading

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bcolzx._ext import codec
from bcolzx.errors import (
    BcolzxError,
    BufferTooSmallError,
    CorruptDataError,
    TruncatedDataError,
)

DTYPES = ["u1", "i2", "i4", "i8", "f4", "f8", "c16", "S7", "M8[ns]", "?"]
CODECS = sorted(codec.CODECS)


def _data(dtype, n, seed=0):
    rng = np.random.default_rng(seed)
    raw = rng.integers(0, 64, size=n * np.dtype(dtype).itemsize, dtype=np.uint8)
    if n > 4:  # some runs, as real data has
        raw[: len(raw) // 3] = 0
    return raw.view(dtype) if n else np.empty(0, dtype)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    cname=st.sampled_from(CODECS),
    shuffle=st.sampled_from(codec.FILTERS),
    clevel=st.integers(0, 9),
    dtype=st.sampled_from(DTYPES),
    n=st.one_of(st.integers(0, 40), st.integers(0, 70_000)),
    extra=st.integers(0, 7),
)
def test_roundtrip_any_codec_filter_level_dtype_size(cname, shuffle, clevel, dtype, n, extra):
    arr = _data(dtype, n)
    # Sizes that are not a multiple of the typesize too.
    src = arr.tobytes() + bytes(range(extra))
    comp = codec.Compressor(cname, clevel, shuffle, arr.dtype.itemsize)
    chunk = comp.compress(src)
    assert len(chunk) <= len(src) + codec.MAX_OVERHEAD
    nbytes, cbytes, _ = codec.chunk_sizes(chunk)
    assert (nbytes, cbytes) == (len(src), len(chunk))
    dec = codec.Decompressor()
    assert dec.decompress(chunk) == src
    out = bytearray(len(src))
    assert dec.decompress(chunk, out) is out and bytes(out) == src


def test_decompress_writes_straight_into_numpy_output():
    arr = np.linspace(0, 100, 123_457)
    chunk = codec.Compressor("zstd", 3, codec.BITSHUFFLE, 8).compress(arr)
    out = np.empty_like(arr)
    before = out.__array_interface__["data"][0]
    codec.Decompressor().decompress(chunk, out)
    assert out.__array_interface__["data"][0] == before
    np.testing.assert_array_equal(out, arr)


def test_compress_into_caller_buffer():
    arr = np.arange(10_000, dtype="i8")
    comp = codec.Compressor("lz4", 5, codec.SHUFFLE, 8)
    dest = bytearray(arr.nbytes + codec.MAX_OVERHEAD)
    n = comp.compress_into(arr, dest)
    assert codec.Decompressor().decompress(dest[:n]) == arr.tobytes()
    with pytest.raises(BufferTooSmallError):
        comp.compress_into(np.random.default_rng(1).random(1000), bytearray(100))


@pytest.mark.parametrize("typesize", [1, 2, 4, 8, 16])
def test_getitem_ranges_at_chunk_and_block_edges(typesize):
    nitems = 50_000
    arr = _data(f"V{typesize}", nitems, seed=typesize)
    comp = codec.Compressor("lz4", 5, codec.SHUFFLE, typesize, blocksize=4096)
    chunk = comp.compress(arr)
    dec = codec.Decompressor()
    per_block = 4096 // typesize
    raw = arr.tobytes()
    edges = [0, 1, per_block - 1, per_block, per_block + 1, nitems - 1]
    for start in edges:
        for n in (0, 1, 2, per_block, nitems - start):
            n = min(n, nitems - start)
            got = dec.getitem(chunk, start, n)
            assert got == raw[start * typesize:(start + n) * typesize], (start, n)
    out = bytearray(3 * typesize)
    assert dec.getitem(chunk, nitems - 3, 3, out) is out
    assert bytes(out) == raw[-3 * typesize:]


def test_getitem_outside_the_chunk_raises_index_error():
    chunk = codec.Compressor(typesize=4).compress(np.arange(100, dtype="i4"))
    dec = codec.Decompressor()
    for start, n in [(-1, 1), (99, 2), (100, 1), (0, 101), (5, -1)]:
        with pytest.raises(IndexError):
            dec.getitem(chunk, start, n)
    with pytest.raises(BufferTooSmallError):
        dec.getitem(chunk, 0, 10, bytearray(39))


@pytest.mark.parametrize("nthreads", [1, 2, 3, 8])
@pytest.mark.parametrize("nchunks", [0, 1, 2, 5, 33])
def test_parallel_decompression_equals_serial(nthreads, nchunks):
    rng = np.random.default_rng(nchunks)
    parts = [rng.normal(size=rng.integers(0, 20_000)).round(2) for _ in range(nchunks)]
    comp = codec.Compressor("zstd", 1, codec.SHUFFLE, 8)
    chunks = [comp.compress(p) for p in parts]
    expected = b"".join(p.tobytes() for p in parts)
    out = bytearray(len(expected) + 5)
    assert codec.Decompressor(nthreads).decompress_many(chunks, out) == len(expected)
    serial = b"".join(codec.Decompressor(1).decompress(ch) for ch in chunks)
    assert bytes(out[: len(expected)]) == serial == expected


def test_decompress_many_accepts_memoryview_slices_of_one_file_buffer():
    comp = codec.Compressor(typesize=8)
    chunks = [comp.compress(np.full(1000, i, dtype="f8") + np.arange(1000)) for i in range(6)]
    blob = memoryview(b"".join(chunks))
    views, pos = [], 0
    for ch in chunks:
        views.append(blob[pos:pos + len(ch)])
        pos += len(ch)
    out = np.empty(6000)
    codec.Decompressor(2).decompress_many(views, out)
    np.testing.assert_array_equal(out.reshape(6, 1000)[4], 4 + np.arange(1000))


def test_decompress_many_reports_the_damaged_chunk():
    comp = codec.Compressor(typesize=8)
    chunks = [comp.compress(np.arange(i, i + 5000, dtype="f8")) for i in range(4)]
    chunks[2] = chunks[2][:40]
    with pytest.raises(TruncatedDataError) as info:
        codec.Decompressor(2).decompress_many(chunks, bytearray(4 * 40_000))
    assert info.value.chunk == 2
    with pytest.raises(BufferTooSmallError):
        codec.Decompressor(2).decompress_many(chunks[:2], bytearray(79_999))


def test_one_decompressor_shared_by_threads_is_safe():
    arr = np.arange(200_000, dtype="i8")
    chunk = codec.Compressor(typesize=8).compress(arr)
    dec = codec.Decompressor(2)
    errors = []

    def work():
        try:
            for _ in range(20):
                if dec.decompress(chunk) != arr.tobytes():
                    errors.append("wrong data")
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_blosc2_multithreaded_contexts_roundtrip():
    arr = np.random.default_rng(3).random(1_000_000)
    chunk = codec.Compressor("lz4", 5, codec.SHUFFLE, 8, nthreads=2).compress(arr)
    assert codec.Decompressor(2).decompress(chunk) == arr.tobytes()


@pytest.mark.parametrize(
    "kwargs",
    [
        {"cname": "snappy"},
        {"clevel": 10},
        {"clevel": -1},
        {"shuffle": 3},
        {"typesize": 0},
        {"blocksize": -1},
        {"nthreads": 0},
        {"bytedelta": True, "shuffle": 0},
        {"bytedelta": True, "typesize": 256},
    ],
)
def test_bad_compressor_parameters_raise_value_error(kwargs):
    with pytest.raises(ValueError):
        codec.Compressor(**kwargs)


def test_bad_argument_types():
    with pytest.raises(TypeError):
        codec.Compressor(clevel="5")
    with pytest.raises(TypeError):
        codec.Decompressor(nthreads=1.5)
    with pytest.raises(TypeError):
        codec.Compressor().compress(12345)
    with pytest.raises(ValueError):  # not C-contiguous
        codec.Compressor().compress(np.arange(100)[::2])
    with pytest.raises(ValueError):  # read-only output
        codec.Decompressor().decompress(codec.Compressor().compress(b"abcd"), b"xxxx")


def test_truncated_chunk_raises_truncated_data_error():
    chunk = codec.Compressor(typesize=8).compress(np.arange(10_000, dtype="f8"))
    dec = codec.Decompressor()
    for cut in (0, 5, 15, 16, 31, len(chunk) - 1):
        with pytest.raises(TruncatedDataError):
            dec.decompress(chunk[:cut])
    with pytest.raises(TruncatedDataError):
        codec.chunk_sizes(b"short")


def test_garbage_raises_corrupt_data_error_not_a_crash():
    rng = np.random.default_rng(7)
    dec = codec.Decompressor()
    chunk = codec.Compressor("lz4", 9, codec.SHUFFLE, 8).compress(np.cumsum(rng.random(20_000)))
    raised = 0
    for _ in range(300):
        bad = np.frombuffer(chunk, dtype=np.uint8).copy()
        bad[rng.integers(0, len(bad), size=8)] = rng.integers(0, 256, size=8, dtype=np.uint8)
        try:
            dec.decompress(bytes(bad))
        except BcolzxError as exc:
            assert isinstance(exc, (CorruptDataError, BufferTooSmallError, ValueError))
            raised += 1
    # Without checksums some flips in compressed payload decode silently (the
    # storage layer's checksums catch those); header damage must always raise.
    assert raised > 0
    for pos in (4, 5, 6, 7, 12, 13, 14, 15):  # nbytes and cbytes in the header
        bad = bytearray(chunk)
        bad[pos] ^= 0xFF
        with pytest.raises(BcolzxError):
            dec.decompress(bytes(bad))


def test_empty_buffer_roundtrip():
    chunk = codec.Compressor().compress(b"")
    assert codec.chunk_sizes(chunk)[0] == 0
    assert codec.Decompressor().decompress(chunk) == b""
    assert codec.Decompressor().decompress_many([chunk, chunk], bytearray(0)) == 0


def test_library_information():
    assert codec.blosc2_version().count(".") >= 2
    assert set(codec.CODECS) <= set(codec.compressor_list())
    assert codec.LINKAGE in ("static", "shared")
    assert codec.BUILD_VERSION >= (2, 14, 0)
    assert "Compressor(cname='zstd'" in repr(codec.Compressor("zstd"))


@pytest.mark.parametrize(
    "runtime, ok",
    [("3.3.5", True), ("3.3.0", True), ("3.4.1", True), ("3.2.9", False), ("2.22.1", False),
     ("4.0.0", False), ("3.3.5.dev", True), ("3.10.0-rc1", True)],
)
def test_shared_build_refuses_an_incompatible_runtime_library(runtime, ok):
    if ok:
        codec.check_runtime_version(runtime, (3, 3, 5))
    else:
        with pytest.raises(ImportError, match="built against C-Blosc2 3.3.5"):
            codec.check_runtime_version(runtime, (3, 3, 5))


@pytest.mark.parametrize("dtype", ["f8", "f4", "i8", "u2", "i1"])
@pytest.mark.parametrize("blocksize", [0, 4096, 32768])
def test_bytedelta_roundtrip_and_records_its_filters(dtype, blocksize):
    data = np.linspace(0, 1000, 50_000).astype(dtype)
    typesize = data.dtype.itemsize
    plain = codec.Compressor("lz4", 5, codec.SHUFFLE, typesize, blocksize).compress(data)
    delta = codec.Compressor("lz4", 5, codec.SHUFFLE, typesize, blocksize,
                             bytedelta=True).compress(data)
    assert delta != plain
    # Any Decompressor decodes it: the chunk records its own filter pipeline.
    out = np.empty_like(data)
    codec.Decompressor(1).decompress(delta, out)
    np.testing.assert_array_equal(out, data)
    part = np.empty(7, dtype)
    codec.Decompressor(1).getitem(delta, 12_345, 7, part.view(np.uint8))
    np.testing.assert_array_equal(part, data[12_345:12_352])


def test_bytedelta_compresses_smooth_data_better_in_small_blocks():
    data = np.linspace(0, 1e6, 131072)
    plain = codec.Compressor("lz4", 5, codec.SHUFFLE, 8, 32768).compress(data)
    delta = codec.Compressor("lz4", 5, codec.SHUFFLE, 8, 32768, bytedelta=True).compress(data)
    assert len(delta) * 2 < len(plain)
    assert codec.chunk_info(delta)["blocksize"] == 32768


@pytest.mark.parametrize("typesize", [1, 2, 4, 8])
@pytest.mark.parametrize("blocksize", [64, 256, 32768])
def test_getitem_of_exactly_one_block_across_a_block_boundary(typesize, blocksize):
    # C-Blosc2 3.3.5 returns the wrong block for such a range; codec works around it.
    dtype = np.dtype(f"u{typesize}")
    data = np.arange(200_000, dtype=dtype) * dtype.type(7)  # wraps for narrow types
    chunk = codec.Compressor("lz4", 5, codec.SHUFFLE, typesize, blocksize).compress(data)
    per_block = blocksize // typesize
    for start in (1, per_block // 2, per_block + 3, 3 * per_block - 1):
        out = np.empty(per_block, dtype)
        codec.Decompressor(1).getitem(chunk, start, per_block, out.view(np.uint8))
        np.testing.assert_array_equal(out, data[start:start + per_block])


@pytest.mark.parametrize("typesize", [3, 5, 6, 7, 10, 12, 24, 40, 255])
@pytest.mark.parametrize("shuffle,bytedelta", [(codec.NOSHUFFLE, False), (codec.SHUFFLE, False),
                                               (codec.BITSHUFFLE, False), (codec.SHUFFLE, True)])
def test_block_size_not_a_multiple_of_the_typesize(typesize, shuffle, bytedelta):
    """C-Blosc2 writes undecodable chunks for such block sizes: they are rounded down."""
    rng = np.random.default_rng(typesize)
    data = rng.integers(0, 4, size=typesize * 9000, dtype=np.uint8)
    comp = codec.Compressor("lz4", 5, shuffle, typesize, 32768, bytedelta=bytedelta)
    assert comp.blocksize % typesize == 0 and 0 < comp.blocksize <= 32768
    chunk = comp.compress(data)
    out = np.empty_like(data)
    codec.Decompressor().decompress(chunk, out)
    np.testing.assert_array_equal(out, data)
    part = np.empty(typesize * 5, np.uint8)
    codec.Decompressor().getitem(chunk, 4000, 5, part)
    np.testing.assert_array_equal(part, data[typesize * 4000:typesize * 4005])


@pytest.mark.parametrize("nthreads", [1, 2])
def test_one_decompressor_for_blosc2_and_blosc1_chunks(nthreads):
    """A context that decoded a byte-delta Blosc2 chunk decodes later shuffled
    C-Blosc 1.x chunks wrongly (C-Blosc2 keeps stale filters): they must not
    share one, whatever the order and the call."""
    blosc = pytest.importorskip("blosc", reason="python-blosc makes the C-Blosc 1.x chunks")
    data = [np.arange(1000, dtype="i4"), np.linspace(0, 1, 600), np.arange(3000, dtype="i2")]
    chunks = [(a, codec.Compressor("lz4", 5, codec.SHUFFLE, a.itemsize, bytedelta=True).compress(a))
              for a in data]
    chunks += [(a, blosc.compress(a.tobytes(), typesize=a.itemsize, shuffle=blosc.SHUFFLE,
                                  cname="lz4")) for a in data]
    dec = codec.Decompressor(nthreads)
    for a1, c1 in chunks:
        for a2, c2 in chunks:
            dec.decompress(c1, np.empty_like(a1))
            out = np.empty_like(a2)
            dec.decompress(c2, out)
            np.testing.assert_array_equal(out, a2)
            assert dec.getitem(c2, 1, 3) == a2[1:4].tobytes()
            both = np.empty(a1.nbytes + a2.nbytes, np.uint8)
            dec.decompress_many([c1, c2], both)
            assert both[a1.nbytes:].tobytes() == a2.tobytes()


def test_a_short_buffer_does_not_change_the_block_size_of_later_chunks():
    """C-Blosc2 keeps the block size it chose for a short buffer (a leftover) in its
    context; the compressor must not let it cut later chunks in small blocks."""
    comp = codec.Compressor("lz4", 5, codec.SHUFFLE, 8, 32 << 10, 2)
    full = np.arange(1 << 17, dtype="i8")
    normal = codec.chunk_info(comp.compress(full))["blocksize"]
    assert normal == 32 << 10
    for short in (625, 1024, 6000):
        comp.compress(full[:short])
        assert codec.chunk_info(comp.compress(full))["blocksize"] == normal
    first_short = codec.Compressor("lz4", 5, codec.SHUFFLE, 8, 32 << 10, 1)
    first_short.compress(full[:650])
    assert codec.chunk_info(first_short.compress(full))["blocksize"] == normal


@pytest.mark.parametrize("dtype, nitems, blocksize, bytedelta", [
    ("i8", 1024, 5200, False), ("i8", 1024, 2400, True), ("i4", 1000, 1200, False),
    ("i8", 1001, 4000, True)])
def test_getitem_of_ranges_of_a_chunk_whose_last_block_is_short(dtype, nitems, blocksize,
                                                                      bytedelta):
    """C-Blosc2 returns the wrong block for a range of exactly the short last block's
    bytes that does not start on a block boundary (regression: a carray read
    ``c[345:719]`` of a chunk written after a 650-row leftover got rows 650..1023)."""
    a = np.arange(nitems, dtype=dtype)
    chunk = codec.Compressor("lz4", 5, codec.SHUFFLE, a.itemsize, blocksize, 1,
                             bytedelta=bytedelta).compress(a)
    block = codec.chunk_info(chunk)["blocksize"] // a.itemsize
    last = nitems % block
    assert last
    dec = codec.Decompressor(1)
    rng = np.random.default_rng(0)
    # every start for the sizes around a block's and the last block's; random others
    ranges = [(start, n) for n in {1, 2, last - 1, last, last + 1, block - 1, block, block + 1}
              for start in range(nitems - n + 1) if n > 0]
    ranges += [(int(s), int(rng.integers(1, nitems - s + 1)))
               for s in rng.integers(0, nitems, 2000)]
    for start, n in ranges:
        out = np.empty(n, dtype)
        dec.getitem(chunk, start, n, out.view(np.uint8))
        if not np.array_equal(out, a[start:start + n]):
            raise AssertionError(f"getitem({start}, {n}) gave {out[:3]}...")


def _legacy_chunk(name: str, n: int = 0) -> bytes:
    """Chunk `n` of a legacy bcolz fixture: a C-Blosc 1.x chunk, after the file's
    16-byte bloscpack header."""
    from tests.reliability.datasets import LEGACY

    with open(LEGACY / name / "data" / f"__{n}.blp", "rb") as f:
        return f.read()[16:]


def _good_chunks() -> list[bytes]:
    """Chunks of every kind of header: C-Blosc 1.x (shuffle, bitshuffle, none; blosclz,
    lz4, zstd) and Blosc2 (shuffle, byte-delta, bitshuffle, a dictionary)."""
    out = [_legacy_chunk(name) for name in ("ca_int32_leftover", "ca_float32_zstd_bitshuffle",
                                             "ca_int32_blosclz_noshuffle", "ca_float64_lz4hc")]
    a = np.arange(20_000, dtype="i8") * 3
    out.append(codec.Compressor("lz4", 5, codec.SHUFFLE, 8).compress(a))
    out.append(codec.Compressor("zstd", 5, codec.SHUFFLE, 8, bytedelta=True).compress(a))
    out.append(codec.Compressor("blosclz", 5, codec.BITSHUFFLE, 8, 4096).compress(a))
    try:  # a chunk that carries a ZSTD dictionary (bcolzx never writes one)
        import blosc2
    except ImportError:  # pragma: no cover - python-blosc2 is the build's requirement
        return out
    out.append(blosc2.compress2(np.tile(a[:5000], 8), typesize=8, codec=blosc2.Codec.ZSTD,
                                use_dict=True))
    assert out[-1][31] & 0x01  # BLOSC2_USEDICT
    return out


def _decodes_right(dec: codec.Decompressor, goods: list[bytes], want: list[bytes]) -> bool:
    for chunk, expected in zip(goods, want):
        if dec.decompress(chunk) != expected or dec.getitem(chunk, 1, 5) != expected[
                codec.chunk_info(chunk)["typesize"]:6 * codec.chunk_info(chunk)["typesize"]]:
            return False
    out = bytearray(sum(map(len, want)))
    dec.decompress_many(goods, out)
    return bytes(out) == b"".join(want)


@pytest.mark.parametrize("nthreads", [1, 2])
def test_a_damaged_chunk_never_changes_how_later_chunks_decode(nthreads):
    """C-Blosc2 keeps state in a context that the next chunk's header does not reset
    (the filters' metadata of an extended header, a dictionary once asked for).  A
    damaged C-Blosc 1.x chunk of a legacy dataset (no checksum stops it before the
    decoder) whose flags byte turned into an extended header left its context
    decoding every later shuffled chunk into wrong values, silently: after the
    published corruption campaign the crash campaign's checks read legacy datasets
    wrong.  Every header byte of every kind of chunk, damaged with several masks,
    is decoded (it may fail or not); the good chunks must then decode as before
    (a chunk with a dictionary among them: one asked for is never left behind)."""
    goods = _good_chunks()
    want = [codec.Decompressor(1).decompress(c) for c in goods]
    rng = np.random.default_rng(20)
    tried = 0
    for chunk in goods:
        for offset in range(32):
            for mask in {0x01, 0x04, 0x05, 0xFF, *map(int, rng.integers(1, 256, 3))}:
                damaged = bytearray(chunk)
                damaged[offset] ^= mask
                bad = bytes(damaged)
                dec = codec.Decompressor(nthreads)
                for call, args in ((dec.decompress, (bad,)), (dec.getitem, (bad, 0, 1))):
                    try:
                        call(*args)
                    except (BcolzxError, IndexError):
                        pass
                tried += 1
                assert _decodes_right(dec, goods, want), \
                    f"after byte {offset} ^ {mask:#04x} of chunk {goods.index(chunk)}"
    assert tried > 1000



@pytest.mark.parametrize("cname", ["lz4", "lz4hc", "zlib", "zstd", "blosclz"])
@pytest.mark.parametrize("bytedelta", [False, True])
def test_compress_within_a_limit_gives_the_chunk_or_none(cname, bytedelta):
    """A chunk that fits the limit is the one made without it; a larger one is None
    (never a chunk cut short, never None for one that fits)."""
    rng = np.random.default_rng(5)
    for data in (rng.random(20000), np.linspace(0, 1, 20000), np.cumsum(rng.normal(size=20000)),
                 rng.integers(0, 3, 20000).astype("u1"), np.zeros(3)):
        comp = codec.Compressor(cname, 5, codec.SHUFFLE, data.dtype.itemsize, 4096,
                                bytedelta=bytedelta, split=False)
        full = comp.compress(data)
        for limit in (len(full), len(full) + 1, 10 ** 7):
            assert comp.compress(data, limit) == full
        for limit in (len(full) - 1, len(full) // 2, 31, 1):
            assert comp.compress(data, limit) is None


def test_a_chunk_batch_compresses_each_chunk_as_compress_does_and_hands_it_over_once():
    comp = codec.Compressor("lz4", 5, codec.SHUFFLE, 8, 4096, split=False)
    parts = [np.linspace(0, 1, 3000), np.arange(1000.0), np.random.default_rng(2).random(10)]
    batch = codec.ChunkBatch(parts)
    assert len(batch) == 3
    with pytest.raises(IndexError):
        batch.take(0)  # not compressed yet
    sizes = [batch.compress(k, comp) for k in range(3)]
    assert batch.compress(0, comp, 40) == 0  # larger than the limit
    assert batch.compress(0, comp, sizes[0]) == sizes[0]
    for k, part in enumerate(parts):
        chunk = batch.take(k)
        assert type(chunk) is bytes and chunk == comp.compress(part) and len(chunk) == sizes[k]
        with pytest.raises(IndexError):
            batch.take(k)
    with pytest.raises(ValueError):
        codec.ChunkBatch([np.arange(10.0)[::2]])  # not contiguous
