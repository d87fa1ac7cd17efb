"""Variable-length strings (NumPy StringDType) and bytes: carrays and ctable columns,
stored natively (docs/format/strings.md), never pickled."""

import json
import pickle
import shutil
import stat
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bcolzx
from bcolzx._format import strings, vlen
from bcolzx._query import planner
from bcolzx.errors import CorruptDataError, LegacyFormatError, PickleNotAllowedError

S = np.dtypes.StringDType()
SNAN = np.dtypes.StringDType(na_object=np.nan)
SNONE = np.dtypes.StringDType(na_object=None)
BYTES = bcolzx.vlen_dtype(bytes)
LEGACY = Path(__file__).parent.parent / "data" / "legacy_bcolz"

#: Empty, ASCII, non-ASCII, 4-byte characters, a NUL, a row longer than a block.
EDGE = ["", "AAPL", "é", "日本語", "😀 emoji", "a\x00b", "\U0010ffff", "x" * 40_000, ""]


def _strings(values, dtype=S):
    return np.array(values, dtype=dtype)


def test_edge_values_round_trip(make):
    data = _strings(EDGE * 50)
    c = make(data, chunklen=16)
    assert c.dtype == S and len(c) == len(data)
    np.testing.assert_array_equal(c[:], data)
    assert [c[i] for i in range(len(EDGE))] == EDGE
    assert list(c.iter(0, len(EDGE))) == EDGE


@settings(max_examples=40, deadline=None)
@given(st.lists(st.text(max_size=70), max_size=300), st.sampled_from([1, 3, 64, 1024]))
def test_any_text_round_trips_in_memory_and_on_disk(tmp_path_factory, values, chunklen):
    data = _strings(values)
    c = bcolzx.carray(data, chunklen=chunklen)
    assert c[:].tolist() == values
    root = str(tmp_path_factory.mktemp("h") / "c")
    bcolzx.carray(data, chunklen=chunklen, rootdir=root).flush()
    assert bcolzx.open(root, mode="r")[:].tolist() == values


def test_every_key_kind(make):
    data = _strings([f"row {i} " + "é" * (i % 7) for i in range(1000)])
    c = make(data, chunklen=64)
    for key in (5, -1, slice(10, 400), slice(None, None, 7), slice(900, 10, -3),
                [3, 999, 3, 0], np.array([5, -2]), data == "row 7 ", slice(0, 0)):
        np.testing.assert_array_equal(c[key], data[key])
    mask = bcolzx.carray(np.arange(1000) % 9 == 0)
    np.testing.assert_array_equal(c[mask], data[np.arange(1000) % 9 == 0])
    np.testing.assert_array_equal(c[np.flatnonzero(data == "row 17 ééé")], ["row 17 ééé"])
    assert list(c.where(np.arange(1000) < 3)) == data[:3].tolist()
    assert list(c.iter(990, step=4)) == data[990::4].tolist()


def test_condition_keys(make):
    data = _strings([f"t{i % 13}" for i in range(500)])
    c = make(data, chunklen=50)
    np.testing.assert_array_equal(c["c == 't3'"], data[data == "t3"])


def test_append_setitem_resize_and_reopen(tmp_path):
    root = str(tmp_path / "c")
    c = bcolzx.carray(_strings(["a", "bb"]), rootdir=root, chunklen=4, dflt="∅")
    c.append(_strings(["ccc", "", "é"]))
    c.append("single")
    c[0] = "ZZ"  # a rewritten full chunk
    c[4:6] = ["rewritten leftover", "😀"]
    c[np.array([False, True] + [False] * 4)] = "masked"
    c[[2]] = ["listed"]
    c.resize(9)
    c.flush()
    want = ["ZZ", "masked", "listed", "", "rewritten leftover", "😀", "∅", "∅", "∅"]
    assert bcolzx.open(root, mode="r")[:].tolist() == want
    c.trim(2)
    c.flush()
    assert bcolzx.open(root, mode="r")[:].tolist() == want[:7]
    assert bcolzx.verify(root).ok


def test_meta_storage_records_strings_and_no_pickle_is_needed(tmp_path, monkeypatch):
    root = tmp_path / "c"
    # Nothing is ever pickled or unpickled: pickle fails if called.
    def refuse(*args, **kwargs):
        raise AssertionError("pickle was called")
    monkeypatch.setattr(pickle, "dumps", refuse)
    monkeypatch.setattr(pickle, "loads", refuse)
    bcolzx.carray(_strings(EDGE), rootdir=str(root), chunklen=2).flush()
    storage = json.loads((root / "meta" / "storage").read_text())
    assert (storage["dtype"], storage["vlen"], storage["format_version"]) == ("T", "utf8", 2)
    assert "na_object" not in storage and storage["dflt"] == ""
    assert not bcolzx.defaults.allow_pickle
    assert bcolzx.open(str(root), mode="r", allow_pickle=False)[:].tolist() == EDGE


@pytest.mark.parametrize("dtype, name", [(SNAN, "nan"), (SNONE, "none")])
def test_missing_values_round_trip(make, dtype, name):
    na = dtype.na_object
    data = np.array(["a", na, "", na, "é"] * 30, dtype=dtype)
    c = make(data, chunklen=8)
    assert c.dtype == dtype
    got = c[:]
    assert got.dtype == dtype
    expect = data.tolist()
    for g, w in zip(got.tolist(), expect):
        assert (g is w) or (g == w) or (g != g and w != w)
    assert strings.na_name(c.dtype) == name


def test_unsupported_missing_value_is_refused():
    with pytest.raises(TypeError, match="NaN or None"):
        bcolzx.carray(np.array(["a"], dtype=np.dtypes.StringDType(na_object="")))


def test_bytes_columns(make):
    values = [b"", b"\x00\xff", b"abc" * 20_000, b"\xc3"]
    data = np.empty(len(values), dtype=BYTES)
    data[:] = values
    c = make(data, chunklen=2)
    assert c.dtype == BYTES and c.dtype.metadata == {"vlen": bytes}
    assert c[:].tolist() == values and c[1] == b"\x00\xff"
    assert c.engine.kind == "bytes"


def test_bytes_refuse_other_items_and_plain_objects_stay_pickled():
    c = bcolzx.carray([b"a"], dtype=BYTES)
    with pytest.raises(TypeError, match="not bytes"):
        c.append(["text"])
    assert c[:].tolist() == [b"a"]
    with pytest.raises(PickleNotAllowedError):
        bcolzx.carray(np.array([b"a"], dtype=object))


def test_legacy_directories_cannot_hold_them(tmp_path):
    root = tmp_path / "ct"
    shutil.copytree(LEGACY / "ct_mixed", root)
    for path in [root, *root.rglob("*")]:
        path.chmod(path.stat().st_mode | stat.S_IWUSR)
    ct = bcolzx.open(str(root), mode="a")
    before = sorted(p.name for p in root.iterdir())
    with pytest.raises(LegacyFormatError, match="legacy bcolz"):
        ct.addcol(_strings(["x"] * len(ct)), name="vlen")
    assert isinstance(LegacyFormatError("x"), TypeError)
    # nothing written (the writer's lock file aside)
    assert sorted(p.name for p in root.iterdir() if p.name != "__lock__") == before
    assert len(bcolzx.open(str(root), mode="r").names) == len(ct.names)


def test_ctable_columns_queries_and_fetchwhere(tmp_path):
    tk = _strings(["AAPL", "MSFT", "", "GOOGL", "ééé", "b\x00"] * 200)
    ct = bcolzx.ctable([tk, np.arange(1200)], names=["tk", "x"], rootdir=str(tmp_path / "t"),
                       chunklen=64)
    ct = bcolzx.open(str(tmp_path / "t"), mode="r")
    assert ct.dtype == np.dtype([("tk", object), ("x", "<i8")])
    arr = tk
    cases = {
        "tk == 'MSFT'": arr == "MSFT",
        "tk != ''": arr != "",
        "(tk < 'B') & (x > 100)": (arr < "B") & (np.arange(1200) > 100),
        "tk >= 'G'": arr >= "G",
        "contains(tk, 'é')": np.char.find(arr, "é") >= 0,
        "startswith(tk, 'GO')": np.char.startswith(arr, "GO"),
        "endswith(tk, 'FT')": np.char.endswith(arr, "FT"),
    }
    for expr, mask in cases.items():
        got = ct.fetchwhere(expr, out_flavor="numpy")
        assert got["x"].tolist() == np.flatnonzero(mask).tolist(), expr
        assert got["tk"].tolist() == arr[mask].tolist(), expr
    out = ct.fetchwhere("tk == 'GOOGL'", out_flavor="bcolz")
    assert out["tk"].dtype == S and len(out) == 200
    assert [r.x for r in ct.where("tk == 'ééé'")][:2] == [4, 10]
    assert bcolzx.eval("tk == 'AAPL'", user_dict={"tk": ct["tk"]}, out_flavor="numpy").sum() \
        == 200


def test_zone_maps_bound_prefixes_and_skip_chunks(tmp_path):
    words = sorted(f"{w}{'z' * 40 if w.startswith('m') else ''}"
                   for w in ("apple", "banana", "cherry", "date", "mango", "melon", "zebra"))
    data = _strings(np.repeat(words, 100))
    root = str(tmp_path / "c")
    bcolzx.carray(data, rootdir=root, chunklen=100).flush()
    c = bcolzx.open(root, mode="r")
    stats = c.engine.chunk_stats()
    assert len(stats) == 7
    for k, (lo, hi, nan) in enumerate(stats.tolist()):
        w = words[k].encode()
        assert lo == w[:strings.BOUND_BYTES] and not nan
        assert len(hi) <= strings.BOUND_BYTES and w <= hi
    assert stats[4]["max"] != words[4].encode()  # cut at 32 bytes, last byte raised
    ct = bcolzx.ctable([c], names=["w"])
    for expr, keep in [("w == 'cherry'", [2]), ("w < 'c'", [0, 1]), ("w > 'n'", [6]),
                       ("startswith(w, 'me')", [5]), ("w != 'apple'", [1, 2, 3, 4, 5, 6])]:
        skip = planner.zone_skipper(_compiled(expr), {"w": ct["w"]}, {})
        kept = [k for k in range(7) if not skip(100 * k, 100 * k + 100)]
        assert kept == keep, expr
        assert ct.fetchwhere(expr, out_flavor="numpy")["w"].tolist() == \
            [words[k] for k in keep for _ in range(100)]


def _compiled(text):
    from bcolzx._query.expr import compile_expression

    return compile_expression(text)


def test_zone_maps_of_missing_values(tmp_path):
    data = np.array([np.nan] * 10 + ["b"] * 10, dtype=SNAN)
    root = str(tmp_path / "c")
    bcolzx.carray(data, rootdir=root, chunklen=10).flush()
    stats = bcolzx.open(root, mode="r").engine.chunk_stats().tolist()
    assert stats == [(None, None, True), (b"b", b"b", False)]
    assert bcolzx.verify(root).ok


def test_bounds_helpers():
    assert strings.upper_bound(b"a" * 40) == b"a" * 31 + b"b"
    assert strings.upper_bound(b"a" * 31 + b"\xff" * 9) == b"a" * 30 + b"b"
    assert strings.lower_bound(b"q" * 40) == b"q" * 32
    assert strings.bounds(_strings(["b", "a", "c"])) == (b"a", b"c", False)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.binary(max_size=6), max_size=12))
def test_rows_are_checked_one_by_one(rows):
    """A chunk decodes if and only if every row is UTF-8 by itself."""
    chunk = vlen.encode_planar(rows)
    out = np.empty(len(rows), dtype=S)
    try:
        want = [r.decode("utf-8") for r in rows]
    except UnicodeDecodeError:
        with pytest.raises(CorruptDataError):
            strings.pack_rows(chunk, vlen.locate(chunk, len(rows), vlen.PLANAR), out, 0)
        return
    strings.pack_rows(chunk, vlen.locate(chunk, len(rows), vlen.PLANAR), out, 0)
    assert out.tolist() == want


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=40))
def test_utf8_check_agrees_with_python(raw):
    from bcolzx._ext import strings as kernel

    try:
        raw.decode("utf-8")
        ok = True
    except UnicodeDecodeError:
        ok = False
    assert (kernel.utf8_error(raw) < 0) == ok


def test_damaged_chunks_are_corrupt_data():
    chunk = vlen.encode_planar([b"ok", b"\xff\xfe"])
    where = vlen.locate(chunk, 2, vlen.PLANAR)
    out = np.empty(2, dtype=S)
    with pytest.raises(CorruptDataError, match="UTF-8"):
        strings.pack_rows(chunk, where, out, 0)
    # valid UTF-8 as a whole ("é"), but each row holds half a character
    split = vlen.encode_planar([b"ok", b"\xc3", b"\xa9"])
    with pytest.raises(CorruptDataError, match="UTF-8"):
        strings.pack_rows(split, vlen.locate(split, 3, vlen.PLANAR), np.empty(3, dtype=S), 0)
    split = vlen.encode_planar([b"\xc3", b"", b"\xa9z"])
    with pytest.raises(CorruptDataError, match="UTF-8"):
        strings.pack_rows(split, vlen.locate(split, 3, vlen.PLANAR), np.empty(3, dtype=S), 0)
    with_na = vlen.encode_planar([b"a", None])
    with pytest.raises(CorruptDataError, match="missing"):
        vlen.locate(with_na, 2, vlen.PLANAR, na_ok=False)
    assert vlen.locate(with_na, 2, vlen.PLANAR, na_ok=True).na.tolist() == [0, 1]
    with pytest.raises(CorruptDataError):
        vlen.locate(chunk[:-1], 2, vlen.PLANAR)
    with pytest.raises(CorruptDataError):
        vlen.locate(b"\xff" * 8 + chunk[8:], None, vlen.PLANAR)


def test_damaged_utf8_on_disk_is_found(tmp_path, monkeypatch):
    """A chunk whose compressed bytes and checksum are consistent but whose text is
    not UTF-8 (a writer's bug, not a flipped bit) is refused when read."""
    root = str(tmp_path / "c")
    with monkeypatch.context() as m:
        m.setattr(strings, "encode_rows", lambda rows, kind: vlen.encode_planar(
            [b"fine", b"\xc3("]))
        bcolzx.carray(_strings(["fine", "also fine"]), rootdir=root, chunklen=2).flush()
    c = bcolzx.open(root, mode="r")
    with pytest.raises(CorruptDataError, match="UTF-8"):
        c[:]
    assert not bcolzx.verify(root).ok


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(st.none(), st.binary(max_size=300)), max_size=80))
def test_planar_tables_decode_the_same_with_and_without_the_kernel(items):
    chunk = vlen.encode_planar(items)
    fast = vlen.locate(chunk, len(items), vlen.PLANAR, na_ok=True)
    saved = vlen._KERNEL
    vlen._KERNEL = None  # the NumPy code (NumPy 1 builds)
    try:
        slow = vlen.locate(chunk, len(items), vlen.PLANAR, na_ok=True)
    finally:
        vlen._KERNEL = saved
    assert fast.offsets.tolist() == slow.offsets.tolist()
    assert (fast.na is None) == (slow.na is None)
    if fast.na is not None:
        assert fast.na.tolist() == slow.na.tolist()
    assert vlen.items(chunk, len(items), vlen.PLANAR, na_ok=True) == items


@pytest.mark.parametrize("na", [np.nan, None])
def test_string_searches_skip_missing_values(na):
    dtype = np.dtypes.StringDType(na_object=na)
    ct = bcolzx.ctable([np.array(["ab", na, "cb", ""], dtype=dtype), np.arange(4)],
                       names=["s", "i"])
    for expr, rows in [("contains(s, 'b')", [0, 2]), ("startswith(s, 'c')", [2]),
                       ("endswith(s, '')", [0, 2, 3]), ("s == 'ab'", [0])]:
        assert ct.fetchwhere(expr, out_flavor="numpy")["i"].tolist() == rows, expr
    assert strings.missing_rows(ct["s"][:]).tolist() == [False, True, False, False]


def test_convert_rewrites_strings_and_bytes(tmp_path):
    data = np.array(["a", "bb", np.nan, "é" * 50] * 300, dtype=SNAN)
    raw = _bytes_of([b"x", b"\x00", b""] * 100)
    bcolzx.carray(data, rootdir=str(tmp_path / "s"), chunklen=100, dflt="q").flush()
    bcolzx.carray(raw, rootdir=str(tmp_path / "b"), chunklen=64).flush()
    for name, values in (("s", data), ("b", raw)):
        root = str(tmp_path / name)
        bcolzx.convert(root, cparams=bcolzx.cparams(cname="lz4", clevel=9), chunklen=7)
        c = bcolzx.open(root, mode="r")
        assert c.dtype == values.dtype and c.cparams.cname == "lz4" and c.chunklen == 7
        assert [str(x) for x in c[:].tolist()] == [str(x) for x in values.tolist()]
        assert bcolzx.verify(root).ok


def _bytes_of(values):
    out = np.empty(len(values), dtype=BYTES)
    out[:] = values
    return out


def test_string_bounds_are_never_exact_and_reductions_refuse_strings(tmp_path):
    """Zone-map bounds of strings are prefixes: a reduction must never take them
    for values (a 130-character maximum would come back cut to its prefix)."""
    long = "z" * 130 + "1"
    values = _strings([long, "a"] * 3000)
    c = bcolzx.carray(values, rootdir=str(tmp_path / "c"), chunklen=1000)
    c.flush()
    c = bcolzx.open(str(tmp_path / "c"))
    assert not c.engine.exact_chunks().any()
    for name in ("max", "min", "sum"):
        with pytest.raises(TypeError, match="strings"):
            getattr(c, name)()
    assert np.max(c[:]) == long


@pytest.fixture
def two_threads():
    """Reads of several chunks run on two pool threads."""
    before = bcolzx.set_nthreads(2)
    yield
    bcolzx.set_nthreads(before)


def test_threaded_reads_across_chunk_boundaries(tmp_path, two_threads):
    """Slices starting and ending inside chunks, read by pool threads that each
    fill their part of one array, equal the source (missing values, 4-byte
    characters, a row longer than a block, the unstored last rows)."""
    rng = np.random.default_rng(7)
    pool = EDGE + ["ÅÄÖ", "\U0001f600" * 3, "tail"]
    values = np.array([pool[k] for k in rng.integers(0, len(pool), 1000)], dtype=SNONE)
    values[rng.integers(0, 1000, 40)] = None
    root = str(tmp_path / "c")
    bcolzx.carray(values, rootdir=root, chunklen=64).flush()
    c = bcolzx.open(root, mode="r")
    assert c._engine.nthreads == 2 and c._engine.nfull == 15
    for a, b in [(0, 1000), (1, 999), (63, 65), (64, 128), (100, 700), (959, 1000), (5, 5)]:
        got = c[a:b]
        assert got.dtype == SNONE
        assert got.tolist() == values[a:b].tolist(), (a, b)


def test_damage_found_on_a_pool_thread_is_raised_to_the_reader(tmp_path, monkeypatch,
                                                              two_threads):
    """A chunk decoded on a pool thread that is not UTF-8 raises CorruptDataError in
    the reading thread, naming that chunk; the other chunks still read."""
    real = strings.encode_rows

    def damage_chunk_5(rows, kind):  # chunks may be encoded on pool threads, in any order
        if rows[0] == "row 80 é":
            return vlen.encode_planar([b"ok"] * (len(rows) - 1) + [b"\xed\xa0\x80"])
        return real(rows, kind)

    values = _strings([f"row {k} é" for k in range(8 * 16)])
    root = str(tmp_path / "c")
    with monkeypatch.context() as m:
        m.setattr(strings, "encode_rows", damage_chunk_5)
        bcolzx.carray(values, rootdir=root, chunklen=16).flush()
    c = bcolzx.open(root, mode="r")
    with pytest.raises(CorruptDataError, match="UTF-8") as err:
        c[:]
    assert err.value.chunk == 5 and "row 15 " in str(err.value)
    with pytest.raises(CorruptDataError, match="UTF-8"):
        c[70:100]
    assert c[:80].tolist() == values[:80].tolist()
    assert c[96:].tolist() == values[96:].tolist()


def test_pack_checks_every_row_before_writing_any():
    """A row that is not UTF-8, or forged offsets outside the chunk, leave the
    output as it was (nothing is read outside the chunk)."""
    from bcolzx._ext import strings as kernel

    chunk = vlen.encode_planar([b"one", b"two", b"\xc3", b"four"])
    where = vlen.locate(chunk, 4, vlen.PLANAR)
    out = _strings(["keep"] * 4)
    assert kernel.pack(chunk, where.offsets, None, out, 0) == 2
    assert out.tolist() == ["keep"] * 4
    assert kernel.pack(chunk, where.offsets, None, out[:2], 0) == -1
    assert out.tolist() == ["one", "two", "keep", "keep"]
    forged = where.offsets.copy()
    forged[3] = len(chunk) + 100
    out = _strings(["keep"] * 4)
    with pytest.raises(ValueError, match="row 2 is not inside the chunk"):
        kernel.pack(chunk, forged, None, out, 0)
    forged = where.offsets.copy()
    forged[1] = -5
    with pytest.raises(ValueError, match="row 0 is not inside the chunk"):
        kernel.pack(chunk, forged, None, out, 0)
    assert out.tolist() == ["keep"] * 4
    strided = _strings(["keep"] * 8)  # a strided view: its pages are not faulted in ahead
    assert kernel.pack(chunk, where.offsets, None, strided[::3][:2], 0) == -1
    assert strided.tolist() == ["one", "keep", "keep", "two"] + ["keep"] * 4


def test_string_chunks_are_stored_without_the_byte_shuffle(tmp_path):
    """The byte shuffle of typesize 1 changes nothing: string chunks are written
    without it (C-Blosc2 header filter codes, bytes 16..21), the bit shuffle
    is kept, and both read back."""
    values = _strings(["AAPL", "MSFT", "é"] * 1000)
    for shuffle, want in [(bcolzx.SHUFFLE, [0] * 6), (bcolzx.BITSHUFFLE, [0] * 5 + [2])]:
        root = str(tmp_path / f"s{shuffle}")
        c = bcolzx.carray(values, rootdir=root, chunklen=1024,
                          cparams=bcolzx.cparams(shuffle=shuffle))
        c.flush()
        c = bcolzx.open(root, mode="r")
        assert c.cparams.shuffle == shuffle
        for k in range(c._engine.nfull):
            assert list(bytes(c._engine.store.get_one(k))[16:22]) == want
        assert c[:].tolist() == values.tolist()


def test_string_chunks_are_one_block_and_their_bounds_are_found_on_the_pool(tmp_path,
                                                                           two_threads):
    """A strings carray made without cparams compresses each chunk as one
    C-Blosc2 block (zstd packs a whole chunk faster and smaller than in the
    automatic blocks); chunks encoded together on the pool get the same
    zone-map bounds as their strings."""
    from bcolzx._ext import codec

    rng = np.random.default_rng(3)
    pool = EDGE + ["ÅÄÖ", "zz", "AAPL"]
    values = _strings([pool[k] for k in rng.integers(0, len(pool), 20_000)])
    root = str(tmp_path / "c")
    bcolzx.carray(values, rootdir=root, chunklen=1024).flush()
    c = bcolzx.open(root, mode="r")
    assert c.cparams.blocksize >= 1 << 19  # a chunk of strings holds about 512 KiB
    stats = c.engine.chunk_stats()
    assert len(stats) == c.engine.nfull == 19
    for k in range(c.engine.nfull):
        info = codec.chunk_info(bytes(c.engine.store.get_one(k)))
        assert info["blocksize"] == min(info["nbytes"], c.cparams.blocksize)
        assert tuple(stats[k]) == strings.bounds(values[k * 1024:(k + 1) * 1024])
    assert c[:].tolist() == values.tolist()


@pytest.mark.parametrize("kind", ["strings", "bytes", "objects"])
def test_a_reader_of_variable_length_items_makes_no_compressor(tmp_path, kind):
    """Opening and reading strings, bytes or pickles makes no compressor (its
    C-Blosc2 context is made at the first write)."""
    d = str(tmp_path / "v")
    values = {"strings": np.array(["ab", "c", ""] * 50, dtype=np.dtypes.StringDType()),
              "bytes": np.array([b"ab", b"c", b""] * 50, dtype=strings.BYTES_DTYPE),
              "objects": np.array([{1: 2}, None, "x"] * 50, dtype=object)}[kind]
    extra = {"allow_pickle": True} if kind == "objects" else {}
    bcolzx.carray(values, rootdir=d, mode="w", chunklen=16, **extra).flush()
    for mode in ("r", "a"):
        c = bcolzx.open(d, mode, **extra)
        assert list(c[:]) == list(values) and c[40] == values[40]
        assert c.engine._compressor is None
    c.append(values[:5])
    c.flush()
    assert c.engine._compressor is not None
    assert list(bcolzx.open(d, "r", **extra)[:]) == list(values) + list(values[:5])
