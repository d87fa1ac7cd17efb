"""``bcolzx compact``: reclaims what ``info`` shows as dead space; legacy refused."""

import json

import numpy as np

import bcolzx
from bcolzx.cli.common import human

from .conftest import copy_legacy, tree


def test_reclaims_the_dead_space_and_keeps_the_data(cli, carray_dir):
    want = bcolzx.open(str(carray_dir), mode="r")[:]
    dead = json.loads(cli("info", carray_dir, "--json").out)["dead_bytes"]
    assert dead > 0
    r = cli("compact", carray_dir)
    assert r.code == 0, r
    assert r.out.startswith(f"{carray_dir}: reclaimed {human(dead)} of dead space; on disk ")
    cbytes = bcolzx.open(str(carray_dir), mode="r").cbytes
    assert f"compressed chunks {human(cbytes, exact=False)} (ratio " in r.out  # as before
    after = json.loads(cli("info", carray_dir, "--json").out)
    assert after["dead_bytes"] == 0
    assert np.array_equal(bcolzx.open(str(carray_dir), mode="r")[:], want)
    assert cli("verify", carray_dir).code == 0
    r = cli("compact", carray_dir)
    assert r.code == 0 and "reclaimed 0 of dead space;" in r.out


def data_bytes(path):
    """Bytes of the superchunk files of a ctable's columns."""
    return sum(f.stat().st_size for f in path.glob("*/data/__*.bin"))


def test_every_column_of_a_ctable(cli, ctable_dir):
    t = bcolzx.open(str(ctable_dir))
    t["f"][3] = -1.0
    t["i"][7] = -1
    t.flush()
    want = t[:]
    before = json.loads(cli("info", ctable_dir, "--json").out)
    before_data = data_bytes(ctable_dir)
    assert before["columns"]["f"]["dead_bytes"] > 0 and before["columns"]["i"]["dead_bytes"] > 0
    assert cli("compact", ctable_dir, "-q").code == 0
    after = json.loads(cli("info", ctable_dir, "--json").out)
    assert after["dead_bytes"] == 0
    assert data_bytes(ctable_dir) == before_data - before["dead_bytes"]
    assert bcolzx.open(str(ctable_dir), mode="r")[:].tobytes() == want.tobytes()


def test_legacy_is_refused_and_untouched(cli, tmp_path):
    src = copy_legacy("ca_int32_trimmed_stale", tmp_path)
    before = tree(src)
    r = cli("compact", src)
    assert r.code == 3 and "legacy bcolz format" in r.err and "bcolzx convert" in r.err
    assert tree(src) == before
