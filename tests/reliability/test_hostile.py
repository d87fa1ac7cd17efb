"""Hostile inputs: forged metadata, the file system as an attacker, readers across a truncation.

Issue 20 (docs/reliability.md, "Hostile inputs"): no input crashes, hangs,
writes outside the dataset or returns a wrong value.  Each test plants one
input and checks the result: a clear error from bcolzx's hierarchy, or the
right values, quickly, and nothing written through a planted link.
"""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import bcolzx
from bcolzx._format.jsonfile import read_json_sealed, write_json
from bcolzx._format.layout import LOCK_FILE
from bcolzx._storage import pins
from bcolzx.errors import (
    BcolzxError,
    ConcurrentModificationError,
    CorruptDataError,
    UnsafeFileError,
)

from . import concurrency
from .datasets import copy_legacy
from .test_concurrency import _writer_and_reader

posix_only = pytest.mark.skipif(os.name != "posix", reason="symbolic links, FIFOs and flock "
                                "are POSIX features")
#: The bcolzx under test (installed, or built in place): children run there, so that
#: the directory Python puts first on their path (their cwd) is not a source tree.
BCOLZX_PARENT = os.path.dirname(os.path.dirname(bcolzx.__file__))
ENV = {**os.environ, "PYTHONPATH": BCOLZX_PARENT}


def _resealed(path, **changes):
    """Change members of a sealed JSON file and seal it again (a forger's edit)."""
    obj, seal = read_json_sealed(path)
    obj.update(changes)
    write_json(path, obj, seal=seal.sealed, uid=seal.uid)


def _unsealed(path, **changes):
    """Take the seal off a JSON file, then change members (another forger's edit)."""
    with open(path) as f:
        obj = json.load(f)
    for key in ("__crc32c__", "__uid__"):
        obj.pop(key, None)
    obj.update(changes)
    with open(path, "w") as f:
        json.dump(obj, f)


@pytest.fixture
def c8(tmp_path):
    path = str(tmp_path / "c")
    bcolzx.carray(np.arange(100, dtype="i8"), rootdir=path, chunklen=16).close()
    return path


def _in_child(code: str, timeout: float = 60) -> subprocess.CompletedProcess:
    """Run `code` in a Python child (a crash there is a return code, not a dead test run)."""
    return subprocess.run([sys.executable, "-c", code], env=ENV, cwd=BCOLZX_PARENT,
                          capture_output=True, text=True, timeout=timeout)


def _bounded(fn, seconds: float):
    """fn() in a thread; fail if it does not return within `seconds` (a hang)."""
    out: dict = {}

    def run():
        try:
            out["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            out["error"] = exc

    t = threading.Thread(target=run, daemon=True)
    start = time.monotonic()
    t.start()
    t.join(seconds)
    assert not t.is_alive(), f"still running after {seconds} s: a hang"
    out["seconds"] = time.monotonic() - start
    return out


# -- forged or damaged metadata ------------------------------------------------------------


FORGED_DTYPES = {
    "object, sealed": ("i8", lambda p: _resealed(p, dtype="|O")),
    "object, seal removed": ("i8", lambda p: _unsealed(p, dtype="|O")),
    "structured with an object field": (
        "i8,i8", lambda p: _resealed(p, dtype=[["f0", "<i8"], ["f1", "|O"]])),
}


@pytest.mark.parametrize("case", list(FORGED_DTYPES))
def test_a_forged_object_dtype_is_refused_never_read_as_pointers(case, tmp_path):
    dtype, forge = FORGED_DTYPES[case]
    path = str(tmp_path / "c")
    bcolzx.carray(np.zeros(100, dtype=dtype), rootdir=path).close()
    forge(os.path.join(path, "meta", "storage"))
    code = f"""
import bcolzx
from bcolzx.errors import BcolzxError
for mode in ("r", "a"):
    try:
        c = bcolzx.open({path!r}, mode=mode)
        c[:]
    except BcolzxError as exc:
        print(type(exc).__name__)
    else:
        print("read")
print(bcolzx.verify({path!r}).ok)
"""
    done = _in_child(code)
    assert done.returncode == 0, done.stderr  # a segfault is -11
    lines = done.stdout.split()
    assert lines[:2] in (["CorruptDataError"] * 2, ["UnsupportedFormatError"] * 2), lines
    assert lines[2] == "False"


def test_a_legacy_dataset_forged_to_object_dtype_raises_never_crashes(tmp_path):
    path = str(tmp_path / "c")
    copy_legacy("ca_int32_leftover", path)
    storage = os.path.join(path, "meta", "storage")
    _unsealed(storage, dtype="|O")
    code = f"""
import bcolzx
from bcolzx.errors import BcolzxError
for pickle in (False, True):
    try:
        bcolzx.open({path!r}, mode="r", allow_pickle=pickle)[:]
    except BcolzxError as exc:
        print(type(exc).__name__)
"""
    done = _in_child(code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["PickleNotAllowedError", "CorruptDataError"]


def test_a_seal_taken_off_meta_storage_is_damage_not_a_legacy_dataset(c8):
    """int64 data under a dtype changed to float64 with the seal removed would read as
    denormal floats: the other files' seals say the dataset is sealed."""
    _unsealed(os.path.join(c8, "meta", "storage"), dtype="float64")
    for mode in ("r", "a"):
        with pytest.raises(CorruptDataError, match="seal was removed"):
            bcolzx.open(c8, mode=mode)
    assert not bcolzx.verify(c8).ok


def test_an_unsealed_dataset_of_an_older_bcolzx_still_reads(c8):
    """Datasets written before seals (every file unsealed) read as before (§2c)."""
    for name in ("storage", "sizes", "zonemap"):
        _unsealed(os.path.join(c8, "meta", name))
    _unsealed(os.path.join(c8, "__attrs__"))
    np.testing.assert_array_equal(bcolzx.open(c8, mode="r")[:], np.arange(100))


SIZES_FORGERIES = {
    "2**62 rows": dict(shape=[2**62], nbytes=2**65),
    "2**62 rows, nbytes unchanged": dict(shape=[2**62]),
    "a 2**40-wide row": dict(shape=[100, 2**40], nbytes=100 * 2**43),
    "negative nbytes": dict(nbytes=-800),
    "negative cbytes": dict(cbytes=-1),
}


def test_sizes_naming_files_that_do_not_exist_are_checked_file_by_file(c8):
    """A consistent meta/sizes naming 1000 superchunk files that are not there: reads
    raise, verify reports each file once and returns (it does not try their chunks)."""
    path = os.path.join(c8, "meta", "sizes")
    rows = 1000 * 16 * 256
    _resealed(path, shape=[rows], nbytes=rows * 8,
              generations=read_json_sealed(path)[0]["generations"] * 1000)
    c = bcolzx.open(c8, mode="r")
    with pytest.raises(CorruptDataError):
        c[rows - 5:]
    out = _bounded(lambda: bcolzx.verify(c8), 60)
    assert not out["value"].ok and len(out["value"].problems) == 1000


@pytest.mark.parametrize("case", list(SIZES_FORGERIES))
def test_forged_sizes_are_refused_before_anything_is_sized_by_them(case, c8):
    _resealed(os.path.join(c8, "meta", "sizes"), **SIZES_FORGERIES[case])
    with pytest.raises(CorruptDataError, match="sizes"):
        bcolzx.open(c8, mode="r")
    out = _bounded(lambda: bcolzx.verify(c8), 20)
    assert not out["value"].ok and out["seconds"] < 20
    cli = subprocess.run([sys.executable, "-m", "bcolzx", "verify", c8], env=ENV,
                         cwd=BCOLZX_PARENT, capture_output=True, text=True, timeout=60)
    assert cli.returncode != 0 and "sizes" in cli.stdout + cli.stderr


def test_a_forged_length_of_a_legacy_dataset_is_one_problem_not_a_loop(tmp_path):
    """Legacy (v1) sizes are not sealed; a length of 2**62 rows names 4.6e15 chunk files."""
    path = str(tmp_path / "c")
    copy_legacy("ca_int32_leftover", path)
    sizes = os.path.join(path, "meta", "sizes")
    with open(sizes) as f:
        obj = json.load(f)
    obj.update(shape=[2**62], nbytes=2**64)
    with open(sizes, "w") as f:
        json.dump(obj, f)
    c = bcolzx.open(path, mode="r")
    with pytest.raises(CorruptDataError):
        c[2**62 - 5:]
    out = _bounded(lambda: bcolzx.verify(path), 20)
    report = out["value"]
    assert not report.ok and any("chunks 13 to" in p.message for p in report.problems)


def test_a_forged_length_of_a_ctable_column_is_refused(tmp_path):
    path = str(tmp_path / "t")
    bcolzx.ctable([np.arange(100), np.arange(100.0)], names=["a", "b"], rootdir=path).close()
    _resealed(os.path.join(path, "a", "meta", "sizes"), shape=[2**62], nbytes=2**65)
    with pytest.raises(CorruptDataError):
        t = bcolzx.open(path, mode="r")
        t["a"][:5]
    out = _bounded(lambda: bcolzx.verify(path), 20)
    assert not out["value"].ok


def test_attributes_whose_keys_merge_in_json_are_refused(c8):
    c = bcolzx.open(c8)
    with pytest.raises(ValueError, match="both become '1'"):
        c.attrs["m"] = {1: "a", "1": "b"}
    with pytest.raises(ValueError, match="both become 'true'"):
        c.attrs["m"] = [{"x": {True: 1, "true": 2}}]
    assert "m" not in c.attrs
    c.attrs["m"] = {1: "a"}  # no collision: stored as JSON has it, as legacy bcolz did
    assert bcolzx.open(c8, mode="r").attrs["m"] == {"1": "a"}


# -- the file system as an attacker -----------------------------------------------------------


@posix_only
def test_a_link_planted_at_the_lock_file_is_never_written_through(c8, tmp_path):
    victim = tmp_path / "victim"
    victim.write_bytes(b"precious")
    os.symlink(victim, os.path.join(c8, LOCK_FILE))
    c = bcolzx.open(c8, mode="a")
    with pytest.raises(UnsafeFileError, match="symbolic link"):
        c.append([1, 2, 3])
    assert victim.read_bytes() == b"precious"
    assert isinstance(UnsafeFileError("x", "y"), (BcolzxError, PermissionError))
    os.unlink(os.path.join(c8, LOCK_FILE))  # the message says: remove it, try again
    c = bcolzx.open(c8, mode="a")
    c.append([1, 2, 3])
    c.close()
    assert len(bcolzx.open(c8, mode="r")) == 103


@posix_only
@pytest.mark.parametrize("suffix", [".tmp", ".compact"])
def test_a_link_planted_at_a_temporary_file_is_never_written_through(tmp_path, suffix):
    path = str(tmp_path / "c")
    concurrency.create(path, "carray", chunklen=64, nslots=2)
    c = bcolzx.open(path, mode="a")
    c.append(np.arange(200))
    c.flush()
    victim = tmp_path / "victim"
    victim.write_bytes(b"precious")
    number = 1 if suffix == ".compact" else 2  # an existing file / the next one
    link = os.path.join(path, "data", f"__{number}.bin{suffix}")
    os.symlink(victim, link)
    if suffix == ".compact":
        c[130:140] = -1  # dead space in file 1 to compact
        c.flush()
        c.compact()
    else:
        c.append(np.arange(200, 400))  # creates file 2
        c.flush()
    assert victim.read_bytes() == b"precious"
    assert not os.path.lexists(link)  # the link was removed, not followed
    expected = np.arange(400 if suffix == ".tmp" else 200)
    if suffix == ".compact":
        expected[130:140] = -1
    np.testing.assert_array_equal(bcolzx.open(path, mode="r")[:], expected)
    assert all(not os.path.islink(os.path.join(path, "data", n))
               for n in os.listdir(os.path.join(path, "data")))


@posix_only
@pytest.mark.parametrize("name", ["meta", "data"])
def test_a_dataset_subdirectory_replaced_by_a_link_gets_no_write(c8, tmp_path, name):
    elsewhere = tmp_path / "elsewhere"
    os.rename(os.path.join(c8, name), elsewhere)
    os.symlink(elsewhere, os.path.join(c8, name))
    before = _contents(elsewhere)
    c = bcolzx.open(c8, mode="a")
    with pytest.raises(UnsafeFileError):
        c.append(np.arange(1000))
        c.flush()
    assert _contents(elsewhere) == before


def _contents(directory) -> dict:
    out = {}
    for name in sorted(os.listdir(directory)):
        with open(os.path.join(directory, name), "rb") as f:
            out[name] = f.read()
    return out


@posix_only
def test_a_link_planted_at_the_journal_is_never_written_through(tmp_path):
    path = str(tmp_path / "t")
    t = bcolzx.ctable([np.arange(10)], names=["a"], rootdir=path)  # auto_flush: a journal
    t.close()
    victim = tmp_path / "victim"
    victim.write_bytes(b"precious")
    os.symlink(victim, os.path.join(path, "a", "meta", "journal"))
    t = bcolzx.open(path, mode="a")
    with pytest.raises(UnsafeFileError):
        t.append([[11]])
    assert victim.read_bytes() == b"precious"


@posix_only
@pytest.mark.parametrize("kind", ["carray", "ctable"])
def test_a_fifo_at_the_lock_file_never_makes_an_open_wait(tmp_path, kind):
    path = str(tmp_path / kind)
    if kind == "carray":
        bcolzx.carray(np.arange(10), rootdir=path).close()
    else:
        bcolzx.ctable([np.arange(10), np.arange(10.0)], names=["a", "b"], rootdir=path).close()
    os.mkfifo(os.path.join(path, LOCK_FILE))
    out = _bounded(lambda: len(bcolzx.open(path, mode="r")), 10)
    assert out.get("value") == 10, out
    out = _bounded(lambda: bcolzx.open(path, mode="a").append(
        [1] if kind == "carray" else [[1], [1.0]]), 10)
    assert isinstance(out.get("error"), UnsafeFileError), out
    assert "FIFO" in str(out["error"])


@posix_only
@pytest.mark.parametrize("name", ["data/__0.bin", "meta/journal", "__attrs__"])
def test_a_fifo_in_place_of_a_data_or_metadata_file_is_refused_at_once(c8, name):
    target = os.path.join(c8, *name.split("/"))
    if os.path.exists(target):
        os.unlink(target)
    os.mkfifo(target)

    def read():
        c = bcolzx.open(c8, mode="r")
        c.attrs.getall()
        return c[:]

    out = _bounded(read, 10)
    assert isinstance(out.get("error"), UnsafeFileError), out
    assert "FIFO" in str(out["error"])
    assert not _bounded(lambda: bcolzx.verify(c8), 10)["value"].ok


def _torn_table(path: str, pid: int) -> None:
    """A table whose writer was killed between its columns' commits (column b has
    one row more), its lock file naming `pid` on this host."""
    bcolzx.ctable([np.arange(10), np.arange(10.0)], names=["a", "b"], rootdir=path).close()
    col = bcolzx.open(os.path.join(path, "b"), mode="a")
    col.append([10.0])
    col.close()
    with open(os.path.join(path, LOCK_FILE), "w") as f:
        json.dump({"pid": pid, "host": socket.gethostname()}, f)


@posix_only
@pytest.mark.parametrize("mode", ["r", "a"])
def test_a_dead_writers_record_naming_a_live_pid_makes_no_reader_wait(tmp_path, mode):
    """The pid in __lock__ was reused (here: this very process, and pid 1): the flock,
    which nobody holds, says no writer is at work."""
    for pid in (os.getpid(), 1):
        path = str(tmp_path / f"t{pid}")
        _torn_table(path, pid)
        out = _bounded(lambda path=path: bcolzx.open(path, mode=mode), 10)
        assert "error" not in out, out["error"]
        assert out["seconds"] < 5
        t = out["value"]
        assert len(t) == 10 and len(t["b"]) == 10  # the rows every column has
        if mode == "a":
            t.append([[10], [10.0]])
            t.close()
            np.testing.assert_array_equal(bcolzx.open(path, mode="r")["b"][:], np.arange(11.0))


@posix_only
def test_a_reader_still_waits_for_a_writer_that_holds_the_lock(tmp_path):
    """The other side of the rule: a live writer between two columns' commits is waited for."""
    path = str(tmp_path / "t")
    _torn_table(path, 0)
    from bcolzx._storage.lock import WriterLock

    lock = WriterLock(path, 0)
    lock.acquire()
    timer = threading.Timer(0.5, lambda: (_finish(path), lock.release()))
    timer.start()
    try:
        t = bcolzx.open(path, mode="r")
        assert len(t) == 11  # waited for the writer, which committed column a
    finally:
        timer.join()


def _finish(path: str) -> None:
    col = bcolzx.open(os.path.join(path, "a"), mode="a")
    col.append([10])
    col.close()


@posix_only
@pytest.mark.parametrize("umask", [0o022, 0o002, 0o077])
def test_new_files_follow_the_umask(tmp_path, umask):
    old = os.umask(umask)
    try:
        path = str(tmp_path / "t")
        t = bcolzx.ctable([np.arange(10), np.arange(10.0)], names=["a", "b"], rootdir=path)
        t.attrs["x"] = 1
        t.append([[1], [1.0]])
        t.flush()
        t.close()
    finally:
        os.umask(old)
    modes = {}
    for root, _, files in os.walk(path):
        for name in files:
            full = os.path.join(root, name)
            modes[os.path.relpath(full, path)] = stat.S_IMODE(os.stat(full).st_mode)
    assert "a/meta/storage" in modes and "a/data/__0.bin" in modes
    assert set(modes.values()) == {0o666 & ~umask}, modes


# -- lock-free readers across a truncation -------------------------------------------------


def _reader_before_trim(tmp_path):
    """Rows 0..999 in files of 2 chunks of 64 rows; a reader that loaded files 0 and 7;
    the writer then removed rows 100..999 (files 1 to 7 deleted) and committed."""
    path, w, r = _writer_and_reader(tmp_path)
    assert r[900] == 900
    w.trim(900)
    w.flush()
    return path, w, r


def _snapshot_or_cme(r, lo, hi):
    """r[lo:hi]: exactly the reader's snapshot (rows lo..hi-1) or ConcurrentModificationError."""
    hi = min(hi, 1000)
    try:
        got = r[lo:hi]
    except ConcurrentModificationError:
        return "cme"
    np.testing.assert_array_equal(got, np.arange(lo, hi))
    return "snapshot"


@pytest.fixture(params=["descriptors kept", "budget of one descriptor"])
def budget(request, monkeypatch):
    if request.param != "descriptors kept":
        monkeypatch.setattr(pins, "BUDGET", 1)
    return request.param


@pytest.mark.parametrize("written", ["same size", "another size"])
def test_a_reader_never_sees_rows_written_after_a_truncation(tmp_path, budget, written):
    """Unflushed rows written where the truncation freed space have the removed rows'
    chunk numbers and valid checksums: never returned (issue 20), nor a false
    ChecksumError."""
    path, w, r = _reader_before_trim(tmp_path)
    new = -np.arange(100, 1000) if written == "same size" else \
        np.random.default_rng(0).integers(-2**62, 0, 900)
    w.append(new)  # chunks written to files 1..7 again, not committed
    outcomes = {_snapshot_or_cme(r, lo, lo + 64) for lo in range(0, 1000, 64)}
    assert outcomes <= {"snapshot", "cme"}
    np.testing.assert_array_equal(r[:64], np.arange(64))  # what the trim kept reads
    w.flush()
    outcomes |= {_snapshot_or_cme(r, lo, lo + 64) for lo in range(0, 1000, 64)}
    assert outcomes <= {"snapshot", "cme"}
    np.testing.assert_array_equal(bcolzx.open(path, mode="r")[100:], new)


def test_a_reader_of_a_file_the_truncation_deleted_gets_its_snapshot_or_a_clear_error(
        tmp_path, budget):
    path, w, r = _reader_before_trim(tmp_path)
    assert not os.path.exists(os.path.join(path, "data", "__7.bin"))
    # Chunk 15: in file 7, whose index the reader loaded (row 900), not read yet;
    # then file 6 (never loaded) and file 1.
    for lo in (960, 832, 128):
        assert _snapshot_or_cme(r, lo, lo + 64) in ("snapshot", "cme")
    if budget == "descriptors kept":  # file 7's descriptor still reads the snapshot
        np.testing.assert_array_equal(r[960:1000], np.arange(960, 1000))


def test_a_writer_never_writes_into_space_a_truncation_freed(tmp_path):
    """Format §3: after a truncation, new chunks go past the end of the file, so an
    older commit's index still describes its bytes."""
    path = str(tmp_path / "c")
    concurrency.create(path, "carray", chunklen=64, nslots=4)
    w = bcolzx.open(path, mode="a")
    w.append(np.arange(256))
    w.flush()
    size = os.path.getsize(os.path.join(path, "data", "__0.bin"))
    w.trim(128)  # file 0 keeps 2 of its 4 chunks
    w.flush()
    w.close()
    w = bcolzx.open(path, mode="a")  # another writer: it learns it from meta/sizes
    w.append(np.arange(128, 256))
    w.flush()
    assert os.path.getsize(os.path.join(path, "data", "__0.bin")) > size
    np.testing.assert_array_equal(bcolzx.open(path, mode="r")[:], np.arange(256))


def test_a_file_loaded_after_a_truncation_reads_only_the_rows_it_kept(tmp_path):
    """One file holds every chunk; the reader loads it only after the writer removed
    rows and committed twice more (its snapshot's index copy is overwritten):
    the chunks the truncation kept read, the others raise."""
    _, w, r = _writer_and_reader(tmp_path, nslots=64, read=False)
    w.resize(100)
    for value in (-1, -2):
        w.append([value])
        w.flush()
    with pytest.raises(ConcurrentModificationError):
        r[900:1000]
    np.testing.assert_array_equal(r[:64], np.arange(64))
    with pytest.raises(ConcurrentModificationError):
        r[:]
