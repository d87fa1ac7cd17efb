"""``bcolzx verify``: every checksum and invariant; exit status 1 on damage."""

import json
import os

from .conftest import LEGACY, flip, tree


def test_sound_datasets_exit_0(cli, carray_dir, ctable_dir):
    r = cli("verify", carray_dir, ctable_dir, LEGACY / "ct_mixed")
    assert r.code == 0, r
    lines = r.out.splitlines()
    assert len(lines) == 3 and all(line.endswith(": OK") for line in lines)
    assert "carray (bcolzx), 200000 rows, 20 chunks checked" in lines[0]
    assert "ctable (legacy-v1)" in lines[2]


def test_damage_exits_1_naming_file_and_chunk(cli, carray_dir, ctable_dir):
    data = carray_dir / "data" / "__0.bin"
    flip(data, os.path.getsize(data) // 2)
    before = tree(carray_dir)
    r = cli("verify", ctable_dir, carray_dir)
    assert r.code == 1
    assert r.out.splitlines()[0].endswith(": OK")  # the sound one is still reported
    assert "1 problem(s)" in r.out and f"{data} chunk " in r.out and "ChecksumError" in r.out
    assert tree(carray_dir) == before  # nothing repaired or changed


def test_json_report(cli, carray_dir, ctable_dir):
    got = json.loads(cli("verify", carray_dir, "--json").out)
    assert got == {"path": str(carray_dir), "ok": True, "kind": "carray", "format": "bcolzx",
                   "rows": 200_000, "chunks": 20, "problems": []}
    os.remove(ctable_dir / "f" / "data" / "__0.bin")
    r = cli("verify", carray_dir, ctable_dir, "--json")
    assert r.code == 1
    got = json.loads(r.out)
    assert [d["ok"] for d in got] == [True, False]
    problem = got[1]["problems"][0]
    assert problem["path"].endswith("__0.bin") and "missing" in problem["message"]


def test_not_a_dataset_is_damage_and_a_missing_path_an_error(cli, tmp_path, carray_dir):
    (tmp_path / "plain").mkdir()
    r = cli("verify", tmp_path / "plain")
    assert r.code == 1 and "not a carray or ctable directory" in r.out
    r = cli("verify", carray_dir, tmp_path / "missing")
    assert r.code == 3 and r.out == "" and "missing" in r.err  # checked before any work


def test_subprocess_exit_status(run, carray_dir):
    assert run("verify", "a", "-q").code == 0
    data = carray_dir / "data" / "__0.bin"
    flip(data, os.path.getsize(data) - 10)
    r = run("verify", "a")
    assert r.code == 1 and "problem" in r.out and r.err == ""
