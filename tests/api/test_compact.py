"""bcolzx.compact (and carray.compact, ctable.compact): dead space reclaimed, data kept."""

import importlib
import os
import shutil
import stat

import numpy as np
import pytest

import bcolzx
from bcolzx._storage.directory import DirectoryStore
from bcolzx.errors import ReadOnlyError, UnsupportedFormatError

from ..conftest import LEGACY

compact_module = importlib.import_module("bcolzx.compact")


def _dead(path):
    return DirectoryStore.open(str(path), readonly=True).dead_bytes()


def _size(path):
    return sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(path) for f in fs)


@pytest.fixture
def rewritten(tmp_path):
    """A carray whose chunks were rewritten and then truncated: dead space in 2 files."""
    path = tmp_path / "a"
    c = bcolzx.carray(np.arange(300_000, dtype="f8"), rootdir=str(path), chunklen=1000)
    for i in range(0, 300_000, 7_919):
        c[i] = -i
    c.flush()
    c.trim(5_000)  # drops whole chunks of the last superchunk
    c.flush()
    want = c[:]
    del c
    return path, want


def test_reclaims_exactly_the_dead_space(rewritten):
    path, want = rewritten
    dead, before = _dead(path), _size(path)
    assert dead > 0
    seen = []
    assert bcolzx.compact(path, progress=seen.append) == dead
    assert seen == [1, 1]  # two superchunk files (256 chunks each)
    assert _dead(path) == 0 and _size(path) == before - dead
    got = bcolzx.open(str(path), mode="r")
    assert np.array_equal(got[:], want) and bcolzx.verify(path).ok
    assert bcolzx.compact(path) == 0  # nothing left


def test_appends_and_rewrites_after_compaction(rewritten):
    path, want = rewritten
    bcolzx.compact(path)
    c = bcolzx.open(str(path))
    c.append(np.arange(10.0))
    c[3] = 42.0
    c.flush()
    want = np.concatenate([want, np.arange(10.0)])
    want[3] = 42.0
    assert np.array_equal(bcolzx.open(str(path), mode="r")[:], want)
    assert bcolzx.verify(path).ok


def test_after_a_truncation_a_crash_cut_short(tmp_path, monkeypatch):
    """Regression: compacting committed the end of the truncation that opening
    applies, without recording its index generation: the dataset no longer opened."""
    from bcolzx._format.superchunk import SuperchunkFile

    class Crash(Exception):
        pass

    path = str(tmp_path / "a")
    c = bcolzx.carray(np.arange(100_000.0), rootdir=path, chunklen=1000)

    def crash(self, *args):  # meta/sizes already says 50,000 rows; the index not yet
        raise Crash

    with monkeypatch.context() as patch:
        patch.setattr(SuperchunkFile, "truncate", crash)
        with pytest.raises(Crash):
            c.trim(50_000)
    c._engine.close(flush=False)  # the process died here
    assert bcolzx.compact(path) > 0
    assert bcolzx.verify(path).ok
    assert np.array_equal(bcolzx.open(path, mode="r")[:], np.arange(50_000.0))


def test_methods_and_ctables(tmp_path):
    t = bcolzx.ctable([np.arange(50_000), np.linspace(0, 1, 50_000)], names=["i", "x"],
                      rootdir=str(tmp_path / "t"), chunklen=1000)
    t["x"][10] = 5.0
    t["i"][20_000] = -1
    t.flush()
    dead = _dead(tmp_path / "t" / "x") + _dead(tmp_path / "t" / "i")
    assert dead > 0 and t.compact() == dead
    assert t.compact() == 0
    assert t["x"][10] == 5.0 and t["i"][20_000] == -1
    c = t.cols["x"]
    c[11] = 6.0
    assert c.compact() > 0  # flushes first
    assert bcolzx.open(str(tmp_path / "t"), mode="r")["x"][11] == 6.0
    assert bcolzx.carray(np.arange(10)).compact() == 0  # in memory: nothing to reclaim


def test_refusals(tmp_path):
    c = bcolzx.arange(10, rootdir=str(tmp_path / "a"))
    with pytest.raises(ReadOnlyError):
        bcolzx.open(str(tmp_path / "a"), mode="r").compact()
    del c
    with pytest.raises(FileNotFoundError):
        bcolzx.compact(tmp_path / "missing")
    with pytest.raises(FileNotFoundError):
        bcolzx.compact(tmp_path)
    legacy = tmp_path / "legacy"
    shutil.copytree(LEGACY / "ct_mixed", legacy)
    for root, _dirs, files in os.walk(legacy):
        for f in files:
            os.chmod(os.path.join(root, f), stat.S_IRUSR | stat.S_IWUSR)
    with pytest.raises(UnsupportedFormatError, match="legacy bcolz format"):
        bcolzx.compact(legacy)
    with pytest.raises(UnsupportedFormatError):
        bcolzx.open(str(legacy / "i1")).compact()


def test_docstring_examples(tmp_path, monkeypatch):
    import doctest
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    result = doctest.testmod(compact_module)
    assert result.attempted > 0 and result.failed == 0
