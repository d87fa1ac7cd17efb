"""Running the benchmark: workloads, timing, peak memory in child processes.

:func:`run` takes a :class:`Config` and returns a plain dict (the JSON
document): every measurement is one record, with the size, data shape,
variant, system and workload it belongs to.
"""

from __future__ import annotations

import gc
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from dataclasses import asdict, dataclass, field
from typing import Callable

import numpy as np

from bcolzx.bench import data as D  # noqa: N812 - short: used in long expressions
from bcolzx.bench.adapter import disk_usage, have_pandas, rmtree, sync_tree
from bcolzx.bench.systems import ALIASES, SYSTEMS

SCHEMA = 1

#: Every workload, in the order they run and are reported.
WORKLOADS = ("build-mem", "build-disk", "append", "open", "read", "slice", "hot-slice",
             "getitem", "sum", "ct-build", "ct-open", "ct-query-sel", "ct-query-and",
             "ct-query-broad", "ct-todf")
ARRAY_WORKLOADS = WORKLOADS[:9]
TABLE_WORKLOADS = WORKLOADS[9:]

#: What each workload does (for the reports).
WORKLOAD_DOC = {
    "build-mem": "build from a NumPy array, in memory",
    "build-disk": "build from a NumPy array, on disk (closed and fsynced)",
    "append": "append the data in batches to a new on-disk array",
    "open": "open the on-disk array (and read its length), then close it",
    "read": "read everything back into a new NumPy array",
    "slice": "random slices of 1000 items",
    "hot-slice": "random slices of 1000 items within a twentieth of the array (repeated "
                 "reads of hot chunks)",
    "getitem": "random single items",
    "sum": "sum of all items",
    "ct-build": "build a 3-column table on disk (NumPy/pandas: in memory)",
    "ct-open": "open the on-disk table (and read its length), then close it",
    "ct-query-sel": "selective query, (f0 > a) & (f0 < b), ~0.2% of rows, sorted column",
    "ct-query-and": "compound query, (f0 > a) & (f0 < b) & (f2 < 500), ~0.1% of rows: the "
                    "selective range and an unsorted column",
    "ct-query-broad": f"broad query, {D.BROAD_QUERY}, ~5% of rows",
    "ct-todf": "the table as a pandas DataFrame",
}

#: Unit shown for each workload: throughput (MB/s), latency (µs) or time (ms).
UNIT = {w: "MB/s" for w in WORKLOADS}
UNIT.update({"open": "µs", "slice": "µs", "hot-slice": "µs", "getitem": "µs",
             "ct-open": "µs", "ct-query-sel": "ms", "ct-query-and": "ms",
             "ct-query-broad": "ms"})

#: Workloads whose memory should stay flat as the data grows (streaming).
STREAMING = ("build-disk", "append", "open", "slice", "hot-slice", "getitem", "sum",
             "ct-build", "ct-open", "ct-query-sel", "ct-query-and")

#: Workloads that read a dataset built beforehand.
NEEDS_DATASET = ("open", "read", "slice", "hot-slice", "getitem", "sum", "ct-open",
                 "ct-query-sel", "ct-query-and", "ct-query-broad", "ct-todf")

#: Workloads of the 1-vs-N-threads experiment.
THREAD_WORKLOADS = ("build-disk", "read", "sum", "ct-query-broad")

GROUPS = {"array": ARRAY_WORKLOADS, "table": TABLE_WORKLOADS, "all": WORKLOADS,
          "ctable": TABLE_WORKLOADS, "build": ("build-mem", "build-disk", "ct-build"),
          "query": ("ct-query-sel", "ct-query-and", "ct-query-broad")}


@dataclass
class Config:
    """What to run (the command-line options; see ``bcolzx bench --help``)."""

    sizes: list = field(default_factory=lambda: [1_000_000])
    shapes: list = field(default_factory=lambda: list(D.SHAPES))
    workloads: list = field(default_factory=lambda: list(WORKLOADS))
    systems: list = field(default_factory=lambda: list(SYSTEMS))
    variants: list = field(default_factory=lambda: ["same"])
    repeat: int = 3
    budget: float = 0.5
    latency_budget: float = 0.25
    max_calls: int = 5000
    nthreads: int = 2
    chunk_bytes: int = 1 << 20
    batch: int = 100_000
    slice_width: int = 1000
    memory: bool = False
    thread_scaling: bool = False
    threads_size: int | None = None
    durable: bool = True
    seed: int = 0
    workdir: str | None = None
    keep: bool = False


def parse_size(text: str) -> int:
    """``'1e6'``, ``'2_000_000'`` or ``'5M'`` as an int.

    Raises
    ------
    ValueError
        For anything else, or a size below 1000.
    """
    t = str(text).strip().lower().replace("_", "").replace(",", "")
    mult = 1
    for suffix, m in (("k", 10**3), ("m", 10**6), ("g", 10**9), ("b", 10**9)):
        if t.endswith(suffix):
            t, mult = t[:-1], m
            break
    value = float(t) * mult
    if not value.is_integer() or value < 1000:
        raise ValueError(f"size must be a whole number of items >= 1000, not {text!r}")
    return int(value)


def expand(names, choices, groups=None, what="name") -> list:
    """Expand a comma list (or list) of names and group aliases, keeping order.

    Raises
    ------
    ValueError
        For an unknown name.
    """
    if isinstance(names, str):
        names = [x.strip() for x in names.split(",")]
    out = []
    for name in names:
        if not name:
            continue
        if groups and name in groups:
            items = groups[name]
        elif name in choices:
            items = (name,)
        else:
            raise ValueError(f"unknown {what} {name!r}; choose from "
                             f"{', '.join(list(choices) + list(groups or ()))}")
        out.extend(i for i in items if i not in out)
    return out


def machine_info() -> dict:
    """The machine and software the run happens on."""
    info = {"platform": platform.platform(), "python": platform.python_version(),
            "numpy": np.__version__, "cpus": os.cpu_count()}
    try:
        info["cpus_usable"] = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        pass
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    info["cpu"] = line.split(":", 1)[1].strip()
                    break
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal"):
                    info["mem_total_gb"] = round(int(line.split()[1]) / 2**20, 1)
                    break
    except OSError:  # pragma: no cover - not Linux
        info["cpu"] = platform.processor()
    import bcolzx
    info["bcolzx"] = bcolzx.__version__
    info["bcolzx_commit"] = source_commit(bcolzx.__version__)
    info["blosc2_c"] = bcolzx.blosc_version()[0]
    info["bcolzx_chunk_cache_bytes"] = bcolzx.defaults.chunk_cache_bytes
    return info


def _git(root: str, *words: str) -> str | None:
    try:
        out = subprocess.run(["git", "-C", root, *words], capture_output=True, text=True,
                             timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):  # no git, or it hangs
        return None
    return out.stdout if out.returncode == 0 else None


def source_commit(version: str) -> str | None:
    """The git commit of the bcolzx being run: ``'<sha>'``, ``'<sha>-dirty'`` when the
    tree has uncommitted changes to tracked files, or None when unknown.

    Run from a git checkout of bcolzx, git says; from an installed build, the
    commit setuptools-scm put in the version (``0.1.0.dev154+g41e8d6d``, with
    ``-dirty`` for a ``.dYYYYMMDD`` suffix); a release version names no commit.
    """
    root = _bcolzx_root()
    top = _git(root, "rev-parse", "--show-toplevel", "HEAD")
    if top is not None and len(top.split()) == 2:
        where, sha = top.split()
        if os.path.realpath(where) == os.path.realpath(root):
            status = _git(root, "status", "--porcelain", "--untracked-files=no")
            return sha + ("-dirty" if status else "") if status is not None else sha
    parts = version.partition("+")[2].split(".")
    dirty = any(p[:1] == "d" and p[1:].isdigit() for p in parts)
    for part in parts:
        if len(part) > 1 and part[0] == "g" and all(c in "0123456789abcdef" for c in part[1:]):
            return part[1:] + ("-dirty" if dirty else "")
    return None


# -------------------------------------------------------------------- timing


#: A figure whose repeats spread more than this (range over median) is flagged unstable.
UNSTABLE_SPREAD = 0.20


def spread(samples) -> float | None:
    """How far repeated measurements of one figure disagree: (max - min) / median.

    0.1 means the repeats lie within 10% of their median's size of each other.
    None for fewer than two samples (nothing to compare).
    """
    xs = [float(x) for x in samples]
    if len(xs) < 2:
        return None
    mid = float(np.median(xs))
    return (max(xs) - min(xs)) / mid if mid > 0 else None


def timed(fn: Callable, repeat: int, budget: float, setup: Callable | None = None,
          check: Callable | None = None) -> dict:
    """Best wall time of up to `repeat` calls of ``fn()``.

    Stops repeating once the calls so far took more than `budget` seconds.
    ``setup()`` runs untimed before each call; ``check(result)`` after the
    first one (it raises on a wrong result).

    Returns
    -------
    dict
        ``seconds`` (the best time), ``runs`` (the number of calls) and
        ``spread``: :func:`spread` of the calls' times, leaving out the first
        (which warms caches and allocators) when there are three or more;
        None for one call.
    """
    times: list[float] = []
    gc.collect(1)  # the young generations; a full collection (~20 ms) runs once a group
    enabled = gc.isenabled()
    try:
        while len(times) < max(1, repeat):
            if setup is not None:
                setup()
            gc.disable()  # as timeit does: no collection pause inside the timing
            t0 = time.perf_counter()
            out = fn()
            dt = time.perf_counter() - t0
            if enabled:
                gc.enable()
            if not times and check is not None:
                check(out)
            del out
            times.append(dt)
            if sum(times) > budget:
                break
    finally:
        if enabled:
            gc.enable()
    return {"seconds": min(times), "runs": len(times),
            "spread": spread(times[1:] if len(times) >= 3 else times)}


def per_call(fn: Callable, args, budget: float, max_calls: int,
             check: Callable | None = None) -> dict:
    """Time ``fn(x)`` for each x of `args`, one by one, within `budget` seconds.

    The first call is a warm-up (checked with ``check(x, result)``), untimed.

    Returns
    -------
    dict
        ``seconds`` (the median), ``median_us`` and ``mean_us`` per call,
        ``calls`` (timed), and ``spread``: :func:`spread` of the medians of
        the three consecutive thirds of the calls, as if the measurement had
        been repeated three times (None below six calls).
    """
    args = list(args)
    out = fn(args[0])
    if check is not None:
        check(args[0], out)
    del out
    pc = time.perf_counter_ns
    deadline = pc() + int(budget * 1e9)
    times = []
    enabled = gc.isenabled()
    gc.disable()
    try:
        for x in args[1:max_calls + 1]:
            t0 = pc()
            fn(x)
            t1 = pc()
            times.append(t1 - t0)
            if t1 > deadline and len(times) >= 5:
                break
    finally:
        if enabled:
            gc.enable()
    t = np.array(times, dtype=np.float64) / 1e3
    med = float(np.median(t))
    thirds = [float(np.median(p)) for p in np.array_split(t, 3)] if len(t) >= 6 else []
    return {"seconds": med / 1e6, "median_us": med, "mean_us": float(t.mean()),
            "calls": len(times), "spread": spread(thirds)}


# ----------------------------------------------------------------- workloads


class Group:
    """The datasets of one (size, variant, data shape) for a set of systems.

    Builds a system's on-disk dataset on first need (untimed, unless the
    ``build-disk`` workload already did), and keeps the opened handles.
    """

    def __init__(self, cfg: Config, systems: list, n: int, variant: str, shape: str,
                 base: str) -> None:
        self.cfg, self.systems, self.n, self.variant, self.shape = cfg, systems, n, variant, shape
        self.base = base
        os.makedirs(base, exist_ok=True)
        self.table = shape == "table"
        self.data = D.make_table(n, cfg.seed) if self.table else D.make_array(shape, n, cfg.seed)
        self.built: set = set()
        self.handles: dict = {}
        rng = np.random.default_rng(cfg.seed + 7)
        self.items = rng.integers(0, n, size=cfg.max_calls + 1).tolist()
        w = min(cfg.slice_width, n)
        self.starts = rng.integers(0, n - w + 1, size=cfg.max_calls + 1).tolist()
        lo, hi = D.hot_window(n, w)
        self.hot_starts = rng.integers(lo, hi - w + 1, size=cfg.max_calls + 1).tolist()

    @property
    def nbytes(self) -> int:
        if self.table:
            return sum(v.nbytes for v in self.data.values())
        return self.data.nbytes

    def path(self, s, tag: str = "") -> str:
        return os.path.join(self.base, s.key + tag + (s.suffix if not self.table else ""))

    def write(self, s, path: str, fn: Callable) -> None:
        """Run a write `fn` then make it durable (as bcolzx's commits are)."""
        fn()
        if self.cfg.durable and not s.self_durable and s.where != "memory":
            sync_tree(path)

    def ensure_built(self, s) -> None:
        if s.key in self.built or s.where == "memory":
            return
        path = self.path(s)
        rmtree(path)
        if self.table:
            s.ct_build(self.data, path)
        else:
            s.build_disk(self.data, path)
        self.built.add(s.key)

    def handle(self, s):
        """The dataset the read workloads use (on disk, reopened; or in memory)."""
        if s.key not in self.handles:
            if s.where == "memory":
                h = s.memory_handle(self.data, self.table)
            else:
                self.ensure_built(s)
                h = s.ct_open(self.path(s)) if self.table else s.open(self.path(s))
            self.handles[s.key] = h
        return self.handles[s.key]

    def close(self) -> None:
        for key, h in list(self.handles.items()):
            s = next((x for x in self.systems if x.key == key), None)
            if s is not None and s.where != "memory":
                try:
                    s.close(h)
                except Exception:  # noqa: BLE001 - cleaning up after an error
                    pass
        self.handles.clear()
        gc.collect()
        if not self.cfg.keep:
            shutil.rmtree(self.base, ignore_errors=True)


def _check_array(expect: np.ndarray, what: str):
    def check(out):
        got = np.asarray(out)
        if got.shape != expect.shape or not np.array_equal(got, expect):
            raise AssertionError(f"{what}: wrong data read back")
    return check


def _check_sum(expect):
    def check(out):
        if isinstance(expect, (np.integer, int)):
            ok = int(out) == int(expect)
        else:
            ok = np.isclose(float(out), float(expect), rtol=1e-9)
        if not ok:
            raise AssertionError(f"sum: {out!r} != {expect!r}")
    return check


def _open_latency(g: Group, s, wl: str, opener, length, closer) -> dict:
    """Latency of opening `s`'s dataset (built first if need be), reading its
    length and closing it."""
    g.ensure_built(s)
    path, n = g.path(s), g.n

    def op(_):
        h = opener(path)
        k = length(h)
        closer(h)
        return k

    def check(_, k):
        if k != n:
            raise AssertionError(f"{wl}: length {k} != {n}")
    return per_call(op, range(g.cfg.max_calls + 1), g.cfg.latency_budget, g.cfg.max_calls,
                    check)


def _query_of(wl: str, n: int) -> str:
    """The expression of a query workload on `n` rows."""
    if wl == "ct-query-sel":
        return D.selective_query(n)
    return D.compound_query(n) if wl == "ct-query-and" else D.BROAD_QUERY


def run_workload(g: Group, s, wl: str) -> dict:
    """Measure one workload of one system; the record (without the keys)."""
    cfg, n, a = g.cfg, g.n, g.data
    rec: dict = {}
    if wl == "build-mem":
        rec.update(timed(lambda: s.build_mem(a), cfg.repeat, cfg.budget))
    elif wl == "build-disk":
        path = g.path(s)
        rec.update(timed(lambda: g.write(s, path, lambda: s.build_disk(a, path)), cfg.repeat,
                         cfg.budget, setup=lambda: rmtree(path)))
        g.built.add(s.key)
        files, size = disk_usage(path)
        rec.update(files=files, disk_bytes=size, cratio=g.nbytes / size if size else None)
    elif wl == "append":
        path = g.path(s, ".append")
        batch = min(cfg.batch, n)
        rec.update(timed(lambda: g.write(s, path, lambda: s.append(a, batch, path)),
                         cfg.repeat, cfg.budget, setup=lambda: rmtree(path)))
        if s.where != "memory":
            files, size = disk_usage(path)
            rec.update(files=files, disk_bytes=size)
            h = s.open(path)
            try:
                if s.length(h) != n or s.item(h, n - 1) != a[-1]:
                    raise AssertionError("append: wrong data read back")
            finally:
                s.close(h)
            rmtree(path)
        rec.update(batch=batch)
    elif wl == "open":
        rec.update(_open_latency(g, s, wl, s.open, s.length, s.close))
    elif wl == "read":
        h = g.handle(s)
        rec.update(timed(lambda: s.read(h), cfg.repeat, cfg.budget,
                         check=_check_array(a, "read")))
    elif wl in ("slice", "hot-slice"):
        h = g.handle(s)
        w = min(cfg.slice_width, n)

        def check(i, out):
            _check_array(a[i:i + w], wl)(out)
        starts = g.starts if wl == "slice" else g.hot_starts
        rec.update(per_call(lambda i: s.slice(h, i, i + w), starts, cfg.latency_budget,
                            cfg.max_calls, check), width=w)
    elif wl == "getitem":
        h = g.handle(s)

        def check(i, out):
            if np.asarray(out).item() != a[i]:
                raise AssertionError(f"getitem: [{i}] = {out!r} != {a[i]!r}")
        rec.update(per_call(lambda i: s.item(h, i), g.items, cfg.latency_budget,
                            cfg.max_calls, check))
    elif wl == "sum":
        h = g.handle(s)
        rec.update(timed(lambda: s.sum(h), cfg.repeat, cfg.budget, check=_check_sum(a.sum())))
    elif wl == "ct-build":
        path = g.path(s)
        if s.where == "memory":
            rec.update(timed(lambda: s.ct_build(a, None), cfg.repeat, cfg.budget))
        else:
            rec.update(timed(lambda: g.write(s, path, lambda: s.ct_build(a, path)), cfg.repeat,
                             cfg.budget, setup=lambda: rmtree(path)))
            g.built.add(s.key)
            files, size = disk_usage(path)
            rec.update(files=files, disk_bytes=size, cratio=g.nbytes / size if size else None)
    elif wl == "ct-open":
        rec.update(_open_latency(g, s, wl, s.ct_open, s.ct_length, s.ct_close))
    elif wl in ("ct-query-sel", "ct-query-and", "ct-query-broad"):
        expr = _query_of(wl, n)
        expect = int(np.count_nonzero(D.query_mask(a, expr)))
        h = g.handle(s)

        def check(out):
            if len(out) != expect:
                raise AssertionError(f"{wl}: {len(out)} rows, not {expect}")
        rec.update(timed(lambda: s.ct_query(h, expr), cfg.repeat, cfg.budget, check=check))
        cols = [k for k in a if k in expr]
        rec.update(rows=expect, query=expr,
                   scanned_bytes=sum(a[k].nbytes for k in cols))
    elif wl == "ct-todf":
        h = g.handle(s)

        def check(df):
            if len(df) != n:
                raise AssertionError(f"todataframe: {len(df)} rows, not {n}")
        rec.update(timed(lambda: s.ct_todf(h), cfg.repeat, cfg.budget, check=check))
    else:  # pragma: no cover - the workloads are validated first
        raise ValueError(wl)
    if UNIT[wl] != "µs":
        nb = rec.get("scanned_bytes", g.nbytes)
        rec["mbps"] = nb / rec["seconds"] / 1e6 if rec["seconds"] > 0 else None
    return rec


# -------------------------------------------------------------- peak memory


def _status_kb(field_name: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field_name + ":"):
                return int(line.split()[1])
    raise KeyError(field_name)


def reset_peak() -> tuple[str, float]:
    """Start a peak-memory measurement: (method, baseline in MB).

    On Linux, the kernel's high-water mark is reset to the current RSS through
    ``/proc/self/clear_refs`` and read back from ``VmHWM``; elsewhere the
    growth of ``ru_maxrss`` is used (a lower bound).
    """
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return "VmHWM", _status_kb("VmRSS") / 1024
    except (OSError, KeyError):
        import resource
        scale = 1 if sys.platform == "darwin" else 1024
        return "ru_maxrss", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale / 2**20


def read_peak(method: str) -> float:
    """The peak RSS in MB since :func:`reset_peak` (same method)."""
    if method == "VmHWM":
        return _status_kb("VmHWM") / 1024
    import resource
    scale = 1 if sys.platform == "darwin" else 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale / 2**20


def child_measure(spec: dict) -> dict:
    """In a fresh process: the peak-RSS growth of one run of one workload.

    The data, or the on-disk dataset the parent built, is set up first; the
    peak is reset after that, so only the workload itself is measured.
    """
    cls = SYSTEMS[spec["system"]]
    s = cls(spec["variant"], spec["nthreads"], spec["chunk_bytes"])
    wl, n, shape, path = spec["workload"], spec["n"], spec["shape"], spec["path"]
    table = shape == "table"
    a = D.make_table(n, spec["seed"]) if table else D.make_array(shape, n, spec["seed"])
    scratch = path + ".mem"
    with s.active():
        def handle():
            if s.where == "memory":
                return s.memory_handle(a, table)
            return s.ct_open(path) if table else s.open(path)

        rng = np.random.default_rng(1)
        if wl == "build-mem":
            op = lambda: s.build_mem(a)  # noqa: E731
        elif wl in ("build-disk", "ct-build"):
            rmtree(scratch)
            if s.where == "memory":
                op = lambda: s.ct_build(a, None)  # noqa: E731
            elif table:
                op = lambda: s.ct_build(a, scratch)  # noqa: E731
            else:
                op = lambda: s.build_disk(a, scratch)  # noqa: E731
        elif wl == "append":
            rmtree(scratch)
            op = lambda: s.append(a, min(spec["batch"], n), scratch)  # noqa: E731
        elif wl == "open":
            def op():
                for _ in range(20):
                    s.close(s.open(path))
        elif wl == "read":
            h = handle()
            op = lambda: s.read(h)  # noqa: E731
        elif wl == "ct-open":
            def op():
                for _ in range(20):
                    s.ct_close(s.ct_open(path))
        elif wl in ("slice", "hot-slice"):
            h = handle()
            w = min(spec["slice_width"], n)
            lo, hi = D.hot_window(n, w) if wl == "hot-slice" else (0, n)
            starts = rng.integers(lo, hi - w + 1, 200).tolist()

            def op():
                for i in starts:
                    s.slice(h, i, i + w)
        elif wl == "getitem":
            h = handle()
            idx = rng.integers(0, n, 200).tolist()

            def op():
                for i in idx:
                    s.item(h, i)
        elif wl == "sum":
            h = handle()
            op = lambda: s.sum(h)  # noqa: E731
        elif wl in ("ct-query-sel", "ct-query-and", "ct-query-broad"):
            h = handle()
            expr = _query_of(wl, n)
            op = lambda: s.ct_query(h, expr)  # noqa: E731
        elif wl == "ct-todf":
            h = handle()
            op = lambda: s.ct_todf(h)  # noqa: E731
        else:
            raise ValueError(wl)
        gc.collect()
        method, before = reset_peak()
        t0 = time.perf_counter()
        out = op()
        dt = time.perf_counter() - t0
        after = read_peak(method)
        del out
    rmtree(scratch)
    return {"peak_mb": max(0.0, after - before), "rss_mb": after, "method": method,
            "child_seconds": dt}


def _bcolzx_root() -> str:
    import bcolzx
    return os.path.dirname(os.path.dirname(os.path.abspath(bcolzx.__file__)))


def measure_peak(spec: dict, timeout: float = 3600) -> dict:
    """Run :func:`child_measure` in a child process; its result, or an error."""
    return run_json_child("bcolzx.bench._child", spec, timeout, "peak_error")


def run_json_child(module: str, spec: dict, timeout: float, error_key: str) -> dict:
    """``python -m module SPEC`` in a fresh process, finding this bcolzx first: the
    JSON of its last line, or ``{error_key: why}``."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (_bcolzx_root(), env.get("PYTHONPATH"))
                                        if p)
    try:
        out = subprocess.run([sys.executable, "-m", module, json.dumps(spec)],
                             capture_output=True, text=True, timeout=timeout, env=env,
                             cwd=tempfile.gettempdir(), check=False)
    except subprocess.TimeoutExpired:
        return {error_key: "timed out"}
    if out.returncode != 0:
        lines = out.stderr.strip().splitlines()
        return {error_key: lines[-1] if lines else f"exit status {out.returncode}"}
    return json.loads(out.stdout.strip().splitlines()[-1])


# ----------------------------------------------------------------------- run


def resolve_systems(names) -> tuple[list, dict]:
    """The importable system classes among `names` (bcolzx first), and why others are not."""
    keys = expand(names, SYSTEMS, ALIASES, "system")
    if "bcolzx" not in keys:
        keys.insert(0, "bcolzx")
    classes, skipped = [], {}
    for key in keys:
        ok, why = SYSTEMS[key].available()
        if ok:
            classes.append(SYSTEMS[key])
        else:
            skipped[key] = f"{why}; pip install {SYSTEMS[key].pip}"
    if not classes or classes[0].key != "bcolzx":
        raise RuntimeError("bcolzx itself cannot be imported: " + skipped.get("bcolzx", "?"))
    return classes, skipped


def plan(cfg: Config, classes: list) -> list[tuple]:
    """Every (experiment, size, variant, shape, workload, system key) to measure, in order."""
    steps = []
    arr = [w for w in cfg.workloads if w in ARRAY_WORKLOADS]
    tab = [w for w in cfg.workloads if w in TABLE_WORKLOADS]
    for n in cfg.sizes:
        for variant in cfg.variants:
            for shape in (cfg.shapes if arr else []):
                for wl in arr:
                    steps += [("main", n, variant, shape, wl, c.key) for c in classes
                              if wl in c.WORKLOADS]
            for wl in tab:
                if wl == "ct-todf" and not have_pandas():
                    continue
                steps += [("main", n, variant, "table", wl, c.key) for c in classes
                          if wl in c.WORKLOADS]
    if cfg.thread_scaling:
        n = thread_size(cfg)
        for t in thread_counts(cfg):
            for wl in THREAD_WORKLOADS:
                if wl not in cfg.workloads:
                    continue
                shape = "table" if wl in TABLE_WORKLOADS else cfg.shapes[0]
                steps += [(f"threads{t}", n, "same", shape, wl, c.key) for c in classes
                          if c.thread_knob and wl in c.WORKLOADS]
    return steps


def thread_size(cfg: Config) -> int:
    if cfg.threads_size:
        return cfg.threads_size
    fitting = [n for n in cfg.sizes if n <= 10**8]
    return max(fitting) if fitting else min(cfg.sizes)


def thread_counts(cfg: Config) -> list[int]:
    return sorted({1, max(2, cfg.nthreads)})


def run(cfg: Config, progress: Callable | None = None,
        checkpoint: Callable | None = None) -> dict:
    """Run the benchmark.

    Parameters
    ----------
    cfg : Config
        What to run.
    progress : callable, optional
        ``progress(done, total, label)``, called before each measurement; if
        it has a ``finished`` method, ``progress.finished(done, total, label,
        record)`` is called after each measurement with its record.
    checkpoint : callable, optional
        ``checkpoint(doc)``, called with the document so far after each group
        of measurements (one size, settings and data shape), so that a long
        run that is stopped keeps what it measured.

    Returns
    -------
    dict
        The JSON document: ``config``, ``machine``, ``versions``, ``settings``,
        ``skipped`` and the ``results`` records.
    """
    for wl in cfg.workloads:
        if wl not in WORKLOADS:
            raise ValueError(f"unknown workload {wl!r}")
    classes, skipped = resolve_systems(cfg.systems)
    if "ct-todf" in cfg.workloads and not have_pandas():
        skipped["ct-todf"] = "the workload needs pandas; pip install pandas"
    steps = plan(cfg, classes)
    total = len(steps)
    own_dir = cfg.workdir is None
    workdir = tempfile.mkdtemp(prefix="bcolzx-bench-") if own_dir else cfg.workdir
    os.makedirs(workdir, exist_ok=True)
    doc = {"bcolzx_bench": SCHEMA, "started": time.strftime("%Y-%m-%d %H:%M:%S"),
           "config": asdict(cfg), "machine": machine_info(), "versions": {}, "settings": {},
           "notes": {}, "skipped": skipped, "results": []}
    doc["config"]["workdir"] = workdir
    t_start = time.perf_counter()
    done = 0
    finished = getattr(progress, "finished", None)
    try:
        # group the steps: (experiment, n, variant, shape) -> [(wl, key)]
        groups: dict = {}
        for exp, n, variant, shape, wl, key in steps:
            groups.setdefault((exp, n, variant, shape), []).append((wl, key))
        instances: dict = {}
        for (exp, n, variant, shape), items in groups.items():
            nthreads = int(exp[7:]) if exp.startswith("threads") else cfg.nthreads
            systems = []
            for key in dict.fromkeys(k for _, k in items):
                ik = (key, variant, nthreads)
                if ik not in instances:
                    try:
                        instances[ik] = SYSTEMS[key](variant, nthreads, cfg.chunk_bytes)
                    except Exception as exc:  # noqa: BLE001 - a broken anchor is reported
                        instances[ik] = None
                        skipped[key] = f"{type(exc).__name__}: {exc}"
                s = instances[ik]
                if s is not None and exp != "main":
                    s.force_threads = True
                if s is not None:
                    systems.append(s)
                    doc["versions"].setdefault(key, s.version())
                    doc["settings"].setdefault(variant, {}).setdefault(key, s.settings())
                    if s.notes:
                        doc["notes"].setdefault(key, s.notes)
            live = {s.key: s for s in systems}
            base = os.path.join(workdir, f"{exp}-{n}-{variant}-{shape}")
            g = Group(cfg, systems, n, variant, shape, base)
            gc.collect()
            try:
                for wl, key in items:
                    done += 1
                    label = (f"{_fmt_n(n)} {shape} {variant} {wl} {key}"
                             + ("" if exp == "main" else f" [{nthreads} threads]"))
                    if progress is not None:
                        progress(done, total, label)
                    s = live.get(key)
                    if s is None or not s.supports(wl):
                        continue
                    rec = {"experiment": exp, "size": n, "shape": shape, "variant": variant,
                           "system": key, "workload": wl,
                           "nthreads": nthreads if s.thread_knob and (
                               s.force_threads or (variant == "same" and key != "h5py"))
                           else None, "nbytes": g.nbytes}
                    t0 = time.perf_counter()
                    try:
                        with s.active(), warnings.catch_warnings():
                            warnings.simplefilter("ignore")
                            rec.update(run_workload(g, s, wl))
                    except Exception as exc:  # noqa: BLE001 - one failure is one cell
                        rec["error"] = f"{type(exc).__name__}: {exc}"[:300]
                    rec["wall"] = time.perf_counter() - t0
                    if (cfg.memory and exp == "main" and "error" not in rec
                            and variant == cfg.variants[0] and shape in (cfg.shapes[0], "table")):
                        if s.where != "memory" and wl in NEEDS_DATASET:
                            try:
                                g.ensure_built(s)
                            except Exception as exc:  # noqa: BLE001
                                rec["peak_error"] = f"{type(exc).__name__}: {exc}"[:300]
                        rec.update(measure_peak({
                            "system": key, "variant": variant, "nthreads": nthreads,
                            "chunk_bytes": cfg.chunk_bytes, "workload": wl, "n": n,
                            "shape": shape, "seed": cfg.seed, "path": g.path(s),
                            "batch": cfg.batch, "slice_width": cfg.slice_width}))
                    doc["results"].append(rec)
                    if finished is not None:
                        finished(done, total, label, rec)
            finally:
                g.close()
            if checkpoint is not None:
                doc["total_seconds"] = time.perf_counter() - t_start
                checkpoint(doc)
    finally:
        if own_dir and not cfg.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    doc["total_seconds"] = time.perf_counter() - t_start
    return doc


def _fmt_n(n: int) -> str:
    e = int(np.log10(n)) if n > 0 else 0
    return f"{n // 10**e}e{e}" if n == (n // 10**e) * 10**e else f"{n:,}"
