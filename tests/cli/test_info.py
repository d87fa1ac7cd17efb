"""``bcolzx info``: kind, shape, dtype, compression, files and attrs, from metadata only."""

import json
import os

import pytest

import bcolzx

from .conftest import LEGACY, copy_legacy, flip, tree

MANIFEST = json.loads((LEGACY / "MANIFEST.json").read_text())
DATASETS = {d["path"]: d for d in MANIFEST["datasets"]}


def info_json(cli, path):
    r = cli("info", path, "--json")
    assert r.code == 0, r
    return json.loads(r.out)


def test_carray_json(cli, carray_dir):
    got = info_json(cli, carray_dir)
    c = bcolzx.open(str(carray_dir), mode="r")
    assert got["kind"] == "carray" and got["format"] == "bcolzx"
    assert got["shape"] == [200_000] and got["dtype"] == "float64"
    assert got["chunklen"] == 10_000 and got["chunks"] == 20 and got["superchunks"] == 1
    assert got["cparams"] == {"cname": c.cparams.cname, "clevel": c.cparams.clevel,
                              "shuffle": c.cparams.shuffle, "quantize": 0,
                              "blocksize": c.cparams.blocksize,
                              "bytedelta": c.cparams.bytedelta}
    assert got["checksum"] == "crc32c"
    assert got["nbytes"] == c.nbytes == 1_600_000 and got["cbytes"] == c.cbytes
    assert got["ratio"] == pytest.approx(c.nbytes / c.cbytes, rel=1e-3)
    assert got["dead_bytes"] > 0  # the rewritten chunk's old copy
    files = [os.path.join(r, f) for r, _, fs in os.walk(carray_dir) for f in fs]
    assert got["files"] == len(files)
    assert got["disk_bytes"] == sum(os.path.getsize(f) for f in files)
    assert got["attrs"] == {"unit": "m"}


def test_carray_text(cli, carray_dir):
    r = cli("info", carray_dir)
    assert r.code == 0 and r.err == ""
    lines = r.out.splitlines()
    assert lines[0] == f"{carray_dir}: carray, bcolzx format"
    text = "\n".join(lines)
    for want in ("shape       (200000,)", "dtype       float64", "10,000 rows a chunk",
                 "20 chunks in 1 superchunk", "checksum    crc32c", "(1,600,000)",
                 "bcolzx compact reclaims it", 'attrs       {"unit": "m"}'):
        assert want in text, want


def test_ctable_json_and_text(cli, ctable_dir):
    got = info_json(cli, ctable_dir)
    t = bcolzx.open(str(ctable_dir), mode="r")
    assert got["kind"] == "ctable" and got["format"] == "bcolzx"
    assert got["names"] == ["i", "f", "m"] and got["shape"] == [5000]
    assert got["dtype"] == str(t.dtype)
    assert got["nbytes"] == t.nbytes and got["cbytes"] == t.cbytes
    assert got["columns"]["m"]["shape"] == [5000, 2] and got["columns"]["m"]["dtype"] == "int16"
    assert {c["kind"] for c in got["columns"].values()} == {"carray"}
    r = cli("info", ctable_dir)
    assert "ctable, bcolzx format, 3 column(s)" in r.out
    assert "int16(2,)" in r.out and "columns:" in r.out


@pytest.mark.parametrize("name", ["ca_float64_attrs", "ca_2d_float64_Nx3", "ct_mixed"])
def test_legacy_datasets(cli, name):
    got = info_json(cli, LEGACY / name)
    meta = DATASETS[name]
    assert got["format"] == "legacy-v1" and got["kind"] == meta["kind"]
    assert got["shape"][0] == meta["len"] and got["dead_bytes"] is None
    assert got["attrs"] == meta["attrs"]
    if meta["kind"] == "carray":
        assert got["shape"] == meta["shape"] and got["chunklen"] == meta["chunklen"]
        assert got["cparams"] == meta["cparams"]  # the legacy four only
        assert got["superchunks"] is None and got["checksum"] is None
        # Not what legacy bcolz records (its chunks plus one uncompressed chunk of
        # leftover buffer): the compressed chunks, as the carray counts them.
        assert got["cbytes"] == bcolzx.open(str(LEGACY / name), mode="r").cbytes
        assert got["cbytes"] == sum(f.stat().st_size - 16  # each .blp file's header
                                    for f in (LEGACY / name / "data").glob("__*.blp"))
        assert got["cbytes"] < meta["meta_sizes"]["cbytes"]


def test_reads_no_chunk(cli, carray_dir, monkeypatch):
    """Metadata only: it works with every chunk damaged and no way to decode one."""
    import bcolzx._storage.engine as engine

    before = info_json(cli, carray_dir)
    data = carray_dir / "data" / "__0.bin"
    size = os.path.getsize(data)
    for offset in range(size // 4, size, size // 8):
        flip(data, offset)

    def no_engine(*args, **kwargs):
        raise AssertionError("info opened the data")

    monkeypatch.setattr(engine.ChunkedArray, "__init__", no_engine)
    snapshot = tree(carray_dir)
    assert info_json(cli, carray_dir) == before
    assert tree(carray_dir) == snapshot  # nothing written either


def test_unreadable_index_is_a_warning(cli, carray_dir):
    from bcolzx._ext.index import index_offset

    data = carray_dir / "data" / "__0.bin"
    for copy in (0, 1):  # both index copies' generations damaged: no copy can be salvaged
        flip(data, index_offset(256, copy))
    got = info_json(cli, carray_dir)
    assert got["dead_bytes"] is None and "CorruptDataError" in got["warnings"][0]
    r = cli("info", carray_dir)
    assert r.code == 0 and "warning: CorruptDataError" in r.out


def test_mixed_ctable_after_convert_of_one_column(cli, tmp_path):
    src = copy_legacy("ct_attrs", tmp_path)
    first = bcolzx.open(str(src), mode="r").names[0]
    bcolzx.convert(src / first)  # now one bcolzx column among legacy ones
    got = info_json(cli, src)
    assert got["format"] == "mixed"
    assert got["columns"][first]["format"] == "bcolzx"
    assert got["dead_bytes"] == 0
