"""Kill writers with SIGKILL at random instants and check what they leave behind.

:class:`Zygote` runs ``zygote.py`` (a fork server that has imported bcolzx
once) so that each writer starts in a millisecond; :func:`campaign` then,
kill after kill, starts a writer on the same dataset, lets it run for a
random time, kills it with SIGKILL and checks the dataset:

1. it opens read-only and every value can be read (else ``unreadable``);
2. :func:`bcolzx.verify` finds no problem (else ``verify-failed``);
3. its content is one the writer may have left (else ``wrong``): the state
   the NumPy model of :mod:`crashplan` had after the last group whose flush
   returned, or after any operation of the group the writer was in.  For a
   ctable each column is checked on its own (a ctable's columns commit one
   after the other): each holds the first ``len(table)`` rows of one of
   those states, and the table's length is the length of one of them.

Rows the writer flushed are therefore never lost and never wrong.  The
content found becomes the model's starting point for the next writer.
SIGKILL ends the process, not the machine: data the kernel accepted is not
lost, so this tests the ordering of writes and renames, not fsync
(docs/reliability.md says what else covers power loss).
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

import bcolzx

from . import crashplan
from .crashplan import State

HERE = os.path.dirname(os.path.abspath(__file__))


class Zygote:
    """The fork server, started in `cwd` with the bcolzx under test importable."""

    def __init__(self, cwd: str):
        env = dict(os.environ)
        env["PYTHONPATH"] = os.path.dirname(os.path.dirname(os.path.abspath(bcolzx.__file__)))
        self.proc = subprocess.Popen(
            [sys.executable, os.path.join(HERE, "zygote.py")], cwd=cwd, env=env,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline().strip()
        if line != "ready":
            raise RuntimeError(f"the crash harness's fork server did not start ({line!r})")

    def spawn(self, **request) -> int:
        """Fork a writer; its process id."""
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        return int(self.proc.stdout.readline())

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=30)

    def __enter__(self) -> "Zygote":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _gone(pid: int, timeout: float = 30.0) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.001)
    raise RuntimeError(f"writer {pid} did not die")


def _run_and_kill(zygote: Zygote, delay: float, **request) -> tuple[int | None, bool, str]:
    """Fork a writer, SIGKILL it after `delay` seconds; what its log says (_parse_log)."""
    pid = zygote.spawn(**request)
    time.sleep(delay)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:  # it had finished
        pass
    _gone(pid)
    return _parse_log(request["log"])


def _parse_log(path: str) -> tuple[int | None, bool, str]:
    """(last group begun, whether its flush returned, writer error text)."""
    begun, done, error = None, False, ""
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                tag, _, rest = line.rstrip("\n").partition(" ")
                if tag == "B":
                    begun, done = int(rest), False
                elif tag == "D":
                    done = True
                elif tag == "E":
                    error = rest
    return begun, done, error


def _candidates(base: State, family: str, seed: int, begun: int | None,
                done: bool) -> tuple[list[State], dict]:
    """The states the dataset may be in after the kill, and the values the group in
    progress wrote over existing rows (``{column: {row: [values]}}``)."""
    if begun is None:
        return [base], {}
    groups = crashplan.replay(base, family, seed, begun + 1)
    state = base
    for ops in groups[:-1]:
        state = crashplan.prefix_states(state, ops)[-1]
    states = crashplan.prefix_states(state, groups[-1])
    if done:
        return states[-1:], {}
    return states, crashplan.rewritten(state, groups[-1])


def _same_or_rewritten(found: np.ndarray, want: np.ndarray, rewrites: dict) -> bool:
    """`found` equals `want` except on rows rewritten by the group in progress, which
    may hold any value written to them (docs/format/README.md §3: "for rows
    rewritten since, either value")."""
    if found.dtype != want.dtype or found.shape != want.shape:
        return False
    if found.tobytes() == want.tobytes():
        return True
    row_bytes = found[:1].nbytes if len(found) else 0
    fb, wb = found.tobytes(), want.tobytes()
    for r in range(len(found)):
        a = fb[r * row_bytes:(r + 1) * row_bytes]
        if a != wb[r * row_bytes:(r + 1) * row_bytes] and a not in rewrites.get(r, ()):
            return False
    return True


def matches(found: State, candidates: list[State], per_column: bool,
            rewrites: dict | None = None) -> bool:
    """Whether `found` is a state the writer may have left (see the module docstring)."""
    rewrites = rewrites or {}
    n = found.length
    same_names = [c for c in candidates if c.names == found.names]
    if not any(c.length == n for c in same_names):
        return False
    if found.attrs.get("") not in [c.attrs.get("") for c in candidates]:
        return False
    for name in found.names:
        if found.attrs.get(name) not in [c.attrs.get(name) for c in same_names]:
            return False
    if not per_column:
        return any(c.length == n and all(
            _same_or_rewritten(found.cols[m], c.cols[m], rewrites.get(m, {}))
            for m in found.names) for c in same_names)
    for name in found.names:
        if not any(_same_or_rewritten(found.cols[name], c.cols[name][:n], rewrites.get(name, {}))
                   for c in same_names if len(c.cols[name]) >= n):
            return False
    return True


@dataclass
class Kill:
    """What one kill left."""

    family: str
    seed: int
    delay: float
    groups_done: int
    outcome: str          # ok, unreadable, verify-failed, wrong, writer-error
    detail: str = ""
    midway: bool = False  # killed inside a group (begun, its flush not returned)


@dataclass
class CrashTally:
    """Outcomes of a crash campaign."""

    outcomes: Counter = field(default_factory=Counter)
    groups: int = 0          # groups of operations completed by the writers
    midway: Counter = field(default_factory=Counter)  # per family: kills inside a group
    failures: list = field(default_factory=list)

    def add(self, k: Kill) -> None:
        self.outcomes[(k.family, k.outcome)] += 1
        self.groups += k.groups_done
        self.midway[k.family] += k.midway
        if k.outcome != "ok":
            self.failures.append(k)

    @property
    def kills(self) -> int:
        return sum(self.outcomes.values())


def _inspect(rootdir: str, candidates: list[State], per_column: bool,
             rewrites: dict | None = None) -> tuple[str, str, State | None]:
    try:
        found = crashplan.read_state(rootdir)
    except Exception as exc:  # noqa: BLE001 - reported
        return "unreadable", f"{type(exc).__name__}: {exc}", None
    try:
        report = bcolzx.verify(rootdir)
    except Exception as exc:  # noqa: BLE001 - reported
        return "verify-failed", f"verify raised {type(exc).__name__}: {exc}", found
    if not report.ok:
        return "verify-failed", str(report), found
    if not matches(found, candidates, per_column, rewrites):
        return "wrong", f"length {found.length}, names {found.names}; candidates " + ", ".join(
            f"{c.length}/{c.names}" for c in candidates), found
    return "ok", "", found


def campaign(workdir: str, family: str, kills: int, seed: int = 0,
             max_delay: float = 0.25, tally: CrashTally | None = None,
             zygote: Zygote | None = None) -> CrashTally:
    """`kills` writers of `family` killed at random instants on one dataset.

    The dataset is created as `workdir/family`; for the ``legacy`` family,
    `workdir/legacy` must hold a writable copy of a legacy int32 carray.
    """
    tally = tally or CrashTally()
    rng = random.Random(seed)
    rootdir = os.path.join(workdir, family)
    base = crashplan.create(rootdir, family)
    own = zygote is None
    zygote = zygote or Zygote(workdir)
    try:
        for i in range(kills):
            wseed = seed * 1_000_003 + i
            log = os.path.join(workdir, f"{family}.{i}.log")
            delay = rng.random() * max_delay
            begun, done, error = _run_and_kill(zygote, delay, rootdir=rootdir, family=family,
                                               seed=wseed, log=log)
            if os.path.exists(log):
                os.unlink(log)
            groups_done = (begun or 0) + (1 if done else 0) if begun is not None else 0
            if error:
                tally.add(Kill(family, wseed, delay, groups_done, "writer-error", error))
                base = crashplan.read_state(rootdir)
                continue
            candidates, rewrites = _candidates(base, family, wseed, begun, done)
            outcome, detail, found = _inspect(rootdir, candidates, family == "ctable", rewrites)
            tally.add(Kill(family, wseed, delay, groups_done, outcome, detail,
                           begun is not None and not done))
            if found is None:
                break  # nothing more can be learnt from this dataset
            base = found
    finally:
        if own:
            zygote.close()
    return tally


def convert_campaign(workdir: str, source: str, kills: int, seed: int = 0,
                     max_delay: float = 0.15, tally: CrashTally | None = None,
                     zygote: Zygote | None = None) -> CrashTally:
    """`kills` in-place conversions of copies of the legacy dataset `source`, each
    killed at a random instant: the dataset must be intact, legacy or converted."""
    from .datasets import copy_legacy

    tally = tally or CrashTally()
    rng = random.Random(seed)
    want = crashplan.read_state(source)
    own = zygote is None
    zygote = zygote or Zygote(workdir)
    try:
        for i in range(kills):
            case = os.path.join(workdir, f"convert{i}")
            os.mkdir(case)
            rootdir = os.path.join(case, "ds")
            copy_legacy(os.path.basename(source), rootdir)
            log = os.path.join(workdir, f"convert.{i}.log")
            delay = rng.random() * max_delay
            begun, done, error = _run_and_kill(zygote, delay, rootdir=rootdir,
                                               family="convert", seed=0, log=log)
            if error:
                tally.add(Kill("convert", i, delay, 0, "writer-error", error))
                continue
            outcome, detail, _ = _inspect(rootdir, [want], False)
            if outcome == "ok" and done and bcolzx.verify(rootdir).format != "bcolzx":
                outcome, detail = "wrong", "converted, yet still in the legacy format"
            tally.add(Kill("convert", i, delay, int(done), outcome, detail,
                           begun is not None and not done))
    finally:
        if own:
            zygote.close()
    return tally


def summary(tally: CrashTally) -> dict:
    """Plain figures of a campaign, for the report and the docs."""
    out = {"kills": tally.kills, "groups_completed": tally.groups,
           "killed_inside_a_group": dict(tally.midway)}
    for (family, outcome), n in sorted(tally.outcomes.items()):
        out.setdefault(family, {})[outcome] = n
    out["failures"] = [f"{k.family} seed {k.seed} delay {k.delay:.3f}: {k.outcome}: "
                       f"{k.detail[:500]}" for k in tally.failures[:20]]
    return out


__all__ = ["Zygote", "campaign", "convert_campaign", "summary", "matches"]
