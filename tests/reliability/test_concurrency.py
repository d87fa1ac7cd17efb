"""Concurrency: one writer and many readers, the single-writer lock, fork safety.

The model (docs/reliability-concurrency.md): readers take no lock and see
the dataset as a commit left it; a writer takes the dataset's lock at its
first change and keeps it until it is closed; a second writer gets
:class:`~bcolzx.LockedError` (naming the holder) unless it asks to wait;
the OS releases the lock of a writer that dies; a forked child can read and
write without deadlock.
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import bcolzx
from bcolzx._format.layout import LOCK_FILE
from bcolzx.errors import ConcurrentModificationError, LockedError

from . import concurrency
from .campaigns import STRESS_TIMEOUT

HARNESS = os.path.abspath(concurrency.__file__)
#: What a child process needs to import the bcolzx under test (CI tests the
#: installed package: children run outside the source tree).
ENV = {**os.environ, "PYTHONPATH": os.path.dirname(os.path.dirname(bcolzx.__file__))}


def _spawn(tmp_path, *args) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, HARNESS, *map(str, args)], cwd=tmp_path,
                            env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _result(proc: subprocess.Popen, timeout: float) -> dict:
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, f"child failed ({proc.returncode}):\n{err}"
    return json.loads(out.strip().splitlines()[-1])


def _holder(tmp_path, path, seconds=60) -> subprocess.Popen:
    """A process holding the write lock of `path` (it prints 'locked' when it does)."""
    proc = _spawn(tmp_path, "hold", path, "carray", seconds)
    assert proc.stdout.readline().strip() == "locked", proc.stderr.read()
    return proc


@pytest.fixture
def data(tmp_path):
    path = str(tmp_path / "c")
    bcolzx.carray(np.arange(10), rootdir=path).close()
    return path


# -- one writer, many readers --------------------------------------------------------------


def run_campaign(tmp_path, kind: str, total: int, max_batch: int, threads: int,
                 processes: int, seed: int = 0, timeout: float = 600) -> dict:
    """The writer in a process, readers in threads and processes; every value checked."""
    path = str(tmp_path / kind)
    concurrency.create(path, kind)
    done = str(tmp_path / "writer-done")
    deadline = timeout * 0.8
    readers = [_spawn(tmp_path, "reader", path, kind, done, seed + 1 + i, deadline)
               for i in range(processes)]
    results: list = [None] * threads

    def in_thread(k):
        results[k] = concurrency.read(path, kind, done, seed + 100 + k,
                                      time.monotonic() + deadline)

    pool = [threading.Thread(target=in_thread, args=(k,)) for k in range(threads)]
    for t in pool:
        t.start()
    start = time.monotonic()
    writer = _spawn(tmp_path, "writer", path, kind, total, max_batch, seed)
    written = _result(writer, timeout)
    seconds = time.monotonic() - start
    open(done, "w").close()
    for t in pool:
        t.join(timeout)
    results += [_result(p, timeout) for p in readers]
    assert all(r is not None for r in results), "a reader thread died"
    final = bcolzx.open(path, mode="r")
    assert len(final) == total
    summary = {
        "kind": kind, "rows": total, "writer": written, "writer_seconds": round(seconds, 2),
        "readers": threads + processes, "opens": sum(r["opens"] for r in results),
        "reads": sum(r["reads"] for r in results),
        "rows_checked": sum(r["rows_checked"] for r in results),
        "inconsistent": sum(len(r["errors"]) for r in results),
        "errors": [e for r in results for e in r["errors"]][:10],
        "lengths_seen": sorted({r["max_len"] for r in results}),
    }
    print(json.dumps(summary))
    return summary


@pytest.mark.parametrize("kind", ["carray", "ctable"])
def test_readers_see_only_committed_prefixes(kind, tmp_path):
    """2 reader threads + 2 reader processes while a process appends, rewrites and
    compacts: every row read holds its number, lengths never go back."""
    s = run_campaign(tmp_path, kind, total=60_000, max_batch=3_000, threads=2, processes=2)
    assert s["inconsistent"] == 0, s["errors"]
    assert s["writer"]["rewrites"] and s["writer"]["compactions"]
    assert s["opens"] >= 8 and s["rows_checked"] >= s["rows"]


@pytest.mark.stress
@pytest.mark.timeout(STRESS_TIMEOUT)
@pytest.mark.parametrize("kind, max_batch", [("carray", 20_000), ("ctable", 50_000)])
def test_readers_see_only_committed_prefixes_at_full_size(kind, max_batch, tmp_path):
    """The published figure: 8 readers (4 threads, 4 processes) + 1 writer, 1e7 rows
    appended in about a thousand (carray) or four hundred (ctable) commits."""
    s = run_campaign(tmp_path, kind, total=10_000_000, max_batch=max_batch, threads=4,
                     processes=4, timeout=3600)
    assert s["inconsistent"] == 0, s["errors"]


def _writer_and_reader(tmp_path, nslots=2, read=True):
    """A dataset of rows 0..999 in files of `nslots` chunks of 64 rows, a writer holding
    it, and a reader that has read row 5 (so loaded the index of file 0 only), or
    nothing (`read` False)."""
    path = str(tmp_path / "c")
    concurrency.create(path, "carray", chunklen=64, nslots=nslots)
    w = bcolzx.open(path, mode="a")
    w.append(np.arange(1000))
    w.flush()
    r = bcolzx.open(path, mode="r")
    assert len(r) == 1000 and (not read or r[5] == 5)
    return path, w, r


def test_a_reader_keeps_its_snapshot_while_the_writer_goes_on(tmp_path):
    """An object opened before commits reads the rows of its own commit, also from
    files whose index it loads only later and from files compaction replaced."""
    path, w, r = _writer_and_reader(tmp_path)  # r loaded file 0's index only
    for k in range(6):  # each commit writes the other index copy: file 7's copy is gone
        w.append(np.arange(1000 + 100 * k, 1100 + 100 * k))
        w.flush()
        w[900:990] = np.arange(900, 990)
        w.flush()
    w.compact()
    np.testing.assert_array_equal(r[:], np.arange(1000))
    assert len(r) == 1000
    np.testing.assert_array_equal(bcolzx.open(path, mode="r")[:], np.arange(1600))


def test_a_reader_whose_rows_were_removed_gets_a_clear_error(tmp_path):
    path, w, r = _writer_and_reader(tmp_path)
    w.trim(900)  # 100 rows are left; the files past the first are deleted
    w.compact()
    with pytest.raises(ConcurrentModificationError, match="shortened"):
        r[500:600]
    np.testing.assert_array_equal(r[:64], np.arange(64))  # what is still there reads


def test_rows_removed_and_written_again_read_as_the_snapshot_or_raise(tmp_path):
    """Rows a writer removed and wrote again (the same chunk numbers, in space the
    truncation freed) are never read as the new values: the reader's snapshot
    or ConcurrentModificationError (docs/reliability-concurrency.md)."""
    path, w, r = _writer_and_reader(tmp_path)
    old = np.arange(1000)
    new = old.copy()
    new[100:] *= -1
    w.trim(900)
    w.append(new[100:])
    w.flush()
    w.compact()
    with pytest.raises(ConcurrentModificationError, match="shortened"):
        r[:]
    np.testing.assert_array_equal(r[:64], old[:64])  # chunk 0, which the trim kept
    np.testing.assert_array_equal(bcolzx.open(path, mode="r")[:], new)


# -- the single writer -------------------------------------------------------------------


def test_a_second_writer_process_gets_locked_error_naming_the_holder(tmp_path, data):
    proc = _holder(tmp_path, data)
    try:
        c = bcolzx.open(data, mode="a")
        np.testing.assert_array_equal(c[:10], np.arange(10))  # reading needs no lock
        with pytest.raises(LockedError) as info:
            c.append([1, 2, 3])
        assert info.value.pid == proc.pid and data in str(info.value)
        assert isinstance(info.value, OSError)  # legacy `except IOError` catches it
        assert len(c) == 11  # nothing was appended, the view is unchanged
        with pytest.raises(LockedError):
            bcolzx.carray([1], rootdir=data, mode="w")  # nor replaced
        with pytest.raises(LockedError):
            bcolzx.open(data).purge()  # nor deleted
        assert len(bcolzx.open(data, mode="r")) == 11
    finally:
        proc.kill()
        proc.wait()


def test_the_lock_of_a_writer_killed_by_sigkill_is_released(tmp_path, data):
    proc = _holder(tmp_path, data)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    c = bcolzx.open(data)
    c.append([7])
    c.flush()
    np.testing.assert_array_equal(c[:], np.r_[np.arange(10), 10, 7])


def test_a_writer_that_asks_to_wait_gets_the_lock_when_it_is_released(tmp_path, data):
    proc = _holder(tmp_path, data, seconds=1.0)
    start = time.monotonic()
    c = bcolzx.open(data, mode="a", lock_timeout=30)
    c.append([99])  # waits for the holder, then re-reads: its row is kept
    c.flush()
    assert time.monotonic() - start > 0.5
    proc.wait(30)
    np.testing.assert_array_equal(bcolzx.open(data, mode="r")[:], np.r_[np.arange(11), 99])


def test_a_waiting_writer_gives_up_after_its_timeout(tmp_path, data):
    proc = _holder(tmp_path, data)
    try:
        c = bcolzx.carray(rootdir=data, mode="a", lock_timeout=0.3)
        start = time.monotonic()
        with pytest.raises(LockedError, match="after waiting"):
            c.append([1])
        assert 0.25 < time.monotonic() - start < 5
    finally:
        proc.kill()
        proc.wait()


def test_defaults_lock_timeout_applies_to_legacy_calls(tmp_path, data):
    proc = _holder(tmp_path, data, seconds=1.0)
    old = bcolzx.defaults.lock_timeout
    try:
        bcolzx.defaults.lock_timeout = math.inf
        c = bcolzx.open(data)  # the legacy signature, no keyword
        c.append([5])
        c.close()
    finally:
        bcolzx.defaults.lock_timeout = old
    proc.wait(30)
    assert bcolzx.open(data, mode="r")[-1] == 5


@pytest.mark.parametrize("bad, exc", [(-1, ValueError), (float("nan"), ValueError),
                                      ("1", TypeError), (True, TypeError)])
def test_a_bad_lock_timeout_is_refused(data, bad, exc):
    with pytest.raises(exc):
        bcolzx.carray(rootdir=data, lock_timeout=bad)
    with pytest.raises(exc):
        bcolzx.defaults.lock_timeout = bad


def test_legacy_sequential_patterns_in_one_process_work(tmp_path, data):
    """Objects of one thread pass the lock on when the holder has nothing unsaved,
    and each re-reads the dataset before writing: nothing is lost."""
    c = bcolzx.open(data)
    c.append([10])
    c = bcolzx.open(data)  # the old one is flushed and gone only after this line
    c.append([11])
    c.flush()  # c stays, but has nothing unsaved
    _ = bcolzx.open(data)
    a, b = bcolzx.open(data), bcolzx.open(data)
    a.append([12])
    a.flush()
    b.append([13])  # a is idle: b takes over and sees 12
    b.flush()
    a.append([14])  # and back
    a.flush()
    np.testing.assert_array_equal(bcolzx.open(data, mode="r")[:], np.r_[np.arange(15)])
    t = bcolzx.ctable([np.arange(3)], names=["x"], rootdir=str(tmp_path / "t"))
    bcolzx.open(str(tmp_path / "t")).append([[3]])
    t.append([[4]])
    np.testing.assert_array_equal(bcolzx.open(str(tmp_path / "t"), mode="r")["x"][:],
                                  np.arange(5))


def test_a_holder_with_unsaved_changes_keeps_the_lock_in_its_process(data):
    a, b = bcolzx.open(data), bcolzx.open(data)
    a.append([10])  # not flushed: a keeps the lock
    with pytest.raises(LockedError, match="another object of this process"):
        b.append([99])
    a.close()
    b.append([11])
    b.close()
    np.testing.assert_array_equal(bcolzx.open(data, mode="r")[:], np.arange(12))


def test_another_thread_gets_locked_error(data):
    a = bcolzx.open(data)
    a.append([10])
    a.flush()  # idle, but owned by this thread
    seen = []

    def other():
        try:
            bcolzx.open(data).append([99])
        except LockedError as exc:
            seen.append(exc)

    t = threading.Thread(target=other)
    t.start()
    t.join()
    assert len(seen) == 1
    a.close()
    t = threading.Thread(target=lambda: bcolzx.open(data).append([11]))
    t.start()
    t.join()
    np.testing.assert_array_equal(bcolzx.open(data, mode="r")[:], np.arange(12))


def test_readers_never_take_the_lock(tmp_path, data):
    proc = _holder(tmp_path, data)
    try:
        for mode in ("r", "a"):
            c = bcolzx.open(data, mode=mode)
            assert c[3] == 3 and c.sum() == sum(range(11))
            c.flush()  # nothing to flush: no lock needed
            with c:
                pass
    finally:
        proc.kill()
        proc.wait()


def test_a_ctable_writer_holds_the_table_and_its_columns(tmp_path):
    path = str(tmp_path / "t")
    t = bcolzx.ctable([np.arange(5), np.arange(5.0)], names=["a", "b"], rootdir=path)
    t.append([[5], [5.0]])  # holds the table and both columns
    done = threading.Event()
    errors = []

    def second_writer():
        for attempt in (lambda: bcolzx.open(path).append([[6], [6.0]]),
                        lambda: bcolzx.carray(rootdir=os.path.join(path, "b")).append([7.0]),
                        lambda: bcolzx.open(path).addcol(np.zeros(6), name="c")):
            try:
                attempt()
            except LockedError as exc:
                errors.append(exc)
        done.set()

    threading.Thread(target=second_writer).start()
    assert done.wait(30)
    assert len(errors) == 3
    r = bcolzx.open(path, mode="r")
    assert r.names == ["a", "b"] and len(r) == 6
    assert len(r.cols["a"]) == len(r.cols["b"]) == 6  # no half-done append
    t.close()
    bcolzx.open(path).append([[6], [6.0]])
    assert len(bcolzx.open(path, mode="r")) == 7


def test_the_lock_file_exists_while_a_writer_holds_it_and_is_ignored(tmp_path, data):
    lock = os.path.join(data, LOCK_FILE)
    assert not os.path.exists(lock)  # nobody writes: no lock file
    c = bcolzx.open(data)
    c.append([10])
    assert json.loads(open(lock).read())["pid"] == os.getpid()
    assert [w.rootdir for w in bcolzx.walk(str(tmp_path))] == [data]
    assert bcolzx.verify(data).ok
    c.close()
    assert not os.path.exists(lock)
    with open(lock, "w") as f:  # left by a writer that died: the next one removes it
        f.write('{"pid": 1, "host": "elsewhere"}')
    c.append([11])
    c.close()
    assert not os.path.exists(lock)
    np.testing.assert_array_equal(bcolzx.open(data, mode="r")[:], np.arange(12))


def test_no_lock_on_a_read_only_file_system_until_the_first_write(tmp_path, data, monkeypatch):
    """Where the lock file cannot be created (read-only file system), mode 'a' opens
    and reads; the first write fails with the file system's error, not LockedError."""
    assert not os.path.exists(os.path.join(data, LOCK_FILE))
    real_open = os.open

    def read_only(path, flags, *args, **kwargs):
        if flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
            raise OSError(30, "Read-only file system", path)
        return real_open(path, flags, *args, **kwargs)

    import bcolzx._storage.lock as lock_module

    c = bcolzx.open(data, mode="a")
    monkeypatch.setattr(lock_module.os, "open", read_only)
    assert c[:].tolist() == list(range(10))
    monkeypatch.setattr("bcolzx._format.superchunk.os.open", read_only)
    with pytest.raises(OSError) as info:
        c.append(np.arange(5000))
        c.flush()
    assert not isinstance(info.value, LockedError) and info.value.errno == 30
    monkeypatch.undo()
    assert bcolzx.open(data, mode="r")[:].tolist() == list(range(10))


# -- fork ----------------------------------------------------------------------------------


def _in_forked_child(fn, timeout: float = 60) -> int:
    """Run `fn` in a child made by os.fork(); its exit status (SIGKILL after `timeout`)."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 1
        try:
            signal.alarm(int(timeout))
            code = fn() or 0
        except BaseException:
            import traceback

            traceback.print_exc()
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork() does not exist here")
def test_no_deadlock_after_fork_with_threads_in_use(tmp_path):
    """Threads compress and decompress (C-Blosc2 thread pools, our own threads) while
    the process forks: the child reads, writes and queries without waiting for ever."""
    path = str(tmp_path / "c")
    old = bcolzx.defaults.nthreads
    bcolzx.defaults.nthreads = 4
    try:
        values = np.arange(3_000_000) % 1000
        c = bcolzx.carray(values, rootdir=path)
        stop = threading.Event()

        def busy():
            scratch = bcolzx.carray(values)  # in memory: codec work only
            while not stop.is_set():
                assert scratch.sum() == values.sum()
                scratch[5] = 5
                bcolzx.open(path, mode="r")[:1_000_000]

        workers = [threading.Thread(target=busy) for _ in range(2)]
        for w in workers:
            w.start()
        time.sleep(0.3)
        try:
            def child():
                assert c.sum() == values.sum()
                d = bcolzx.carray(values[:500_000], rootdir=str(tmp_path / "child"), mode="w")
                d.append(values[:200_000])
                d.flush()
                assert bcolzx.open(str(tmp_path / "child"), mode="r").sum() == \
                    values[:500_000].sum() + values[:200_000].sum()
                assert len(bcolzx.eval("c * 2")) == len(c)
                return 0

            assert _in_forked_child(child) == 0
            assert _in_forked_child(child) == 0
        finally:
            stop.set()
            for w in workers:
                w.join()
    finally:
        bcolzx.defaults.nthreads = old


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork() does not exist here")
def test_a_forked_child_does_not_inherit_the_write_lock(tmp_path, data):
    c = bcolzx.open(data)
    c.append([10])  # unsaved, locked
    r, w = os.pipe()

    def child():
        os.close(r)
        outcome = []
        try:
            c.append([99])  # the parent's object, copied: its changes are the parent's
        except ConcurrentModificationError:
            outcome.append("copy refused")
        try:
            bcolzx.open(data).append([98])
        except LockedError as exc:
            outcome.append(f"locked by {exc.pid}")
        os.write(w, json.dumps(outcome).encode())
        return 0

    assert _in_forked_child(child) == 0
    os.close(w)
    outcome = json.loads(os.read(r, 1000))
    os.close(r)
    assert outcome == ["copy refused", f"locked by {os.getpid()}"]
    c.append([11])  # the parent still holds it: the child closed its copy, never unlocked
    c.close()
    np.testing.assert_array_equal(bcolzx.open(data, mode="r")[:], np.arange(12))
