"""The append journal (docs/format/README.md §3b): rows saved by ``flush_appends`` (a
ctable's ``auto_flush``) survive a killed process; a commit makes them durable; a
journal lost or torn by a power cut costs rows that were never committed, never a
committed row, never a wrong value."""

import os
import random
import shutil
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import bcolzx
from bcolzx._format import journal, layout
from bcolzx._format.meta import Storage
from bcolzx._storage import ChunkedArray, DirectoryStore, engine as engine_mod
from bcolzx.errors import LockedError

from tests.compat.test_alias import BCOLZX_PARENT


def _child(code, *args, check=True):
    """Run `code` in a fresh interpreter; it may end by killing itself."""
    env = dict(os.environ, PYTHONPATH=BCOLZX_PARENT)
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code), *map(str, args)],
                          env=env, cwd=BCOLZX_PARENT, capture_output=True, text=True,
                          timeout=120)
    if check:
        assert proc.returncode in (0, -signal.SIGKILL), proc.stderr
    return proc


def _journal(rootdir):
    return os.path.join(rootdir, layout.META_DIR, layout.JOURNAL_FILE)


def test_auto_flush_rows_survive_a_killed_process(tmp_path):
    root = tmp_path / "t"
    _child("""
        import os, signal, sys, numpy as np, bcolzx
        ct = bcolzx.ctable(np.empty(0, dtype="i4,f8,S3"), rootdir=sys.argv[1], mode="w")
        for i in range(1500):
            ct.append((i, i * 0.5, str(i % 1000).encode()))
        os.kill(os.getpid(), signal.SIGKILL)
    """, root)
    assert os.path.exists(_journal(root / "f0"))
    ct = bcolzx.open(str(root), mode="r")
    assert len(ct) == 1500
    np.testing.assert_array_equal(ct["f0"][:], np.arange(1500))
    np.testing.assert_array_equal(ct["f1"][:], np.arange(1500) * 0.5)
    assert ct[-1].tolist() == (1499, 749.5, b"499")
    assert "OK" in str(bcolzx.verify(str(root)))


def test_a_commit_makes_journal_rows_durable_and_empties_the_journal(tmp_path):
    root = str(tmp_path / "t")
    ct = bcolzx.ctable([np.arange(3)], names=["a"], rootdir=root)
    ct.append((3,))
    col = ct["a"].rootdir
    assert os.path.exists(_journal(col))
    before = bcolzx.carray(rootdir=col, mode="r")
    assert len(before) == 4  # a reader replays the journal
    ct.flush()
    assert not os.path.exists(_journal(col))
    os.unlink(os.path.join(col, layout.LOCK_FILE)) if os.path.exists(
        os.path.join(col, layout.LOCK_FILE)) else None
    assert len(bcolzx.open(root, mode="r")) == 4


def test_power_loss_of_the_journal_keeps_the_last_commit(tmp_path):
    root = tmp_path / "t"
    _child("""
        import os, signal, sys, numpy as np, bcolzx
        ct = bcolzx.ctable([np.arange(100)], names=["a"], rootdir=sys.argv[1], mode="w")
        for i in range(100, 150):
            ct.append((i,))
        os.kill(os.getpid(), signal.SIGKILL)
    """, root)
    os.unlink(_journal(root / "a"))  # the power cut lost what was never fsynced
    ct = bcolzx.open(str(root), mode="r")
    np.testing.assert_array_equal(ct["a"][:], np.arange(100))


@pytest.mark.parametrize("cut", [1, 5, 17, 100])
def test_a_torn_journal_gives_a_prefix(tmp_path, cut):
    root = tmp_path / "t"
    _child("""
        import os, signal, sys, numpy as np, bcolzx
        ct = bcolzx.ctable([np.arange(10)], names=["a"], rootdir=sys.argv[1], mode="w")
        for i in range(10, 40):
            ct.append((i,))
        os.kill(os.getpid(), signal.SIGKILL)
    """, root)
    path = _journal(root / "a")
    with open(path, "rb") as f:
        data = f.read()
    with open(path, "wb") as f:
        f.write(data[:len(data) - cut])
    got = bcolzx.open(str(root), mode="r")["a"][:]
    assert 10 <= len(got) < 40
    np.testing.assert_array_equal(got, np.arange(len(got)))


def test_a_writer_reopening_continues_the_journal(tmp_path):
    root = tmp_path / "t"
    code = """
        import os, signal, sys, numpy as np, bcolzx
        ct = bcolzx.open(sys.argv[1], mode="a")
        n = len(ct)
        for i in range(n, n + int(sys.argv[2])):
            ct.append((i,))
        os.kill(os.getpid(), signal.SIGKILL)
    """
    bcolzx.ctable([np.arange(5)], names=["a"], rootdir=str(root)).close()
    for extra in (7, 3, 11):
        _child(code, root, extra)
    ct = bcolzx.open(str(root), mode="a")
    np.testing.assert_array_equal(ct["a"][:], np.arange(26))
    ct.flush()
    assert not os.path.exists(_journal(root / "a"))
    np.testing.assert_array_equal(bcolzx.open(str(root), mode="r")["a"][:], np.arange(26))


def test_a_journal_never_completes_a_chunk(tmp_path):
    root = tmp_path / "t"
    _child("""
        import os, signal, sys, numpy as np, bcolzx
        ct = bcolzx.ctable([np.arange(2)], names=["a"], rootdir=sys.argv[1], mode="w",
                           chunklen=5)
        for i in range(2, 23):
            ct.append((i,))
        os.kill(os.getpid(), signal.SIGKILL)
    """, root)
    col = str(root / "a")
    committed = bcolzx.carray(rootdir=col, mode="r")  # journal included
    np.testing.assert_array_equal(committed[:], np.arange(23))
    os.unlink(_journal(col))
    # Rows 0..19 were committed when their chunks completed: only the rows of
    # the last, partial chunk were in the journal.
    np.testing.assert_array_equal(bcolzx.carray(rootdir=col, mode="r")[:], np.arange(20))


def test_rewrites_are_committed_not_journaled(tmp_path):
    root = str(tmp_path / "t")
    ct = bcolzx.ctable([np.arange(10)], names=["a"], rootdir=root)
    ct["a"][3] = 99  # the column alone: not saved yet
    ct.append((10,))  # auto_flush: a rewrite happened since the commit: commit
    assert not os.path.exists(_journal(os.path.join(root, "a")))
    assert bcolzx.carray(rootdir=os.path.join(root, "a"), mode="r")[3] == 99


def test_journal_size_is_bounded(tmp_path, monkeypatch):
    monkeypatch.setattr(engine_mod, "JOURNAL_BYTES", 200)
    root = str(tmp_path / "t")
    ct = bcolzx.ctable([np.arange(1)], names=["a"], rootdir=root)
    for i in range(1, 200):
        ct.append((i,))
        assert ct["a"]._engine._store.journal_bytes() <= 200 + journal.RECORD_HEAD + 8
    np.testing.assert_array_equal(bcolzx.open(root, mode="r")["a"][:], np.arange(200))


def test_a_reader_never_commits_another_writers_journal(tmp_path):
    root = str(tmp_path / "t")
    writer = bcolzx.ctable([np.arange(3)], names=["a"], rootdir=root)
    writer.append((3,))  # journaled, and the writer keeps the lock
    reader = bcolzx.open(root, mode="a", lock_timeout=0)
    assert len(reader) == 4
    reader.close()  # would raise LockedError if it tried to commit
    del reader
    with pytest.raises(LockedError):
        bcolzx.open(root, mode="a", lock_timeout=0).append((9,))
    writer.close()
    np.testing.assert_array_equal(bcolzx.open(root, mode="r")["a"][:], np.arange(4))


def test_kill_between_two_columns_journals_keeps_the_table_even(tmp_path):
    root = tmp_path / "t"
    _child("""
        import os, signal, sys, numpy as np, bcolzx
        ct = bcolzx.ctable([np.arange(4), np.arange(4) * 2], names=["a", "b"],
                           rootdir=sys.argv[1], mode="w")
        ct.append((4, 8))
        # The next row reaches column a's journal only.
        ct.cols["a"].append([5])
        ct.cols["a"]._engine.flush_appends()
        os.kill(os.getpid(), signal.SIGKILL)
    """, root)
    ct = bcolzx.open(str(root), mode="r")
    assert len(ct) == 5 and ct[:].tolist() == [(i, 2 * i) for i in range(5)]
    ct = bcolzx.open(str(root), mode="a")
    ct.append((5, 10))
    ct.flush()
    assert bcolzx.open(str(root), mode="r")[:].tolist() == [(i, 2 * i) for i in range(6)]


# Row i always holds i: any reader can check every value it sees.
WRITER = """
    import random, sys
    import numpy as np
    from bcolzx._storage import ChunkedArray, DirectoryStore
    rootdir, seed = sys.argv[1], int(sys.argv[2])
    rng = random.Random(seed)
    arr = ChunkedArray(DirectoryStore.open(rootdir))
    print("ready", flush=True)
    while True:
        n = len(arr)
        op = rng.random()
        if op < 0.75:
            k = rng.choice([1, 1, 1, 2, 5, 40])
            arr.append(np.arange(n, n + k, dtype="i8"))
            arr.flush_appends()
            print(len(arr), flush=True)
        elif op < 0.85 and n:
            a = rng.randrange(n)
            arr.write(a, np.arange(a, min(n, a + 7), dtype="i8"))
        else:
            arr.flush()
            print(len(arr), flush=True)
"""


@pytest.mark.parametrize("seed", range(3))
def test_sigkill_at_random_instants_keeps_every_saved_row(tmp_path, seed):
    rootdir = str(tmp_path / "ds")
    DirectoryStore.create(rootdir, Storage(dtype="i8", chunklen=16, chunks_per_superchunk=4))
    rng = random.Random(seed)
    saved = 0
    for kill in range(5):
        env = dict(os.environ, PYTHONPATH=BCOLZX_PARENT)
        child = subprocess.Popen([sys.executable, "-c", textwrap.dedent(WRITER), rootdir,
                                  str(seed * 100 + kill)], env=env, cwd=BCOLZX_PARENT,
                                 stdout=subprocess.PIPE, text=True)
        assert child.stdout.readline().strip() == "ready"
        lines = 0
        stop = rng.randint(5, 200)
        for line in child.stdout:
            saved = int(line)
            lines += 1
            if lines >= stop:
                break
        child.kill()
        child.wait()
        child.stdout.close()
        if os.path.exists(os.path.join(rootdir, layout.LOCK_FILE)):
            os.unlink(os.path.join(rootdir, layout.LOCK_FILE))
        arr = ChunkedArray(DirectoryStore.open(rootdir, readonly=True))
        got = arr.read(0, len(arr))
        assert len(got) >= saved  # nothing it reported saved is lost
        np.testing.assert_array_equal(got, np.arange(len(got), dtype="i8"))
        # A power cut loses the journal: what remains is the last commit, intact.
        shutil.copytree(rootdir, rootdir + ".cut")
        if os.path.exists(_journal(rootdir + ".cut")):
            os.unlink(_journal(rootdir + ".cut"))
        cut = ChunkedArray(DirectoryStore.open(rootdir + ".cut", readonly=True))
        np.testing.assert_array_equal(cut.read(0, len(cut)), np.arange(len(cut), dtype="i8"))
        shutil.rmtree(rootdir + ".cut")


def test_the_first_change_rereads_the_dataset_only_when_another_writer_changed_it(
        tmp_path, monkeypatch):
    from bcolzx._storage import writer

    root = str(tmp_path / "c")
    bcolzx.carray(np.arange(10), rootdir=root).close()
    reloads = []
    real = writer.reload
    monkeypatch.setattr(writer, "reload", lambda eng: (reloads.append(1), real(eng)))
    mine = bcolzx.open(root, mode="a")
    mine.append([10])  # nobody changed it: the lock is taken, nothing re-read
    mine.close()
    assert reloads == []
    a, b = bcolzx.open(root, mode="a"), bcolzx.open(root, mode="a")
    a.append([11])
    a.close()  # a commits: b's view is stale
    b.append([12])
    assert reloads == [1]
    b.close()
    np.testing.assert_array_equal(bcolzx.open(root, mode="r")[:], np.arange(13))
    # Rows another writer left in the journal (it was killed) count as a change too.
    t = tmp_path / "t"
    bcolzx.ctable([np.arange(3)], names=["x"], rootdir=str(t)).close()
    d = bcolzx.open(str(t), mode="a")
    _child("""
        import os, signal, sys, bcolzx
        ct = bcolzx.open(sys.argv[1], mode="a")
        ct.append((3,))  # journaled only
        os.kill(os.getpid(), signal.SIGKILL)
    """, t)
    before = len(reloads)
    d.append((4,))
    assert len(reloads) > before
    d.close()
    np.testing.assert_array_equal(bcolzx.open(str(t), mode="r")["x"][:], np.arange(5))


def test_opening_reads_the_journal_only_when_the_open_finds_one(tmp_path, monkeypatch):
    """Opening a dataset without a journal opens no journal file (one stat tells),
    and the journal header (a hash of meta/sizes) is made only when used; a
    journal present at opening is still replayed, and appends still journal."""
    from bcolzx._format import files

    p = str(tmp_path / "c")
    bcolzx.carray(np.arange(10), chunklen=100, rootdir=p, mode="w").flush()
    opened = []
    real = files.read_regular
    monkeypatch.setattr(files, "read_regular", lambda path, *a, **k: (
        opened.append(os.path.basename(path)), real(path, *a, **k))[1])
    made = []
    real_header = journal.make_header
    monkeypatch.setattr(journal, "make_header", lambda *a: (made.append(a),
                                                            real_header(*a))[1])
    c = bcolzx.open(p, mode="r")
    assert c[:].tolist() == list(range(10))
    assert layout.JOURNAL_FILE not in opened and not made
    w = bcolzx.open(p, mode="a")
    w.append([10, 11])
    w.engine.flush_appends()  # journaled, not committed
    assert os.path.exists(_journal(p)) and made
    del opened[:]
    r = bcolzx.open(p, mode="r")
    assert layout.JOURNAL_FILE in opened
    assert r[:].tolist() == list(range(12))
