"""``bcolzx ls``: every carray and ctable under a directory, from metadata only."""

import json
import os

import numpy as np

import bcolzx

from .conftest import copy_legacy


def test_lists_every_dataset_once_in_order(cli, tmp_path, carray_dir, ctable_dir):
    copy_legacy("ca_int32_leftover", tmp_path / "old")
    bcolzx.carray(np.empty(0, "i4"), rootdir=str(tmp_path / "deep" / "er" / "empty"))
    (tmp_path / "not-a-dataset").mkdir()
    r = cli("ls", tmp_path)
    assert r.code == 0 and r.err == ""
    lines = r.out.splitlines()
    assert lines[0].split() == ["path", "kind", "format", "rows", "dtype", "nbytes", "cbytes",
                                "ratio"]
    paths = [line.split()[0] for line in lines[1:]]
    # sorted, empty datasets listed too, columns of the ctable not listed
    assert paths == ["a", os.path.join("deep", "er", "empty"),
                     os.path.join("old", "ca_int32_leftover"), "t"]
    row = dict(zip(["path", "kind", "format", "rows", "dtype"], lines[1].split()))
    assert row == {"path": "a", "kind": "carray", "format": "bcolzx", "rows": "200,000",
                   "dtype": "float64"}
    assert "legacy-v1" in lines[3] and "3 column(s)" in lines[4]


def test_kind_filter_and_json(cli, tmp_path, carray_dir, ctable_dir):
    got = json.loads(cli("ls", tmp_path, "--kind", "ctable", "--json").out)
    assert [d["path"] for d in got] == [str(ctable_dir)]
    assert got[0]["names"] == ["i", "f", "m"] and got[0]["shape"] == [5000]
    got = json.loads(cli("ls", "--json").out)  # default: the current directory
    assert [(d["kind"], os.path.basename(d["path"])) for d in got] == [("carray", "a"),
                                                                     ("ctable", "t")]


def test_unreadable_dataset_is_listed_with_its_error(cli, tmp_path, carray_dir):
    (carray_dir / "meta" / "sizes").write_text("[]")
    r = cli("ls", tmp_path)
    assert r.code == 0
    assert r.out.splitlines()[1].split()[-2:] == ["unreadable", "[1]"]
    assert r.out.splitlines()[2].startswith("[1] a: CorruptDataError")
    got = json.loads(cli("ls", tmp_path, "--json").out)
    assert got[0]["kind"] == "carray" and "CorruptDataError" in got[0]["error"]


def test_a_dataset_itself_and_nothing_found(cli, tmp_path, carray_dir):
    r = cli("ls", carray_dir)
    assert r.out.splitlines()[1].split()[:2] == [".", "carray"]
    (tmp_path / "empty").mkdir()
    r = cli("ls", tmp_path / "empty")
    assert r.code == 0 and r.out == "" and "no carray or ctable" in r.err


def test_missing_directory(cli, tmp_path, carray_dir):
    assert cli("ls", tmp_path / "missing").code == 3
    r = cli("ls", carray_dir / "__attrs__")
    assert r.code == 3 and "not a directory" in r.err
