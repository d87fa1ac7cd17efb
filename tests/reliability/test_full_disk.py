"""Full disks and I/O errors: what was flushed stays intact, the writer stays usable.

On a real, small file system (a 2 MiB tmpfs mounted for the test, as root),
appends run until the disk is full: the append (or flush) raises an
``OSError`` with errno ENOSPC naming the dataset; the dataset reopens and
passes :func:`bcolzx.verify` with every row flushed before; the writing
object is back at that state too, and writes again once space is freed.

Without root, the same guarantees are checked by making the k-th write or
sync call fail (ENOSPC, EIO, an interrupt), for every k of a scenario of
appends, rewrites, shrinks and compactions (:mod:`.faults`).
"""

from __future__ import annotations

import errno
import json
import os
import shutil

import numpy as np
import pytest

import bcolzx
from bcolzx.errors import LockedError

from . import concurrency
from .faults import Faults, mount_reason, remount, reserve, small_tmpfs

RNG = np.random.default_rng(8)


def _random(n):
    return RNG.integers(0, 2**62, n)  # incompressible: fills the disk at the rate written


def _named(exc: BaseException, path: str) -> bool:
    return path in str(exc) or any(path in n for n in getattr(exc, "__notes__", []))


# -- a real full disk (root) ---------------------------------------------------------------


@pytest.fixture
def tiny_fs(tmp_path):
    reason = mount_reason()
    if reason:
        pytest.skip(reason)
    try:
        with small_tmpfs(tmp_path / "fs", "2m") as mnt:
            yield str(mnt)
    except OSError as exc:
        if "mount -t tmpfs failed" in str(exc):
            pytest.skip(str(exc))
        raise


def _append_until_full(obj, batch, make):
    """Append and flush batches until the disk is full: (rows committed, the error)."""
    committed = []
    while True:
        block = make(batch)
        try:
            obj.append(block)
            obj.flush()
        except OSError as exc:
            return committed, exc
        committed.append(block)
        assert len(committed) < 10_000, "the disk never filled up"


@pytest.mark.parametrize("batch", [3_000, 40_000])
def test_a_full_disk_raises_enospc_and_keeps_every_flushed_row(tiny_fs, batch):
    path = os.path.join(tiny_fs, "c")
    spare = reserve(tiny_fs, 256 << 10)
    c = bcolzx.carray(np.empty(0, "i8"), rootdir=path, chunklen=4096)
    blocks, exc = _append_until_full(c, batch, _random)
    flushed = np.concatenate(blocks) if blocks else np.empty(0, "i8")
    assert exc.errno == errno.ENOSPC and path in str(exc), exc
    assert len(c) == len(flushed)  # the writer is back at its last flush
    np.testing.assert_array_equal(c[:], flushed)
    np.testing.assert_array_equal(bcolzx.open(path, mode="r")[:], flushed)
    report = bcolzx.verify(path)
    assert report.ok, str(report)
    os.unlink(spare)  # space again: the same object writes on
    more = _random(batch)
    c.append(more)
    c.close()
    np.testing.assert_array_equal(bcolzx.open(path, mode="r")[:], np.r_[flushed, more])
    assert bcolzx.verify(path).ok
    assert not [n for n in os.listdir(os.path.join(path, "data")) if n.endswith(".tmp")]


def test_a_full_disk_leaves_a_ctable_whole(tiny_fs):
    path = os.path.join(tiny_fs, "t")
    spare = reserve(tiny_fs, 256 << 10)
    t = bcolzx.ctable([np.empty(0, "i8"), np.empty(0, "f8"), np.empty(0, "i4")],
                      names=["a", "b", "c"], rootdir=path, chunklen=2048)

    def rows(n):
        a = _random(n)
        return [a, a / 3.0, (a % 1000).astype("i4")]

    blocks, exc = _append_until_full(t, 5_000, rows)
    assert exc.errno == errno.ENOSPC and _named(exc, path), exc
    n = sum(len(b[0]) for b in blocks)
    assert len(t) == n and {len(col) for col in t.cols.values()} == {n}
    r = bcolzx.open(path, mode="r")
    assert {len(col) for col in r.cols.values()} == {n}  # no column kept a partial append
    for k, name in enumerate(["a", "b", "c"]):
        want = np.concatenate([b[k] for b in blocks]) if blocks else np.empty(0)
        np.testing.assert_array_equal(r.cols[name][:], want)
    assert bcolzx.verify(path).ok
    os.unlink(spare)
    t.append(rows(100))
    t.close()
    assert len(bcolzx.open(path, mode="r")) == n + 100


def test_a_full_disk_keeps_a_legacy_carray_whole(tiny_fs):
    from .datasets import LEGACY

    src = LEGACY / "ca_int32_leftover"
    path = os.path.join(tiny_fs, "legacy")
    shutil.copytree(src, path)
    spare = reserve(tiny_fs, 128 << 10)
    c = bcolzx.open(path, mode="a")
    before = c[:]
    blocks, exc = _append_until_full(
        c, 20_000, lambda n: RNG.integers(-2**31, 2**31 - 1, n).astype("i4"))
    assert exc.errno == errno.ENOSPC and path in str(exc)
    flushed = np.concatenate([before, *blocks])
    np.testing.assert_array_equal(c[:], flushed)
    np.testing.assert_array_equal(bcolzx.open(path, mode="r")[:], flushed)
    assert bcolzx.verify(path).ok
    os.unlink(spare)
    c.append(np.arange(10, dtype="i4"))
    c.close()
    np.testing.assert_array_equal(bcolzx.open(path, mode="r")[-10:], np.arange(10))


def test_a_read_only_file_system_reads_in_mode_a_and_refuses_the_first_write(tiny_fs):
    path = os.path.join(tiny_fs, "c")
    bcolzx.carray(np.arange(100), rootdir=path).close()
    remount(tiny_fs, "ro")
    try:
        c = bcolzx.open(path, mode="a")
        assert c.sum() == 4950
        with pytest.raises(OSError) as info:
            c.append(np.arange(10_000))
            c.flush()
        assert info.value.errno == errno.EROFS and not isinstance(info.value, LockedError)
        np.testing.assert_array_equal(c[:], np.arange(100))
    finally:
        remount(tiny_fs, "rw")
    assert bcolzx.verify(path).ok


# -- any write or sync call failing (no root needed) -----------------------------------------


def _carray_steps():
    rows = _random(5_000)

    def step(fn):
        return fn

    return [
        step(lambda c: (c.append(rows[:1000]), c.flush())),
        step(lambda c: (c.append(rows[1000:1037]), c.flush())),  # the leftover again
        step(lambda c: (c.__setitem__(slice(100, 400), rows[4000:4300]), c.flush())),
        step(lambda c: (c.append(rows[1037:3500]), c.flush())),  # new superchunk files
        step(lambda c: c.trim(700)),  # shrinking: metadata first
        step(lambda c: c.compact()),  # files replaced
        step(lambda c: (c.append(rows[3500:3800]), c.close())),
    ]


def _ctable_steps():
    a = _random(4_000)
    cols = [a, a / 7.0]
    return [
        lambda t: t.append([c[:900] for c in cols]),
        lambda t: t.append([c[900:1000] for c in cols]),
        lambda t: t.append([c[1000:3000] for c in cols]),
        lambda t: t.trim(1500),
        lambda t: t.resize(2000),
        lambda t: (t.append([c[3000:3100] for c in cols]), t.close()),
    ]


def _new(kind, path):
    if kind == "carray":
        concurrency.create(path, "carray", chunklen=128, nslots=4)
    else:
        bcolzx.ctable([np.empty(0, "i8"), np.empty(0, "f8")], names=["a", "b"],
                      rootdir=path, chunklen=128).close()


def _state(obj):
    return obj[:].copy()


def _models(kind, path, steps):
    """What the dataset holds after each step, run without failures (and the call count)."""
    _new(kind, path)
    obj = bcolzx.open(path, mode="a")
    models = [_state(obj)]
    with Faults() as f:
        for step in steps:
            step(obj)
            models.append(_state(obj))
    obj.close()
    shutil.rmtree(path)
    return models, f.count


ERRORS = {
    "ENOSPC": lambda: OSError(errno.ENOSPC, os.strerror(errno.ENOSPC)),
    "EIO": lambda: OSError(errno.EIO, os.strerror(errno.EIO)),
    "interrupt": lambda: KeyboardInterrupt(),
}


@pytest.fixture
def scratch(tmp_path):
    """A directory on a tmpfs when there is one (fsync costs nothing there: the sweep
    runs hundreds of scenarios), else the test's temporary directory."""
    if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK):
        import tempfile

        path = tempfile.mkdtemp(prefix="bcolzx-faults-", dir="/dev/shm")
        yield path
        shutil.rmtree(path, ignore_errors=True)
    else:
        yield str(tmp_path)


@pytest.mark.parametrize("error", sorted(ERRORS))
@pytest.mark.parametrize("kind", ["carray", "ctable"])
def test_a_failure_at_any_write_call_keeps_the_last_commit(kind, error, scratch, request):
    """For every write/sync call k of a scenario: the k-th call fails; the dataset on
    disk is the state before or after the step that failed (the latter only if its
    commit point was written), passes verify, the object holds what the disk holds,
    and the rest of the scenario then runs to the expected end.  (ENOSPC at every
    call; EIO and interrupts at one call in three, every call with --stress.)"""
    steps = _carray_steps() if kind == "carray" else _ctable_steps()
    path = os.path.join(scratch, "ds")
    models, ncalls = _models(kind, path, steps)
    assert ncalls > 20
    every = 1 if error == "ENOSPC" or request.config.getoption("--stress") else 3
    tally = {"calls": ncalls, "injected": 0, "before": 0, "after": 0, "swallowed": 0}
    for k in range(sorted(ERRORS).index(error) % every, ncalls, every):
        tally["injected"] += 1
        _new(kind, path)
        obj = bcolzx.open(path, mode="a")
        failed_at, caught = None, None
        with Faults(at=k, error=ERRORS[error]()) as f:
            for j, step in enumerate(steps):
                try:
                    step(obj)
                except BaseException as exc:  # noqa: BLE001 - KeyboardInterrupt included
                    failed_at, caught = j, exc
                    break
        where = f"call {k} ({f.fired}) in step {failed_at}"
        if failed_at is None:  # a best-effort write (the lock file's holder record)
            assert f.fired == "pwrite", where
            np.testing.assert_array_equal(_state(bcolzx.open(path, mode="r")), models[-1])
            shutil.rmtree(path)
            tally["swallowed"] += 1
            continue
        if error == "interrupt":
            assert isinstance(caught, KeyboardInterrupt), where
        else:
            assert isinstance(caught, OSError) and caught.errno == errno.__dict__[error], where
            assert _named(caught, path), (where, str(caught))
        disk = _state(bcolzx.open(path, mode="r"))
        before, after = models[failed_at], models[failed_at + 1]
        at_before = disk.shape == before.shape and np.array_equal(disk, before)
        at_after = disk.shape == after.shape and np.array_equal(disk, after)
        assert at_before or at_after, f"{where}: {len(disk)} rows, neither state"
        tally["before" if at_before else "after"] += 1
        np.testing.assert_array_equal(_state(obj), disk, err_msg=where)
        report = bcolzx.verify(path)
        assert report.ok, f"{where}: {report}"
        for step in steps[failed_at if at_before else failed_at + 1:]:
            step(obj)
        final = _state(bcolzx.open(path, mode="r"))
        np.testing.assert_array_equal(final, models[-1], err_msg=where)
        obj.close()
        shutil.rmtree(path)
    print(json.dumps({"kind": kind, "error": error, **tally}))


def test_a_full_disk_while_creating_a_file_leaves_no_partial_file(tmp_path, monkeypatch):
    from bcolzx._format import superchunk

    path = str(tmp_path / "c")
    concurrency.create(path, "carray", chunklen=128, nslots=2)
    c = bcolzx.open(path)
    c.append(np.arange(256))
    c.flush()
    real_fsync = os.fsync

    def full(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(superchunk.os, "fsync", full)
    with pytest.raises(OSError) as info:
        # Superchunk file 1 is created, and fsynced by the commit that names it.
        c.append(np.arange(256, 512))
        c.flush()
    monkeypatch.setattr(superchunk.os, "fsync", real_fsync)
    assert info.value.errno == errno.ENOSPC
    assert sorted(os.listdir(os.path.join(path, "data"))) == ["__0.bin"]
    np.testing.assert_array_equal(bcolzx.open(path, mode="r")[:], np.arange(256))
    c.append(np.arange(256, 512))
    c.close()
    np.testing.assert_array_equal(bcolzx.open(path, mode="r")[:], np.arange(512))
