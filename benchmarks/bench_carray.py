#!/usr/bin/env python
"""carray-level benchmark: bcolzx next to legacy bcolz, python-blosc2 and h5py.

All systems use the same codec settings (LZ4, clevel 5, byte shuffle,
typesize 8) on smooth float64 data, ``np.linspace(0, 1e6, n)``, in one
process. Every timing is the best of ``--repeat`` runs. Throughput is in MB/s
of *uncompressed* bytes (10**6 bytes/s); ``ratio`` is bcolzx divided by the
anchor named on the row (above 1: bcolzx is faster, except for latency rows,
where below 1 is better).

Cases:

1. build from the in-memory NumPy array, in memory and on disk (+ flush);
2. full read ``c[:]`` from disk-backed objects reopened read-only;
3. ``--random`` uniformly random single-item reads ``c[i]`` (median, mean),
   and each system's compression ratio;
4. ``sum()`` (bcolzx, legacy; python-blosc2 and h5py: full read + np.sum);
5. ``--slices`` slices ``c[a:a+1000]`` at random ``a`` (median, mean);
6. appending n items in batches of ``--batch`` to disk, then flush;
7. peak memory (growth of the peak RSS, ``VmHWM`` reset through
   ``/proc/self/clear_refs`` where possible, else ``ru_maxrss``, in a child) of
   ``for b in bcolzx.iterblocks(c): pass`` and ``c.sum()`` over an on-disk
   array of ``--n-mem`` items.

Files are read right after they are written, so they come from the OS page
cache: the disk is not what is measured.

Run from outside the source tree so the installed bcolzx is imported::

    cd /tmp && python /path/to/benchmarks/bench_carray.py --n 2e7
"""

import argparse
import gc
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

SYSTEMS = ("bcolzx", "bcolz", "blosc2", "h5py")
LABEL = {"bcolzx": "bcolzx", "bcolz": "legacy bcolz",
         "blosc2": "blosc2 SChunk", "h5py": "h5py+hdf5plugin"}
CHUNK_BYTES = 1 << 20  # 1 MiB, for SChunk and h5py chunks
TYPESIZE = 8


# ---------------------------------------------------------------- helpers

def best_of(fn, repeat, setup=None):
    """Best wall time of `repeat` calls of fn() (setup() untimed, before each)."""
    best = float("inf")
    for _ in range(repeat):
        if setup is not None:
            setup()
        gc.collect()
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def per_call_us(fn, args):
    """Time fn(x) for each x of args, one by one: (median, mean) in µs."""
    pc = time.perf_counter_ns
    times = np.empty(len(args), dtype=np.int64)
    for k, x in enumerate(args):
        t0 = pc()
        fn(x)
        times[k] = pc() - t0
    return float(np.median(times)) / 1e3, float(times.mean()) / 1e3


def rmtree(path):
    if os.path.isdir(path):
        shutil.rmtree(path)
    elif os.path.exists(path):
        os.remove(path)


def smooth(n, start=0, stop=None):
    """Items [start:stop] of np.linspace(0, 1e6, n), without building it all."""
    stop = n if stop is None else stop
    step = 1e6 / (n - 1)
    out = np.arange(start, stop, dtype=np.float64)
    out *= step
    if stop == n:
        out[-1] = 1e6
    return out


# ---------------------------------------------------------------- systems

class System:
    """One storage system under test (all methods take/return plain objects)."""

    name = None
    can_build_mem = True
    can_sum = False
    can_append = False

    def __init__(self, n, workdir):
        self.n = n
        self.path = os.path.join(workdir, self.name + self.suffix)

    suffix = ""

    def reset(self):
        rmtree(self.path)


class Bcolzx(System):
    name = "bcolzx"
    can_sum = can_append = True

    def __init__(self, n, workdir):
        super().__init__(n, workdir)
        import bcolzx
        self.mod = bcolzx

    def cparams(self):
        return self.mod.cparams(clevel=5, shuffle=1, cname="lz4")

    def build_mem(self, a):
        return self.mod.carray(a, cparams=self.cparams())

    def build_disk(self, a):
        c = self.mod.carray(a, rootdir=self.path, mode="w",
                            cparams=self.cparams())
        c.flush()
        return c

    def open_ro(self):
        return self.mod.carray(rootdir=self.path, mode="r")

    def read_all(self, c):
        return c[:]

    def getitem(self, c):
        return c.__getitem__

    def getslice(self, c, width):
        return lambda a: c[a:a + width]

    def do_sum(self, c):
        return c.sum()

    def append_all(self, a, batch):
        c = self.mod.carray(np.empty(0, dtype=a.dtype), rootdir=self.path,
                            mode="w", expectedlen=len(a),
                            cparams=self.cparams())
        for i in range(0, len(a), batch):
            c.append(a[i:i + batch])
        c.flush()
        return c

    def ratio(self, c):
        return c.nbytes / c.cbytes

    def close(self, c):
        pass


class Bcolz(Bcolzx):
    name = "bcolz"

    def __init__(self, n, workdir):
        System.__init__(self, n, workdir)
        from bcolzx.compat import import_legacy  # the real one, shim or not

        self.mod = import_legacy()


class SChunk(System):
    name = "blosc2"
    suffix = ".b2frame"

    def __init__(self, n, workdir):
        super().__init__(n, workdir)
        import blosc2
        self.mod = blosc2
        self.cp = {"codec": blosc2.Codec.LZ4, "clevel": 5,
                   "filters": [blosc2.Filter.SHUFFLE], "typesize": TYPESIZE}

    def build_mem(self, a):
        return self.mod.SChunk(chunksize=CHUNK_BYTES, data=a, cparams=self.cp)

    def build_disk(self, a):
        # The SChunk writes through to the file; closing it is the flush.
        s = self.mod.SChunk(chunksize=CHUNK_BYTES, data=a, urlpath=self.path,
                            contiguous=True, mode="w", cparams=self.cp)
        del s
        return None

    def open_ro(self):
        return self.mod.open(self.path, mode="r")

    def read_all(self, s):
        out = np.empty(s.nbytes // TYPESIZE, dtype=np.float64)
        s.get_slice(out=out)
        return out

    def getitem(self, s):
        return s.__getitem__  # returns the item's 8 bytes

    def getslice(self, s, width):
        def f(a):
            out = np.empty(width, dtype=np.float64)
            s.get_slice(a, a + width, out=out)
            return out
        return f

    def do_sum(self, s):
        return self.read_all(s).sum()

    def ratio(self, s):
        return s.nbytes / s.cbytes

    def close(self, s):
        pass


class H5py(System):
    name = "h5py"
    suffix = ".h5"
    can_build_mem = False

    def __init__(self, n, workdir):
        super().__init__(n, workdir)
        import h5py
        import hdf5plugin
        self.h5py = h5py
        self.filt = hdf5plugin.Blosc2(cname="lz4", clevel=5,
                                      filters=hdf5plugin.Blosc2.SHUFFLE)

    def build_disk(self, a):
        with self.h5py.File(self.path, "w") as f:
            f.create_dataset("x", data=a, chunks=(CHUNK_BYTES // TYPESIZE,),
                             **self.filt)
            f.flush()
        return None

    def open_ro(self):
        f = self.h5py.File(self.path, "r")
        return f["x"]

    def read_all(self, d):
        return d[:]

    def getitem(self, d):
        return d.__getitem__

    def getslice(self, d, width):
        return lambda a: d[a:a + width]

    def do_sum(self, d):
        return d[:].sum()

    def ratio(self, d):
        return d.size * d.dtype.itemsize / d.id.get_storage_size()

    def close(self, d):
        d.file.close()


CLASSES = {"bcolzx": Bcolzx, "bcolz": Bcolz, "blosc2": SChunk, "h5py": H5py}


# ---------------------------------------------------------------- memory child

def mem_child(kind, path):
    """Runs in a fresh process: peak RSS growth of one pass over `path`."""
    import bcolzx
    c = bcolzx.carray(rootdir=path, mode="r")
    gc.collect()
    # ru_maxrss survives fork+exec on Linux (the child would inherit the
    # parent's peak), so reset the kernel's high-water mark when we can and
    # read VmHWM; otherwise fall back to the ru_maxrss growth.
    use_hwm = _reset_hwm()
    before = _status_kb("VmRSS") if use_hwm else \
        resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB
    t0 = time.perf_counter()
    if kind == "iterblocks":
        nblocks = 0
        for _ in bcolzx.iterblocks(c):
            nblocks += 1
        result = nblocks
    elif kind == "sum":
        result = float(c.sum())
    else:
        raise ValueError(kind)
    dt = time.perf_counter() - t0
    after = _status_kb("VmHWM") if use_hwm else \
        resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"kind": kind, "len": len(c), "delta_mb": (after - before) / 1024,
                      "peak_mb": after / 1024, "time_s": dt, "result": result,
                      "method": "VmHWM" if use_hwm else "ru_maxrss"}))


def _status_kb(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise KeyError(field)


def _reset_hwm():
    """Reset VmHWM to the current RSS (Linux >= 4.0); False if unavailable."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        _status_kb("VmHWM")
        return True
    except (OSError, KeyError):
        return False


def run_mem_child(kind, path):
    out = subprocess.run([sys.executable, os.path.abspath(__file__),
                          "--_mem-child", kind, path],
                         capture_output=True, text=True, check=False,
                         cwd=tempfile.gettempdir())
    if out.returncode != 0:
        raise RuntimeError(out.stderr.strip().splitlines()[-1]
                           if out.stderr.strip() else "child failed")
    return json.loads(out.stdout.strip().splitlines()[-1])


def build_bcolzx_piecewise(path, n, batch=1 << 22):
    """An on-disk bcolzx array of linspace data, built without holding it all."""
    import bcolzx
    c = bcolzx.carray(np.empty(0, dtype=np.float64), rootdir=path, mode="w",
                      expectedlen=n,
                      cparams=bcolzx.cparams(clevel=5, shuffle=1, cname="lz4"))
    for i in range(0, n, batch):
        c.append(smooth(n, i, min(n, i + batch)))
    c.flush()


# ---------------------------------------------------------------- main

def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=float, default=1e8, help="items (default 1e8)")
    p.add_argument("--repeat", type=int, default=3, help="best of (default 3)")
    p.add_argument("--random", type=int, default=100_000,
                   help="random single-item reads (default 100000)")
    p.add_argument("--random-h5py", type=int, default=2_000,
                   help="cap on random reads for h5py, which decompresses a "
                        "whole chunk per item (default 2000)")
    p.add_argument("--slices", type=int, default=1000,
                   help="random slices of --slice-width items (default 1000)")
    p.add_argument("--slice-width", type=int, default=1000)
    p.add_argument("--batch", type=float, default=1e5,
                   help="append batch size (default 1e5)")
    p.add_argument("--n-mem", type=float, default=1e8,
                   help="items of the on-disk array for the peak-memory "
                        "cases (default 1e8; the issue asks about 1e9)")
    p.add_argument("--dir", default=None,
                   help="working directory (default: a new temp dir, removed)")
    p.add_argument("--systems", default=",".join(SYSTEMS),
                   help="comma list from " + ",".join(SYSTEMS))
    p.add_argument("--skip", default="",
                   help="comma list of cases to skip: build,read,random,sum,"
                        "slices,append,memory")
    p.add_argument("--seed", type=int, default=12345)
    p.add_argument("--json", default=None, help="save results to this file")
    p.add_argument("--_mem-child", nargs=2, default=None, help=argparse.SUPPRESS)
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    if args._mem_child:
        mem_child(*args._mem_child)
        return 0

    n = int(args.n)
    n_mem = int(args.n_mem)
    batch = int(args.batch)
    skip = set(filter(None, args.skip.split(",")))
    names = [s.strip() for s in args.systems.split(",") if s.strip()]
    for s in names:
        if s not in CLASSES:
            sys.exit(f"unknown system {s!r}; choose from {', '.join(SYSTEMS)}")
    workdir = args.dir or tempfile.mkdtemp(prefix="bench_carray_")
    own_dir = args.dir is None
    os.makedirs(workdir, exist_ok=True)

    systems = {}
    versions = {"python": platform.python_version(), "numpy": np.__version__}
    for s in names:
        try:
            systems[s] = CLASSES[s](n, workdir)
            mod = {"bcolzx": "bcolzx", "bcolz": "bcolz", "blosc2": "blosc2",
                   "h5py": "h5py"}[s]
            versions[mod] = sys.modules[mod].__version__
        except ImportError as e:
            print(f"# {s}: not available ({e}), skipped")
    rng = np.random.default_rng(args.seed)
    nbytes = n * 8
    res = {"n": n, "repeat": args.repeat, "versions": versions, "cases": {}}
    cases = res["cases"]

    def record(case, system, **kw):
        cases.setdefault(case, {})[system] = kw

    print(f"# bench_carray: n={n:,} float64 linspace ({nbytes / 1e6:,.0f} MB), "
          f"best of {args.repeat}, LZ4 clevel 5 shuffle, workdir {workdir}")
    print("# " + ", ".join(f"{k} {v}" for k, v in versions.items()))
    if "bcolzx" in sys.modules:
        print("# bcolzx from " + os.path.dirname(sys.modules["bcolzx"].__file__))

    t_start = time.perf_counter()
    a = np.linspace(0, 1e6, n)

    try:
        # 1. build
        if "build" not in skip:
            for s, sy in systems.items():
                if sy.can_build_mem:
                    t = best_of(lambda: sy.build_mem(a), args.repeat)
                    record("build (memory)", s, mbps=nbytes / t / 1e6, s=t)
                t = best_of(lambda: sy.build_disk(a), args.repeat, setup=sy.reset)
                record("build (disk+flush)", s, mbps=nbytes / t / 1e6, s=t)
        else:
            for sy in systems.values():
                if not os.path.exists(sy.path):
                    sy.reset()
                    sy.build_disk(a)

        opened = {s: sy.open_ro() for s, sy in systems.items()}
        for s, c in opened.items():
            record("compression ratio", s, ratio=systems[s].ratio(c))

        # 2. full read
        if "read" not in skip:
            for s, sy in systems.items():
                c = opened[s]
                out = sy.read_all(c)
                if not np.array_equal(out, a):
                    raise AssertionError(f"{s}: c[:] differs from the data")
                del out
                t = best_of(lambda: sy.read_all(c), args.repeat)
                record("read c[:]", s, mbps=nbytes / t / 1e6, s=t)

        # 3. random single items
        if "random" not in skip:
            idx_all = rng.integers(0, n, size=args.random)
            for s, sy in systems.items():
                c = opened[s]
                f = sy.getitem(c)
                idx = idx_all[:args.random_h5py] if s == "h5py" else idx_all
                k = int(idx[0])
                got = f(k)
                val = np.frombuffer(got, np.float64)[0] if isinstance(got, bytes) else got
                if val != a[k]:
                    raise AssertionError(f"{s}: c[{k}] = {val!r} != {a[k]!r}")
                idx = idx.tolist()
                best = None
                for _ in range(args.repeat):
                    med, mean = per_call_us(f, idx)
                    if best is None or med < best[0]:
                        best = (med, mean)
                record("random c[i]", s, median_us=best[0], mean_us=best[1],
                       count=len(idx))

        # 4. sum
        if "sum" not in skip:
            expect = a.sum()
            for s, sy in systems.items():
                c = opened[s]
                got = sy.do_sum(c)
                if not np.isclose(got, expect, rtol=1e-9):
                    raise AssertionError(f"{s}: sum {got} != {expect}")
                t = best_of(lambda: sy.do_sum(c), args.repeat)
                record("sum()", s, mbps=nbytes / t / 1e6, s=t,
                       how="c.sum()" if sy.can_sum else "read + np.sum")

        # 5. slices
        if "slices" not in skip:
            w = args.slice_width
            starts = rng.integers(0, n - w, size=args.slices)
            for s, sy in systems.items():
                f = sy.getslice(opened[s], w)
                k = int(starts[0])
                if not np.array_equal(f(k), a[k:k + w]):
                    raise AssertionError(f"{s}: slice differs")
                best = None
                for _ in range(args.repeat):
                    med, mean = per_call_us(f, starts.tolist())
                    if best is None or med < best[0]:
                        best = (med, mean)
                record(f"slice c[a:a+{w}]", s, median_us=best[0],
                       mean_us=best[1], count=len(starts))

        for s, c in opened.items():
            systems[s].close(c)
        opened.clear()

        # 6. append
        if "append" not in skip:
            for s, sy in systems.items():
                if not sy.can_append:
                    continue
                path0 = sy.path
                sy.path = path0 + ".append"
                t = best_of(lambda: sy.append_all(a, batch), args.repeat,
                            setup=sy.reset)
                c = sy.open_ro()
                if not (len(c) == n and c[n - 1] == a[-1] and c[n // 2] == a[n // 2]):
                    raise AssertionError(f"{s}: appended array differs")
                sy.reset()
                sy.path = path0
                record(f"append (batches of {batch:,})", s,
                       mbps=nbytes / t / 1e6, s=t)

        # 7. peak memory, in a child process
        if "memory" not in skip and "bcolzx" in systems:
            if n_mem == n and os.path.isdir(systems["bcolzx"].path):
                mpath = systems["bcolzx"].path
            else:
                del a
                a = None
                gc.collect()
                mpath = os.path.join(workdir, "bcolzx_mem")
                t0 = time.perf_counter()
                build_bcolzx_piecewise(mpath, n_mem)
                print(f"# built {n_mem:,}-item bcolzx array for the memory "
                      f"cases in {time.perf_counter() - t0:.1f} s")
            for kind in ("iterblocks", "sum"):
                r = run_mem_child(kind, mpath)
                record(f"peak memory ({kind})", "bcolzx", **r)
    finally:
        if own_dir:
            shutil.rmtree(workdir, ignore_errors=True)

    res["total_s"] = time.perf_counter() - t_start
    report(res, names, n_mem)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=2)
        print(f"# saved {args.json}")
    return 0


# ---------------------------------------------------------------- report

def _val(case, s, key):
    return case.get(s, {}).get(key)


def report(res, names, n_mem):
    cases = res["cases"]
    cols = [s for s in names]
    w = 17
    print()
    head = f"{'case':<30}{'unit':<11}" + "".join(f"{LABEL[s]:>{w}}" for s in cols)
    print(head)
    print("-" * len(head))
    rows = []
    for cname, case in cases.items():
        if cname.startswith("peak memory"):
            continue
        if "mbps" in next(iter(case.values())):
            key, unit, fmt = "mbps", "MB/s", "{:,.0f}"
        elif "median_us" in next(iter(case.values())):
            rows.append((cname + " median", case, "median_us", "µs", "{:,.2f}"))
            key, unit, fmt = "mean_us", "µs", "{:,.2f}"
            cname = cname + " mean"
        else:
            key, unit, fmt = "ratio", "x", "{:,.1f}"
        rows.append((cname, case, key, unit, fmt))
    # keep medians before means
    for cname, case, key, unit, fmt in rows:
        cells = []
        for s in cols:
            v = _val(case, s, key)
            cell = "-" if v is None else fmt.format(v)
            if v is not None and key in ("median_us", "mean_us") and \
                    case[s].get("count") != max(c.get("count", 0) for c in case.values()):
                cell += f" (n={case[s]['count']})"
            if cname.startswith("sum") and v is not None and case[s].get("how") != "c.sum()":
                cell += "*"
            cells.append(cell)
        print(f"{cname:<30}{unit:<11}" + "".join(f"{c:>{w}}" for c in cells))
    if "sum()" in cases:
        print("  * read everything, then np.sum")
    for kind in ("iterblocks", "sum"):
        r = cases.get(f"peak memory ({kind})", {}).get("bcolzx")
        if r:
            print(f"peak memory, bcolzx {kind:<10} over {r['len']:,} items on disk: "
                  f"+{r['delta_mb']:,.1f} MB max RSS (peak {r['peak_mb']:,.0f} MB, {r['time_s']:.2f} s)")

    # targets from the issue
    print()
    print("Targets (bcolzx vs anchor):")
    checks = []

    def speed_ratio(case_name, anchor, key="mbps"):
        case = cases.get(case_name, {})
        x, y = _val(case, "bcolzx", key), _val(case, anchor, key)
        if x is None or y is None:
            return None
        return x / y

    def check(desc, value, ok, shown):
        status = "n/a" if value is None else ("MET" if ok(value) else "NOT MET")
        checks.append((desc, status))
        print(f"  {desc:<52}{shown(value) if value is not None else '-':>16}   {status}")

    x = lambda v: f"{v:.2f}x"  # noqa: E731
    for case_name in ("build (memory)", "build (disk+flush)"):
        check(f"{case_name} >= 1x SChunk", speed_ratio(case_name, "blosc2"),
              lambda v: v >= 1.0, x)
        check(f"{case_name} >= 2.5x legacy", speed_ratio(case_name, "bcolz"),
              lambda v: v >= 2.5, x)
    check("read c[:] >= 1x SChunk", speed_ratio("read c[:]", "blosc2"),
          lambda v: v >= 1.0, x)
    check("read c[:] >= 2.5x legacy", speed_ratio("read c[:]", "bcolz"),
          lambda v: v >= 2.5, x)
    check("read c[:] >= 2x h5py", speed_ratio("read c[:]", "h5py"),
          lambda v: v >= 2.0, x)
    rnd = cases.get("random c[i]", {})
    check("random c[i] median <= 20 µs", _val(rnd, "bcolzx", "median_us"),
          lambda v: v <= 20, lambda v: f"{v:.2f} µs")
    # speed ratio = SChunk latency / bcolzx latency
    r = None
    if _val(rnd, "bcolzx", "median_us") and _val(rnd, "blosc2", "median_us"):
        r = _val(rnd, "blosc2", "median_us") / _val(rnd, "bcolzx", "median_us")
    check("random c[i] speed >= 0.8x SChunk's (median)", r,
          lambda v: v >= 0.8, x)
    # ... while the compression ratio stays >= 0.8x SChunk's at the same codec
    check("compression ratio >= 0.8x SChunk's", speed_ratio("compression ratio", "blosc2",
                                                             "ratio"),
          lambda v: v >= 0.8, x)
    check("sum() >= 2x legacy", speed_ratio("sum()", "bcolz"),
          lambda v: v >= 2.0, x)
    sl = next((v for k, v in cases.items() if k.startswith("slice")), {})
    check("slice of 1000 median <= 15 µs", _val(sl, "bcolzx", "median_us"),
          lambda v: v <= 15, lambda v: f"{v:.2f} µs")
    ap = next((v for k, v in cases.items() if k.startswith("append")), {})
    r = None
    if _val(ap, "bcolzx", "mbps") and _val(ap, "bcolz", "mbps"):
        r = ap["bcolzx"]["mbps"] / ap["bcolz"]["mbps"]
    check("append >= 2x legacy", r, lambda v: v >= 2.0, x)
    for kind in ("iterblocks", "sum"):
        m = cases.get(f"peak memory ({kind})", {}).get("bcolzx")
        check(f"{kind} peak memory < 200 MB ({n_mem:.0e} items)",
              m["delta_mb"] if m else None, lambda v: v < 200,
              lambda v: f"{v:,.1f} MB")
    met = sum(1 for _, st in checks if st == "MET")
    known = sum(1 for _, st in checks if st != "n/a")
    print(f"SUMMARY: {met}/{known} targets met; total {res['total_s']:.0f} s")
    res["targets"] = dict(checks)


if __name__ == "__main__":
    sys.exit(main())
