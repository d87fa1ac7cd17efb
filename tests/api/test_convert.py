"""bcolzx.convert: legacy bcolz (format v1) directories upgraded to the bcolzx format."""

import doctest
import errno
import hashlib
import importlib
import json
import math
import os
import shutil
import stat
from pathlib import Path

import numpy as np
import pytest

import bcolzx
from bcolzx._format import layout, legacy
from bcolzx.errors import CorruptDataError, UnsupportedFormatError

# ``bcolzx.convert`` is the function (exported by the package), so the module
# is fetched by name.
conv = importlib.import_module("bcolzx.convert")
carray_module = importlib.import_module("bcolzx.carray")

LEGACY = Path(__file__).resolve().parents[1] / "data" / "legacy_bcolz"
MANIFEST = json.loads((LEGACY / "MANIFEST.json").read_text())
DATASETS = {d["path"]: d for d in MANIFEST["datasets"]}
OBJECT = "ca_object_optional"
CONVERTIBLE = [name for name in DATASETS if name != OBJECT]
MODES = ["inplace", "dst"]


# -- helpers ---------------------------------------------------------------------------


def copy_fixture(name: str, where: Path) -> Path:
    """A writable copy of legacy fixture `name` (the originals may be read-only)."""
    dst = where / name
    shutil.copytree(LEGACY / name, dst)
    for root, dirs, files in os.walk(dst):
        for entry in [root, *(os.path.join(root, f) for f in files)]:
            os.chmod(entry, os.stat(entry).st_mode | stat.S_IWUSR)
    return dst


def snapshot(path: Path) -> dict:
    """Every file (bytes) and directory under `path`, by relative path."""
    out = {}
    for root, dirs, files in os.walk(path):
        rel = os.path.relpath(root, path)
        out[rel] = None
        for f in files:
            out[os.path.join(rel, f)] = Path(root, f).read_bytes()
    return out


def sha(arr: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(arr).tobytes()).hexdigest()


def storage_json(path) -> dict:
    return json.loads(Path(path, "meta", "storage").read_text())


def run(src: Path, mode: str, **kwargs) -> Path:
    """Convert `src` in place or to a sibling ``<name>_new``; the converted path."""
    if mode == "inplace":
        assert bcolzx.convert(src, **kwargs) == os.fspath(src)
        return src
    dst = src.with_name(src.name + "_new")
    assert bcolzx.convert(src, dst, **kwargs) == os.fspath(dst)
    return dst


def check_carray(path: Path, meta: dict, original: bcolzx.carray) -> None:
    """The converted carray at `path` holds what the MANIFEST and the original say."""
    assert not legacy.is_legacy(path)
    st = storage_json(path)
    assert st["format"] == "bcolzx" and st["format_version"] >= 1
    ca = bcolzx.open(path, mode="r")
    assert ca.shape == tuple(meta["shape"]) and str(ca.dtype) == str(original.dtype)
    assert sha(ca[:]) == meta["content"]["sha256"]
    assert ca.attrs.getall() == meta["attrs"]
    assert list(ca.attrs) == list(meta["attrs"].items())
    assert np.asarray(ca.dflt).tobytes() == np.asarray(original.dflt).tobytes()
    assert {k: getattr(ca.cparams, k) for k in ("clevel", "shuffle", "cname", "quantize")} \
        == meta["cparams"]
    rowbytes = ca.dtype.itemsize * math.prod(ca.shape[1:])
    assert ca.chunklen == layout.default_chunklen(rowbytes, len(ca) or None)


def check_converted(path: Path, name: str) -> None:
    meta = DATASETS[name]
    original = bcolzx.open(LEGACY / name, mode="r")
    if meta["kind"] == "carray":
        check_carray(path, meta, original)
        return
    ct = bcolzx.open(path, mode="r")
    assert isinstance(ct, bcolzx.ctable)
    assert ct.names == meta["names"] == json.loads((path / "__rootdirs__").read_text())["names"]
    assert ct.attrs.getall() == meta["attrs"]
    assert sha(ct[:]) == meta["rows_sha256"]
    for colname in ct.names:
        check_carray(path / colname, meta["columns"][colname], original.cols[colname])


def no_temporaries(parent: Path, expected: set) -> None:
    assert set(os.listdir(parent)) == expected


# -- conversions -----------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", CONVERTIBLE)
def test_convert_fixture(tmp_path, name, mode):
    src = copy_fixture(name, tmp_path)
    before = snapshot(src)
    out = run(src, mode)
    check_converted(out, name)
    if mode == "dst":
        assert snapshot(src) == before  # the source is untouched
        no_temporaries(tmp_path, {name, name + "_new"})
    else:
        no_temporaries(tmp_path, {name})


def test_convert_returns_str_for_pathlike(tmp_path):
    src = copy_fixture("ca_uint16", tmp_path)
    result = bcolzx.convert(src)
    assert isinstance(result, str) and result == os.fspath(src)


def test_exported_and_documented():
    assert bcolzx.convert is conv.convert
    assert "convert" in bcolzx.__all__
    result = doctest.testmod(conv, verbose=False)
    assert result.attempted > 0 and result.failed == 0


def test_quantize_kept_for_future_appends_not_reapplied(tmp_path):
    src = copy_fixture("ca_float64_quantize2", tmp_path)
    stored = bcolzx.open(LEGACY / "ca_float64_quantize2", mode="r")[:]
    bcolzx.convert(src)
    ca = bcolzx.open(src, mode="a")
    assert ca.cparams.quantize == 2
    assert storage_json(src)["cparams"]["quantize"] == 2
    assert ca[:].tobytes() == stored.tobytes()
    value = 0.123456789
    ca.append([value])
    ca.flush()
    got = bcolzx.open(src, mode="r")[-1]
    assert got == carray_module.quantize(np.array([value]), 2)[0] and got != value


def test_dflt_kept_for_resize(tmp_path):
    src = copy_fixture("ca_int64_appended_dflt", tmp_path)
    bcolzx.convert(src)
    ca = bcolzx.open(src, mode="a")
    assert ca.dflt == -1
    ca.resize(len(ca) + 3)
    assert ca[-3:].tolist() == [-1, -1, -1]


@pytest.mark.parametrize("mode", MODES)
def test_bit_identical_nan_payloads_and_signed_zeros(tmp_path, mode):
    src = copy_fixture("ca_float64_attrs", tmp_path)
    ca = bcolzx.open(src, mode="a")  # legacy data written in place by bcolzx (still v1)
    odd = np.array([0x7FF8000000000001, 0xFFF8000000000000, 0x7FF0000000000001,
                    0x8000000000000000, 0x7FF0000000000000], dtype=np.uint64).view(np.float64)
    ca[:5] = odd
    ca.append(odd)
    ca.flush()
    del ca
    assert legacy.is_legacy(src)
    expected = bcolzx.open(src, mode="r")[:].tobytes()
    assert expected[:40] == odd.tobytes()
    out = run(src, mode)
    assert bcolzx.open(out, mode="r")[:].tobytes() == expected


@pytest.mark.parametrize("chunklen", [None, 1000, 7])
def test_chunklen_override(tmp_path, chunklen):
    src = copy_fixture("ct_attrs", tmp_path)
    bcolzx.convert(src, chunklen=chunklen)
    ct = bcolzx.open(src, mode="r")
    for name, col in ct.cols.items():
        rowbytes = col.dtype.itemsize
        want = chunklen or layout.default_chunklen(rowbytes, len(col))
        assert col.chunklen == want
    assert sha(ct[:]) == DATASETS["ct_attrs"]["rows_sha256"]


@pytest.mark.parametrize("override, expected", [
    ({"cname": "zstd"}, {"clevel": 5, "shuffle": 1, "cname": "zstd", "quantize": 2}),
    ({"clevel": 9, "quantize": 0}, {"clevel": 9, "shuffle": 1, "cname": "lz4", "quantize": 0}),
    (bcolzx.cparams(clevel=1, shuffle=0, cname="blosclz", quantize=0),
     {"clevel": 1, "shuffle": 0, "cname": "blosclz", "quantize": 0}),
])
def test_cparams_override(tmp_path, override, expected):
    src = copy_fixture("ca_float64_quantize2", tmp_path)
    bcolzx.convert(src, cparams=override)
    ca = bcolzx.open(src, mode="r")
    assert ca.cparams.to_dict() == expected
    # Data are copied as stored whatever the quantize asked for.
    assert sha(ca[:]) == DATASETS["ca_float64_quantize2"]["content"]["sha256"]


def test_default_cparams_get_bcolzx_blocking(tmp_path):
    src = copy_fixture("ca_int64_zlib", tmp_path)
    bcolzx.convert(src)
    cp = bcolzx.open(src, mode="r").cparams
    assert (cp.blocksize, cp.bytedelta) == (layout.DEFAULT_BLOCKSIZE, layout.DEFAULT_BYTEDELTA)


@pytest.mark.parametrize("name, blocksize", [("ca_bytes_S10", 32760), ("ca_unicode_U6", 32760),
                                             ("ca_float64_default", 32768)])
def test_default_blocksize_in_whole_items(tmp_path, name, blocksize):
    """32 KiB is not a multiple of 10 or 24 bytes: C-Blosc2 could not read such chunks back."""
    src = copy_fixture(name, tmp_path)
    bcolzx.convert(src)
    ca = bcolzx.open(src, mode="r")
    assert ca.cparams.blocksize == blocksize
    assert sha(ca[:]) == DATASETS[name]["content"]["sha256"]


def test_partly_converted_ctable(tmp_path):
    """A legacy ctable holding a bcolzx-format column (put there by hand: addcol
    on a legacy table makes legacy columns)."""
    src = copy_fixture("ct_attrs", tmp_path)
    bcolzx.carray(np.arange(3000) * 2, rootdir=str(src / "extra"),
                  cparams=bcolzx.cparams(clevel=3)).flush()
    rootdirs = src / "__rootdirs__"
    rootdirs.write_text(json.dumps({"names": ["id", "price", "sym", "extra"]}))
    assert not legacy.is_legacy(src / "extra") and legacy.is_legacy(src / "id")
    bcolzx.convert(src)
    ct = bcolzx.open(src, mode="r")
    assert ct.names == ["id", "price", "sym", "extra"]
    assert not any(legacy.is_legacy(src / n) for n in ct.names)
    assert ct.cols["extra"][:].tolist() == list(range(0, 6000, 2))
    assert ct.cols["extra"].cparams.clevel == 3
    assert ct.cols["price"].attrs.getall() == {"currency": "USD"}


def test_streams_block_by_block(tmp_path, monkeypatch):
    src = copy_fixture("ca_int32_leftover", tmp_path)
    sizes = []
    real = conv.iterblocks

    def spy(cobj, blen=None, start=0, stop=None):
        for block in real(cobj, blen, start, stop):
            sizes.append(len(block))
            yield block

    monkeypatch.setattr(conv, "BLOCK_BYTES", 1)  # one chunk per block
    monkeypatch.setattr(conv, "iterblocks", spy)
    bcolzx.convert(src, chunklen=1024)
    assert max(sizes) == 1024 and len(sizes) >= 2 * math.ceil(12345 / 1024)
    assert sha(bcolzx.open(src, mode="r")[:]) == DATASETS["ca_int32_leftover"]["content"]["sha256"]


def test_symlink_source_is_followed(tmp_path):
    real = copy_fixture("ca_uint16", tmp_path)
    link = tmp_path / "link"
    link.symlink_to(real, target_is_directory=True)
    bcolzx.convert(link)
    assert link.is_symlink() and os.readlink(link) == os.fspath(real)
    assert not legacy.is_legacy(real)
    no_temporaries(tmp_path, {"ca_uint16", "link"})


# -- refusals ---------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", ["ca_float64_attrs", "ct_mixed"])
def test_refuses_already_converted(tmp_path, name, mode):
    src = copy_fixture(name, tmp_path)
    bcolzx.convert(src)
    before = snapshot(src)
    with pytest.raises(UnsupportedFormatError, match="already in the bcolzx format"):
        run(src, mode)
    assert snapshot(src) == before
    no_temporaries(tmp_path, {name})


def test_refuses_new_bcolzx_datasets(tmp_path):
    bcolzx.arange(10, rootdir=str(tmp_path / "a"), mode="w")
    bcolzx.ctable([np.arange(3)], names=["x"], rootdir=str(tmp_path / "t"), mode="w")
    for name in ("a", "t"):
        with pytest.raises(UnsupportedFormatError):
            bcolzx.convert(tmp_path / name)
    with pytest.raises(ValueError):  # UnsupportedFormatError is a ValueError
        bcolzx.convert(tmp_path / "a", tmp_path / "b")
    no_temporaries(tmp_path, {"a", "t"})


@pytest.mark.parametrize("mode", MODES)
def test_refuses_object_dtype(tmp_path, mode):
    src = copy_fixture(OBJECT, tmp_path)
    before = snapshot(src)
    with pytest.raises(UnsupportedFormatError, match="object"):
        run(src, mode)
    assert snapshot(src) == before
    no_temporaries(tmp_path, {OBJECT})


def test_refuses_ctable_with_object_column(tmp_path):
    src = copy_fixture("ct_attrs", tmp_path)
    shutil.copytree(LEGACY / OBJECT, src / "obj")
    (src / "__rootdirs__").write_text(json.dumps({"names": ["id", "price", "sym", "obj"]}))
    os.chmod(src / "obj", 0o755)
    before = snapshot(src)
    with pytest.raises(UnsupportedFormatError):
        bcolzx.convert(src)
    assert snapshot(src) == before
    no_temporaries(tmp_path, {"ct_attrs"})


def test_source_errors(tmp_path):
    with pytest.raises(FileNotFoundError):
        bcolzx.convert(tmp_path / "missing")
    (tmp_path / "file").write_text("x")
    with pytest.raises(FileNotFoundError):
        bcolzx.convert(tmp_path / "file")
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError):
        bcolzx.convert(tmp_path / "empty")
    no_temporaries(tmp_path, {"file", "empty"})


def test_destination_errors(tmp_path):
    src = copy_fixture("ca_uint16", tmp_path)
    before = snapshot(src)
    (tmp_path / "taken").mkdir()
    with pytest.raises(FileExistsError):
        bcolzx.convert(src, tmp_path / "taken")
    with pytest.raises(FileExistsError):
        bcolzx.convert(src, src)
    with pytest.raises(ValueError, match="inside"):
        bcolzx.convert(src, src / "sub")
    with pytest.raises(FileNotFoundError):
        bcolzx.convert(src, tmp_path / "no" / "such" / "dir")
    assert snapshot(src) == before
    assert os.listdir(tmp_path / "taken") == []
    no_temporaries(tmp_path, {"ca_uint16", "taken"})


@pytest.mark.parametrize("kwargs, exc", [
    ({"chunklen": 0}, ValueError),
    ({"chunklen": -5}, ValueError),
    ({"chunklen": 2.5}, ValueError),
    ({"chunklen": True}, ValueError),
    ({"cparams": 5}, TypeError),
    ({"cparams": {"bogus": 1}}, TypeError),
    ({"cparams": {"clevel": 12}}, ValueError),
    ({"cparams": {"cname": "snappy"}}, ValueError),
])
def test_bad_arguments(tmp_path, kwargs, exc):
    src = copy_fixture("ca_uint16", tmp_path)
    before = snapshot(src)
    with pytest.raises(exc):
        bcolzx.convert(src, **kwargs)
    assert snapshot(src) == before
    no_temporaries(tmp_path, {"ca_uint16"})


@pytest.mark.parametrize("name", ["ca_uint16", "ct_attrs"])
def test_refuses_codec_missing_from_c_blosc2(tmp_path, name):
    """Legacy snappy chunks cannot be decoded by C-Blosc2: refused, nothing written."""
    src = copy_fixture(name, tmp_path)
    carray_dir = src if name.startswith("ca_") else src / "sym"
    storage = json.loads((carray_dir / "meta" / "storage").read_text())
    storage["cparams"]["cname"] = "snappy"
    (carray_dir / "meta" / "storage").write_text(json.dumps(storage))
    before = snapshot(src)
    for cparams in (None, {"cname": "zstd"}):
        with pytest.raises(UnsupportedFormatError, match="snappy"):
            bcolzx.convert(src, cparams=cparams)
    assert snapshot(src) == before
    no_temporaries(tmp_path, {name})


# -- failures midway ---------------------------------------------------------------------


def fail_on_call(monkeypatch, target, attr, n, exc):
    real = getattr(target, attr)
    calls = {"n": 0}

    def wrapper(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == n:
            raise exc
        return real(*args, **kwargs)

    monkeypatch.setattr(target, attr, wrapper)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("stage", ["writer", "verify", "install"])
@pytest.mark.parametrize("name", ["ca_int32_leftover", "ct_mixed"])
def test_failure_leaves_original_intact(tmp_path, monkeypatch, name, stage, mode):
    src = copy_fixture(name, tmp_path)
    before = snapshot(src)
    if stage == "writer":  # the 3rd block written raises (blocks of one 512-row chunk)
        monkeypatch.setattr(conv, "BLOCK_BYTES", 1)
        fail_on_call(monkeypatch, bcolzx.carray, "append", 3, OSError(errno.ENOSPC, "full"))
        expected = OSError
    elif stage == "verify":
        fail_on_call(monkeypatch, conv, "_verify", 1, CorruptDataError("injected"))
        expected = CorruptDataError
    else:  # the atomic rename itself fails, with an errno that has no fallback
        fail_on_call(monkeypatch, conv, "_renameat2", 1, OSError(errno.EXDEV, "injected"))
        expected = OSError
    with pytest.raises(expected):
        run(src, mode, chunklen=512)
    assert snapshot(src) == before
    no_temporaries(tmp_path, {name})
    monkeypatch.undo()
    check_converted(run(src, mode), name)  # nothing left behind stops a new attempt


@pytest.mark.parametrize("mode", MODES)
def test_verify_detects_a_difference(tmp_path, monkeypatch, mode):
    src = copy_fixture("ca_int64_zlib", tmp_path)
    before = snapshot(src)
    real = bcolzx.carray.append

    def corrupting(self, array):
        array = np.array(array)
        array[len(array) // 2] += 1
        return real(self, array)

    monkeypatch.setattr(bcolzx.carray, "append", corrupting)
    with pytest.raises(CorruptDataError, match="row 15000 differs"):
        run(src, mode)
    assert snapshot(src) == before
    no_temporaries(tmp_path, {"ca_int64_zlib"})
    # Without verification the damage goes through unnoticed: verify is what caught it.
    out = run(src, mode, verify=False)
    assert sha(bcolzx.open(out, mode="r")[:]) != DATASETS["ca_int64_zlib"]["content"]["sha256"]


# -- the atomic swap ----------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_uses_renameat2(tmp_path, monkeypatch, mode):
    calls = []
    real = conv._renameat2

    def spy(old, new, flags):
        calls.append(flags)
        return real(old, new, flags)

    monkeypatch.setattr(conv, "_renameat2", spy)
    src = copy_fixture("ca_bool", tmp_path)
    try:
        check_converted(run(src, mode), "ca_bool")
    finally:
        want = conv.RENAME_EXCHANGE if mode == "inplace" else conv.RENAME_NOREPLACE
        assert calls == [want]


def test_renameat2_exchange_and_noreplace(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    (a / "in_a").touch()
    try:
        conv._renameat2(os.fspath(a), os.fspath(b), conv.RENAME_EXCHANGE)
    except OSError as exc:
        if exc.errno in conv._UNSUPPORTED:
            pytest.skip(f"renameat2 exchange unsupported here: {exc}")
        raise
    assert os.listdir(b) == ["in_a"] and os.listdir(a) == []
    with pytest.raises(FileExistsError):
        conv._renameat2(os.fspath(a), os.fspath(b), conv.RENAME_NOREPLACE)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", ["ca_2d_float64_Nx3", "ct_attrs"])
def test_fallback_without_renameat2(tmp_path, monkeypatch, name, mode):
    def unavailable(old, new, flags):
        raise OSError(errno.ENOSYS, "renameat2 is not available")

    monkeypatch.setattr(conv, "_renameat2", unavailable)
    src = copy_fixture(name, tmp_path)
    out = run(src, mode)
    check_converted(out, name)
    no_temporaries(tmp_path, {name} if mode == "inplace" else {name, name + "_new"})


def test_fallback_second_rename_fails_restores_original(tmp_path, monkeypatch):
    def unavailable(old, new, flags):
        raise OSError(errno.EINVAL, "unsupported flags")

    monkeypatch.setattr(conv, "_renameat2", unavailable)
    src = copy_fixture("ca_float64_attrs", tmp_path)
    before = snapshot(src)
    fail_on_call(monkeypatch, os, "rename", 2, OSError(errno.EIO, "injected"))
    with pytest.raises(OSError, match="injected"):
        bcolzx.convert(src)
    assert snapshot(src) == before
    no_temporaries(tmp_path, {"ca_float64_attrs"})


def test_old_copy_not_removable_warns(tmp_path, monkeypatch):
    src = copy_fixture("ct_attrs", tmp_path)
    fail_on_call(monkeypatch, conv.shutil, "rmtree", 1, PermissionError(errno.EACCES, "no"))
    with pytest.warns(RuntimeWarning, match="old copy"):
        bcolzx.convert(src)
    monkeypatch.undo()
    check_converted(src, "ct_attrs")
    left = [p for p in os.listdir(tmp_path) if p != "ct_attrs"]
    assert len(left) == 1 and left[0].startswith(".ct_attrs.bcolzx-convert-")
    assert legacy.is_legacy(tmp_path / left[0] / "id")  # the old copy, complete


# -- recompressing bcolzx-format datasets ----------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_recompresses_a_bcolzx_carray_with_new_cparams(tmp_path, mode):
    src = tmp_path / "a"
    c = bcolzx.carray(np.linspace(0, 1, 30_000), rootdir=str(src), chunklen=2000,
                      cparams=bcolzx.cparams(clevel=3, blocksize=8192))
    c.attrs["unit"] = "s"
    c.flush()
    seen = []
    out = run(src, mode, cparams={"cname": "zstd"}, progress=seen.append)
    new = bcolzx.open(str(out), mode="r")
    # the keys not given, blocksize and the chunk length included, are the source's
    assert (new.cparams.cname, new.cparams.clevel, new.cparams.blocksize) == ("zstd", 3, 8192)
    assert new.chunklen == 2000 and new.attrs["unit"] == "s"
    assert np.array_equal(new[:], np.linspace(0, 1, 30_000))
    assert sum(seen) == 2 * 30_000 * 8  # written, then compared
    no_temporaries(tmp_path, {"a"} if mode == "inplace" else {"a", "a_new"})


def test_recompresses_a_bcolzx_ctable_with_a_new_chunklen(tmp_path):
    src = tmp_path / "t"
    t = bcolzx.ctable([np.arange(9000), np.arange(9000) * 0.5], names=["i", "x"],
                      rootdir=str(src))
    want = t[:]
    seen = []
    bcolzx.convert(src, chunklen=700, verify=False, progress=seen.append)
    new = bcolzx.open(str(src), mode="r")
    assert [c.chunklen for c in new.cols.values()] == [700, 700]
    assert new[:].tobytes() == want.tobytes() and sum(seen) == want.nbytes
    no_temporaries(tmp_path, {"t"})
