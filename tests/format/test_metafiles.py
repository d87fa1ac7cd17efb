"""The small metadata files in C (bcolzx._ext.metafiles): each function against
what Python's own calls, or the seal's definition (docs/format/README.md §2c),
say about the same bytes and paths."""

import json
import os
import re
import stat

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
