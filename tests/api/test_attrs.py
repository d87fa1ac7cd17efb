"""bcolzx.attrs: the legacy user-attributes accessor, in memory and on disk."""

import doctest
import json
import os

import numpy as np
import pytest

from bcolzx import attrs as attrs_module
from bcolzx.attrs import attrs
from bcolzx.errors import CorruptDataError, ReadOnlyError


@pytest.fixture(params=["memory", "disk"])
def rootdir(request, tmp_path):
    """None for in-memory attributes, a fresh directory for persistent ones."""
    return None if request.param == "memory" else str(tmp_path)


def read_file(rootdir):
    with open(os.path.join(rootdir, "__attrs__"), "rb") as f:
        return f.read()


def test_new_attrs_are_empty(rootdir):
    a = attrs(rootdir, "a", _new=True)
    assert len(a) == 0 and list(a) == [] and a.getall() == {}
    assert str(a) == repr(a) == "*no attrs*"
    if rootdir is not None:
        assert json.loads(read_file(rootdir)) == {}


def test_set_get_delete(rootdir):
    a = attrs(rootdir, "a", _new=True)
    a["x"] = 1
    a["y"] = {"k": [1.5, None, "s"]}
    assert a["x"] == 1 and a["y"] == {"k": [1.5, None, "s"]}
    assert "x" in a and "z" not in a and len(a) == 2
    del a["x"]
    assert "x" not in a and len(a) == 1
    with pytest.raises(KeyError):
        a["x"]
    with pytest.raises(KeyError):
        del a["x"]


def test_iteration_yields_name_value_pairs(rootdir):
    a = attrs(rootdir, "a", _new=True)
    a["a"] = 1
    a["b"] = "two"
    assert list(a) == [("a", 1), ("b", "two")]
    assert dict(a) == {"a": 1, "b": "two"}


def test_getall_returns_a_copy(rootdir):
    a = attrs(rootdir, "a", _new=True)
    a["x"] = 1
    everything = a.getall()
    everything["x"] = 2
    everything["y"] = 3
    assert a.getall() == {"x": 1}


def test_attrs_persist_after_reopen(tmp_path):
    a = attrs(str(tmp_path), "a", _new=True)
    a["x"] = 1
    a["y"] = [1, 2]
    a["z"] = "gone"
    del a["z"]
    b = attrs(tmp_path, "r")  # os.PathLike accepted too
    assert b.getall() == {"x": 1, "y": [1, 2]}
    assert json.loads(read_file(str(tmp_path))) == {"x": 1, "y": [1, 2]}


def test_values_are_stored_in_json_form(rootdir):
    a = attrs(rootdir, "a", _new=True)
    a["t"] = (1, 2)
    a["d"] = {1: "one"}
    a["nan"] = float("nan")
    assert a["t"] == [1, 2] and a["d"] == {"1": "one"} and np.isnan(a["nan"])
    if rootdir is not None:
        b = attrs(rootdir, "r")
        assert b["t"] == [1, 2] and b["d"] == {"1": "one"} and np.isnan(b["nan"])


def test_numpy_scalars_become_python_scalars(rootdir):
    a = attrs(rootdir, "a", _new=True)
    a["i"] = np.int64(3)
    a["f"] = np.float32(0.5)
    a["b"] = np.bool_(True)
    a["nested"] = [np.int16(1), {"k": np.uint8(2)}]
    assert a.getall() == {"i": 3, "f": 0.5, "b": True, "nested": [1, {"k": 2}]}
    assert type(a["i"]) is int and type(a["b"]) is bool


@pytest.mark.parametrize(
    "value",
    [np.arange(3), object(), b"bytes", {1, 2}, np.complex128(1j), np.datetime64("2020-01-01")],
    ids=["ndarray", "object", "bytes", "set", "complex", "datetime64"],
)
def test_non_json_value_raises_typeerror_and_changes_nothing(rootdir, value):
    a = attrs(rootdir, "a", _new=True)
    a["x"] = 1
    before = read_file(rootdir) if rootdir is not None else None
    with pytest.raises(TypeError):
        a["y"] = value
    assert a.getall() == {"x": 1}
    if rootdir is not None:
        assert read_file(rootdir) == before
        assert sorted(os.listdir(rootdir)) == ["__attrs__"]  # no temporary left


def test_circular_value_raises_typeerror(rootdir):
    a = attrs(rootdir, "a", _new=True)
    loop = []
    loop.append(loop)
    with pytest.raises(TypeError):
        a["loop"] = loop
    assert len(a) == 0


def test_name_must_be_str(rootdir):
    a = attrs(rootdir, "a", _new=True)
    with pytest.raises(TypeError):
        a[1] = "one"
    assert len(a) == 0


def test_read_only_mode_refuses_changes(rootdir):
    if rootdir is not None:
        w = attrs(rootdir, "a", _new=True)
        w["x"] = 1
        before = read_file(rootdir)
    a = attrs(rootdir, "r")
    with pytest.raises(ReadOnlyError):
        a["y"] = 2
    with pytest.raises(PermissionError):
        a["y"] = 2
    with pytest.raises(IOError):  # legacy code catches IOError
        a["y"] = 2
    with pytest.raises(ReadOnlyError):
        del a["x"]
    if rootdir is not None:
        assert a.getall() == {"x": 1}
        assert read_file(rootdir) == before


def test_missing_file_reads_empty_in_read_only_mode(tmp_path):
    a = attrs(str(tmp_path), "r")
    assert len(a) == 0
    assert not (tmp_path / "__attrs__").exists()


def test_new_in_read_only_mode_writes_nothing(tmp_path):
    attrs(str(tmp_path), "r", _new=True)
    assert not (tmp_path / "__attrs__").exists()


@pytest.mark.parametrize("mode", ["a", "w"])
def test_missing_file_is_created(tmp_path, mode):
    a = attrs(str(tmp_path), mode)
    assert len(a) == 0
    assert json.loads((tmp_path / "__attrs__").read_bytes()) == {}


def test_new_empties_an_existing_file(tmp_path):
    a = attrs(str(tmp_path), "a", _new=True)
    a["x"] = 1
    b = attrs(str(tmp_path), "w", _new=True)
    assert len(b) == 0
    assert attrs(str(tmp_path), "r").getall() == {}


@pytest.mark.parametrize(
    "content",
    [b"{not json", b"[1, 2]", b"\xff\xfe", b"", b"\n"],
    ids=["syntax", "list", "utf8", "empty", "newline"],
)
@pytest.mark.parametrize("mode", ["r", "a"])
def test_corrupt_attrs_file_raises(tmp_path, content, mode):
    (tmp_path / "__attrs__").write_bytes(content)
    with pytest.raises(CorruptDataError) as info:
        attrs(str(tmp_path), mode)
    assert info.value.path == os.path.join(str(tmp_path), "__attrs__")
    assert (tmp_path / "__attrs__").read_bytes() == content


def test_reads_legacy_written_file(tmp_path):
    # legacy bcolz wrote ASCII JSON followed by a newline
    (tmp_path / "__attrs__").write_bytes(b'{"a": 1, "b": "\\u00e9"}\n')
    assert attrs(str(tmp_path), "r").getall() == {"a": 1, "b": "\u00e9"}


def test_writes_are_atomic(tmp_path, monkeypatch):
    a = attrs(str(tmp_path), "a", _new=True)
    a["x"] = 1
    before = read_file(str(tmp_path))

    def failing_replace(src, dst, **dir_fds):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(OSError):
        a["y"] = 2
    monkeypatch.undo()
    assert read_file(str(tmp_path)) == before
    assert a.getall() == {"x": 1}  # the cache follows the file
    assert sorted(os.listdir(tmp_path)) == ["__attrs__"]


def test_invalid_mode_raises_valueerror():
    with pytest.raises(ValueError):
        attrs(None, "x")


def test_legacy_str_and_repr():
    a = attrs()
    a["x"] = 1
    a["s"] = "text"
    assert repr(a) == "x : 1\ns : 'text'\n"
    assert str(a) == "x : 1\ns : text"


def test_legacy_properties(tmp_path):
    a = attrs(str(tmp_path), "a")
    assert a.rootdir == str(tmp_path) and a.mode == "a"
    assert a.attrsfile == os.path.join(str(tmp_path), "__attrs__")
    m = attrs()
    assert m.rootdir is None and m.attrsfile is None and m.mode == "a"


def test_docstring_examples_run():
    result = doctest.testmod(attrs_module, verbose=False)
    assert result.attempted > 0 and result.failed == 0


def _strict_json(raw):
    """json.loads that refuses Python's NaN / Infinity tokens (RFC 8259 only)."""
    def refuse(token):
        raise ValueError(f"non-standard JSON token {token}")
    return json.loads(raw, parse_constant=refuse)


def test_nonfinite_floats_are_standard_json_in_a_bcolzx_dataset(tmp_path):
    import bcolzx
    c = bcolzx.carray([1, 2, 3], rootdir=str(tmp_path / "c"), mode="w")
    c.attrs["nan"] = float("nan")
    c.attrs["nested"] = [1.5, float("-inf"), {"up": float("inf")}]
    raw = (tmp_path / "c" / "__attrs__").read_bytes()
    stored = _strict_json(raw)
    assert stored["nan"] == {"$float": "NaN"}
    assert stored["nested"] == [1.5, {"$float": "-Infinity"}, {"up": {"$float": "Infinity"}}]
    got = bcolzx.open(str(tmp_path / "c")).attrs.getall()
    assert np.isnan(got["nan"]) and got["nested"][:2] == [1.5, float("-inf")]
    assert got["nested"][2] == {"up": float("inf")}
    # a ctable's attributes too
    t = bcolzx.ctable([np.arange(3)], names=["a"], rootdir=str(tmp_path / "t"), mode="w")
    t.attrs["x"] = float("nan")
    assert _strict_json((tmp_path / "t" / "__attrs__").read_bytes())["x"] == {"$float": "NaN"}
    assert np.isnan(bcolzx.open(str(tmp_path / "t")).attrs["x"])


def test_a_dict_shaped_like_the_stand_in_is_refused(rootdir):
    a = attrs(rootdir, "a", _new=True)
    a["keep"] = 1
    for bad in ({"$float": "NaN"}, [{"$float": 1}], {"k": {"$float": "x"}}):
        with pytest.raises(ValueError, match=r"\$float"):
            a["bad"] = bad
    a["fine"] = {"$float": "NaN", "other": 1}  # not the stand-in's shape
    assert a.getall() == {"keep": 1, "fine": {"$float": "NaN", "other": 1}}
    if rootdir is not None:
        assert attrs(rootdir, "r").getall() == a.getall()


def test_sealed_files_of_older_writers_with_nan_tokens_still_read(tmp_path):
    import bcolzx
    from bcolzx._format import seal
    c = bcolzx.carray([1.0], rootdir=str(tmp_path), mode="w")
    uid = json.loads((tmp_path / "__attrs__").read_bytes())["__uid__"]
    body = json.dumps({"x": float("nan"), "__uid__": uid}).encode()
    crc = seal._crc("__attrs__", body)
    (tmp_path / "__attrs__").write_bytes(body[:-1] + b', "__crc32c__": %d}' % crc)
    assert np.isnan(bcolzx.open(str(tmp_path)).attrs["x"])
    del c


def test_a_malformed_stand_in_is_corrupt_data(tmp_path):
    import bcolzx
    from bcolzx._format import seal
    bcolzx.carray([1.0], rootdir=str(tmp_path), mode="w")
    uid = json.loads((tmp_path / "__attrs__").read_bytes())["__uid__"]
    body = json.dumps({"x": {"$float": "NotANumber"}, "__uid__": uid}).encode()
    (tmp_path / "__attrs__").write_bytes(
        body[:-1] + b', "__crc32c__": %d}' % seal._crc("__attrs__", body))
    with pytest.raises(CorruptDataError, match="non-finite"):
        bcolzx.open(str(tmp_path))


def test_legacy_directories_keep_legacy_nan_tokens(tmp_path):
    import shutil

    import bcolzx
    legacy = os.path.join(os.path.dirname(__file__), os.pardir, "data", "legacy_bcolz")
    shutil.copytree(os.path.join(legacy, "ca_float64_default"), tmp_path / "l")
    c = bcolzx.open(str(tmp_path / "l"), mode="a")
    c.attrs["x"] = float("nan")
    assert b"NaN" in (tmp_path / "l" / "__attrs__").read_bytes()  # what legacy bcolz reads
    assert np.isnan(bcolzx.open(str(tmp_path / "l")).attrs["x"])
