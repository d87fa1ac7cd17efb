"""Power cuts: every state the crash-state explorer generates keeps what was flushed.

The default run explores every workload of ``explorer_workloads.py`` at the
small size (nothing, everything, all but one directory change or one
file's pending writes, at every crash point); ``pytest --stress`` runs the
published exploration (every subset up to ten pending operations, all but
two, prefixes, random subsets, torn writes) at the full size.  Below: the
model and the recorder pinned down, the explorer shown to fail on writers
that skip an fsync, and the three durability bugs it found.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import bcolzx
from bcolzx._format import jsonfile

from . import explorer as xp
from .campaigns import STRESS_TIMEOUT
from .explorer_trace import (
    ROOT,
    FsTree,
    Link,
    Recorder,
    RecorderError,
    Rename,
    Sync,
    Write,
    scan,
)
from .explorer_workloads import WORKLOADS, by_name, carray_state

pytestmark = pytest.mark.skipif(
    not (hasattr(os, "fork") and os.path.isdir("/proc/self/fd")),
    reason="the recorder runs writers in a forked child and resolves their descriptors "
           "through /proc/self/fd (Linux)")


def _explore(tmp_path, workloads, size="small", bound=xp.SMALL, threads=1) -> xp.Tally:
    os.makedirs(tmp_path, exist_ok=True)
    return xp.run(workloads, str(tmp_path), size, bound, threads=threads)


def _assert_clean(tally: xp.Tally) -> None:
    assert tally.bad() == 0, "\n".join(xp.summary(tally)["failures"])


# -- the small run: every workload -----------------------------------------------------------


@pytest.mark.parametrize("workload", WORKLOADS, ids=[w.name for w in WORKLOADS])
def test_no_power_cut_loses_or_spoils_flushed_data(tmp_path, workload):
    tally = _explore(tmp_path, [workload])
    _assert_clean(tally)
    assert tally.points[workload.name] > 5 and tally.trees[workload.name] > 5


def test_the_small_run_is_deterministic(tmp_path):
    """The same operations, states and datasets at every run (one thread, seeded
    identities and names), although a ctable's columns are normally flushed in
    parallel and its identities are random."""
    workload = by_name("create ctable")
    runs = [_explore(tmp_path / str(k), [workload]) for k in range(2)]
    assert runs[0].ops == runs[1].ops and runs[0].states == runs[1].states
    assert runs[0].trees == runs[1].trees and runs[0].outcomes == runs[1].outcomes


@pytest.mark.stress
@pytest.mark.timeout(STRESS_TIMEOUT)
def test_published_crash_state_exploration(tmp_path):
    """The figures of docs/reliability.md ("Crash-state exploration")."""
    tally = _explore(tmp_path, WORKLOADS, "full", xp.FULL, threads=None)
    result = xp.summary(tally)
    print(result["table"])
    print({k: v for k, v in result.items() if k != "table"})
    _assert_clean(tally)


# -- the model ---------------------------------------------------------------------------------


def test_durability_follows_the_weakest_model():
    ops = [Link(ROOT, "d", 1, "d"),          # 0: never durable: the root is never fsynced
           Link(1, "f", 2, "f"),             # 1: durable by 5 (fsync of d)
           Write(2, 0, b"abc"),              # 2: durable by 4 (fsync of f)
           Rename(1, "f", ROOT, "g", 2, "f"),  # 3: needs both directories: never
           Sync(2), Sync(1),
           Link(1, "h", 3, "f"),             # 6: after the fsync of d: not durable
           Sync(ROOT)]                       # 7: now 0 and 3 are
    inf = float("inf")
    assert xp.durable_at(ops[:7]) == [inf, 5, 4, inf, inf, inf, inf]
    assert xp.durable_at(ops) == [7, 5, 4, 7, inf, inf, inf, inf]
    assert xp.crash_points(ops) == [4, 5, 7, 8]


def test_a_cut_may_lose_tear_or_reorder_unsynced_writes():
    tree = FsTree()
    tree.apply(Link(ROOT, "f", 1, "f"))
    tree.apply(Write(1, 0, b"oldX"))
    trace = xp.Trace("t", tree, [Write(1, 0, b"NEW!"), Write(1, 4, b"tail")], [])
    found = {bytes(t.inodes[1].data) for t in xp.states_at(
        trace, tree, [0, 1], xp.Bound(exhaustive=2), 2).values()}
    assert {b"oldX", b"NEW!", b"oldXtail", b"NEW!tail"} <= found  # lost, reordered
    assert b"NEW!\0\0\0\0" in found and b"oldX\0\0\0\0" in found  # grown, not written
    assert {b"NEWX", b"old!", b"NEW!tai", b"NEW!\0\0\0l"} <= found  # torn: part of a write
    allowed = set(b"oldXNEW!tail\0")
    assert all(len(d) in (4, 7, 8) and set(d) <= allowed for d in found)  # nothing invented


def test_the_oracle_requires_flushed_rows_and_allows_rewrites():
    v = np.arange(10.0)
    w = v.copy()
    w[3] = -1
    old, new = carray_state(v), carray_state(w)
    grown = carray_state(np.r_[w, 5.0])
    orc = xp.Oracle(old, (old, new, grown))
    assert xp.judge(xp.Seen("open", state=old), orc)[0] == "ok"
    assert xp.judge(xp.Seen("open", state=grown), orc)[0] == "ok"
    assert xp.judge(xp.Seen("open", state=carray_state(v[:9])), orc)[0] == "lost"
    bad = v.copy()
    bad[4] = 99
    assert xp.judge(xp.Seen("open", state=carray_state(bad)), orc)[0] == "wrong"
    assert xp.judge(xp.Seen("absent"), orc)[0] == "lost"
    assert xp.judge(xp.Seen("error", "CorruptDataError: x"), orc)[0] == "unopenable"
    creating = xp.Oracle(None, (old,))
    assert xp.judge(xp.Seen("absent"), creating)[0] == "ok"
    assert xp.judge(xp.Seen("error", "FileNotFoundError: meta/sizes"), creating)[0] == "ok"
    assert xp.judge(xp.Seen("error", "IndexError: x", clean=False), creating)[0] == \
        "unclean-error"
    assert xp.judge(xp.Seen("open", state=carray_state(v[:4])), creating)[0] == "ok"
    assert xp.judge(xp.Seen("open", state=carray_state(bad)), creating)[0] == "wrong"


# -- the recorder ------------------------------------------------------------------------------


def test_the_recorder_models_every_call_it_interposes(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    (root / "old").write_bytes(b"0123456789")
    with Recorder(str(root)) as rec:
        os.makedirs(root / "a" / "b")
        fd = os.open(root / "a" / "f", os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o666)
        os.write(fd, b"hello")
        os.pwrite(fd, b"HE", 0)
        os.pwritev(fd, [b"xy", memoryview(b"zw")], 10)
        os.writev(fd, [b"!"])
        os.ftruncate(fd, 12)
        os.fsync(fd)
        os.close(fd)
        os.truncate(root / "old", 4)
        with open(root / "a" / "text", "w") as f:
            f.write("line\n")
        with open(root / "a" / "text", "a") as f:
            f.write("more\n")
        with open(root / "a" / "b" / "bin", "wb") as f:
            f.write(b"\x00\x01")
        fd = os.open(root / "a" / "tmp", os.O_WRONLY | os.O_CREAT | os.O_EXCL)
        with os.fdopen(fd, "wb") as f:
            f.write(b"renamed")
        os.replace(root / "a" / "tmp", root / "a" / "b" / "moved")
        os.rename(root / "a" / "text", root / "text2")
        os.link(root / "text2", root / "a" / "hard")
        os.symlink("text2", root / "sym")
        os.unlink(root / "text2")
        jsonfile.write_atomic(str(root / "a" / "atomic"), b"{}")
        shutil.rmtree(root / "a" / "b")
    assert isinstance(rec.ops[0], Link) and rec.ops[0].kind == "d"
    assert any(isinstance(op, Sync) for op in rec.ops)
    assert not rec.tree.differences(scan(str(root)))  # stop() checked it too
    assert (root / "a" / "f").read_bytes() == b"HEllo!\0\0\0\0xy"


def test_the_recorder_refuses_what_it_cannot_model(tmp_path):
    (tmp_path / "f").write_bytes(b"x")
    with pytest.raises(RecorderError, match="posix_fallocate"):
        with Recorder(str(tmp_path)):
            fd = os.open(tmp_path / "f", os.O_RDWR)
            try:
                os.posix_fallocate(fd, 0, 4096)
            finally:
                os.close(fd)


def test_the_recorder_notices_a_change_it_did_not_see(tmp_path):
    rec = Recorder(str(tmp_path)).start()
    real_write = rec._saved[[n for _, n, _ in rec._saved].index("write")][2]
    fd = os.open(tmp_path / "f", os.O_WRONLY | os.O_CREAT)
    real_write(fd, b"unseen")  # what a C extension writing on its own would do
    os.close(fd)
    with pytest.raises(RecorderError, match="differs: f"):
        rec.stop()


_STRACE_WRITER = textwrap.dedent("""
    import os, sys
    import numpy as np
    import bcolzx
    from tests.reliability.explorer_trace import Recorder, describe
    root = sys.argv[1]
    with Recorder(root) as rec:
        t = bcolzx.ctable([np.arange(300), np.linspace(0, 1, 300)], names=["a", "b"],
                          rootdir=os.path.join(root, "t"), chunklen=32)
        t.append([[1, 2], [0.5, 0.25]])
        t.addcol(np.arange(302), name="c")
        t[5:40] = t[100:135]
        t.trim(7)
        t.flush()
        t.close()
        bcolzx.compact(os.path.join(root, "t"))
    names = rec.tree.paths()
    for op in rec.ops:
        print(describe(op, names))
""")


def _strace_lines(log: str):
    """(call, arguments, result) of each completed call of an ``strace -f`` log, the
    calls another thread interrupted (``<unfinished ...>``, ``resumed>``) joined."""
    unfinished: dict = {}
    for line in log.splitlines():
        m = re.match(r"(\d+) +(\w+)\((.*) <unfinished \.\.\.>$", line)
        if m:
            unfinished[m.group(1)] = (m.group(2), m.group(3))
            continue
        m = re.match(r"(\d+) +<\.\.\. (\w+) resumed>(.*)\) += (-?\d+)", line)
        if m:
            call, args = unfinished.pop(m.group(1))
            yield call, args + m.group(3), int(m.group(4))
            continue
        m = re.match(r"(\d+) +(\w+)\((.*)\) += (-?\d+)", line)
        if m:
            yield m.group(2), m.group(3), int(m.group(4))


def _strace_calls(log: str, root: str) -> dict:
    """Mutating calls on paths under `root` in an ``strace -f -y`` log, by kind."""
    calls: dict = {"write": 0, "bytes": 0, "sync": 0, "mkdir": 0, "rename": 0, "unlink": 0}
    inside = re.escape(root)
    for call, args, ret in _strace_lines(log):
        if ret < 0 or root not in args:
            continue
        if call in ("write", "pwrite64", "pwritev", "pwritev2", "writev") and \
                re.match(rf"\d+<{inside}", args):
            calls["write"] += 1
            calls["bytes"] += ret
        elif call in ("fsync", "fdatasync") and re.match(rf"\d+<{inside}", args):
            calls["sync"] += 1
        elif call in ("mkdir", "mkdirat"):
            calls["mkdir"] += 1
        elif call in ("rename", "renameat", "renameat2"):
            calls["rename"] += 1
        elif call in ("unlink", "unlinkat", "rmdir"):
            calls["unlink"] += 1
    return calls


def test_the_recorder_sees_what_strace_sees(tmp_path):
    """An independent witness: the system calls strace sees the writer make under the
    root are exactly the ones the recorder recorded (nothing is written behind it)."""
    strace = shutil.which("strace")
    if strace is None:
        pytest.skip("strace is not installed (the recorder needs no strace; this only "
                    "cross-checks it)")
    root = str(tmp_path / "root")
    os.mkdir(root)
    log = str(tmp_path / "strace.log")
    # the bcolzx under test (installed, or built in place) and this test tree
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [os.path.dirname(os.path.dirname(bcolzx.__file__)), here]))
    proc = subprocess.run(
        [strace, "-f", "-y", "-s", "0", "-o", log, "-e",
         "trace=write,pwrite64,pwritev,pwritev2,writev,fsync,fdatasync,mkdir,mkdirat,"
         "rename,renameat,renameat2,unlink,unlinkat,rmdir",
         sys.executable, "-c", _STRACE_WRITER, root],
        env=env, cwd=os.path.dirname(os.path.dirname(bcolzx.__file__)),
        capture_output=True, text=True, timeout=300)
    if proc.returncode != 0 and "ptrace" in proc.stderr.lower():
        pytest.skip(f"strace cannot trace here: {proc.stderr.strip()[:200]}")
    assert proc.returncode == 0, proc.stderr
    with open(log) as f:
        seen = _strace_calls(f.read(), os.path.realpath(root))
    recorded = {"write": 0, "bytes": 0, "sync": 0, "mkdir": 0, "rename": 0, "unlink": 0}
    for line in proc.stdout.splitlines():
        verb = line.split(" ", 1)[0]
        if verb == "write":
            a, b = map(int, re.search(r"\[(\d+), (\d+)\)", line).groups())
            recorded["write"] += 1
            recorded["bytes"] += b - a
        elif verb in ("fsync", "fdatasync"):
            recorded["sync"] += 1
        elif verb in ("mkdir", "rename", "unlink", "exchange"):
            recorded["rename" if verb == "exchange" else verb] += 1
    # rmdir and unlink are both "unlink" in the record; the recorder's own reads and
    # the interpreter's writes elsewhere are not under the root
    assert seen == recorded
    assert recorded["write"] > 20 and recorded["sync"] > 10 and recorded["rename"] > 5


_STRACE_ORDER_WRITER = textwrap.dedent("""
    import os, sys, threading
    import numpy as np
    import bcolzx
    from bcolzx._storage import directory
    from tests.reliability.explorer_trace import (EFFECTS, Link, Recorder, Rename, Sync,
                                                  Unlink, Write)
    root = sys.argv[1]
    bcolzx.set_nthreads(4)
    main = threading.main_thread()
    elsewhere = []
    real_sync_one = directory._sync_one
    def sync_one(job):
        if threading.current_thread() is not main:
            elsewhere.append(job)
        return real_sync_one(job)
    directory._sync_one = sync_one
    with Recorder(root) as rec:
        t = bcolzx.ctable([np.arange(300), np.linspace(0, 1, 300), np.arange(300) % 7],
                          names=["a", "b", "c"], rootdir=os.path.join(root, "t"),
                          chunklen=32)
        t.append([[1, 2], [0.5, 0.25], [3, 4]])
        t.flush()
        t[5:40] = t[100:135]
        t.flush()
        t.trim(7)
        t.close()
    # each call, with the path of what it named when it was made
    tree = rec.initial.copy()
    for op in rec.ops:
        if isinstance(op, (Write, Sync)):
            print("write" if isinstance(op, Write) else "sync",
                  os.path.normpath(os.path.join(root, tree.paths()[op.ino])))
        elif isinstance(op, Link) and op.kind == "d":
            print("mkdir")
        elif isinstance(op, (Rename, Unlink)):
            print("rename" if isinstance(op, Rename) else "unlink")
        if isinstance(op, EFFECTS):
            tree.apply(op)
    print("pool-thread fsyncs", len(elsewhere))
""")


def test_the_recorder_orders_pool_thread_calls_as_strace_does(tmp_path):
    """Commits fsync on pool threads (``directory.sync_all``, a ctable's columns
    committed at once): every call the writer's threads make under the root is in
    the record, at the place and on the file strace sees it, fsyncs included (an
    fsync missed, misplaced or put on the wrong file would make the explorer invent
    bad states or miss them)."""
    strace = shutil.which("strace")
    if strace is None:
        pytest.skip("strace is not installed (this only cross-checks the recorder)")
    root = os.path.realpath(str(tmp_path / "root"))
    os.mkdir(root)
    log = str(tmp_path / "strace.log")
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [os.path.dirname(os.path.dirname(bcolzx.__file__)), here]))
    proc = subprocess.run(
        [strace, "-f", "-y", "-s", "0", "-o", log, "-e",
         "trace=write,pwrite64,pwritev,pwritev2,writev,fsync,fdatasync,mkdir,mkdirat,"
         "rename,renameat,renameat2,unlink,unlinkat,rmdir",
         sys.executable, "-c", _STRACE_ORDER_WRITER, root],
        env=env, cwd=os.path.dirname(os.path.dirname(bcolzx.__file__)),
        capture_output=True, text=True, timeout=300)
    if proc.returncode != 0 and "ptrace" in proc.stderr.lower():
        pytest.skip(f"strace cannot trace here: {proc.stderr.strip()[:200]}")
    assert proc.returncode == 0, proc.stderr
    *lines, last = proc.stdout.splitlines()
    assert last.startswith("pool-thread fsyncs ") and int(last.split()[-1]) > 0, \
        "the workload no longer fsyncs on pool threads: this test checks nothing"
    recorded = [tuple(line.split(" ", 1)) for line in lines]
    seen = []
    inside = re.escape(root)
    with open(log) as f:
        for call, args, ret in _strace_lines(f.read()):
            if ret < 0 or root not in args:
                continue
            on_fd = re.match(rf"\d+<({inside}[^>]*)>", args)
            if call in ("write", "pwrite64", "pwritev", "pwritev2", "writev") and on_fd:
                if ret:
                    seen.append(("write", on_fd.group(1)))
            elif call in ("fsync", "fdatasync") and on_fd:
                seen.append(("sync", on_fd.group(1)))
            elif call in ("mkdir", "mkdirat"):
                seen.append(("mkdir",))
            elif call in ("rename", "renameat", "renameat2"):
                seen.append(("rename",))
            elif call in ("unlink", "unlinkat", "rmdir"):
                seen.append(("unlink",))
    assert sum(1 for r in recorded if r[0] == "sync") > 10
    assert seen == recorded


# -- the explorer can fail ----------------------------------------------------------------------


def _append_then_flush(w, size):
    c = bcolzx.open(w.path("c"), mode="a")
    v = w.current("c").cols[""]
    c.append(np.arange(40.0))
    c.flush()
    w.step("c.append; c.flush", {"c": carray_state(np.r_[v, np.arange(40.0)])})
    c.close()


def _setup_carray(root, size):
    v = np.linspace(0, 1, 50)
    bcolzx.carray(v, rootdir=f"{root}/c", chunklen=16).close()
    return {"c": carray_state(v)}


def _without_directory_fsync(run):
    """A run whose atomic writes skip the fsync of their directory, and whose commits
    the fsyncs of ``meta/`` after their renames (in the recording child only)."""
    def patched(w, size):
        from bcolzx._storage import directory

        real = jsonfile.write_atomic
        jsonfile.write_atomic = functools.partial(real, sync_dir=False)
        directory.fsync_dir = lambda path: None
        run(w, size)
    return patched


def test_the_explorer_reports_a_commit_whose_rename_is_not_fsynced(tmp_path):
    """The harness must be able to fail: without the fsync of ``meta/`` after the rename
    of ``meta/sizes``, a cut may keep the old commit after flush() returned."""
    writer = xp.Workload("no directory fsync", "test", _setup_carray,
                        _without_directory_fsync(_append_then_flush))
    tally = _explore(tmp_path, [writer])
    assert tally.outcomes[("no directory fsync", "lost")] > 0


def test_the_explorer_reports_chunks_committed_before_they_are_durable(tmp_path):
    """Without the superchunk file's fsync (by the commit, with the other files) or
    fdatasync (its own commit), the index a commit names can reach the disk without the
    chunks: unreadable or wrong flushed rows."""
    from bcolzx._format import superchunk
    from bcolzx._storage import directory

    class NoSync:
        def __getattr__(self, name):
            return (lambda fd: None) if name == "fdatasync" else getattr(os, name)

    def run(w, size):
        superchunk.os = NoSync()
        real = directory._sync_one
        directory._sync_one = lambda job: None if str(job[1]).endswith(".bin") else real(job)
        _append_then_flush(w, size)

    writer = xp.Workload("no fdatasync", "test", _setup_carray, run)
    tally = _explore(tmp_path, [writer], bound=xp.Bound(exhaustive=4))
    bad = {o for (_, o), n in tally.outcomes.items() if n and o != "ok"}
    assert bad & {"unopenable", "wrong", "verify-failed", "lost"}, tally.outcomes


# -- the bugs it found (each fails without its fix) ---------------------------------------------


def _durable_before(trace: xp.Trace, is_target, is_publish) -> list[str]:
    """Operations matching `is_target` that are not durable by the first operation
    matching `is_publish` after them (the names, for the message)."""
    durable = xp.durable_at(trace.ops)
    late = []
    for i, op, names in trace.named():
        if is_target(op, names):
            publish = next((j for j in range(i + 1, len(trace.ops))
                            if is_publish(trace.ops[j], names)), len(trace.ops))
            if durable[i] >= publish:
                late.append(f"{i}: {op}")
    return late


def test_a_new_dataset_directory_is_durable_when_its_creation_returns(tmp_path):
    """The dataset directory (and any parent created for it) was never made durable by
    an fsync of its parent: after flush() returned, a power cut could make the whole
    dataset vanish.  Each mkdir must be durable by the next step's return."""
    def run(w, size):
        c = bcolzx.carray(np.arange(100), rootdir=w.path("new/deeper/c"), chunklen=16)
        c.close()
        w.step("carray(rootdir=new/deeper/c)", {"new/deeper/c": carray_state(np.arange(100))})
        t = bcolzx.ctable([np.arange(10), np.arange(10.0)], names=["a", "b"],
                          rootdir=w.path("t"))
        t.close()
        w.step("ctable(rootdir=t)", {})

    writer = xp.Workload("create nested", "test",
                        lambda root, size: {"new/deeper/c": None}, run)
    trace = xp.record(writer, "small", str(tmp_path))
    marks = [s.at for s in trace.steps[1:]]
    durable = xp.durable_at(trace.ops)
    mkdirs = [(i, op) for i, op in enumerate(trace.ops) if isinstance(op, Link) and
              op.kind == "d"]
    assert len(mkdirs) >= 12  # new, deeper, c, t, t/a, t/b, and meta/ data/ in c, a, b
    late = [f"{i}: {op}" for i, op in mkdirs if not any(i < m and durable[i] < m
                                                         for m in marks)]
    assert not late, late


def test_addcol_makes_the_column_durable_before_rootdirs_names_it(tmp_path):
    """The new column's directory (created, or moved in with move=True) and the rename
    that publishes __rootdirs__ became durable only together: a cut could leave
    __rootdirs__ naming a directory that does not exist, and the table no longer
    opened."""
    trace = xp.record(by_name("addcol and delcol"), "small", str(tmp_path))

    def column_dir(op, names):
        return (isinstance(op, Link) and op.kind == "d" and names.get(op.parent) == "t") \
            or (isinstance(op, Rename) and op.kind == "d" and names.get(op.dst_parent) == "t")

    def publishes_rootdirs(op, names):
        return isinstance(op, Rename) and op.dst_name == "__rootdirs__"

    assert not _durable_before(trace, column_dir, publishes_rootdirs)
    assert sum(isinstance(op, Rename) and op.dst_name == "__rootdirs__"
               for op in trace.ops) >= 5


def test_a_legacy_chunk_file_is_durable_before_it_replaces_a_committed_one(tmp_path):
    """Legacy (v1) chunk files were renamed over the committed ones before their bytes
    were fsynced: a cut could leave a committed chunk empty (TruncatedDataError)."""
    trace = xp.record(by_name("legacy carray in place"), "small", str(tmp_path))

    def chunk_file(op, names):
        return isinstance(op, Write) and names.get(op.ino, "").startswith("c/data/")

    def renamed_into_place(op, names):
        return isinstance(op, Rename) and op.dst_name.endswith(".blp")

    late = _durable_before(trace, chunk_file, renamed_into_place)
    assert not late, late
    assert sum(renamed_into_place(op, {}) for op in trace.ops) >= 3
