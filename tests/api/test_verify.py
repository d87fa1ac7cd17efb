"""bcolzx.verify: every problem of a dataset on disk is found and reported, nothing is changed."""

import hashlib
import os
import shutil

import numpy as np
import pytest

import bcolzx
from bcolzx._format import zonemap
from bcolzx.verify import verify

from ..conftest import LEGACY


def _tree_digest(path):
    h = hashlib.sha256()
    for root, dirs, files in sorted(os.walk(path)):
        dirs.sort()
        for name in sorted(files):
            p = os.path.join(root, name)
            h.update(p.encode())
            with open(p, "rb") as f:
                h.update(f.read())
    return h.hexdigest()


@pytest.fixture
def carray_dir(tmp_path):
    path = str(tmp_path / "a")
    bcolzx.carray(np.linspace(0, 1, 50_000), rootdir=path, chunklen=1000).flush()
    return path


@pytest.fixture
def ctable_dir(tmp_path):
    path = str(tmp_path / "t")
    rng = np.random.default_rng(3)
    bcolzx.ctable([np.arange(7000), rng.random(7000), rng.integers(0, 9, 7000)],
                  names=["i", "f", "k"], rootdir=path, chunklen=512).flush()
    return path


def test_sound_carray_and_ctable(carray_dir, ctable_dir):
    before = _tree_digest(carray_dir), _tree_digest(ctable_dir)
    r = verify(carray_dir)
    assert r.ok and bool(r) and r.kind == "carray" and r.format == "bcolzx"
    assert r.rows == 50_000 and r.chunks == 50 and "OK" in str(r)
    r = verify(ctable_dir)
    assert r.ok and r.kind == "ctable" and r.rows == 7000 and r.chunks == 3 * 14
    assert (_tree_digest(carray_dir), _tree_digest(ctable_dir)) == before


def test_nd_and_constant_chunks(tmp_path):
    path = str(tmp_path / "nd")
    data = np.zeros((3000, 4))
    data[1000:] = np.arange(8000).reshape(2000, 4)
    bcolzx.carray(data, rootdir=path, chunklen=500).flush()
    assert verify(path).ok


@pytest.mark.parametrize("name", sorted(
    p.name for p in LEGACY.iterdir() if p.is_dir() and p.name != "ca_object_optional"))
def test_legacy_fixtures_are_sound(name):
    r = verify(LEGACY / name)
    assert r.ok, str(r)
    assert r.format == "legacy-v1"


def test_legacy_object_dtype_is_checked_without_unpickling(monkeypatch):
    import pickle

    def refuse(*args, **kwargs):
        raise AssertionError("verify unpickled a value")

    monkeypatch.setattr(pickle, "loads", refuse)
    r = verify(LEGACY / "ca_object_optional")
    assert r.ok and (r.rows, r.chunks, r.format) == (5, 5, "legacy-v1")


def _flip(path, offset):
    with open(path, "r+b") as f:
        f.seek(offset)
        b = f.read(1)
        f.seek(offset)
        f.write(bytes([b[0] ^ 0x5A]))


def test_flipped_bytes_in_chunk_data_name_file_and_chunk(carray_dir):
    data = os.path.join(carray_dir, "data", "__0.bin")
    size = os.path.getsize(data)
    _flip(data, size // 3)
    _flip(data, 2 * size // 3)
    r = verify(carray_dir)
    assert not r.ok and len(r.problems) == 2
    assert all(p.path == data and p.chunk is not None for p in r.problems)
    assert r.problems[0].chunk < r.problems[1].chunk
    assert "ChecksumError" in r.problems[0].message and str(r).count("chunk") >= 2


def test_every_problem_of_a_ctable_is_reported(ctable_dir):
    _flip(os.path.join(ctable_dir, "f", "data", "__0.bin"),
          os.path.getsize(os.path.join(ctable_dir, "f", "data", "__0.bin")) // 2)
    shutil.rmtree(os.path.join(ctable_dir, "k", "data"))
    r = verify(ctable_dir)
    paths = " ".join(str(p) for p in r.problems)
    assert len(r.problems) == 2 and os.path.join(ctable_dir, "f") in paths and "/k" in paths


def test_truncated_and_missing_files(carray_dir, tmp_path):
    data = os.path.join(carray_dir, "data", "__0.bin")
    with open(data, "r+b") as f:
        f.truncate(os.path.getsize(data) // 2)
    r = verify(carray_dir)
    assert not r.ok and any("Truncated" in p.message or "Corrupt" in p.message
                            for p in r.problems)
    os.unlink(data)
    assert not verify(carray_dir).ok


def test_damaged_metadata(carray_dir, ctable_dir):
    with open(os.path.join(carray_dir, "meta", "storage"), "w") as f:
        f.write("{not json")
    r = verify(carray_dir)
    assert not r.ok and r.problems[0].path.endswith("storage")
    with open(os.path.join(ctable_dir, "__rootdirs__"), "w") as f:
        f.write('{"names": 3}')
    assert not verify(ctable_dir).ok
    with open(os.path.join(ctable_dir, "__rootdirs__"), "w") as f:
        f.write('{"names": ["i", "f", "k"]}')
    with open(os.path.join(ctable_dir, "__attrs__"), "w") as f:
        f.write("[1, 2")
    r = verify(ctable_dir)
    assert len(r.problems) == 1 and r.problems[0].path.endswith("__attrs__")


def test_columns_of_different_lengths_are_noted(ctable_dir):
    """What a writer killed between two columns' commits leaves (docs/reliability.md):
    the table is as long as its shortest column, and verify notes the rows past it."""
    c = bcolzx.carray(rootdir=os.path.join(ctable_dir, "k"), mode="a")
    c.append([1, 2, 3])
    c.flush()
    del c
    r = verify(ctable_dir)
    assert r.ok and r.rows == 7000 and not r.problems and len(r.notes) == 1
    assert "different lengths" in str(r) and "{'k': 3}" in r.notes[0].message
    assert len(bcolzx.open(ctable_dir, mode="r")) == 7000


def test_zone_map_narrower_than_the_data_is_reported(carray_dir):
    stats = bcolzx.carray(rootdir=carray_dir, mode="r")._engine.chunk_stats()
    assert stats is not None
    stats["max"][7] = stats["min"][7]  # hides values: a query would miss rows
    zonemap.write(carray_dir, stats)
    r = verify(carray_dir)
    assert len(r.problems) == 1 and r.problems[0].chunk == 7
    assert "zone map" in r.problems[0].message


def test_damaged_zone_map_file(carray_dir):
    path = os.path.join(carray_dir, "meta", "zonemap")
    _flip(path, os.path.getsize(path) // 2)
    r = verify(carray_dir)
    assert not r.ok and any(p.path and p.path.endswith("zonemap") or "zone" in p.message
                            for p in r.problems)


def test_damaged_legacy_chunk(tmp_path):
    path = str(tmp_path / "leg")
    shutil.copytree(LEGACY / "ca_int32_leftover", path)
    for root, _, files in os.walk(path):
        for name in files:
            os.chmod(os.path.join(root, name), 0o644)
    with open(os.path.join(path, "data", "__4.blp"), "r+b") as f:
        f.truncate(40)
    r = verify(path)
    assert len(r.problems) == 1 and r.problems[0].chunk == 4


def test_not_a_dataset(tmp_path):
    with pytest.raises(FileNotFoundError):
        verify(tmp_path / "missing")
    r = verify(tmp_path)
    assert not r.ok and r.kind == "unknown"


def test_progress_counts_every_byte_checked(carray_dir, ctable_dir):
    for path in (carray_dir, ctable_dir):
        seen = []
        r = verify(path, progress=seen.append)
        assert r.ok and len(seen) == r.chunks
        assert sum(seen) == bcolzx.open(path, mode="r").nbytes
