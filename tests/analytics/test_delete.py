"""Deleting rows: carray.delete, ctable.delete; chunks rewritten from the first deleted row,
zone maps right, one commit, and a crash leaves the old or the new dataset."""

import os
import random
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import bcolzx
from bcolzx._analytics import delete as deletion
from bcolzx.errors import ReadOnlyError


@pytest.fixture(params=["memory", "disk"])
def where(request, tmp_path):
    return None if request.param == "memory" else str(tmp_path / "d")


@pytest.mark.parametrize("drop", [
    [0], [999], [1000], [5, 6, 7, 2500, 2999], list(range(1000, 3000)), list(range(0, 3500)),
    list(range(0, 3500, 2)), [3499], list(range(1500, 3500))])
def test_carray_delete_equals_numpy(where, drop):
    data = np.arange(3500.0)
    c = bcolzx.carray(data, chunklen=1000, rootdir=where, mode="w")
    assert c.delete(drop) == len(set(drop))
    want = np.delete(data, drop)
    np.testing.assert_array_equal(c[:], want)
    if where is not None:
        r = bcolzx.carray(rootdir=where, mode="r")
        np.testing.assert_array_equal(r[:], want)
        report = bcolzx.verify(where)
        assert report and not report.problems
    if len(want):
        assert c.max() == want.max() and c.min() == want.min()
    c.append(np.arange(7.0))  # the array goes on as usual
    np.testing.assert_array_equal(c[:], np.r_[want, np.arange(7.0)])


def test_only_the_chunks_from_the_first_deleted_row_are_rewritten(tmp_path):
    path = str(tmp_path / "c")
    c = bcolzx.carray(np.arange(20_000, dtype=np.int64), chunklen=1000, rootdir=path, mode="w")
    before = [c.engine.store.get_one(i) for i in range(20)]
    c.delete([15_500])
    after = bcolzx.carray(rootdir=path, mode="r").engine
    for i in range(15):
        assert bytes(after.store.get_one(i)) == bytes(before[i])
    assert bytes(after.store.get_one(15)) != bytes(before[15])


def test_zone_maps_are_exact_after_a_delete(tmp_path):
    path = str(tmp_path / "c")
    data = np.arange(10_000.0)
    c = bcolzx.carray(data, chunklen=1000, rootdir=path, mode="w")
    c.delete(np.arange(9000, 10_000))  # the largest values go
    r = bcolzx.carray(rootdir=path, mode="r")
    assert r.engine.exact_chunks().all()
    assert r.max() == 8999.0 and r.engine.decoded_bytes == 0
    lo = 4321
    assert r.sum(where="r > lo", user_dict={"lo": lo}) == data[lo + 1:9000].sum()


def test_carray_refusals(tmp_path, where):
    c = bcolzx.carray(np.arange(10), rootdir=where, mode="w")
    with pytest.raises(IndexError):
        c.delete([10])
    with pytest.raises(IndexError):
        c.delete(np.array([1.5]))
    with pytest.raises(ValueError):
        c.delete(np.ones(3, bool))
    assert c.delete([]) == 0 and len(c) == 10
    if where is not None:
        r = bcolzx.carray(rootdir=where, mode="r")
        with pytest.raises(ReadOnlyError):
            r.delete([0])
        assert len(bcolzx.carray(rootdir=where, mode="r")) == 10


def test_object_carray_delete():
    c = bcolzx.carray([{"a": i} for i in range(50)], dtype=object, chunklen=8,
                      allow_pickle=True)
    c.delete(list(range(3, 50, 4)))
    assert [x["a"] for x in c[:]] == [i for i in range(50) if (i - 3) % 4]


def test_ctable_delete_by_condition_and_index(where):
    n = 12_345
    ct = bcolzx.ctable([np.arange(n), np.arange(n) * 0.5, np.arange(n).astype("S6")],
                       names=["i", "x", "s"], rootdir=where, chunklen=1000)
    assert ct.delete(where="(i % 7 == 3) | (x > 6000)") == int(
        ((np.arange(n) % 7 == 3) | (np.arange(n) * 0.5 > 6000)).sum())
    keep = np.arange(n)[~((np.arange(n) % 7 == 3) | (np.arange(n) * 0.5 > 6000))]
    assert ct.delete(indices=[0, -1]) == 2
    keep = keep[1:-1]
    for t in [ct] + ([bcolzx.ctable(rootdir=where, mode="r")] if where else []):
        np.testing.assert_array_equal(t["i"][:], keep)
        np.testing.assert_array_equal(t["x"][:], keep * 0.5)
        np.testing.assert_array_equal(t["s"][:], keep.astype("S6"))
    if where:
        assert not os.path.exists(os.path.join(where, deletion.INTENT))
        assert not os.path.exists(os.path.join(where, deletion.ROWS))
    with pytest.raises(ValueError):
        ct.delete()
    with pytest.raises(ValueError):
        ct.delete([1], where="i > 0")


def test_ctable_delete_refused_in_read_mode(tmp_path):
    path = str(tmp_path / "t")
    bcolzx.ctable([np.arange(10)], names=["i"], rootdir=path)
    t = bcolzx.ctable(rootdir=path, mode="r")
    with pytest.raises(ReadOnlyError):
        t.delete([1])
    assert len(bcolzx.ctable(rootdir=path, mode="r")) == 10


def test_recorded_deletion_is_seen_by_readers_and_finished_by_writers(tmp_path, monkeypatch):
    """A writer stopped after the first column's commit: readers see the new table
    (a view of the other column), the next writer finishes it on disk."""
    path = str(tmp_path / "t")
    n = 5000
    bcolzx.ctable([np.arange(n), np.arange(n) * 2], names=["a", "b"], rootdir=path,
                  chunklen=512)
    ct = bcolzx.ctable(rootdir=path, mode="a")
    real = deletion.finish

    def stop_after_one_column(rootdir, columns):
        first = dict(list(columns.items())[:1])
        first["a"].engine.delete(deletion.intent(rootdir)["rows"])
        raise KeyboardInterrupt  # as a kill would, after the first column's commit

    monkeypatch.setattr(deletion, "finish", stop_after_one_column)
    with pytest.raises(KeyboardInterrupt):
        deletion.delete_rows(ct, np.arange(100, 4000, 3, dtype=np.int64))
    monkeypatch.setattr(deletion, "finish", real)
    ct.close()
    want = np.delete(np.arange(n), np.arange(100, 4000, 3))
    assert len(bcolzx.carray(rootdir=os.path.join(path, "b"), mode="r")) == n  # torn on disk
    r = bcolzx.ctable(rootdir=path, mode="r")
    np.testing.assert_array_equal(r["a"][:], want)
    np.testing.assert_array_equal(r["b"][:], want * 2)
    w = bcolzx.ctable(rootdir=path, mode="a")
    np.testing.assert_array_equal(w["b"][:], want * 2)
    assert not os.path.exists(os.path.join(path, deletion.INTENT))
    assert len(bcolzx.carray(rootdir=os.path.join(path, "b"), mode="r")) == len(want)


# -- killed while deleting -----------------------------------------------------------------

WRITER = textwrap.dedent("""
    import sys
    import numpy as np
    import bcolzx
    path, kind = sys.argv[1], sys.argv[2]
    obj = (bcolzx.carray if kind == "carray" else bcolzx.ctable)(rootdir=path, mode="a")
    print("ready", flush=True)
    while True:
        n = len(obj if kind == "carray" else obj["a"])
        if n < 2000:
            break
        # Every p-th row from a third of the way on: the next state depends
        # on the length only, so the checker knows every state.
        obj.delete(np.arange(n // 3, n, 2 + n % 5))
        print(n, flush=True)
""")


def states(n):
    """The successive contents the writers go through: each delete's result."""
    data = np.arange(n)
    out = [data]
    while len(data) >= 2000:
        m = len(data)
        data = np.delete(data, np.arange(m // 3, m, 2 + m % 5))
        out.append(data)
    return out


@pytest.mark.parametrize("kind", ["carray", "ctable"])
def test_killed_while_deleting_leaves_old_or_new(tmp_path, kind):
    n = 60_000
    path = str(tmp_path / kind)
    if kind == "carray":
        bcolzx.carray(np.arange(n), chunklen=1000, rootdir=path, mode="w").flush()
    else:
        bcolzx.ctable([np.arange(n), np.arange(n) * 3], names=["a", "b"], rootdir=path,
                      chunklen=1000)
    expected = states(n)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.dirname(os.path.dirname(os.path.abspath(bcolzx.__file__)))
    rng = random.Random(7)
    done = 0  # the state the dataset is in
    for _ in range(8):
        # run where the bcolzx under test is: a child's cwd comes first on its path
        proc = subprocess.Popen([sys.executable, "-c", WRITER, path, kind], env=env,
                                cwd=env["PYTHONPATH"], stdout=subprocess.PIPE, text=True)
        assert proc.stdout.readline().strip() == "ready"
        time.sleep(rng.uniform(0.0, 0.4))
        proc.send_signal(signal.SIGKILL)
        out, _ = proc.communicate()
        returned = len(out.split())  # deletes that returned before the kill
        if kind == "carray":
            got = bcolzx.carray(rootdir=path, mode="r")[:]
        else:
            t = bcolzx.ctable(rootdir=path, mode="r")
            got = t["a"][:]
            np.testing.assert_array_equal(t["b"][:], got * 3)  # the columns agree
        index = next((i for i, s in enumerate(expected) if len(s) == len(got)), None)
        assert index is not None, f"{len(got)} rows: no state of the writer"
        np.testing.assert_array_equal(got, expected[index])
        # Old or new: the deletes that returned, and at most the one under way.
        assert done + returned <= index <= done + returned + 1
        done = index
        if kind == "ctable":  # a writer finishes a recorded deletion
            w = bcolzx.ctable(rootdir=path, mode="a")
            np.testing.assert_array_equal(w["b"][:], got * 3)
            w.close()
            assert not os.path.exists(os.path.join(path, deletion.INTENT))
        assert not bcolzx.verify(path).problems
    assert done > 0  # the kills did not all come before the first delete
