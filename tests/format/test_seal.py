"""The seal of JSON metadata files (docs/format/README.md §2c)."""

import json
import os

import pytest

import bcolzx
from bcolzx._ext import checksum
from bcolzx._format import jsonfile
from bcolzx._format.seal import Seal, new_uid, seal, unseal
from bcolzx.errors import CorruptDataError

UID = "0123456789abcdef"


def test_layout_from_the_spec():
    """An independent reading of §2c: the crc of name, NUL, then the unsealed object."""
    raw = seal({"shape": [3], "nbytes": 24}, "sizes", UID)
    obj = json.loads(raw)
    assert list(obj)[-2:] == ["__uid__", "__crc32c__"] and obj["__uid__"] == UID
    body = json.dumps({"shape": [3], "nbytes": 24, "__uid__": UID}).encode()
    assert raw == body[:-1] + b', "__crc32c__": %d}' % obj["__crc32c__"]
    assert obj["__crc32c__"] == checksum.crc32c(b"sizes\0" + body)
    assert seal({}, "__attrs__") == b'{"__crc32c__": %d}' % checksum.crc32c(b"__attrs__\0{}")


@pytest.mark.parametrize("obj", [{}, {"a": 1}, {"names": ["x", "y"], "n": [1.5, None]}])
def test_round_trip(obj):
    raw = seal(obj, "f", UID)
    back, found = unseal(raw, json.loads(raw), "f")
    assert found == Seal(True, UID)
    assert json.dumps(back) == json.dumps(obj)


def test_a_sealed_file_is_standard_json_and_nonfinite_floats_round_trip():
    obj = {"names": ["x"], "nan": float("nan"), "more": [float("inf"), {"k": float("-inf")}]}
    with pytest.raises(ValueError):  # the seal itself writes standard JSON only
        seal(obj, "f", UID)
    raw = jsonfile.dumps(obj, "f", uid=UID)
    strict = json.loads(raw, parse_constant=lambda token: pytest.fail(token))
    assert strict["nan"] == {"$float": "NaN"}
    back, found = jsonfile.loads_sealed(raw, "f")
    assert found == Seal(True, UID)
    assert json.dumps(back) == json.dumps(obj)  # NaN, Infinity, -Infinity again


def test_every_byte_flip_is_detected():
    raw = seal({"shape": [1050], "nbytes": 8400, "cbytes": 999, "generations": [7]}, "sizes",
               UID)
    for i in range(len(raw)):
        for mask in (0x01, 0x20, 0x80):
            bad = bytearray(raw)
            bad[i] ^= mask
            try:
                obj = json.loads(bytes(bad))
            except ValueError:
                continue  # no longer JSON: refused by read_json
            with pytest.raises(CorruptDataError):
                back, found = unseal(bytes(bad), obj, "sizes")
                assert found.sealed, "the seal itself was damaged into another key"


def test_a_file_under_another_name_is_detected():
    raw = seal({"a": 1}, "zonemap", UID)
    with pytest.raises(CorruptDataError, match="another file"):
        unseal(raw, json.loads(raw), "__attrs__")


def test_unsealed_files_read_as_before():
    assert unseal(b'{"a": 1}', {"a": 1}, "x") == ({"a": 1}, Seal())
    assert unseal(b"[1]", [1], "x") == ([1], Seal())


def test_reserved_keys_and_bad_uid_are_refused():
    with pytest.raises(ValueError):
        seal({"__crc32c__": 1}, "x")
    with pytest.raises(ValueError):
        seal({}, "x", "not-a-uid")
    assert len(new_uid()) == 16 and new_uid() != new_uid()


def test_new_datasets_are_sealed_and_legacy_ones_are_not(tmp_path):
    c = bcolzx.carray([1, 2, 3], rootdir=str(tmp_path / "c"))
    c.attrs["x"] = 1
    uid = None
    for name in ("meta/storage", "meta/sizes", "meta/zonemap", "__attrs__"):
        obj, found = jsonfile.read_json_sealed(os.path.join(c.rootdir, name))
        assert found.sealed and found.uid is not None
        uid = uid or found.uid
        assert found.uid == uid
    t = bcolzx.ctable([[1, 2]], names=["a"], rootdir=str(tmp_path / "t"))
    _, found = jsonfile.read_json_sealed(os.path.join(t.rootdir, "__rootdirs__"))
    assert found.sealed and found.uid not in (None, uid)
    assert bcolzx.open(str(tmp_path / "t"), mode="r").attrs.getall() == {}


def test_a_reserved_attribute_name_is_refused(tmp_path):
    c = bcolzx.carray([1], rootdir=str(tmp_path / "c"))
    with pytest.raises(ValueError, match="reserved"):
        c.attrs["__crc32c__"] = 1
    assert c.attrs.getall() == {}


@pytest.mark.parametrize("text", ['{"a": 1}', ' {"a": [1, 2.5, null]}\n', '{"a": NaN}', "[]",
                                  '"x"', "7", "{", "", "nul", '{"a": 1} x', '{"a": 1}}',
                                  '[' * 100 + ']' * 100])
def test_json_files_decode_as_json_loads_does(text):
    """The files' decoder (json's scanner, without the whitespace skipping) gives
    json.loads's value, or its exception and message (metafiles.loads leaves to it
    what it does not decode: tests/format/test_metafiles.py)."""
    from bcolzx._format.jsonfile import _decode

    try:
        expected = json.loads(text)
    except ValueError as exc:
        with pytest.raises(type(exc)) as info:
            _decode(text.encode())
        assert str(info.value) == str(exc)
    else:
        got = _decode(text.encode())
        assert json.dumps(got) == json.dumps(expected) and type(got) is type(expected)
