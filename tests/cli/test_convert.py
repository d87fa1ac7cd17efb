"""``bcolzx convert``: legacy to the bcolzx format, and recompression with new cparams."""

import json

import numpy as np

import bcolzx

from .conftest import LEGACY, copy_legacy, tree


def test_legacy_carray_into_a_new_directory(cli, tmp_path):
    src = copy_legacy("ca_float64_attrs", tmp_path)
    before = tree(src)
    r = cli("convert", src, tmp_path / "new")
    assert r.code == 0, r
    assert "(legacy-v1 carray) ->" in r.out and "(bcolzx)" in r.out and "verified" in r.out
    assert tree(src) == before
    new, old = bcolzx.open(str(tmp_path / "new"), mode="r"), bcolzx.open(str(src), mode="r")
    assert np.array_equal(new[:], old[:]) and new.attrs.getall() == old.attrs.getall()
    assert json.loads(cli("info", tmp_path / "new", "--json").out)["format"] == "bcolzx"


def test_legacy_ctable_in_place_with_options(cli, tmp_path):
    src = copy_legacy("ct_mixed", tmp_path)
    want = bcolzx.open(str(src), mode="r")[:]
    r = cli("convert", src, "--cname", "zstd", "--clevel", "7", "--shuffle", "bitshuffle",
            "--chunklen", "1000", "--no-verify", "-q")
    assert r.code == 0, r
    assert "verified" not in r.out
    got = json.loads(cli("info", src, "--json").out)
    assert got["format"] == "bcolzx"
    for col in got["columns"].values():
        assert col["chunklen"] == 1000
        assert (col["cparams"]["cname"], col["cparams"]["clevel"],
                col["cparams"]["shuffle"]) == ("zstd", 7, 2)
    assert bcolzx.open(str(src), mode="r")[:].tobytes() == want.tobytes()


def test_recompress_a_bcolzx_dataset(cli, carray_dir):
    want = bcolzx.open(str(carray_dir), mode="r")[:]
    chunklen = bcolzx.open(str(carray_dir), mode="r").chunklen
    r = cli("convert", carray_dir, "--cname", "zstd", "--bytedelta", "off",
            "--blocksize", "16384")
    assert r.code == 0, r
    c = bcolzx.open(str(carray_dir), mode="r")
    assert (c.cparams.cname, c.cparams.bytedelta, c.cparams.blocksize) == \
        ("zstd", "off", 16384)
    assert c.chunklen == chunklen  # kept when not given
    assert np.array_equal(c[:], want) and c.attrs["unit"] == "m"


def test_refusals_leave_everything_as_it_was(cli, tmp_path, carray_dir):
    before = tree(carray_dir)
    r = cli("convert", carray_dir)
    assert r.code == 3 and "already in the bcolzx format" in r.err and "--cname" in r.err
    (tmp_path / "taken").mkdir()
    src = copy_legacy("ca_int16_clevel0", tmp_path)
    r = cli("convert", src, tmp_path / "taken")
    assert r.code == 3 and "exists" in r.err
    r = cli("convert", LEGACY / "ca_object_optional", tmp_path / "o")
    assert r.code == 3 and "object" in r.err
    assert tree(carray_dir) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "ca_int16_clevel0", "taken"]
