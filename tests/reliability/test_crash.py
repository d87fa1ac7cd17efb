"""Writers killed with SIGKILL at random instants never lose or spoil flushed rows.

The default run kills about fifty writers (carray, legacy carray, ctable,
in-place conversion; see ``crash.py``); ``pytest --stress`` runs the
published campaign of a thousand.  The deterministic tests below pin the
bugs the harness found.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

import bcolzx
from bcolzx._storage.legacy import LegacyStore

from . import crash, crashplan
from .campaigns import STRESS_TIMEOUT
from .crashplan import State
from .datasets import LEGACY, copy_legacy


@pytest.fixture(scope="module")
def zygote(tmp_path_factory):
    with crash.Zygote(str(tmp_path_factory.mktemp("zygote"))) as z:
        yield z


def _assert_clean(tally: crash.CrashTally, kills: int) -> None:
    assert not tally.failures, "\n".join(crash.summary(tally)["failures"])
    assert tally.kills == kills


@pytest.mark.parametrize("family,kills,delay", [
    ("carray", 15, 0.3), ("legacy", 12, 0.3), ("ctable", 15, 0.5)])
def test_killed_writers_leave_readable_verified_datasets(tmp_path, zygote, family, kills,
                                                         delay):
    if family == "legacy":
        copy_legacy("ca_int32_leftover", str(tmp_path / "legacy"))
    tally = crash.campaign(str(tmp_path), family, kills, seed=11, max_delay=delay,
                           zygote=zygote)
    _assert_clean(tally, kills)
    # The writers got somewhere between the kills (most kills land after a
    # committed group; on a loaded machine a few land before the first one).
    assert tally.groups >= kills // 2


def test_killed_conversions_leave_the_legacy_or_the_converted_dataset(tmp_path, zygote):
    tally = crash.convert_campaign(str(tmp_path), str(LEGACY / "ct_attrs"), 6, seed=3,
                                   max_delay=0.15, zygote=zygote)
    _assert_clean(tally, 6)


def test_a_writer_error_is_reported_not_ignored(tmp_path, zygote):
    """The harness must be able to fail: a writer that raises is a failure."""
    rootdir = tmp_path / "carray"
    rootdir.mkdir()  # not a dataset: the writer's open raises
    log = str(tmp_path / "log")
    _, _, error = crash._run_and_kill(zygote, 0.5, rootdir=str(rootdir), family="carray",
                                      seed=0, log=log)
    assert "FileNotFoundError" in error


def _state(values, names=("",), attrs=None):
    cols = {n: np.asarray(v) for n, v in zip(names, values)}
    return State(cols, list(names), attrs or {"": {}})


def test_the_checker_refuses_lost_wrong_and_torn_rows():
    before = _state([np.arange(10)])
    after = _state([np.arange(12)])
    assert crash.matches(before, [before, after], False)
    assert crash.matches(after, [before, after], False)
    assert not crash.matches(_state([np.arange(9)]), [before, after], False)  # lost
    wrong = np.arange(10)
    wrong[3] = -1
    assert not crash.matches(_state([wrong]), [before, after], False)
    # A row the group rewrote may hold the value written to it, nothing else.
    rewrites = crashplan.rewritten(before, [("setslice", 3, {"": np.array([-1])})])
    assert crash.matches(_state([wrong]), [before], False, rewrites)
    wrong[4] = -1
    assert not crash.matches(_state([wrong]), [before], False, rewrites)
    # Tables: each column old or new, as long as the table.
    t0 = _state([np.arange(5), np.arange(5) * 2], ("a", "b"), {"": {}, "a": {}, "b": {}})
    t1 = _state([np.arange(8), np.arange(8) * 2], ("a", "b"), {"": {}, "a": {}, "b": {}})
    assert crash.matches(t0, [t0, t1], True)
    assert not crash.matches(_state([np.arange(5), np.arange(5)], ("a", "b"),
                                    {"": {}, "a": {}, "b": {}}), [t0, t1], True)
    assert not crash.matches(_state([np.arange(6), np.arange(6) * 2], ("a", "b"),
                                    {"": {}, "a": {}, "b": {}}), [t0, t1], True)


# -- regressions -----------------------------------------------------------------------------


def test_ctable_torn_between_two_column_commits_opens_at_the_common_length(tmp_path):
    """A crash after one column's commit and before another's used to leave a table
    that raised CorruptDataError ("columns have different lengths") forever."""
    path = str(tmp_path / "t")
    data = [np.arange(1000), np.linspace(0, 1, 1000)]
    bcolzx.ctable(data, names=["a", "b"], rootdir=path, chunklen=64).flush()
    col = bcolzx.carray(rootdir=os.path.join(path, "a"), mode="a")
    col.append(np.arange(1000, 1100))  # what the killed writer committed, in one column
    col.flush()
    del col
    ro = bcolzx.open(path, mode="r")
    assert len(ro) == 1000 and len(ro.cols["a"]) == 1000
    np.testing.assert_array_equal(ro["a"][:], data[0])
    report = bcolzx.verify(path)
    assert report.ok and len(report.notes) == 1
    assert len(bcolzx.carray(rootdir=os.path.join(path, "a"), mode="r")) == 1100  # untouched
    rw = bcolzx.open(path, mode="a")  # a writer drops the rows of the interrupted write
    rw.append([[5], [0.5]])
    del rw
    again = bcolzx.open(path, mode="r")
    np.testing.assert_array_equal(again["a"][:], np.r_[data[0], 5])
    assert bcolzx.verify(path).notes == []


@pytest.mark.parametrize("dies_in", ["commit", "put"])
def test_legacy_trim_of_the_leftover_writes_the_metadata_first(tmp_path, monkeypatch,
                                                               dies_in):
    """Shrinking a legacy dataset's leftover rewrote the leftover file before
    meta/sizes: a crash between the two left a file shorter than the metadata,
    which neither bcolzx nor legacy bcolz could read.  The writer dies at its
    first commit, or at its first chunk write: the rows are the old or the new."""
    path = str(tmp_path / "leg")
    copy_legacy("ca_int32_leftover", path)
    want = bcolzx.open(path, mode="r")[:]

    def die(self, *args):
        raise KeyboardInterrupt(f"killed in {dies_in}")

    c = bcolzx.open(path, mode="a")
    monkeypatch.setattr(LegacyStore, dies_in, die)
    with pytest.raises(KeyboardInterrupt):
        c.trim(100)  # 12345 rows: only the leftover (345 rows) shrinks
    monkeypatch.undo()
    c._engine._closed = True  # the process is dead: nothing more is written
    del c
    got = bcolzx.open(path, mode="r")[:]
    assert any(np.array_equal(got, w) for w in (want, want[:-100]))
    assert bcolzx.verify(path).ok


@pytest.mark.stress
@pytest.mark.timeout(STRESS_TIMEOUT)
def test_published_crash_campaign(tmp_path):
    """The figures of docs/reliability.md: >= 1,000 kills, no failure."""
    from .campaigns import crash_campaign

    result = crash_campaign(str(tmp_path), kills=1000)
    print(result)
    assert result["kills"] >= 1000 and not result["failures"]
