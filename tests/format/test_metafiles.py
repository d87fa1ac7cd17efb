"""The small metadata files in C (bcolzx._ext.metafiles): each function against
what Python's own calls, or the seal's definition (docs/format/README.md §2c),
say about the same bytes and paths."""

import copy
import json
import os
import re
import stat

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bcolzx._ext import checksum, metafiles
from bcolzx._format import files
from bcolzx._format.seal import seal
from bcolzx.errors import UnsafeFileError

UID = "0123456789abcdef"


# -- read_whole ----------------------------------------------------------------------

@pytest.mark.parametrize("size", [0, 1, 339, 4095, 4096, 4097, 65536, 1 << 20])
def test_read_whole_reads_every_byte(tmp_path, size):
    data = os.urandom(size)
    (tmp_path / "f").write_bytes(data)
    assert files.read_whole(str(tmp_path / "f")) == data
    assert metafiles.read_whole(str(tmp_path / "f").encode(), files.READ_FLAGS) == (data, 0)


def test_read_whole_errors_are_those_of_os(tmp_path):
    missing = str(tmp_path / "nothing")
    with pytest.raises(FileNotFoundError) as info:
        files.read_whole(missing)
    assert info.value.filename == missing and info.value.errno == 2
    with pytest.raises(NotADirectoryError):
        (tmp_path / "f").write_bytes(b"{}")
        files.read_whole(str(tmp_path / "f" / "x"))
    with pytest.raises(ValueError, match="embedded null byte"):
        files.read_whole(str(tmp_path / "f") + "\0x")  # never the file before the NUL


def test_read_whole_refuses_anything_but_a_regular_file(tmp_path):
    with pytest.raises(UnsafeFileError, match="a directory"):
        files.read_whole(str(tmp_path))
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)  # no writer: opening it must not wait
    with pytest.raises(UnsafeFileError, match="FIFO"):
        files.read_whole(str(fifo))
    assert metafiles.read_whole(str(fifo), files.READ_FLAGS)[0] is None


def test_read_whole_follows_links_as_reading_does(tmp_path):
    (tmp_path / "f").write_bytes(b"data")
    os.symlink(tmp_path / "f", tmp_path / "link")
    assert files.read_whole(str(tmp_path / "link")) == b"data"


# -- stat_file / is_regular ----------------------------------------------------------

def test_stat_file_is_os_stat_or_none(tmp_path):
    (tmp_path / "f").write_bytes(b"12345")
    st = os.stat(tmp_path / "f")
    assert metafiles.stat_file(str(tmp_path / "f")) == (st.st_mode, st.st_ino, st.st_size,
                                                        st.st_mtime_ns)
    assert metafiles.stat_file(str(tmp_path / "nothing")) is None
    assert metafiles.stat_file(str(tmp_path / "f" / "below")) is None  # ENOTDIR
    with pytest.raises(ValueError, match="embedded null byte"):
        metafiles.stat_file(str(tmp_path / "f") + "\0")


def test_is_regular_and_exists_are_those_of_os_path(tmp_path):
    (tmp_path / "f").write_bytes(b"x")
    os.symlink(tmp_path / "f", tmp_path / "link")
    os.symlink(tmp_path / "gone", tmp_path / "dangling")
    os.mkfifo(tmp_path / "fifo")
    for name in ("f", "link", "dangling", "fifo", "nothing", "f/below", "f\0"):
        path = str(tmp_path / name) if "\0" not in name else str(tmp_path) + "/" + name
        assert files.is_regular(path) == os.path.isfile(path), name
        assert files.exists(path) == os.path.exists(path), name
    assert files.is_regular(str(tmp_path)) is False and files.exists(str(tmp_path))


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any directory: no EACCES to test")
def test_stat_file_raises_what_it_cannot_tell(tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "f").write_bytes(b"x")
    os.chmod(tmp_path / "d", 0)
    try:
        with pytest.raises(PermissionError):
            metafiles.stat_file(str(tmp_path / "d" / "f"))
        assert files.is_regular(str(tmp_path / "d" / "f")) is False
    finally:
        os.chmod(tmp_path / "d", stat.S_IRWXU)


# -- seal_crc ------------------------------------------------------------------------

_TAIL = re.compile(rb'"__crc32c__": (0|[1-9][0-9]{0,9})\}\Z')


def _reference(raw: bytes, name: str):
    """The seal's definition, spelled out with a regular expression (§2c)."""
    m = _TAIL.match(raw, max(raw.rfind(b'"__crc32c__": '), 0))
    if m is None:
        return metafiles.NO_TAIL, 0, 0
    head = raw[:m.start()]
    if head.endswith(b", "):
        body = head[:-2] + b"}"
    elif head == b"{":
        body = b"{}"
    else:
        return metafiles.MALFORMED, 0, 0
    return metafiles.SEALED, int(m.group(1)), checksum.crc32c(name.encode() + b"\0" + body)


def _name_crc(name: str) -> int:
    return checksum.crc32c(name.encode() + b"\0")


@pytest.mark.parametrize("obj", [{}, {"a": 1}, {"shape": [3], "nbytes": 24}])
def test_seal_crc_of_sealed_files(obj):
    raw = seal(obj, "sizes", UID)
    found = metafiles.seal_crc(raw, _name_crc("sizes"))
    assert found[0] == metafiles.SEALED and found[1] == found[2]
    assert found == _reference(raw, "sizes")
    assert metafiles.seal_crc(raw, _name_crc("storage"))[2] != found[1]  # the name counts


@pytest.mark.parametrize("raw", [
    b"", b"{", b"}", b'"__crc32c__": 1}', b'{"__crc32c__": }', b'{"__crc32c__": 01}',
    b'{"__crc32c__": 12345678901}', b'{"__crc32c__": 1234567890}', b'{"__crc32c__": 0}',
    b'{"__crc32c__": 1} ', b'{"a": 1,"__crc32c__": 5}', b'{"a": 1, "__crc32c__": 5}',
    b'x{"__crc32c__": 5}', b'{"__crc32c__": 5}{"__crc32c__": 6}', b'{"__crc32c__": -5}',
    b'{"__crc32c__": 4294967296}', b'{"__crc32c__": 9999999999}',
])
def test_seal_crc_of_edge_cases(raw):
    assert metafiles.seal_crc(raw, _name_crc("f")) == _reference(raw, "f")


_sealed_files = st.builds(
    lambda obj, name: (seal(obj, name, UID), name),
    st.dictionaries(st.text(max_size=5), st.integers() | st.text(max_size=5), max_size=4),
    st.sampled_from(["sizes", "storage", "__attrs__"]))


@settings(max_examples=300, deadline=None)
@given(_sealed_files, st.lists(st.tuples(st.integers(0, 400), st.binary(max_size=3)),
                               max_size=3))
def test_seal_crc_matches_the_definition_on_damaged_files(sealed, edits):
    """Sealed files with bytes replaced, inserted or cut anywhere: the C scan
    finds what the definition finds."""
    raw, name = sealed
    for at, new in edits:
        at = min(at, len(raw))
        raw = raw[:at] + new + raw[at + len(new) // 2:]
    assert metafiles.seal_crc(raw, _name_crc(name)) == _reference(raw, name)
    assert metafiles.seal_crc(bytearray(raw), _name_crc(name)) == _reference(raw, name)


# -- unseal --------------------------------------------------------------------------

def _reference_unseal(raw: bytes, obj: dict, name: str):
    """§2c's rules for a decoded sealed file, spelled out: (status, uid), and the
    object as it must be left."""
    if "__crc32c__" not in obj:
        return (metafiles.NO_CHECKSUM if "__uid__" in obj else metafiles.UNSEALED), None, obj
    found, stored, crc = _reference(raw, name)
    if found != metafiles.SEALED:
        return found, None, obj
    if crc != stored or obj["__crc32c__"] != stored:
        return metafiles.MISMATCH, None, obj
    uid = obj.get("__uid__")
    if uid is not None and (not isinstance(uid, str) or not re.fullmatch("[0-9a-f]{16}", uid)):
        return metafiles.BAD_UID, uid, obj
    return metafiles.SEALED, uid, {k: v for k, v in obj.items()
                                   if k not in ("__crc32c__", "__uid__")}


def _check_unseal(raw: bytes, name: str):
    try:
        obj = json.loads(raw)
    except ValueError:
        return
    if not isinstance(obj, dict):
        return
    want, want_uid, want_obj = _reference_unseal(raw, dict(obj), name)
    found, _, _, uid = metafiles.unseal(raw, obj, _name_crc(name))
    assert (found, uid if found in (metafiles.SEALED, metafiles.BAD_UID) else None) == \
        (want, want_uid)
    assert obj == want_obj


@pytest.mark.parametrize("uid", [UID, None, "0123456789ABCDEF", "0123456789abcde", 12,
                                 "0123456789abcdef0", "０123456789abcde", ["x"]])
def test_unseal_checks_the_uid_member(uid):
    body = json.dumps({"a": 1, "__uid__": uid}).encode()
    raw = body[:-1] + b', "__crc32c__": %d}' % checksum.crc32c(b"f\0" + body)
    _check_unseal(raw, "f")
    _check_unseal(raw, "g")  # another file's name: the checksum does not match


@pytest.mark.parametrize("member", [b'"__crc32c__": 5', b'"__uid__": "%s"' % UID.encode(),
                                   b'"__crc32c__": 5.0', b'"__crc32c__": "5"'])
def test_unseal_of_stray_members(member):
    _check_unseal(b'{"a": 1, ' + member + b'}', "f")
    _check_unseal(b'{' + member + b', "a": 1}', "f")


@settings(max_examples=300, deadline=None)
@given(_sealed_files, st.lists(st.tuples(st.integers(0, 400), st.binary(max_size=3)),
                               max_size=3))
def test_unseal_matches_the_definition_on_damaged_files(sealed, edits):
    raw, name = sealed
    _check_unseal(raw, name)
    for at, new in edits:
        at = min(at, len(raw))
        raw = raw[:at] + new + raw[at + len(new) // 2:]
    _check_unseal(raw, name)


# -- loads ---------------------------------------------------------------------------

def _same(a, b) -> bool:
    """Equal values of the same JSON types all the way down (1 == 1.0 == True in Python;
    -0.0 == 0.0 but a reader of a dflt sees the sign)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, float):
        return repr(a) == repr(b)
    return a == b


def _check_loads(raw: bytes) -> None:
    """metafiles.loads(raw) is json.loads(raw), or UNPARSED when json would not
    decode it (then the caller's json says why)."""
    got = metafiles.loads(raw)
    try:
        want = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        assert got is metafiles.UNPARSED, (raw, got)
        return
    if got is not metafiles.UNPARSED:
        assert _same(got, want), (raw, got, want)


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) |
    st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner,
                                                                 max_size=4),
    max_leaves=20)


@pytest.mark.parametrize("raw", [
    b"0", b"-0", b"-0.0", b"1", b"-1", b"123456789012345678", b"-123456789012345678",
    b"1234567890123456789", b"1" * 5000, b"0.5", b"1e999", b"-1e999", b"1e-400", b"1E+2",
    b"2.5e-3", b"0.1", b"3.141592653589793", b"1.7976931348623157e308", b"5e-324",
    b"01", b"-", b"-a", b"1.", b".5", b"1e", b"1e+", b"+1", b"0x10", b"1_000",
    b"NaN", b"Infinity", b"-Infinity", b"nan", b"true", b"false", b"null", b"tru", b"nul",
    b'""', b'"a"', b'"\\n"', b'"\\u00e9"', b'"\xc3\xa9"', b'"\xff"', b'"\xed\xa0\x80"',
    b'"a\x01"', b'"a', b"", b" ", b"\xef\xbb\xbf{}", b"{}", b"[]", b"[ ]", b"{ }",
    b'{"a": 1, "a": 2, "b": 3}', b'{"a":1,}', b"[1,]", b"[1 2]", b'{"a" 1}', b"{1: 2}",
    b"{} {}", b"[] x", b" \t\r\n[1 , {\"x\" :\n[true,false,null]} ]\n ", b"[" * 300 + b"]" * 300,
    b"[" * 2000 + b"]" * 2000, b"\x00", b"[\x00]",
])
def test_loads_is_json_loads_or_leaves_it_to_json(raw):
    _check_loads(raw)


def test_loads_decodes_what_bcolzx_writes():
    meta = {"dtype": "float64", "cparams": {"clevel": 5, "shuffle": 1, "cname": "lz4"},
            "chunklen": 131072, "dflt": -0.0, "shape": [10, 3], "na": None, "ok": True}
    raw = seal(meta, "storage", UID)
    assert _same(metafiles.loads(raw), json.loads(raw))
    for escaped in ("é", "a\nb", 'q"'):  # escapes: json's
        assert metafiles.loads(json.dumps({"s": escaped}).encode()) is metafiles.UNPARSED


@settings(max_examples=400, deadline=None)
@given(_json_values, st.sampled_from([None, 0, 2]), st.sampled_from([(", ", ": "), (",", ":")]),
       st.booleans())
def test_loads_matches_json_on_any_document(value, indent, separators, ascii_only):
    raw = json.dumps(value, indent=indent, separators=separators,
                     ensure_ascii=ascii_only).encode("utf-8")
    got = metafiles.loads(raw)
    _check_loads(raw)
    if b"\\" not in raw and b"NaN" not in raw and b"Infinity" not in raw and \
            not re.search(rb"\d{19}", raw):
        assert got is not metafiles.UNPARSED, raw  # the common case is decoded in C


@settings(max_examples=400, deadline=None)
@given(_json_values, st.lists(st.tuples(st.integers(0, 200), st.binary(max_size=3)),
                              max_size=3))
def test_loads_matches_json_on_damaged_documents(value, edits):
    raw = bytearray(json.dumps(value, ensure_ascii=False).encode("utf-8"))
    for at, new in edits:
        at = min(at, len(raw))
        raw[at:at + len(new) // 2] = new
    _check_loads(bytes(raw))


def test_loads_takes_any_buffer():
    assert metafiles.loads(bytearray(b'{"a": [1]}')) == {"a": [1]}
    assert metafiles.loads(memoryview(b"[1, 2]")) == [1, 2]
    with pytest.raises(TypeError):
        metafiles.loads("[1]")


# -- plain_storage / plain_sizes -----------------------------------------------------

_ODD = [None, True, False, -1, 0, 1, 9, 10, 2, 3, 255, 1 << 20, (1 << 20) + 1, 1.0, 5.0, 1.5,
        -0.0, "", "x", "lz4", "zstd", "crc32c", "adler32", "off", "auto", "float64", "<i4",
        "T", "|O", "O", "S3", "bcolzx", [], [1], {}, {"clevel": 5}, 2 ** 70, "3"]


def _mutated(obj: dict, edits) -> dict:
    obj = json.loads(json.dumps(obj))  # deep copy
    for where, key, value in edits:
        target = obj["cparams"] if where and isinstance(obj.get("cparams"), dict) else obj
        keys = sorted(target) + ["vlen", "na_object", "generations", "parts", "extra"]
        key = keys[key % len(keys)]
        if value is _DELETE:
            target.pop(key, None)
        else:  # (a copy: a later edit must not change the shared value)
            target[key] = copy.deepcopy(value)
    return obj


_DELETE = object()


def _storage_fields(s) -> tuple:
    # (a StringDType array's bytes are its strings' addresses: its value instead)
    value = s.dflt.item() if s.dflt.dtype.kind == "T" else s.dflt.tobytes()
    return (s.dtype, type(s.dflt), s.dflt.dtype, value, s.chunklen, s.cparams,
            s.expectedlen, s.chunks_per_superchunk, s.checksum, s.blocksize, s.bytedelta,
            s.vlen, s.uid, s.sealed, s.parted, tuple(s.__dict__))


@pytest.mark.filterwarnings("ignore:overflow encountered in cast:RuntimeWarning")  # both ways
@settings(max_examples=500, deadline=None)
@given(st.sampled_from(["float64", "int8", "uint64", "bool", "complex64", "float16", "S5",
                        "U3", "M8[ns]", "m8[s]", "object", "(2,)i4", "T", "T-na"]),
       st.sampled_from([0, 1, -1, 2.5, -0.0, True, 300, 2 ** 64, "", "ab", None]),
       st.lists(st.tuples(st.booleans(), st.integers(0, 30),
                          st.sampled_from(_ODD + [_DELETE])), max_size=3),
       st.sampled_from([(True, UID), (True, None), (False, None)]))
def test_plain_storage_is_storage_decoding(dtype, dflt, edits, sealed):
    from bcolzx._format import meta
    from bcolzx._format.seal import Seal
    from bcolzx.errors import CorruptDataError, UnsupportedFormatError

    from bcolzx._format import strings

    if dtype.startswith("T"):  # strings: StringDType, with a missing value or without
        kind = strings.string_dtype("nan" if dtype == "T-na" else None)
        base = meta.Storage(dtype=kind, chunklen=1000, vlen="utf8").to_json()
    else:
        base = meta.Storage(dtype=np.dtype(dtype), chunklen=1000,
                            vlen="pickle" if dtype == "object" else None).to_json()
    base["dflt"] = dflt
    obj, seal_ = _mutated(base, edits), Seal(*sealed)
    fast = metafiles.plain_storage(json.loads(json.dumps(obj)), seal_, meta._PLAIN_STORAGE)
    try:
        slow = meta.Storage._decode(obj, "p", seal_)
    except (CorruptDataError, UnsupportedFormatError):
        assert fast is None
        return
    if fast is not None:
        assert _storage_fields(fast) == _storage_fields(slow)
        assert fast == slow and repr(fast) == repr(slow)
    if dtype in ("float64", "int8") and not edits and type(dflt) in (float, bool) or \
            dflt in (0, 1, -1) and type(dflt) is int and dtype == "int8" and not edits or \
            dtype == "T" and type(dflt) is str and not edits:
        assert fast is not None  # the usual file is decoded in C


@settings(max_examples=500, deadline=None)
@given(st.lists(st.integers(0, 5), min_size=1, max_size=3),
       st.lists(st.integers(1, 9), max_size=3),
       st.lists(st.tuples(st.booleans(), st.integers(0, 30),
                          st.sampled_from(_ODD + [_DELETE])), max_size=3))
def test_plain_sizes_is_sizes_decoding(shape, gens, edits):
    from bcolzx._format import meta
    from bcolzx.errors import CorruptDataError

    obj = _mutated(meta.Sizes(tuple(shape), 8, 4, tuple(gens), 1, 2).to_json(),
                   [(False, *e[1:]) for e in edits])
    fast = metafiles.plain_sizes(json.loads(json.dumps(obj)), meta.Sizes)
    try:
        slow = meta.Sizes._decode(obj, "p")
    except CorruptDataError:
        assert fast is None
        return
    if fast is not None:
        assert fast == slow and tuple(fast.__dict__) == tuple(slow.__dict__)
        assert [type(x) for x in fast.shape + fast.generations] == \
            [type(x) for x in slow.shape + slow.generations]
    else:
        assert "parts" in obj or edits  # the usual file is decoded in C


def test_storage_and_sizes_are_decoded_in_c_for_the_usual_file(tmp_path, monkeypatch):
    import bcolzx
    from bcolzx._format import meta

    bcolzx.carray(np.arange(10.0), rootdir=str(tmp_path / "a"), mode="w")

    def python_decoding(*args):
        raise AssertionError("decoded in Python")
    monkeypatch.setattr(meta.Storage, "_decode", classmethod(python_decoding))
    monkeypatch.setattr(meta.Sizes, "_decode", classmethod(python_decoding))
    assert bcolzx.open(str(tmp_path / "a"), "r")[:].tolist() == list(np.arange(10.0))


def test_loads_makes_a_member_name_once_and_any_number_of_them():
    first = metafiles.loads(b'{"chunklen": 1, "x": {"chunklen": 2}}')
    again = metafiles.loads(b'{"chunklen": 3}')
    assert next(iter(first)) is next(iter(again)) is next(iter(first["x"]))
    many = {f"name{i}" * (1 + i % 9): i for i in range(300)}  # past the names kept, and longer
    raw = json.dumps(many).encode()
    for _ in range(2):
        assert _same(metafiles.loads(raw), many)
    assert metafiles.loads(b'{"n": "name1", "name1": "n"}') == {"n": "name1", "name1": "n"}


# -- read_plain: both files of a usual dataset at once -------------------------------

LEGACY = os.path.join(os.path.dirname(__file__), "..", "data", "legacy_bcolz")


def _long_way(rootdir):
    """What the Python path makes of a dataset's two files: ``(Storage, Sizes)``,
    "legacy", or the class of the exception it raises."""
    from bcolzx._format import meta

    try:
        obj, seal_ = meta.read_storage_json(rootdir)
        if "format" not in obj:
            return "legacy"
        storage = meta.storage_from_sealed(rootdir, obj, seal_)
        return storage, meta.read_sizes(rootdir, storage)
    except Exception as exc:  # noqa: BLE001 - the class is the answer
        return type(exc)


def _check_read_plain(rootdir, usual: bool | None = None):
    """read_plain gives what the long way gives, or no answer (always where the
    long way refuses): meta/storage's bytes as read, or None; with `usual`,
    whether it must answer.  Returns (answer or None, the long way's)."""
    from bcolzx._format import meta

    fast, slow = meta.read_plain(rootdir), _long_way(rootdir)
    if usual is not None:
        assert (type(fast) is tuple) == usual, (fast, slow)
    if type(fast) is bytes:  # no answer, and the bytes of meta/storage for the long way
        with open(os.path.join(os.fsdecode(rootdir), "meta", "storage"), "rb") as f:
            assert fast == f.read()
        fast = None
    if fast is not None:
        assert isinstance(slow, tuple), slow
        assert _storage_fields(fast[0]) == _storage_fields(slow[0])
        assert fast[0] == slow[0] and repr(fast[0]) == repr(slow[0])
        assert fast[1] == slow[1] and tuple(fast[1].__dict__) == tuple(slow[1].__dict__)
    return fast, slow


@pytest.mark.parametrize("kind", ["float64", "int8-dflt", "rows", "empty", "shrunk", "bool",
                                  "complex", "strings", "strings-na", "objects", "legacy",
                                  "parts", "bytes-path"])
def test_read_plain_is_the_long_way_for_every_kind_of_dataset(tmp_path, kind):
    import bcolzx
    from bcolzx._storage.objects import LocalObjects

    d = str(tmp_path / "d")
    if kind == "float64":
        bcolzx.carray(np.linspace(0, 1, 1000), rootdir=d, mode="w", chunklen=64).flush()
    elif kind == "int8-dflt":
        bcolzx.carray(np.arange(100, dtype=np.int8), dflt=-3, rootdir=d, mode="w").flush()
    elif kind == "rows":
        bcolzx.carray(np.ones((50, 3)), rootdir=d, mode="w", chunklen=8).flush()
    elif kind == "empty":
        bcolzx.carray(np.empty(0, np.int32), rootdir=d, mode="w").flush()
    elif kind == "shrunk":
        c = bcolzx.carray(np.arange(1000), rootdir=d, mode="w", chunklen=100)
        c.resize(250)
        c.flush()
    elif kind == "bool":
        bcolzx.carray(np.ones(10, bool), rootdir=d, mode="w").flush()
    elif kind == "complex":
        bcolzx.carray(np.ones(10, np.complex64), rootdir=d, mode="w").flush()
    elif kind == "strings":
        bcolzx.carray(np.array(["a", "bc"], np.dtypes.StringDType()), rootdir=d,
                      mode="w").flush()
    elif kind == "strings-na":  # with a missing value: the long way
        bcolzx.carray(np.array(["a", None], np.dtypes.StringDType(na_object=None)), rootdir=d,
                      mode="w").flush()
    elif kind == "objects":
        bcolzx.carray(np.array([{1: 2}, None], object), rootdir=d, mode="w",
                      allow_pickle=True).flush()
    elif kind == "legacy":
        import shutil

        shutil.copytree(os.path.join(LEGACY, "ca_float64_default"), d)
    elif kind == "parts":  # superchunks continued in part objects (format §5)
        bcolzx.carray(np.arange(100), rootdir=LocalObjects(d), mode="w", chunklen=10)
        c = bcolzx.open(LocalObjects(d), "a")
        c.append(np.arange(5))
        c.flush()
    else:
        bcolzx.carray(np.arange(10), rootdir=d, mode="w").flush()
    # (a complex default is stored as a pair, left to the long way)
    # (a bytes path too: the long way takes str paths, and says what it makes of it)
    usual = None if kind == "complex" else \
        kind not in ("strings-na", "objects", "legacy", "parts", "bytes-path")
    fast, slow = _check_read_plain(os.fsencode(d) if kind == "bytes-path" else d, usual)
    if kind == "legacy":
        assert slow == "legacy"
    if kind == "bytes-path":
        assert slow is TypeError
    opened = bcolzx.open(d, "r", allow_pickle=True)
    assert opened[:].shape[0] == len(opened)


def _edit(raw: bytes, edits) -> bytes:
    for at, new in edits:
        at = min(at, len(raw))
        raw = raw[:at] + new + raw[at + len(new) // 2:]
    return raw


@pytest.fixture(scope="module")
def usual_dataset(tmp_path_factory):
    import bcolzx

    d = str(tmp_path_factory.mktemp("plain") / "d")
    bcolzx.carray(np.linspace(0, 1, 300), rootdir=d, mode="w", chunklen=64).flush()
    return {name: open(f"{d}/meta/{name}", "rb").read() for name in ("storage", "sizes")}


def _dataset_of(where, files_: dict) -> str:
    import shutil

    d = os.path.join(where, "d")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(f"{d}/meta")
    for name, raw in files_.items():
        with open(f"{d}/meta/{name}", "wb") as f:
            f.write(raw)
    return d


@pytest.mark.filterwarnings("ignore:overflow encountered in cast:RuntimeWarning")
@settings(max_examples=300, deadline=None)
@given(st.sampled_from(["storage", "sizes"]),
       st.lists(st.tuples(st.integers(0, 400), st.binary(max_size=3)), min_size=1, max_size=3))
def test_read_plain_on_damaged_files(tmp_path_factory, usual_dataset, name, edits):
    """Bytes replaced, inserted or cut anywhere in either file: the same answer as
    the long way, or None (then the long way reports)."""
    raw = _edit(usual_dataset[name], edits)
    d = _dataset_of(str(tmp_path_factory.getbasetemp()), {**usual_dataset, name: raw})
    _check_read_plain(d)


@pytest.mark.filterwarnings("ignore:overflow encountered in cast:RuntimeWarning")
@settings(max_examples=300, deadline=None)
@given(st.sampled_from(["storage", "sizes"]),
       st.lists(st.tuples(st.booleans(), st.integers(0, 30),
                          st.sampled_from(_ODD + [_DELETE])), min_size=1, max_size=3),
       st.sampled_from([UID, None, "fedcba9876543210"]))
def test_read_plain_on_lying_files_with_valid_seals(tmp_path_factory, usual_dataset, name,
                                                   edits, uid):
    """Values changed, deleted or added, and the file sealed again with a valid
    checksum (under the dataset's uid, another, or none): the same answer as the
    long way, or None."""
    obj = json.loads(usual_dataset[name])
    del obj["__crc32c__"]
    own = obj.pop("__uid__")
    raw = seal(_mutated(obj, edits), name, own if uid == UID else uid)
    d = _dataset_of(str(tmp_path_factory.getbasetemp()), {**usual_dataset, name: raw})
    _check_read_plain(d)


def test_read_plain_leaves_every_odd_file_to_the_long_way(tmp_path, usual_dataset):
    import bcolzx
    from bcolzx.errors import CorruptDataError

    where = str(tmp_path)

    def answer(files_, usual=False):
        return _check_read_plain(_dataset_of(where, files_), usual)
    assert answer(usual_dataset, True)[0] is not None
    for name in ("storage", "sizes"):
        # missing, unsealed, a NaN token, a directory, a FIFO (never waited on)
        assert answer({k: v for k, v in usual_dataset.items() if k != name})[1] \
            is FileNotFoundError
        obj = json.loads(usual_dataset[name])
        del obj["__crc32c__"], obj["__uid__"]
        assert answer({**usual_dataset, name: json.dumps(obj).encode()})[1] is CorruptDataError
        d = _dataset_of(where, usual_dataset)
        os.remove(f"{d}/meta/{name}")
        os.mkdir(f"{d}/meta/{name}")
        assert not isinstance(_check_read_plain(d, False)[1], tuple)
        os.rmdir(f"{d}/meta/{name}")
        os.mkfifo(f"{d}/meta/{name}")
        assert not isinstance(_check_read_plain(d, False)[1], tuple)
    # the files of two datasets: each sealed, with two uids
    other = str(tmp_path / "other")
    bcolzx.carray(np.linspace(0, 1, 300), rootdir=other, mode="w", chunklen=64).flush()
    foreign = open(f"{other}/meta/sizes", "rb").read()
    assert answer({**usual_dataset, "sizes": foreign})[1] is CorruptDataError
    d = _dataset_of(where, {**usual_dataset, "sizes": foreign})
    with pytest.raises(CorruptDataError, match="another dataset"):
        bcolzx.open(d, "r")
    # a NaN token in a sealed file is decoded by the long way (jsonfile)
    obj = json.loads(usual_dataset["storage"])
    del obj["__crc32c__"]
    obj["note"] = {"$float": "nan"}
    answer({**usual_dataset, "storage": seal(obj, "storage", obj.pop("__uid__"))})


def test_read_plain_follows_a_link_as_reading_does(tmp_path, usual_dataset):
    d = _dataset_of(str(tmp_path), usual_dataset)
    os.rename(f"{d}/meta/storage", str(tmp_path / "elsewhere"))
    os.symlink(str(tmp_path / "elsewhere"), f"{d}/meta/storage")
    _check_read_plain(d, True)


def test_opening_a_usual_dataset_reads_its_files_once_in_c(tmp_path, monkeypatch):
    import bcolzx
    from bcolzx._format import meta

    d = str(tmp_path / "a")
    bcolzx.carray(np.arange(10.0), rootdir=d, mode="w")

    def long_way(*args, **kwargs):
        raise AssertionError("read the long way")
    for name in ("read_storage_json", "read_sizes", "storage_from_sealed"):
        monkeypatch.setattr(meta, name, long_way)
    monkeypatch.setattr("bcolzx._storage.opening.read_storage_json", long_way)
    monkeypatch.setattr("bcolzx._storage.directory.read_sizes", long_way)
    for mode in ("r", "a"):
        assert bcolzx.open(d, mode)[:].tolist() == list(np.arange(10.0))


@pytest.mark.parametrize("name", ["ca_float64_default", "ct_mixed"])
def test_any_other_dataset_reads_meta_storage_once(tmp_path, monkeypatch, name):
    """A legacy dataset (and any other read_plain does not take) is decoded the
    long way from the bytes read_plain read: meta/storage is not read again."""
    import shutil

    import bcolzx
    from bcolzx._format import meta

    d = str(tmp_path / name)
    shutil.copytree(os.path.join(LEGACY, name), d)
    want = bcolzx.open(d, "r")[:]

    def read_again(path, *args, **kwargs):
        raise AssertionError(f"{path} read again")
    monkeypatch.setattr(meta, "read_json_sealed", read_again)
    np.testing.assert_array_equal(bcolzx.open(d, "r")[:], want)
