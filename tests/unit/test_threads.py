"""The shared worker pool: reused, grown on demand, usable again after fork."""

import os
import signal

import numpy as np
import pytest

from bcolzx import _threads as parallel


def test_pool_grows_and_is_shared():
    small = parallel.pool(1)
    assert parallel.pool(1) is small
    big = parallel.pool(3)
    assert parallel.pool(2) is big and big._max_workers >= 3


def test_thread_scratch_buffers_are_reused_and_grow():
    a = parallel.buffer(100)
    b = parallel.buffer(50)
    assert b.ctypes.data == a.ctypes.data and len(b) == 50
    assert len(parallel.buffer(1000)) == 1000
    assert parallel.decompressor() is parallel.decompressor()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork is POSIX only")
def test_a_forked_child_gets_a_working_pool():
    assert sum(parallel.pool(2).map(int, ["1", "2"])) == 3   # threads running in the parent
    pid = os.fork()
    if pid == 0:  # child: its pool must work (the parent's threads are not copied)
        signal.alarm(20)
        try:
            ok = list(parallel.pool(2).map(np.sum, [np.arange(4), np.arange(5)])) == [6, 10]
        finally:
            os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


@pytest.mark.parametrize("run", ["run_waiting", "share"])
def test_run_waiting_from_a_busy_pool_runs_every_item_itself(run):
    """Called from a pool thread while every other pool thread is busy, run_waiting
    (and share) runs on the calling thread the items no pool thread has started (it
    never waits for work that cannot start), and returns the results in order."""
    import threading

    pool = parallel.pool(2)
    release = threading.Event()
    ran_on = []

    def item(k):
        ran_on.append(threading.get_ident())
        return k * k

    def block():
        release.wait(10)

    def caller():
        try:
            return getattr(parallel, run)(item, range(5), 2), threading.get_ident()
        finally:
            release.set()

    blockers = [pool.submit(block) for _ in range(parallel._size - 1)]
    squares, me = pool.submit(caller).result(30)
    for b in blockers:
        b.result(30)
    assert squares == [0, 1, 4, 9, 16]
    assert set(ran_on) == {me}

def test_run_waiting_runs_every_item_before_raising_the_first_failure():
    done = []

    def item(k):
        done.append(k)
        if k in (1, 3):
            raise ValueError(k)
        return k

    with pytest.raises(ValueError, match="1"):
        parallel.run_waiting(item, range(5), 3)
    assert sorted(done) == [0, 1, 2, 3, 4]
