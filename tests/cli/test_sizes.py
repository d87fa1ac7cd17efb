"""The sizes users read (issue 22, item 5): nbytes, cbytes and their ratio are one set of
figures in the library (``cbytes``, ``repr``) and in ``info``, ``ls``, ``import``,
``convert`` and ``compact``, whatever was flushed; the bytes on disk are labelled apart."""

import json
import os
import re

import numpy as np
import pytest

import bcolzx
from bcolzx.cli.common import ON_DISK_TEXT, human, ratio_text
from bcolzx.cli.describe import describe

from .conftest import LEGACY, copy_legacy


def _ratio_in_repr(obj) -> str:
    return re.search(r"ratio: ([\d.]+)", repr(obj)).group(1)


@pytest.mark.parametrize("where", ["memory", "disk"])
def test_cbytes_is_the_same_before_and_after_a_flush(tmp_path, where):
    rootdir = str(tmp_path / "c") if where == "disk" else None
    c = bcolzx.carray(np.arange(100_003), chunklen=30_000, rootdir=rootdir)
    c.flush()  # the leftover (10,003 rows) is now a stored short chunk
    for change in (lambda: c.append(np.arange(10)),          # the leftover grows
                   lambda: c.__setitem__(len(c) - 3, -1),    # ... is rewritten
                   lambda: c.append(np.zeros(7, "i8")),
                   lambda: c.append(np.arange(25_000))):     # ... becomes full
        change()
        before, shown = c.cbytes, _ratio_in_repr(c)
        c.flush()
        assert c.cbytes == before
        assert _ratio_in_repr(c) == shown == f"{c.nbytes / c.cbytes:.2f}"


def test_cbytes_of_objects_is_the_same_before_and_after_a_flush(tmp_path):
    c = bcolzx.carray(["a", "bb", "ccc"] * 100, dtype=object, allow_pickle=True,
                      chunklen=128, rootdir=str(tmp_path / "o"))
    c.flush()
    c.append(["dddd"] * 3)
    before = c.cbytes
    c.flush()
    assert c.cbytes == before


def test_a_ctable_s_cbytes_is_its_columns_before_and_after_a_flush(tmp_path):
    t = bcolzx.ctable([np.arange(100_000), np.arange(100_000.0)], names=["a", "b"],
                      chunklen=30_000, rootdir=str(tmp_path / "t"))
    t.append([np.arange(10), np.arange(10.0)])
    before = t.cbytes
    assert before == sum(t.cols[n].cbytes for n in t.names)
    t.flush()
    assert t.cbytes == before == describe(str(tmp_path / "t"))["cbytes"]


@pytest.mark.parametrize("name", ["ca_int32_leftover", "ca_float64_attrs", "ct_mixed"])
def test_legacy_cbytes_counts_the_chunk_files(cli, name):
    """Not legacy bcolz's recorded cbytes (its chunks plus a whole uncompressed chunk of
    leftover buffer, which made ct_mixed look 1.50x compressed): what the files hold."""
    path = LEGACY / name
    obj = bcolzx.open(str(path), mode="r")
    columns = [path / n for n in obj.names] if hasattr(obj, "names") else [path]
    files = sum(f.stat().st_size - 16 for col in columns for f in (col / "data").glob("*.blp"))
    assert obj.cbytes == files
    info = json.loads(cli("info", path, "--json").out)
    assert (info["nbytes"], info["cbytes"]) == (obj.nbytes, obj.cbytes)
    assert _ratio_in_repr(obj) == ratio_text(obj.nbytes, obj.cbytes)
    row = cli("ls", path).out.splitlines()[1].split()
    assert row[-1] == ratio_text(obj.nbytes, obj.cbytes)


def test_legacy_cbytes_is_the_same_before_and_after_a_flush_and_legacy_reads_it(tmp_path):
    path = copy_legacy("ca_int32_leftover", tmp_path)
    c = bcolzx.open(str(path), mode="a")
    c.append(np.arange(5, dtype=c.dtype))
    before = c.cbytes
    c.flush()
    assert c.cbytes == before
    files = sum(f.stat().st_size - 16 for f in (path / "data").glob("*.blp"))
    assert c.cbytes == files
    # meta/sizes keeps legacy bcolz's own count (full chunks plus its buffer), which
    # legacy bcolz reads back.
    sizes = json.loads((path / "meta" / "sizes").read_text())
    full = c.nchunks
    chunk_files = sum((path / "data" / f"__{i}.blp").stat().st_size - 16 for i in range(full))
    assert sizes["cbytes"] == chunk_files + c.chunklen * c.dtype.itemsize
    c.close()
    legacy = pytest.importorskip("bcolz", reason="legacy bcolz (bcolz-zipline) reads it back")
    assert legacy.open(str(path), mode="r")[-5:].tolist() == list(range(5))


def test_info_and_ls_print_the_library_s_figures(cli, carray_dir, ctable_dir):
    for path in (carray_dir, ctable_dir):
        obj = bcolzx.open(str(path), mode="r")
        text = cli("info", path).out
        assert f"cbytes      {human(obj.cbytes)} compressed chunks" in text
        assert f"ratio       {ratio_text(obj.nbytes, obj.cbytes)} (nbytes / cbytes)" in text
        assert re.search(r"on disk     .* in \d+ files \(cbytes plus metadata", text)
        assert _ratio_in_repr(obj) == ratio_text(obj.nbytes, obj.cbytes)
    rows = {r.split()[0]: r.split() for r in cli("ls", carray_dir.parent).out.splitlines()[1:]}
    for name in ("a", "t"):
        obj = bcolzx.open(str(carray_dir.parent / name), mode="r")
        assert rows[name][-1] == ratio_text(obj.nbytes, obj.cbytes)


def test_convert_labels_the_compressed_chunks_and_the_files_apart(cli, tmp_path):
    src = copy_legacy("ct_mixed", tmp_path)
    before = describe(str(src))
    r = cli("convert", src, tmp_path / "new", "-q")
    assert r.code == 0, r
    after = describe(str(tmp_path / "new"))
    lines = r.out.splitlines()
    for line, info in ((lines[1], before), (lines[2], after)):
        assert f"{human(info['cbytes'], exact=False)} compressed (ratio " \
               f"{ratio_text(info['nbytes'], info['cbytes'])})" in line
        assert f"{human(info['disk_bytes'], exact=False)} on disk in {info['files']} files" \
            in line
    assert lines[1].lstrip().startswith("before:") and lines[2].lstrip().startswith("after:")
    assert lines[3].strip() == f"({ON_DISK_TEXT})"
    # the ratio the old output printed for the legacy table, 1.50, was legacy's count
    assert ratio_text(before["nbytes"], before["cbytes"]) != "1.50"


def test_import_prints_the_same_sizes_as_info(cli, tmp_path, carray_dir):
    assert cli("export", carray_dir, "a.npy").code == 0
    r = cli("import", "a.npy", "back", "-q")
    assert r.code == 0, r
    info = describe(str(tmp_path / "back"))
    assert r.out.rstrip().endswith(
        f"{human(info['nbytes'], exact=False)} of data, {human(info['cbytes'], exact=False)} "
        f"compressed (ratio {ratio_text(info['nbytes'], info['cbytes'])}), "
        f"{human(info['disk_bytes'], exact=False)} on disk in {info['files']} files")
    assert info["cbytes"] == bcolzx.open(str(tmp_path / "back"), mode="r").cbytes
    assert os.path.getsize(tmp_path / "a.npy") > 0
