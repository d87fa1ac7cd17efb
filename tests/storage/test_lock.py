"""The write lock's process-wide table (bcolzx/_storage/lock.py) under the cycle collector."""

import threading

from bcolzx._storage import lock


def test_a_lock_freed_while_another_is_being_taken_does_not_deadlock(tmp_path, monkeypatch):
    # The cycle collector runs at any allocation: it may free a WriterLock (whose
    # __del__ releases it) in the middle of another acquire, which holds the table's
    # mutex (seen as a hang of the test suite, in json.dumps under _record_holder).
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    a = lock.WriterLock(str(tmp_path / "a"))
    a.acquire()
    b = lock.WriterLock(str(tmp_path / "b"))
    record = lock._record_holder

    def record_while_a_is_collected(fd):
        a.__del__()  # what the collector does when it frees `a` at this allocation
        record(fd)

    monkeypatch.setattr(lock, "_record_holder", record_while_a_is_collected)
    taker = threading.Thread(target=b.acquire, daemon=True)
    taker.start()
    taker.join(10)
    assert not taker.is_alive(), "acquire deadlocked on the lock table's mutex"
    assert b.acquired and not a.acquired
    assert not (tmp_path / "a" / lock.LOCK_FILE).exists()  # a's release completed
    b.release()
