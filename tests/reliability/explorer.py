"""The crash-state explorer: every state a power cut may leave, opened and checked.

In the spirit of ALICE (Pillai et al., OSDI 2014) and CrashMonkey (Mohan et
al., OSDI 2018): a writer's file-system operations are recorded
(:mod:`explorer_trace`), the states that a power cut at each point of the
run may leave on disk are generated from the record, each is written into a
directory of its own, and each is opened, read, verified and appended to.

**The model of persistence** (the weakest we think reasonable, weaker than
any Linux file system in its default mode):

* the tree at the start of the recording is durable;
* bytes written to a file (``write``, ``pwrite``, ``ftruncate``) are durable
  once the file is ``fsync``-ed or ``fdatasync``-ed; until then any of them
  may be lost, independently of the others (reordered), and any one may be
  *torn*: cut at a byte that need not be a sector boundary, only its second
  part on disk, or nothing but the file's new size (zeros);
* a change of a directory (a new file's name, ``mkdir``, ``unlink``,
  ``rmdir``, ``rename``, ``link``) is durable once *that directory* is
  ``fsync``-ed; a rename between two directories once both are (an
  ``fsync`` of a file says nothing of its name, and an ``fsync`` of a new
  directory nothing of the name its parent gives it);
* what is not durable may be lost in any combination: a state is the
  durable operations plus any subset of the others, applied in program
  order.  Nothing is ever invented: a name points to the inode the writer
  gave it, a file holds bytes the writer wrote (or zeros where it only
  grew), a rename is whole (never two names, never none).

**The crash points**: just before every ``fsync``/``fdatasync``/``sync``
(where the most is still volatile), just after every user-visible call
returns (:class:`Step`), and at the end.  At each, the non-durable
operations ``N`` are enumerated: every subset when ``len(N)`` is at most
:attr:`Bound.exhaustive`; otherwise nothing of ``N``, all of it, all but
one, all but two, only one, each prefix in program order, and
:attr:`Bound.samples` random subsets (seeded: the same run gives the same
states); plus each write of ``N`` torn three ways, with the rest of ``N``
kept and with it lost.  States are deduplicated by content; each distinct
tree is opened and checked once and judged at every point it appears.

**The oracle** (per dataset of the workload, :func:`judge`): a call that
returned durable (a flush, a close, a constructor, ``compact``,
``convert``, an attribute write, a ctable method with ``auto_flush``) makes
its state *required*: until the next such call returns, the dataset must
open (mode ``'r'`` and ``'a'``), pass :func:`bcolzx.verify`, hold that
state or a state of a later call of the group in progress (rows a call
rewrote in place: old or new value, as docs/reliability.md promises), take
an append and show it after reopening.  Before the dataset's creation has
returned, it may be absent or refuse to open with a clean error (bcolzx's
hierarchy or an ``OSError``); if it opens, each column must be a prefix of
a state the writer made (never a wrong value).

**Not covered**: a file system that invents data (garbage instead of zeros
in a grown file: ext4 ``data=writeback``), corrupts what was durable, or
lies about ``fsync`` (a disk cache without barriers); names of a rename
seen twice or not at all (not POSIX); other writers or processes; the
``O_DIRECT`` and ``mmap`` paths (bcolzx uses neither); operations outside
the watched directory (the workloads keep everything inside it).
"""

from __future__ import annotations

import builtins
import functools
import gc
import itertools
import json
import os
import pickle
import random
import secrets
import shutil
import tempfile
import time
import traceback
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

import bcolzx
from bcolzx import _threads
from bcolzx._format import layout
from bcolzx.errors import BcolzxError

from . import crash
from .crashplan import State, read_state
from .explorer_trace import (
    EFFECTS,
    ROOT,
    FsTree,
    Link,
    Mark,
    Recorder,
    Sync,
    SyncAll,
    Truncate,
    Unlink,
    Write,
    describe,
    objects,
)

# -- what a workload records -------------------------------------------------------------------


@dataclass
class Step:
    """A user-visible call of a workload that returned.

    Attributes
    ----------
    number : int
        0 is the state the workload starts from (durable by definition).
    label : str
        What the call was.
    durable : bool
        Whether its return promises durability (see the module docstring).
    expect : dict
        Dataset (path relative to the root) -> its :class:`State` after the
        call, or None when it has not been created yet.
    at : int
        Index of the call's :class:`Mark` in the operations (-1: before all).
    """

    number: int
    label: str
    durable: bool
    expect: dict
    at: int = -1


@dataclass
class Trace:
    """A recorded run of a workload."""

    workload: str
    initial: FsTree
    ops: list
    steps: list

    @property
    def subjects(self) -> list[str]:
        return sorted({s for step in self.steps for s in step.expect})

    def named(self):
        """``(i, op, names)`` for each operation, `names` mapping every inode seen so
        far (the operation's included) to its first path."""
        names = self.initial.paths()
        tree = self.initial.copy()
        for i, op in enumerate(self.ops):
            tree.apply(op)
            names.update({k: v for k, v in tree.paths().items() if k not in names})
            yield i, op, names

    def listing(self) -> str:
        """The operations, one a line (for failure reports)."""
        return "\n".join(f"{i:5d} {describe(op, names)}" for i, op, names in self.named())


class Writer:
    """What a workload's run is given: paths under the root, and :meth:`step`."""

    def __init__(self, root: str, recorder: Recorder, steps: list[Step]):
        self.root = root
        self._recorder = recorder
        self._steps = steps

    def path(self, name: str) -> str:
        return os.path.join(self.root, name)

    def current(self, name: str) -> State | None:
        """What the last step said of dataset `name`."""
        return self._steps[-1].expect[name]

    def step(self, label: str, expect: dict, durable: bool = True) -> None:
        """A call returned: the datasets in `expect` are now in these states."""
        number = len(self._steps)
        self._recorder.mark(number)
        merged = {**self._steps[-1].expect, **expect}  # datasets not named are unchanged
        self._steps.append(Step(number, label, durable, merged, len(self._recorder.ops) - 1))


@dataclass(frozen=True)
class Workload:
    """A writer to explore: ``setup(root, size)`` (not recorded) builds what it starts
    from and returns the initial expectations; ``run(writer, size)`` is recorded."""

    name: str
    family: str
    setup: Callable
    run: Callable


def _record_here(workload: Workload, size: str, root: str) -> Trace:
    expect = workload.setup(root, size)
    gc.collect()
    steps = [Step(0, "setup", True, expect, -1)]
    recorder = Recorder(root).start()
    try:
        workload.run(Writer(root, recorder, steps), size)
        gc.collect()  # objects closed by the collector still write under the recorder
    finally:
        recorder.stop(check=True)
    return Trace(workload.name, recorder.initial, recorder.ops, steps)


def _inline(real: Callable, fn: Callable, items, nthreads: int) -> list:
    """``real(fn, items, 1)``: one of bcolzx's pool helpers, run in the calling thread."""
    return real(fn, items, 1)


def record(workload: Workload, size: str, workdir: str, threads: int | None = None
           ) -> Trace:
    """Run `workload` in a child process under the recorder, return its trace.

    With `threads`, the writer uses that many threads (1: one order of its
    operations, the same at every run; by default, the columns of a ctable
    are written in parallel and their operations interleave as they happen).

    A child, so that the recorder's interposition never leaks into the
    caller, and so that the writer is dead when its states are opened (its
    lock file names a process that no longer exists, as after a power cut).

    Raises
    ------
    RuntimeError
        If the workload or the recorder failed (with the child's traceback).
    """
    root = os.path.join(workdir, "root")
    os.mkdir(root)
    out = os.path.join(workdir, "trace.pickle")
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 1
        try:
            if threads is not None:
                bcolzx.set_nthreads(threads)
                if threads == 1:  # a ctable's columns are also flushed in parallel
                    _threads.run_all = functools.partial(_inline, _threads.run_all)
                    _threads.map_ordered = functools.partial(_inline, _threads.map_ordered)
            # bcolzx's random identities and index generations (secrets), and
            # the names of temporary files, the same at every run
            secrets._sysrand = random.Random(f"explorer/{workload.name}")  # type: ignore
            names = tempfile._RandomNameSequence()  # type: ignore[attr-defined]
            names._rng, names._rng_pid = random.Random(f"names/{workload.name}"), os.getpid()
            tempfile._name_sequence = names  # type: ignore[attr-defined]
            trace = _record_here(workload, size, root)
            with builtins.open(out, "wb") as f:
                pickle.dump(trace, f, protocol=pickle.HIGHEST_PROTOCOL)
            code = 0
        except BaseException:
            with builtins.open(out + ".error", "w") as f:
                f.write(traceback.format_exc())
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    if status != 0:
        detail = ""
        if os.path.exists(out + ".error"):
            with builtins.open(out + ".error") as f:
                detail = f.read()
        raise RuntimeError(f"recording {workload.name} failed (status {status}):\n{detail}")
    with builtins.open(out, "rb") as f:
        return pickle.load(f)


# -- the states a power cut may leave ----------------------------------------------------------


@dataclass(frozen=True)
class Bound:
    """Which states to generate at each crash point, of ``n`` non-durable operations.

    Attributes
    ----------
    exhaustive : int
        Every subset when ``n`` is at most this.
    pairs : int
        Otherwise all but two, when there are at most this many pairs.
    others : bool
        Otherwise also only one, and each prefix in program order.
    samples : int
        Otherwise also this many random subsets (seeded by `seed`).
    torn : bool
        Each write torn three ways, with the rest kept and with it lost.
    per_file : bool
        "All but one" leaves out, instead of each operation, each change of
        a directory and all the pending writes of each file together.

    Nothing, everything and all but one are always generated: the states
    most crash bugs need (CrashMonkey's finding: one reordering).  What is
    done to a lock file (``__lock__``: no data, ignored by readers) is kept
    or lost as a whole and never torn.
    """

    exhaustive: int = 6
    pairs: int = 400
    others: bool = True
    samples: int = 8
    torn: bool = True
    per_file: bool = False
    seed: int = 0


#: The default test run: nothing, everything, all but one change of a directory or
#: all but the pending writes of one file.
SMALL = Bound(exhaustive=1, pairs=0, others=False, samples=0, torn=False, per_file=True)
#: The published run.
FULL = Bound(exhaustive=10, pairs=2000, others=True, samples=64, torn=True)


def durable_at(ops: list) -> list[float]:
    """For each operation, the index of the first sync that makes it durable (inf: none)."""
    out = [float("inf")] * len(ops)
    pending: dict[tuple, list[int]] = {}
    needs: dict[int, int] = {}
    for i, op in enumerate(ops):
        if isinstance(op, EFFECTS):
            objs = set(objects(op))
            needs[i] = len(objs)
            for obj in objs:
                pending.setdefault(obj, []).append(i)
        elif isinstance(op, (Sync, SyncAll)):
            if isinstance(op, Sync):
                keys = [("data", op.ino), ("dir", op.ino)]
            else:
                keys = list(pending)
            for key in keys:
                for j in pending.pop(key, []):
                    needs[j] -= 1
                    if needs[j] == 0:
                        out[j] = i
    return out


def crash_points(ops: list) -> list[int]:
    """Where to cut: before each sync, after each returned call, at the end (the
    number of operations executed)."""
    points = {len(ops)}
    for i, op in enumerate(ops):
        if isinstance(op, (Sync, SyncAll)):
            points.add(i)
        elif isinstance(op, Mark):
            points.add(i + 1)
    return sorted(points)


def _lock_files(ops: list) -> set[int]:
    """The inodes of the writers' lock files (``__lock__``)."""
    return {op.ino for op in ops if isinstance(op, Link) and op.name == layout.LOCK_FILE}


def _units(ops: list, pending: list[int], per_file: bool) -> list[tuple[int, ...]]:
    """The pending operations (positions in `pending`) that are kept or lost together.

    Each operation on its own, except: everything done to a lock file
    (``__lock__``: created, written, removed), which holds no data and which
    readers ignore, is one unit; with `per_file`, the pending writes of each
    file are one unit.
    """
    locks = _lock_files(ops)
    groups: dict = {}
    for k, i in enumerate(pending):
        op = ops[i]
        ino = getattr(op, "ino", None)
        if isinstance(op, (Link, Unlink, Write, Truncate)) and ino in locks:
            key: object = ("lock", ino)
        elif per_file and isinstance(op, (Write, Truncate)):
            key = ("data", ino)
        else:
            key = k
        groups.setdefault(key, []).append(k)
    return [tuple(g) for g in groups.values()]


def _subsets(units: list[tuple[int, ...]], bound: Bound, rng: random.Random):
    """Sets of positions of pending operations, unit by unit (see the module docstring)."""
    n = len(units)

    def keep(chosen) -> tuple[int, ...]:
        return tuple(sorted(k for u in chosen for k in units[u]))

    full = tuple(range(n))
    if n <= bound.exhaustive:
        for size in range(n + 1):
            for chosen in itertools.combinations(full, size):
                yield keep(chosen)
        return
    yield ()
    yield keep(full)
    for i in range(n):
        yield keep(full[:i] + full[i + 1:])
        if bound.others:
            yield keep((i,))
            yield keep(full[:i])
    if n * (n - 1) // 2 <= bound.pairs:
        for i, j in itertools.combinations(full, 2):
            yield keep(u for u in full if u not in (i, j))
    for _ in range(bound.samples):
        yield keep(u for u in full if rng.random() < 0.5)


def _tears(op: Write, old_size: int) -> list[tuple[list, int]]:
    """Three ways to tear `op`: its first part only, its second part only, only the
    file's new size (``(pieces, size)`` for :meth:`FsTree.apply`)."""
    n = len(op.data)
    if n < 2:
        return []
    cut = n // 2 + 1  # need not be a sector boundary
    end = op.offset + n
    out = [([(0, cut)], op.offset + cut), ([(cut, n)], end)]
    if end > old_size:
        out.append(([], end))
    return out


def states_at(trace: Trace, base: FsTree, pending: list[int], bound: Bound,
              point: int) -> dict[bytes, FsTree]:
    """The distinct trees a cut at `point` may leave: `base` (the durable part) plus
    subsets of the `pending` operations, some writes torn."""
    ops = trace.ops
    rng = random.Random(f"{bound.seed}/{trace.workload}/{point}")
    out: dict[bytes, FsTree] = {}

    def add(tree: FsTree) -> None:
        out.setdefault(tree.digest(), tree)

    units = _units(ops, pending, bound.per_file)
    for subset in _subsets(units, bound, rng):
        tree = base.copy()
        for k in subset:
            tree.apply(ops[pending[k]])
        add(tree)
    if bound.torn:
        locks = _lock_files(ops)
        for k, i in enumerate(pending):
            op = ops[i]
            if not isinstance(op, Write) or op.ino in locks:  # kept or lost whole
                continue
            for keep_others in (True, False):
                tree = base.copy()
                for j in pending[:k]:
                    if keep_others:
                        tree.apply(ops[j])
                node = tree.inodes.get(op.ino)
                size = len(node.data) if node is not None and node.data is not None else 0
                for pieces, new_size in _tears(op, size):
                    torn = tree.copy()
                    torn.apply(op, pieces, new_size)
                    if keep_others:
                        for j in pending[k + 1:]:
                            torn.apply(ops[j])
                    add(torn)
    return out


# -- looking at a state ------------------------------------------------------------------------


@dataclass
class Seen:
    """What a user finds of one dataset in a state (see :func:`observe`)."""

    status: str                  # absent, error, open
    error: str = ""
    clean: bool = True           # the error is bcolzx's or an OSError
    state: State | None = None
    problems: list = field(default_factory=list)  # (outcome, detail): verify, append, query


def _extra_rows(found: State, k: int = 3) -> dict:
    out = {}
    for name in found.names:
        col = found.cols[name]
        rows = np.zeros((k, *col.shape[1:]), dtype=col.dtype)
        if col.dtype.kind in "iuf":
            rows[...] = np.arange(7, 7 + k).reshape((k,) + (1,) * (col.ndim - 1))
        elif col.dtype.kind == "S":
            rows[...] = b"ap"
        out[name] = rows
    return out


def _queries(path: str, found: State) -> list[tuple[str, str]]:
    """A ctable's queries (zone maps choose the chunks read) against NumPy."""
    if found.names == [""] or not found.length:
        return []
    t = bcolzx.open(path, mode="r")
    problems = []
    for name in found.names:
        col = found.cols[name]
        if col.ndim != 1 or col.dtype.kind not in "if":
            continue
        pivot = col[len(col) // 2].item()
        expression = f"{name} >= {pivot!r}"
        got = t.fetchwhere(expression, outcols=[name], out_flavor="numpy")[name]
        want = col[col >= pivot]
        if got.tobytes() != want.tobytes():
            problems.append(("query-wrong", f"{expression}: {len(got)} rows, "
                             f"NumPy {len(want)}"))
    return problems


def _verify(path: str, when: str) -> list[tuple[str, str]]:
    try:
        report = bcolzx.verify(path)
    except Exception as exc:  # noqa: BLE001 - reported
        return [("verify-failed", f"{when}: verify raised {type(exc).__name__}: {exc}")]
    if not report.ok:
        return [("verify-failed", f"{when}: " + "; ".join(map(str, report.problems[:3])))]
    return []


def _append(path: str, found: State) -> list[tuple[str, str]]:
    """Open in mode 'a', append, flush, close; reopen: the rows follow `found`'s."""
    extra = _extra_rows(found)
    try:
        obj = bcolzx.open(path, mode="a")
        if found.names == [""]:
            obj.append(extra[""])
        else:
            obj.append([extra[n] for n in found.names])
        obj.flush()
        obj.close()
        del obj
        after = read_state(path)
    except Exception as exc:  # noqa: BLE001 - reported
        return [("append-failed", f"{type(exc).__name__}: {exc}")]
    want = State({n: np.concatenate([found.cols[n], extra[n]]) for n in found.names},
                 found.names, found.attrs)
    if not after.same_as(want):
        return [("append-failed", f"after appending 3 rows: {after.length} rows, names "
                 f"{after.names}; expected {want.length} rows")]
    return []


def observe(path: str) -> Seen:
    """Open the dataset at `path` (mode 'r'), read everything, verify, query, then
    append in mode 'a' and read again."""
    if not os.path.lexists(path):
        return Seen("absent")
    try:
        found = read_state(path)
    except Exception as exc:  # noqa: BLE001 - judged
        return Seen("error", f"{type(exc).__name__}: {exc}",
                    isinstance(exc, (BcolzxError, OSError)))
    seen = Seen("open", state=found)
    seen.problems += _verify(path, "as found")
    try:
        seen.problems += _queries(path, found)
    except Exception as exc:  # noqa: BLE001 - reported
        seen.problems.append(("query-wrong", f"{type(exc).__name__}: {exc}"))
    seen.problems += _append(path, found)
    return seen


# -- judging -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Oracle:
    """What may be found of one dataset after a cut.

    Attributes
    ----------
    required : State or None
        The state the last durable call left (None: not created yet).
    candidates : tuple of State
        That state and those of the calls after it, to the end of the group
        in progress (the next durable call).
    """

    required: State | None
    candidates: tuple


def oracle(trace: Trace, point: int, subject: str) -> Oracle:
    """The :class:`Oracle` of `subject` for a cut after ``ops[:point]``."""
    returned = [s for s in trace.steps if s.at < point]
    last = max((s for s in returned if s.durable), key=lambda s: s.number)
    group = []
    for step in trace.steps[last.number:]:
        group.append(step)
        if step.at >= point and step.durable:
            break
    cands = tuple(s.expect[subject] for s in group
                  if subject in s.expect and s.expect[subject] is not None)
    return Oracle(last.expect.get(subject), cands)


def _rewrites(candidates: tuple) -> dict:
    """Rows a call rewrote in place (it kept the length and changed them): each may
    hold any of its values (``{column: {row: {row bytes}}}``, for crash.matches)."""
    out: dict = {}
    for a, b in zip(candidates, candidates[1:]):
        for name in set(a.names) & set(b.names):
            x, y = a.cols[name], b.cols[name]
            if x.shape != y.shape or x.dtype != y.dtype:
                continue
            rows = out.setdefault(name, {})
            if not len(x):
                continue
            xb = np.ascontiguousarray(x).reshape(len(x), -1).view(np.uint8)
            yb = np.ascontiguousarray(y).reshape(len(y), -1).view(np.uint8)
            for r in np.flatnonzero((xb != yb).any(axis=1)):
                rows.setdefault(int(r), set()).update((x[r:r + 1].tobytes(),
                                                       y[r:r + 1].tobytes()))
    # a row rewritten by one call may hold its value of any later candidate too
    for name, rows in out.items():
        for r in rows:
            for c in candidates:
                if name in c.cols and r < len(c.cols[name]):
                    rows[r].add(c.cols[name][r:r + 1].tobytes())
    return out


def _is_prefix(found: State, cand: State) -> bool:
    if found.names != cand.names:
        return False
    for name in found.names:
        f, c = found.cols[name], cand.cols[name]
        if f.dtype != c.dtype or f.shape[1:] != c.shape[1:] or len(f) > len(c) or \
                f.tobytes() != c[:len(f)].tobytes():
            return False
    for key, attrs in found.attrs.items():
        want = cand.attrs.get(key, {})
        if any(k not in want or want[k] != v for k, v in attrs.items()):
            return False
    return True


def judge(seen: Seen, orc: Oracle) -> tuple[str, str]:
    """(outcome, detail): ``ok`` or what went wrong (lost, unopenable, wrong,
    verify-failed, append-failed, query-wrong, unclean-error)."""
    if orc.required is None:  # the dataset's creation had not returned
        if seen.status == "absent":
            return "ok", ""
        if seen.status == "error":
            return ("ok", "") if seen.clean else ("unclean-error", seen.error)
        if not any(_is_prefix(seen.state, c) for c in orc.candidates):
            return "wrong", f"{seen.state.length} rows, names {seen.state.names}: not a " \
                            "prefix of any state the writer made"
        return seen.problems[0] if seen.problems else ("ok", "")
    if seen.status == "absent":
        return "lost", "the dataset is gone"
    if seen.status == "error":
        return "unopenable", seen.error
    found = seen.state
    per_column = found.names != [""]
    if not crash.matches(found, list(orc.candidates), per_column, _rewrites(orc.candidates)):
        req = orc.required
        lost = found.length < min(c.length for c in orc.candidates) or \
            not set(req.names) <= set(found.names) | {n for c in orc.candidates
                                                       for n in set(req.names) - set(c.names)}
        return ("lost" if lost else "wrong"), (
            f"found {found.length} rows, columns {found.names}, attrs {found.attrs}; "
            "expected one of " + ", ".join(f"{c.length} rows {c.names} {c.attrs}"
                                            for c in orc.candidates))
    return seen.problems[0] if seen.problems else ("ok", "")


# -- a campaign --------------------------------------------------------------------------------


@dataclass
class Failure:
    workload: str
    point: int
    subject: str
    outcome: str
    detail: str
    last_op: str


@dataclass
class Tally:
    """Figures of an exploration, per workload."""

    ops: Counter = field(default_factory=Counter)
    points: Counter = field(default_factory=Counter)
    states: Counter = field(default_factory=Counter)     # distinct per crash point
    trees: Counter = field(default_factory=Counter)      # distinct datasets opened
    outcomes: Counter = field(default_factory=Counter)   # (workload, outcome) per state
    families: dict = field(default_factory=dict)
    failures: list = field(default_factory=list)
    seconds: float = 0.0

    def bad(self) -> int:
        return sum(n for (_, o), n in self.outcomes.items() if o != "ok")


def _scratch(workdir: str) -> str:
    """Where states are written: memory (/dev/shm) when there is some, as the states
    are thrown away and their fsyncs then cost nothing."""
    shm = "/dev/shm"
    if os.path.isdir(shm) and os.access(shm, os.W_OK):
        return tempfile.mkdtemp(prefix="bcolzx-explorer-", dir=shm)
    return tempfile.mkdtemp(prefix="states-", dir=workdir)


def explore(trace: Trace, workdir: str, bound: Bound, tally: Tally,
            max_failures: int = 20) -> None:
    """Generate, open and judge every state of `trace` (see the module docstring)."""
    ops = trace.ops
    durable = durable_at(ops)
    subjects = trace.subjects
    seen_cache: dict[tuple, Seen] = {}  # (dataset, digest of its directory) -> Seen
    scratch = _scratch(workdir)
    base = trace.initial.copy()
    applied = set()
    counter = itertools.count()
    name = trace.workload
    tally.ops[name] += len(ops)
    for point in crash_points(ops):
        # the durable part, in program order (per file and per directory, what is
        # durable is a prefix of what was done to it: applying it first is exact)
        for i in range(point):
            if durable[i] < point and i not in applied and isinstance(ops[i], EFFECTS):
                base.apply(ops[i])
                applied.add(i)
        pending = [i for i in range(point) if isinstance(ops[i], EFFECTS) and
                   durable[i] >= point]
        trees = states_at(trace, base, pending, bound, point)
        tally.points[name] += 1
        tally.states[name] += len(trees)
        oracles = {s: oracle(trace, point, s) for s in subjects}
        for tree in trees.values():
            worst = ("ok", "", "")
            for s in subjects:
                part = tree.subtree(s)
                key = (s, None if part is None else part.digest())
                seen = seen_cache.get(key)
                if seen is None:
                    number = next(counter)
                    if number % 64 == 63:
                        gc.collect()  # datasets left for the collector release their locks
                    tally.trees[name] += 1
                    where = os.path.join(scratch, f"state{number}")
                    os.mkdir(where)
                    try:
                        if part is not None:
                            part.materialise(os.path.join(where, "dataset"))
                        seen = observe(os.path.join(where, "dataset"))
                    finally:
                        shutil.rmtree(where, ignore_errors=True)
                    seen_cache[key] = seen
                outcome, detail = judge(seen, oracles[s])
                if outcome != "ok" and worst[0] == "ok":
                    worst = (outcome, detail, s)
            tally.outcomes[(name, worst[0])] += 1
            if worst[0] != "ok" and len(tally.failures) < max_failures:
                last = describe(ops[point - 1], tree.paths()) if point else "(start)"
                tally.failures.append(Failure(name, point, worst[2], worst[0], worst[1], last))
    shutil.rmtree(scratch, ignore_errors=True)


def run(workloads: list[Workload], workdir: str, size: str = "small",
        bound: Bound = SMALL, progress: Callable | None = None,
        threads: int | None = None) -> Tally:
    """Record (with `threads`, see :func:`record`) and explore each workload; the
    figures (`progress` is called with the tally and the workload's name after each)."""
    tally = Tally()
    start = time.monotonic()
    for k, workload in enumerate(workloads):
        where = os.path.join(workdir, f"{k}-{workload.name}")
        os.mkdir(where)
        trace = record(workload, size, where, threads)
        tally.families[workload.name] = workload.family
        explore(trace, where, bound, tally)
        shutil.rmtree(where, ignore_errors=True)
        tally.seconds = time.monotonic() - start
        if progress is not None:
            progress(tally, workload.name)
    return tally


def summary(tally: Tally) -> dict:
    """Plain figures (JSON-serialisable) and a table for docs/reliability.md."""
    rows = []
    outcomes = sorted({o for _, o in tally.outcomes})
    for name in tally.points:
        counts = {o: tally.outcomes[(name, o)] for o in outcomes}
        rows.append({"workload": name, "family": tally.families.get(name, ""),
                     "operations": tally.ops[name], "crash_points": tally.points[name],
                     "states": tally.states[name], "distinct_trees": tally.trees[name],
                     "bad": sum(v for o, v in counts.items() if o != "ok"), **counts})
    total = {k: sum(r[k] for r in rows) for k in ("operations", "crash_points", "states",
                                                   "distinct_trees", "bad")}
    lines = ["| workload | operations | crash points | states | distinct trees | bad |",
             "|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['workload']} | {r['operations']:,} | {r['crash_points']:,} | "
                     f"{r['states']:,} | {r['distinct_trees']:,} | {r['bad']} |")
    lines.append(f"| **total** | **{total['operations']:,}** | **{total['crash_points']:,}** "
                 f"| **{total['states']:,}** | **{total['distinct_trees']:,}** | "
                 f"**{total['bad']}** |")
    return {"workloads": rows, "total": total, "seconds": round(tally.seconds, 1),
            "failures": [f"{f.workload} @ {f.point} ({f.last_op}) {f.subject}: {f.outcome}: "
                         f"{f.detail[:300]}" for f in tally.failures],
            "table": "\n".join(lines)}


def main(argv: list[str] | None = None) -> int:
    """``python -m tests.reliability.explorer [--size full] [--bound full]``: explore
    every workload, print the table and a last line of JSON; exit status 1 when a
    state lost, spoiled or could not open flushed data."""
    import argparse
    import sys

    from .explorer_workloads import WORKLOADS

    parser = argparse.ArgumentParser(description=main.__doc__.splitlines()[0])
    parser.add_argument("--size", choices=("small", "full"), default="full")
    parser.add_argument("--bound", choices=("small", "full"), default="full")
    parser.add_argument("--only", action="append", help="a workload's name (repeatable)")
    parser.add_argument("--threads", type=int, default=None,
                        help="the writers' threads (1: the same operations at every run)")
    args = parser.parse_args(argv)
    workloads = [w for w in WORKLOADS if not args.only or w.name in args.only]

    def progress(tally: Tally, name: str) -> None:
        print(f"{name}: {tally.points[name]} crash points, {tally.states[name]} states, "
              f"{tally.trees[name]} datasets opened, "
              f"{sum(n for (w, o), n in tally.outcomes.items() if w == name and o != 'ok')} "
              f"bad ({tally.seconds:.0f} s)", file=sys.stderr, flush=True)

    with tempfile.TemporaryDirectory(prefix="bcolzx-explorer-") as workdir:
        tally = run(workloads, workdir, args.size,
                    FULL if args.bound == "full" else SMALL, progress, args.threads)
    result = summary(tally)
    print(result["table"])
    for line in result["failures"]:
        print(line)
    print(json.dumps({k: v for k, v in result.items() if k != "table"}))
    return 1 if tally.bad() else 0


if __name__ == "__main__":
    raise SystemExit(main())


__all__ = ["Step", "Trace", "Writer", "Workload", "Bound", "SMALL", "FULL", "record",
           "durable_at", "crash_points", "states_at", "observe", "oracle", "judge", "explore",
           "run", "summary", "Tally", "ROOT"]
