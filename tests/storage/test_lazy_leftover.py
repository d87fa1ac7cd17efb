"""Opening reads no chunk: the leftover (the partial last chunk) is decoded on first use."""

import os
import threading

import numpy as np
import pytest

import bcolzx
from bcolzx.errors import CorruptDataError


@pytest.fixture
def path(tmp_path):
    p = str(tmp_path / "c")
    bcolzx.carray(np.arange(10_000), chunklen=1024, rootdir=p, mode="w").flush()
    return p


def _damage_last_chunk(path):
    data = os.path.join(path, "data", "__0.bin")
    with open(data, "r+b") as f:
        f.seek(os.path.getsize(data) - 40)  # inside the last chunk written
        b = f.read(1)
        f.seek(-1, os.SEEK_CUR)
        f.write(bytes([b[0] ^ 0xFF]))


def test_open_decodes_no_chunk_and_damage_raises_where_it_is_read(path):
    _damage_last_chunk(path)
    c = bcolzx.open(path, mode="r")  # would raise if the leftover were decoded here
    assert len(c) == 10_000 and c.nleftover == 10_000 % 1024
    assert c[0] == 0 and c[9215] == 9215  # full chunks stay readable
    with pytest.raises(CorruptDataError):
        c[-1]
    with pytest.raises(CorruptDataError):  # and again: nothing half-loaded is kept
        c[9216:]


def test_a_change_decodes_the_leftover_first(path):
    c = bcolzx.open(path, mode="a")
    c.append(np.arange(10_000, 10_100))
    c.flush()
    np.testing.assert_array_equal(bcolzx.open(path, mode="r")[:], np.arange(10_100))
    c = bcolzx.open(path, mode="a")
    c.resize(9_000)  # shrinking into a full chunk
    c[8_999] = -1
    c.flush()
    expected = np.arange(9_000)
    expected[-1] = -1
    np.testing.assert_array_equal(bcolzx.open(path, mode="r")[:], expected)


def test_threads_racing_for_the_leftover_all_see_its_rows(path):
    for _ in range(20):
        c = bcolzx.open(path, mode="r")
        got, barrier = [], threading.Barrier(4)

        def read(c=c, got=got, barrier=barrier):
            barrier.wait()
            got.append(c[9216:].copy())

        threads = [threading.Thread(target=read) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for rows in got:
            np.testing.assert_array_equal(rows, np.arange(9216, 10_000))
